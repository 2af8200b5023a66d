/* test-store-cost.c: what the store's hot paths cost, counted (not timed), so a cost that comes
 * back fails here: a turn's SQLite statements compiled once and kept (store_prepares), its events
 * and the session's update in one transaction (store_events_append_object). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlib-sqlite3.h"
#include "fs-util.h"
#include "store-testlib.h"
#include "store-webhook.h"
#include "store.h"
#include "test.h"

/* A turn's statements (its events appended and marked processed, the session's update, the
 * conversation kept, its statuses queued for webhooks, each write in its transaction) are compiled once per store and
 * kept: after a first turn, more turns compile nothing, while a statement not kept still counts (SQLite: its backend
 * counts; PostgreSQL prepares once per connection and test-store-node counts that). */
static void test_turn_prepares(store *s) {
        hull_error e = {0};
        json_t *sess = session_obj("sess_prep", 1, "idle", "agent_1", 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        uint64_t before = 0;
        for (int turn = 0; turn < 4; turn++) {
                if (turn == 1)
                        before = store_prepares(s);
                char id[32];
                snprintf(id, sizeof(id), "sevt_prep_%d", turn);
                json_t *ev = event_obj(id, "agent.message", NULL);
                json_t *conv = json_pack("[{s:s, s:s}]", "role", "user", "content", id);
                CHECK_EQ_INT(store_events_append(s, "sess_prep", &ev, 1, NULL, &e), 0);
                CHECK_EQ_INT(store_events_set_processed(s, "sess_prep", id, "2026-01-01T00:00:01Z", &e), 0);
                json_object_set_new(sess, "status", json_string(turn % 2 ? "idle" : "running"));
                CHECK_EQ_INT(store_update(s, STORE_SESSION, sess, &e), 0);
                CHECK_EQ_INT(store_conversation_put(s, "sess_prep", conv, &e), 0);
                /* its statuses to the webhooks that want them (none here: nothing queued) */
                size_t queued = 1;
                snprintf(id, sizeof(id), "whe_prep_%d", turn);
                CHECK_EQ_INT(store_webhook_enqueue(s, "session.status_idle", id, NULL, 1, "{}", &queued, &e), 0);
                CHECK_EQ_INT(queued, 0);
                json_decref(ev);
                json_decref(conv);
        }
        CHECK_EQ_INT(store_prepares(s) - before, 0);
        int64_t seq = 0;
        CHECK_EQ_INT(store_events_seq_of(s, "sess_prep", "sevt_prep_2", &seq, &e), 0);
        CHECK_EQ_INT(store_prepares(s) - before, 1); /* one not kept: counted */
        json_decref(sess);
}

/* The conversation kept from its text as the agent keeps it (store_conversation_put_text): read
 * back as the messages; anything but an array's text refused before the store. */
static void test_conversation_text(store *s) {
        hull_error e = {0};
        json_t *conv = json_pack("[{s:s, s:s}, {s:s, s:[{s:s, s:s}]}]", "role", "user", "content", "h\u00e9", "role",
                                 "assistant", "content", "type", "text", "text", "hi"),
               *got = NULL;
        char *text = json_dumps(conv, JSON_COMPACT);
        uint64_t before = store_prepares(s);
        CHECK_EQ_INT(store_conversation_put_text(s, "sess_prep", text, strlen(text), &e), 0);
        CHECK_EQ_INT(store_prepares(s) - before, 0); /* the statement store_conversation_put keeps */
        CHECK_EQ_INT(store_conversation_get(s, "sess_prep", &got, &e), 0);
        CHECK(got && json_equal(got, conv));
        CHECK_EQ_INT(store_conversation_put_text(s, "sess_prep", "{}", 2, &e), -EINVAL);
        CHECK_EQ_INT(store_conversation_put_text(s, "sess_prep", text, strlen(text) - 1, &e), -EINVAL);
        CHECK_EQ_INT(store_conversation_put_text(s, "sess_prep", NULL, 0, &e), -EINVAL);
        CHECK_EQ_INT(store_conversation_put_text(s, "sess_none", text, strlen(text), &e), -ENOENT);
        json_decref(got);
        free(text);
        json_decref(conv);
}

/* The events and the session object in one transaction: both written, with kept statements;
 * nothing written when the session is not there or the object is another's. */
static void test_append_object(store *s) {
        hull_error e = {0};
        json_t *sess = session_obj("sess_obj", 1, "idle", "agent_1", 1, false), *got = NULL;
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        json_t *evs[2] = {event_obj("sevt_obj_1", "session.status_running", "2026-01-01T00:00:01Z"),
                          event_obj("sevt_obj_2", "span.model_request_start", "2026-01-01T00:00:01Z")};
        json_object_set_new(sess, "status", json_string("running"));
        int64_t first = 0, seq = 0;
        CHECK_EQ_INT(store_events_append_object(s, "sess_obj", evs, 2, sess, NULL, NULL, &first, &e), 0);
        CHECK_EQ_INT(first, 1);
        uint64_t before = store_prepares(s);
        json_t *more[1] = {event_obj("sevt_obj_3", "session.status_idle", "2026-01-01T00:00:02Z")};
        json_object_set_new(sess, "status", json_string("idle"));
        CHECK_EQ_INT(store_events_append_object(s, "sess_obj", more, 1, sess, NULL, NULL, &first, &e), 0);
        CHECK_EQ_INT(first, 3);
        CHECK_EQ_INT(store_prepares(s) - before, 0); /* the append's and the update's, kept */
        CHECK_EQ_INT(store_get(s, STORE_SESSION, "sess_obj", 0, &got, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(got, "status")), "idle");
        CHECK_EQ_INT(store_events_seq_of(s, "sess_obj", "sevt_obj_2", &seq, &e), 0);
        CHECK_EQ_INT(seq, 2);
        json_decref(got);
        got = NULL;
        /* nothing written: no such session; an object that is another session's */
        json_t *late[1] = {event_obj("sevt_obj_4", "agent.message", "2026-01-01T00:00:03Z")};
        json_t *other = session_obj("sess_none", 1, "running", "agent_1", 1, false);
        CHECK_EQ_INT(store_events_append_object(s, "sess_none", late, 1, other, NULL, NULL, &first, &e), -ENOENT);
        CHECK_EQ_INT(store_events_append_object(s, "sess_obj", late, 1, other, NULL, NULL, &first, &e), -EINVAL);
        CHECK_EQ_INT(store_events_seq_of(s, "sess_obj", "sevt_obj_4", &seq, &e), -ENOENT);
        CHECK_EQ_INT(store_get(s, STORE_SESSION, "sess_obj", 0, &got, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(got, "status")), "idle");
        json_decref(got);
        json_decref(other);
        json_decref(late[0]);
        json_decref(more[0]);
        json_decref(evs[0]);
        json_decref(evs[1]);
        json_decref(sess);
}

/* A conversation written in an append's own transaction: the whole text, then a tail added to it;
 * a tail with nothing kept to add to, or a text that is not an array, is not written, and the
 * events are appended all the same; a failed append writes neither. */
static void test_append_conversation(store *s) {
        hull_error e = {0};
        json_t *sess = session_obj("sess_conv", 1, "running", "agent_1", 1, false), *got = NULL;
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        int64_t first = 0, seq = 0;
        /* a tail, but nothing kept yet: the events go in, the conversation is not written */
        static const char tail[] = ",{\"role\":\"assistant\",\"content\":\"b\"}";
        static const char whole[] = "[{\"role\":\"user\",\"content\":\"a\"}]";
        static const char joined[] =
                "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}]";
        store_conv_write w = {.text = tail, .len = strlen(tail), .total_len = strlen(joined), .append = true};
        json_t *a[1] = {event_obj("sevt_conv_1", "agent.message", "2026-01-01T00:00:01Z")};
        CHECK_EQ_INT(store_events_append_object(s, "sess_conv", a, 1, NULL, &w, NULL, &first, &e), 0);
        CHECK_EQ_INT(w.result, -ENOENT);
        CHECK_EQ_INT(store_events_seq_of(s, "sess_conv", "sevt_conv_1", &seq, &e), 0);
        CHECK_EQ_INT(store_conversation_get(s, "sess_conv", &got, &e), 0);
        CHECK(got == NULL);
        /* the whole text with the idle and the session object: one transaction, no new statement */
        json_object_set_new(sess, "status", json_string("idle"));
        w = (store_conv_write){.text = whole, .len = strlen(whole), .total_len = strlen(whole)};
        json_t *b[1] = {event_obj("sevt_conv_2", "session.status_idle", "2026-01-01T00:00:02Z")};
        CHECK_EQ_INT(store_events_append_object(s, "sess_conv", b, 1, sess, &w, NULL, &first, &e), 0);
        CHECK_EQ_INT(w.result, 0);
        CHECK_EQ_INT(store_conversation_get(s, "sess_conv", &got, &e), 0);
        json_t *want = json_loads(whole, 0, NULL);
        CHECK(got && json_equal(got, want));
        json_decref(got);
        json_decref(want);
        /* then the tail added */
        uint64_t before = store_prepares(s);
        w = (store_conv_write){.text = tail, .len = strlen(tail), .total_len = strlen(joined), .append = true};
        json_t *c[1] = {event_obj("sevt_conv_3", "session.status_idle", "2026-01-01T00:00:03Z")};
        CHECK_EQ_INT(store_events_append_object(s, "sess_conv", c, 1, NULL, &w, NULL, &first, &e), 0);
        CHECK_EQ_INT(w.result, 0);
        CHECK_EQ_INT(store_prepares(s) - before, 0); /* the kept statements */
        CHECK_EQ_INT(store_conversation_get(s, "sess_conv", &got, &e), 0);
        want = json_loads(joined, 0, NULL);
        CHECK(got && json_equal(got, want));
        json_decref(got);
        json_decref(want);
        /* not an array's text: refused before the transaction, the events appended */
        w = (store_conv_write){.text = "{}", .len = 2, .total_len = 2};
        json_t *d[1] = {event_obj("sevt_conv_4", "agent.message", "2026-01-01T00:00:04Z")};
        CHECK_EQ_INT(store_events_append_object(s, "sess_conv", d, 1, NULL, &w, NULL, &first, &e), 0);
        CHECK_EQ_INT(w.result, -EINVAL);
        CHECK_EQ_INT(store_events_seq_of(s, "sess_conv", "sevt_conv_4", &seq, &e), 0);
        /* a failed append (an id taken) writes neither, and says so */
        w = (store_conv_write){.text = whole, .len = strlen(whole), .total_len = strlen(whole)};
        CHECK_EQ_INT(store_events_append_object(s, "sess_conv", d, 1, NULL, &w, NULL, &first, &e), -EEXIST);
        CHECK_EQ_INT(w.result, -ECANCELED);
        CHECK_EQ_INT(store_conversation_get(s, "sess_conv", &got, &e), 0);
        want = json_loads(joined, 0, NULL);
        CHECK(got && json_equal(got, want));
        json_decref(got);
        json_decref(want);
        json_decref(a[0]);
        json_decref(b[0]);
        json_decref(c[0]);
        json_decref(d[0]);
        json_decref(sess);
}

int main(void) {
        hull_error e = {0};
        if (!dlib_sqlite3_load(&e)) {
                printf("skip - sqlite: %s\n", e.msg);
                return 77;
        }
        char dir[] = "/tmp/hull-test-store-cost-XXXXXX", path[64];
        if (!mkdtemp(dir))
                return 1;
        snprintf(path, sizeof(path), "%s/hull.db", dir);
        store *s = NULL;
        CHECK_EQ_INT(store_open(path, &s, &e), 0);
        if (s) {
                test_turn_prepares(s);
                test_conversation_text(s);
                test_append_object(s);
                test_append_conversation(s);
                store_close(s);
        }
        rm_rf_at(AT_FDCWD, dir);
        return test_done();
}
