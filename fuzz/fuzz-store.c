/* fuzz-store.c: what of the store's input comes from outside: RFC 3339 times (the created_at[...]
 * filters) and page cursors. Input "t..." is a time: one that parses prints back (as
 * store_now_rfc3339's form) to the same milliseconds. Anything else is a cursor, given to every
 * list of a small store: each answers a page or -EINVAL, nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs-util.h"
#include "store.h"

static char dir[64];
static store *db;

static void cleanup(void) {
        store_close(db);
        rm_rf_at(AT_FDCWD, dir);
}

static store *the_store(void) {
        if (db)
                return db;
        char path[128];
        snprintf(dir, sizeof(dir), "/tmp/hull-fuzz-store-XXXXXX");
        if (!mkdtemp(dir))
                abort();
        snprintf(path, sizeof(path), "%s/hull.db", dir);
        if (store_open(path, &db, NULL) < 0)
                abort();
        atexit(cleanup);
        for (int i = 0; i < 3; i++) {
                char id[32], t[STORE_TIME_MAX];
                snprintf(id, sizeof(id), "sess_%d", i);
                snprintf(t, sizeof(t), "2026-01-01T00:00:0%dZ", i);
                json_t *o = json_pack("{s:s, s:s, s:s, s:{s:s, s:i}, s:n}", "id", id, "created_at", t, "status", "idle",
                                      "agent", "id", "agent_1", "version", 1, "archived_at");
                json_t *a =
                        json_pack("{s:s, s:s, s:i, s:n}", "id", id + 1, "created_at", t, "version", 1, "archived_at");
                json_t *ev = json_pack("{s:s, s:s, s:n}", "id", id + 2, "type", "user.message", "processed_at");
                if (store_insert(db, STORE_SESSION, o, NULL) < 0 || store_insert(db, STORE_AGENT, a, NULL) < 0 ||
                    store_events_append(db, "sess_0", &ev, 1, NULL, NULL) < 0)
                        abort();
                json_decref(o);
                json_decref(a);
                json_decref(ev);
        }
        return db;
}

static void check(int r, store_page *p) {
        if (r != 0 && r != -EINVAL)
                abort();
        if (r == 0)
                store_page_done(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size == 0 || size > 4096)
                return 0;
        char *s = malloc(size);
        if (!s)
                return 0;
        memcpy(s, data + 1, size - 1);
        s[size - 1] = 0;
        if (data[0] == 't') {
                int64_t ms;
                if (store_time_ms(s, &ms) == 0 && ms >= 0 && ms < INT64_C(253402300800000)) {
                        time_t sec = (time_t) (ms / 1000);
                        struct tm tm;
                        char back[64];
                        int64_t again;
                        gmtime_r(&sec, &tm);
                        snprintf(back, sizeof(back), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (ms % 1000));
                        if (store_time_ms(back, &again) != 0 || again != ms)
                                abort();
                }
                free(s);
                return 0;
        }
        store *st = the_store();
        store_page p = {0};
        store_list_q q = {.limit = 1, .page = s};
        check(store_list(st, STORE_SESSION, &q, &p, NULL), &p);
        q.descending = true;
        check(store_list(st, STORE_SESSION, &q, &p, NULL), &p);
        check(store_list(st, STORE_AGENT, &q, &p, NULL), &p);
        check(store_list(st, STORE_ENVIRONMENT, &q, &p, NULL), &p);
        q = (store_list_q){.limit = 1, .page = s, .versions_of = "ess_0"};
        check(store_list(st, STORE_AGENT, &q, &p, NULL), &p);
        store_events_q eq = {.limit = 1, .page = s};
        int64_t *seqs = NULL;
        int r = store_events_list(st, "sess_0", &eq, &p, &seqs, NULL);
        if (r == 0)
                free(seqs);
        check(r, &p);
        free(s);
        return 0;
}
