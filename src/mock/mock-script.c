/* mock-script.c: hull mock-model's script, parsed and checked (every field by name, unknown ones
 * refused, so a typo is an error and not a silently ignored fault) into the steps mock-render.c
 * turns into answers. Pure. */
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
#include "mock-script-internal.h"
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

void mock_strs_free(mock_strs *s) {
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
                        mock_strs_free(&p);
                        return bad(pc, field, "piece %zu is not a string", i);
                }
                int r = dup_str(json_string_value(x), &p.v[p.n]);
                if (r == 0) {
                        p.n++;
                        r = dynbuf_add(&whole, json_string_value(x), json_string_length(x));
                }
                if (r < 0) {
                        mock_strs_free(&p);
                        return r;
                }
        }
        char *w = dynbuf_take(&whole, NULL);
        if (!w) {
                mock_strs_free(&p);
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
        mock_strs_free(&c->pieces);
        json_decref(c->input);
}

static void step_free(mock_step *st) {
        free(st->text);
        mock_strs_free(&st->pieces);
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
        mock_strs_free(&s->models);
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
