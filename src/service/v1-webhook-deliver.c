/* v1-webhook-deliver.c: hull serve's delivery worker (v1-webhook.h). WEBHOOK_WORKERS threads, each
 * claiming one due delivery at a time from the store's outbox (so at most that many are in
 * flight), sending it and settling it: delivered (2xx) and gone; a redirect disables the
 * endpoint (a receiver that moved must be told so by its owner, not followed: the new place was
 * never admitted by the egress guard); anything else is tried again after
 * WEBHOOK_RETRY_BASE_MS * 2^attempts (capped, +-25% jitter) until WEBHOOK_ATTEMPTS_MAX, and
 * WEBHOOK_FAILURES_DISABLE failures in a row lasting WEBHOOK_FAILING_DISABLE_MS disable it.
 *
 * Every store call of these threads goes through the gate (at most WEBHOOK_STORE_CALLS of them in
 * the store at once): on PostgreSQL each call holds one of the node's pooled connections while it
 * runs, and a claim or a settle waits with it while webhook_deliveries is locked or slow; the
 * gate leaves the rest of the pool to the node's requests. The HTTP attempt runs outside it. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "egress.h"
#include "http-client.h"
#include "macro.h"
#include "store-webhook.h"
#include "svc-agent.h"
#include "time-util.h"
#include "v1-webhook.h"
#include "webhook-sign.h"

struct v1_webhooks {
        store *store;
        const settings *st;
        const dlog *log;
        pthread_mutex_t lock; /* stopping, wakes (taken by the requests' enqueues: never across a store call) */
        pthread_cond_t cond;
        pthread_mutex_t record_lock; /* a subscription's read-modify-write (record) between the threads */
        sem_t gate;                  /* WEBHOOK_STORE_CALLS: the threads' store calls at once */
        bool stopping;
        uint64_t wakes; /* enqueues seen: a thread that found nothing waits for the next */
        pthread_t threads[WEBHOOK_WORKERS];
        size_t n_threads;
};

static void wake(void *ud) {
        v1_webhooks *w = ud;
        pthread_mutex_lock(&w->lock);
        w->wakes++;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

/* The store, as the threads call it: each call through the gate. */
static void gate_take(v1_webhooks *w) {
        while (sem_wait(&w->gate) < 0 && errno == EINTR)
                ;
}

static void gate_give(v1_webhooks *w) {
        sem_post(&w->gate);
}

static int sub_get(v1_webhooks *w, const char *id, json_t **ret, char **ret_sealed, hull_error *e) {
        gate_take(w);
        int r = store_webhook_get(w->store, id, ret, ret_sealed, e);
        gate_give(w);
        return r;
}

static int sub_put(v1_webhooks *w, const json_t *obj, hull_error *e) {
        gate_take(w);
        int r = store_webhook_put(w->store, false, obj, 0, NULL, NULL, e);
        gate_give(w);
        return r;
}

static int outbox_claim(v1_webhooks *w, json_t **ret, hull_error *e) {
        int64_t now = (int64_t) now_unix_ms();
        gate_take(w);
        int r = store_webhook_claim(w->store, now, now + WEBHOOK_CLAIM_MS, 1, ret, e);
        gate_give(w);
        return r;
}

static int outbox_settle(v1_webhooks *w, const char *ev, const char *wh, int64_t due_ms, int64_t attempts,
                         hull_error *e) {
        gate_take(w);
        int r = store_webhook_settle(w->store, ev, wh, due_ms, attempts, e);
        gate_give(w);
        return r;
}

/* The delay before attempt n + 1 (n >= 1 attempts made): base * 2^(n-1), capped, +-25%. */
static uint64_t backoff_ms(int64_t n) {
        uint64_t d = WEBHOOK_RETRY_BASE_MS;
        for (int64_t i = 1; i < n && d < WEBHOOK_RETRY_CAP_MS; i++)
                d *= 2;
        if (d > WEBHOOK_RETRY_CAP_MS)
                d = WEBHOOK_RETRY_CAP_MS;
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                rnd = (uint32_t) now_mono_us();
        return d * 3 / 4 + (uint64_t) rnd % (d / 2 + 1);
}

/* One attempt's outcome. */
typedef enum outcome { DELIVERED, FAILED, REDIRECTED, GONE } outcome;

/* The subscription's record of an attempt: its failures in a row, and disabled with why. */
static void record(v1_webhooks *w, const char *id, outcome o, const char *why) {
        pthread_mutex_lock(&w->record_lock);
        hull_error e = {0};
        json_auto_t *cur = NULL;
        if (sub_get(w, id, &cur, NULL, &e) < 0) {
                pthread_mutex_unlock(&w->record_lock);
                return;
        }
        json_int_t fails = json_integer_value(json_object_get(cur, "consecutive_failures"));
        const char *since = json_string_value(json_object_get(cur, "failing_since"));
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        bool changed = false, disable = false;
        if (o == DELIVERED && fails > 0) {
                json_object_set_new(cur, "consecutive_failures", json_integer(0));
                json_object_set_new(cur, "failing_since", json_null());
                changed = true;
        } else if (o == FAILED || o == REDIRECTED) {
                json_object_set_new(cur, "consecutive_failures", json_integer(fails + 1));
                if (!since)
                        json_object_set_new(cur, "failing_since", json_string(now));
                int64_t since_ms = json_integer_value(json_object_get(cur, "failing_since_ms"));
                if (!since) {
                        since_ms = (int64_t) now_unix_ms();
                        json_object_set_new(cur, "failing_since_ms", json_integer(since_ms));
                }
                disable =
                        o == REDIRECTED || ((unsigned) fails + 1 >= WEBHOOK_FAILURES_DISABLE &&
                                            (int64_t) now_unix_ms() - since_ms >= (int64_t) WEBHOOK_FAILING_DISABLE_MS);
                changed = true;
        }
        if (o == DELIVERED && json_object_get(cur, "failing_since_ms")) {
                json_object_del(cur, "failing_since_ms");
                changed = true;
        }
        if (disable && strcmp(json_string_value(json_object_get(cur, "status")) ?: "", "enabled") == 0) {
                json_object_set_new(cur, "status", json_string("disabled"));
                json_object_set_new(cur, "disabled_reason", json_string(why));
                json_object_set_new(cur, "updated_at", json_string(now));
                dlog_log(w->log, DLOG_WARN, "event=webhook_disabled webhook=%s reason=\"%s\"", id, why);
        }
        if (changed && sub_put(w, cur, &e) < 0)
                dlog_log(w->log, DLOG_WARN, "event=webhook_record_failed webhook=%s error=\"%s\"", id, e.msg);
        pthread_mutex_unlock(&w->record_lock);
}

/* The signatures header: the current secret's, and the previous one's while it still signs. */
static int signatures(const v1_webhook_secrets *sec, const char *msg_id, int64_t ts, const char *body,
                      char ret[static 2 * WEBHOOK_SIG_MAX + 32], hull_error *e) {
        char a[WEBHOOK_SIG_MAX], b[WEBHOOK_SIG_MAX];
        int r = webhook_sign(sec->secret, msg_id, ts, body, strlen(body), a, e);
        if (r < 0)
                return r;
        if (sec->previous[0] && sec->previous_until_ms > (int64_t) now_unix_ms() &&
            webhook_sign(sec->previous, msg_id, ts, body, strlen(body), b, e) >= 0)
                snprintf(ret, 2 * WEBHOOK_SIG_MAX + 32, "webhook-signature: %s %s", a, b);
        else
                snprintf(ret, 2 * WEBHOOK_SIG_MAX + 32, "webhook-signature: %s", a);
        return 0;
}

/* Send one delivery; *why: what went wrong (for the log and a disabled endpoint's reason). */
static outcome attempt(v1_webhooks *w, const char *event_id, const char *webhook_id, const char *body, char *why,
                       size_t why_size) {
        hull_error e = {0};
        json_auto_t *sub = NULL;
        _cleanup_free_ char *sealed = NULL;
        if (sub_get(w, webhook_id, &sub, &sealed, &e) < 0)
                return GONE;
        const char *url = json_string_value(json_object_get(sub, "url"));
        v1_webhook_secrets sec = {0};
        _cleanup_(egress_target_done) egress_target t = {0};
        char pin[EGRESS_PIN_MAX], sig[2 * WEBHOOK_SIG_MAX + 32], idh[STORE_ID_MAX + 16], tsh[48];
        int64_t ts = (int64_t) (now_unix_ms() / 1000);
        int r = url ? v1_webhook_secrets_open(webhook_id, sealed, &sec, &e) : -EBADMSG;
        if (r >= 0)
                r = signatures(&sec, event_id, ts, body, sig, &e);
        explicit_bzero(&sec, sizeof(sec));
        if (r >= 0)
                r = svc_egress_check(w->st, "webhook url", url, WEBHOOK_CONNECT_TIMEOUT_MS, &t, &e);
        if (r >= 0 && !t.literal && egress_target_pin(&t, pin) < 0)
                r = hull_err(&e, -ENAMETOOLONG, "webhook url: the host name is too long");
        if (r < 0) {
                snprintf(why, why_size, "%s", e.msg);
                return FAILED;
        }
        snprintf(idh, sizeof(idh), "webhook-id: %s", event_id);
        snprintf(tsh, sizeof(tsh), "webhook-timestamp: %" PRId64, ts);
        const char *headers[] = {"content-type: application/json", "user-agent: hull-webhooks", idh, tsh, sig, NULL};
        const char *resolve[] = {t.literal ? NULL : pin, NULL};
        _cleanup_httpc_ httpc *c = NULL;
        httpc_answer a = {0};
        httpc_request req = {.url = t.url,
                             .headers = headers,
                             .body = body,
                             .body_len = strlen(body),
                             .connect_timeout_ms = WEBHOOK_CONNECT_TIMEOUT_MS,
                             .timeout_ms = WEBHOOK_TIMEOUT_MS,
                             .answer_max = WEBHOOK_ANSWER_MAX,
                             .answer_truncate = true,
                             .capture_header = "location",
                             .resolve = t.literal ? NULL : resolve};
        if ((r = httpc_new(&c, &e)) < 0 || (r = httpc_post(c, &req, &a, &e)) < 0) {
                snprintf(why, why_size, "%s", e.msg);
                return FAILED;
        }
        long st = a.status;
        if (st >= 300 && st < 400)
                snprintf(why, why_size,
                         "the endpoint answered %ld (a redirect%s%.200s): webhooks do not follow one; "
                         "update the webhook's url and set its status to enabled",
                         st, a.captured[0] ? " to " : "", a.captured);
        else if (st < 200 || st >= 300)
                snprintf(why, why_size, "the endpoint answered %ld", st);
        httpc_answer_done(&a);
        return st >= 200 && st < 300 ? DELIVERED : st >= 300 && st < 400 ? REDIRECTED : FAILED;
}

static void deliver(v1_webhooks *w, const json_t *d) {
        const char *ev = json_string_value(json_object_get(d, "event_id"));
        const char *wh = json_string_value(json_object_get(d, "webhook_id"));
        const char *body = json_string_value(json_object_get(d, "body"));
        int64_t attempts = json_integer_value(json_object_get(d, "attempts")) + 1;
        char why[HULL_ERROR_MSG_MAX] = "";
        uint64_t t0 = now_mono_ms();
        outcome o = attempt(w, ev, wh, body, why, sizeof(why));
        hull_error e = {0};
        int r = 0;
        if (o == DELIVERED || o == GONE) {
                r = outbox_settle(w, ev, wh, -1, attempts, &e);
                dlog_log(w->log, DLOG_INFO,
                         "event=webhook_delivered webhook=%s id=%s attempt=%" PRId64 " ms=%" PRIu64 "%s", wh, ev,
                         attempts, now_mono_ms() - t0, o == GONE ? " gone=yes" : "");
        } else if (attempts >= WEBHOOK_ATTEMPTS_MAX) {
                r = outbox_settle(w, ev, wh, -1, attempts, &e);
                dlog_log(w->log, DLOG_WARN, "event=webhook_dropped webhook=%s id=%s attempts=%" PRId64 " error=\"%s\"",
                         wh, ev, attempts, why);
        } else {
                uint64_t delay = backoff_ms(attempts);
                r = outbox_settle(w, ev, wh, (int64_t) (now_unix_ms() + delay), attempts, &e);
                dlog_log(w->log, DLOG_INFO,
                         "event=webhook_retry webhook=%s id=%s attempt=%" PRId64 " next_ms=%" PRIu64 " error=\"%s\"",
                         wh, ev, attempts, delay, why);
        }
        if (r < 0 && r != -ENOENT)
                dlog_log(w->log, DLOG_WARN, "event=webhook_settle_failed webhook=%s id=%s error=\"%s\"", wh, ev, e.msg);
        if (o != GONE)
                record(w, wh, o, why);
}

static void *worker_main(void *ud) {
        v1_webhooks *w = ud;
        for (;;) {
                pthread_mutex_lock(&w->lock);
                uint64_t seen = w->wakes;
                bool stop = w->stopping;
                pthread_mutex_unlock(&w->lock);
                if (stop)
                        return NULL;
                json_auto_t *got = NULL;
                hull_error e = {0};
                if (outbox_claim(w, &got, &e) < 0)
                        dlog_log(w->log, DLOG_WARN, "event=webhook_claim_failed error=\"%s\"", e.msg);
                if (json_array_size(got) > 0) {
                        deliver(w, json_array_get(got, 0));
                        continue;
                }
                /* nothing due: wait for an enqueue, a stop, or the next look (a retry falls due) */
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += WEBHOOK_POLL_MS / 1000;
                ts.tv_nsec += (long) (WEBHOOK_POLL_MS % 1000) * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                pthread_mutex_lock(&w->lock);
                while (!w->stopping && w->wakes == seen)
                        if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) == ETIMEDOUT)
                                break;
                pthread_mutex_unlock(&w->lock);
        }
}

int v1_webhooks_start(store *s, const settings *st, const dlog *log, v1_webhooks **ret, hull_error *e) {
        v1_webhooks *w = calloc(1, sizeof(*w));
        if (!w)
                return hull_err(e, -ENOMEM, "webhooks: out of memory");
        *w = (v1_webhooks){.store = s, .st = st, .log = log};
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        pthread_mutex_init(&w->record_lock, NULL);
        sem_init(&w->gate, 0, WEBHOOK_STORE_CALLS);
        store_webhook_set_wake(s, wake, w);
        for (size_t i = 0; i < WEBHOOK_WORKERS; i++) {
                if (pthread_create(&w->threads[i], NULL, worker_main, w) != 0) {
                        v1_webhooks_stop(w);
                        return hull_err(e, -EAGAIN, "webhooks: cannot start a delivery thread");
                }
                w->n_threads++;
        }
        *ret = w;
        return 0;
}

void v1_webhooks_stop(v1_webhooks *w) {
        if (!w)
                return;
        store_webhook_set_wake(w->store, NULL, NULL);
        pthread_mutex_lock(&w->lock);
        w->stopping = true;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        /* a delivery in flight ends within WEBHOOK_TIMEOUT_MS (< WEBHOOK_STOP_WAIT_MS) */
        for (size_t i = 0; i < w->n_threads; i++)
                pthread_join(w->threads[i], NULL);
        sem_destroy(&w->gate);
        pthread_mutex_destroy(&w->record_lock);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
}
