/* test-store-work.c: the Work API's queue in the store (store-work.h) on SQLite and, when
 * HULL_TEST_PG_URL is set (tests/unit/test-store-pg.sh), PostgreSQL: one live item a session
 * (a second refused until the first is stopped), compare-and-set updates that refuse a stale
 * version, the due items oldest first (a handed-out one only after the reclaim time), a lease's
 * end that requeues its item with the heartbeat cleared, paged lists, the stats, and the scoped
 * credentials found by digest and dropped with their work item. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "store-work.h"
#include "store.h"
#include "test.h"

static store_work item(const char *id, const char *sess, int64_t created) {
        store_work w = {.created_ms = created};
        snprintf(w.id, sizeof(w.id), "%s", id);
        snprintf(w.env_id, sizeof(w.env_id), "env_w");
        snprintf(w.session_id, sizeof(w.session_id), "%s", sess);
        snprintf(w.state, sizeof(w.state), "queued");
        return w;
}

static void run(store *s, const char *what) {
        hull_error e = {0};
        printf("# %s\n", what);
        store_work a = item("work_a", "sesn_a", 1000), b = item("work_b", "sesn_b", 2000),
                   a2 = item("work_a2", "sesn_a", 3000);
        a.body = json_pack("{s:{s:s}}", "metadata", "k", "v");
        CHECK_EQ_INT(store_work_insert(s, &a, &e), 0);
        CHECK_EQ_INT(store_work_insert(s, &b, &e), 0);
        CHECK_EQ_INT(store_work_insert(s, &a2, &e), -EEXIST); /* sesn_a has a live item */
        json_decref(a.body);

        json_t *due = NULL;
        CHECK_EQ_INT(store_work_due(s, "env_w", 5000, 10, &due, &e), 0);
        CHECK_EQ_INT((int) json_array_size(due), 2);
        CHECK_EQ_STR(json_string_value(json_array_get(due, 0)), "work_a");
        json_decref(due);

        /* hand work_a out: compare-and-set on its version */
        store_work g = {0}, g2 = {0};
        CHECK_EQ_INT(store_work_get(s, "work_a", &g, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(g.body, "metadata"), "k")), "v");
        CHECK(!g.has_heartbeat && g.version == 1);
        CHECK_EQ_INT(store_work_get(s, "work_a", &g2, &e), 0);
        g.polled_ms = 6000;
        snprintf(g.worker_id, sizeof(g.worker_id), "w1");
        CHECK_EQ_INT(store_work_update(s, &g, &e), 0);
        CHECK_EQ_INT(store_work_update(s, &g2, &e), -ESTALE); /* a second poller lost the race */
        store_work_done(&g2);
        store_work_stats st;
        CHECK_EQ_INT(store_work_stats_get(s, "env_w", &st, &e), 0);
        CHECK(st.depth == 1 && st.pending == 1 && st.oldest_created == 1000);
        CHECK_EQ_INT(store_work_due(s, "env_w", 6000, 10, &due, &e), 0); /* not yet reclaimable */
        CHECK_EQ_INT((int) json_array_size(due), 1);
        CHECK_EQ_STR(json_string_value(json_array_get(due, 0)), "work_b");
        json_decref(due);
        CHECK_EQ_INT(store_work_due(s, "env_w", 6001, 10, &due, &e), 0); /* reclaimable */
        CHECK_EQ_INT((int) json_array_size(due), 2);
        json_decref(due);

        /* acknowledged, a heartbeat, a lease that ends: queued again, heartbeat cleared */
        store_work_done(&g);
        CHECK_EQ_INT(store_work_get(s, "work_a", &g, &e), 0);
        CHECK(g.version == 2 && g.polled_ms == 6000);
        CHECK_EQ_STR(g.worker_id, "w1");
        snprintf(g.state, sizeof(g.state), "active");
        snprintf(g.heartbeat, sizeof(g.heartbeat), "hb_1");
        g.has_heartbeat = true;
        g.lease_ms = 10000;
        CHECK_EQ_INT(store_work_update(s, &g, &e), 0);
        store_work_done(&g);
        CHECK_EQ_INT(store_work_get(s, "work_a", &g, &e), 0);
        CHECK(g.has_heartbeat);
        CHECK_EQ_STR(g.heartbeat, "hb_1");
        store_work_done(&g);
        CHECK_EQ_INT(store_work_expire(s, "env_w", 9000, &e), 0); /* not yet */
        CHECK_EQ_INT(store_work_get(s, "work_a", &g, &e), 0);
        CHECK_EQ_STR(g.state, "active");
        store_work_done(&g);
        CHECK_EQ_INT(store_work_expire(s, "env_w", 10001, &e), 0);
        CHECK_EQ_INT(store_work_get(s, "work_a", &g, &e), 0);
        CHECK_EQ_STR(g.state, "queued");
        CHECK(!g.has_heartbeat && g.polled_ms == 0 && g.lease_ms == 0 && !g.worker_id[0]);

        /* stopped: the session may have a new item */
        snprintf(g.state, sizeof(g.state), "stopped");
        CHECK_EQ_INT(store_work_update(s, &g, &e), 0);
        store_work_done(&g);
        CHECK_EQ_INT(store_work_insert(s, &a2, &e), 0);
        CHECK_EQ_INT(store_work_get(s, "work_none", &g, &e), -ENOENT);

        /* pages of the list in (created, id) order */
        store_work *v = NULL;
        size_t n = 0;
        CHECK_EQ_INT(store_work_list(s, "env_w", 0, NULL, 2, &v, &n, &e), 0);
        CHECK_EQ_INT((int) n, 2);
        CHECK_EQ_STR(v[0].id, "work_a");
        CHECK_EQ_STR(v[1].id, "work_b");
        int64_t after = v[1].created_ms;
        for (size_t i = 0; i < n; i++)
                store_work_done(&v[i]);
        free(v);
        CHECK_EQ_INT(store_work_list(s, "env_w", after, "work_b", 2, &v, &n, &e), 0);
        CHECK_EQ_INT((int) n, 1);
        CHECK_EQ_STR(v[0].id, "work_a2");
        store_work_done(&v[0]);
        free(v);
        CHECK_EQ_INT(store_work_list(s, "env_other", 0, NULL, 2, &v, &n, &e), 0);
        CHECK_EQ_INT((int) n, 0);
        free(v);

        /* credentials by digest */
        char d1[65], d2[65], scope[STORE_WORK_SCOPE_MAX], wid[STORE_ID_MAX];
        memset(d1, 'a', 64);
        memset(d2, 'b', 64);
        d1[64] = d2[64] = '\0';
        CHECK_EQ_INT(store_work_key_add(s, d1, "env:env_w", NULL, 1, &e), 0);
        CHECK_EQ_INT(store_work_key_add(s, d2, "session:sesn_b", "work_b", 1, &e), 0);
        CHECK_EQ_INT(store_work_key_add(s, d2, "session:sesn_b", "work_b", 1, &e), -EEXIST);
        CHECK_EQ_INT(store_work_key_find(s, d1, scope, wid, &e), 1);
        CHECK_EQ_STR(scope, "env:env_w");
        CHECK_EQ_STR(wid, "");
        CHECK_EQ_INT(store_work_key_find(s, d2, scope, wid, &e), 1);
        CHECK_EQ_STR(scope, "session:sesn_b");
        CHECK_EQ_STR(wid, "work_b");
        CHECK_EQ_INT(store_work_key_drop(s, "work_b", &e), 0);
        CHECK_EQ_INT(store_work_key_find(s, d2, scope, wid, &e), 0);
        CHECK_EQ_INT(store_work_key_find(s, d1, scope, wid, &e), 1);
}

int main(void) {
        char dir[] = "/tmp/test-store-work.XXXXXX", path[80];
        hull_error e = {0};
        store *s = NULL;
        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/hull.db", dir);
        CHECK_EQ_INT(store_open(path, &s, &e), 0);
        if (s) {
                run(s, "sqlite");
                store_close(s);
        }
        static const char *const tails[] = {"", "-wal", "-shm"};
        for (size_t i = 0; i < ELEMENTSOF(tails); i++) {
                snprintf(path, sizeof(path), "%s/hull.db%s", dir, tails[i]);
                unlink(path);
        }
        rmdir(dir);
        const char *pg = getenv("HULL_TEST_PG_URL");
        if (pg) {
                s = NULL;
                CHECK_EQ_INT(store_open(pg, &s, &e), 0);
                if (s) {
                        run(s, "postgresql");
                        store_close(s);
                }
        }
        return test_done();
}
