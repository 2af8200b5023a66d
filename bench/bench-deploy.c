/* bench-deploy.c: the deployments scheduler's cost (issue 23): N deployments (default 10,000) in
 * a SQLite store, then
 *   1. next-run computation: cron_next for every deployment (zones loaded once), beside the
 *      yardstick of a naive scheduler: the next run found minute by minute with glibc's
 *      localtime_r under TZ (what a loop without a cron solver does);
 *   2. arming: v1_deploy_new reading every deployment from the store, loading its zone, computing
 *      its next run and building the heap: time, and the process's RSS and the heap's bytes.
 * Prints one line per figure. Run by bench/deployments.sh. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cron.h"
#include "fs-util.h"
#include "macro.h"
#include "store.h"
#include "v1-deploy.h"

static const char *const exprs[] = {"0 9 * * 1-5", "*/15 * * * *", "30 2 * * *",      "0 0 1 * *",
                                    "5 4 * * sun", "0 */6 * * *",  "45 23 * * 1,3,5", "0 12 15 * *"};
static const char *const zones[] = {"UTC",          "America/New_York", "Europe/Paris",
                                    "Asia/Kolkata", "Australia/Sydney", "America/Los_Angeles",
                                    "Asia/Tokyo",   "Europe/London"};
#define NX ELEMENTSOF(exprs)
#define NZ ELEMENTSOF(zones)

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static long rss_kib(void) {
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        long v = -1;
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "VmRSS:", 6) == 0)
                        v = strtol(line + 6, NULL, 10);
        if (f)
                fclose(f);
        return v;
}

static int64_t naive_next(const cron_expr *c, int64_t after) {
        for (int64_t u = (after / 60) * 60 + 60;; u += 60) {
                time_t tt = (time_t) u;
                struct tm tm;
                localtime_r(&tt, &tm);
                bool dm = c->days >> tm.tm_mday & 1, wm = c->weekdays >> tm.tm_wday & 1;
                bool day = (c->days_star || c->weekdays_star) ? dm && wm : dm || wm;
                if ((c->months >> (tm.tm_mon + 1) & 1) && day && (c->hours >> tm.tm_hour & 1) &&
                    (c->minutes >> tm.tm_min & 1))
                        return u;
        }
}

int main(int argc, char **argv) {
        size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
        hull_error e = {0};
        cron_expr cx[NX];
        tz_zone *tz[NZ];
        for (size_t i = 0; i < NX; i++)
                if (cron_parse(exprs[i], &cx[i], &e) < 0)
                        return 1;
        for (size_t i = 0; i < NZ; i++)
                if (tz_load(NULL, zones[i], &tz[i], &e) < 0) {
                        fprintf(stderr, "%s\n", e.msg);
                        return 1;
                }
        int64_t t0 = (int64_t) time(NULL), sum = 0;
        /* 1. next runs */
        double a = now_s();
        for (size_t i = 0; i < n; i++) {
                int64_t t;
                if (cron_next(&cx[i % NX], tz[(i / NX) % NZ], t0, &t) == 0)
                        sum += t;
        }
        double hull_s = now_s() - a;
        int64_t naive_sum = 0;
        a = now_s();
        for (size_t z = 0; z < NZ; z++) { /* TZ set once per zone (this bench is single-threaded) */
                setenv("TZ", zones[z], 1);
                tzset();
                for (size_t i = 0; i < n; i++)
                        if ((i / NX) % NZ == z)
                                naive_sum += naive_next(&cx[i % NX], t0);
        }
        double naive_s = now_s() - a;
        unsetenv("TZ");
        printf("next-run: %zu deployments: cron_next %.1f ms (%.2f us each); naive minute-step + localtime_r "
               "%.1f ms (%.2f us each); same answers: %s\n",
               n, hull_s * 1e3, hull_s * 1e6 / (double) n, naive_s * 1e3, naive_s * 1e6 / (double) n,
               sum == naive_sum ? "yes" : "NO");
        /* 2. arming from the store */
        char dir[] = "/tmp/hull-bench-deploy-XXXXXX", db[128];
        if (!mkdtemp(dir))
                return 1;
        snprintf(db, sizeof(db), "%s/hull.db", dir);
        store *s = NULL;
        if (store_open(db, &s, &e) < 0) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
        }
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        a = now_s();
        for (size_t i = 0; i < n; i++) {
                char id[STORE_ID_MAX];
                snprintf(id, sizeof(id), "depl_bench%06zu", i);
                json_auto_t *o =
                        json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:i}, s:s, s:{s:s, s:s, s:s, s:n}, s:s, "
                                  "s:n, s:s, s:n}",
                                  "id", id, "type", "deployment", "name", id, "agent", "type", "agent", "id", "agent_x",
                                  "version", 1, "environment_id", "env_x", "schedule", "type", "cron", "expression",
                                  exprs[i % NX], "timezone", zones[(i / NX) % NZ], "last_run_at", "status", "active",
                                  "archived_at", "created_at", now, "paused_reason");
                if (store_deploy_put(s, STORE_DEPLOYMENT, o, true, &e) < 0) {
                        fprintf(stderr, "%s\n", e.msg);
                        return 1;
                }
        }
        double insert_s = now_s() - a;
        long rss0 = rss_kib();
        v1_deploy *d = NULL;
        dlog log = {.level = DLOG_WARN, .fd = 2};
        v1_deploy_config cfg = {.start = {.store = s}, .log = &log};
        a = now_s();
        if (v1_deploy_new(&cfg, &d, &e) < 0) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
        }
        double arm_s = now_s() - a;
        long rss1 = rss_kib();
        size_t armed = 0, bytes = 0;
        v1_deploy_sched_stats(d, &armed, &bytes);
        printf("arming: %zu deployments read from SQLite, zones loaded, next runs computed, heap built: %.1f ms "
               "(%.1f us each); armed %zu; heap %zu KiB; RSS +%ld KiB (%.0f bytes a deployment); inserting them "
               "took %.1f ms\n",
               n, arm_s * 1e3, arm_s * 1e6 / (double) n, armed, bytes / 1024, rss1 - rss0,
               (double) (rss1 - rss0) * 1024.0 / (double) n, insert_s * 1e3);
        v1_deploy_free(d);
        store_close(s);
        for (size_t i = 0; i < NZ; i++)
                tz_free(tz[i]);
        rm_rf_at(AT_FDCWD, dir);
        return 0;
}
