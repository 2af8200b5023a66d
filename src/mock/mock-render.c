/* mock-render.c: hull mock-model's answers: each step of a script rendered as the bytes of an
 * answer in OpenAI's or Anthropic's wire format (model-apis.md §1, §2, §4), whole or as
 * server-sent events with the step's faults (an error event, a cut), its errors in each API's
 * envelope, and how a stream is cut into writes. Pure. */
#include "mock-script.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "macro.h"
#include "mock-script-internal.h"

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
        mock_strs_free(&a->events);
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
