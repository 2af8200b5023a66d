/* mock-script.c: hull mock-model's script, parsed and checked (every field by name, unknown ones
 * refused, so a typo is an error and not a silently ignored fault), and each step rendered as the
 * bytes of an answer in OpenAI's or Anthropic's wire format (model-apis.md §1, §2, §4). Pure. */
#include "mock-script.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "macro.h"
#include "mock-template.h"

/* ---- parsing ---- */

typedef struct pctx {
        hull_error *e;
        char where[64]; /* "step 3" */
} pctx;

_printf_(3, 4) static int bad(const pctx *pc, const char *field, const char *fmt, ...) {
        char msg[HULL_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return hull_fail(pc->e, -EINVAL, "%s%s%s: %s (see docs/MOCK-MODEL.md)", pc->where, pc->where[0] ? ": " : "",
                         field, msg);
}

/* Every key of o must be one of names (NULL-terminated); "comment" is always allowed. */
static int only_keys(const pctx *pc, const char *prefix, json_t *o, const char *const *names) {
        const char *key;
        json_t *v;
        json_object_foreach(o, key, v) {
                bool known = strcmp(key, "comment") == 0;
                for (size_t i = 0; !known && names[i]; i++)
                        known = strcmp(key, names[i]) == 0;
                if (!known) {
                        char field[SERVE_SHORT_STR_MAX];
                        snprintf(field, sizeof(field), "%s%.100s", prefix, key);
                        return bad(pc, field, "unknown field");
                }
        }
        return 0;
}

static int dup_str(const char *s, char **ret) {
        char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

/* An optional string field: *ret stays NULL when absent. */
static int get_str(const pctx *pc, json_t *o, const char *key, bool nonempty, char **ret) {
        json_t *v = json_object_get(o, key);
        if (!v)
                return 0;
        if (!json_is_string(v) || (nonempty && json_string_length(v) == 0))
                return bad(pc, key, "must be a %sstring", nonempty ? "non-empty " : "");
        return dup_str(json_string_value(v), ret);
}

/* An optional whole number in [min, max]; *ret keeps its default when absent. */
static int get_uint(const pctx *pc, json_t *o, const char *key, uint64_t min, uint64_t max, uint64_t *ret) {
        json_t *v = json_object_get(o, key);
        if (!v)
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t) json_integer_value(v) < min ||
            (uint64_t) json_integer_value(v) > max)
                return bad(pc, key, "must be a whole number from %" PRIu64 " to %" PRIu64, min, max);
        *ret = (uint64_t) json_integer_value(v);
        return 0;
}

static int get_bool(const pctx *pc, json_t *o, const char *key, bool *ret) {
        json_t *v = json_object_get(o, key);
        if (!v)
                return 0;
        if (!json_is_boolean(v))
                return bad(pc, key, "must be true or false");
        *ret = json_is_true(v);
        return 0;
}

static void strs_free(mock_strs *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        free(s->v);
        *s = (mock_strs){0};
}

/* A string, or a list of strings (its pieces as streamed): *ret_whole is their concatenation. */
static int get_pieces(const pctx *pc, json_t *v, const char *field, char **ret_whole, mock_strs *ret_pieces) {
        if (json_is_string(v))
                return dup_str(json_string_value(v), ret_whole);
        if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > MOCK_PIECES_MAX)
                return bad(pc, field, "must be a string or a list of 1 to %u strings (its pieces as streamed)",
                           MOCK_PIECES_MAX);
        _cleanup_dynbuf_ dynbuf whole;
        dynbuf_init(&whole, MOCK_SCRIPT_BYTES_MAX);
        mock_strs p = {.v = calloc(json_array_size(v), sizeof(char *))};
        if (!p.v)
                return -ENOMEM;
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
                if (!json_is_string(x)) {
                        strs_free(&p);
                        return bad(pc, field, "piece %zu is not a string", i);
                }
                int r = dup_str(json_string_value(x), &p.v[p.n]);
                if (r == 0) {
                        p.n++;
                        r = dynbuf_add(&whole, json_string_value(x), json_string_length(x));
                }
                if (r < 0) {
                        strs_free(&p);
                        return r;
                }
        }
        char *w = dynbuf_take(&whole, NULL);
        if (!w) {
                strs_free(&p);
                return -ENOMEM;
        }
        *ret_whole = w;
        *ret_pieces = p;
        return 0;
}

static const char *const kind_names[_MOCK_ERR_MAX] = {
        [MOCK_ERR_BAD_REQUEST] = "bad_request",
        [MOCK_ERR_CONTEXT_OVERFLOW] = "context_overflow",
        [MOCK_ERR_AUTH] = "auth",
        [MOCK_ERR_PERMISSION] = "permission",
        [MOCK_ERR_NOT_FOUND] = "model_not_found",
        [MOCK_ERR_RATE_LIMIT] = "rate_limit",
        [MOCK_ERR_QUOTA] = "quota",
        [MOCK_ERR_SERVER] = "server",
        [MOCK_ERR_OVERLOADED] = "overloaded",
        [MOCK_ERR_TIMEOUT] = "timeout",
};

unsigned mock_error_kind_status(mock_error_kind k) {
        switch (k) {
        case MOCK_ERR_BAD_REQUEST:
        case MOCK_ERR_CONTEXT_OVERFLOW:
                return 400;
        case MOCK_ERR_AUTH:
                return 401;
        case MOCK_ERR_PERMISSION:
                return 403;
        case MOCK_ERR_NOT_FOUND:
                return 404;
        case MOCK_ERR_RATE_LIMIT:
        case MOCK_ERR_QUOTA:
                return 429;
        case MOCK_ERR_SERVER:
        case _MOCK_ERR_MAX:
                break;
        case MOCK_ERR_OVERLOADED:
                return 529;
        case MOCK_ERR_TIMEOUT:
                return 504;
        }
        return 500;
}

static mock_error_kind kind_of_status(unsigned status) {
        switch (status) {
        case 401:
                return MOCK_ERR_AUTH;
        case 403:
                return MOCK_ERR_PERMISSION;
        case 404:
                return MOCK_ERR_NOT_FOUND;
        case 429:
                return MOCK_ERR_RATE_LIMIT;
        case 503:
        case 529:
                return MOCK_ERR_OVERLOADED;
        case 504:
                return MOCK_ERR_TIMEOUT;
        default:
                return status >= 400 && status < 500 ? MOCK_ERR_BAD_REQUEST : MOCK_ERR_SERVER;
        }
}

static void error_free(mock_error *x) {
        if (!x)
                return;
        free(x->type);
        free(x->message);
        json_decref(x->code);
        json_decref(x->param);
        free(x->retry_after);
        free(x->retry_after_ms);
        free(x);
}

/* A header value from a number of seconds or milliseconds, or a string as given. */
static int get_header_number(const pctx *pc, json_t *o, const char *key, char **ret) {
        json_t *v = json_object_get(o, key);
        if (!v)
                return 0;
        char buf[64];
        if (json_is_number(v) && json_number_value(v) >= 0 && isfinite(json_number_value(v)))
                snprintf(buf, sizeof(buf), "%.15g", json_number_value(v));
        else if (json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) < sizeof(buf) &&
                 !strpbrk(json_string_value(v), "\r\n"))
                snprintf(buf, sizeof(buf), "%s", json_string_value(v));
        else
                return bad(pc, key, "must be a number, or a one-line string such as an HTTP date");
        return dup_str(buf, ret);
}

static int parse_error(const pctx *pc, json_t *v, const char *field, bool in_stream, mock_error **ret) {
        static const char *const keys[] = {"kind",           "status",       "type",         "code",
                                           "message",        "param",        "shape",        "retry_after",
                                           "retry_after_ms", "should_retry", "after_events", NULL};
        char prefix[32];
        if (!json_is_object(v))
                return bad(pc, field, "must be an object such as {\"kind\": \"rate_limit\"} or {\"status\": 500}");
        snprintf(prefix, sizeof(prefix), "%s.", field);
        int r = only_keys(pc, prefix, v, keys);
        if (r < 0)
                return r;
        mock_error *x = calloc(1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        x->should_retry = -1;
        x->after_events = 2;
        json_t *kind = json_object_get(v, "kind");
        uint64_t status = 0, after = x->after_events;
        bool flat = false, retry = false;
        if (kind) {
                size_t k = 0;
                while (k < _MOCK_ERR_MAX &&
                       !(json_is_string(kind) && strcmp(json_string_value(kind), kind_names[k]) == 0))
                        k++;
                if (k == _MOCK_ERR_MAX) {
                        error_free(x);
                        return bad(pc, field,
                                   "kind must be one of bad_request, context_overflow, auth, permission, "
                                   "model_not_found, rate_limit, quota, server, overloaded, timeout");
                }
                x->kind = (mock_error_kind) k;
        }
        if ((r = get_uint(pc, v, "status", 200, 599, &status)) < 0 ||
            (r = get_str(pc, v, "type", true, &x->type)) < 0 ||
            (r = get_str(pc, v, "message", false, &x->message)) < 0 ||
            (r = get_header_number(pc, v, "retry_after", &x->retry_after)) < 0 ||
            (r = get_header_number(pc, v, "retry_after_ms", &x->retry_after_ms)) < 0 ||
            (r = get_uint(pc, v, "after_events", 0, MOCK_PIECES_MAX, &after)) < 0) {
                error_free(x);
                return r;
        }
        if (status && status != 200 && status < 400) {
                error_free(x);
                return bad(pc, field, "status must be 200 (an error object on a 200) or from 400 to 599");
        }
        if (json_object_get(v, "after_events") && !in_stream) {
                error_free(x);
                return bad(pc, field, "after_events belongs to stream_error");
        }
        json_t *code = json_object_get(v, "code"), *param = json_object_get(v, "param");
        if ((code && !json_is_string(code) && !json_is_integer(code) && !json_is_null(code)) ||
            (param && !json_is_string(param) && !json_is_null(param))) {
                error_free(x);
                return bad(pc, field, "code must be a string, a number or null; param a string or null");
        }
        x->code = json_incref(code);
        x->param = json_incref(param);
        json_t *shape = json_object_get(v, "shape");
        if (shape) {
                if (!json_is_string(shape) || (strcmp(json_string_value(shape), "flat") != 0 &&
                                               strcmp(json_string_value(shape), "standard") != 0)) {
                        error_free(x);
                        return bad(pc, field,
                                   "shape must be \"standard\" or \"flat\" (vLLM's error without a wrapper)");
                }
                flat = strcmp(json_string_value(shape), "flat") == 0;
        }
        if (json_object_get(v, "should_retry")) {
                if ((r = get_bool(pc, v, "should_retry", &retry)) < 0) {
                        error_free(x);
                        return r;
                }
                x->should_retry = retry;
        }
        if (!kind && status)
                x->kind = status == 200 ? MOCK_ERR_SERVER : kind_of_status((unsigned) status);
        else if (!kind && !status)
                x->kind = in_stream ? MOCK_ERR_OVERLOADED : MOCK_ERR_SERVER;
        x->status = status ? (unsigned) status : mock_error_kind_status(x->kind);
        x->flat = flat;
        x->after_events = after;
        *ret = x;
        return 0;
}

static int parse_call(const pctx *pc, json_t *v, size_t i, mock_call *c) {
        static const char *const keys[] = {"id", "name", "input", "arguments", NULL};
        char field[64], prefix[64];
        snprintf(field, sizeof(field), "tool_calls[%zu]", i);
        snprintf(prefix, sizeof(prefix), "tool_calls[%zu].", i);
        if (!json_is_object(v))
                return bad(pc, field, "must be an object such as {\"name\": \"read\", \"input\": {\"path\": \"a\"}}");
        int r = only_keys(pc, prefix, v, keys);
        if (r < 0)
                return r;
        json_t *name = json_object_get(v, "name");
        if (!json_is_string(name) || json_string_length(name) == 0) {
                snprintf(field, sizeof(field), "tool_calls[%zu].name", i);
                return bad(pc, field, "must be a non-empty string");
        }
        if ((r = dup_str(json_string_value(name), &c->name)) < 0 || (r = get_str(pc, v, "id", true, &c->id)) < 0)
                return r;
        json_t *input = json_object_get(v, "input"), *args = json_object_get(v, "arguments");
        if (input && !json_is_object(input)) {
                snprintf(field, sizeof(field), "tool_calls[%zu].input", i);
                return bad(pc, field, "must be an object");
        }
        if (args) {
                snprintf(field, sizeof(field), "tool_calls[%zu].arguments", i);
                if ((r = get_pieces(pc, args, field, &c->arguments, &c->pieces)) < 0)
                        return r;
        } else {
                c->arguments = input ? json_dumps(input, JSON_COMPACT | JSON_PRESERVE_ORDER) : strdup("{}");
                if (!c->arguments)
                        return -ENOMEM;
        }
        if (input)
                c->input = json_incref(input);
        else {
                json_t *parsed = json_loads(c->arguments, JSON_DECODE_ANY, NULL);
                if (json_is_object(parsed))
                        c->input = parsed;
                else {
                        json_decref(parsed);
                        c->input = json_object();
                }
        }
        return c->input ? 0 : -ENOMEM;
}

static int parse_usage(const pctx *pc, json_t *v, mock_step *st) {
        static const char *const keys[] = {"input_tokens", "output_tokens", "cache_read_input_tokens",
                                           "cache_creation_input_tokens", NULL};
        if (!json_is_object(v))
                return bad(pc, "usage", "must be an object such as {\"input_tokens\": 10, \"output_tokens\": 5}");
        int r = only_keys(pc, "usage.", v, keys);
        uint64_t in = UINT64_MAX, out = UINT64_MAX, cr = 0, cc = 0;
        const uint64_t max = INT32_MAX;
        if (r < 0 || (r = get_uint(pc, v, "input_tokens", 0, max, &in)) < 0 ||
            (r = get_uint(pc, v, "output_tokens", 0, max, &out)) < 0 ||
            (r = get_uint(pc, v, "cache_read_input_tokens", 0, max, &cr)) < 0 ||
            (r = get_uint(pc, v, "cache_creation_input_tokens", 0, max, &cc)) < 0)
                return r;
        st->has_usage = true;
        st->usage_cache =
                json_object_get(v, "cache_read_input_tokens") || json_object_get(v, "cache_creation_input_tokens");
        st->input_tokens = in == UINT64_MAX ? -1 : (int64_t) in;
        st->output_tokens = out == UINT64_MAX ? -1 : (int64_t) out;
        st->cache_read = (int64_t) cr;
        st->cache_creation = (int64_t) cc;
        return 0;
}

static int parse_quirks(const pctx *pc, json_t *v, unsigned *ret) {
        static const char *const names[] = {"usage_every_chunk", "usage_on_finish",      "no_usage_chunk", "no_index",
                                            "reuse_index",       "one_piece_tool_calls", "no_type"};
        if (!json_is_array(v))
                return bad(pc, "quirks", "must be a list of names");
        size_t i;
        json_t *q;
        unsigned set = 0;
        json_array_foreach(v, i, q) {
                size_t k = 0;
                while (k < ELEMENTSOF(names) && !(json_is_string(q) && strcmp(json_string_value(q), names[k]) == 0))
                        k++;
                if (k == ELEMENTSOF(names))
                        return bad(pc, "quirks",
                                   "entry %zu must be one of usage_every_chunk, usage_on_finish, no_usage_chunk, "
                                   "no_index, reuse_index, one_piece_tool_calls, no_type",
                                   i);
                set |= 1U << k;
        }
        *ret = set;
        return 0;
}

static int parse_cut(const pctx *pc, json_t *v, mock_cut **ret) {
        static const char *const keys[] = {"after_events", "mid_line", "clean", NULL};
        if (!json_is_object(v))
                return bad(pc, "cut", "must be an object such as {\"after_events\": 3, \"mid_line\": true}");
        int r = only_keys(pc, "cut.", v, keys);
        uint64_t after = SIZE_MAX;
        mock_cut c = {.after_events = SIZE_MAX};
        if (r < 0 || (r = get_uint(pc, v, "after_events", 0, MOCK_PIECES_MAX, &after)) < 0 ||
            (r = get_bool(pc, v, "mid_line", &c.mid_line)) < 0 || (r = get_bool(pc, v, "clean", &c.clean)) < 0)
                return r;
        c.after_events = json_object_get(v, "after_events") ? (size_t) after : SIZE_MAX;
        mock_cut *x = malloc(sizeof(*x));
        if (!x)
                return -ENOMEM;
        *x = c;
        *ret = x;
        return 0;
}

static int parse_writes(const pctx *pc, json_t *v, mock_step *st) {
        static const char *const names[] = {"event", "byte", "utf8", "crlf", "escape"};
        static const mock_writes modes[] = {MOCK_WRITES_EVENT, MOCK_WRITES_BYTES, MOCK_WRITES_UTF8, MOCK_WRITES_CRLF,
                                            MOCK_WRITES_ESCAPE};
        if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= MOCK_STREAM_QUEUE_BYTES) {
                st->writes = MOCK_WRITES_BYTES;
                st->write_bytes = (size_t) json_integer_value(v);
                return 0;
        }
        for (size_t k = 0; json_is_string(v) && k < ELEMENTSOF(names); k++)
                if (strcmp(json_string_value(v), names[k]) == 0) {
                        st->writes = modes[k];
                        st->write_bytes = 1;
                        return 0;
                }
        return bad(pc, "writes", "must be \"event\", \"byte\", \"utf8\", \"crlf\", \"escape\" or a number of bytes");
}

static int parse_headers(const pctx *pc, json_t *v, mock_step *st) {
        if (!json_is_object(v) || json_object_size(v) > MOCK_STEP_HEADERS_MAX)
                return bad(pc, "headers", "must be an object of at most %u names and string values",
                           MOCK_STEP_HEADERS_MAX);
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x) {
                bool name_ok = key[0] != '\0' && strlen(key) < SERVE_SHORT_STR_MAX;
                for (const char *p = key; *p && name_ok; p++)
                        name_ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                                  *p == '-' || *p == '_';
                if (!name_ok || !json_is_string(x) || json_string_length(x) > SERVE_HEADER_VALUE_MAX ||
                    strpbrk(json_string_value(x), "\r\n"))
                        return bad(pc, "headers",
                                   "'%.64s' must be a header name (letters, digits, '-') with a one-line "
                                   "string value",
                                   key);
                mock_header *h = &st->headers[st->n_headers];
                int r = dup_str(key, &h->name);
                if (r == 0 && (r = dup_str(json_string_value(x), &h->value)) < 0)
                        free(h->name);
                if (r < 0)
                        return r;
                st->n_headers++;
        }
        return 0;
}

/* The placeholders of a text or arguments (and of its pieces, each of which must hold its own
 * whole): checked, and st->templated set when there are any. */
static int check_template(const pctx *pc, const char *field, const char *whole, const mock_strs *pieces,
                          mock_step *st) {
        hull_error e = {0};
        int n = mock_template_check(whole, &e);
        if (n < 0)
                return bad(pc, field, "%s", e.msg);
        int in_pieces = 0;
        for (size_t i = 0; i < pieces->n; i++) {
                int k = mock_template_check(pieces->v[i], &e);
                if (k < 0)
                        return bad(pc, field, "piece %zu: %s", i, e.msg);
                in_pieces += k;
        }
        if (pieces->n > 0 && in_pieces != n)
                return bad(pc, field, "a placeholder ({{...}}) is cut between two pieces: keep each in one piece");
        if (n > 0)
                st->templated = true;
        return 0;
}

static int parse_step(pctx *pc, json_t *v, mock_step *st) {
        static const char *const keys[] = {"times",        "text",        "tool_calls",     "finish_reason",
                                           "stop_reason",  "id",          "model",          "created",
                                           "usage",        "delta_bytes", "quirks",         "error",
                                           "stream_error", "cut",         "delay_ms",       "event_delay_ms",
                                           "ping_ms",      "writes",      "write_delay_ms", "line_ending",
                                           "headers",      NULL};
        if (!json_is_object(v))
                return bad(pc, "the step", "must be an object such as {\"text\": \"Hello\"}");
        int r = only_keys(pc, "", v, keys);
        if (r < 0)
                return r;
        uint64_t times = 1, created = 0, delta = MOCK_DELTA_BYTES_DEFAULT, wd = MOCK_WRITE_DELAY_MS_DEFAULT;
        st->writes = MOCK_WRITES_EVENT;
        st->write_bytes = 1;
        st->input_tokens = st->output_tokens = -1;
        json_t *text = json_object_get(v, "text"), *calls = json_object_get(v, "tool_calls");
        if (text) {
                st->has_text = true;
                if ((r = get_pieces(pc, text, "text", &st->text, &st->pieces)) < 0)
                        return r;
        } else if ((r = dup_str("", &st->text)) < 0)
                return r;
        if (calls) {
                if (!json_is_array(calls) || json_array_size(calls) == 0 || json_array_size(calls) > MOCK_CALLS_MAX)
                        return bad(pc, "tool_calls", "must be a list of 1 to %u calls", MOCK_CALLS_MAX);
                st->calls = calloc(json_array_size(calls), sizeof(mock_call));
                if (!st->calls)
                        return -ENOMEM;
                size_t i;
                json_t *c;
                json_array_foreach(calls, i, c) {
                        st->n_calls++;
                        if ((r = parse_call(pc, c, i, &st->calls[i])) < 0)
                                return r;
                        char field[64];
                        snprintf(field, sizeof(field), "tool_calls[%zu].%s", i,
                                 json_object_get(c, "arguments") ? "arguments" : "input");
                        if ((r = check_template(pc, field, st->calls[i].arguments, &st->calls[i].pieces, st)) < 0)
                                return r;
                        json_t *input = json_object_get(c, "input");
                        if (input && json_object_get(c, "arguments")) { /* the input as given, too */
                                _cleanup_free_ char *dump = json_dumps(input, JSON_COMPACT);
                                snprintf(field, sizeof(field), "tool_calls[%zu].input", i);
                                if (!dump)
                                        return -ENOMEM;
                                if ((r = check_template(pc, field, dump, &(mock_strs){0}, st)) < 0)
                                        return r;
                        }
                }
        }
        if ((r = check_template(pc, "text", st->text, &st->pieces, st)) < 0)
                return r;
        json_t *x;
        if ((r = get_uint(pc, v, "times", 1, MOCK_STEP_TIMES_MAX, &times)) < 0 ||
            (r = get_str(pc, v, "finish_reason", true, &st->finish_reason)) < 0 ||
            (r = get_str(pc, v, "stop_reason", true, &st->stop_reason)) < 0 ||
            (r = get_str(pc, v, "id", true, &st->id)) < 0 || (r = get_str(pc, v, "model", true, &st->model)) < 0 ||
            (r = get_uint(pc, v, "created", 1, INT32_MAX, &created)) < 0 ||
            (r = get_uint(pc, v, "delta_bytes", 1, MOCK_STREAM_QUEUE_BYTES / 8, &delta)) < 0 ||
            (r = get_uint(pc, v, "delay_ms", 0, MOCK_DELAY_MS_MAX, &st->delay_ms)) < 0 ||
            (r = get_uint(pc, v, "event_delay_ms", 0, MOCK_DELAY_MS_MAX, &st->event_delay_ms)) < 0 ||
            (r = get_uint(pc, v, "ping_ms", 1, MOCK_DELAY_MS_MAX, &st->ping_ms)) < 0 ||
            (r = get_uint(pc, v, "write_delay_ms", 0, MOCK_DELAY_MS_MAX, &wd)) < 0)
                return r;
        st->times = (unsigned) times;
        st->created = (int64_t) created;
        st->delta_bytes = (size_t) delta;
        st->write_delay_ms = wd;
        if (((x = json_object_get(v, "usage")) && (r = parse_usage(pc, x, st)) < 0) ||
            ((x = json_object_get(v, "quirks")) && (r = parse_quirks(pc, x, &st->quirks)) < 0) ||
            ((x = json_object_get(v, "error")) && (r = parse_error(pc, x, "error", false, &st->error)) < 0) ||
            ((x = json_object_get(v, "stream_error")) &&
             (r = parse_error(pc, x, "stream_error", true, &st->stream_error)) < 0) ||
            ((x = json_object_get(v, "cut")) && (r = parse_cut(pc, x, &st->cut)) < 0) ||
            ((x = json_object_get(v, "writes")) && (r = parse_writes(pc, x, st)) < 0) ||
            ((x = json_object_get(v, "headers")) && (r = parse_headers(pc, x, st)) < 0))
                return r;
        if ((x = json_object_get(v, "line_ending"))) {
                const char *s = json_is_string(x) ? json_string_value(x) : "";
                if (strcmp(s, "lf") == 0)
                        st->eol = MOCK_EOL_LF;
                else if (strcmp(s, "crlf") == 0)
                        st->eol = MOCK_EOL_CRLF;
                else if (strcmp(s, "cr") == 0)
                        st->eol = MOCK_EOL_CR;
                else
                        return bad(pc, "line_ending", "must be \"lf\", \"crlf\" or \"cr\"");
        } else if (st->writes == MOCK_WRITES_CRLF)
                st->eol = MOCK_EOL_CRLF;
        if (st->writes == MOCK_WRITES_CRLF && st->eol != MOCK_EOL_CRLF)
                return bad(pc, "writes", "\"crlf\" cuts between CR and LF: it needs line_ending \"crlf\"");
        if (st->error && (text || calls || st->stream_error || st->cut))
                return bad(pc, "error",
                           "an error step answers with the error alone: drop text, tool_calls, "
                           "stream_error and cut (a stream that fails midway is stream_error)");
        if (st->stream_error && st->cut)
                return bad(pc, "stream_error", "a stream ends with an error or is cut, not both");
        if (!st->error && !st->stream_error && !text && !calls)
                return bad(pc, "the step", "must say what it answers: text, tool_calls, error or stream_error");
        return 0;
}

static void call_free(mock_call *c) {
        free(c->id);
        free(c->name);
        free(c->arguments);
        strs_free(&c->pieces);
        json_decref(c->input);
}

static void step_free(mock_step *st) {
        free(st->text);
        strs_free(&st->pieces);
        for (size_t i = 0; i < st->n_calls; i++)
                call_free(&st->calls[i]);
        free(st->calls);
        free(st->finish_reason);
        free(st->stop_reason);
        free(st->id);
        free(st->model);
        error_free(st->error);
        error_free(st->stream_error);
        free(st->cut);
        for (size_t i = 0; i < st->n_headers; i++) {
                free(st->headers[i].name);
                free(st->headers[i].value);
        }
}

void mock_script_free(mock_script *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_steps; i++)
                step_free(&s->steps[i]);
        free(s->steps);
        strs_free(&s->models);
        free(s);
}

int mock_script_parse(const char *text, size_t len, mock_script **ret, hull_error *e) {
        static const char *const keys[] = {"steps", "then", "models", NULL};
        pctx pc = {.e = e};
        json_error_t je;
        if (len > MOCK_SCRIPT_BYTES_MAX)
                return hull_fail(e, -EINVAL, "the script is over %u bytes", MOCK_SCRIPT_BYTES_MAX);
        _cleanup_(json_decrefp) json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!root)
                return hull_fail(e, -EINVAL, "not JSON: line %d column %d: %s", je.line, je.column, je.text);
        if (!json_is_object(root))
                return hull_fail(e, -EINVAL,
                                 "the script must be an object: {\"steps\": [...]} (see docs/MOCK-MODEL.md)");
        int r = only_keys(&pc, "", root, keys);
        if (r < 0)
                return r;
        json_t *steps = json_object_get(root, "steps");
        if (!json_is_array(steps) || json_array_size(steps) == 0 || json_array_size(steps) > MOCK_STEPS_MAX)
                return bad(&pc, "steps", "must be a list of 1 to %u steps", MOCK_STEPS_MAX);
        mock_script *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        json_t *then = json_object_get(root, "then"), *models = json_object_get(root, "models");
        if (then) {
                if (!json_is_string(then) ||
                    (strcmp(json_string_value(then), "repeat") != 0 && strcmp(json_string_value(then), "error") != 0)) {
                        mock_script_free(s);
                        return bad(&pc, "then", "must be \"repeat\" (the last step again) or \"error\" (500)");
                }
                s->then_error = strcmp(json_string_value(then), "error") == 0;
        }
        if (models) {
                size_t i;
                json_t *m;
                if (!json_is_array(models) || json_array_size(models) > MOCK_MODELS_MAX) {
                        mock_script_free(s);
                        return bad(&pc, "models", "must be a list of at most %u names", MOCK_MODELS_MAX);
                }
                s->models.v = calloc(json_array_size(models) + 1, sizeof(char *));
                if (!s->models.v) {
                        mock_script_free(s);
                        return -ENOMEM;
                }
                json_array_foreach(models, i, m) {
                        if (!json_is_string(m) || json_string_length(m) == 0) {
                                mock_script_free(s);
                                return bad(&pc, "models", "entry %zu must be a non-empty string", i);
                        }
                        if ((r = dup_str(json_string_value(m), &s->models.v[s->models.n])) < 0) {
                                mock_script_free(s);
                                return r;
                        }
                        s->models.n++;
                }
        }
        s->steps = calloc(json_array_size(steps), sizeof(mock_step));
        if (!s->steps) {
                mock_script_free(s);
                return -ENOMEM;
        }
        size_t i;
        json_t *v;
        json_array_foreach(steps, i, v) {
                snprintf(pc.where, sizeof(pc.where), "step %zu", i + 1);
                s->n_steps++;
                if ((r = parse_step(&pc, v, &s->steps[i])) < 0) {
                        if (r == -ENOMEM)
                                hull_err(e, r, "%s: cannot hold the script", pc.where);
                        mock_script_free(s);
                        return r;
                }
        }
        *ret = s;
        return 0;
}

bool mock_script_has_model(const mock_script *s, const char *model) {
        if (s->models.n == 0)
                return true;
        for (size_t i = 0; i < s->models.n; i++)
                if (strcmp(s->models.v[i], model) == 0)
                        return true;
        return false;
}

/* ---- writes ---- */

size_t mock_next_write(const char *p, size_t n, mock_writes w, size_t bytes) {
        if (n == 0)
                return 0;
        switch (w) {
        case MOCK_WRITES_EVENT:
                return n;
        case MOCK_WRITES_BYTES:
                return MIN(MAX(bytes, (size_t) 1), n);
        case MOCK_WRITES_UTF8: /* after a lead byte: the character's other bytes go in the next write */
                for (size_t i = 0; i + 1 < n; i++)
                        if (((unsigned char) p[i] & 0xC0) == 0xC0)
                                return i + 1;
                return n;
        case MOCK_WRITES_CRLF:
                for (size_t i = 0; i + 1 < n; i++)
                        if (p[i] == '\r' && p[i + 1] == '\n')
                                return i + 1;
                return n;
        case MOCK_WRITES_ESCAPE:
                for (size_t i = 0; i + 1 < n; i++)
                        if (p[i] == '\\')
                                return i + 1;
                return n;
        }
        return n;
}

/* ---- rendering ---- */

/* The words of each kind: OpenAI's type, code, param and message, Anthropic's type and message
 * (%s: the model). */
typedef struct kind_words {
        const char *oa_type, *oa_code, *oa_param, *oa_message;
        const char *an_type, *an_message;
} kind_words;

static const kind_words words[_MOCK_ERR_MAX] = {
        [MOCK_ERR_BAD_REQUEST] = {"invalid_request_error", NULL, NULL, "Invalid request (scripted by hull mock-model).",
                                  "invalid_request_error", "Invalid request (scripted by hull mock-model)."},
        [MOCK_ERR_CONTEXT_OVERFLOW] = {"invalid_request_error", "context_length_exceeded", "messages",
                                       "This model's maximum context length is 128000 tokens. However, your messages "
                                       "resulted in 130000 tokens. Please reduce the length of the messages.",
                                       "invalid_request_error", "prompt is too long: 130000 tokens > 128000 maximum"},
        [MOCK_ERR_AUTH] = {"invalid_request_error", "invalid_api_key", NULL,
                           "Incorrect API key provided. You can find your API key in your account settings.",
                           "authentication_error", "invalid x-api-key"},
        [MOCK_ERR_PERMISSION] = {"invalid_request_error", "unsupported_country_region_territory", NULL,
                                 "Country, region, or territory not supported", "permission_error",
                                 "Your API key does not have permission to use the specified resource."},
        [MOCK_ERR_NOT_FOUND] = {"invalid_request_error", "model_not_found", NULL,
                                "The model `%s` does not exist or you do not have access to it.", "not_found_error",
                                "model: %s"},
        [MOCK_ERR_RATE_LIMIT] = {"requests", "rate_limit_exceeded", NULL,
                                 "Rate limit reached for requests. Please try again later.", "rate_limit_error",
                                 "Number of requests has exceeded your rate limit. Please try again later."},
        [MOCK_ERR_QUOTA] = {"insufficient_quota", "insufficient_quota", NULL,
                            "You exceeded your current quota, please check your plan and billing details.",
                            "rate_limit_error", "You have reached your specified API usage limits."},
        [MOCK_ERR_SERVER] = {"server_error", NULL, NULL,
                             "The server had an error while processing your request. Sorry about that!", "api_error",
                             "Internal server error"},
        [MOCK_ERR_OVERLOADED] = {"server_error", "server_is_overloaded", NULL,
                                 "The server is overloaded. Please try again later.", "overloaded_error", "Overloaded"},
        [MOCK_ERR_TIMEOUT] = {"server_error", "timeout", NULL, "The server timed out.", "timeout_error",
                              "Request timeout"},
};

/* vLLM's flat error names the status's class. */
static const char *flat_type(unsigned status) {
        switch (status) {
        case 400:
                return "BadRequestError";
        case 401:
                return "AuthenticationError";
        case 403:
                return "PermissionDeniedError";
        case 404:
                return "NotFoundError";
        case 429:
                return "RateLimitError";
        default:
                return status >= 500 ? "InternalServerError" : "BadRequestError";
        }
}

static json_t *str_or_null(const char *s) {
        return s ? json_string(s) : json_null();
}

/* The error object of err (OpenAI: {"message","type","param","code"}; Anthropic: {"type","message"}). */
static json_t *error_object(mock_api api, const mock_error *err, const char *model) {
        const kind_words *w = &words[err->kind < _MOCK_ERR_MAX ? err->kind : MOCK_ERR_SERVER];
        char msg[HULL_ERROR_MSG_MAX];
        const char *fmt = api == MOCK_API_OPENAI ? w->oa_message : w->an_message;
        if (err->message)
                snprintf(msg, sizeof(msg), "%s", err->message);
        else if (strstr(fmt, "%s")) { /* the model's name in the kind's words */
                const char *at = strstr(fmt, "%s");
                snprintf(msg, sizeof(msg), "%.*s%s%s", (int) (at - fmt), fmt, model ? model : "", at + 2);
        } else
                snprintf(msg, sizeof(msg), "%s", fmt);
        if (api == MOCK_API_ANTHROPIC)
                return json_pack("{s:s, s:s}", "type", err->type ? err->type : w->an_type, "message", msg);
        if (err->flat)
                return json_pack("{s:s, s:s, s:s, s:n, s:I}", "object", "error", "message", msg, "type",
                                 err->type ? err->type : flat_type(err->status), "param", "code",
                                 (json_int_t) err->status);
        return json_pack("{s:s, s:s, s:o, s:o}", "message", msg, "type", err->type ? err->type : w->oa_type, "param",
                         err->param ? json_incref(err->param) : str_or_null(w->oa_param), "code",
                         err->code ? json_incref(err->code) : str_or_null(w->oa_code));
}

static int add_header(mock_answer *a, const char *name, const char *value) {
        if (a->n_headers >= ELEMENTSOF(a->headers))
                return -E2BIG;
        char *n = strdup(name), *v = strdup(value);
        if (!n || !v) {
                free(n);
                free(v);
                return -ENOMEM;
        }
        a->headers[a->n_headers++] = (mock_header){n, v};
        return 0;
}

static int add_error_headers(mock_answer *a, const mock_error *err) {
        int r = 0;
        if (err->retry_after_ms && (r = add_header(a, "retry-after-ms", err->retry_after_ms)) < 0)
                return r;
        if (err->retry_after && (r = add_header(a, "retry-after", err->retry_after)) < 0)
                return r;
        if (err->should_retry >= 0 && (r = add_header(a, "x-should-retry", err->should_retry ? "true" : "false")) < 0)
                return r;
        return 0;
}

static char *dumps(json_t *j, size_t *ret_len) {
        if (!j)
                return NULL;
        char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        json_decref(j);
        if (s && ret_len)
                *ret_len = strlen(s);
        return s;
}

static int request_id_header(mock_answer *a, mock_api api, uint64_t seq) {
        char id[48];
        snprintf(id, sizeof(id), "req_mock%06" PRIu64, seq);
        return add_header(a, api == MOCK_API_OPENAI ? "x-request-id" : "request-id", id);
}

int mock_render_error(mock_api api, const mock_error *err, const char *model, uint64_t seq, mock_answer *ret) {
        mock_answer a = {.status = err->status};
        char rid[48];
        snprintf(rid, sizeof(rid), "req_mock%06" PRIu64, seq);
        json_t *o = error_object(api, err, model);
        if (o && api == MOCK_API_OPENAI && !err->flat)
                o = json_pack("{s:o}", "error", o);
        else if (o && api == MOCK_API_ANTHROPIC)
                o = json_pack("{s:s, s:o, s:s}", "type", "error", "error", o, "request_id", rid);
        a.body = dumps(o, &a.body_len);
        if (!a.body || request_id_header(&a, api, seq) < 0 || add_error_headers(&a, err) < 0) {
                mock_answer_done(&a);
                return -ENOMEM;
        }
        *ret = a;
        return 0;
}

void mock_answer_done(mock_answer *a) {
        for (size_t i = 0; i < a->n_headers; i++) {
                free(a->headers[i].name);
                free(a->headers[i].value);
        }
        free(a->body);
        strs_free(&a->events);
        free(a->ping);
        *a = (mock_answer){0};
}

/* What one answer is made of, as both formats need it. */
typedef struct rctx {
        const mock_step *st;
        const mock_request *rq;
        char id[SERVE_SHORT_STR_MAX];
        const char *model;
        int64_t created;
        int64_t in, out, cache_read, cache_creation;
        const char *eol;
        dynbuf ev;   /* the event being framed */
        dynbuf list; /* the framed events: char * each */
        mock_strs events;
} rctx;

static void call_id(const rctx *c, size_t i, char *buf, size_t size) {
        if (c->st->calls[i].id)
                snprintf(buf, size, "%s", c->st->calls[i].id);
        else
                snprintf(buf, size, "%s%06" PRIu64 "_%zu", c->rq->api == MOCK_API_OPENAI ? "call_mock" : "toolu_mock",
                         c->rq->seq, i);
}

/* Cut s into pieces of at most max bytes, never inside a UTF-8 character (each piece is a JSON
 * string). Returns the length of the next piece. */
static size_t text_piece(const char *s, size_t n, size_t max) {
        if (n <= max)
                return n;
        size_t k = max;
        while (k > 0 && ((unsigned char) s[k] & 0xC0) == 0x80)
                k--;
        if (k == 0) { /* a character longer than max: whole */
                k = 1;
                while (k < n && ((unsigned char) s[k] & 0xC0) == 0x80)
                        k++;
        }
        return k;
}

static int push_event(rctx *c) {
        int r = dynbuf_reserve(&c->list, sizeof(char *));
        if (r < 0)
                return r;
        char *s = dynbuf_take(&c->ev, NULL);
        if (!s)
                return -ENOMEM;
        memcpy(c->list.buf + c->list.len, &s, sizeof(s));
        dynbuf_advance(&c->list, sizeof(s));
        c->events.v = (char **) (void *) c->list.buf; /* a view: moved by the next append */
        c->events.n = c->list.len / sizeof(char *);
        return 0;
}

/* Frame one event: "event: NAME" (when not NULL) and "data: JSON", each line ended, and the blank
 * line. Takes j. */
static int frame(rctx *c, const char *name, json_t *j) {
        _cleanup_free_ char *data = dumps(j, NULL);
        if (!data)
                return -ENOMEM;
        dynbuf_reset(&c->ev);
        int r = 0;
        if (name)
                r = dynbuf_addf(&c->ev, "event: %s%s", name, c->eol);
        if (r == 0)
                r = dynbuf_addf(&c->ev, "data: %s%s%s", data, c->eol, c->eol);
        return r < 0 ? r : push_event(c);
}

static int frame_raw(rctx *c, const char *name, const char *data) {
        dynbuf_reset(&c->ev);
        int r = 0;
        if (name)
                r = dynbuf_addf(&c->ev, "event: %s%s", name, c->eol);
        if (r == 0)
                r = dynbuf_addf(&c->ev, "data: %s%s%s", data, c->eol, c->eol);
        return r < 0 ? r : push_event(c);
}

/* OpenAI counts cached tokens in prompt_tokens, and says how many in prompt_tokens_details (sent
 * when the script gives cache counts, so that §1.7's bytes come out as they are). */
static json_t *oa_usage(const rctx *c) {
        int64_t prompt = c->in + c->cache_read;
        json_t *u = json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t) prompt, "completion_tokens",
                              (json_int_t) c->out, "total_tokens", (json_int_t) (prompt + c->out));
        if (u && c->st->usage_cache)
                json_object_set_new(
                        u, "prompt_tokens_details",
                        json_pack("{s:I, s:i}", "cached_tokens", (json_int_t) c->cache_read, "audio_tokens", 0));
        return u;
}

static json_t *an_usage(const rctx *c, int64_t out) {
        return json_pack("{s:I, s:I, s:I, s:I}", "input_tokens", (json_int_t) c->in, "output_tokens", (json_int_t) out,
                         "cache_creation_input_tokens", (json_int_t) c->cache_creation, "cache_read_input_tokens",
                         (json_int_t) c->cache_read);
}

static const char *oa_finish(const rctx *c) {
        return c->st->finish_reason ? c->st->finish_reason : c->st->n_calls ? "tool_calls" : "stop";
}

static const char *an_stop(const rctx *c) {
        return c->st->stop_reason ? c->st->stop_reason : c->st->n_calls ? "tool_use" : "end_turn";
}

/* ---- OpenAI ---- */

static char *oa_whole(rctx *c, size_t *ret_len) {
        const mock_step *st = c->st;
        json_t *msg = json_pack("{s:s, s:o, s:n}", "role", "assistant", "content",
                                st->has_text ? json_string(st->text) : json_null(), "refusal");
        if (!msg)
                return NULL;
        if (st->n_calls) {
                json_t *calls = json_array();
                for (size_t i = 0; calls && i < st->n_calls; i++) {
                        char id[SERVE_SHORT_STR_MAX];
                        call_id(c, i, id, sizeof(id));
                        json_array_append_new(calls, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id, "type", "function",
                                                               "function", "name", st->calls[i].name, "arguments",
                                                               st->calls[i].arguments));
                }
                json_object_set_new(msg, "tool_calls", calls);
        }
        json_object_set_new(msg, "annotations", json_array());
        return dumps(json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:n, s:s}], s:o, s:s, s:s}", "id", c->id, "object",
                               "chat.completion", "created", (json_int_t) c->created, "model", c->model, "choices",
                               "index", 0, "message", msg, "logprobs", "finish_reason", oa_finish(c), "usage",
                               oa_usage(c), "service_tier", "default", "system_fingerprint", "fp_mock"),
                     ret_len);
}

/* One chunk: choices is a delta (with its finish reason) or NULL for the usage chunk ("choices":[]). */
static int oa_chunk(rctx *c, json_t *delta, const char *finish, bool usage_here) {
        const mock_step *st = c->st;
        json_t *choices = json_array();
        if (delta)
                json_array_append_new(choices, json_pack("{s:i, s:o, s:n, s:o}", "index", 0, "delta", delta, "logprobs",
                                                         "finish_reason", str_or_null(finish)));
        json_t *j = json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", c->id, "object", "chat.completion.chunk", "created",
                              (json_int_t) c->created, "model", c->model, "choices", choices);
        if (!j)
                return -ENOMEM;
        if (usage_here || (st->quirks & MOCK_QUIRK_USAGE_EVERY_CHUNK))
                json_object_set_new(j, "usage", oa_usage(c));
        else if (c->rq->include_usage)
                json_object_set_new(j, "usage", json_null());
        return frame(c, NULL, j);
}

static int oa_stream(rctx *c) {
        const mock_step *st = c->st;
        int r = oa_chunk(
                c,
                json_pack("{s:s, s:o}", "role", "assistant", "content", st->has_text ? json_string("") : json_null()),
                NULL, false);
        if (r < 0)
                return r;
        if (st->pieces.n)
                for (size_t i = 0; r == 0 && i < st->pieces.n; i++)
                        r = oa_chunk(c, json_pack("{s:s}", "content", st->pieces.v[i]), NULL, false);
        else
                for (size_t off = 0, n = strlen(st->text), k; r == 0 && off < n; off += k) {
                        k = text_piece(st->text + off, n - off, st->delta_bytes);
                        r = oa_chunk(c, json_pack("{s:s%}", "content", st->text + off, k), NULL, false);
                }
        for (size_t i = 0; r == 0 && i < st->n_calls; i++) {
                const mock_call *call = &st->calls[i];
                bool one_piece = st->quirks & MOCK_QUIRK_ONE_PIECE_CALLS;
                char id[SERVE_SHORT_STR_MAX];
                call_id(c, i, id, sizeof(id));
                json_t *frag = json_pack("{s:s, s:{s:s, s:s}}", "id", id, "function", "name", call->name, "arguments",
                                         one_piece ? call->arguments : "");
                if (!frag)
                        return -ENOMEM;
                json_int_t index = (st->quirks & MOCK_QUIRK_REUSE_INDEX) ? 0 : (json_int_t) i;
                /* index first, then id, type, function: as OpenAI orders them */
                json_t *first = json_object();
                if (!(st->quirks & MOCK_QUIRK_NO_INDEX))
                        json_object_set_new(first, "index", json_integer(index));
                json_object_set(first, "id", json_object_get(frag, "id"));
                if (!(st->quirks & MOCK_QUIRK_NO_TYPE))
                        json_object_set_new(first, "type", json_string("function"));
                json_object_set(first, "function", json_object_get(frag, "function"));
                json_decref(frag);
                r = oa_chunk(c, json_pack("{s:[o]}", "tool_calls", first), NULL, false);
                if (one_piece)
                        continue;
                size_t n_pieces = call->pieces.n;
                for (size_t off = 0, n = strlen(call->arguments), k = 0, p = 0;
                     r == 0 && (n_pieces ? p < n_pieces : off < n); off += k, p++) {
                        json_t *args;
                        if (n_pieces)
                                args = json_string(call->pieces.v[p]);
                        else {
                                k = text_piece(call->arguments + off, n - off, st->delta_bytes);
                                args = json_stringn(call->arguments + off, k);
                        }
                        json_t *frag2 = json_object();
                        if (!(st->quirks & MOCK_QUIRK_NO_INDEX))
                                json_object_set_new(frag2, "index", json_integer(index));
                        json_object_set_new(frag2, "function", json_pack("{s:o}", "arguments", args));
                        r = oa_chunk(c, json_pack("{s:[o]}", "tool_calls", frag2), NULL, false);
                }
        }
        if (r == 0)
                r = oa_chunk(c, json_object(), oa_finish(c), st->quirks & MOCK_QUIRK_USAGE_ON_FINISH);
        if (r == 0 && c->rq->include_usage && !(st->quirks & (MOCK_QUIRK_USAGE_ON_FINISH | MOCK_QUIRK_NO_USAGE_CHUNK)))
                r = oa_chunk(c, NULL, NULL, true);
        if (r == 0)
                r = frame_raw(c, NULL, "[DONE]");
        return r;
}

/* ---- Anthropic ---- */

static char *an_whole(rctx *c, size_t *ret_len) {
        const mock_step *st = c->st;
        json_t *content = json_array();
        if (content && st->has_text)
                json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", st->text));
        for (size_t i = 0; content && i < st->n_calls; i++) {
                char id[SERVE_SHORT_STR_MAX];
                call_id(c, i, id, sizeof(id));
                json_array_append_new(content, json_pack("{s:s, s:s, s:s, s:O}", "type", "tool_use", "id", id, "name",
                                                         st->calls[i].name, "input", st->calls[i].input));
        }
        return dumps(json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:n, s:o}", "id", c->id, "type", "message", "role",
                               "assistant", "model", c->model, "content", content, "stop_reason", an_stop(c),
                               "stop_sequence", "usage", an_usage(c, c->out)),
                     ret_len);
}

static int an_delta(rctx *c, size_t index, const char *type, const char *key, const char *s, size_t n) {
        return frame(c, "content_block_delta",
                     json_pack("{s:s, s:I, s:{s:s, s:s%}}", "type", "content_block_delta", "index", (json_int_t) index,
                               "delta", "type", type, key, s, n));
}

static int an_stop_block(rctx *c, size_t index) {
        return frame(c, "content_block_stop",
                     json_pack("{s:s, s:I}", "type", "content_block_stop", "index", (json_int_t) index));
}

static const char an_ping[] = "{\"type\": \"ping\"}";

static int an_stream(rctx *c) {
        const mock_step *st = c->st;
        size_t block = 0;
        bool pinged = false;
        int r = frame(c, "message_start",
                      json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:[], s:n, s:n, s:o}}", "type", "message_start",
                                "message", "id", c->id, "type", "message", "role", "assistant", "model", c->model,
                                "content", "stop_reason", "stop_sequence", "usage", an_usage(c, 1)));
        if (r == 0 && st->has_text) {
                r = frame(c, "content_block_start",
                          json_pack("{s:s, s:I, s:{s:s, s:s}}", "type", "content_block_start", "index",
                                    (json_int_t) block, "content_block", "type", "text", "text", ""));
                if (r == 0 && !pinged) { /* as the API does, once, after the first block's start */
                        r = frame_raw(c, "ping", an_ping);
                        pinged = true;
                }
                if (st->pieces.n)
                        for (size_t i = 0; r == 0 && i < st->pieces.n; i++)
                                r = an_delta(c, block, "text_delta", "text", st->pieces.v[i], strlen(st->pieces.v[i]));
                else
                        for (size_t off = 0, n = strlen(st->text), k; r == 0 && off < n; off += k) {
                                k = text_piece(st->text + off, n - off, st->delta_bytes);
                                r = an_delta(c, block, "text_delta", "text", st->text + off, k);
                        }
                if (r == 0)
                        r = an_stop_block(c, block++);
        }
        for (size_t i = 0; r == 0 && i < st->n_calls; i++, block++) {
                const mock_call *call = &st->calls[i];
                char id[SERVE_SHORT_STR_MAX];
                call_id(c, i, id, sizeof(id));
                r = frame(c, "content_block_start",
                          json_pack("{s:s, s:I, s:{s:s, s:s, s:s, s:{}}}", "type", "content_block_start", "index",
                                    (json_int_t) block, "content_block", "type", "tool_use", "id", id, "name",
                                    call->name, "input"));
                if (r == 0 && !pinged) {
                        r = frame_raw(c, "ping", an_ping);
                        pinged = true;
                }
                if (call->pieces.n)
                        for (size_t p = 0; r == 0 && p < call->pieces.n; p++)
                                r = an_delta(c, block, "input_json_delta", "partial_json", call->pieces.v[p],
                                             strlen(call->pieces.v[p]));
                else {
                        /* the API's first piece is empty */
                        if (r == 0)
                                r = an_delta(c, block, "input_json_delta", "partial_json", "", 0);
                        size_t n = strlen(call->arguments);
                        size_t max = (st->quirks & MOCK_QUIRK_ONE_PIECE_CALLS) ? n : st->delta_bytes;
                        for (size_t off = 0, k; r == 0 && off < n; off += k) {
                                k = text_piece(call->arguments + off, n - off, MAX(max, (size_t) 1));
                                r = an_delta(c, block, "input_json_delta", "partial_json", call->arguments + off, k);
                        }
                }
                if (r == 0)
                        r = an_stop_block(c, block);
        }
        if (r == 0 && !pinged)
                r = frame_raw(c, "ping", an_ping);
        if (r == 0)
                r = frame(c, "message_delta",
                          json_pack("{s:s, s:{s:s, s:n}, s:{s:I}}", "type", "message_delta", "delta", "stop_reason",
                                    an_stop(c), "stop_sequence", "usage", "output_tokens", (json_int_t) c->out));
        if (r == 0)
                r = frame(c, "message_stop", json_pack("{s:s}", "type", "message_stop"));
        return r;
}

/* ---- faults in a stream ---- */

/* Keep the first n events. */
static void drop_events(rctx *c, size_t n) {
        while (c->events.n > n)
                free(c->events.v[--c->events.n]);
        c->list.len = c->events.n * sizeof(char *);
}

static void free_events(rctx *c) {
        drop_events(c, 0);
        dynbuf_free(&c->list);
        c->events = (mock_strs){0};
}

/* The events from at on are replaced by one error event. */
static int stream_error(rctx *c, size_t at) {
        const mock_error *err = c->st->stream_error;
        drop_events(c, at);
        json_t *o = error_object(c->rq->api, err, c->model);
        if (c->rq->api == MOCK_API_OPENAI)
                return frame(c, NULL, err->flat ? o : json_pack("{s:o}", "error", o));
        return frame(c, "error", json_pack("{s:s, s:o}", "type", "error", "error", o));
}

/* Keep the first n events, and with mid_line half of the next one's data line. */
static int cut_stream(rctx *c, size_t n, bool mid_line) {
        char *half = NULL;
        if (mid_line && n < c->events.n) {
                const char *ev = c->events.v[n];
                const char *data = strstr(ev, "data: ");
                size_t start = data ? (size_t) (data - ev) + 6 : 0;
                size_t line = strcspn(ev + start, "\r\n");
                half = strndup(ev, start + line / 2);
                if (!half)
                        return -ENOMEM;
        }
        drop_events(c, n);
        if (half) {
                dynbuf_reset(&c->ev);
                int r = dynbuf_add_str(&c->ev, half);
                free(half);
                return r < 0 ? r : push_event(c);
        }
        return 0;
}

int mock_render(const mock_step *st, const mock_request *rq, mock_answer *ret) {
        if (st->error || (st->stream_error && !rq->stream)) {
                /* an error answer; a stream's error comes as an HTTP error when nothing streams */
                int r = mock_render_error(rq->api, st->error ? st->error : st->stream_error, rq->model, rq->seq, ret);
                for (size_t i = 0; r == 0 && i < st->n_headers; i++)
                        r = add_header(ret, st->headers[i].name, st->headers[i].value);
                if (r < 0)
                        mock_answer_done(ret);
                return r;
        }
        rctx c = {.st = st, .rq = rq, .model = st->model ? st->model : rq->model};
        mock_answer a = {.status = 200, .stream = rq->stream};
        if (st->id)
                snprintf(c.id, sizeof(c.id), "%s", st->id);
        else
                snprintf(c.id, sizeof(c.id), "%s%06" PRIu64, rq->api == MOCK_API_OPENAI ? "chatcmpl-mock" : "msg_mock",
                         rq->seq);
        c.created = st->created ? st->created : rq->now;
        size_t produced = strlen(st->text);
        for (size_t i = 0; i < st->n_calls; i++)
                produced += strlen(st->calls[i].name) + strlen(st->calls[i].arguments);
        c.in = st->input_tokens >= 0 ? st->input_tokens : (int64_t) MAX(rq->body_bytes / 4, (uint64_t) 1);
        c.out = st->output_tokens >= 0 ? st->output_tokens : (int64_t) MAX(produced / 4, (size_t) 1);
        c.cache_read = st->cache_read;
        c.cache_creation = st->cache_creation;
        c.eol = st->eol == MOCK_EOL_CRLF ? "\r\n" : st->eol == MOCK_EOL_CR ? "\r" : "\n";
        dynbuf_init(&c.ev, MOCK_STREAM_QUEUE_BYTES);
        dynbuf_init(&c.list, (size_t) MOCK_PIECES_MAX * 4 * sizeof(char *));
        int r = request_id_header(&a, rq->api, rq->seq);
        for (size_t i = 0; r == 0 && i < st->n_headers; i++)
                r = add_header(&a, st->headers[i].name, st->headers[i].value);
        if (r < 0)
                goto fail;
        if (!rq->stream) {
                a.body = rq->api == MOCK_API_OPENAI ? oa_whole(&c, &a.body_len) : an_whole(&c, &a.body_len);
                if (!a.body)
                        r = -ENOMEM;
                goto done;
        }
        r = rq->api == MOCK_API_OPENAI ? oa_stream(&c) : an_stream(&c);
        if (r == 0 && st->stream_error)
                r = stream_error(&c, MIN(st->stream_error->after_events, c.events.n - 1));
        if (r == 0 && st->cut) {
                r = cut_stream(&c, MIN(st->cut->after_events, c.events.n - 1), st->cut->mid_line);
                a.abort = !st->cut->clean;
        }
        if (r == 0) {
                if (rq->api == MOCK_API_OPENAI)
                        r = dynbuf_addf(&c.ev, ": ping%s%s", c.eol, c.eol);
                else
                        r = dynbuf_addf(&c.ev, "event: ping%sdata: %s%s%s", c.eol, an_ping, c.eol, c.eol);
                if (r == 0 && !(a.ping = dynbuf_take(&c.ev, NULL)))
                        r = -ENOMEM;
        }
        if (r == 0) {
                size_t n = c.events.n;
                a.events.v = (char **) (void *) dynbuf_take(&c.list, NULL);
                a.events.n = a.events.v ? n : 0;
                c.events = (mock_strs){0};
                if (!a.events.v)
                        r = -ENOMEM; /* c.list still holds them: freed below */
        }
done:
        if (r < 0)
                goto fail;
        dynbuf_free(&c.ev);
        dynbuf_free(&c.list);
        *ret = a;
        return 0;
fail:
        dynbuf_free(&c.ev);
        free_events(&c);
        mock_answer_done(&a);
        return r < 0 ? r : -ENOMEM;
}
