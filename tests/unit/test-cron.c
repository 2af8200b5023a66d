/* test-cron.c: cron expressions (fields, names, ranges, steps, lists, refusals by name), TZif
 * zones, and cron_next against glibc's localtime_r in the same zones (single-threaded here, so
 * setting TZ is safe in this test only), across DST changes in both directions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cron.h"
#include "test.h"

static int64_t utc(int y, int mo, int d, int h, int mi) {
        struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi};
        return (int64_t) timegm(&tm);
}

static void test_parse(void) {
        cron_expr c;
        hull_error e = {0};
        CHECK_EQ_INT(cron_parse("*/15 9-17 * * mon-fri", &c, &e), 0);
        CHECK(c.minutes == ((1ULL << 0) | (1ULL << 15) | (1ULL << 30) | (1ULL << 45)));
        CHECK(c.hours == 0x3fe00);
        CHECK(c.weekdays == 0x3e);
        CHECK(c.days_star && !c.weekdays_star);
        CHECK_EQ_INT(cron_parse("0 0 1,15 JAN,jul 7", &c, &e), 0);
        CHECK(c.weekdays == 1 && c.months == ((1 << 1) | (1 << 7)) && c.days == ((1U << 1) | (1U << 15)));
        CHECK_EQ_INT(cron_parse("5/20 1-10/3 * * *", &c, &e), 0);
        CHECK(c.minutes == ((1ULL << 5) | (1ULL << 25) | (1ULL << 45)));
        CHECK(c.hours == ((1U << 1) | (1U << 4) | (1U << 7) | (1U << 10)));
        CHECK_EQ_INT(cron_parse("  0\t12  *  *  *  ", &c, &e), 0);
        const char *bad[] = {
                "",           "* * * *",     "* * * * * *",  "60 * * * *",    "* 24 * * *",   "* * 0 * *",
                "* * * 13 *", "* * * * 8",   "5-1 * * * *",  "*/0 * * * *",   "*/61 * * * *", "@daily",
                "0 0 L * *",  "0 0 1W * *",  "0 0 * * 1#2",  "0 0 ? * *",     "a * * * *",    "1,,2 * * * *",
                "1- * * * *", "* * * foo *", "0000 * * * *", "* * * * monday"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                e = (hull_error){0};
                int r = cron_parse(bad[i], &c, &e);
                TEST_RESULT(r == -EINVAL && e.msg[0], "'%s' refused: %s", bad[i], e.msg);
        }
        char big[300];
        memset(big, '1', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        CHECK_EQ_INT(cron_parse(big, &c, &e), -EINVAL);
}

static void test_next_utc(void) {
        cron_expr c;
        hull_error e = {0};
        int64_t t;
        CHECK_EQ_INT(cron_parse("*/5 * * * *", &c, &e), 0);
        CHECK_EQ_INT(cron_next(&c, NULL, utc(2026, 12, 5, 21, 3) + 17, &t), 0);
        CHECK_EQ_INT(t, utc(2026, 12, 5, 21, 5));
        CHECK_EQ_INT(cron_next(&c, NULL, utc(2026, 12, 5, 21, 5), &t), 0); /* strictly after */
        CHECK_EQ_INT(t, utc(2026, 12, 5, 21, 10));
        CHECK_EQ_INT(cron_parse("0 0 29 2 *", &c, &e), 0);
        CHECK_EQ_INT(cron_next(&c, NULL, utc(2026, 12, 5, 0, 0), &t), 0);
        CHECK_EQ_INT(t, utc(2028, 2, 29, 0, 0));
        CHECK_EQ_INT(cron_parse("0 0 31 2 *", &c, &e), 0);
        CHECK_EQ_INT(cron_next(&c, NULL, utc(2026, 12, 5, 0, 0), &t), -ENOENT);
        /* day of month and day of week both restricted: either */
        CHECK_EQ_INT(cron_parse("0 12 13 * fri", &c, &e), 0);
        CHECK_EQ_INT(cron_next(&c, NULL, utc(2026, 12, 5, 0, 0), &t), 0);
        CHECK_EQ_INT(t, utc(2026, 12, 11, 12, 0)); /* a Friday before the 13th */
        CHECK_EQ_INT(cron_parse("30 23 31 12 *", &c, &e), 0);
        CHECK_EQ_INT(cron_next(&c, NULL, utc(2026, 12, 31, 23, 30), &t), 0);
        CHECK_EQ_INT(t, utc(2027, 12, 31, 23, 30));
        char buf[32];
        cron_time_rfc3339(utc(2027, 1, 2, 3, 4) + 5, buf, sizeof(buf));
        CHECK_EQ_STR(buf, "2027-01-02T03:04:05Z");
}

/* The reference: minute by minute with localtime_r under TZ. */
static int64_t brute_next(const cron_expr *c, int64_t after) {
        int64_t u = (after / 60) * 60 + 60;
        char seen[64] = "";
        for (int i = 0; i < 400 * 24 * 60; i++, u += 60) {
                time_t tt = (time_t) u;
                struct tm tm;
                localtime_r(&tt, &tm);
                bool dm = c->days >> tm.tm_mday & 1, wm = c->weekdays >> tm.tm_wday & 1;
                bool day = (c->days_star || c->weekdays_star) ? dm && wm : dm || wm;
                if ((c->months >> (tm.tm_mon + 1) & 1) && day && (c->hours >> tm.tm_hour & 1) &&
                    (c->minutes >> tm.tm_min & 1)) {
                        /* a repeated wall time fires once */
                        char key[64];
                        strftime(key, sizeof(key), "%Y-%m-%d %H:%M", &tm);
                        time_t prev = (time_t) (u - 3600);
                        struct tm pt;
                        localtime_r(&prev, &pt);
                        char pkey[64];
                        strftime(pkey, sizeof(pkey), "%Y-%m-%d %H:%M", &pt);
                        if (strcmp(key, pkey) == 0 || strcmp(key, seen) == 0)
                                continue;
                        return u;
                }
        }
        return -1;
}

static void test_zones(void) {
        const char *zones[] = {"America/New_York", "Europe/Paris", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"};
        const char *exprs[] = {"30 2 * * *", "0 1 * * *", "15 1 * * sun", "*/45 0-3 * 3,10,11 *", "0 9 * * 1-5"};
        const int64_t starts[] = {utc(2026, 3, 7, 0, 0), utc(2026, 10, 24, 0, 0), utc(2026, 11, 1, 0, 0),
                                  utc(2027, 3, 27, 12, 0), utc(2026, 4, 4, 12, 0)};
        for (size_t zi = 0; zi < sizeof(zones) / sizeof(zones[0]); zi++) {
                hull_error e = {0};
                tz_zone *z = NULL;
                int r = tz_load(NULL, zones[zi], &z, &e);
                TEST_RESULT(r == 0, "tz_load %s: %s", zones[zi], e.msg);
                if (r < 0)
                        continue;
                setenv("TZ", zones[zi], 1);
                tzset();
                for (size_t xi = 0; xi < sizeof(exprs) / sizeof(exprs[0]); xi++) {
                        cron_expr c;
                        if (cron_parse(exprs[xi], &c, &e) < 0)
                                continue;
                        for (size_t si = 0; si < sizeof(starts) / sizeof(starts[0]); si++) {
                                int64_t t = starts[si], want;
                                bool same = true;
                                for (int k = 0; k < 6 && same; k++) {
                                        int64_t got;
                                        want = brute_next(&c, t);
                                        same = cron_next(&c, z, t, &got) == 0 && got == want;
                                        if (!same)
                                                printf("# %s '%s' after %lld: got %lld want %lld\n", zones[zi],
                                                       exprs[xi], (long long) t, (long long) got, (long long) want);
                                        t = want;
                                }
                                TEST_RESULT(same, "%s '%s' from %lld matches localtime_r", zones[zi], exprs[xi],
                                            (long long) starts[si]);
                        }
                }
                tz_free(z);
        }
        unsetenv("TZ");
        tz_zone *z = NULL;
        hull_error e = {0};
        const char *bad[] = {"../etc/passwd", "/etc/passwd",   "Mars/Olympus", "",         "Europe//Paris",
                             "zone.tab",      "Europe/Paris/", ".hidden",      "right/UTC"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                e = (hull_error){0};
                int r = tz_load(NULL, bad[i], &z, &e);
                TEST_RESULT(r < 0 && e.msg[0] && !z, "zone '%s' refused: %s", bad[i], e.msg);
        }
        static const unsigned char junk[] = "TZif2\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\xff\xff\xff\xff";
        CHECK(tz_parse(junk, sizeof(junk), &z, &e) == -EINVAL);
}

int main(void) {
        test_parse();
        test_next_utc();
        test_zones();
        return test_done();
}
