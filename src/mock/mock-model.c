/* mock-model.c: hull mock-model's server. Each model request is checked as the real APIs check
 * it (the key when one is set, anthropic-version, a JSON body with a model and messages), takes
 * the script's next step, and is answered with what mock_render() made of it: a whole answer, or
 * an event stream that a thread of its own feeds into the connection event by event, cut into
 * the writes and paced as the step says. Every request is recorded. */
#include "mock-model.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "dynbuf.h"
#include "fs-util.h"
#include "limits.h"
#include "macro.h"
#include "mock-body.h"
#include "mock-template.h"
#include "time-util.h"
#include "utf8.h"

enum {
        TAG_OPENAI = 1,
        TAG_ANTHROPIC,
        TAG_REQUESTS,
};

struct mock_server {
        mock_config cfg;
        pthread_mutex_t lock; /* the cursor, the records, stopping */
        pthread_cond_t wake;  /* stopping, a stream's end */
        size_t step, used;    /* the next step, and the requests it answered */
        bool stopping;
        atomic_uint_fast64_t seq;
        atomic_uint streams;
        mock_body_cache *bodies; /* the bodies' values, for the next ones' parse */
        /* the records: a ring of JSON lines, the oldest at first */
        char **rec;
        size_t rec_first, rec_n, rec_bytes;
};

/* A request's own state. */
typedef struct mreq {
        mock_server *m;
        uint64_t seq;
        uint64_t received_at_us; /* CLOCK_REALTIME, when its head was in */
        mock_api api;
        const mock_step *step; /* the step answering it (NULL: none) */
        mock_answer answer;    /* kept for a delayed answer */
        /* the body as received when it parsed as one line of JSON: the record carries it as it
         * is (dumping what was parsed again costs as much as the parse) */
        char *raw;
        size_t raw_len;
} mreq;

static void mreq_free(void *p) {
        mreq *q = p;
        mock_answer_done(&q->answer);
        free(q->raw);
        free(q);
}

static uint64_t now_unix_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

static const char *api_name(mock_api api) {
        return api == MOCK_API_OPENAI ? "openai" : "anthropic";
}

/* ---- waiting ---- */

/* Wait ms, or until the server stops. Returns 0, or -ECANCELED once stopping. */
static int nap(mock_server *m, uint64_t ms) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        uint64_t ns = (uint64_t) until.tv_nsec + (ms % 1000) * 1000000ULL;
        until.tv_sec += (time_t) (ms / 1000 + ns / 1000000000ULL);
        until.tv_nsec = (long) (ns % 1000000000ULL);
        pthread_mutex_lock(&m->lock);
        while (!m->stopping && pthread_cond_timedwait(&m->wake, &m->lock, &until) != ETIMEDOUT)
                ;
        bool stopping = m->stopping;
        pthread_mutex_unlock(&m->lock);
        return stopping ? -ECANCELED : 0;
}

/* ---- records ---- */

static void header_into(void *data, const char *name, const char *value) {
        json_t *h = data;
        char key[SERVE_SHORT_STR_MAX];
        size_t n = MIN(strlen(name), sizeof(key) - 1);
        for (size_t i = 0; i < n; i++)
                key[i] = (char) (name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
        key[n] = '\0';
        json_t *old = json_object_get(h, key);
        _cleanup_free_ char *v = NULL;
        size_t vlen;
        if (utf8_make_valid(value, strlen(value), &v, &vlen) < 0)
                return;
        if (json_is_string(old)) { /* a repeated header: its values joined, as HTTP allows */
                _cleanup_free_ char *both = NULL;
                if (asprintf(&both, "%s, %s", json_string_value(old), v) >= 0)
                        json_object_set_new(h, key, json_string(both));
        } else
                json_object_set_new(h, key, json_string(v));
}

/* What a request was: method, path, headers, the body (JSON as parsed, else text, else null). */
static json_t *record_new(http_req *r, const mreq *q, json_t *body_json, const char *body, size_t len) {
        json_t *rec = json_pack("{s:I, s:I, s:I, s:s, s:s, s:s}", "seq", (json_int_t) q->seq, "time_ms",
                                (json_int_t) now_unix_ms(), "received_at_us", (json_int_t) q->received_at_us, "api",
                                api_name(q->api), "method", http_req_method(r), "path", http_req_path(r));
        json_t *headers = json_object();
        if (!rec || !headers) {
                json_decref(rec);
                json_decref(headers);
                return NULL;
        }
        http_req_each_header(r, header_into, headers);
        json_object_set_new(rec, "headers", headers);
        if (body_json && q->raw)
                ; /* spliced in by record_commit */
        else if (body_json)
                json_object_set(rec, "body", body_json);
        else if (len > 0) {
                _cleanup_free_ char *text = NULL;
                size_t tlen;
                if (utf8_make_valid(body, len, &text, &tlen) == 0)
                        json_object_set_new(rec, "body", json_string(text));
        } else
                json_object_set_new(rec, "body", json_null());
        return rec;
}

/* Keep rec (taken): a line in the record file, and in the ring GET /_mock/requests answers. */
static void record_commit(mock_server *m, json_t *rec, unsigned status, const mreq *q) {
        if (!rec)
                return;
        json_object_set_new(rec, "status", json_integer(status));
        json_object_set_new(rec, "step",
                            q->step ? json_integer((json_int_t) (q->step - m->cfg.script->steps) + 1) : json_null());
        char *line = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(rec);
        if (!line)
                return;
        size_t n = strlen(line);
        if (q->raw && n >= 2 && line[n - 1] == '}') { /* ...,"body":<the body as received>} */
                char *whole = malloc(n + q->raw_len + 16);
                if (!whole) {
                        free(line);
                        return;
                }
                memcpy(whole, line, n - 1);
                size_t k = n - 1;
                memcpy(whole + k, ",\"body\":", 8);
                k += 8;
                memcpy(whole + k, q->raw, q->raw_len);
                k += q->raw_len;
                whole[k++] = '}';
                whole[k] = '\0';
                free(line);
                line = whole;
                n = k;
        }
        pthread_mutex_lock(&m->lock);
        if (m->cfg.record_fd >= 0) {
                line[n] = '\n'; /* one write per line: flushed as it comes, whole */
                (void) loop_write(m->cfg.record_fd, line, n + 1);
                line[n] = '\0';
        }
        while (m->rec_n > 0 && (m->rec_n == MOCK_RECORDS_MAX || m->rec_bytes + n > MOCK_RECORDS_BYTES_MAX)) {
                char *old = m->rec[m->rec_first];
                m->rec_bytes -= strlen(old);
                free(old);
                m->rec_first = (m->rec_first + 1) % MOCK_RECORDS_MAX;
                m->rec_n--;
        }
        if (n <= MOCK_RECORDS_BYTES_MAX) {
                m->rec[(m->rec_first + m->rec_n) % MOCK_RECORDS_MAX] = TAKE_PTR(line);
                m->rec_n++;
                m->rec_bytes += n;
        }
        pthread_mutex_unlock(&m->lock);
        free(line);
}

/* ---- answers ---- */

static void answer_headers(http_req *r, const mock_answer *a) {
        for (size_t i = 0; i < a->n_headers; i++)
                (void) http_answer_header(r, a->headers[i].name, a->headers[i].value);
}

static void answer_whole(http_req *r, mock_answer *a) {
        answer_headers(r, a);
        (void) http_answer(r, a->status, "application/json", TAKE_PTR(a->body), a->body_len);
}

/* An error in the envelope of q's API, recorded with rec (taken). code_null: "code": null. */
static void answer_error(http_req *r, mreq *q, json_t *rec, mock_error_kind kind, unsigned status, const char *msg,
                         bool code_null) {
        mock_error err = {.kind = kind, .status = status ? status : mock_error_kind_status(kind), .should_retry = -1};
        _cleanup_(json_decrefp) json_t *null = json_null();
        err.message = (char *) msg;
        if (code_null)
                err.code = null;
        record_commit(q->m, rec, err.status, q);
        mock_answer a;
        if (mock_render_error(q->api, &err, NULL, q->seq, &a) < 0)
                return; /* no answer: the connection closes */
        answer_whole(r, &a);
        mock_answer_done(&a);
}

/* A stream's feeder: the step's events and how to send them. */
typedef struct feed {
        mock_server *m;
        http_sse *sse;
        mock_answer a;
        uint64_t event_delay_ms, ping_ms, write_delay_ms;
        mock_writes writes;
        size_t write_bytes;
} feed;

static int feed_send(feed *f, const char *p, size_t n) {
        for (;;) {
                int r = http_sse_send_raw(f->sse, p, n);
                if (r != -EAGAIN)
                        return r;
                if ((r = http_sse_wait(f->sse, n, MOCK_STREAM_STALL_MS)) < 0)
                        return r; /* a client that reads nothing loses its stream */
        }
}

/* A gap of ms between events, with a ping every ping_ms. */
static int feed_gap(feed *f, uint64_t ms) {
        uint64_t end = now_mono_ms() + ms;
        for (;;) {
                uint64_t now = now_mono_ms();
                if (now >= end)
                        return 0;
                uint64_t left = end - now;
                int r = nap(f->m, f->ping_ms ? MIN(f->ping_ms, left) : left);
                if (r == 0 && f->ping_ms && now_mono_ms() < end)
                        r = feed_send(f, f->a.ping, strlen(f->a.ping));
                if (r < 0)
                        return r;
        }
}

static void *feed_main(void *arg) {
        feed *f = arg;
        mock_server *m = f->m;
        int r = 0;
        bool first = true;
        for (size_t i = 0; r == 0 && i < f->a.events.n; i++) {
                if (i > 0 && f->event_delay_ms)
                        r = feed_gap(f, f->event_delay_ms);
                const char *p = f->a.events.v[i];
                size_t n = strlen(p);
                while (r == 0 && n > 0) {
                        size_t k = mock_next_write(p, n, f->writes, f->write_bytes);
                        if (!first && f->writes != MOCK_WRITES_EVENT) { /* each piece in a write of its own */
                                r = http_sse_drain(f->sse, MOCK_STREAM_STALL_MS);
                                if (r == 0 && f->write_delay_ms)
                                        r = nap(m, f->write_delay_ms);
                        }
                        if (r == 0)
                                r = feed_send(f, p, k);
                        first = false;
                        p += k;
                        n -= k;
                }
        }
        if (r == 0 && !f->a.abort)
                http_sse_close(f->sse);
        else
                http_sse_abort(f->sse);
        mock_answer_done(&f->a);
        free(f);
        pthread_mutex_lock(&m->lock);
        atomic_fetch_sub(&m->streams, 1);
        pthread_cond_broadcast(&m->wake);
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

/* Can a's events all be queued at once, here? Only when nothing paces them (no gap between
 * events, each in one write: what a feeder does then, without waiting) and they all fit in the
 * stream's queue (no wait for room). Then the bytes and their order are the feeder's. */
static bool feed_at_once(const mock_step *st, const mock_answer *a) {
        if (st->event_delay_ms || st->writes != MOCK_WRITES_EVENT)
                return false;
        size_t total = 0;
        for (size_t i = 0; i < a->events.n; i++) {
                size_t n = strlen(a->events.v[i]);
                if (n > SERVE_SSE_FRAME_MAX || n > MOCK_STREAM_QUEUE_BYTES - total)
                        return false;
                total += n;
        }
        return true;
}

/* Answer with q's answer: whole, or a stream: queued at once when nothing paces it (no thread
 * made and handed the connection for a few events), else by a feeder of its own. */
static void deliver(http_req *r, mreq *q) {
        mock_answer *a = &q->answer;
        if (!a->stream) {
                answer_whole(r, a);
                return;
        }
        const mock_step *st = q->step;
        answer_headers(r, a);
        http_sse *sse;
        if (http_answer_sse(r, MOCK_STREAM_QUEUE_BYTES, HTTP_SSE_NO_KEEPALIVE, &sse) < 0)
                return;
        if (feed_at_once(st, a)) {
                int k = 0;
                for (size_t i = 0; k == 0 && i < a->events.n; i++)
                        k = http_sse_send_raw(sse, a->events.v[i], strlen(a->events.v[i]));
                if (k == 0 && !a->abort)
                        http_sse_close(sse);
                else
                        http_sse_abort(sse);
                mock_answer_done(a);
                return;
        }
        feed *f = calloc(1, sizeof(*f));
        if (!f) {
                http_sse_abort(sse);
                return;
        }
        *f = (feed){.m = q->m,
                    .sse = sse,
                    .a = *a,
                    .event_delay_ms = st->event_delay_ms,
                    .ping_ms = st->ping_ms,
                    .write_delay_ms = st->write_delay_ms,
                    .writes = st->writes,
                    .write_bytes = st->write_bytes};
        *a = (mock_answer){0};
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, SERVE_RUN_THREAD_STACK);
        atomic_fetch_add(&q->m->streams, 1);
        if (pthread_create(&t, &attr, feed_main, f) != 0) {
                atomic_fetch_sub(&q->m->streams, 1);
                http_sse_abort(sse);
                mock_answer_done(&f->a);
                free(f);
        }
        pthread_attr_destroy(&attr);
}

/* A step's delay before its answer, on a thread of its own (the connection suspended). */
static void delayed(http_req *r) {
        mreq *q = http_req_ctx(r);
        if (nap(q->m, q->step->delay_ms) == 0)
                deliver(r, q);
}

/* ---- the model routes ---- */

/* The script's next step; NULL once it ran out and says "then": "error". */
static const mock_step *next_step(mock_server *m) {
        const mock_script *s = m->cfg.script;
        pthread_mutex_lock(&m->lock);
        const mock_step *st = NULL;
        if (m->step < s->n_steps) {
                st = &s->steps[m->step];
                if (++m->used >= st->times) {
                        m->step++;
                        m->used = 0;
                }
        } else if (!s->then_error)
                st = &s->steps[s->n_steps - 1];
        pthread_mutex_unlock(&m->lock);
        return st;
}

/* Is the caller's key the one set? OpenAI: Authorization: Bearer; Anthropic: that or x-api-key. */
static bool key_ok(http_req *r, const mock_server *m, mock_api api) {
        const char *key = m->cfg.api_key;
        if (!key)
                return true;
        const char *auth = http_req_header(r, "Authorization", NULL);
        if (auth && strncasecmp(auth, "Bearer ", 7) == 0 && strcmp(auth + 7, key) == 0)
                return true;
        const char *x = api == MOCK_API_ANTHROPIC ? http_req_header(r, "x-api-key", NULL) : NULL;
        return x && strcmp(x, key) == 0;
}

/* The answer of st to rq, its placeholders replaced from the request's tool results. */
static int render(const mock_step *st, const mock_request *rq, const json_t *req, mock_answer *ret) {
        if (!st->templated)
                return mock_render(st, rq, ret);
        mock_results res;
        int r = mock_results_of(rq->api, req, &res);
        if (r < 0)
                return r;
        mock_step x;
        r = mock_step_expand(st, &res, &x);
        if (r == 0) {
                r = mock_render(&x, rq, ret);
                mock_step_expanded_done(&x);
        }
        mock_results_done(&res);
        return r;
}

static void do_model(http_req *r) {
        mreq *q = http_req_ctx(r);
        mock_server *m = q->m;
        size_t len;
        const char *body = http_req_body(r, &len);
        json_t *parsed;
        size_t parsed_bytes;
        mock_body_parse(m->bodies, body, len, &parsed, &parsed_bytes);
        _cleanup_(json_decrefp) json_t *req = json_is_object(parsed) ? parsed : NULL;
        if (req && !memchr(body, '\n', len) && !memchr(body, '\r', len) && (q->raw = malloc(len + 1))) {
                memcpy(q->raw, body, len);
                q->raw[len] = '\0';
                q->raw_len = len;
        }
        json_t *rec = record_new(r, q, req, body, len);
        if (!req)
                json_decref(parsed);
        http_req_body_release(r);

        if (!key_ok(r, m, q->api)) {
                http_req_note(r, "refused=key");
                answer_error(r, q, rec, MOCK_ERR_AUTH, 0,
                             q->api == MOCK_API_OPENAI
                                     ? "Incorrect API key provided. You can find your API key in your account settings."
                                     : "invalid x-api-key",
                             false);
                return;
        }
        if (q->api == MOCK_API_ANTHROPIC) {
                const char *v = http_req_header(r, "anthropic-version", NULL);
                if (!v || (strcmp(v, "2023-06-01") != 0 && strcmp(v, "2026-10-21") != 0)) {
                        char msg[SERVE_SHORT_STR_MAX];
                        char clean[64];
                        if (v)
                                snprintf(msg, sizeof(msg),
                                         "anthropic-version: '%s' is not a known version (send 2023-06-01 or "
                                         "2026-10-21)",
                                         dlog_clean(v, clean, sizeof(clean)));
                        else
                                snprintf(msg, sizeof(msg), "anthropic-version: header is required");
                        answer_error(r, q, rec, MOCK_ERR_BAD_REQUEST, 400, msg, false);
                        return;
                }
        }
        json_t *model = json_object_get(req, "model"), *messages = json_object_get(req, "messages");
        const char *problem = NULL;
        if (!req)
                problem = q->api == MOCK_API_OPENAI ? "We could not parse the JSON body of your request. (HINT: This "
                                                      "likely means you aren't using your HTTP library correctly.)"
                                                    : "The request body is not valid JSON.";
        else if (!json_is_string(model) || json_string_length(model) == 0)
                problem = q->api == MOCK_API_OPENAI ? "You must provide a model parameter." : "model: Field required";
        else if (!json_is_array(messages))
                problem = q->api == MOCK_API_OPENAI ? "Missing required parameter: 'messages'."
                                                    : "messages: Field required";
        else if (q->api == MOCK_API_ANTHROPIC && !json_is_integer(json_object_get(req, "max_tokens")))
                problem = "max_tokens: Field required";
        if (problem) {
                answer_error(r, q, rec, MOCK_ERR_BAD_REQUEST, 400, problem, true);
                return;
        }
        const char *model_name = json_string_value(model);
        if (!mock_script_has_model(m->cfg.script, model_name)) {
                mock_error err = {.kind = MOCK_ERR_NOT_FOUND, .status = 404, .should_retry = -1};
                record_commit(m, rec, 404, q);
                mock_answer a;
                if (mock_render_error(q->api, &err, model_name, q->seq, &a) == 0) {
                        answer_whole(r, &a);
                        mock_answer_done(&a);
                }
                return;
        }
        bool stream = json_is_true(json_object_get(req, "stream"));
        json_t *opts = json_object_get(req, "stream_options");
        bool include_usage =
                q->api == MOCK_API_OPENAI && stream && json_is_true(json_object_get(opts, "include_usage"));
        q->step = next_step(m);
        if (!q->step) {
                char msg[SERVE_SHORT_STR_MAX];
                snprintf(msg, sizeof(msg),
                         "hull mock-model: the script's %zu steps are used up (its \"then\" is \"error\")",
                         m->cfg.script->n_steps);
                answer_error(r, q, rec, MOCK_ERR_SERVER, 500, msg, false);
                return;
        }
        mock_request rq = {.api = q->api,
                           .model = model_name,
                           .stream = stream,
                           .include_usage = include_usage,
                           .seq = q->seq,
                           .now = (int64_t) (now_unix_ms() / 1000),
                           .body_bytes = len};
        int rr = render(q->step, &rq, req, &q->answer);
        if (rr < 0) {
                answer_error(r, q, rec, MOCK_ERR_SERVER, 500,
                             rr == -E2BIG ? "hull mock-model: the step's text or input with its placeholders "
                                            "replaced is too large"
                                          : "hull mock-model: out of memory",
                             false);
                return;
        }
        json_object_set_new(rec, "stream", json_boolean(q->answer.stream));
        record_commit(m, rec, q->answer.status, q);
        http_req_note(r, "api=%s step=%td stream=%s parsed=%zu/%zu", api_name(q->api),
                      q->step - m->cfg.script->steps + 1, q->answer.stream ? "yes" : "no", parsed_bytes, len);
        if (q->step->delay_ms && http_req_spawn(r, delayed) == 0)
                return;
        deliver(r, q);
}

/* GET /_mock/requests: every request recorded (the newest MOCK_RECORDS_MAX), as a JSON array. */
static void do_requests(http_req *r) {
        mreq *q = http_req_ctx(r);
        mock_server *m = q->m;
        if (!key_ok(r, m, MOCK_API_OPENAI)) {
                answer_error(r, q, NULL, MOCK_ERR_AUTH, 0, "send the --api-key as Authorization: Bearer", false);
                return;
        }
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, MOCK_RECORDS_BYTES_MAX + MOCK_RECORDS_MAX + 2);
        pthread_mutex_lock(&m->lock);
        int err = dynbuf_add_str(&b, "[");
        for (size_t i = 0; err == 0 && i < m->rec_n; i++) {
                if (i > 0)
                        err = dynbuf_add_str(&b, ",");
                if (err == 0)
                        err = dynbuf_add_str(&b, m->rec[(m->rec_first + i) % MOCK_RECORDS_MAX]);
        }
        pthread_mutex_unlock(&m->lock);
        if (err == 0)
                err = dynbuf_add_str(&b, "]\n");
        size_t n;
        char *text = err == 0 ? dynbuf_take(&b, &n) : NULL;
        if (!text) {
                answer_error(r, q, NULL, MOCK_ERR_SERVER, 500, "hull mock-model: out of memory", false);
                return;
        }
        (void) http_answer(r, 200, "application/json", text, n);
}

/* ---- the API: request ids, and refusals in the caller's envelope ---- */

static void mock_begin(http_req *r) {
        mock_server *m = http_req_data(r);
        mreq *q = calloc(1, sizeof(*q));
        if (!q)
                return;
        q->m = m;
        q->received_at_us = now_unix_us();
        q->seq = atomic_fetch_add(&m->seq, 1) + 1;
        int tag = http_req_tag(r);
        if (tag == TAG_OPENAI || tag == TAG_ANTHROPIC)
                q->api = tag == TAG_OPENAI ? MOCK_API_OPENAI : MOCK_API_ANTHROPIC;
        else /* no route: the SDKs tell themselves apart by their headers */
                q->api = http_req_header(r, "anthropic-version", NULL) || http_req_header(r, "x-api-key", NULL)
                                 ? MOCK_API_ANTHROPIC
                                 : MOCK_API_OPENAI;
        char id[48];
        snprintf(id, sizeof(id), "req_mock%06" PRIu64, q->seq);
        http_req_set_id(r, id);
        http_req_set_ctx(r, q, mreq_free);
}

static void mock_refuse(http_req *r, http_refusal why, unsigned status, const char *msg) {
        mreq *q = http_req_ctx(r);
        if (!q)
                return; /* out of memory at begin: plain text */
        json_t *rec = http_req_tag(r) == TAG_REQUESTS ? NULL : record_new(r, q, NULL, NULL, 0);
        char text[HULL_ERROR_MSG_MAX];
        if (why == HTTP_REFUSAL_NOT_FOUND || why == HTTP_REFUSAL_METHOD) {
                /* OpenAI's words for a path it has not; Anthropic's not_found_error */
                snprintf(text, sizeof(text),
                         "%s (%s %s): hull mock-model serves POST /v1/chat/completions and "
                         "POST /v1/messages",
                         q->api == MOCK_API_OPENAI ? "Invalid URL" : "Not found", http_req_method(r), http_req_path(r));
                answer_error(r, q, rec, why == HTTP_REFUSAL_NOT_FOUND ? MOCK_ERR_NOT_FOUND : MOCK_ERR_BAD_REQUEST,
                             status, text, true);
                return;
        }
        answer_error(r, q, rec, status >= 500 ? MOCK_ERR_SERVER : MOCK_ERR_BAD_REQUEST, status, msg, true);
}

const http_api mock_fallback_api = {.name = "mock-model", .begin = mock_begin, .refuse = mock_refuse};

static const http_route routes[] = {
        {.methods = HTTP_POST,
         .pattern = "/v1/chat/completions",
         .body_max = MOCK_REQUEST_BODY_MAX,
         .handler = do_model,
         .tag = TAG_OPENAI},
        {.methods = HTTP_POST,
         .pattern = "/v1/messages",
         .body_max = MOCK_REQUEST_BODY_MAX,
         .handler = do_model,
         .tag = TAG_ANTHROPIC},
        {.methods = HTTP_GET | HTTP_HEAD, .pattern = "/_mock/requests", .handler = do_requests, .tag = TAG_REQUESTS},
};

int mock_server_new(const mock_config *cfg, mock_server **ret) {
        mock_server *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->rec = calloc(MOCK_RECORDS_MAX, sizeof(char *));
        if (!m->rec || mock_body_cache_new(&m->bodies) < 0) {
                free(m->rec);
                free(m);
                return -ENOMEM;
        }
        m->cfg = *cfg;
        pthread_mutex_init(&m->lock, NULL);
        pthread_cond_init(&m->wake, NULL);
        atomic_init(&m->seq, 0);
        atomic_init(&m->streams, 0);
        *ret = m;
        return 0;
}

int mock_server_register(mock_server *m, http_server *s) {
        return http_add_routes(s, &mock_fallback_api, routes, ELEMENTSOF(routes), m);
}

void mock_server_stop(mock_server *m) {
        pthread_mutex_lock(&m->lock);
        m->stopping = true;
        pthread_cond_broadcast(&m->wake);
        pthread_mutex_unlock(&m->lock);
}

unsigned mock_server_streams(mock_server *m) {
        return atomic_load(&m->streams);
}

void mock_server_free(mock_server *m) {
        if (!m)
                return;
        for (size_t i = 0; i < m->rec_n; i++)
                free(m->rec[(m->rec_first + i) % MOCK_RECORDS_MAX]);
        free(m->rec);
        mock_body_cache_free(m->bodies);
        pthread_cond_destroy(&m->wake);
        pthread_mutex_destroy(&m->lock);
        free(m);
}
