/* dynbuf.c: a growable byte buffer with a maximum (see dynbuf.h). */
#include "dynbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"

void dynbuf_init(dynbuf *b, size_t max) {
        *b = (dynbuf){.max = max};
}

int dynbuf_reserve(dynbuf *b, size_t n) {
        if (n > b->max || b->len > b->max - n)
                return -E2BIG;
        size_t need = b->len + n + 1; /* and the NUL */
        if (need <= b->cap)
                return 0;
        size_t cap = b->cap ? b->cap : DYNBUF_INITIAL;
        while (cap < need)
                cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        cap = MIN(cap, b->max + 1);
        char *p = realloc(b->buf, cap);
        if (!p)
                return -ENOMEM;
        b->buf = p;
        b->cap = cap;
        b->buf[b->len] = '\0';
        return 0;
}

void dynbuf_advance(dynbuf *b, size_t n) {
        b->len += n;
        b->buf[b->len] = '\0';
}

int dynbuf_add(dynbuf *b, const void *p, size_t n) {
        if (n == 0)
                return 0;
        int r = dynbuf_reserve(b, n);
        if (r < 0)
                return r;
        memcpy(b->buf + b->len, p, n);
        dynbuf_advance(b, n);
        return 0;
}

int dynbuf_add_str(dynbuf *b, const char *s) {
        return dynbuf_add(b, s, strlen(s));
}

int dynbuf_vaddf(dynbuf *b, const char *fmt, va_list ap) {
        char small[256];
        va_list aq;
        va_copy(aq, ap);
        int n = vsnprintf(small, sizeof(small), fmt, aq);
        va_end(aq);
        if (n < 0)
                return -EINVAL;
        if ((size_t) n < sizeof(small))
                return dynbuf_add(b, small, (size_t) n);
        int r = dynbuf_reserve(b, (size_t) n);
        if (r < 0)
                return r;
        vsnprintf(b->buf + b->len, (size_t) n + 1, fmt, ap);
        dynbuf_advance(b, (size_t) n);
        return 0;
}

int dynbuf_addf(dynbuf *b, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = dynbuf_vaddf(b, fmt, ap);
        va_end(ap);
        return r;
}

void dynbuf_consume(dynbuf *b, size_t n) {
        n = MIN(n, b->len);
        if (n == 0)
                return;
        memmove(b->buf, b->buf + n, b->len - n);
        b->len -= n;
        b->buf[b->len] = '\0';
}

void dynbuf_reset(dynbuf *b) {
        b->len = 0;
        if (b->buf)
                b->buf[0] = '\0';
}

void dynbuf_free(dynbuf *b) {
        free(b->buf);
        b->buf = NULL;
        b->len = b->cap = 0;
}

char *dynbuf_take(dynbuf *b, size_t *ret_len) {
        char *p = b->buf ? b->buf : calloc(1, 1);
        if (ret_len)
                *ret_len = b->buf ? b->len : 0;
        b->buf = NULL;
        b->len = b->cap = 0;
        return p;
}
