/* model-http.c: model_client_new, the HTTP providers: one model request through the HTTP client
 * (src/shared/http-client), its retries, its timeouts and its failures told as one line.
 *
 * One exchange: the request encoded once (model-openai.c, model-anthropic.c); the answer's status
 * and type known before its body is read (httpc's on_response): a 2xx to a streaming request that
 * is not JSON goes through the SSE decoder into the API's stream assembler, which hands text and
 * tool calls to the caller as they come; anything else is collected (bounded) and read whole, a
 * 200 with JSON to a streaming request included (llama.cpp, LM Studio, gateways). Headers give
 * the request id, retry-after(-ms) and x-should-retry.
 *
 * Retries (model.h): 408, 409, 429, >= 500, no connection, a timeout, a cut stream, a stream's
 * error of those kinds; never once streamed content was handed on, never for billing
 * (insufficient_quota, enforced_spend_limit_reached), never when x-should-retry says false, never
 * past the caller's deadline. The waits between them watch the cancel flag. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "http-client.h"
#include "macro.h"
#include "model-internal.h"
#include "time-util.h"

#define OPENAI_BASE_URL "https://api.openai.com/v1"
#define ANTHROPIC_BASE_URL "https://api.anthropic.com"
#define ANTHROPIC_VERSION "2023-06-01"
#define OWN_HEADERS 5U     /* content-type, accept, the credential, anthropic-version, fast mode's beta */
#define CANCEL_POLL_MS 50U /* how often a wait between retries looks at the cancel flag */
#define LABEL_URL_MAX 160U /* bytes of the base URL named in a failure's line */
#define EFFORT_MAX 16U     /* bytes of an effort ("medium") and its NUL */

typedef struct provider {
        model_api api;
        char *model;
        char *base_url;
        char *url;      /* the endpoint */
        char **headers; /* NULL-ended: hull's own, then the configuration's */
        size_t n_headers;
        char *key_header; /* the credential's line (wiped at free) */
        bool compat;
        bool stream;
        uint32_t max_output_tokens;
        char effort[EFFORT_MAX]; /* "" none */
        bool fast, cache;
        uint64_t request_timeout_ms, idle_timeout_ms, connect_timeout_ms;
        unsigned max_retries;
        char label[LABEL_URL_MAX + 32]; /* "openai at https://..." */
        httpc *http;
} provider;

/* ---- one exchange ---- */

typedef struct exchange {
        const provider *p;
        const model_call_opts *o; /* the caller's */
        model_call_opts proxy;    /* what the assembler calls: the caller's callbacks, watched */
        bool stream;              /* a streamed answer was asked for */
        char request_id[MODEL_REQUEST_ID_MAX];
        char retry_after[HTTPC_HEADER_VALUE_MAX], retry_after_ms[HTTPC_HEADER_VALUE_MAX];
        int should_retry; /* x-should-retry: -1 unsaid, 0, 1 */
        bool responded;
        long status;
        char content_type[HTTPC_HEADER_VALUE_MAX];
        bool sse; /* the body goes to the decoder */
        dynbuf body;
        bool body_cut; /* an error body over its bound: what came is enough */
        sse_decoder dec;
        model_stream *ms;
        int stop;            /* why on_data stopped the transfer (negative errno), 0 */
        hull_error stop_e;   /* what the assembler said then */
        int caller_error;    /* a callback of the caller's returned this */
        bool deadline_bound; /* the transfer's timeout was the caller's deadline */
} exchange;

static int proxy_text(void *ud, const char *text, size_t len) {
        exchange *x = ud;
        int r = x->o->on_text ? x->o->on_text(x->o->ud, text, len) : 0;
        if (r < 0)
                x->caller_error = r;
        return r;
}

static int proxy_tool(void *ud, const char *id, const char *name) {
        exchange *x = ud;
        int r = x->o->on_tool_use ? x->o->on_tool_use(x->o->ud, id, name) : 0;
        if (r < 0)
                x->caller_error = r;
        return r;
}

static void keep_header(char *buf, size_t size, const char *value) {
        size_t n = strlen(value);
        if (n < size)
                memcpy(buf, value, n + 1);
}

static int on_header(void *ud, const char *name, const char *value) {
        exchange *x = ud;

        if (strcasecmp(name, "x-request-id") == 0 || strcasecmp(name, "request-id") == 0)
                model_quote(x->request_id, sizeof(x->request_id), value, strlen(value));
        else if (strcasecmp(name, "retry-after-ms") == 0)
                keep_header(x->retry_after_ms, sizeof(x->retry_after_ms), value);
        else if (strcasecmp(name, "retry-after") == 0)
                keep_header(x->retry_after, sizeof(x->retry_after), value);
        else if (strcasecmp(name, "x-should-retry") == 0)
                x->should_retry = strcasecmp(value, "true") == 0 ? 1 : strcasecmp(value, "false") == 0 ? 0 : -1;
        return 0;
}

static bool is_success(long status) {
        return status >= 200 && status < 300;
}

static int on_response(void *ud, long status, const char *content_type) {
        exchange *x = ud;

        x->responded = true;
        x->status = status;
        keep_header(x->content_type, sizeof(x->content_type), content_type);
        /* Only a success is a stream: an error answer is a document (model-apis.md §3); so is a
         * 200 whose type says JSON (or HTML, or text: a proxy's page). */
        x->sse = x->stream && is_success(status) &&
                 (!content_type[0] || strcasestr(content_type, "event-stream") ||
                  !(strcasestr(content_type, "json") || strcasestr(content_type, "html") ||
                    strcasestr(content_type, "text/plain")));
        dynbuf_init(&x->body, is_success(status) ? MODEL_ANSWER_MAX : MODEL_ERROR_BODY_MAX);
        if (x->sse) {
                sse_init(&x->dec, MODEL_STREAM_EVENT_MAX);
                if (model_stream_new(x->p->api, &x->ms) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int on_event(void *ud, const sse_event *ev) {
        exchange *x = ud;
        int r = model_stream_event(x->ms, ev, &x->proxy, &x->stop_e);
        return r == 1 ? 0 : r;
}

static int on_data(void *ud, const char *p, size_t n) {
        exchange *x = ud;
        int r;

        if (x->o->cancel && atomic_load(x->o->cancel))
                return x->stop = -ECANCELED;
        if (x->sse) {
                r = sse_feed(&x->dec, p, n, on_event, x);
                if (r == -E2BIG && !x->stop_e.err)
                        hull_fail(&x->stop_e, r, "a stream event is over %u bytes", MODEL_STREAM_EVENT_MAX);
                return r < 0 ? (x->stop = r) : 0;
        }
        r = dynbuf_add(&x->body, p, n);
        if (r == -E2BIG && !is_success(x->status)) {
                /* An error answer's first bytes say enough. */
                dynbuf_add(&x->body, p, x->body.max - x->body.len);
                x->body_cut = true;
                return x->stop = -EMSGSIZE;
        }
        if (r == -E2BIG)
                hull_fail(&x->stop_e, r, "the answer is over %u bytes", MODEL_ANSWER_MAX);
        return r < 0 ? (x->stop = r) : 0;
}

static void exchange_done(exchange *x) {
        dynbuf_free(&x->body);
        sse_done(&x->dec);
        model_stream_free(x->ms);
        x->ms = NULL;
}

/* ---- failures ---- */

/* A failure's detail, cut to its buffer (an API's words are long; the line has its bound). */
_printf_(3, 4) static void detailf(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
}

/* "401 invalid_api_key: Incorrect API key provided" from what the API said. */
static void api_detail(char *buf, size_t size, long status, const model_api_error *err) {
        const char *what = err->code[0] && !err->numeric_code ? err->code : err->type;
        char st[24] = "";

        if (status)
                snprintf(st, sizeof(st), "%ld", status);
        snprintf(buf, size, "%s%s%s%s%s", st, st[0] && what[0] ? " " : "", what, st[0] || what[0] ? ": " : "",
                 err->message[0] ? err->message : "no message");
}

static void set_api_type(model_failure *f, const model_api_error *err) {
        const char *what = err->code[0] && !err->numeric_code ? err->code : err->type;
        model_quote(f->api_type, sizeof(f->api_type), what, strlen(what));
}

static const char *key_variable(model_api api) {
        return api == MODEL_API_ANTHROPIC ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
}

/* The one line for the user (and for on_retry), from the failure and its detail. */
static int fail_line(const provider *p, const model_failure *f, const char *detail, hull_error *e) {
        char rid[MODEL_REQUEST_ID_MAX + 16] = "", tries[32] = "";
        int err;

        if (f->request_id[0])
                snprintf(rid, sizeof(rid), " [request %s]", f->request_id);
        if (f->attempts > 1)
                snprintf(tries, sizeof(tries), " after %u attempts", f->attempts);
        switch (f->kind) {
        case MODEL_FAIL_AUTH:
                return hull_fail(e, -EACCES, "model: %s refused the API key: %s (set %s or --api-key)%s", p->label,
                                 detail, key_variable(p->api), rid);
        case MODEL_FAIL_NOT_FOUND:
                return hull_fail(e, -ENOENT,
                                 "model: %s does not know the model \"%s\": %s (check the model's name and the base "
                                 "URL)%s",
                                 p->label, p->model, detail, rid);
        case MODEL_FAIL_CONTEXT:
                return hull_fail(e, -E2BIG,
                                 "model: the prompt is over %s's context window: %s (shorten the conversation or use a "
                                 "model with a larger window)%s",
                                 p->model, detail, rid);
        case MODEL_FAIL_BAD_REQUEST:
                return hull_fail(e, -EINVAL, "model: %s refused the request: %s (an option it does not support?)%s",
                                 p->label, detail, rid);
        case MODEL_FAIL_RATE_LIMITED:
                return hull_fail(e, -EAGAIN, "model: %s is rate-limiting hull%s: %s (wait, then try again)%s", p->label,
                                 tries, detail, rid);
        case MODEL_FAIL_OVERLOADED:
                return hull_fail(e, -EAGAIN, "model: %s is overloaded%s: %s (try again later)%s", p->label, tries,
                                 detail, rid);
        case MODEL_FAIL_SERVER:
                return hull_fail(e, -EIO, "model: %s failed%s: %s (try again later)%s", p->label, tries, detail, rid);
        case MODEL_FAIL_BILLING:
                return hull_fail(e, -EDQUOT,
                                 "model: %s refused for billing: %s (check the account's plan and credit)%s", p->label,
                                 detail, rid);
        case MODEL_FAIL_UNREACHABLE:
                return hull_fail(e, -ECONNREFUSED,
                                 "model: %s is unreachable%s: %s (is the server running, and the base URL right?)%s",
                                 p->label, tries, detail, rid);
        case MODEL_FAIL_TIMEOUT:
                return hull_fail(e, -ETIMEDOUT, "model: %s: %s%s", p->label, detail, rid);
        case MODEL_FAIL_TRUNCATED:
                return hull_fail(e, -EPROTO, "model: %s cut its answer short%s: %s (try again)%s", p->label, tries,
                                 detail, rid);
        case MODEL_FAIL_MALFORMED:
                return hull_fail(e, -EPROTO,
                                 "model: %s answered with something that is not a model answer: %s (is the "
                                 "base URL right?)%s",
                                 p->label, detail, rid);
        case MODEL_FAIL_CANCELED:
                return hull_fail(e, -ECANCELED, "model: the request to %s was cancelled%s", p->label, rid);
        case MODEL_FAIL_NONE:
        case _MODEL_FAIL_MAX:
                break;
        }
        err = e && e->err ? e->err : -EIO;
        return hull_fail(e, err, "model: %s: %s%s", p->label, detail, rid);
}

/* The answer's text and calls to the caller, for a streaming request answered whole. */
static int hand_on_whole(exchange *x, const model_response *a) {
        const json_t *b;
        size_t k;
        int r = 0;

        json_array_foreach(json_object_get(a->message, "content"), k, b) {
                const char *type = json_string_value(json_object_get(b, "type"));
                if (r == 0 && strcmp(type, "text") == 0)
                        r = proxy_text(x, json_string_value(json_object_get(b, "text")),
                                       json_string_length(json_object_get(b, "text")));
                else if (r == 0 && strcmp(type, "tool_use") == 0)
                        r = proxy_tool(x, json_string_value(json_object_get(b, "id")),
                                       json_string_value(json_object_get(b, "name")));
        }
        return r;
}

/* What the failed transfer (r < 0) was. */
static model_fail transfer_failure(exchange *x, int r, const hull_error *he, char *detail, size_t size) {
        const provider *p = x->p;

        if ((r == -ECANCELED || x->stop == -ECANCELED) && x->o->cancel && atomic_load(x->o->cancel))
                return MODEL_FAIL_CANCELED;
        if (x->stop == -EBADMSG) {
                const model_api_error *err = model_stream_error(x->ms);
                api_detail(detail, size, 0, err);
                return model_error_kind(x->status, err);
        }
        if (x->stop && x->stop_e.err) {
                detailf(detail, size, "%s", x->stop_e.msg);
                return x->stop == -ENOMEM ? MODEL_FAIL_NONE : MODEL_FAIL_MALFORMED;
        }
        if (r == -ETIME) {
                detailf(detail, size, "the stream sent nothing for %llu s (its idle timeout; try again)",
                        (unsigned long long) (p->idle_timeout_ms / 1000));
                return MODEL_FAIL_TIMEOUT;
        }
        if (r == -ETIMEDOUT) {
                if (x->deadline_bound)
                        detailf(detail, size, "the call's deadline passed before the answer was complete");
                else if (!x->responded)
                        detailf(detail, size, "no answer within %llu s (the request timeout)",
                                (unsigned long long) (p->request_timeout_ms / 1000));
                else
                        detailf(detail, size, "the answer was not complete within %llu s (the request timeout)",
                                (unsigned long long) (p->request_timeout_ms / 1000));
                return MODEL_FAIL_TIMEOUT;
        }
        if (r == -ECONNREFUSED || r == -EHOSTUNREACH || (!x->responded && (r == -EPROTO || r == -EIO))) {
                /* httpc's message: "http: cannot reach URL (libcurl's reason): strerror". */
                const char *open = strchr(he->msg, '('), *close = strrchr(he->msg, ')');
                if (open && close > open)
                        detailf(detail, size, "%.*s", (int) (close - open - 1), open + 1);
                else
                        detailf(detail, size, "%s", he->msg);
                return MODEL_FAIL_UNREACHABLE;
        }
        if (r == -EPROTO || r == -EIO) {
                detailf(detail, size, "the connection broke after %ld (%s)", x->status, he->msg);
                return MODEL_FAIL_TRUNCATED;
        }
        if (r == -EFBIG) {
                detailf(detail, size, "a streamed answer over %u bytes", MODEL_STREAM_BYTES_MAX);
                return MODEL_FAIL_MALFORMED;
        }
        detailf(detail, size, "%s", he->msg);
        return MODEL_FAIL_NONE;
}

/* One request. Returns 0 with *ret, or a negative errno with *f and *detail (the kind's line is
 * made by the caller); *x stays for the retry decision. */
static int exchange_run(exchange *x, const char *body, size_t len, const model_call_opts *o, model_response *ret,
                        model_failure *f, char *detail, size_t size) {
        const provider *p = x->p;
        hull_error he = {0};
        httpc_answer a = {0};
        model_api_error err = {0};
        uint64_t timeout = p->request_timeout_ms;
        int r;

        if (o->deadline_mono_ms) {
                uint64_t now = now_mono_ms();
                if (now >= o->deadline_mono_ms) {
                        x->deadline_bound = true;
                        f->kind = MODEL_FAIL_TIMEOUT;
                        detailf(detail, size, "the call's deadline passed before the request");
                        return -ETIMEDOUT;
                }
                if (o->deadline_mono_ms - now < timeout) {
                        timeout = o->deadline_mono_ms - now;
                        x->deadline_bound = true;
                }
        }
        httpc_request req = {
                .method = "POST",
                .url = p->url,
                .headers = (const char *const *) p->headers,
                .body_from = HTTPC_BODY_BUFFER,
                .body = body,
                .body_len = len,
                .userdata = x,
                .on_data = on_data,
                .on_header = on_header,
                .on_response = on_response,
                .cancel = o->cancel,
                .connect_timeout_ms = p->connect_timeout_ms,
                .timeout_ms = timeout,
                .idle_timeout_ms = x->stream ? p->idle_timeout_ms : 0,
                .answer_max = MODEL_STREAM_BYTES_MAX,
        };
        r = httpc_perform(p->http, &req, &a, &he);
        httpc_answer_done(&a);
        if (r == -EMSGSIZE && x->body_cut)
                r = 0;
        if ((r == -EPROTO || r == -EIO) && x->responded && !is_success(x->status) && !x->stop)
                r = 0; /* an error answer cut short: its status and first bytes say enough */
        memcpy(f->request_id, x->request_id, sizeof(f->request_id));
        f->status = x->status;
        if (x->caller_error) {
                f->kind = MODEL_FAIL_CANCELED;
                detailf(detail, size, "stopped by the caller");
                return x->caller_error;
        }
        if (r < 0) {
                f->kind = transfer_failure(x, r, &he, detail, size);
                if (x->stop == -EBADMSG)
                        set_api_type(f, model_stream_error(x->ms));
                return r == -ENOMEM || x->stop == -ENOMEM ? -ENOMEM : r;
        }
        if (!is_success(x->status)) {
                model_error_parse(x->body.buf ? x->body.buf : "", x->body.len, &err);
                f->kind = model_error_kind(x->status, &err);
                set_api_type(f, &err);
                api_detail(detail, size, x->status, &err);
                return -EIO;
        }
        if (x->sse) {
                bool pending = sse_finish(&x->dec) == 1;
                r = model_stream_finish(x->ms, ret, &he);
                if (r == -EPIPE) {
                        f->kind = MODEL_FAIL_TRUNCATED;
                        detailf(detail, size, "%s%s", he.msg, pending ? ", in the middle of an event" : "");
                        return -EPROTO;
                }
                if (r < 0) {
                        f->kind = r == -ENOMEM ? MODEL_FAIL_NONE : MODEL_FAIL_MALFORMED;
                        detailf(detail, size, "%s", he.msg);
                        return r;
                }
        } else {
                const char *b = x->body.buf ? x->body.buf : "";
                r = p->api == MODEL_API_ANTHROPIC ? model_anthropic_decode(b, x->body.len, ret, &err, &he)
                                                  : model_openai_decode(b, x->body.len, ret, &err, &he);
                if (r == -EBADMSG) {
                        /* An error in a 200 (llama.cpp's stream answered with JSON, a gateway's). */
                        f->kind = model_error_kind(x->status, &err);
                        set_api_type(f, &err);
                        api_detail(detail, size, x->status, &err);
                        return -EIO;
                }
                if (r < 0) {
                        f->kind = r == -ENOMEM ? MODEL_FAIL_NONE : MODEL_FAIL_MALFORMED;
                        detailf(detail, size, "%ld %s: %s", x->status,
                                x->content_type[0] ? x->content_type : "(no type)", he.msg);
                        return r;
                }
                if (x->stream) {
                        r = hand_on_whole(x, ret);
                        if (r < 0) {
                                model_response_done(ret);
                                f->kind = MODEL_FAIL_CANCELED;
                                detailf(detail, size, "stopped by the caller");
                                return r;
                        }
                }
        }
        memcpy(ret->request_id, x->request_id, sizeof(ret->request_id));
        return 0;
}

/* ---- the call, with its retries ---- */

static double jitter(void) {
        uint32_t v;
        return getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t) sizeof(v) ? (double) v / 4294967296.0 : 0.0;
}

/* Sleep ms, waking for a cancel. Returns 0 or -ECANCELED. */
static int wait_ms(uint64_t ms, const atomic_bool *cancel) {
        uint64_t end = now_mono_ms() + ms;

        for (;;) {
                uint64_t now = now_mono_ms();
                if (cancel && atomic_load(cancel))
                        return -ECANCELED;
                if (now >= end)
                        return 0;
                uint64_t step = MIN(end - now, (uint64_t) CANCEL_POLL_MS);
                struct timespec ts = {.tv_sec = 0, .tv_nsec = (long) step * 1000000L};
                nanosleep(&ts, NULL);
        }
}

static bool may_retry(const provider *p, const exchange *x, const model_failure *f, unsigned attempt) {
        if (attempt > p->max_retries || (x->ms && model_stream_handed_on(x->ms)) || x->caller_error)
                return false;
        if (f->kind == MODEL_FAIL_BILLING || f->kind == MODEL_FAIL_CANCELED || f->kind == MODEL_FAIL_NONE ||
            (f->kind == MODEL_FAIL_TIMEOUT && x->deadline_bound))
                return false;
        if (x->should_retry == 0)
                return false;
        if (x->should_retry == 1)
                return true;
        return model_fail_retryable(f->kind, f->status);
}

static int provider_call(void *impl, const model_request *r, const model_call_opts *o, model_response *ret,
                         model_failure *ret_fail, hull_error *e) {
        provider *p = impl;
        model_wire_cfg w = {
                .api = p->api,
                .model = p->model,
                .compat = p->compat,
                .stream = p->stream,
                .max_output_tokens = p->max_output_tokens,
                .effort = p->effort[0] ? p->effort : NULL,
                .fast = p->fast,
                .cache = p->cache,
        };
        _cleanup_free_ char *body = NULL;
        size_t len = 0;
        int k;

        k = p->api == MODEL_API_ANTHROPIC ? model_anthropic_encode(&w, r, &body, &len, e)
                                          : model_openai_encode(&w, r, &body, &len, e);
        if (k < 0) {
                ret_fail->kind = k == -ENOMEM ? MODEL_FAIL_NONE : MODEL_FAIL_BAD_REQUEST;
                return k;
        }
        for (unsigned attempt = 1;; attempt++) {
                exchange x = {.p = p, .o = o, .stream = p->stream, .should_retry = -1};
                model_failure f = {.attempts = attempt};
                model_response a = {0};
                char detail[HULL_ERROR_MSG_MAX];
                uint64_t delay = 0;
                bool retry;

                x.proxy = (model_call_opts){.on_text = proxy_text, .on_tool_use = proxy_tool, .ud = &x};
                sse_init(&x.dec, MODEL_STREAM_EVENT_MAX);
                detail[0] = '\0';
                k = exchange_run(&x, body, len, o, &a, &f, detail, sizeof(detail));
                if (k == 0) {
                        exchange_done(&x);
                        a.attempts = attempt;
                        *ret = a;
                        return 0;
                }
                retry = may_retry(p, &x, &f, attempt);
                if (retry && !model_retry_after(p->api, x.retry_after_ms[0] ? x.retry_after_ms : NULL,
                                                x.retry_after[0] ? x.retry_after : NULL, (int64_t) time(NULL), &delay))
                        delay = model_backoff_ms(attempt, jitter());
                if (retry && o->deadline_mono_ms && now_mono_ms() + delay >= o->deadline_mono_ms) {
                        size_t n = strlen(detail);
                        retry = false; /* no time left for another try: the failure as it is */
                        detailf(detail + n, sizeof(detail) - n, " (the call's deadline leaves no time to retry)");
                }
                exchange_done(&x);
                if (k == -ENOMEM && f.kind == MODEL_FAIL_NONE) {
                        *ret_fail = f;
                        return hull_fail(e, -ENOMEM, "model: out of memory");
                }
                if (!retry) {
                        *ret_fail = f;
                        if (f.kind == MODEL_FAIL_CANCELED && k != -ECANCELED) /* a callback's own error (model.h) */
                                return hull_err(e, k, "model: the request to %s was stopped by its caller", p->label);
                        return fail_line(p, &f, detail, e);
                }
                if (o->on_retry) {
                        hull_error line = {0};
                        fail_line(p, &f, detail, &line);
                        o->on_retry(o->ud, attempt, delay, &f, line.msg);
                }
                if (wait_ms(delay, o->cancel) < 0) {
                        f.kind = MODEL_FAIL_CANCELED;
                        *ret_fail = f;
                        return fail_line(p, &f, "", e);
                }
        }
}

/* ---- the client ---- */

static void provider_free(void *impl) {
        provider *p = impl;

        if (!p)
                return;
        httpc_free(p->http);
        for (size_t i = 0; i < p->n_headers; i++) {
                if (p->headers[i] == p->key_header)
                        explicit_bzero(p->key_header, strlen(p->key_header));
                free(p->headers[i]);
        }
        free(p->headers);
        free(p->url);
        free(p->base_url);
        free(p->model);
        free(p);
}

static const model_ops provider_ops = {
        .call = provider_call,
        .free = provider_free,
};

static bool valid_header_line(const char *h) {
        const char *colon = strchr(h, ':');
        return colon && colon != h && !strpbrk(h, "\r\n");
}

/* base_url's host is api.openai.com. */
static bool is_openai_host(const char *url) {
        const char *h = strstr(url, "://"), *end;

        if (!h)
                return false;
        h += 3;
        end = h + strcspn(h, "/:?#");
        return (size_t) (end - h) == strlen("api.openai.com") &&
               strncasecmp(h, "api.openai.com", (size_t) (end - h)) == 0;
}

static int add_header(provider *p, char *line) {
        if (!line)
                return -ENOMEM;
        p->headers[p->n_headers++] = line;
        return 0;
}

int model_client_new(const model_config *cfg, model_client **ret, hull_error *e) {
        const char *base, *key;
        size_t n_extra = 0, base_len;
        provider *p = NULL;
        int r;

        if (!cfg || !ret)
                return hull_fail(e, -EINVAL, "model: internal error: no configuration");
        if (cfg->api >= _MODEL_API_MAX)
                return hull_fail(e, -EINVAL, "model: unknown provider API %d (openai or anthropic)", (int) cfg->api);
        if (!cfg->model || !cfg->model[0])
                return hull_fail(e, -EINVAL, "model: no model given (--model or HULL_MODEL)");
        if (strlen(cfg->model) >= MODEL_SHORT_STR_MAX * 4 || strpbrk(cfg->model, "\r\n"))
                return hull_fail(e, -EINVAL, "model: the model's name is too long or has a line break");
        base = cfg->base_url && cfg->base_url[0] ? cfg->base_url
               : cfg->api == MODEL_API_ANTHROPIC ? ANTHROPIC_BASE_URL
                                                 : OPENAI_BASE_URL;
        base_len = strlen(base);
        while (base_len > 0 && base[base_len - 1] == '/')
                base_len--;
        if ((strncasecmp(base, "http://", 7) != 0 && strncasecmp(base, "https://", 8) != 0) || strpbrk(base, " \t\r\n"))
                return hull_fail(e, -EINVAL, "model: the base URL \"%.200s\" is not an http:// or https:// URL", base);
        if (base_len + 32 > HTTPC_URL_MAX)
                return hull_fail(e, -EINVAL, "model: the base URL is over %u bytes", HTTPC_URL_MAX - 32);
        key = cfg->api_key && cfg->api_key[0] ? cfg->api_key : NULL;
        if (key && strpbrk(key, "\r\n"))
                return hull_fail(e, -EINVAL, "model: the API key has a line break");
        if (cfg->headers)
                for (; cfg->n_headers ? n_extra < cfg->n_headers : cfg->headers[n_extra] != NULL; n_extra++)
                        if (!cfg->headers[n_extra] || !valid_header_line(cfg->headers[n_extra]))
                                return hull_fail(e, -EINVAL, "model: extra header %zu is not one \"Name: value\" line",
                                                 n_extra + 1);
        if (n_extra > HTTPC_HEADERS_MAX - OWN_HEADERS)
                return hull_fail(e, -EINVAL, "model: more than %u extra headers", HTTPC_HEADERS_MAX - OWN_HEADERS);
        if (cfg->max_retries > MODEL_RETRIES_MAX)
                return hull_fail(e, -EINVAL, "model: at most %u retries", MODEL_RETRIES_MAX);

        p = calloc(1, sizeof(*p));
        if (!p)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        p->api = cfg->api;
        p->stream = cfg->stream;
        p->compat = cfg->compat < 0 ? !is_openai_host(base) : cfg->compat > 0;
        p->max_output_tokens = cfg->max_output_tokens ? cfg->max_output_tokens : MODEL_MAX_OUTPUT_TOKENS_DEFAULT;
        p->request_timeout_ms = cfg->request_timeout_ms ? cfg->request_timeout_ms : MODEL_REQUEST_TIMEOUT_MS;
        p->idle_timeout_ms = cfg->idle_timeout_ms ? cfg->idle_timeout_ms : MODEL_IDLE_TIMEOUT_MS;
        p->connect_timeout_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : MODEL_CONNECT_TIMEOUT_MS;
        p->max_retries = cfg->max_retries;
        snprintf(p->effort, sizeof(p->effort), "%s", cfg->effort ? cfg->effort : "");
        p->fast = cfg->fast;
        p->cache = !cfg->no_prompt_cache;
        p->model = strdup(cfg->model);
        p->base_url = strndup(base, base_len);
        p->headers = calloc(OWN_HEADERS + n_extra + 1, sizeof(char *));
        if (!p->model || !p->base_url || !p->headers ||
            asprintf(&p->url, "%s%s", p->base_url,
                     p->api == MODEL_API_ANTHROPIC ? "/v1/messages" : "/chat/completions") < 0) {
                p->url = NULL;
                provider_free(p);
                return hull_fail(e, -ENOMEM, "model: out of memory");
        }
        snprintf(p->label, sizeof(p->label), "%s at %.*s%s", model_api_to_string(p->api),
                 (int) MIN(base_len, (size_t) LABEL_URL_MAX), p->base_url, base_len > LABEL_URL_MAX ? "..." : "");
        /* The SDKs send accept: application/json on streaming requests too (model-apis.md §0). */
        r = add_header(p, strdup("Content-Type: application/json"));
        if (r == 0)
                r = add_header(p, strdup("Accept: application/json"));
        if (r == 0 && key) {
                char *line = NULL;
                if (asprintf(&line, p->api == MODEL_API_ANTHROPIC ? "x-api-key: %s" : "Authorization: Bearer %s", key) <
                    0)
                        line = NULL;
                r = add_header(p, line);
                p->key_header = line;
        }
        if (r == 0 && p->api == MODEL_API_ANTHROPIC) {
                char *line = NULL;
                const char *v = cfg->anthropic_version && cfg->anthropic_version[0] ? cfg->anthropic_version
                                                                                    : ANTHROPIC_VERSION;
                if (strpbrk(v, "\r\n")) {
                        provider_free(p);
                        return hull_fail(e, -EINVAL, "model: the anthropic version has a line break");
                }
                if (asprintf(&line, "anthropic-version: %s", v) < 0)
                        line = NULL;
                r = add_header(p, line);
                if (r == 0 && cfg->fast) /* speed "fast" is a beta of the Messages API */
                        r = add_header(p, strdup("anthropic-beta: fast-mode-2026-02-01"));
        }
        for (size_t i = 0; r == 0 && i < n_extra; i++)
                r = add_header(p, strdup(cfg->headers[i]));
        if (r < 0) {
                provider_free(p);
                return hull_fail(e, -ENOMEM, "model: out of memory");
        }
        r = httpc_new(&p->http, e);
        if (r < 0) {
                provider_free(p);
                if (r == -ENOMEM)
                        return r;
                if (e)
                        e->err = -ENOENT; /* its message names the package to install */
                return -ENOENT;
        }
        httpc_keep_connections(p->http); /* one endpoint, asked turn after turn */
        r = model_client_wrap(&provider_ops, p, ret);
        if (r < 0) {
                provider_free(p);
                return hull_fail(e, r, "model: out of memory");
        }
        return 0;
}
