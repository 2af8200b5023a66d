/* test-store-webhook.c: outbound webhooks in the store (store-webhook.h) on SQLite and, when
 * HULL_TEST_PG_URL is set (tests/unit/test-store-pg.sh), PostgreSQL: subscriptions put, read,
 * listed newest first and deleted with their deliveries; an event queued only to the enabled
 * subscriptions that asked for its type (a type that is a prefix of another is not it); a claim
 * that takes due rows once until its claim ends, skips a disabled endpoint's, reschedules and
 * settles; and the Standard Webhooks signature's published test vector (webhook-sign.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "store-webhook.h"
#include "store.h"
#include "test.h"
#include "webhook-sign.h"

static json_t *sub(const char *id, const char *status, const char *t1, const char *t2) {
        return json_pack("{s:s, s:s, s:s, s:[s,s]}", "id", id, "type", "webhook", "status", status, "event_types", t1,
                         t2);
}

static void test_sign(void) {
        /* the vector of the Standard Webhooks reference libraries' tests */
        char sig[WEBHOOK_SIG_MAX];
        hull_error e = {0};
        const char *body = "{\"test\": 2432232314}";
        CHECK_EQ_INT(webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                                  body, strlen(body), sig, &e),
                     0);
        CHECK_EQ_STR(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        CHECK_EQ_INT(webhook_sign("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "m", 1, "x", 1, sig, &e), -EINVAL);
        CHECK_EQ_INT(webhook_sign("whsec_!!!", "m", 1, "x", 1, sig, &e), -EINVAL);
        char s1[WEBHOOK_SECRET_MAX], s2[WEBHOOK_SECRET_MAX];
        CHECK_EQ_INT(webhook_secret_new(s1, &e), 0);
        CHECK_EQ_INT(webhook_secret_new(s2, &e), 0);
        CHECK(strncmp(s1, "whsec_", 6) == 0 && strcmp(s1, s2) != 0 && strlen(s1) == 6 + 32);
        CHECK_EQ_INT(webhook_sign(s1, "m", 1, "x", 1, sig, &e), 0);
}

static void run(store *s, const char *what) {
        hull_error e = {0};
        printf("# %s\n", what);
        /* no subscription yet: nothing queued (SQLite: read, not written), and the ones made after
         * are not owed it (the 3 pending below) */
        size_t n0 = 9;
        CHECK_EQ_INT(store_webhook_enqueue(s, "session.created", "whe_0", NULL, 500, "{\"n\":0}", &n0, &e), 0);
        CHECK_EQ_INT((int) n0, 0);
        json_auto_t *a = sub("wh_a", "enabled", "session.created", "vault.created");
        json_auto_t *b = sub("wh_b", "enabled", "session.created_x", "agent.created");
        json_auto_t *c = sub("wh_c", "disabled", "session.created", "agent.created");
        CHECK_EQ_INT(store_webhook_put(s, true, a, 1000, "sealed-a", "k1", &e), 0);
        CHECK_EQ_INT(store_webhook_put(s, true, b, 2000, "sealed-b", "k1", &e), 0);
        CHECK_EQ_INT(store_webhook_put(s, true, c, 3000, "sealed-c", "k1", &e), 0);
        CHECK_EQ_INT(store_webhook_put(s, true, a, 1000, "sealed-a", "k1", &e), -EEXIST);
        json_auto_t *all = NULL;
        CHECK_EQ_INT(store_webhook_list(s, &all, &e), 0);
        CHECK_EQ_INT((int) json_array_size(all), 3);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(all, 0), "id")), "wh_c");
        json_auto_t *got = NULL;
        char *sealed = NULL;
        CHECK_EQ_INT(store_webhook_get(s, "wh_a", &got, &sealed, &e), 0);
        CHECK_EQ_STR(sealed, "sealed-a");
        free(sealed);
        CHECK_EQ_INT(store_webhook_get(s, "wh_zz", &got, NULL, &e), -ENOENT);

        /* session.created goes to wh_a only: wh_b wants another type, wh_c is disabled */
        size_t n = 0;
        CHECK_EQ_INT(store_webhook_enqueue(s, "session.created", "whe_1", NULL, 5000, "{\"n\":1}", &n, &e), 0);
        CHECK_EQ_INT((int) n, 1);
        CHECK_EQ_INT(store_webhook_enqueue(s, "agent.created", "whe_2", NULL, 5000, "{\"n\":2}", &n, &e), 0);
        CHECK_EQ_INT((int) n, 1);
        CHECK_EQ_INT(store_webhook_enqueue(s, "vault.deleted", "whe_3", NULL, 5000, "{}", &n, &e), 0);
        CHECK_EQ_INT((int) n, 0);
        CHECK_EQ_INT(store_webhook_enqueue(s, "vault.deleted", "whe_4", "wh_c", 5000, "{\"n\":4}", &n, &e), 0);
        CHECK_EQ_INT((int) n, 1); /* a test delivery, to a disabled one too */
        int64_t pending = 0;
        CHECK_EQ_INT(store_webhook_pending(s, NULL, &pending, &e), 0);
        CHECK_EQ_INT((int) pending, 3);

        /* claims: due rows of enabled endpoints, once until the claim ends */
        json_auto_t *cl = NULL;
        CHECK_EQ_INT(store_webhook_claim(s, 4000, 9000, 10, &cl, &e), 0);
        CHECK_EQ_INT((int) json_array_size(cl), 0); /* not due yet */
        json_decref(cl);
        CHECK_EQ_INT(store_webhook_claim(s, 6000, 9000, 1, &cl, &e), 0);
        CHECK_EQ_INT((int) json_array_size(cl), 1);
        json_decref(cl);
        CHECK_EQ_INT(store_webhook_claim(s, 6000, 9000, 10, &cl, &e), 0);
        CHECK_EQ_INT((int) json_array_size(cl), 1); /* the other one; wh_c's stays */
        json_decref(cl);
        CHECK_EQ_INT(store_webhook_claim(s, 8000, 9000, 10, &cl, &e), 0);
        CHECK_EQ_INT((int) json_array_size(cl), 0);
        json_decref(cl);
        CHECK_EQ_INT(store_webhook_claim(s, 9000, 20000, 10, &cl, &e), 0);
        CHECK_EQ_INT((int) json_array_size(cl), 2); /* their claims ended */
        char ev[STORE_ID_MAX], wh[STORE_ID_MAX];
        snprintf(ev, sizeof(ev), "%s", json_string_value(json_object_get(json_array_get(cl, 0), "event_id")));
        snprintf(wh, sizeof(wh), "%s", json_string_value(json_object_get(json_array_get(cl, 0), "webhook_id")));
        CHECK_EQ_INT(store_webhook_settle(s, ev, wh, 30000, 1, &e), 0); /* tried once, again at 30000 */
        CHECK_EQ_INT(store_webhook_settle(s, json_string_value(json_object_get(json_array_get(cl, 1), "event_id")),
                                          json_string_value(json_object_get(json_array_get(cl, 1), "webhook_id")), -1,
                                          1, &e),
                     0); /* delivered */
        CHECK_EQ_INT(store_webhook_settle(s, "whe_none", wh, -1, 1, &e), -ENOENT);
        json_decref(cl);
        CHECK_EQ_INT(store_webhook_claim(s, 30000, 40000, 10, &cl, &e), 0);
        CHECK_EQ_INT((int) json_array_size(cl), 1);
        CHECK_EQ_INT((int) json_integer_value(json_object_get(json_array_get(cl, 0), "attempts")), 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(cl, 0), "event_id")), ev);
        CHECK_EQ_INT(store_webhook_settle(s, ev, wh, -1, 2, &e), 0);

        /* re-enabled: its delivery is taken; deleted: its deliveries go */
        json_object_set_new(c, "status", json_string("enabled"));
        CHECK_EQ_INT(store_webhook_put(s, false, c, 0, NULL, NULL, &e), 0);
        json_decref(cl);
        CHECK_EQ_INT(store_webhook_claim(s, 50000, 60000, 10, &cl, &e), 0);
        CHECK_EQ_INT((int) json_array_size(cl), 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(cl, 0), "webhook_id")), "wh_c");
        CHECK_EQ_INT(store_webhook_delete(s, "wh_c", &e), 0);
        CHECK_EQ_INT(store_webhook_delete(s, "wh_c", &e), -ENOENT);
        CHECK_EQ_INT(store_webhook_get(s, "wh_c", NULL, &sealed, &e), -ENOENT);
        CHECK_EQ_INT(store_webhook_delete(s, "wh_a", &e), 0);
        CHECK_EQ_INT(store_webhook_delete(s, "wh_b", &e), 0);
        CHECK_EQ_INT(store_webhook_pending(s, NULL, &pending, &e), 0);
        CHECK_EQ_INT((int) pending, 0);
}

int main(void) {
        char dir[] = "/tmp/test-store-webhook.XXXXXX", path[80];
        hull_error e = {0};
        store *s = NULL;
        test_sign();
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
