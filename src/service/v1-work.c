/* v1-work.c: see v1-work.h. Each change of an item is a compare-and-set on its row's version
 * (store_work_update), retried a few times when another poller or node changed it first; a
 * lease that ended is noticed by whoever looks next (store_work_expire before each call). */
#include "v1-work.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "macro.h"
#include "parse-util.h"
#include "sha256.h"
#include "store-work.h"
#include "time-util.h"

#define CAS_TRIES 8
#define NO_HEARTBEAT "NO_HEARTBEAT"

/* ---- the worker ids seen polling ---- */

struct v1_work_pollers {
        pthread_mutex_t lock;
        struct {
                char env[STORE_ID_MAX], worker[WORK_WORKER_ID_MAX];
                uint64_t ms;
        } seen[WORK_POLLERS_MAX];
};

int v1_work_pollers_new(v1_work_pollers **ret) {
        v1_work_pollers *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        pthread_mutex_init(&p->lock, NULL);
        *ret = p;
        return 0;
}

void v1_work_pollers_free(v1_work_pollers *p) {
        if (!p)
                return;
        pthread_mutex_destroy(&p->lock);
        free(p);
}

static void pollers_note(v1_work_pollers *p, const char *env, const char *worker, uint64_t now) {
        if (!p || !worker || !worker[0])
                return;
        pthread_mutex_lock(&p->lock);
        size_t slot = 0;
        for (size_t i = 0; i < WORK_POLLERS_MAX; i++) {
                if (strcmp(p->seen[i].env, env) == 0 && strcmp(p->seen[i].worker, worker) == 0) {
                        slot = i;
                        break;
                }
                if (p->seen[i].ms < p->seen[slot].ms) /* the oldest (or an empty one) gives way */
                        slot = i;
        }
        snprintf(p->seen[slot].env, sizeof(p->seen[slot].env), "%s", env);
        snprintf(p->seen[slot].worker, sizeof(p->seen[slot].worker), "%s", worker);
        p->seen[slot].ms = now;
        pthread_mutex_unlock(&p->lock);
}

static int64_t pollers_count(v1_work_pollers *p, const char *env, uint64_t now) {
        int64_t n = 0;
        if (!p)
                return 0;
        pthread_mutex_lock(&p->lock);
        for (size_t i = 0; i < WORK_POLLERS_MAX; i++)
                n += p->seen[i].ms && p->seen[i].ms + WORK_POLLERS_WINDOW_MS >= now && strcmp(p->seen[i].env, env) == 0;
        pthread_mutex_unlock(&p->lock);
        return n;
}

/* ---- shapes ---- */

static json_t *time_or_null(int64_t ms) {
        if (ms <= 0)
                return json_null();
        time_t t = (time_t) (ms / 1000);
        struct tm tm;
        char buf[STORE_TIME_MAX];
        if (!gmtime_r(&t, &tm))
                return json_null();
        size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, sizeof(buf) - n, ".%03dZ", (int) (ms % 1000));
        return json_string(buf);
}

static int64_t body_ms(const store_work *w, const char *key) {
        return json_integer_value(json_object_get(w->body, key));
}

static void set_ms(store_work *w, const char *key, int64_t ms) {
        json_object_set_new(w->body, key, json_integer(ms));
}

static json_t *work_json(const store_work *w, const char *secret) {
        json_t *md = json_object_get(w->body, "metadata");
        json_t *o = json_pack("{s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:O, s:s?}", "id", w->id, "type", "work",
                              "environment_id", w->env_id, "data", "type", "session", "id", w->session_id, "state",
                              w->state, "metadata", json_is_object(md) ? md : json_object(), "secret", secret);
        if (!o)
                return NULL;
        if (!secret)
                json_object_set_new(o, "secret", json_null());
        json_object_set_new(o, "created_at", time_or_null(w->created_ms));
        json_object_set_new(o, "acknowledged_at", time_or_null(body_ms(w, "acknowledged_ms")));
        json_object_set_new(o, "started_at", time_or_null(body_ms(w, "started_ms")));
        json_object_set_new(o, "latest_heartbeat_at", time_or_null(body_ms(w, "heartbeat_ms")));
        json_object_set_new(o, "stop_requested_at", time_or_null(body_ms(w, "stop_requested_ms")));
        json_object_set_new(o, "stopped_at", time_or_null(body_ms(w, "stopped_ms")));
        return o;
}

static int oom(v1_err *err) {
        return v1_fail(err, 500, "", "out of memory");
}

static int store_failed(v1_err *err, const hull_error *e) {
        return v1_fail(err, 500, "", "the work queue could not be read or written: %s", e->msg);
}

/* ---- environments and items ---- */

int v1_work_env(store *s, const char *env_id, v1_err *err) {
        json_auto_t *env = NULL;
        hull_error e = {0};
        int r = store_get(s, STORE_ENVIRONMENT, env_id, 0, &env, &e);
        if (r == -ENOENT)
                return v1_fail(err, 404, "", "no environment %.64s (GET /v1/environments lists them)", env_id);
        if (r < 0)
                return store_failed(err, &e);
        const char *type = json_string_value(json_object_get(json_object_get(env, "config"), "type"));
        if (!type || strcmp(type, "self_hosted") != 0)
                return v1_fail(err, 400, "",
                               "environment %.64s is not self_hosted (its config.type is %.20s): only a self_hosted "
                               "environment has a work queue; create one with config {\"type\": \"self_hosted\"}",
                               env_id, type ? type : "missing");
        return 0;
}

/* Expire the environment's ended leases, then read the item, which must be the environment's. */
static int load(store *s, const char *env_id, const char *work_id, store_work *w, v1_err *err) {
        hull_error e = {0};
        int r = v1_work_env(s, env_id, err);
        if (r < 0)
                return r;
        if (store_work_expire(s, env_id, (int64_t) now_unix_ms(), &e) < 0)
                return store_failed(err, &e);
        r = store_work_get(s, work_id, w, &e);
        if (r == -ENOENT || (r == 0 && strcmp(w->env_id, env_id) != 0)) {
                if (r == 0)
                        store_work_done(w);
                return v1_fail(err, 404, "", "no work item %.64s in environment %.64s (GET .../work lists them)",
                               work_id, env_id);
        }
        return r < 0 ? store_failed(err, &e) : 0;
}

static void random_hex(char *buf, size_t nbytes) {
        static const char hex[] = "0123456789abcdef";
        uint8_t rnd[64];
        if (nbytes > sizeof(rnd))
                nbytes = sizeof(rnd);
        for (size_t got = 0; got < nbytes;) {
                ssize_t n = getrandom(rnd + got, nbytes - got, 0);
                if (n > 0)
                        got += (size_t) n;
        }
        for (size_t i = 0; i < nbytes; i++) {
                buf[2 * i] = hex[rnd[i] >> 4];
                buf[2 * i + 1] = hex[rnd[i] & 15];
        }
        buf[2 * nbytes] = '\0';
        explicit_bzero(rnd, sizeof(rnd));
}

int v1_work_enqueue(store *s, const char *session_id, v1_err *err) {
        json_auto_t *sess = NULL;
        hull_error e = {0};
        if (store_get(s, STORE_SESSION, session_id, 0, &sess, &e) < 0)
                return 0; /* gone: nothing to run */
        return v1_work_enqueue_env(s, session_id, json_string_value(json_object_get(sess, "environment_id")) ?: "",
                                   err);
}

int v1_work_enqueue_env(store *s, const char *session_id, const char *env_id, v1_err *err) {
        hull_error e = {0};
        v1_err ignored = {0};
        if (!env_id[0])
                return 0;
        if (v1_work_env(s, env_id, &ignored) < 0)
                return ignored.status == 400 ? 1 : 0;
        store_work w = {.created_ms = (int64_t) now_unix_ms()};
        char rnd[33];
        random_hex(rnd, 12);
        snprintf(w.id, sizeof(w.id), "work_%s", rnd);
        snprintf(w.env_id, sizeof(w.env_id), "%s", env_id);
        snprintf(w.session_id, sizeof(w.session_id), "%s", session_id);
        snprintf(w.state, sizeof(w.state), "queued");
        w.body = json_pack("{s:{}}", "metadata");
        if (!w.body)
                return oom(err);
        int r = store_work_insert(s, &w, &e);
        store_work_done(&w);
        if (r == -EEXIST) /* it has a live item: that worker serves the new events */
                return 0;
        return r < 0 ? store_failed(err, &e) : 0;
}

/* A token (prefix and 64 hex digits) and the digest of all of it. */
static int token_new(const char *prefix, char *tok, size_t size, char digest[static 65]) {
        char hex[65];
        random_hex(hex, 32);
        snprintf(tok, size, "%s%s", prefix, hex);
        explicit_bzero(hex, sizeof(hex));
        return sha256_hex(tok, strlen(tok), digest);
}

/* A fresh sessions token for the item (its earlier ones forgotten), as the poll's secret:
 * base64url, unpadded, of {"sessions_token": ...}. */
static int secret_new(store *s, const store_work *w, char **ret, v1_err *err) {
        char tok[V1_WORK_KEY_SIZE], digest[65], scope[STORE_WORK_SCOPE_MAX];
        hull_error e = {0};
        int r = token_new("sk-ant-req-", tok, sizeof(tok), digest);
        if (r < 0)
                return v1_fail(err, 500, "", "cannot make a sessions token");
        snprintf(scope, sizeof(scope), V1_WORK_SCOPE_SESSION "%s", w->session_id);
        if (store_work_key_drop(s, w->id, &e) < 0 ||
            store_work_key_add(s, digest, scope, w->id, (int64_t) now_unix_ms(), &e) < 0) {
                explicit_bzero(tok, sizeof(tok));
                return store_failed(err, &e);
        }
        char json[V1_WORK_KEY_SIZE + 32];
        snprintf(json, sizeof(json), "{\"sessions_token\":\"%s\"}", tok);
        explicit_bzero(tok, sizeof(tok));
        char *b64 = NULL;
        size_t n = 0;
        r = base64_encode(json, strlen(json), false, &b64, &n);
        explicit_bzero(json, sizeof(json));
        if (r < 0)
                return oom(err);
        for (char *p = b64; *p; p++)
                *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
        *ret = b64;
        return 0;
}

/* Hand out the first of the due items this poller wins. 1 with *ret, 0 when none. */
static int try_take(store *s, const char *env_id, const char *worker_id, uint64_t reclaim_ms, json_t **ret,
                    v1_err *err) {
        hull_error e = {0};
        int64_t now = (int64_t) now_unix_ms();
        if (store_work_expire(s, env_id, now, &e) < 0)
                return store_failed(err, &e);
        json_auto_t *ids = NULL;
        if (store_work_due(s, env_id, now - (int64_t) reclaim_ms, CAS_TRIES, &ids, &e) < 0)
                return store_failed(err, &e);
        for (size_t i = 0; i < json_array_size(ids); i++) {
                store_work w = {0};
                int r = store_work_get(s, json_string_value(json_array_get(ids, i)), &w, &e);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        return store_failed(err, &e);
                w.polled_ms = now;
                snprintf(w.worker_id, sizeof(w.worker_id), "%s", worker_id ? worker_id : "");
                r = strcmp(w.state, "queued") == 0 ? store_work_update(s, &w, &e) : -ESTALE;
                if (r == -ESTALE || r == -ENOENT) { /* another poller took it */
                        store_work_done(&w);
                        continue;
                }
                if (r < 0) {
                        store_work_done(&w);
                        return store_failed(err, &e);
                }
                _cleanup_free_ char *secret = NULL;
                r = secret_new(s, &w, &secret, err);
                if (r >= 0 && !(*ret = work_json(&w, secret)))
                        r = oom(err);
                if (secret)
                        explicit_bzero(secret, strlen(secret));
                store_work_done(&w);
                return r < 0 ? r : 1;
        }
        return 0;
}

int v1_work_poll(store *s, v1_work_pollers *p, const char *env_id, const char *worker_id, uint64_t block_ms,
                 uint64_t reclaim_ms, json_t **ret, v1_err *err) {
        *ret = NULL;
        int r = v1_work_env(s, env_id, err);
        if (r < 0)
                return r;
        uint64_t until = now_mono_ms() + block_ms;
        pollers_note(p, env_id, worker_id, now_unix_ms());
        for (;;) {
                r = try_take(s, env_id, worker_id, reclaim_ms, ret, err);
                if (r != 0 || now_mono_ms() >= until)
                        return r < 0 ? r : 0;
                uint64_t left = until - now_mono_ms();
                usleep((useconds_t) (left < WORK_POLL_STEP_MS ? left : WORK_POLL_STEP_MS) * 1000U);
        }
}

int v1_work_get(store *s, const char *env_id, const char *work_id, json_t **ret, char *ret_session, v1_err *err) {
        store_work w = {0};
        int r = load(s, env_id, work_id, &w, err);
        if (r < 0)
                return r;
        if (ret_session)
                snprintf(ret_session, STORE_ID_MAX, "%s", w.session_id);
        *ret = work_json(&w, NULL);
        store_work_done(&w);
        return *ret ? 0 : oom(err);
}

/* Apply fn to the item and store it, again from a fresh read when another changed it meanwhile.
 * fn returns 0 to store, > 0 to answer the item unchanged, or a negative errno with *err. */
typedef int (*edit_fn)(store_work *w, const void *ud, int64_t now, v1_err *err);

static int edit(store *s, const char *env_id, const char *work_id, edit_fn fn, const void *ud, store_work *ret,
                v1_err *err) {
        for (int tries = 0;; tries++) {
                store_work w = {0};
                hull_error e = {0};
                int r = load(s, env_id, work_id, &w, err);
                if (r < 0)
                        return r;
                r = fn(&w, ud, (int64_t) now_unix_ms(), err);
                if (r == 0) {
                        r = store_work_update(s, &w, &e);
                        if (r == -ESTALE && tries < CAS_TRIES) {
                                store_work_done(&w);
                                continue;
                        }
                        if (r < 0)
                                r = r == -ESTALE
                                            ? v1_fail(err, 409, "", "work item %.64s is changing: try again", work_id)
                                            : store_failed(err, &e);
                        else
                                w.version++;
                }
                if (r < 0) {
                        store_work_done(&w);
                        return r;
                }
                *ret = w;
                return 0;
        }
}

static int edit_answer(store *s, const char *env_id, const char *work_id, edit_fn fn, const void *ud, json_t **ret,
                       v1_err *err) {
        store_work w = {0};
        int r = edit(s, env_id, work_id, fn, ud, &w, err);
        if (r < 0)
                return r;
        *ret = work_json(&w, NULL);
        store_work_done(&w);
        return *ret ? 0 : oom(err);
}

static int metadata_patch(store_work *w, const void *ud, int64_t now, v1_err *err) {
        (void) now;
        const json_t *patch = ud;
        json_t *md = json_object_get(w->body, "metadata");
        if (!json_is_object(md)) {
                md = json_object();
                json_object_set_new(w->body, "metadata", md);
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) patch, k, v) {
                if (json_is_null(v))
                        json_object_del(md, k);
                else
                        json_object_set(md, k, v);
        }
        if (json_object_size(md) > WORK_METADATA_MAX)
                return v1_fail(err, 400, "", "a work item's metadata holds at most %u pairs", WORK_METADATA_MAX);
        return md ? 0 : oom(err);
}

int v1_work_update(store *s, const char *env_id, const char *work_id, const json_t *body, json_t **ret, v1_err *err) {
        const json_t *md = json_object_get(body, "metadata");
        if (json_object_size(body) != 1 || !json_is_object(md))
                return v1_fail(err, 400, "",
                               "a work item's update takes only metadata: an object of string values (null deletes "
                               "a key)");
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) md, k, v) {
                if (strlen(k) == 0 || strlen(k) > 64 || (!json_is_null(v) && !json_is_string(v)) ||
                    (json_is_string(v) && json_string_length(v) > 512))
                        return v1_fail(err, 400, "",
                                       "metadata '%.64s': keys are 1 to 64 characters, values strings of at most "
                                       "512 characters or null (which deletes the key)",
                                       k);
        }
        return edit_answer(s, env_id, work_id, metadata_patch, md, ret, err);
}

static int do_ack(store_work *w, const void *ud, int64_t now, v1_err *err) {
        (void) ud;
        if (strcmp(w->state, "queued") != 0 || w->polled_ms == 0)
                return v1_fail(err, 409, "", "work item %.64s is %s%s: only an item a poll handed out is acknowledged",
                               w->id, w->state, strcmp(w->state, "queued") == 0 ? " and not handed out" : "");
        snprintf(w->state, sizeof(w->state), "starting");
        set_ms(w, "acknowledged_ms", now);
        set_ms(w, "ttl_s", WORK_LEASE_TTL_S);
        w->lease_ms = now + (int64_t) WORK_LEASE_TTL_S * 1000;
        return 0;
}

int v1_work_ack(store *s, const char *env_id, const char *work_id, json_t **ret, v1_err *err) {
        return edit_answer(s, env_id, work_id, do_ack, NULL, ret, err);
}

/* The lease as a heartbeat answer (or a 412's current_state). */
static json_t *lease_json(const store_work *w, bool extended, bool current) {
        int64_t ttl = body_ms(w, "ttl_s");
        json_t *o = json_pack("{s:s, s:b, s:I}", "state", w->state, "lease_extended", extended, "ttl_seconds",
                              (json_int_t) (ttl > 0 ? ttl : WORK_LEASE_TTL_S));
        if (!o)
                return NULL;
        json_object_set_new(o, "last_heartbeat", w->has_heartbeat ? json_string(w->heartbeat) : json_null());
        if (current)
                json_object_set_new(o, "lease_updated_at", time_or_null(body_ms(w, "heartbeat_ms")));
        else
                json_object_set_new(o, "type", json_string("work_heartbeat"));
        return o;
}

typedef struct beat_args {
        const char *expected;
        uint64_t ttl_s;
        json_t **current; /* a mismatch's */
        bool extended;
} beat_args;

static int do_beat(store_work *w, const void *ud, int64_t now, v1_err *err) {
        beat_args *a = (beat_args *) ud;
        bool none = strcmp(a->expected, NO_HEARTBEAT) == 0;
        bool match = w->has_heartbeat ? !none && strcmp(a->expected, w->heartbeat) == 0 : none;
        bool held = strcmp(w->state, "starting") == 0 || strcmp(w->state, "active") == 0 ||
                    strcmp(w->state, "stopping") == 0 || (strcmp(w->state, "stopped") == 0 && w->has_heartbeat);
        if (!match || !held) {
                *a->current = lease_json(w, false, true);
                v1_fail(err, 412, "heartbeat_precondition_failed",
                        "Heartbeat precondition failed: expected %.64s, actual was %.64s%s", a->expected,
                        w->has_heartbeat ? w->heartbeat : "NULL",
                        held ? "" : " (the item is not leased: it was never acknowledged, or its lease ended)");
                return -ESTALE;
        }
        if (strcmp(w->state, "stopped") == 0) { /* the holder learns that it ends */
                a->extended = false;
                return 1;
        }
        char hex[33];
        random_hex(hex, 12);
        snprintf(w->heartbeat, sizeof(w->heartbeat), "hb_%s", hex);
        w->has_heartbeat = true;
        if (strcmp(w->state, "starting") == 0) {
                snprintf(w->state, sizeof(w->state), "active");
                set_ms(w, "started_ms", now);
        }
        uint64_t ttl = a->ttl_s ? a->ttl_s : WORK_LEASE_TTL_S;
        set_ms(w, "ttl_s", (int64_t) ttl);
        set_ms(w, "heartbeat_ms", now);
        w->lease_ms = now + (int64_t) ttl * 1000;
        a->extended = true;
        return 0;
}

int v1_work_heartbeat(store *s, const char *env_id, const char *work_id, const char *expected, uint64_t desired_ttl_s,
                      json_t **ret, v1_err *err) {
        if (!expected || !expected[0])
                return v1_fail(err, 400, "",
                               "expected_last_heartbeat is required: NO_HEARTBEAT for the first heartbeat, then the "
                               "last_heartbeat of the previous answer");
        if (desired_ttl_s > WORK_LEASE_TTL_MAX_S)
                desired_ttl_s = WORK_LEASE_TTL_MAX_S;
        json_t *current = NULL;
        beat_args a = {.expected = expected, .ttl_s = desired_ttl_s, .current = &current};
        store_work w = {0};
        int r = edit(s, env_id, work_id, do_beat, &a, &w, err);
        if (r < 0) {
                *ret = current;
                return r;
        }
        *ret = lease_json(&w, a.extended, false);
        store_work_done(&w);
        return *ret ? 0 : oom(err);
}

static int do_stop(store_work *w, const void *ud, int64_t now, v1_err *err) {
        bool force = *(const bool *) ud;
        if (strcmp(w->state, "stopped") == 0)
                return v1_fail(err, 409, "already_stopped", "work item %.64s is stopped already", w->id);
        bool leased = strcmp(w->state, "starting") == 0 || strcmp(w->state, "active") == 0;
        if (!body_ms(w, "stop_requested_ms"))
                set_ms(w, "stop_requested_ms", now);
        if (force || !leased) {
                snprintf(w->state, sizeof(w->state), "stopped");
                set_ms(w, "stopped_ms", now);
                w->lease_ms = 0;
        } else
                snprintf(w->state, sizeof(w->state), "stopping");
        return 0;
}

int v1_work_stop(store *s, const char *env_id, const char *work_id, bool force, json_t **ret, v1_err *err) {
        store_work w = {0};
        int r = edit(s, env_id, work_id, do_stop, &force, &w, err);
        if (r < 0)
                return r;
        hull_error e = {0};
        if (strcmp(w.state, "stopped") == 0) /* its sessions token ends with it */
                (void) store_work_key_drop(s, w.id, &e);
        *ret = work_json(&w, NULL);
        store_work_done(&w);
        return *ret ? 0 : oom(err);
}

int v1_work_list(store *s, const char *env_id, const char *page, unsigned limit, json_t **ret, v1_err *err) {
        int r = v1_work_env(s, env_id, err);
        if (r < 0)
                return r;
        int64_t after_ms = 0;
        char after_id[STORE_ID_MAX] = "";
        if (page && page[0]) {
                const char *dot = strchr(page, '.');
                uint64_t ms = 0;
                char num[24];
                if (!dot || (size_t) (dot - page) >= sizeof(num) || strlen(dot + 1) >= sizeof(after_id))
                        return v1_fail(err, 400, "", "page is not a page token of this list: pass next_page as given");
                memcpy(num, page, (size_t) (dot - page));
                num[dot - page] = '\0';
                if (parse_uint64(num, 0, INT64_MAX, &ms) < 0)
                        return v1_fail(err, 400, "", "page is not a page token of this list: pass next_page as given");
                after_ms = (int64_t) ms;
                snprintf(after_id, sizeof(after_id), "%s", dot + 1);
        }
        hull_error e = {0};
        if (store_work_expire(s, env_id, (int64_t) now_unix_ms(), &e) < 0)
                return store_failed(err, &e);
        store_work *v = NULL;
        size_t n = 0;
        if (store_work_list(s, env_id, after_ms, page && page[0] ? after_id : NULL, limit + 1, &v, &n, &e) < 0)
                return store_failed(err, &e);
        json_t *data = json_array(), *out = NULL;
        for (size_t i = 0; data && i < n && i < limit; i++)
                if (json_array_append_new(data, work_json(&v[i], NULL)) < 0)
                        json_decref(TAKE_PTR(data));
        char next[STORE_ID_MAX + 24] = "";
        if (n > limit && limit > 0)
                snprintf(next, sizeof(next), "%" PRId64 ".%s", v[limit - 1].created_ms, v[limit - 1].id);
        for (size_t i = 0; i < n; i++)
                store_work_done(&v[i]);
        free(v);
        if (data)
                out = json_pack("{s:o, s:s?}", "data", data, "next_page", next[0] ? next : NULL);
        if (out && !next[0])
                json_object_set_new(out, "next_page", json_null());
        *ret = out;
        return out ? 0 : oom(err);
}

int v1_work_stats(store *s, v1_work_pollers *p, const char *env_id, json_t **ret, v1_err *err) {
        int r = v1_work_env(s, env_id, err);
        if (r < 0)
                return r;
        hull_error e = {0};
        store_work_stats st;
        uint64_t now = now_unix_ms();
        if (store_work_expire(s, env_id, (int64_t) now, &e) < 0 || store_work_stats_get(s, env_id, &st, &e) < 0)
                return store_failed(err, &e);
        *ret = json_pack("{s:s, s:I, s:I, s:o, s:I}", "type", "work_queue_stats", "depth", (json_int_t) st.depth,
                         "pending", (json_int_t) st.pending, "oldest_queued_at", time_or_null(st.oldest_created),
                         "workers_polling", (json_int_t) pollers_count(p, env_id, now));
        return *ret ? 0 : oom(err);
}

int v1_work_key_new(store *s, const char *env_id, char ret_key[static V1_WORK_KEY_SIZE], v1_err *err) {
        int r = v1_work_env(s, env_id, err);
        if (r < 0)
                return r;
        char digest[65], scope[STORE_WORK_SCOPE_MAX];
        if (token_new("hull_env_", ret_key, V1_WORK_KEY_SIZE, digest) < 0)
                return v1_fail(err, 500, "", "cannot make an environment key");
        snprintf(scope, sizeof(scope), V1_WORK_SCOPE_ENV "%s", env_id);
        hull_error e = {0};
        if (store_work_key_add(s, digest, scope, NULL, (int64_t) now_unix_ms(), &e) < 0) {
                explicit_bzero(ret_key, V1_WORK_KEY_SIZE);
                return store_failed(err, &e);
        }
        return 0;
}
