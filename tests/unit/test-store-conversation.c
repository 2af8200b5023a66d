/* test-store-conversation.c: a session's conversation kept as its last full text and the parts
 * later turns appended (store_conversation_append_text), on SQLite and, when HULL_TEST_PG_URL is
 * set (tests/unit/test-store-pg.sh), PostgreSQL: read back joined, in order; a full text written
 * again (an older message changed in place; the node's turn end with it) drops the parts; an
 * append needs a kept conversation and a tail that continues an array; a session's delete takes
 * the parts too; a node's turn end keeps the conversation whole; a copy (hull db copy) takes the
 * parts along. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "store-testlib.h"
#include "store.h"
#include "test.h"

/* Is the session's kept conversation want's text (a JSON array)? */
static bool kept_is(store *s, const char *sess, const char *want) {
        hull_error e = {0};
        json_t *got = NULL, *w = json_loads(want, 0, NULL);
        bool ok = store_conversation_get(s, sess, &got, &e) == 0 && got && w && json_equal(got, w);
        if (!ok) {
                char *t = got ? json_dumps(got, JSON_COMPACT) : NULL;
                printf("# got %s, want %s (%s)\n", t ? t : "nothing", want, e.msg);
                free(t);
        }
        json_decref(got);
        json_decref(w);
        return ok;
}

static int append(store *s, const char *sess, const char *tail, size_t total) {
        hull_error e = {0};
        return store_conversation_append_text(s, sess, tail, strlen(tail), total, &e);
}

static void run(store *s, const char *name) {
        printf("# %s\n", name);
        hull_error e = {0};
        json_t *sess = session_obj("sess_conv", 1, "idle", "agent_1", 1, false);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);

        /* nothing kept yet: an append is refused (the caller writes it whole) */
        CHECK_EQ_INT(append(s, "sess_conv", ",{\"n\":2}", 16), -ENOENT);
        CHECK_EQ_INT(append(s, "sess_none", ",{\"n\":2}", 16), -ENOENT);
        const char *t1 = "[{\"n\":1}]";
        CHECK_EQ_INT(store_conversation_put_text(s, "sess_conv", t1, strlen(t1), &e), 0);
        CHECK(kept_is(s, "sess_conv", "[{\"n\":1}]"));

        /* each turn's messages appended, read back in order */
        CHECK_EQ_INT(append(s, "sess_conv", ",{\"n\":2}", 17), 0);
        CHECK(kept_is(s, "sess_conv", "[{\"n\":1},{\"n\":2}]"));
        CHECK_EQ_INT(append(s, "sess_conv", ",{\"n\":3},{\"n\":\"\\u00e9]\"}", 40), 0);
        CHECK(kept_is(s, "sess_conv", "[{\"n\":1},{\"n\":2},{\"n\":3},{\"n\":\"\\u00e9]\"}]"));

        /* refused before the store: not a continuation, or past the bound */
        CHECK_EQ_INT(append(s, "sess_conv", "{\"n\":4}", 40), -EINVAL);
        CHECK_EQ_INT(append(s, "sess_conv", ",", 40), -EINVAL);
        CHECK_EQ_INT(append(s, "sess_conv", ",{\"n\":4}", (size_t) STORE_OBJECT_BYTES_MAX + 1), -E2BIG);
        CHECK(kept_is(s, "sess_conv", "[{\"n\":1},{\"n\":2},{\"n\":3},{\"n\":\"\\u00e9]\"}]"));

        /* an older message changed in place: written whole, the parts dropped */
        const char *t2 = "[{\"n\":\"one\"},{\"n\":2}]";
        CHECK_EQ_INT(store_conversation_put_text(s, "sess_conv", t2, strlen(t2), &e), 0);
        CHECK(kept_is(s, "sess_conv", t2));
        CHECK_EQ_INT(append(s, "sess_conv", ",{\"n\":3}", 30), 0);
        CHECK(kept_is(s, "sess_conv", "[{\"n\":\"one\"},{\"n\":2},{\"n\":3}]"));

        /* a session's delete takes its parts: the same id again starts empty */
        CHECK_EQ_INT(store_delete(s, STORE_SESSION, "sess_conv", &e), 0);
        json_t *got = NULL;
        CHECK_EQ_INT(store_conversation_get(s, "sess_conv", &got, &e), -ENOENT);
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        CHECK_EQ_INT(store_conversation_get(s, "sess_conv", &got, &e), 0);
        CHECK(got == NULL);
        CHECK_EQ_INT(store_conversation_put_text(s, "sess_conv", t1, strlen(t1), &e), 0);
        CHECK(kept_is(s, "sess_conv", t1));
        CHECK_EQ_INT(append(s, "sess_conv", ",{\"n\":2}", 17), 0);

        CHECK_EQ_INT(store_delete(s, STORE_SESSION, "sess_conv", &e), 0);

        /* hull db copy takes the parts along: a kept conversation with parts, copied */
        json_object_set_new(sess, "id", json_string("sess_copy"));
        CHECK_EQ_INT(store_insert(s, STORE_SESSION, sess, &e), 0);
        CHECK_EQ_INT(store_conversation_put_text(s, "sess_copy", t1, strlen(t1), &e), 0);
        CHECK_EQ_INT(append(s, "sess_copy", ",{\"n\":2}", 17), 0);
        char dir[] = "/tmp/test-store-conversation-copy.XXXXXX", path[96];
        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/copy.db", dir);
        store *to = NULL;
        CHECK_EQ_INT(store_open(path, &to, &e), 0);
        if (to) {
                CHECK_EQ_INT(store_copy(s, to, NULL, NULL, &e), 0);
                CHECK(kept_is(to, "sess_copy", "[{\"n\":1},{\"n\":2}]"));
                store_close(to);
        }
        static const char *const tails[] = {"", "-wal", "-shm"};
        for (size_t i = 0; i < ELEMENTSOF(tails); i++) {
                snprintf(path, sizeof(path), "%s/copy.db%s", dir, tails[i]);
                unlink(path);
        }
        rmdir(dir);
        CHECK_EQ_INT(store_delete(s, STORE_SESSION, "sess_copy", &e), 0);
        json_decref(sess);
}

int main(void) {
        char dir[] = "/tmp/test-store-conversation.XXXXXX", path[80];
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
