/* dlog.c: the daemon's log lines. */
#include "dlog.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "limits.h"

static const char *const levels[] = {"error", "warn", "info", "debug"};

int dlog_level_from_string(const char *s, dlog_level *ret) {
        for (size_t i = 0; i < ELEMENTSOF(levels); i++)
                if (strcmp(s, levels[i]) == 0) {
                        *ret = (dlog_level) i;
                        return 0;
                }
        return -EINVAL;
}

void dlog_log(const dlog *l, dlog_level lvl, const char *fmt, ...) {
        char line[SERVE_LOG_LINE_MAX];
        struct timespec ts;
        struct tm tm;
        if (lvl > l->level)
                return;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        int n = snprintf(line, sizeof(line), "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s ", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
                         levels[lvl]);
        size_t len = n < 0 ? 0 : MIN((size_t) n, sizeof(line) - 2);
        va_list ap;
        va_start(ap, fmt);
        n = vsnprintf(line + len, sizeof(line) - 1 - len, fmt, ap);
        va_end(ap);
        len = n < 0 ? len : MIN(len + (size_t) n, sizeof(line) - 2);
        line[len++] = '\n';
        ssize_t w = write(l->fd, line, len);
        (void) w;
}

const char *dlog_clean(const char *s, char *buf, size_t size) {
        size_t i = 0;
        for (; s && s[i] && i + 1 < size; i++) {
                unsigned char c = (unsigned char) s[i];
                buf[i] = c > 0x20 && c < 0x7f && c != '"' && c != '\\' ? (char) c : '?';
        }
        if (size)
                buf[i] = '\0';
        return buf;
}
