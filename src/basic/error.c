/* error.c: formatting of hull_error. */
#include "error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

_printf_(5, 0) static int hull_verr(hull_error *e, int err, bool reason, const char *hint, const char *fmt,
                                    va_list ap) {
        if (!e)
                return err;
        e->err = err;
        int n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        size_t len = n < 0 ? 0 : MIN((size_t) n, sizeof(e->msg) - 1);
        if (reason && err != 0 && len < sizeof(e->msg) - 1) {
                int m = snprintf(e->msg + len, sizeof(e->msg) - len, ": %s", strerror(-err));
                len = m < 0 ? len : MIN(len + (size_t) m, sizeof(e->msg) - 1);
        }
        if (hint && len < sizeof(e->msg) - 1)
                snprintf(e->msg + len, sizeof(e->msg) - len, " (%s)", hint);
        return err;
}

int hull_err(hull_error *e, int err, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = hull_verr(e, err, true, NULL, fmt, ap);
        va_end(ap);
        return r;
}

int hull_fail(hull_error *e, int err, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = hull_verr(e, err, false, NULL, fmt, ap);
        va_end(ap);
        return r;
}

int hull_err_hint(hull_error *e, int err, const char *hint, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = hull_verr(e, err, true, hint, fmt, ap);
        va_end(ap);
        return r;
}
