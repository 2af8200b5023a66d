/* test-store.c: hull.db: migrations (from empty, reopen, a newer schema and a file that is not a
 * database refused), a PostgreSQL URL refused while no such backend is built in, resources (agent versions, -ESTALE,
 * cascading deletes), every list filter walked page by page both ways, cursors of another query refused, the event log
 * (seqs, filters, duplicates, unknown sessions), API keys, conversations, durability across a child that dies without
 * closing, concurrent appends, and no memory budget of the caller's applying.
 *
 * Everything after the migrations is backend-neutral: test_backend runs it against an empty store
 * opened from each of urls[] in main (a path, sqlite:PATH; a later backend adds its URL). */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlib-sqlite3.h"
#include "fs-util.h"
#include "sqlite-mem.h"
#include "store-testlib.h"
#include "store.h"
#include "test.h"

static char dir[64], db_path[128];
/* The store the backend-neutral tests open (a path or URL). */
static const char *url;

static store *open_or_die(void) {
        store *s = NULL;
        hull_error e = {0};
        if (store_open(url, &s, &e) < 0) {
                printf("# open: %s\n", e.msg);
                exit(1);
        }
        return s;
}

/* ---- migrations ---- */

static void test_open(void) {
        hull_error e = {0};
        store *s = NULL;
        CHECK_EQ_INT(store_open(db_path, &s, &e), 0);
        CHECK(s != NULL);
        CHECK(store_schema_version() >= 1);
        CHECK_EQ_INT(store_user_version(s), store_schema_version());
        struct stat st;
        CHECK(stat(db_path, &st) == 0 && (st.st_mode & 0777) == 0600);
        store_close(s);
        /* reopened: nothing to migrate, same version */
        s = NULL;
        CHECK_EQ_INT(store_open(db_path, &s, &e), 0);
        CHECK_EQ_INT(store_user_version(s), store_schema_version());
        store_close(s);

        /* a newer schema than this hull knows */
        char newer[160];
        snprintf(newer, sizeof(newer), "%s/newer.db", dir);
        CHECK_EQ_INT(store_open(newer, &s, &e), 0);
        store_close(s);
        sqlite3 *raw = NULL;
        CHECK_EQ_INT(sqlite3_open_v2(newer, &raw, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        char set[64];
        snprintf(set, sizeof(set), "PRAGMA user_version = %d", store_schema_version() + 1);
        CHECK_EQ_INT(sqlite3_exec(raw, set, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close_v2(raw);
        s = NULL;
        e = (hull_error){0};
        CHECK_EQ_INT(store_open(newer, &s, &e), -EPROTO);
        CHECK(s == NULL);
        TEST_RESULT(strstr(e.msg, "newer than this hull knows") != NULL, "newer schema: %s", e.msg);

        /* a file that is not a database */
        char junk[160];
        snprintf(junk, sizeof(junk), "%s/junk.db", dir);
        char bytes[4096];
        for (size_t i = 0; i < sizeof(bytes); i++)
                bytes[i] = (char) ('a' + i % 26);
        int fd = open(junk, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && write(fd, bytes, sizeof(bytes)) == (ssize_t) sizeof(bytes));
        close(fd);
        e = (hull_error){0};
        CHECK_EQ_INT(store_open(junk, &s, &e), -EINVAL);
        TEST_RESULT(strstr(e.msg, "not a SQLite database") != NULL, "junk: %s", e.msg);

        /* a directory that does not exist */
        e = (hull_error){0};
        CHECK(store_open("/nonexistent-hull-dir/hull.db", &s, &e) < 0);
        CHECK(e.msg[0] != 0);
}

/* A PostgreSQL URL whose server cannot be reached: a clear error, no file made, and the URL (its
 * password) not repeated; a URL described for a log keeps no password. */
static void test_pg_unreachable(void) {
        static const char *const urls[] = {"postgres://hull:secret@/hull?host=/nonexistent-hull-dir",
                                           "postgresql://hull:secret@localhost:1/hull?connect_timeout=2"};
        for (size_t i = 0; i < ELEMENTSOF(urls); i++) {
                store *s = NULL;
                hull_error e = {0};
                int r = store_open(urls[i], &s, &e);
                TEST_RESULT(r == -ECONNREFUSED || r == -ENOSYS, "%s: %d %s", urls[i], r, e.msg);
                CHECK(s == NULL);
                TEST_RESULT(r == -ENOSYS || strstr(e.msg, "cannot connect to PostgreSQL") != NULL, "%s: %s", urls[i],
                            e.msg);
                CHECK(strstr(e.msg, "secret") == NULL);
                CHECK(strchr(e.msg, '\n') == NULL);
        }
        CHECK(access("postgres:", F_OK) < 0 && access("postgresql:", F_OK) < 0);
        CHECK(store_url_is_pg("postgres://x") && store_url_is_pg("postgresql://x") && !store_url_is_pg("/a/hull.db") &&
              !store_url_is_pg("sqlite:/a"));
        char buf[256];
        store_url_describe("postgres://hull:secret@db.example:5432/hull?sslmode=require&password=x", buf, sizeof(buf));
        CHECK_EQ_STR(buf, "postgres://hull:***@db.example:5432/hull");
        store_url_describe("postgresql:///hull?host=/tmp/x&password=secret", buf, sizeof(buf));
        CHECK_EQ_STR(buf, "postgresql:///hull");
        store_url_describe("/var/lib/hull/hull.db", buf, sizeof(buf));
        CHECK_EQ_STR(buf, "/var/lib/hull/hull.db");
}

static void test_time(void) {
        int64_t ms;
        CHECK_EQ_INT(store_time_ms("1970-01-01T00:00:00Z", &ms), 0);
        CHECK_EQ_INT(ms, 0);
        CHECK_EQ_INT(store_time_ms("2026-12-02T10:00:00.123Z", &ms), 0);
        CHECK_EQ_INT(ms, 1796205600123LL);
        CHECK_EQ_INT(store_time_ms("2026-12-02T11:00:00.1234567+01:00", &ms), 0);
        CHECK_EQ_INT(ms, 1796205600123LL);
        CHECK_EQ_INT(store_time_ms("2024-02-29T00:00:00Z", &ms), 0);
        CHECK_EQ_INT(store_time_ms("2026-02-29T00:00:00Z", &ms), -EINVAL);
        CHECK_EQ_INT(store_time_ms("2026-12-02T10:00:00", &ms), -EINVAL);
        CHECK_EQ_INT(store_time_ms("2026-12-02T10:00:00.Z", &ms), -EINVAL);
        CHECK_EQ_INT(store_time_ms("2026-13-02T10:00:00Z", &ms), -EINVAL);
        CHECK_EQ_INT(store_time_ms("2026-12-02T10:00:00Zx", &ms), -EINVAL);
        CHECK_EQ_INT(store_time_ms(NULL, &ms), -EINVAL);
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        CHECK_EQ_INT(strlen(now), 24);
        CHECK(now[10] == 'T' && now[19] == '.' && now[23] == 'Z');
        CHECK_EQ_INT(store_time_ms(now, &ms), 0);
        CHECK(ms > 1700000000000LL);
}

/* ---- resources ---- */

static void test_resources(store *s) {
        hull_error e = {0};
        json_t *a1 = agent_obj("agent_1", 10, 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_AGENT, a1, &e), 0);
        CHECK_EQ_INT(store_insert(s, STORE_AGENT, a1, &e), -EEXIST);
        json_t *bad = agent_obj("agent_2", 10, 2, false);
        CHECK_EQ_INT(store_insert(s, STORE_AGENT, bad, &e), -EINVAL);
        json_decref(bad);
        bad = json_pack("{s:s}", "id", "agent_3");
        CHECK_EQ_INT(store_insert(s, STORE_AGENT, bad, &e), -EINVAL);
        json_decref(bad);

        /* versions */
        json_t *a3 = agent_obj("agent_1", 10, 3, false);
        e = (hull_error){0};
        CHECK_EQ_INT(store_update(s, STORE_AGENT, a3, &e), -ESTALE);
        TEST_RESULT(strstr(e.msg, "version 1") != NULL, "stale: %s", e.msg);
        json_t *a2 = agent_obj("agent_1", 10, 2, false);
        json_object_set_new(a2, "name", json_string("second"));
        CHECK_EQ_INT(store_update(s, STORE_AGENT, a2, &e), 0);
        CHECK_EQ_INT(store_update(s, STORE_AGENT, a2, &e), -ESTALE); /* 2 again: someone was first */
        json_t *ghost = agent_obj("agent_ghost", 10, 2, false);
        CHECK_EQ_INT(store_update(s, STORE_AGENT, ghost, &e), -ENOENT);
        json_decref(ghost);
        json_t *got = NULL;
        CHECK_EQ_INT(store_get(s, STORE_AGENT, "agent_1", 0, &got, &e), 0);
        CHECK(json_equal(got, a2));
        json_decref(got);
        CHECK_EQ_INT(store_get(s, STORE_AGENT, "agent_1", 1, &got, &e), 0);
        CHECK(json_equal(got, a1));
        json_decref(got);
        CHECK_EQ_INT(store_get(s, STORE_AGENT, "agent_1", 3, &got, &e), -ENOENT);
        CHECK_EQ_INT(store_get(s, STORE_AGENT, "agent_none", 0, &got, &e), -ENOENT);
        json_decref(a1);
        json_decref(a2);
        json_decref(a3);

        /* every version, oldest first, a page at a time */
        store_list_q q = {.limit = 1, .versions_of = "agent_1"};
        store_page p = {0};
        CHECK_EQ_INT(store_list(s, STORE_AGENT, &q, &p, &e), 0);
        CHECK_EQ_INT(json_array_size(p.data), 1);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(p.data, 0), "version")), 1);
        CHECK(p.next_page[0] != 0);
        char next[STORE_CURSOR_MAX];
        memcpy(next, p.next_page, sizeof(next));
        store_page_done(&p);
        q.page = next;
        CHECK_EQ_INT(store_list(s, STORE_AGENT, &q, &p, &e), 0);
        CHECK_EQ_INT(json_array_size(p.data), 1);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(p.data, 0), "version")), 2);
        CHECK_EQ_INT(p.next_page[0], 0);
        store_page_done(&p);
        /* the cursor of agent_1's versions is not one of another agent's */
        json_t *other = agent_obj("agent_other", 11, 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_AGENT, other, &e), 0);
        json_decref(other);
        q.versions_of = "agent_other";
        CHECK_EQ_INT(store_list(s, STORE_AGENT, &q, &p, &e), -EINVAL);
        q = (store_list_q){.versions_of = "agent_none"};
        CHECK_EQ_INT(store_list(s, STORE_AGENT, &q, &p, &e), -ENOENT);
        /* the agents list shows each agent's newest version */
        q = (store_list_q){0};
        CHECK_EQ_INT(store_list(s, STORE_AGENT, &q, &p, &e), 0);
        CHECK_EQ_INT(json_array_size(p.data), 2);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(p.data, 0), "version")), 2);
        store_page_done(&p);
        /* agents are deleted whole */
        CHECK_EQ_INT(store_delete(s, STORE_AGENT, "agent_other", &e), 0);
        CHECK_EQ_INT(store_delete(s, STORE_AGENT, "agent_other", &e), -ENOENT);

        /* environments */
        json_t *env = json_pack("{s:s, s:s, s:n, s:s}", "id", "env_1", "created_at", "2026-01-01T00:00:00Z",
                                "archived_at", "name", "one");
        CHECK_EQ_INT(store_insert(s, STORE_ENVIRONMENT, env, &e), 0);
        json_object_set_new(env, "name", json_string("renamed"));
        CHECK_EQ_INT(store_update(s, STORE_ENVIRONMENT, env, &e), 0);
        CHECK_EQ_INT(store_get(s, STORE_ENVIRONMENT, "env_1", 0, &got, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(got, "name")), "renamed");
        json_decref(got);
        json_object_set_new(env, "id", json_string("env_none"));
        CHECK_EQ_INT(store_update(s, STORE_ENVIRONMENT, env, &e), -ENOENT);
        json_decref(env);
        CHECK_EQ_INT(store_delete(s, STORE_ENVIRONMENT, "env_1", &e), 0);
        CHECK_EQ_INT(store_get(s, STORE_ENVIRONMENT, "env_1", 0, &got, &e), -ENOENT);

        /* a session's delete takes its events and conversation */
        json_t *sess = session_obj("sess_del", 5, "idle", "agent_1", 2, false);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), -EEXIST);
        json_object_set_new(sess, "status", json_string("running"));
        CHECK_EQ_INT(store_update(s, STORE_SESSION, sess, &e), 0);
        json_t *ev = event_obj("sevt_del_1", "user.message", NULL);
        CHECK_EQ_INT(store_events_append(s, "sess_del", &ev, 1, NULL, &e), 0);
        json_t *conv = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi");
        CHECK_EQ_INT(store_conversation_put(s, "sess_del", conv, &e), 0);
        const char *running[] = {"running"};
        json_t *ids = NULL;
        CHECK_EQ_INT(store_sessions_with_status(s, running, 1, &ids, &e), 0);
        CHECK_EQ_INT(json_array_size(ids), 1);
        CHECK_EQ_STR(json_string_value(json_array_get(ids, 0)), "sess_del");
        json_decref(ids);
        CHECK_EQ_INT(store_delete(s, STORE_SESSION, "sess_del", &e), 0);
        CHECK_EQ_INT(store_get(s, STORE_SESSION, "sess_del", 0, &got, &e), -ENOENT);
        int64_t seq = -1;
        CHECK_EQ_INT(store_events_seq_of(s, "sess_del", "sevt_del_1", &seq, &e), -ENOENT);
        CHECK_EQ_INT(store_sessions_with_status(s, running, 1, &ids, &e), 0);
        CHECK_EQ_INT(json_array_size(ids), 0);
        json_decref(ids);
        /* the same id again starts from nothing */
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        CHECK_EQ_INT(store_events_last_seq(s, "sess_del", &seq, &e), 0);
        CHECK_EQ_INT(seq, 0);
        got = (json_t *) 1;
        CHECK_EQ_INT(store_conversation_get(s, "sess_del", &got, &e), 0);
        CHECK(got == NULL);
        /* the event's id is free again */
        CHECK_EQ_INT(store_events_append(s, "sess_del", &ev, 1, NULL, &e), 0);
        CHECK_EQ_INT(store_delete(s, STORE_SESSION, "sess_del", &e), 0);
        json_decref(ev);
        json_decref(conv);
        json_decref(sess);
}

/* ---- lists: a model of the sessions, and every filter walked both ways ---- */

#define N_SESS 47
typedef struct msess {
        char id[16];
        unsigned sec;
        const char *status, *agent;
        int64_t version;
        bool archived;
} msess;
static msess model[N_SESS];

static int msess_cmp(const void *a, const void *b) {
        const msess *x = a, *y = b;
        if (x->sec != y->sec)
                return x->sec < y->sec ? -1 : 1;
        return strcmp(x->id, y->id);
}

static bool msess_match(const msess *m, const store_list_q *q) {
        static char t[STORE_TIME_MAX];
        int64_t ms, b;
        store_time_ms(time_of(m->sec, t), &ms);
        if (m->archived && !q->include_archived)
                return false;
        if (q->created_gt && (store_time_ms(q->created_gt, &b), ms <= b))
                return false;
        if (q->created_gte && (store_time_ms(q->created_gte, &b), ms < b))
                return false;
        if (q->created_lt && (store_time_ms(q->created_lt, &b), ms >= b))
                return false;
        if (q->created_lte && (store_time_ms(q->created_lte, &b), ms > b))
                return false;
        if (q->agent_id && strcmp(q->agent_id, m->agent) != 0)
                return false;
        if (q->agent_version && q->agent_version != m->version)
                return false;
        if (q->n_statuses) {
                bool any = false;
                for (size_t i = 0; i < q->n_statuses; i++)
                        any |= strcmp(q->statuses[i], m->status) == 0;
                if (!any)
                        return false;
        }
        return true;
}

/* Walk forward (then back, for sessions) and compare with the model's answer. */
static void walk_sessions(store *s, const store_list_q *tmpl, const char *label) {
        hull_error e = {0};
        const char *want[N_SESS];
        size_t n_want = 0;
        for (size_t i = 0; i < N_SESS; i++) {
                size_t j = tmpl->descending ? N_SESS - 1 - i : i;
                if (msess_match(&model[j], tmpl))
                        want[n_want++] = model[j].id;
        }
        /* forward */
        store_list_q q = *tmpl;
        char cur[STORE_CURSOR_MAX] = "", last_prev[STORE_CURSOR_MAX] = "";
        const char *got[N_SESS + 1];
        json_t *keep = json_array();
        size_t n_got = 0, pages = 0;
        bool ok = true, first = true;
        for (;;) {
                store_page p = {0};
                q.page = cur[0] ? cur : NULL;
                if (store_list(s, STORE_SESSION, &q, &p, &e) < 0) {
                        TEST_RESULT(false, "%s: list: %s", label, e.msg);
                        json_decref(keep);
                        return;
                }
                pages++;
                ok &= first ? p.prev_page[0] == 0 : p.prev_page[0] != 0;
                ok &= json_array_size(p.data) <= (q.limit ? q.limit : STORE_PAGE_DEFAULT);
                ok &= p.next_page[0] == 0 || json_array_size(p.data) > 0;
                for (size_t i = 0; i < json_array_size(p.data) && n_got <= N_SESS; i++) {
                        json_array_append(keep, json_array_get(p.data, i));
                        got[n_got++] = sid(json_array_get(p.data, i));
                }
                memcpy(last_prev, p.prev_page, sizeof(last_prev));
                memcpy(cur, p.next_page, sizeof(cur));
                for (const char *c = cur; *c; c++)
                        ok &= (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
                              *c == '-' || *c == '_';
                store_page_done(&p);
                first = false;
                if (!cur[0] || pages > N_SESS + 2)
                        break;
        }
        ok &= n_got == n_want;
        for (size_t i = 0; ok && i < n_got; i++)
                ok &= strcmp(got[i], want[i]) == 0;
        TEST_RESULT(ok, "%s: forward: %zu items in %zu pages (want %zu)", label, n_got, pages, n_want);

        /* back from the last page, by prev_page */
        ok = true;
        size_t limit = q.limit ? q.limit : STORE_PAGE_DEFAULT, n_back = n_want == 0 ? 0 : (n_want - 1) % limit + 1;
        memcpy(cur, last_prev, sizeof(cur));
        size_t back_pages = 0;
        while (cur[0]) {
                store_page p = {0};
                q.page = cur;
                if (store_list(s, STORE_SESSION, &q, &p, &e) < 0) {
                        TEST_RESULT(false, "%s: list back: %s", label, e.msg);
                        break;
                }
                size_t m = json_array_size(p.data);
                ok &= m == limit && p.next_page[0] != 0 && n_back + m <= n_want;
                /* the page is the want[] slice just before what was seen */
                for (size_t i = 0; ok && i < m; i++)
                        ok &= strcmp(sid(json_array_get(p.data, i)), want[n_want - n_back - m + i]) == 0;
                n_back += m;
                memcpy(cur, p.prev_page, sizeof(cur));
                store_page_done(&p);
                if (++back_pages > N_SESS + 2)
                        break;
        }
        ok &= n_back == n_want;
        TEST_RESULT(ok, "%s: back: %zu items", label, n_back);
        json_decref(keep);
}

static void test_lists(store *s) {
        hull_error e = {0};
        static const char *statuses[] = {"idle", "running", "terminated", "rescheduling"};
        /* inserted out of order; several share a created_at (ordered then by id) */
        for (size_t i = 0; i < N_SESS; i++) {
                size_t k = (i * 17) % N_SESS;
                msess *m = &model[k];
                snprintf(m->id, sizeof(m->id), "sess_%02zu", (k * 7) % N_SESS);
                m->sec = (unsigned) (k / 3);
                m->status = statuses[k % 4];
                m->agent = k % 3 ? "agent_a" : "agent_b";
                m->version = (int64_t) (k % 2) + 1;
                m->archived = k % 5 == 4;
                json_t *o = session_obj(m->id, m->sec, m->status, m->agent, m->version, m->archived);
                CHECK_EQ_INT(store_insert(s, STORE_SESSION, o, &e), 0);
                json_decref(o);
        }
        qsort(model, N_SESS, sizeof(model[0]), msess_cmp);

        char t1[STORE_TIME_MAX], t2[STORE_TIME_MAX];
        time_of(4, t1);
        time_of(11, t2);
        const char *idle_running[] = {"idle", "running"}, *terminated[] = {"terminated"};
        const struct {
                const char *label;
                store_list_q q;
        } cases[] = {
                {"default", {0}},
                {"limit 1", {.limit = 1}},
                {"limit 3 desc", {.limit = 3, .descending = true}},
                {"limit 7 archived", {.limit = 7, .include_archived = true}},
                {"limit 4 archived desc", {.limit = 4, .include_archived = true, .descending = true}},
                {"limit 1000", {.limit = 1000, .include_archived = true}},
                {"gt", {.limit = 3, .created_gt = t1}},
                {"gte", {.limit = 3, .created_gte = t1}},
                {"lt", {.limit = 2, .created_lt = t2, .descending = true}},
                {"lte", {.limit = 2, .created_lte = t2}},
                {"gte lte", {.limit = 4, .created_gte = t1, .created_lte = t2, .include_archived = true}},
                {"agent", {.limit = 3, .agent_id = "agent_a"}},
                {"agent version", {.limit = 2, .agent_id = "agent_b", .agent_version = 2, .include_archived = true}},
                {"version only", {.limit = 5, .agent_version = 1, .descending = true}},
                {"statuses", {.limit = 3, .statuses = idle_running, .n_statuses = 2}},
                {"one status desc", {.limit = 2, .statuses = terminated, .n_statuses = 1, .descending = true}},
                {"everything",
                 {.limit = 2,
                  .agent_id = "agent_a",
                  .statuses = idle_running,
                  .n_statuses = 2,
                  .created_gt = t1,
                  .include_archived = true,
                  .descending = true}},
                {"none", {.agent_id = "agent_none"}},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                walk_sessions(s, &cases[i].q, cases[i].label);

        /* a cursor is refused by another query, another kind, and when it is not one */
        store_list_q q = {.limit = 2, .statuses = idle_running, .n_statuses = 2};
        store_page p = {0};
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &q, &p, &e), 0);
        char cur[STORE_CURSOR_MAX];
        memcpy(cur, p.next_page, sizeof(cur));
        CHECK(cur[0] != 0);
        store_page_done(&p);
        q.page = cur;
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &q, &p, &e), 0);
        store_page_done(&p);
        store_list_q other = {.limit = 2, .page = cur};
        e = (hull_error){0};
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &other, &p, &e), -EINVAL);
        TEST_RESULT(strstr(e.msg, "not a cursor of this session list") != NULL, "other query: %s", e.msg);
        other = (store_list_q){.limit = 2, .page = cur, .statuses = idle_running, .n_statuses = 2, .descending = true};
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &other, &p, &e), -EINVAL);
        other = (store_list_q){.limit = 2, .page = cur, .statuses = terminated, .n_statuses = 1};
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &other, &p, &e), -EINVAL);
        other = (store_list_q){.page = cur};
        CHECK_EQ_INT(store_list(s, STORE_ENVIRONMENT, &other, &p, &e), -EINVAL);
        CHECK_EQ_INT(store_list(s, STORE_AGENT, &other, &p, &e), -EINVAL);
        store_events_q eq = {.page = cur};
        CHECK_EQ_INT(store_events_list(s, model[0].id, &eq, &p, NULL, &e), -EINVAL);
        other = (store_list_q){.page = "not+a/cursor"};
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &other, &p, &e), -EINVAL);
        other = (store_list_q){.page = "AAAA"};
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &other, &p, &e), -EINVAL);
        other = (store_list_q){.limit = STORE_PAGE_MAX + 1};
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &other, &p, &e), -EINVAL);
        other = (store_list_q){.created_gt = "yesterday"};
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &other, &p, &e), -EINVAL);

        /* environments have next_page only */
        for (unsigned i = 0; i < 5; i++) {
                char id[16], t[STORE_TIME_MAX];
                snprintf(id, sizeof(id), "env_%u", i);
                json_t *o = json_pack("{s:s, s:s, s:n}", "id", id, "created_at", time_of(100 - i, t), "archived_at");
                CHECK_EQ_INT(store_insert(s, STORE_ENVIRONMENT, o, &e), 0);
                json_decref(o);
        }
        q = (store_list_q){.limit = 2};
        char order[64] = "";
        cur[0] = 0;
        for (unsigned i = 0; i < 5; i++) {
                q.page = cur[0] ? cur : NULL;
                if (store_list(s, STORE_ENVIRONMENT, &q, &p, &e) < 0)
                        break;
                CHECK_EQ_INT(p.prev_page[0], 0);
                for (size_t j = 0; j < json_array_size(p.data); j++)
                        strncat(order, sid(json_array_get(p.data, j)) + 4, sizeof(order) - strlen(order) - 1);
                memcpy(cur, p.next_page, sizeof(cur));
                store_page_done(&p);
                if (!cur[0])
                        break;
        }
        CHECK_EQ_STR(order, "43210");
}

/* ---- events ---- */

/* sess_ev's five events appended in two batches; a taken id, no id, an unknown session. */
static void events_append(store *s, json_t *evs[static 5]) {
        hull_error e = {0};
        json_t *sess = session_obj("sess_ev", 1, "idle", "agent_1", 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        json_decref(sess);
        int64_t first = 0, seq = 0;
        CHECK_EQ_INT(store_events_last_seq(s, "sess_ev", &seq, &e), 0);
        CHECK_EQ_INT(seq, 0);
        CHECK_EQ_INT(store_events_append(s, "sess_ev", evs, 3, &first, &e), 0);
        CHECK_EQ_INT(first, 1);
        CHECK_EQ_INT(store_events_append(s, "sess_ev", evs + 3, 2, &first, &e), 0);
        CHECK_EQ_INT(first, 4);
        CHECK_EQ_INT(store_events_last_seq(s, "sess_ev", &seq, &e), 0);
        CHECK_EQ_INT(seq, 5);
        CHECK_EQ_INT(store_events_seq_of(s, "sess_ev", "sevt_4", &seq, &e), 0);
        CHECK_EQ_INT(seq, 4);
        CHECK_EQ_INT(store_events_seq_of(s, "sess_ev", "sevt_9", &seq, &e), -ENOENT);

        /* a taken id: nothing of the batch is written */
        json_t *dup[2] = {event_obj("sevt_6", "user.message", NULL), event_obj("sevt_2", "user.message", NULL)};
        e = (hull_error){0};
        CHECK_EQ_INT(store_events_append(s, "sess_ev", dup, 2, &first, &e), -EEXIST);
        TEST_RESULT(strstr(e.msg, "sevt_2") != NULL, "duplicate: %s", e.msg);
        CHECK_EQ_INT(store_events_last_seq(s, "sess_ev", &seq, &e), 0);
        CHECK_EQ_INT(seq, 5);
        CHECK_EQ_INT(store_events_seq_of(s, "sess_ev", "sevt_6", &seq, &e), -ENOENT);
        json_t *twice[2] = {dup[0], dup[0]};
        CHECK_EQ_INT(store_events_append(s, "sess_ev", twice, 2, &first, &e), -EEXIST);
        json_decref(dup[0]);
        json_decref(dup[1]);
        json_t *noid = json_pack("{s:s}", "type", "user.message");
        CHECK_EQ_INT(store_events_append(s, "sess_ev", &noid, 1, &first, &e), -EINVAL);
        json_decref(noid);

        /* an unknown session */
        CHECK_EQ_INT(store_events_append(s, "sess_none", evs, 1, &first, &e), -ENOENT);
        CHECK_EQ_INT(store_events_last_seq(s, "sess_none", &seq, &e), -ENOENT);
        store_events_q q = {0};
        store_page p = {0};
        CHECK_EQ_INT(store_events_list(s, "sess_none", &q, &p, NULL, &e), -ENOENT);
        json_t *conv = json_array();
        CHECK_EQ_INT(store_conversation_put(s, "sess_none", conv, &e), -ENOENT);
        json_decref(conv);
}

/* sess_ev's events listed: all, every filter a page at a time, cursors of another query refused. */
static void events_list(store *s, json_t *evs[static 5]) {
        hull_error e = {0};
        store_events_q q = {0};
        store_page p = {0};

        /* all, in order, with their seqs */
        int64_t *seqs = NULL;
        CHECK_EQ_INT(store_events_list(s, "sess_ev", &q, &p, &seqs, &e), 0);
        CHECK_EQ_INT(json_array_size(p.data), 5);
        bool ok = true;
        for (size_t i = 0; i < 5; i++)
                ok &= seqs[i] == (int64_t) i + 1 && json_equal(json_array_get(p.data, i), evs[i]);
        CHECK(ok);
        CHECK_EQ_INT(p.next_page[0], 0);
        CHECK_EQ_INT(p.prev_page[0], 0);
        free(seqs);
        store_page_done(&p);

        /* filters */
        const struct {
                store_events_q q;
                const char *want;
        } cases[] = {
                {{.after_seq = 2}, "345"},
                {{.descending = true}, "54321"},
                {{.types = (const char *[]){"agent.message"}, .n_types = 1}, "34"},
                {{.types = (const char *[]){"agent.message", "user.message"}, .n_types = 2, .descending = true}, "431"},
                {{.created_gte = "2026-01-01T00:00:02Z"}, "245"},
                {{.created_gt = "2026-01-01T00:00:02Z", .created_lt = "2026-01-01T00:00:05Z"}, "4"},
                {{.created_lte = "2026-01-01T00:00:02.000+00:00"}, "12"},
                {{.after_seq = 1, .types = (const char *[]){"agent.message", "session.status_idle"}, .n_types = 2},
                 "345"},
        };
        for (size_t c = 0; c < ELEMENTSOF(cases); c++)
                for (unsigned limit = 1; limit <= 3; limit += 2) {
                        store_events_q eq = cases[c].q;
                        eq.limit = limit;
                        char got[16] = "", cur[STORE_CURSOR_MAX] = "";
                        ok = true;
                        for (unsigned pg = 0; pg < 8; pg++) {
                                eq.page = cur[0] ? cur : NULL;
                                seqs = NULL;
                                if (store_events_list(s, "sess_ev", &eq, &p, &seqs, &e) < 0) {
                                        ok = false;
                                        break;
                                }
                                for (size_t i = 0; i < json_array_size(p.data); i++) {
                                        const char *id = sid(json_array_get(p.data, i));
                                        size_t n = strlen(got);
                                        ok &= n + 1 < sizeof(got) && seqs[i] == id[5] - '0';
                                        if (n + 1 < sizeof(got))
                                                got[n] = id[5], got[n + 1] = 0;
                                }
                                ok &= json_array_size(p.data) <= limit && p.prev_page[0] == 0;
                                free(seqs);
                                memcpy(cur, p.next_page, sizeof(cur));
                                store_page_done(&p);
                                if (!cur[0])
                                        break;
                        }
                        TEST_RESULT(ok && strcmp(got, cases[c].want) == 0, "events case %zu limit %u: %s (want %s)", c,
                                    limit, got, cases[c].want);
                }
        /* an events cursor of another filter is refused */
        store_events_q eq = {.limit = 1};
        CHECK_EQ_INT(store_events_list(s, "sess_ev", &eq, &p, NULL, &e), 0);
        char cur[STORE_CURSOR_MAX];
        memcpy(cur, p.next_page, sizeof(cur));
        store_page_done(&p);
        eq = (store_events_q){.limit = 1, .page = cur, .after_seq = 1};
        CHECK_EQ_INT(store_events_list(s, "sess_ev", &eq, &p, NULL, &e), -EINVAL);
        eq = (store_events_q){.limit = 1, .page = cur, .descending = true};
        CHECK_EQ_INT(store_events_list(s, "sess_ev", &eq, &p, NULL, &e), -EINVAL);
        store_list_q lq = {.page = cur};
        CHECK_EQ_INT(store_list(s, STORE_SESSION, &lq, &p, &e), -EINVAL);
        eq = (store_events_q){.limit = STORE_EVENTS_PAGE_MAX + 1};
        CHECK_EQ_INT(store_events_list(s, "sess_ev", &eq, &p, NULL, &e), -EINVAL);
}

/* An event of sess_ev processed later, and sess_ev's conversation. */
static void events_later(store *s) {
        hull_error e = {0};
        store_page p = {0};
        int64_t *seqs = NULL;

        /* a queued event processed later: its body and the created_* filters see the time */
        e = (hull_error){0};
        CHECK_EQ_INT(store_events_set_processed(s, "sess_ev", "sevt_3", "2026-01-01T00:00:03.500Z", &e), 0);
        CHECK_EQ_INT(store_events_set_processed(s, "sess_ev", "sevt_9", "2026-01-01T00:00:03Z", &e), -ENOENT);
        CHECK_EQ_INT(store_events_set_processed(s, "sess_none", "sevt_3", "2026-01-01T00:00:03Z", &e), -ENOENT);
        CHECK_EQ_INT(store_events_set_processed(s, "sess_ev", "sevt_3", "soon", &e), -EINVAL);
        store_events_q eq = {.created_gt = "2026-01-01T00:00:03Z", .created_lt = "2026-01-01T00:00:04Z"};
        seqs = NULL;
        CHECK_EQ_INT(store_events_list(s, "sess_ev", &eq, &p, &seqs, &e), 0);
        CHECK_EQ_INT(json_array_size(p.data), 1);
        if (json_array_size(p.data) == 1) {
                json_t *ev3 = json_array_get(p.data, 0);
                CHECK_EQ_INT(seqs[0], 3);
                CHECK_EQ_STR(json_string_value(json_object_get(ev3, "processed_at")), "2026-01-01T00:00:03.500Z");
                CHECK_EQ_STR(json_string_value(json_object_get(ev3, "type")), "agent.message");
                /* the keys keep their order */
                CHECK_EQ_STR(json_object_iter_key(json_object_iter(ev3)), "id");
        }
        free(seqs);
        store_page_done(&p);

        /* the conversation */
        json_t *got = (json_t *) 1;
        CHECK_EQ_INT(store_conversation_get(s, "sess_ev", &got, &e), 0);
        CHECK(got == NULL);
        json_t *conv = json_pack("[{s:s, s:s}]", "role", "user", "content", "hello");
        CHECK_EQ_INT(store_conversation_put(s, "sess_ev", conv, &e), 0);
        json_array_append_new(conv, json_pack("{s:s, s:s}", "role", "assistant", "content", "hi"));
        CHECK_EQ_INT(store_conversation_put(s, "sess_ev", conv, &e), 0);
        CHECK_EQ_INT(store_conversation_get(s, "sess_ev", &got, &e), 0);
        CHECK(got && json_equal(got, conv));
        json_decref(got);
        json_decref(conv);
}

static void test_events(store *s) {
        json_t *evs[5] = {
                event_obj("sevt_1", "user.message", "2026-01-01T00:00:01Z"),
                event_obj("sevt_2", "session.status_running", "2026-01-01T00:00:02Z"),
                event_obj("sevt_3", "agent.message", NULL),
                event_obj("sevt_4", "agent.message", "2026-01-01T00:00:04Z"),
                event_obj("sevt_5", "session.status_idle", "2026-01-01T00:00:05Z"),
        };
        events_append(s, evs);
        events_list(s, evs);
        events_later(s);
        for (size_t i = 0; i < 5; i++)
                json_decref(evs[i]);
}

/* ---- keys ---- */

static store_key key_of(const char *id, const char *name, char digit, const char *created) {
        store_key k = {0};
        snprintf(k.id, sizeof(k.id), "%s", id);
        snprintf(k.name, sizeof(k.name), "%s", name);
        memset(k.digest_hex, digit, 64);
        snprintf(k.created_at, sizeof(k.created_at), "%s", created);
        snprintf(k.hint, sizeof(k.hint), "hull_%c%c%c", digit, digit, digit);
        return k;
}

static void test_keys(store *s) {
        hull_error e = {0};
        size_t n = 9;
        CHECK_EQ_INT(store_key_count(s, &n, &e), 0);
        CHECK_EQ_INT(n, 0);
        store_key k1 = key_of("key_1", "ci", 'a', "2026-01-01T00:00:02.000Z");
        store_key k2 = key_of("key_2", "", 'b', "2026-01-01T00:00:01.000Z");
        CHECK_EQ_INT(store_key_add(s, &k1, &e), 0);
        CHECK_EQ_INT(store_key_add(s, &k2, &e), 0);
        store_key k3 = key_of("key_3", "dup", 'a', "2026-01-01T00:00:03.000Z");
        CHECK_EQ_INT(store_key_add(s, &k3, &e), -EEXIST);
        k3.digest_hex[3] = 'G';
        CHECK_EQ_INT(store_key_add(s, &k3, &e), -EINVAL);
        CHECK_EQ_INT(store_key_count(s, &n, &e), 0);
        CHECK_EQ_INT(n, 2);
        store_key found = {0};
        CHECK_EQ_INT(store_key_find(s, k1.digest_hex, &found, &e), 1);
        CHECK_EQ_STR(found.id, "key_1");
        CHECK_EQ_STR(found.name, "ci");
        CHECK_EQ_STR(found.hint, "hull_aaa");
        CHECK_EQ_STR(found.created_at, k1.created_at);
        char none[65];
        memset(none, 'c', 64);
        none[64] = 0;
        CHECK_EQ_INT(store_key_find(s, none, &found, &e), 0);
        store_key *list = NULL;
        CHECK_EQ_INT(store_key_list(s, &list, &n, &e), 0);
        CHECK_EQ_INT(n, 2);
        if (n == 2) {
                CHECK_EQ_STR(list[0].id, "key_2"); /* oldest first */
                CHECK_EQ_STR(list[1].id, "key_1");
                CHECK_EQ_STR(list[1].digest_hex, k1.digest_hex);
        }
        free(list);
        CHECK_EQ_INT(store_key_delete(s, "key_1", &e), 0);
        CHECK_EQ_INT(store_key_delete(s, "key_1", &e), -ENOENT);
        CHECK_EQ_INT(store_key_find(s, k1.digest_hex, NULL, &e), 0);
        CHECK_EQ_INT(store_key_count(s, &n, &e), 0);
        CHECK_EQ_INT(n, 1);

        /* A key another connection adds (`hull key create` beside a running daemon) counts at
         * the very next call, as does one it deletes: no window where the daemon is still open. */
        _cleanup_store_ store *other = NULL;
        CHECK_EQ_INT(store_open(url, &other, &e), 0);
        store_key k4 = key_of("key_4", "other", 'd', "2026-01-01T00:00:04.000Z");
        CHECK_EQ_INT(store_key_count(s, &n, &e), 0);
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(store_key_add(other, &k4, &e), 0);
        CHECK_EQ_INT(store_key_count(s, &n, &e), 0);
        CHECK_EQ_INT(n, 2);
        CHECK_EQ_INT(store_key_delete(other, "key_4", &e), 0);
        CHECK_EQ_INT(store_key_delete(other, "key_2", &e), 0);
        CHECK_EQ_INT(store_key_count(s, &n, &e), 0);
        CHECK_EQ_INT(n, 0);
        CHECK_EQ_INT(store_key_add(s, &k2, &e), 0);
        CHECK_EQ_INT(store_key_count(s, &n, &e), 0);
        CHECK_EQ_INT(n, 1);
}

/* ---- durability: a child that appends and dies without closing ---- */

static void append_in_child(unsigned from, unsigned n, bool kill_it) {
        int pfd[2];
        if (pipe(pfd) < 0)
                return;
        pid_t pid = fork();
        if (pid == 0) {
                close(pfd[0]);
                store *s = NULL;
                if (store_open(url, &s, NULL) < 0)
                        _exit(2);
                for (unsigned i = 0; i < n; i++) {
                        char id[32];
                        snprintf(id, sizeof(id), "sevt_dur_%u", from + i);
                        json_t *ev = event_obj(id, "user.message", NULL);
                        if (store_events_append(s, "sess_dur", &ev, 1, NULL, NULL) < 0)
                                _exit(3);
                        json_decref(ev);
                }
                if (write(pfd[1], "x", 1) != 1)
                        _exit(4);
                if (kill_it)
                        for (;;)
                                pause();
                _exit(0); /* no store_close */
        }
        close(pfd[1]);
        char c;
        CHECK_EQ_INT(read(pfd[0], &c, 1), 1);
        close(pfd[0]);
        if (kill_it)
                kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        if (kill_it)
                CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        else
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_durability(void) {
        hull_error e = {0};
        store *s = open_or_die();
        json_t *sess = session_obj("sess_dur", 1, "idle", "agent_1", 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        json_decref(sess);
        store_close(s);

        append_in_child(1, 10, false);
        s = open_or_die();
        int64_t seq = 0;
        CHECK_EQ_INT(store_events_last_seq(s, "sess_dur", &seq, &e), 0);
        CHECK_EQ_INT(seq, 10);
        store_close(s);

        append_in_child(11, 5, true);
        s = open_or_die();
        CHECK_EQ_INT(store_events_last_seq(s, "sess_dur", &seq, &e), 0);
        CHECK_EQ_INT(seq, 15);
        CHECK_EQ_INT(store_events_seq_of(s, "sess_dur", "sevt_dur_15", &seq, &e), 0);
        CHECK_EQ_INT(seq, 15);
        store_close(s);
}

/* ---- threads ---- */

#define THREADS 4
#define PER_THREAD 50

typedef struct worker {
        store *s;
        unsigned n;
        int failed;
} worker;

static void *append_many(void *arg) {
        worker *w = arg;
        for (unsigned i = 0; i < PER_THREAD; i++) {
                char id[32];
                snprintf(id, sizeof(id), "sevt_t%u_%u", w->n, i);
                json_t *ev = event_obj(id, "user.message", NULL);
                hull_error e = {0};
                if (store_events_append(w->s, "sess_thr", &ev, 1, NULL, &e) < 0)
                        w->failed++;
                json_decref(ev);
        }
        return NULL;
}

static void test_threads(store *s) {
        hull_error e = {0};
        json_t *sess = session_obj("sess_thr", 1, "idle", "agent_1", 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        json_decref(sess);
        pthread_t t[THREADS];
        worker w[THREADS];
        for (unsigned i = 0; i < THREADS; i++) {
                w[i] = (worker){.s = s, .n = i};
                CHECK_EQ_INT(pthread_create(&t[i], NULL, append_many, &w[i]), 0);
        }
        int failed = 0;
        for (unsigned i = 0; i < THREADS; i++) {
                pthread_join(t[i], NULL);
                failed += w[i].failed;
        }
        CHECK_EQ_INT(failed, 0);
        store_events_q q = {.limit = STORE_EVENTS_PAGE_MAX};
        store_page p = {0};
        int64_t *seqs = NULL;
        CHECK_EQ_INT(store_events_list(s, "sess_thr", &q, &p, &seqs, &e), 0);
        size_t n = json_array_size(p.data);
        CHECK_EQ_INT(n, THREADS * PER_THREAD);
        bool gapless = true;
        for (size_t i = 0; i < n; i++)
                gapless &= seqs[i] == (int64_t) i + 1;
        CHECK(gapless);
        free(seqs);
        store_page_done(&p);
}

/* ---- a memory budget the caller left open does not apply to hull.db ---- */

static void test_budget(store *s) {
        hull_error e = {0};
        json_t *sess = session_obj("sess_big", 1, "idle", "agent_1", 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        json_decref(sess);
        size_t big = 4U << 20;
        char *text = malloc(big + 1);
        memset(text, 'x', big);
        text[big] = 0;
        json_t *ev = event_obj("sevt_big", "agent.message", NULL);
        json_object_set_new(ev, "text", json_string(text));
        free(text);
        sqlmem_scope m = {0};
        CHECK_EQ_INT(sqlmem_begin(&m, 64 << 10), 0);
        e = (hull_error){0};
        int r = store_events_append(s, "sess_big", &ev, 1, NULL, &e);
        TEST_RESULT(r == 0, "a 4 MiB event inside a 64 KiB budget: %d %s", r, e.msg);
        json_t *got = NULL;
        store_events_q q = {0};
        store_page p = {0};
        CHECK_EQ_INT(store_events_list(s, "sess_big", &q, &p, NULL, &e), 0);
        CHECK(json_equal(json_array_get(p.data, 0), ev));
        store_page_done(&p);
        CHECK(!sqlmem_refused(&m));
        sqlmem_end(&m);
        json_decref(got);
        json_decref(ev);
}

static void test_sandboxes_and_agui(store *s) {
        hull_error e = {0};
        json_auto_t *sess = session_obj("sess_box", 1, "idle", "agent_x", 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        char fp1[65], fp2[65];
        memset(fp1, 'a', 64);
        fp1[64] = '\0';
        memset(fp2, '1', 64);
        fp2[64] = '\0';
        json_t *boxes = NULL;
        CHECK_EQ_INT(store_sandbox_list(s, "sess_box", &boxes, &e), 0);
        CHECK_EQ_INT(json_array_size(boxes), 0);
        json_decref(boxes);
        CHECK_EQ_INT(store_sandbox_add(s, "sess_box", fp2, "2026-01-01T00:00:01.000Z", &e), 0);
        CHECK_EQ_INT(store_sandbox_add(s, "sess_box", fp1, "2026-01-01T00:00:02.000Z", &e), 0);
        CHECK_EQ_INT(store_sandbox_add(s, "sess_box", fp1, "2026-01-01T00:00:03.000Z", &e), 0); /* again: no error */
        CHECK_EQ_INT(store_sandbox_add(s, "sess_none", fp1, "2026-01-01T00:00:02.000Z", &e), -ENOENT);
        CHECK_EQ_INT(store_sandbox_add(s, "sess_box", "ABC", "2026-01-01T00:00:02.000Z", &e), -EINVAL);
        CHECK_EQ_INT(store_sandbox_add(s, "sess_box", fp1, "yesterday", &e), -EINVAL);
        CHECK_EQ_INT(store_sandbox_list(s, "sess_box", &boxes, &e), 0);
        CHECK_EQ_INT(json_array_size(boxes), 2); /* in the order opened */
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(boxes, 0), "fingerprint")), fp2);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(boxes, 1), "opened_at")),
                     "2026-01-01T00:00:02.000Z");
        json_decref(boxes);
        CHECK_EQ_INT(store_sandbox_list(s, "sess_none", &boxes, &e), -ENOENT);

        char sid[STORE_ID_MAX] = "";
        CHECK_EQ_INT(store_thread_get(s, "thread-1", sid, &e), -ENOENT);
        CHECK_EQ_INT(store_thread_put(s, "thread-1", "sess_box", &e), 0);
        CHECK_EQ_INT(store_thread_put(s, "thread-1", "sess_box", &e), -EEXIST);
        CHECK_EQ_INT(store_thread_put(s, "thread-2", "sess_none", &e), -ENOENT);
        CHECK_EQ_INT(store_thread_put(s, "", "sess_box", &e), -EINVAL);
        CHECK_EQ_INT(store_thread_get(s, "thread-1", sid, &e), 0);
        CHECK_EQ_STR(sid, "sess_box");
        /* deleted with the session */
        CHECK_EQ_INT(store_delete(s, STORE_SESSION, "sess_box", &e), 0);
        CHECK_EQ_INT(store_thread_get(s, "thread-1", sid, &e), -ENOENT);
        CHECK_EQ_INT(store_sandbox_list(s, "sess_box", &boxes, &e), -ENOENT);
}

/* hull env's named environments: a new spec is a new version, the same spec none, rm removes all. */
static void test_env_specs(store *s) {
        hull_error e = {0};
        json_t *o = NULL, *a = NULL;
        json_t *spec1 = json_pack("{s:{s:[s]}}", "packages", "apt", "jq");
        json_t *spec2 = json_pack("{s:{s:[s,s]}}", "packages", "apt", "jq", "hello");
        CHECK_EQ_INT(store_env_get(s, "data", 0, &o, &e), -ENOENT);
        CHECK_EQ_INT(store_env_put(s, "data", spec1, "d1", &o, &e), 0);
        CHECK(json_integer_value(json_object_get(o, "version")) == 1);
        json_decref(o);
        CHECK_EQ_INT(store_env_put(s, "data", spec1, "d1", &o, &e), 0);
        TEST_RESULT(json_integer_value(json_object_get(o, "version")) == 1, "the same spec is no new version");
        json_decref(o);
        CHECK_EQ_INT(store_env_put(s, "data", spec2, "d2", &o, &e), 0);
        CHECK(json_integer_value(json_object_get(o, "version")) == 2);
        json_decref(o);
        CHECK_EQ_INT(store_env_put(s, "other", spec1, "d1", &o, &e), 0);
        json_decref(o);
        CHECK_EQ_INT(store_env_get(s, "data", 0, &o, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(o, "digest")), "d2");
        json_decref(o);
        CHECK_EQ_INT(store_env_get(s, "data", 1, &o, &e), 0);
        CHECK(json_equal(json_object_get(o, "spec"), spec1));
        json_decref(o);
        CHECK_EQ_INT(store_env_list(s, false, &a, &e), 0);
        CHECK(json_array_size(a) == 2);
        json_decref(a);
        CHECK_EQ_INT(store_env_list(s, true, &a, &e), 0);
        CHECK(json_array_size(a) == 3);
        json_decref(a);
        CHECK_EQ_INT(store_env_delete(s, "data", &e), 0);
        CHECK_EQ_INT(store_env_delete(s, "data", &e), -ENOENT);
        CHECK_EQ_INT(store_env_get(s, "data", 1, &o, &e), -ENOENT);
        json_decref(spec1);
        json_decref(spec2);
}

/* ---- appenders on their own connections: threads, and two processes ---- */

#define APPENDERS 4
#define APPENDS 40

static void *append_own(void *arg) {
        worker *w = arg;
        store *s = NULL;
        hull_error e = {0};
        if (store_open(url, &s, &e) < 0) {
                w->failed = APPENDS;
                return NULL;
        }
        for (unsigned i = 0; i < APPENDS; i++) {
                /* batches of one to three events */
                json_t *ev[3];
                unsigned n = 1 + (i + w->n) % 3;
                for (unsigned j = 0; j < n; j++) {
                        char id[48];
                        snprintf(id, sizeof(id), "sevt_own%u_%u_%u", w->n, i, j);
                        ev[j] = event_obj(id, "user.message", NULL);
                }
                if (store_events_append(s, "sess_own", ev, n, NULL, &e) < 0) {
                        printf("# appender %u: %s\n", w->n, e.msg);
                        w->failed++;
                }
                for (unsigned j = 0; j < n; j++)
                        json_decref(ev[j]);
        }
        store_close(s);
        return NULL;
}

/* Every seq of sess_own once, 1..N, and N the events appended. */
static void check_own_seqs(store *s, size_t want) {
        hull_error e = {0};
        size_t n = 0;
        bool gapless = true;
        int64_t after = 0;
        for (;;) {
                store_events_q q = {.limit = STORE_EVENTS_PAGE_MAX, .after_seq = after};
                store_page p = {0};
                int64_t *seqs = NULL;
                if (store_events_list(s, "sess_own", &q, &p, &seqs, &e) < 0)
                        break;
                size_t m = json_array_size(p.data);
                for (size_t i = 0; i < m; i++)
                        gapless &= seqs[i] == (int64_t) (n + i) + 1;
                n += m;
                after = m ? seqs[m - 1] : after;
                free(seqs);
                store_page_done(&p);
                if (m < STORE_EVENTS_PAGE_MAX)
                        break;
        }
        TEST_RESULT(n == want && gapless, "%zu events of %zu appended concurrently, seqs 1..N: %s", n, want,
                    gapless ? "yes" : "no");
        int64_t last = 0;
        CHECK_EQ_INT(store_events_last_seq(s, "sess_own", &last, &e), 0);
        CHECK_EQ_INT(last, (int64_t) want);
        json_auto_t *problems = NULL;
        CHECK_EQ_INT(store_check(s, &problems, &e), 0);
        TEST_RESULT(json_array_size(problems) == 0, "store_check finds no problem after concurrent appends");
}

static void test_appenders(store *s) {
        hull_error e = {0};
        json_t *sess = session_obj("sess_own", 1, "idle", "agent_1", 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        json_decref(sess);
        size_t want = 0;
        for (unsigned w = 0; w < APPENDERS + 2; w++)
                for (unsigned i = 0; i < APPENDS; i++)
                        want += 1 + (i + w) % 3;
        pid_t pid[2];
        for (unsigned c = 0; c < 2; c++) {
                pid[c] = fork();
                if (pid[c] == 0) {
                        worker w = {.n = APPENDERS + c};
                        append_own(&w);
                        _exit(w.failed ? 1 : 0);
                }
        }
        pthread_t t[APPENDERS];
        worker w[APPENDERS];
        for (unsigned i = 0; i < APPENDERS; i++) {
                w[i] = (worker){.n = i};
                CHECK_EQ_INT(pthread_create(&t[i], NULL, append_own, &w[i]), 0);
        }
        int failed = 0;
        for (unsigned i = 0; i < APPENDERS; i++) {
                pthread_join(t[i], NULL);
                failed += w[i].failed;
        }
        for (unsigned c = 0; c < 2; c++) {
                int status = 0;
                waitpid(pid[c], &status, 0);
                failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        CHECK_EQ_INT(failed, 0);
        check_own_seqs(s, want);
}

/* ---- hull db copy: every row of from into an empty to, then from is no longer empty ---- */

static void test_copy(const char *from_url, const char *to_url) {
        printf("# copy %s to %s\n", from_url, to_url);
        hull_error e = {0};
        _cleanup_store_ store *from = NULL;
        _cleanup_store_ store *to = NULL;
        CHECK_EQ_INT(store_open(from_url, &from, &e), 0);
        CHECK_EQ_INT(store_open(to_url, &to, &e), 0);
        if (!from || !to)
                return;
        CHECK_EQ_INT(store_is_empty(from, &e), 0);
        int r = store_copy(from, from, NULL, NULL, &e);
        TEST_RESULT(r == -ENOTEMPTY, "a copy into a store that is not empty is refused: %d %s", r, e.msg);
        CHECK_EQ_INT(store_is_empty(to, &e), 1);
        r = store_copy(from, to, NULL, NULL, &e);
        TEST_RESULT(r == 0, "copied: %d %s", r, e.msg);
        json_auto_t *problems = NULL;
        CHECK_EQ_INT(store_check(to, &problems, &e), 0);
        TEST_RESULT(json_array_size(problems) == 0, "the copy passes store_check");
        /* the events with their seqs, the next seq after them, keys, versions, envs, threads */
        int64_t a = -1, b = -2;
        CHECK(store_events_last_seq(from, "sess_own", &a, &e) == 0 &&
              store_events_last_seq(to, "sess_own", &b, &e) == 0 && a == b);
        CHECK(store_events_last_seq(from, "sess_ev", &a, &e) == 0 &&
              store_events_last_seq(to, "sess_ev", &b, &e) == 0 && a == b);
        json_t *ev = event_obj("sevt_after_copy", "user.message", NULL);
        int64_t first = 0;
        CHECK_EQ_INT(store_events_append(to, "sess_ev", &ev, 1, &first, &e), 0);
        CHECK_EQ_INT(first, a + 1);
        json_decref(ev);
        size_t ka = 0, kb = 1;
        CHECK(store_key_count(from, &ka, &e) == 0 && store_key_count(to, &kb, &e) == 0 && ka == kb);
        json_auto_t *x = NULL;
        json_auto_t *y = NULL;
        CHECK_EQ_INT(store_env_list(from, true, &x, &e), 0);
        CHECK_EQ_INT(store_env_list(to, true, &y, &e), 0);
        CHECK(x && y && json_equal(x, y));
        store_list_q q = {.limit = STORE_PAGE_MAX, .include_archived = true};
        store_page p1 = {0}, p2 = {0};
        CHECK_EQ_INT(store_list(from, STORE_SESSION, &q, &p1, &e), 0);
        CHECK_EQ_INT(store_list(to, STORE_SESSION, &q, &p2, &e), 0);
        TEST_RESULT(json_equal(p1.data, p2.data), "the copy lists the same sessions in the same order");
        store_page_done(&p1);
        store_page_done(&p2);
}

/* Every test a backend passes, against an empty store at u (a path or URL). */
static void test_backend(const char *u) {
        printf("# store at %s\n", u);
        url = u;
        store *s = open_or_die();
        test_resources(s);
        test_lists(s);
        test_events(s);
        test_keys(s);
        test_env_specs(s);
        test_threads(s);
        test_appenders(s);
        test_sandboxes_and_agui(s);
        test_budget(s);
        store_close(s);
        test_durability();
}

int main(void) {
        hull_error e = {0};
        if (!dlib_sqlite3_load(&e)) {
                printf("skip - sqlite: %s\n", e.msg);
                return 77;
        }
        snprintf(dir, sizeof(dir), "/tmp/hull-test-store-XXXXXX");
        if (!mkdtemp(dir))
                return 1;
        snprintf(db_path, sizeof(db_path), "%s/hull.db", dir);

        test_time();
        test_open();
        test_pg_unreachable();
        char sqlite_url[160], copy_url[160];
        snprintf(sqlite_url, sizeof(sqlite_url), "sqlite:%s/url.db", dir);
        snprintf(copy_url, sizeof(copy_url), "%s/copy.db", dir);
        /* PostgreSQL when tests/unit/test-store-pg.sh gives an empty database of a cluster it started */
        const char *pg = getenv("HULL_TEST_PG_URL");
        const char *const urls[] = {db_path, sqlite_url, pg && *pg ? pg : NULL};
        for (size_t i = 0; i < ELEMENTSOF(urls); i++)
                if (urls[i])
                        test_backend(urls[i]);
        test_copy(db_path, copy_url);
        if (pg && *pg) {
                char from_pg[160];
                snprintf(from_pg, sizeof(from_pg), "%s/from-pg.db", dir);
                test_copy(pg, from_pg);
                const char *pg_empty = getenv("HULL_TEST_PG_EMPTY_URL");
                if (pg_empty && *pg_empty)
                        test_copy(db_path, pg_empty);
        }

        rm_rf_at(AT_FDCWD, dir);
        return test_done();
}
