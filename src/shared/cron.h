/* cron.h: 5-field cron expressions (POSIX crontab: minute hour day-of-month month day-of-week;
 * numbers, "*", ranges a-b, steps ("*" or a-b or a, then /n), comma lists, month and weekday names
 * jan..dec and sun..sat, weekday 0-7 with 7 Sunday; day-of-month and day-of-week both restricted
 * match either, as Vixie cron) and the next time one fires in an IANA time zone.
 *
 * Time zones come from the system tz database as TZif files (RFC 8536) parsed here into a table of
 * transitions: no TZ environment variable, no localtime_r, so no setenv race with the other threads
 * of hull serve; every function but tz_load is pure and thread-safe on a shared tz_zone. Times
 * after a zone file's last transition use that transition's offset (Debian's tzdata files are "fat":
 * their transitions run to 2037). A wall time that a DST change skips does not fire; one that a DST
 * change repeats fires once (at its first occurrence). Fuzzed (fuzz/fuzz-cron.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

typedef struct cron_expr {
        uint64_t minutes; /* bit m: minute m (0-59) */
        uint32_t hours;   /* bit h (0-23) */
        uint32_t days;    /* bit d (1-31) */
        uint16_t months;  /* bit m (1-12) */
        uint8_t weekdays; /* bit w (0-6, 0 Sunday) */
        bool days_star, weekdays_star;
} cron_expr;

/* Parse s (NUL-terminated, at most CRON_EXPR_MAX - 1 bytes). Returns 0 with *ret, or -EINVAL with
 * *e saying which field is wrong and why (seconds, @daily, L, W, #, ? are refused by name). */
int cron_parse(const char *s, cron_expr *ret, hull_error *e);

typedef struct tz_zone tz_zone;

/* Is name an IANA zone name hull will look up ("Europe/Paris", "UTC": [A-Za-z0-9_+-] components
 * separated by '/', none starting with '.')? Pure. */
bool tz_name_valid(const char *name);
/* A TZif file's len bytes parsed (version 1, 2, 3 or 4; leap-second files refused). Pure. Returns
 * 0 with *ret (tz_free) or -EINVAL with *e. */
int tz_parse(const void *buf, size_t len, tz_zone **ret, hull_error *e);
/* The zone name of the tz database under dir (NULL: /usr/share/zoneinfo). -EINVAL for a name that
 * is not one, -ENOENT when the database has no such zone, with *e saying so. */
int tz_load(const char *dir, const char *name, tz_zone **ret, hull_error *e);
void tz_free(tz_zone *z);
static inline void tz_freep(tz_zone **z) {
        if (*z)
                tz_free(*z);
}
#define _cleanup_tz_ _cleanup_(tz_freep)

/* The zone's offset from UTC at Unix time t, in seconds (z NULL: UTC). */
int32_t tz_offset(const tz_zone *z, int64_t t);

/* The first minute after Unix time after (seconds) at which c fires in z (NULL: UTC), into *ret
 * (Unix seconds, a multiple of 60). -ENOENT when it does not fire within CRON_SEARCH_DAYS
 * ("0 0 31 2 *"). */
int cron_next(const cron_expr *c, const tz_zone *z, int64_t after, int64_t *ret);

/* Unix seconds as RFC 3339 UTC ("2026-12-05T21:00:00Z") into buf (at least 21 bytes). Pure. */
void cron_time_rfc3339(int64_t t, char *buf, size_t size);
