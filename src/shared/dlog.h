/* dlog.h: the daemon's log sink: one line per event on a file descriptor (stderr), logfmt style
 * ("ts=... level=info event=request id=... status=200 ..."), each written with one write() so
 * lines from several threads never interleave. */
#pragma once

#include <stddef.h>

#include "macro.h"

typedef enum dlog_level {
        DLOG_ERROR,
        DLOG_WARN,
        DLOG_INFO,
        DLOG_DEBUG,
} dlog_level;

typedef struct dlog {
        dlog_level level; /* lines above it are dropped */
        int fd;
} dlog;

/* "error", "warn", "info" or "debug". Returns 0 or -EINVAL. */
int dlog_level_from_string(const char *s, dlog_level *ret);

/* Write "ts=<UTC> level=<lvl> " and the formatted fields as one line (truncated at
 * SERVE_LOG_LINE_MAX). Values that come from outside go through dlog_clean first. */
void dlog_log(const dlog *l, dlog_level lvl, const char *fmt, ...) _printf_(3, 4);

/* Copy s into buf as a loggable value: printable ASCII only (others become '?'), no quotes or
 * backslashes, truncated to size-1. Returns buf. */
const char *dlog_clean(const char *s, char *buf, size_t size);
