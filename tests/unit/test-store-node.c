/* test-store-node.c: the store's nodes and leases (store.h's store_node_*, store_lease*,
 * store_events_wait): refused on SQLite (-EOPNOTSUPP); on PostgreSQL (HULL_TEST_PG_URL, set by
 * tests/unit/test-store-pg.sh) a node joins, a second live node of one id is refused, a dead one's
 * id is taken over and its leases expire; a lease is claimed, busy for another node, renewed,
 * released, and reaped once from a dead node even with two reapers at once; an append wakes a
 * waiter on another connection (NOTIFY hull_events, "session_id:seq"); which node holds a session's
 * sandbox is recorded, and forgotten when that node leaves, dies or starts a new life. The turn's
 * one-commit forms: an append that claims the lease (refused, nothing written, when it is another
 * node's or expired), a release that keeps the conversation (kept also when the lease stays), an
 * append that keeps the conversation (in its own transaction; nothing when it is refused). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs-util.h"
#include "store-pg-internal.h"
#include "store-testlib.h"
#include "store-webhook.h"
#include "store.h"
#include "test.h"

static store *open_or_die(const char *url) {
        store *s = NULL;
        hull_error e = {0};
        if (store_open(url, &s, &e) < 0) {
                printf("# open %s: %s\n", url, e.msg);
                exit(1);
        }
        return s;
}

static void sleep_ms(long ms) {
        struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};
        nanosleep(&ts, NULL);
}

static void test_sqlite(const char *path) {
        store *s = open_or_die(path);
        hull_error e = {0};
        store_node n = {.id = "n1", .instance = "i1", .advertise = "http://x", .capacity = 1, .tiers = "[]"};
        CHECK_EQ_INT(store_node_join(s, &n, 1000, &e), -EOPNOTSUPP);
        CHECK(strstr(e.msg, "PostgreSQL") != NULL);
        store_lease le;
        CHECK_EQ_INT(store_lease_claim(s, "sesn_1", "n1", 1000, &le, &e), -EOPNOTSUPP);
        store_owner o;
        CHECK_EQ_INT(store_node_get(s, "n1", 1000, &o, &e), -EOPNOTSUPP);
        char *raw = NULL;
        size_t len = 0;
        int64_t seq = 0;
        CHECK_EQ_INT(store_session_get_seq(s, "sesn_1", &raw, &len, &seq, &e), -EOPNOTSUPP);
        CHECK_EQ_INT(store_session_get_seq_owner(s, "sesn_1", 1000, &raw, &len, &seq, &o, &e), -EOPNOTSUPP);
        CHECK(!store_unreachable(s));
        store_close(s);
}

static void add_session(store *s, const char *id) {
        hull_error e = {0};
        json_t *a = agent_obj("agent_n", 1, 1, false), *o = session_obj(id, 2, "idle", "agent_n", 1, false);
        (void) store_insert(s, STORE_AGENT, a, &e);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, o, &e), 0);
        json_decref(a);
        json_decref(o);
}

static void test_join(store *s) {
        hull_error e = {0};
        store_node a = {
                .id = "na", .instance = "ia", .advertise = "http://a", .capacity = 4, .tiers = "[\"container\"]"};
        store_node b = a;
        b.instance = "ib";
        CHECK_EQ_INT(store_node_join(s, &a, 60000, &e), 0);
        CHECK_EQ_INT(store_node_join(s, &b, 60000, &e), -EEXIST);
        CHECK(strstr(e.msg, "'na' is already running") != NULL);
        CHECK_EQ_INT(store_node_join(s, &a, 60000, &e), 0); /* the same instance again */
        CHECK_EQ_INT(store_node_beat(s, "na", "ia", 60000, 0, &e), 0);
        CHECK_EQ_INT(store_node_beat(s, "na", "ib", 60000, 0, &e), -ESTALE);
        store_node bad = a;
        bad.id = "no spaces";
        CHECK_EQ_INT(store_node_join(s, &bad, 60000, &e), -EINVAL);
        /* dead (its heartbeat older than the ttl): its id is taken, and its leases expire */
        add_session(s, "sesn_join");
        store_lease le;
        CHECK_EQ_INT(store_lease_claim(s, "sesn_join", "na", 60000, &le, &e), 0);
        sleep_ms(300);
        CHECK_EQ_INT(store_node_join(s, &b, 200, &e), 0);
        CHECK_EQ_INT(store_node_beat(s, "na", "ia", 60000, 0, &e), -ESTALE);
        CHECK_EQ_INT(store_lease_claim(s, "sesn_join", "na", 60000, &le, &e), 0);
        CHECK_EQ_STR(le.dead_node, "na"); /* the old life's turn is to be cut */
        CHECK_EQ_INT(store_node_leave(s, "na", "ib", &e), 0);
        CHECK_EQ_INT(store_node_join(s, &a, 60000, &e), 0); /* gone: joins at once */
        CHECK_EQ_INT(store_node_leave(s, "na", "ia", &e), 0);
}

static void test_leases(store *s, store *s2) {
        hull_error e = {0};
        store_node a = {.id = "la", .instance = "ia", .advertise = "http://a", .capacity = 4, .tiers = "[]"};
        store_node b = {.id = "lb", .instance = "ib", .advertise = "http://b", .capacity = 4, .tiers = "[]"};
        CHECK_EQ_INT(store_node_join(s, &a, 60000, &e), 0);
        CHECK_EQ_INT(store_node_join(s2, &b, 60000, &e), 0);
        char other[STORE_ID_MAX], url[NODE_URL_MAX];
        CHECK_EQ_INT(store_node_roomiest(s, "la", 60000, other, url, &e), 0);
        CHECK_EQ_STR(other, "lb");
        CHECK_EQ_STR(url, "http://b");
        store_owner no;
        CHECK_EQ_INT(store_node_get(s, "lb", 60000, &no, &e), 0); /* a node by its id */
        CHECK(no.alive && no.beat_age_ms >= 0);
        CHECK_EQ_STR(no.advertise, "http://b");
        CHECK_EQ_INT(store_node_get(s, "lz", 60000, &no, &e), -ENOENT);
        CHECK_EQ_INT(store_node_get(s, "not a node", 60000, &no, &e), -EINVAL);
        CHECK_EQ_INT(store_node_beat(s2, "lb", "ib", 60000, 4, &e), 0); /* full */
        CHECK_EQ_INT(store_node_roomiest(s, "la", 60000, other, url, &e), -ENOENT);
        CHECK_EQ_INT(store_node_beat(s2, "lb", "ib", 60000, 3, &e), 0);
        CHECK_EQ_INT(store_node_roomiest(s, "la", 60000, other, url, &e), 0);
        add_session(s, "sesn_l1");
        store_lease le;
        CHECK_EQ_INT(store_lease_claim(s, "sesn_nope", "la", 60000, &le, &e), -ENOENT);
        CHECK_EQ_INT(store_lease_claim(s, "sesn_l1", "la", 60000, &le, &e), 0);
        CHECK_EQ_STR(le.node_id, "la");
        CHECK_EQ_STR(le.dead_node, "");
        CHECK_EQ_INT(store_lease_claim(s2, "sesn_l1", "lb", 60000, &le, &e), -EBUSY);
        CHECK_EQ_STR(le.node_id, "la");
        CHECK_EQ_STR(le.advertise, "http://a");
        CHECK_EQ_INT(store_lease_claim(s, "sesn_l1", "la", 60000, &le, &e), 0); /* renewed */
        /* a message another node queued meanwhile keeps the lease, and comes back to run */
        json_t *q[2] = {event_obj("sevt_q1", "user.message", NULL), event_obj("sevt_q2", "agent.message", NULL)};
        CHECK_EQ_INT(store_events_append(s2, "sesn_l1", q, 2, NULL, &e), 0);
        json_decref(q[0]);
        json_decref(q[1]);
        json_t *pending = NULL;
        CHECK_EQ_INT(store_lease_release(s2, "sesn_l1", "lb", &pending, &e), 0); /* not lb's: nothing */
        CHECK(pending == NULL);
        CHECK_EQ_INT(store_lease_release(s, "sesn_l1", "la", &pending, &e), -EAGAIN);
        CHECK_EQ_INT(json_array_size(pending), 1);
        CHECK_EQ_STR(sid(json_array_get(pending, 0)), "sevt_q1");
        json_decref(pending);
        CHECK_EQ_INT(store_events_set_processed(s, "sesn_l1", "sevt_q1", "2026-01-01T00:00:09Z", &e), 0);
        pending = NULL;
        CHECK_EQ_INT(store_lease_release(s, "sesn_l1", "la", &pending, &e), 0);
        CHECK(pending == NULL);
        CHECK_EQ_INT(store_lease_claim(s2, "sesn_l1", "lb", 60000, &le, &e), 0); /* it was given up */
        CHECK_EQ_INT(store_lease_release(s2, "sesn_l1", "lb", NULL, &e), 0);
        CHECK_EQ_INT(store_lease_claim(s, "sesn_l1", "la", 60000, &le, &e), 0);
        CHECK_EQ_INT(store_lease_release(s, "sesn_l1", "la", NULL, &e), 0);
        CHECK_EQ_INT(store_lease_claim(s2, "sesn_l1", "lb", 60000, &le, &e), 0);
        CHECK_EQ_INT(store_lease_release(s2, "sesn_l1", "lb", NULL, &e), 0);

        /* la dies holding 5 leases (200 ms): two reapers at once take each exactly once */
        char id[32];
        for (int i = 0; i < 5; i++) {
                snprintf(id, sizeof(id), "sesn_r%d", i);
                add_session(s, id);
                CHECK_EQ_INT(store_lease_claim(s, id, "la", 200, &le, &e), 0);
        }
        sleep_ms(300);
        json_t *r1 = NULL, *r2 = NULL;
        CHECK_EQ_INT(store_leases_reap(s2, "lb", 60000, &r1, &e), 0);
        CHECK_EQ_INT(store_leases_reap(s, "lc", 60000, &r2, &e), 0);
        CHECK_EQ_INT(json_array_size(r1) + json_array_size(r2), 5);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(r1, 0), "dead_node")), "la");
        json_decref(r1);
        json_decref(r2);
        /* a live node's beat renews its leases: nothing to reap */
        CHECK_EQ_INT(store_lease_claim(s2, "sesn_l1", "lb", 200, &le, &e), 0);
        CHECK_EQ_INT(store_node_beat(s2, "lb", "ib", 60000, 0, &e), 0);
        sleep_ms(300);
        CHECK_EQ_INT(store_leases_reap(s, "la", 60000, &r1, &e), 0);
        CHECK_EQ_INT(json_array_size(r1), 0);
        json_decref(r1);
        CHECK_EQ_INT(store_node_leave(s2, "lb", "ib", &e), 0);
        CHECK_EQ_INT(store_lease_claim(s, "sesn_l1", "la", 60000, &le, &e), 0); /* its leases went with it */
        CHECK_EQ_INT(store_node_leave(s, "la", "ia", &e), 0);
}

typedef struct woke {
        char id[STORE_ID_MAX];
        int64_t seq;
        unsigned n;
} woke;

static void on_wake(void *ud, const char *session_id, int64_t seq) {
        woke *w = ud;
        snprintf(w->id, sizeof(w->id), "%s", session_id);
        w->seq = seq;
        w->n++;
}

static void test_wake(store *s, store *s2) {
        hull_error e = {0};
        woke w = {0};
        CHECK_EQ_INT(store_events_wait(s2, 10, on_wake, &w, &e), 0); /* LISTEN set up */
        add_session(s, "sesn_w");
        json_t *evs[2] = {event_obj("sevt_w1", "user.message", NULL), event_obj("sevt_w2", "user.message", NULL)};
        CHECK_EQ_INT(store_events_append(s, "sesn_w", evs, 2, NULL, &e), 0);
        json_decref(evs[0]);
        json_decref(evs[1]);
        for (int i = 0; i < 50 && w.n == 0; i++)
                CHECK(store_events_wait(s2, 100, on_wake, &w, &e) == 0 || i > 0);
        CHECK_EQ_INT(w.n, 1);
        CHECK_EQ_STR(w.id, "sesn_w");
        CHECK_EQ_INT(w.seq, 2);
}

/* Which node holds a session's sandbox: set, read (alive), moved, gone with a node that leaves,
 * dead once its heartbeat is older than the ttl and forgotten by the reaper; a new life of a node
 * forgets its earlier life's. */
static void test_owners(store *s) {
        hull_error e = {0};
        store_node a = {.id = "oa", .instance = "ia", .advertise = "http://oa", .capacity = 4, .tiers = "[]"};
        store_node b = {.id = "ob", .instance = "ib", .advertise = "http://ob", .capacity = 4, .tiers = "[]"};
        CHECK_EQ_INT(store_node_join(s, &a, 60000, &e), 0);
        CHECK_EQ_INT(store_node_join(s, &b, 60000, &e), 0);
        add_session(s, "sesn_o1");
        store_owner o;
        CHECK_EQ_INT(store_sandbox_owner_get(s, "sesn_o1", 60000, &o, &e), -ENOENT);
        CHECK_EQ_INT(store_sandbox_owner_set(s, "sesn_nope", "oa", "ia", &e), -ENOENT);
        CHECK_EQ_INT(store_sandbox_owner_set(s, "sesn_o1", "oa", "ia", &e), 0);
        CHECK_EQ_INT(store_sandbox_owner_get(s, "sesn_o1", 60000, &o, &e), 0);
        CHECK(o.alive && o.beat_age_ms >= 0);
        CHECK_EQ_STR(o.node_id, "oa");
        CHECK_EQ_STR(o.advertise, "http://oa");
        /* the same holder read with the session's row and last seq (a send's one round trip) */
        char *raw = NULL, *want = NULL;
        size_t len = 0, wlen = 0;
        int64_t seq = -1;
        store_owner so = {.alive = false};
        CHECK_EQ_INT(store_session_get_seq_owner(s, "sesn_o1", 60000, &raw, &len, &seq, &so, &e), 0);
        CHECK_EQ_INT(store_get_raw(s, STORE_SESSION, "sesn_o1", 0, &want, &wlen, &e), 0);
        CHECK(len == wlen && raw && strcmp(raw, want) == 0);
        CHECK_EQ_INT(seq, 0);
        CHECK(so.alive && so.beat_age_ms >= 0);
        CHECK_EQ_STR(so.node_id, "oa");
        CHECK_EQ_STR(so.advertise, "http://oa");
        free(raw);
        free(want);
        raw = NULL;
        CHECK_EQ_INT(store_session_get_seq_owner(s, "sesn_nope", 60000, &raw, &len, &seq, &so, &e), -ENOENT);
        CHECK(raw == NULL);
        CHECK_EQ_INT(store_sandbox_owner_set(s, "sesn_o1", "ob", "ib", &e), 0); /* a new sandbox on ob */
        CHECK_EQ_INT(store_sandbox_owner_get(s, "sesn_o1", 60000, &o, &e), 0);
        CHECK_EQ_STR(o.node_id, "ob");
        CHECK_EQ_INT(store_node_leave(s, "ob", "ib", &e), 0); /* its sandboxes went with it */
        CHECK_EQ_INT(store_sandbox_owner_get(s, "sesn_o1", 60000, &o, &e), -ENOENT);
        CHECK_EQ_INT(store_session_get_seq_owner(s, "sesn_o1", 60000, &raw, &len, &seq, &so, &e), 0);
        CHECK(so.node_id[0] == '\0' && !so.alive && so.beat_age_ms == -1); /* none recorded */
        free(raw);
        /* dead: its heartbeat older than the ttl; the reaper forgets it */
        CHECK_EQ_INT(store_sandbox_owner_set(s, "sesn_o1", "oa", "ia", &e), 0);
        sleep_ms(300);
        CHECK_EQ_INT(store_sandbox_owner_get(s, "sesn_o1", 200, &o, &e), 0);
        CHECK(!o.alive && o.beat_age_ms >= 200);
        CHECK_EQ_INT(store_node_get(s, "oa", 200, &o, &e), 0); /* its row, taken for dead */
        CHECK(!o.alive && o.beat_age_ms >= 200);
        json_t *taken = NULL;
        CHECK_EQ_INT(store_leases_reap(s, "oc", 200, &taken, &e), 0);
        json_decref(taken);
        CHECK_EQ_INT(store_sandbox_owner_get(s, "sesn_o1", 200, &o, &e), -ENOENT);
        /* a new life of oa forgets what its earlier life held */
        CHECK_EQ_INT(store_node_beat(s, "oa", "ia", 60000, 0, &e), 0);
        CHECK_EQ_INT(store_sandbox_owner_set(s, "sesn_o1", "oa", "ia", &e), 0);
        sleep_ms(300);
        store_node a2 = a;
        a2.instance = "ia2";
        CHECK_EQ_INT(store_node_join(s, &a2, 200, &e), 0);
        CHECK_EQ_INT(store_sandbox_owner_get(s, "sesn_o1", 60000, &o, &e), -ENOENT);
        CHECK(!store_unreachable(s));
        CHECK_EQ_INT(store_node_leave(s, "oa", "ia2", &e), 0);
}

static int64_t last_seq(store *s, const char *id) {
        int64_t seq = -1;
        hull_error e = {0};
        CHECK_EQ_INT(store_events_last_seq(s, id, &seq, &e), 0);
        return seq;
}

static void test_turn_commits(store *s, store *s2) {
        hull_error e = {0};
        store_lease le;
        add_session(s, "sesn_t1");
        json_t *m[1] = {event_obj("sevt_t1", "user.message", NULL)};
        CHECK_EQ_INT(store_events_append_claim(s, "sesn_nope", m, 1, "ta", 60000, NULL, &e), -ENOENT);
        int64_t first = 0;
        CHECK_EQ_INT(store_events_append_claim(s, "sesn_t1", m, 1, "ta", 60000, &first, &e), 0); /* free: taken */
        CHECK_EQ_INT(first, 1);
        CHECK_EQ_INT(store_lease_claim(s2, "sesn_t1", "tb", 60000, &le, &e), -EBUSY); /* ta's now */
        CHECK_EQ_STR(le.node_id, "ta");
        json_decref(m[0]);
        m[0] = event_obj("sevt_t2", "user.message", NULL);
        CHECK_EQ_INT(store_events_append_claim(s2, "sesn_t1", m, 1, "tb", 60000, &first, &e), -EBUSY); /* ta's */
        CHECK_EQ_INT(last_seq(s, "sesn_t1"), 1);                                                       /* nothing */
        CHECK_EQ_INT(store_events_append_claim(s, "sesn_t1", m, 1, "ta", 60000, &first, &e), 0); /* ta's: renewed */
        CHECK_EQ_INT(first, 2);
        json_decref(m[0]);
        /* the release refused while a queued message waits (it is handed back), then given */
        json_t *pending = NULL;
        CHECK_EQ_INT(store_lease_release(s, "sesn_t1", "ta", &pending, &e), -EAGAIN); /* sevt_t2 waits */
        CHECK_EQ_INT(json_array_size(pending), 2);
        json_decref(pending);
        pending = NULL;
        CHECK_EQ_INT(store_lease_claim(s2, "sesn_t1", "tb", 60000, &le, &e), -EBUSY); /* kept */
        CHECK_EQ_INT(store_events_set_processed(s, "sesn_t1", "sevt_t1", "2026-01-01T00:00:09Z", &e), 0);
        CHECK_EQ_INT(store_events_set_processed(s, "sesn_t1", "sevt_t2", "2026-01-01T00:00:09Z", &e), 0);
        CHECK_EQ_INT(store_lease_release(s, "sesn_t1", "ta", &pending, &e), 0);
        CHECK(pending == NULL);
        CHECK_EQ_INT(store_lease_claim(s2, "sesn_t1", "tb", 60000, &le, &e), 0); /* it was given up */
        /* an expired lease (its node dead) is not taken in the append: the claim cuts its turn first */
        CHECK_EQ_INT(store_lease_release(s2, "sesn_t1", "tb", NULL, &e), 0);
        CHECK_EQ_INT(store_lease_claim(s2, "sesn_t1", "tb", 100, &le, &e), 0);
        sleep_ms(200);
        m[0] = event_obj("sevt_t3", "user.message", NULL);
        CHECK_EQ_INT(store_events_append_claim(s, "sesn_t1", m, 1, "ta", 60000, &first, &e), -EBUSY);
        CHECK_EQ_INT(store_events_append_claim(s2, "sesn_t1", m, 1, "tb", 60000, &first, &e), -EBUSY); /* its own */
        CHECK_EQ_INT(last_seq(s, "sesn_t1"), 2);
        CHECK_EQ_INT(store_lease_claim(s, "sesn_t1", "ta", 60000, &le, &e), 0);
        CHECK_EQ_STR(le.dead_node, "tb");
        json_decref(m[0]);
        CHECK_EQ_INT(store_lease_release(s, "sesn_t1", "ta", NULL, &e), 0);
        /* the body and the log's last seq in one read (a node's sync lists events only when it grew) */
        char *raw = NULL, *want = NULL;
        size_t len = 0, wlen = 0;
        int64_t seq = -1;
        CHECK_EQ_INT(store_session_get_seq(s2, "sesn_t1", &raw, &len, &seq, &e), 0);
        CHECK_EQ_INT(seq, 2);
        CHECK_EQ_INT(store_get_raw(s2, STORE_SESSION, "sesn_t1", 0, &want, &wlen, &e), 0);
        CHECK(len == wlen && strcmp(raw, want) == 0);
        free(raw);
        free(want);
        raw = NULL;
        m[0] = event_obj("sevt_t4", "user.message", NULL);
        CHECK_EQ_INT(store_events_append(s, "sesn_t1", m, 1, &first, &e), 0);
        json_decref(m[0]);
        CHECK_EQ_INT(store_session_get_seq(s2, "sesn_t1", &raw, &len, &seq, &e), 0);
        CHECK_EQ_INT(seq, 3); /* another store's append: seen at once */
        free(raw);
        raw = NULL;
        CHECK_EQ_INT(store_session_get_seq(s2, "sesn_nope", &raw, &len, &seq, &e), -ENOENT);
        CHECK(raw == NULL);
}

/* An append with the session row queues its status webhooks in the same statement: a row for
 * every enabled subscription that wants the type, none when the append is refused (the body
 * changed), and the delivery worker woken. */
static unsigned woken;
static void on_webhook(void *ud) {
        (void) ud;
        woken++;
}

static void test_append_webhooks(store *s) {
        hull_error e = {0};
        add_session(s, "sesn_w1");
        json_t *w = json_pack("{s:s, s:s, s:s, s:[s]}", "id", "wh_n1", "type", "webhook", "status", "enabled",
                              "event_types", "session.status_idled");
        CHECK_EQ_INT(store_webhook_put(s, true, w, 1000, "sealed", "k1", &e), 0);
        json_decref(w);
        store_webhook_set_wake(s, on_webhook, NULL);
        char *stored = NULL;
        size_t len = 0;
        int64_t seq = 0, first = 0, pending = 0;
        CHECK_EQ_INT(store_session_get_seq(s, "sesn_w1", &stored, &len, &seq, &e), 0);
        json_t *obj = session_obj("sesn_w1", 2, "idle", "agent_n", 1, false);
        json_t *m[1] = {event_obj("sevt_wh1", "session.status_idle", NULL)};
        const char *q = "[{\"e\":\"whe_n1\",\"t\":\"session.status_idled\",\"c\":5000,\"b\":\"{}\"},"
                        "{\"e\":\"whe_n2\",\"t\":\"session.status_run_started\",\"c\":5000,\"b\":\"{}\"}]";
        char *now = NULL;
        CHECK_EQ_INT(store_events_append_with_session(s, "sesn_w1", m, 1, obj, "{\"not\":\"it\"}", q, NULL, &first,
                                                      &now, &e),
                     -ESTALE); /* refused: nothing queued */
        free(now);
        now = NULL;
        CHECK_EQ_INT(store_webhook_pending(s, "wh_n1", &pending, &e), 0);
        CHECK_EQ_INT(pending, 0);
        CHECK_EQ_INT(woken, 0);
        CHECK_EQ_INT(store_events_append_with_session(s, "sesn_w1", m, 1, obj, stored, q, NULL, &first, &now, &e), 0);
        CHECK_EQ_INT(first, seq + 1);
        CHECK_EQ_INT(store_webhook_pending(s, "wh_n1", &pending, &e), 0);
        CHECK_EQ_INT(pending, 1); /* idled wanted, run_started not */
        CHECK_EQ_INT(woken, 1);
        json_t *got = NULL;
        CHECK_EQ_INT(store_webhook_claim(s, 6000, 7000, 10, &got, &e), 0);
        CHECK_EQ_INT(json_array_size(got), 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(got, 0), "event_id")), "whe_n1");
        json_decref(got);
        store_webhook_set_wake(s, NULL, NULL);
        free(now);
        free(stored);
        json_decref(m[0]);
        json_decref(obj);
}

/* The xmin (writing transaction) of a row, as text: "" when there is none. */
static void xmin_of(store *s, const char *sql, const char *id, char *buf, size_t size) {
        hull_error e = {0};
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {id};
        buf[0] = '\0';
        CHECK_EQ_INT(pg_exec(&((pg_store *) s)->conns[0], sql, 1, v, "cannot read xmin", &res, &e), 0);
        if (res && PQntuples(res) == 1)
                snprintf(buf, size, "%s", PQgetvalue(res, 0, 0));
}

static char *conv_text(const char *last) {
        json_t *c = json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "user", "content", "hi", "role", "assistant",
                              "content", last);
        char *t = json_dumps(c, JSON_COMPACT);
        json_decref(c);
        return t;
}

/* The conversation of a turn goes with the append that logs its idle (a node that dies after
 * that commit leaves the turn in the conversation too): written whole in the append's own
 * transaction (its row's xmin is the idle's), the parts added before dropped; nothing of it when
 * the append is refused (the body changed: -ESTALE; an id taken: -EEXIST); a tail, or a text
 * that is not one, is not written here (the events are appended all the same). */
static void test_append_conversation(store *s, store *s2) {
        hull_error e = {0};
        add_session(s, "sesn_c1");
        CHECK_EQ_INT(store_conversation_put_text(s, "sesn_c1", "[{\"a\":1}]", 9, &e), 0);
        CHECK_EQ_INT(store_conversation_append_text(s, "sesn_c1", ",{\"b\":2}", 8, 17, &e), 0);
        char *stored = NULL, *now = NULL;
        size_t len = 0;
        int64_t seq = 0, first = 0;
        CHECK_EQ_INT(store_session_get_seq(s, "sesn_c1", &stored, &len, &seq, &e), 0);
        json_t *obj = session_obj("sesn_c1", 2, "idle", "agent_n", 1, false);
        json_t *m[1] = {event_obj("sevt_c1", "session.status_idle", NULL)};
        char *t1 = conv_text("first");
        store_conv_write cw = {.text = t1, .len = strlen(t1), .total_len = strlen(t1), .result = 1};
        CHECK_EQ_INT(store_events_append_with_session(s, "sesn_c1", m, 1, obj, "{\"not\":\"it\"}", NULL, &cw, &first,
                                                      &now, &e),
                     -ESTALE);
        CHECK_EQ_INT(cw.result, -ECANCELED);
        free(TAKE_PTR(now));
        json_t *got = NULL, *want = json_loads("[{\"a\":1},{\"b\":2}]", 0, NULL);
        CHECK_EQ_INT(store_conversation_get(s2, "sesn_c1", &got, &e), 0);
        CHECK(json_equal(got, want)); /* refused: the conversation as it was */
        json_decref(TAKE_PTR(got));
        CHECK_EQ_INT(last_seq(s2, "sesn_c1"), seq);
        cw.result = 1;
        CHECK_EQ_INT(store_events_append_with_session(s, "sesn_c1", m, 1, obj, stored, NULL, &cw, &first, &now, &e), 0);
        CHECK_EQ_INT(cw.result, 0);
        CHECK_EQ_INT(first, seq + 1);
        CHECK_EQ_INT(store_conversation_get(s2, "sesn_c1", &got, &e), 0);
        json_decref(want);
        want = json_loads(t1, 0, NULL);
        CHECK(json_equal(got, want)); /* whole: the parts before it gone */
        json_decref(TAKE_PTR(got));
        char xc[32], xe[32];
        xmin_of(s2, "SELECT xmin::text FROM conversations WHERE session_id = $1", "sesn_c1", xc, sizeof(xc));
        xmin_of(s2, "SELECT xmin::text FROM events WHERE id = $1", "sevt_c1", xe, sizeof(xe));
        CHECK(xc[0] && strcmp(xc, xe) == 0); /* one transaction */
        /* an id taken: nothing of the new text either */
        char *t2 = conv_text("second");
        cw = (store_conv_write){.text = t2, .len = strlen(t2), .total_len = strlen(t2), .result = 1};
        CHECK_EQ_INT(store_events_append_with_session(s, "sesn_c1", m, 1, obj, now, NULL, &cw, &first, NULL, &e),
                     -EEXIST);
        CHECK_EQ_INT(cw.result, -ECANCELED);
        CHECK_EQ_INT(store_conversation_get(s2, "sesn_c1", &got, &e), 0);
        CHECK(json_equal(got, want));
        json_decref(TAKE_PTR(got));
        CHECK_EQ_INT(last_seq(s2, "sesn_c1"), seq + 1);
        /* a tail, or no array's text: not written here, the events appended */
        json_decref(m[0]);
        m[0] = event_obj("sevt_c2", "session.status_idle", NULL);
        cw = (store_conv_write){.text = ",{\"c\":3}", .len = 8, .total_len = 40, .append = true, .result = 1};
        char *now2 = NULL;
        CHECK_EQ_INT(store_events_append_with_session(s, "sesn_c1", m, 1, obj, now, NULL, &cw, &first, &now2, &e), 0);
        CHECK_EQ_INT(cw.result, -EOPNOTSUPP);
        json_decref(m[0]);
        m[0] = event_obj("sevt_c3", "session.status_idle", NULL);
        cw = (store_conv_write){.text = t2, .len = strlen(t2) - 1, .total_len = strlen(t2) - 1, .result = 1};
        CHECK_EQ_INT(store_events_append_with_session(s, "sesn_c1", m, 1, obj, now2, NULL, &cw, &first, NULL, &e), 0);
        CHECK_EQ_INT(cw.result, -EINVAL);
        CHECK_EQ_INT(last_seq(s2, "sesn_c1"), seq + 3);
        CHECK_EQ_INT(store_conversation_get(s2, "sesn_c1", &got, &e), 0);
        CHECK(json_equal(got, want));
        json_decref(got);
        json_decref(want);
        json_decref(m[0]);
        json_decref(obj);
        free(t1);
        free(t2);
        free(now);
        free(now2);
        free(stored);
}

/* A turn's statements are prepared once a connection (pg_exec_hot); when the server session lost
 * them (a pooler's other session: here DEALLOCATE ALL) the statement still runs, unprepared, and
 * that connection prepares no more. */
static void test_prepared(store *s) {
        hull_error e = {0};
        pg_conn *pc = &((pg_store *) s)->conns[0]; /* one thread: every call takes the first */
        add_session(s, "sesn_p1");
        int64_t seq = -1;
        pc->n_prepared = 0;
        CHECK_EQ_INT(store_events_last_seq(s, "sesn_p1", &seq, &e), 0);
        CHECK_EQ_INT(seq, 0);
        CHECK_EQ_INT(pc->n_prepared, 1);
        CHECK_EQ_INT(store_events_last_seq(s, "sesn_p1", &seq, &e), 0);
        CHECK_EQ_INT(pc->n_prepared, 1); /* the same text: prepared once */
        CHECK_EQ_INT(pg_exec(pc, "DEALLOCATE ALL", 0, NULL, "cannot deallocate", NULL, &e), 0);
        seq = -1;
        CHECK_EQ_INT(store_events_last_seq(s, "sesn_p1", &seq, &e), 0);
        CHECK_EQ_INT(seq, 0);
        CHECK(pc->no_prepare && pc->n_prepared == 0);
        seq = -1;
        CHECK_EQ_INT(store_events_last_seq(s, "sesn_p1", &seq, &e), 0);
        CHECK(seq == 0 && pc->n_prepared == 0);
        pc->no_prepare = false;
}

/* The store's statements are planned generically from their first run (plan_cache_mode, set on
 * every connection): PostgreSQL would otherwise plan a prepared statement afresh for each of its
 * first five runs (a custom plan each, 0.2-0.4 ms in a turn's statements). */
static void test_generic_plans(store *s) {
        hull_error e = {0};
        pg_conn *pc = &((pg_store *) s)->conns[0];
        add_session(s, "sesn_g1");
        int64_t seq = -1;
        for (int i = 0; i < 3; i++)
                CHECK_EQ_INT(store_events_last_seq(s, "sesn_g1", &seq, &e), 0);
        _cleanup_res_ PGresult *res = NULL;
        CHECK_EQ_INT(pg_exec(pc,
                             "SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)"
                             " FROM pg_prepared_statements",
                             0, NULL, "cannot read the plans", &res, &e),
                     0);
        CHECK(res && PQntuples(res) == 1);
        if (res && PQntuples(res) == 1) {
                CHECK(pg_get_int(res, 0, 0) >= 3); /* the last seq's statement, three times */
                CHECK_EQ_INT(pg_get_int(res, 0, 1), 0);
        }
}

int main(void) {
        char dir[] = "/tmp/hull-test-store-node-XXXXXX", path[80];
        if (!mkdtemp(dir))
                return 1;
        snprintf(path, sizeof(path), "%s/hull.db", dir);
        test_sqlite(path);
        rm_rf_at(AT_FDCWD, dir);
        const char *pg = getenv("HULL_TEST_PG_URL");
        if (!pg || !*pg) {
                printf("# PostgreSQL: only under tests/unit/test-store-pg.sh (test-store-node-pg)\n");
                return test_done();
        }
        store *s = open_or_die(pg), *s2 = open_or_die(pg);
        test_join(s);
        test_leases(s, s2);
        test_wake(s, s2);
        test_owners(s);
        test_turn_commits(s, s2);
        test_append_webhooks(s);
        test_append_conversation(s, s2);
        test_prepared(s);
        test_generic_plans(s);
        store_close(s2);
        store_close(s);
        return test_done();
}
