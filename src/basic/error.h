/* error.h: a user-facing error: negative errno plus one line saying what failed and what to do.
 * Fixed size, never allocates, so it can be filled anywhere (even in a forked child). */
#pragma once

#include "macro.h"
#include "limits.h"

typedef struct hull_error {
        int err;                      /* negative errno, 0 when unset */
        char msg[HULL_ERROR_MSG_MAX]; /* "layer: what failed: reason (hint)" */
} hull_error;

/* Fill *e (if not NULL) with err and a formatted message, appending ": strerror(-err)" when
 * err != 0 and the message has no "%m". Returns err (negative), so `return hull_err(e, -EINVAL,
 * "...")` reports and returns in one step. */
int hull_err(hull_error *e, int err, const char *fmt, ...) _printf_(3, 4);

/* Like hull_err without the strerror suffix: for messages that describe data (a malformed field,
 * a digest that does not match), not a failed call. */
int hull_fail(hull_error *e, int err, const char *fmt, ...) _printf_(3, 4);

/* Like hull_err, with a hint appended in parentheses after the reason. */
int hull_err_hint(hull_error *e, int err, const char *hint, const char *fmt, ...) _printf_(4, 5);
