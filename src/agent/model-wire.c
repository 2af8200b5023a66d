/* model-wire.c: what the two wire formats share (model-internal.h): reading the neutral
 * conversation, a tool call's arguments, an API's error read leniently and named, the retry delay
 * a server asks for and the backoff, and the stream assembler's dispatch to the API's own. Pure. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "macro.h"
#include "model-internal.h"

void model_quote(char *buf, size_t size, const char *s, size_t len) {
        size_t n = 0, limit;
        bool cut = false;

        if (size == 0)
                return;
        limit = size - 1;
        if (len > limit) {
                cut = limit > 3;
                limit = limit > 3 ? limit - 3 : limit;
        }
        for (size_t i = 0; i < len && n < limit; i++) {
                unsigned char c = (unsigned char) s[i];
                buf[n++] = c < 0x20 || c == 0x7f ? ' ' : (char) c;
        }
        if (cut) {
                /* Back off to the start of a UTF-8 sequence that was not copied whole. */
                size_t k = n;
                while (k > 0 && ((unsigned char) buf[k - 1] & 0xC0) == 0x80)
                        k--;
                if (k > 0 && (unsigned char) buf[k - 1] >= 0xC0) {
                        unsigned char lead = (unsigned char) buf[k - 1];
                        size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
                        if (n - (k - 1) < want)
                                n = k - 1;
                }
                memcpy(buf + n, "...", 3);
                n += 3;
        }
        buf[n] = '\0';
}

int model_parse_arguments(const char *args, size_t len, json_t **ret, char **ret_error) {
        json_error_t je;
        json_t *j;
        size_t i = 0;
        char *why = NULL;

        while (i < len && (args[i] == ' ' || args[i] == '\t' || args[i] == '\n' || args[i] == '\r'))
                i++;
        if (i == len) {
                j = json_object();
                if (!j)
                        return -ENOMEM;
                *ret = j;
                *ret_error = NULL;
                return 0;
        }
        j = json_loadb(args, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (j && json_is_object(j)) {
                *ret = j;
                *ret_error = NULL;
                return 0;
        }
        if (j) {
                const char *kind = json_is_array(j)    ? "an array"
                                   : json_is_string(j) ? "a string"
                                   : json_is_number(j) ? "a number"
                                                       : "a literal";
                if (asprintf(&why, "the arguments are %s, not a JSON object", kind) < 0)
                        why = NULL;
                json_decref(j);
        } else if (asprintf(&why, "the arguments are not valid JSON (%s, at byte %d)", je.text, je.position) < 0)
                why = NULL;
        j = json_object();
        if (!why || !j) {
                free(why);
                json_decref(j);
                return -ENOMEM;
        }
        *ret = j;
        *ret_error = why;
        return 0;
}

json_t *model_tool_use_block(const char *id, const char *name, const char *args, size_t args_len, bool keep_args) {
        json_t *input = NULL, *b;
        _cleanup_free_ char *why = NULL;

        if (model_parse_arguments(args ? args : "", args ? args_len : 0, &input, &why) < 0)
                return NULL;
        b = json_pack("{s:s, s:s, s:s, s:o}", "type", "tool_use", "id", id, "name", name, "input", input);
        if (!b)
                return NULL;
        if (keep_args && json_object_set_new(b, "arguments", json_stringn(args ? args : "", args ? args_len : 0)) < 0)
                goto fail;
        if (why && json_object_set_new(b, "input_error", json_string(why)) < 0)
                goto fail;
        return b;
fail:
        json_decref(b);
        return NULL;
}

void model_set_str(char *buf, size_t size, const json_t *v) {
        if (json_is_string(v))
                model_quote(buf, size, json_string_value(v), json_string_length(v));
}

bool model_json_count(const json_t *v, uint64_t *ret) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return false;
        *ret = (uint64_t) json_integer_value(v);
        return true;
}

/* ---- the neutral conversation ---- */

int model_message_blocks(const json_t *messages, size_t i, model_role *ret_role, const json_t **ret_blocks,
                         json_t **ret_owned, hull_error *e) {
        const json_t *m = json_array_get(messages, i), *content;
        const char *role;

        *ret_owned = NULL;
        if (!json_is_object(m))
                return hull_fail(e, -EINVAL, "model: messages[%zu] is not an object", i);
        role = json_string_value(json_object_get(m, "role"));
        if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0))
                return hull_fail(e, -EINVAL,
                                 "model: messages[%zu] has role \"%s\" (user or assistant, as model.h says)", i,
                                 role ? role : "(none)");
        content = json_object_get(m, "content");
        if (json_is_string(content)) {
                json_t *a = json_pack("[{s:s, s:O}]", "type", "text", "text", content);
                if (!a)
                        return hull_fail(e, -ENOMEM, "model: out of memory");
                *ret_owned = a;
                content = a;
        } else if (!json_is_array(content))
                return hull_fail(e, -EINVAL, "model: messages[%zu].content is not an array of blocks", i);
        *ret_role = role[0] == 'u' ? MODEL_ROLE_USER : MODEL_ROLE_ASSISTANT;
        *ret_blocks = content;
        return 0;
}

const char *model_block_type(const json_t *b, model_role role, size_t i, size_t k, hull_error *e) {
        const char *type = json_string_value(json_object_get(b, "type"));

        if (!type) {
                hull_fail(e, -EINVAL, "model: messages[%zu].content[%zu] has no type", i, k);
                return NULL;
        }
        if (strcmp(type, "text") == 0) {
                if (json_is_string(json_object_get(b, "text")))
                        return "text";
                hull_fail(e, -EINVAL, "model: messages[%zu].content[%zu]: a text block needs \"text\"", i, k);
                return NULL;
        }
        if (strcmp(type, "tool_use") == 0) {
                if (role != MODEL_ROLE_ASSISTANT) {
                        hull_fail(e, -EINVAL, "model: messages[%zu].content[%zu]: a tool_use block in a user message",
                                  i, k);
                        return NULL;
                }
                if (json_is_string(json_object_get(b, "id")) && json_is_string(json_object_get(b, "name")) &&
                    (json_is_object(json_object_get(b, "input")) || json_is_string(json_object_get(b, "arguments"))))
                        return "tool_use";
                hull_fail(e, -EINVAL, "model: messages[%zu].content[%zu]: a tool_use block needs id, name and input", i,
                          k);
                return NULL;
        }
        if (strcmp(type, "tool_result") == 0) {
                const json_t *c = json_object_get(b, "content");
                if (role != MODEL_ROLE_USER) {
                        hull_fail(e, -EINVAL,
                                  "model: messages[%zu].content[%zu]: a tool_result block in an assistant message", i,
                                  k);
                        return NULL;
                }
                if (json_is_string(json_object_get(b, "tool_use_id")) && (!c || json_is_string(c) || json_is_array(c)))
                        return "tool_result";
                hull_fail(
                        e, -EINVAL,
                        "model: messages[%zu].content[%zu]: a tool_result block needs tool_use_id and a string content",
                        i, k);
                return NULL;
        }
        if (strcmp(type, "opaque") == 0) {
                if (json_is_string(json_object_get(b, "api")) && json_object_get(b, "block"))
                        return "opaque";
                hull_fail(e, -EINVAL, "model: messages[%zu].content[%zu]: an opaque block needs api and block", i, k);
                return NULL;
        }
        hull_fail(e, -EINVAL, "model: messages[%zu].content[%zu] has an unknown type \"%.32s\"", i, k, type);
        return NULL;
}

/* ---- errors ---- */

static void quote_json(char *buf, size_t size, const json_t *v) {
        if (json_is_string(v)) {
                model_quote(buf, size, json_string_value(v), json_string_length(v));
                return;
        }
        _cleanup_free_ char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (s)
                model_quote(buf, size, s, strlen(s));
}

static void read_code(model_api_error *x, const json_t *code) {
        if (json_is_string(code))
                model_set_str(x->code, sizeof(x->code), code);
        else if (json_is_integer(code)) {
                snprintf(x->code, sizeof(x->code), "%lld", (long long) json_integer_value(code));
                if (json_integer_value(code) > 0 && json_integer_value(code) < 1000)
                        x->numeric_code = (long) json_integer_value(code);
        }
}

/* The fields of an error object ({"message","type","code",...}). */
static void read_error_object(model_api_error *x, const json_t *err) {
        const json_t *msg = json_object_get(err, "message"), *details = json_object_get(err, "details");
        const char *ec;

        model_set_str(x->type, sizeof(x->type), json_object_get(err, "type"));
        read_code(x, json_object_get(err, "code"));
        if (msg && !json_is_null(msg))
                quote_json(x->message, sizeof(x->message), msg);
        ec = json_string_value(json_object_get(details, "error_code"));
        if (ec) {
                if (strcmp(ec, "enforced_spend_limit_reached") == 0)
                        x->spend_limit = true;
                if (!x->code[0])
                        model_quote(x->code, sizeof(x->code), ec, strlen(ec));
        }
}

bool model_error_from_json(const json_t *j, model_api_error *ret) {
        model_api_error x = {0};
        const json_t *err, *detail;
        const char *object;

        if (!json_is_object(j))
                return false;
        err = json_object_get(j, "error");
        object = json_string_value(json_object_get(j, "object"));
        detail = json_object_get(j, "detail");
        if (json_is_object(err))
                read_error_object(&x, err);
        else if (json_is_string(err))
                quote_json(x.message, sizeof(x.message), err);
        else if (err && !json_is_null(err) && !json_is_false(err))
                quote_json(x.message, sizeof(x.message), j); /* a truthy error of another kind */
        else if (object && strcmp(object, "error") == 0)
                read_error_object(&x, j); /* vLLM's flat shape */
        else if (detail && !json_is_null(detail))
                quote_json(x.message, sizeof(x.message), detail); /* FastAPI */
        else
                return false;
        *ret = x;
        return true;
}

bool model_error_parse(const char *body, size_t len, model_api_error *ret) {
        json_error_t je;
        json_t *j = json_loadb(body, len, JSON_ALLOW_NUL, &je);
        bool found = j && model_error_from_json(j, ret);

        json_decref(j);
        if (found)
                return true;
        *ret = (model_api_error){0};
        if (len == 0)
                snprintf(ret->message, sizeof(ret->message), "an empty body");
        else
                model_quote(ret->message, sizeof(ret->message), body, len);
        return false;
}

static bool is(const char *s, const char *what) {
        return strcmp(s, what) == 0;
}

/* The prompt did not fit the model's context window (model-apis.md §3). */
static bool context_overflow(const model_api_error *x) {
        static const char *const phrases[] = {
                "prompt is too long", "context size", "context length", "context window", "context limit",
        };
        if (is(x->code, "context_length_exceeded") || is(x->type, "exceed_context_size_error") ||
            is(x->code, "exceed_context_size_error"))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(phrases); i++)
                if (strcasestr(x->message, phrases[i]))
                        return true;
        return false;
}

model_fail model_error_kind(long status, const model_api_error *x) {
        long s = status;

        if (x->spend_limit || is(x->code, "insufficient_quota") || is(x->type, "insufficient_quota") ||
            is(x->type, "billing_error") || status == 402)
                return MODEL_FAIL_BILLING;
        if ((s < 300 || s == 400 || s == 413 || s >= 500) && context_overflow(x))
                return MODEL_FAIL_CONTEXT;
        if (s < 300 && x->numeric_code >= 400)
                s = x->numeric_code;
        if (s >= 400) {
                if (s == 401 || s == 403)
                        return MODEL_FAIL_AUTH;
                if (s == 404)
                        return MODEL_FAIL_NOT_FOUND;
                if (s == 408)
                        return MODEL_FAIL_TIMEOUT;
                if (s == 429)
                        return MODEL_FAIL_RATE_LIMITED;
                if (s == 503 || s == 529 || is(x->type, "overloaded_error"))
                        return MODEL_FAIL_OVERLOADED;
                if (s >= 500 || s == 409)
                        return MODEL_FAIL_SERVER;
                return MODEL_FAIL_BAD_REQUEST;
        }
        /* An error inside a 200 (a stream's error event): by its type. */
        if (is(x->type, "overloaded_error") || is(x->code, "server_is_overloaded") ||
            is(x->type, "service_unavailable_error") || is(x->code, "slow_down"))
                return MODEL_FAIL_OVERLOADED;
        if (is(x->type, "rate_limit_error") || is(x->code, "rate_limit_exceeded") || is(x->type, "requests") ||
            is(x->type, "tokens"))
                return MODEL_FAIL_RATE_LIMITED;
        if (is(x->type, "authentication_error") || is(x->code, "invalid_api_key") || is(x->type, "permission_error"))
                return MODEL_FAIL_AUTH;
        if (is(x->type, "not_found_error") || is(x->code, "model_not_found"))
                return MODEL_FAIL_NOT_FOUND;
        if (is(x->type, "invalid_request_error"))
                return MODEL_FAIL_BAD_REQUEST;
        if (is(x->type, "timeout_error"))
                return MODEL_FAIL_TIMEOUT;
        return MODEL_FAIL_SERVER;
}

bool model_fail_retryable(model_fail kind, long status) {
        switch (kind) {
        case MODEL_FAIL_RATE_LIMITED:
        case MODEL_FAIL_OVERLOADED:
        case MODEL_FAIL_SERVER:
        case MODEL_FAIL_UNREACHABLE:
        case MODEL_FAIL_TIMEOUT:
        case MODEL_FAIL_TRUNCATED:
                return true;
        case MODEL_FAIL_NONE:
        case MODEL_FAIL_AUTH:
        case MODEL_FAIL_NOT_FOUND:
        case MODEL_FAIL_CONTEXT:
        case MODEL_FAIL_BAD_REQUEST:
        case MODEL_FAIL_BILLING:
        case MODEL_FAIL_MALFORMED:
        case MODEL_FAIL_CANCELED:
        case _MODEL_FAIL_MAX:
                break;
        }
        return status == 408 || status == 409;
}

/* A float as JavaScript's parseFloat reads it (leading blanks, trailing text ignored); false when
 * there is no number or it is not finite. */
static bool parse_float(const char *s, double *ret) {
        char *end;
        double v;

        while (*s == ' ' || *s == '\t')
                s++;
        /* strtod also reads hexadecimal, "inf" and "nan": parseFloat reads none of them as such. */
        if (!((*s >= '0' && *s <= '9') || *s == '.' || *s == '-' || *s == '+'))
                return false;
        if ((s[0] == '0' || ((s[0] == '-' || s[0] == '+') && s[1] == '0')) && strpbrk(s, "xX"))
                return false;
        v = strtod(s, &end);
        if (end == s || !isfinite(v))
                return false;
        *ret = v;
        return true;
}

bool model_retry_after(model_api api, const char *retry_after_ms, const char *retry_after, int64_t now_unix_s,
                       uint64_t *ret_ms) {
        double ms = NAN, v;
        struct tm tm = {0};

        if (retry_after_ms && parse_float(retry_after_ms, &v))
                ms = v;
        if (retry_after && (isnan(ms) || (api == MODEL_API_ANTHROPIC && ms == 0))) {
                if (parse_float(retry_after, &v))
                        ms = v * 1000.0;
                else {
                        const char *end = strptime(retry_after, "%a, %d %b %Y %H:%M:%S GMT", &tm);
                        if (end && *end == '\0')
                                ms = ((double) timegm(&tm) - (double) now_unix_s) * 1000.0;
                }
        }
        if (isnan(ms) || ms < 0 || ms >= (double) MODEL_RETRY_AFTER_MAX_MS)
                return false;
        if (api == MODEL_API_ANTHROPIC && ms == 0)
                return false;
        *ret_ms = (uint64_t) ms;
        if ((double) *ret_ms < ms)
                ++*ret_ms; /* rounded up */
        return true;
}

uint64_t model_backoff_ms(unsigned n, double jitter) {
        uint64_t ms = MODEL_BACKOFF_FIRST_MS;

        for (unsigned i = 1; i < n && ms < MODEL_BACKOFF_MAX_MS; i++)
                ms *= 2;
        ms = MIN(ms, (uint64_t) MODEL_BACKOFF_MAX_MS);
        if (jitter < 0 || jitter >= 1)
                jitter = 0;
        return (uint64_t) ((double) ms * (1.0 - 0.25 * jitter));
}

/* ---- the stream assembler ---- */

int model_stream_new(model_api api, model_stream **ret) {
        model_stream *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->ops = api == MODEL_API_ANTHROPIC ? &model_anthropic_stream_ops : &model_openai_stream_ops;
        s->st = s->ops->new_state();
        if (!s->st) {
                free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

void model_stream_free(model_stream *s) {
        if (!s)
                return;
        s->ops->free_state(s->st);
        free(s);
}

int model_stream_event(model_stream *s, const sse_event *ev, const model_call_opts *o, hull_error *e) {
        int r;

        if (s->done)
                return 1;
        s->events++;
        r = s->ops->event(s, ev, o, e);
        if (r == 1)
                s->done = true;
        return r;
}

int model_stream_finish(model_stream *s, model_response *ret, hull_error *e) {
        return s->ops->finish(s, ret, e);
}

bool model_stream_handed_on(const model_stream *s) {
        return s->handed_on;
}

const model_api_error *model_stream_error(const model_stream *s) {
        return &s->error;
}

unsigned long model_stream_events(const model_stream *s) {
        return s->events;
}

int model_stream_text(model_stream *s, const model_call_opts *o, const char *p, size_t n) {
        if (n == 0 || !o || !o->on_text)
                return 0;
        s->handed_on = true;
        return o->on_text(o->ud, p, n);
}

int model_stream_tool(model_stream *s, const model_call_opts *o, const char *id, const char *name) {
        if (!o || !o->on_tool_use)
                return 0;
        s->handed_on = true;
        return o->on_tool_use(o->ud, id, name);
}
