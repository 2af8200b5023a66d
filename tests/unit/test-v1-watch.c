/* test-v1-watch.c: the /v1 engine's watch (v1_engine_watch, v1-run.h) with consumers of the
 * test's own: a replay from the log then live events, each once and in order; a consumer that
 * has no room caught up from the store by a pump once it has room; one that is gone ended; a held
 * watch (AG-UI's kind) with the log's last sequence number and a copy of the session, stopped by
 * v1_engine_unwatch; session.deleted ending the engine's watches but not the held one; shutdown
 * ending the rest. Events come from session updates (session.updated): no model is needed. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "store.h"
#include "test.h"
#include "v1-run.h"

#define EVS_MAX 64

typedef struct consumer {
        pthread_mutex_t lock;
        int64_t seqs[EVS_MAX]; /* what it was given (0: a preview or session.deleted) */
        char types[EVS_MAX][32];
        size_t n;
        int refuse_at;     /* deliver says -EAGAIN for this seq until room is set */
        atomic_bool room;  /* wait says there is room */
        atomic_bool gone;  /* deliver and wait say -EPIPE */
        atomic_int closed; /* close calls */
        atomic_bool cut;
        atomic_int waits;
} consumer;

static int c_deliver(void *ud, int64_t seq, const json_t *ev, const char *json_text, size_t len) {
        consumer *c = ud;
        if (atomic_load(&c->gone))
                return -EPIPE;
        if (seq > 0 && seq >= c->refuse_at && c->refuse_at > 0 && !atomic_load(&c->room))
                return -EAGAIN;
        if (strlen(json_text) != len || !strstr(json_text, "\"type\""))
                return -EINVAL; /* the text must be the event's */
        pthread_mutex_lock(&c->lock);
        if (c->n < EVS_MAX) {
                c->seqs[c->n] = seq;
                snprintf(c->types[c->n], sizeof(c->types[0]), "%s",
                         json_string_value(json_object_get(ev, "type")) ?: "");
                c->n++;
        }
        pthread_mutex_unlock(&c->lock);
        return 0;
}

static int c_wait(void *ud, uint64_t timeout_ms) {
        consumer *c = ud;
        atomic_fetch_add(&c->waits, 1);
        if (atomic_load(&c->gone))
                return -EPIPE;
        if (atomic_load(&c->room))
                return 0;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        return -ETIMEDOUT;
}

static void c_close(void *ud, bool cut) {
        consumer *c = ud;
        atomic_store(&c->cut, cut);
        atomic_fetch_add(&c->closed, 1);
}

static const v1_watch_ops ops = {.deliver = c_deliver, .wait = c_wait, .close = c_close};

static void c_init(consumer *c) {
        *c = (consumer){0};
        pthread_mutex_init(&c->lock, NULL);
}

static size_t c_count(consumer *c) {
        pthread_mutex_lock(&c->lock);
        size_t n = c->n;
        pthread_mutex_unlock(&c->lock);
        return n;
}

/* Wait (at most 5 s) until c has n events, or is closed when n is 0. */
static void c_await(consumer *c, size_t n) {
        for (int i = 0; i < 500; i++) {
                if (n ? c_count(c) >= n : atomic_load(&c->closed) > 0)
                        return;
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
}

/* Were c's logged events first..last, each once and in order? */
static bool c_in_order(consumer *c, int64_t first, int64_t last) {
        int64_t want = first;
        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < c->n; i++)
                if (c->seqs[i] > 0 && c->seqs[i] != want++) {
                        pthread_mutex_unlock(&c->lock);
                        return false;
                }
        pthread_mutex_unlock(&c->lock);
        return want == last + 1;
}

static void update(v1_engine *g, const char *sid, int i) {
        char title[32];
        snprintf(title, sizeof(title), "title %d", i);
        json_auto_t *body = json_pack("{s:s}", "title", title), *out = NULL;
        v1_err err = {0};
        int r = v1_engine_update(g, sid, body, &out, &err);
        TEST_RESULT(r == 0, "update %d (r %d, %s)", i, r, err.msg);
}

static void session_new(store *st, const char *sid) {
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        json_auto_t *s = json_pack("{s:s, s:s, s:n, s:s, s:{s:s, s:i}, s:n, s:{}, s:n}", "id", sid, "created_at", now,
                                   "archived_at", "status", "idle", "agent", "id", "agent_test", "version", 1, "title",
                                   "metadata", "budget");
        hull_error e = {0};
        CHECK_EQ_INT(store_insert(st, STORE_SESSION, s, &e), 0);
}

int main(void) {
        char dir[] = "/tmp/test-v1-watch-XXXXXX";
        if (!mkdtemp(dir))
                return 1;
        char path[sizeof(dir) + 16];
        snprintf(path, sizeof(path), "%s/hull.db", dir);
        store *st = NULL;
        hull_error e = {0};
        CHECK_EQ_INT(store_open(path, &st, &e), 0);
        dlog log = {.level = DLOG_ERROR, .fd = 2};
        v1_engine_config cfg = {.store = st, .settings_error = "no model in this test", .log = &log};
        v1_engine *g = NULL;
        CHECK_EQ_INT(v1_engine_new(&cfg, &g, &e), 0);
        const char *sid = "sesn_watchtest";
        session_new(st, sid);
        for (int i = 1; i <= 3; i++)
                update(g, sid, i);

        /* an unknown session: 404, and close was called */
        consumer c0;
        c_init(&c0);
        v1_err err = {0};
        v1_watch_opts all = {.after_seq = 0};
        CHECK(v1_engine_watch(g, "sesn_nosuch", &ops, &c0, &all, NULL, NULL, NULL, &err) < 0);
        CHECK_EQ_INT(err.status, 404);
        CHECK_EQ_INT(atomic_load(&c0.closed), 1);

        /* the whole log, then live */
        consumer c1;
        c_init(&c1);
        CHECK_EQ_INT(v1_engine_watch(g, sid, &ops, &c1, &all, NULL, NULL, NULL, &err), 0);
        CHECK_EQ_INT(c_count(&c1), 3);
        CHECK_EQ_STR(c1.types[0], "session.updated");

        /* after seq 2 (a resume): 3 only, then live */
        consumer c2;
        c_init(&c2);
        v1_watch_opts after2 = {.after_seq = 2};
        CHECK_EQ_INT(v1_engine_watch(g, sid, &ops, &c2, &after2, NULL, NULL, NULL, &err), 0);
        CHECK_EQ_INT(c_count(&c2), 1);

        /* no room from seq 2 on: a pump catches it up once there is room */
        consumer c3;
        c_init(&c3);
        c3.refuse_at = 2;
        CHECK_EQ_INT(v1_engine_watch(g, sid, &ops, &c3, &all, NULL, NULL, NULL, &err), 0);
        CHECK_EQ_INT(c_count(&c3), 1);

        /* gone: ended at the next event */
        consumer c4;
        c_init(&c4);
        v1_watch_opts live = {.after_seq = V1_WATCH_LIVE};
        CHECK_EQ_INT(v1_engine_watch(g, sid, &ops, &c4, &live, NULL, NULL, NULL, &err), 0);
        atomic_store(&c4.gone, true);

        /* held, live only: the log's end and the session as of now */
        consumer c5;
        c_init(&c5);
        int64_t last = -5;
        json_auto_t *sess = NULL;
        v1_watch *w5 = NULL;
        CHECK_EQ_INT(v1_engine_watch(g, sid, &ops, &c5, &live, &last, &sess, &w5, &err), 0);
        CHECK_EQ_INT(last, 3);
        CHECK_EQ_STR(json_string_value(json_object_get(sess, "title")), "title 3");
        CHECK(w5 != NULL);

        for (int i = 4; i <= 6; i++)
                update(g, sid, i);
        CHECK_EQ_INT(c_count(&c1), 6);
        CHECK(c_in_order(&c1, 1, 6));
        CHECK(c_in_order(&c2, 3, 6));
        CHECK_EQ_INT(c_count(&c5), 3);
        CHECK(c_in_order(&c5, 4, 6));
        CHECK_EQ_INT(atomic_load(&c4.closed), 1);
        CHECK(atomic_load(&c4.cut));
        CHECK_EQ_INT(c_count(&c3), 1); /* still waiting for room */
        atomic_store(&c3.room, true);
        c_await(&c3, 6);
        CHECK(c_in_order(&c3, 1, 6));
        update(g, sid, 7); /* live again */
        c_await(&c3, 7);
        CHECK(c_in_order(&c3, 1, 7));
        CHECK_EQ_INT(atomic_load(&c3.closed), 0);

        /* deleted: the engine's watches get session.deleted and end; the held one stays */
        CHECK_EQ_INT(v1_engine_delete(g, sid, &err), 0);
        CHECK_EQ_INT(atomic_load(&c1.closed), 1);
        CHECK(atomic_load(&c1.cut));
        CHECK_EQ_STR(c1.types[c_count(&c1) - 1], "session.deleted");
        CHECK_EQ_INT(c1.seqs[c_count(&c1) - 1], 0);
        c_await(&c3, 0);
        CHECK_EQ_INT(atomic_load(&c3.closed), 1);
        CHECK_EQ_INT(atomic_load(&c5.closed), 0);
        CHECK_EQ_STR(c5.types[c_count(&c5) - 1], "session.deleted");
        v1_engine_unwatch(w5);
        CHECK_EQ_INT(atomic_load(&c5.closed), 1);
        CHECK(!atomic_load(&c5.cut));

        /* shutdown ends a watch, also one a pump holds */
        const char *sid2 = "sesn_watchtest2";
        session_new(st, sid2);
        update(g, sid2, 1);
        update(g, sid2, 2);
        consumer c6, c7;
        c_init(&c6);
        c_init(&c7);
        c7.refuse_at = 1;
        CHECK_EQ_INT(v1_engine_watch(g, sid2, &ops, &c6, &all, NULL, NULL, NULL, &err), 0);
        CHECK_EQ_INT(v1_engine_watch(g, sid2, &ops, &c7, &all, NULL, NULL, NULL, &err), 0);
        v1_engine_shutdown(g, 2000);
        CHECK_EQ_INT(atomic_load(&c6.closed), 1);
        CHECK_EQ_INT(atomic_load(&c7.closed), 1);
        CHECK_EQ_INT(c_count(&c7), 0);
        /* while it stops: a new engine-owned watch ends at once */
        consumer c8;
        c_init(&c8);
        (void) v1_engine_watch(g, sid2, &ops, &c8, &all, NULL, NULL, NULL, &err);
        CHECK_EQ_INT(atomic_load(&c8.closed), 1);
        CHECK_EQ_INT(c_count(&c8), 0);

        v1_engine_free(g);
        store_close(st);
        char cmd[sizeof(dir) + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", dir);
        return test_done();
}
