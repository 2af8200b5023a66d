/* test-store-deploy.c: the store's deployments and runs (store.h) on SQLite and, when
 * tests/unit/test-store-pg.sh gives HULL_TEST_PG_URL, on PostgreSQL: put and get, replace, lists
 * newest first with each filter and cursors, archived left out, runs append-only, and the claim of
 * a scheduled run made once only (a second claim of the same or an earlier time, a paused or an
 * archived deployment, claim nothing), across a reopen of the database as after a restart. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlib-sqlite3.h"
#include "fs-util.h"
#include "macro.h"
#include "store.h"
#include "test.h"

static json_t *dep_obj(const char *id, unsigned sec, const char *status, const char *agent, bool archived) {
        char t[STORE_TIME_MAX];
        snprintf(t, sizeof(t), "2026-01-01T00:00:%02u.000Z", sec % 60);
        return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:i}, s:o}", "id", id, "type", "deployment", "created_at",
                         t, "status", status, "agent", "type", "agent", "id", agent, "version", 1, "archived_at",
                         archived ? json_string("2026-02-01T00:00:00Z") : json_null());
}

static json_t *run_obj(const char *id, const char *dep, unsigned sec, const char *trigger, bool failed) {
        char t[STORE_TIME_MAX];
        snprintf(t, sizeof(t), "2026-01-01T00:01:%02u.000Z", sec % 60);
        return json_pack("{s:s, s:s, s:s, s:s, s:{s:s}, s:o, s:o}", "id", id, "type", "deployment_run", "deployment_id",
                         dep, "created_at", t, "trigger_context", "type", trigger, "error",
                         failed ? json_pack("{s:s, s:s}", "type", "agent_archived_error", "message", "x") : json_null(),
                         "session_id", failed ? json_null() : json_string("sesn_x"));
}

static size_t walk(store *s, store_dkind k, store_deploy_q q, unsigned limit) {
        size_t n = 0;
        char page[STORE_CURSOR_MAX] = "";
        for (int guard = 0; guard < 50; guard++) {
                q.limit = limit;
                q.page = page[0] ? page : NULL;
                store_page p = {0};
                hull_error e = {0};
                if (store_deploy_list(s, k, &q, &p, &e) < 0) {
                        TEST_RESULT(false, "list: %s", e.msg);
                        return n;
                }
                n += json_array_size(p.data);
                snprintf(page, sizeof(page), "%s", p.next_page);
                store_page_done(&p);
                if (!page[0])
                        break;
        }
        return n;
}

static void put(store *s, store_dkind k, json_t *o, bool create, int want) {
        hull_error e = {0};
        int r = store_deploy_put(s, k, o, create, &e);
        TEST_RESULT(r == want, "put %s: %d (want %d) %s", json_string_value(json_object_get(o, "id")), r, want, e.msg);
        json_decref(o);
}

static void test_backend(const char *url) {
        printf("# backend %s\n", strncmp(url, "postgres", 8) == 0 ? "postgresql" : "sqlite");
        hull_error e = {0};
        store *s = NULL;
        if (store_open(url, &s, &e) < 0) {
                TEST_RESULT(false, "open: %s", e.msg);
                return;
        }
        put(s, STORE_DEPLOYMENT, dep_obj("depl_a", 1, "active", "agent_1", false), true, 0);
        put(s, STORE_DEPLOYMENT, dep_obj("depl_b", 2, "paused", "agent_1", false), true, 0);
        put(s, STORE_DEPLOYMENT, dep_obj("depl_c", 3, "active", "agent_2", false), true, 0);
        put(s, STORE_DEPLOYMENT, dep_obj("depl_d", 4, "active", "agent_2", true), true, 0);
        put(s, STORE_DEPLOYMENT, dep_obj("depl_a", 5, "active", "agent_1", false), true, -EEXIST);
        put(s, STORE_DEPLOYMENT, dep_obj("depl_zz", 5, "active", "agent_1", false), false, -ENOENT);
        json_t *bad = json_pack("{s:s, s:s}", "id", "depl_q", "created_at", "yesterday");
        put(s, STORE_DEPLOYMENT, bad, true, -EINVAL);
        json_t *got = NULL;
        CHECK_EQ_INT(store_deploy_get(s, STORE_DEPLOYMENT, "depl_b", &got, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(got, "status")), "paused");
        json_decref(got);
        CHECK_EQ_INT(store_deploy_get(s, STORE_DEPLOYMENT, "depl_none", &got, &e), -ENOENT);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT, (store_deploy_q){.has_error = -1}, 1), 3);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT, (store_deploy_q){.include_archived = true, .has_error = -1}, 2), 4);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT, (store_deploy_q){.status = "active", .has_error = -1}, 1), 2);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT, (store_deploy_q){.agent_id = "agent_2", .has_error = -1}, 5), 1);
        CHECK_EQ_INT(
                walk(s, STORE_DEPLOYMENT, (store_deploy_q){.created_gte = "2026-01-01T00:00:02Z", .has_error = -1}, 1),
                2);
        store_page p = {0};
        CHECK_EQ_INT(store_deploy_list(s, STORE_DEPLOYMENT, &(store_deploy_q){.has_error = -1}, &p, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(p.data, 0), "id")), "depl_c"); /* newest */
        store_page_done(&p);

        /* the claim */
        CHECK_EQ_INT(store_deploy_claim(s, "depl_a", 60000, &e), 1);
        CHECK_EQ_INT(store_deploy_claim(s, "depl_a", 60000, &e), 0);
        CHECK_EQ_INT(store_deploy_claim(s, "depl_a", 0, &e), 0);
        CHECK_EQ_INT(store_deploy_claim(s, "depl_b", 60000, &e), 0); /* paused */
        CHECK_EQ_INT(store_deploy_claim(s, "depl_d", 60000, &e), 0); /* archived */
        CHECK_EQ_INT(store_deploy_claim(s, "depl_none", 60000, &e), 0);
        put(s, STORE_DEPLOYMENT, dep_obj("depl_a", 1, "active", "agent_9", false), false, 0); /* keeps the claim */
        CHECK_EQ_INT(store_deploy_claim(s, "depl_a", 60000, &e), 0);
        CHECK_EQ_INT(store_deploy_claim(s, "depl_a", 120000, &e), 1);

        /* runs */
        put(s, STORE_DEPLOYMENT_RUN, run_obj("drun_1", "depl_a", 1, "schedule", false), true, 0);
        put(s, STORE_DEPLOYMENT_RUN, run_obj("drun_2", "depl_a", 2, "manual", true), true, 0);
        put(s, STORE_DEPLOYMENT_RUN, run_obj("drun_3", "depl_c", 3, "schedule", true), true, 0);
        put(s, STORE_DEPLOYMENT_RUN, run_obj("drun_3", "depl_c", 3, "schedule", true), true, -EEXIST);
        put(s, STORE_DEPLOYMENT_RUN, run_obj("drun_1", "depl_a", 1, "schedule", false), false, -EINVAL);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT_RUN, (store_deploy_q){.has_error = -1}, 2), 3);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT_RUN, (store_deploy_q){.deployment_id = "depl_a", .has_error = -1}, 1), 2);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT_RUN, (store_deploy_q){.has_error = 1}, 1), 2);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT_RUN, (store_deploy_q){.has_error = 0}, 1), 1);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT_RUN, (store_deploy_q){.trigger_type = "schedule", .has_error = -1}, 1),
                     2);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT_RUN,
                          (store_deploy_q){.created_lt = "2026-01-01T00:01:02Z", .has_error = -1}, 1),
                     1);
        CHECK_EQ_INT(walk(s, STORE_DEPLOYMENT_RUN, (store_deploy_q){.deployment_id = "depl_none", .has_error = -1}, 1),
                     0);
        CHECK_EQ_INT(store_deploy_get(s, STORE_DEPLOYMENT_RUN, "drun_2", &got, &e), 0);
        CHECK(json_is_object(json_object_get(got, "error")));
        json_decref(got);
        /* a cursor of another query is refused */
        CHECK_EQ_INT(store_deploy_list(s, STORE_DEPLOYMENT_RUN, &(store_deploy_q){.limit = 1, .has_error = -1}, &p, &e),
                     0);
        char cur[STORE_CURSOR_MAX];
        snprintf(cur, sizeof(cur), "%s", p.next_page);
        store_page_done(&p);
        CHECK_EQ_INT(store_deploy_list(s, STORE_DEPLOYMENT_RUN,
                                       &(store_deploy_q){.limit = 1, .page = cur, .has_error = 1}, &p, &e),
                     -EINVAL);
        store_close(s);
        /* reopened (a restart): the claim is still there */
        s = NULL;
        CHECK_EQ_INT(store_open(url, &s, &e), 0);
        if (s) {
                CHECK_EQ_INT(store_deploy_claim(s, "depl_a", 120000, &e), 0);
                CHECK_EQ_INT(store_deploy_claim(s, "depl_a", 180000, &e), 1);
                store_close(s);
        }
}

int main(void) {
        hull_error e = {0};
        if (!dlib_sqlite3_load(&e)) {
                printf("skip - sqlite: %s\n", e.msg);
                return 77;
        }
        char dir[] = "/tmp/hull-test-store-deploy-XXXXXX", db[128];
        if (!mkdtemp(dir))
                return 1;
        snprintf(db, sizeof(db), "%s/hull.db", dir);
        test_backend(db);
        const char *pg = getenv("HULL_TEST_PG_URL");
        if (pg && *pg)
                test_backend(pg);
        rm_rf_at(AT_FDCWD, dir);
        return test_done();
}
