/* model-anthropic.c: the Anthropic Messages wire format (../shared/reference/model-apis.md §2): the
 * request from the neutral conversation, a whole answer, and a streamed one assembled from its
 * events. Pure.
 *
 * The neutral form in Anthropic's terms is nearly its own: a user message's tool_result blocks
 * go first (is_error sent only when true), text blocks as they are (empty ones dropped: the API
 * refuses them), tool_use blocks with their input object, Anthropic's opaque blocks (thinking
 * with its signature, redacted thinking, server tools) echoed exactly, OpenAI's dropped. In an
 * answer, every block that is neither text nor tool_use is kept as an opaque block. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "model-internal.h"

/* ---- the request ---- */

static int encode_user(json_t *msgs, const json_t *blocks, size_t i, hull_error *e) {
        _cleanup_(json_decrefp) json_t *out = json_array();
        const json_t *b;
        size_t k;

        if (!out)
                return -ENOMEM;
        /* The results first: the API wants them at the start of the message. */
        json_array_foreach(blocks, k, b) {
                const char *type = model_block_type(b, MODEL_ROLE_USER, i, k, e);
                const json_t *c = json_object_get(b, "content");
                json_t *r;
                if (!type)
                        return -EINVAL;
                if (strcmp(type, "tool_result") != 0)
                        continue;
                r = json_pack("{s:s, s:O}", "type", "tool_result", "tool_use_id", json_object_get(b, "tool_use_id"));
                if (!r || json_object_set_new(r, "content", c ? json_incref((json_t *) c) : json_string("")) < 0 ||
                    (json_is_true(json_object_get(b, "is_error")) &&
                     json_object_set_new(r, "is_error", json_true()) < 0) ||
                    json_array_append_new(out, r) < 0)
                        return -ENOMEM;
        }
        json_array_foreach(blocks, k, b) {
                const char *type = json_string_value(json_object_get(b, "type"));
                const json_t *text = json_object_get(b, "text");
                int r = 0;
                if (strcmp(type, "text") == 0 && json_string_length(text) > 0)
                        r = json_array_append_new(out, json_pack("{s:s, s:O}", "type", "text", "text", text));
                else if (strcmp(type, "opaque") == 0 &&
                         strcmp(json_string_value(json_object_get(b, "api")), "anthropic") == 0)
                        r = json_array_append(out, json_object_get(b, "block"));
                if (r < 0)
                        return -ENOMEM;
        }
        if (json_array_size(out) == 0)
                return 0;
        /* One text: a plain string, as the examples have it. */
        const json_t *only = json_array_get(out, 0);
        if (json_array_size(out) == 1 && strcmp(json_string_value(json_object_get(only, "type")), "text") == 0)
                return json_array_append_new(msgs, json_pack("{s:s, s:O}", "role", "user", "content",
                                                             json_object_get(only, "text"))) < 0
                               ? -ENOMEM
                               : 0;
        return json_array_append_new(msgs, json_pack("{s:s, s:O}", "role", "user", "content", out)) < 0 ? -ENOMEM : 0;
}

static int encode_assistant(json_t *msgs, const json_t *blocks, size_t i, hull_error *e) {
        _cleanup_(json_decrefp) json_t *out = json_array();
        const json_t *b;
        size_t k;

        if (!out)
                return -ENOMEM;
        json_array_foreach(blocks, k, b) {
                const char *type = model_block_type(b, MODEL_ROLE_ASSISTANT, i, k, e);
                int r = 0;
                if (!type)
                        return -EINVAL;
                if (strcmp(type, "text") == 0) {
                        const json_t *text = json_object_get(b, "text");
                        if (json_string_length(text) > 0)
                                r = json_array_append_new(out, json_pack("{s:s, s:O}", "type", "text", "text", text));
                } else if (strcmp(type, "tool_use") == 0) {
                        const json_t *input = json_object_get(b, "input"), *args = json_object_get(b, "arguments");
                        json_t *in = NULL;
                        if (json_is_object(input))
                                in = json_incref((json_t *) input);
                        else {
                                _cleanup_free_ char *why = NULL;
                                if (model_parse_arguments(json_string_value(args), json_string_length(args), &in,
                                                          &why) < 0)
                                        return -ENOMEM;
                        }
                        r = json_array_append_new(out, json_pack("{s:s, s:O, s:O, s:o}", "type", "tool_use", "id",
                                                                 json_object_get(b, "id"), "name",
                                                                 json_object_get(b, "name"), "input", in));
                } else if (strcmp(type, "opaque") == 0 &&
                           strcmp(json_string_value(json_object_get(b, "api")), "anthropic") == 0)
                        r = json_array_append(out, json_object_get(b, "block"));
                if (r < 0)
                        return -ENOMEM;
        }
        if (json_array_size(out) == 0)
                return 0; /* the API refuses an empty assistant turn; the users' turns around it merge */
        return json_array_append_new(msgs, json_pack("{s:s, s:O}", "role", "assistant", "content", out)) < 0 ? -ENOMEM
                                                                                                             : 0;
}

static int encode_tools(json_t *body, const json_t *tools, bool cache, hull_error *e) {
        _cleanup_(json_decrefp) json_t *out = json_array();
        const json_t *t;
        size_t k;

        if (!out)
                return -ENOMEM;
        json_array_foreach(tools, k, t) {
                const json_t *name = json_object_get(t, "name"), *desc = json_object_get(t, "description");
                const json_t *schema = json_object_get(t, "input_schema");
                json_t *o;
                if (!json_is_string(name))
                        return hull_fail(e, -EINVAL, "model: tools[%zu] has no name", k);
                o = json_pack("{s:O}", "name", name);
                if (!o)
                        return -ENOMEM;
                if ((json_is_string(desc) && json_object_set(o, "description", (json_t *) desc) < 0) ||
                    json_object_set_new(o, "input_schema",
                                        json_is_object(schema) ? json_incref((json_t *) schema)
                                                               : json_pack("{s:s}", "type", "object")) < 0 ||
                    json_array_append_new(out, o) < 0)
                        return -ENOMEM;
        }
        /* a cache breakpoint after the last tool: the tools (and the system prompt before them) are
         * the prefix every request of the conversation repeats */
        if (cache && json_array_size(out) > 0 &&
            json_object_set_new(json_array_get(out, json_array_size(out) - 1), "cache_control",
                                json_pack("{s:s}", "type", "ephemeral")) < 0)
                return -ENOMEM;
        return json_object_set(body, "tools", out) < 0 ? -ENOMEM : 0;
}

/* The body's members before "messages" (model, max_tokens, system) and after it. */
static int encode_frame(const model_wire_cfg *w, const model_request *r, json_t **ret_head, json_t **ret_tail,
                        hull_error *e) {
        _cleanup_(json_decrefp) json_t *head = NULL, *tail = json_object();
        int k;

        head = json_pack("{s:s, s:I}", "model", w->model, "max_tokens", (json_int_t) w->max_output_tokens);
        /* prompt caching: the system prompt as a text block with a cache breakpoint */
        json_t *sys = !r->system ? NULL
                      : w->cache ? json_pack("[{s:s, s:s, s:{s:s}}]", "type", "text", "text", r->system,
                                             "cache_control", "type", "ephemeral")
                                 : json_string(r->system);
        if (!head || !tail || (r->system && json_object_set_new(head, "system", sys) < 0))
                return hull_fail(e, -ENOMEM, "model: out of memory");
        if ((w->effort && json_object_set_new(tail, "output_config", json_pack("{s:s}", "effort", w->effort)) < 0) ||
            (w->fast && json_object_set_new(tail, "speed", json_string("fast")) < 0))
                return hull_fail(e, -ENOMEM, "model: out of memory");
        if (r->tools && json_array_size(r->tools) > 0) {
                k = encode_tools(tail, r->tools, w->cache, e);
                if (k < 0)
                        return k == -ENOMEM ? hull_fail(e, k, "model: out of memory") : k;
        }
        if (w->stream && json_object_set_new(tail, "stream", json_true()) < 0)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        *ret_head = TAKE_PTR(head);
        *ret_tail = TAKE_PTR(tail);
        return 0;
}

int model_anthropic_encode(const model_wire_cfg *w, const model_request *r, char **ret, size_t *ret_len,
                           hull_error *e) {
        _cleanup_(json_decrefp) json_t *head = NULL, *tail = NULL, *msgs = json_array();
        size_t n = json_array_size(r->messages);
        int k;

        if (!msgs)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        if (!json_is_array(r->messages) || n == 0)
                return hull_fail(e, -EINVAL, "model: a request needs at least one message");
        k = encode_frame(w, r, &head, &tail, e);
        if (k < 0)
                return k;
        if (r->cache) /* the messages' wire JSON kept from the requests before */
                return model_wire_body(r->cache, MODEL_API_ANTHROPIC, head, NULL, r->messages, encode_user,
                                       encode_assistant, tail, ret, ret_len, e);
        for (size_t i = 0; i < n; i++) {
                _cleanup_(json_decrefp) json_t *owned = NULL;
                const json_t *blocks;
                model_role role;
                k = model_message_blocks(r->messages, i, &role, &blocks, &owned, e);
                if (k == 0)
                        k = role == MODEL_ROLE_USER ? encode_user(msgs, blocks, i, e)
                                                    : encode_assistant(msgs, blocks, i, e);
                if (k == -ENOMEM)
                        return hull_fail(e, k, "model: out of memory");
                if (k < 0)
                        return k;
        }
        /* the whole body as one tree: head's members, the messages, tail's, in that order */
        if (json_object_set(head, "messages", msgs) < 0 || json_object_update(head, tail) < 0)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        *ret = json_dumps(head, JSON_COMPACT);
        if (!*ret)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        *ret_len = strlen(*ret);
        return 0;
}

/* ---- the answer ---- */

/* An answer's block in the neutral form: text, tool_use, or opaque for anything else. */
static json_t *neutral_block(const json_t *b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        const json_t *input = json_object_get(b, "input");

        if (type && strcmp(type, "text") == 0 && json_is_string(json_object_get(b, "text")))
                return json_pack("{s:s, s:O}", "type", "text", "text", json_object_get(b, "text"));
        if (type && strcmp(type, "tool_use") == 0 && json_is_string(json_object_get(b, "id")) &&
            json_is_string(json_object_get(b, "name"))) {
                json_t *n = json_pack("{s:s, s:O, s:O}", "type", "tool_use", "id", json_object_get(b, "id"), "name",
                                      json_object_get(b, "name"));
                if (!n)
                        return NULL;
                if (json_is_object(input)
                            ? json_object_set(n, "input", (json_t *) input) < 0
                            : json_object_set_new(n, "input", json_object()) < 0 ||
                                      json_object_set_new(n, "input_error",
                                                          json_string("the input is not a JSON object")) < 0) {
                        json_decref(n);
                        return NULL;
                }
                return n;
        }
        return json_pack("{s:s, s:s, s:O}", "type", "opaque", "api", "anthropic", "block", b);
}

static model_stop stop_of(const char *r, bool tools) {
        if (tools)
                return MODEL_STOP_TOOL_USE;
        if (strcmp(r, "end_turn") == 0 || strcmp(r, "stop_sequence") == 0)
                return MODEL_STOP_END;
        if (strcmp(r, "tool_use") == 0)
                return MODEL_STOP_END; /* but no call came */
        if (strcmp(r, "max_tokens") == 0 || strcmp(r, "model_context_window_exceeded") == 0)
                return MODEL_STOP_MAX_TOKENS;
        if (strcmp(r, "refusal") == 0)
                return MODEL_STOP_REFUSAL;
        if (strcmp(r, "pause_turn") == 0)
                return MODEL_STOP_PAUSE;
        return MODEL_STOP_OTHER;
}

/* Usage counts present in u overwrite those in *ret (message_delta's are totals, never added). */
static void read_usage(const json_t *u, model_usage *ret) {
        if (!json_is_object(u))
                return;
        if (model_json_count(json_object_get(u, "input_tokens"), &ret->input_tokens))
                ret->known = true;
        if (model_json_count(json_object_get(u, "output_tokens"), &ret->output_tokens))
                ret->known = true;
        model_json_count(json_object_get(u, "cache_read_input_tokens"), &ret->cache_read_input_tokens);
        model_json_count(json_object_get(u, "cache_creation_input_tokens"), &ret->cache_creation_input_tokens);
}

static bool has_tool_use(const json_t *content) {
        const json_t *b;
        size_t k;

        json_array_foreach(content, k,
                           b) if (strcmp(json_string_value(json_object_get(b, "type")), "tool_use") == 0) return true;
        return false;
}

/* The response from the neutral content and what came with it. */
static int respond(json_t *content, const char *stop, const char *model, const model_usage *u, model_response *ret,
                   hull_error *e) {
        model_response a = {0};

        a.message = json_pack("{s:s, s:O}", "role", "assistant", "content", content);
        if (!a.message)
                return hull_fail(e, -ENOMEM, "out of memory");
        a.stop = stop_of(stop, has_tool_use(content));
        model_quote(a.stop_raw, sizeof(a.stop_raw), stop, strlen(stop));
        model_quote(a.model, sizeof(a.model), model, strlen(model));
        a.usage = *u;
        *ret = a;
        return 0;
}

int model_anthropic_decode(const char *body, size_t len, model_response *ret, model_api_error *ret_err, hull_error *e) {
        _cleanup_(json_decrefp) json_t *j = NULL, *content = NULL;
        const json_t *blocks, *b;
        json_error_t je;
        model_usage usage = {0};
        char first[80], stop[MODEL_SHORT_STR_MAX] = "", model[MODEL_SHORT_STR_MAX] = "";
        size_t k;

        j = json_loadb(body, len, JSON_ALLOW_NUL, &je);
        if (!j || !json_is_object(j)) {
                model_quote(first, sizeof(first), body, len);
                return hull_fail(e, -EPROTO, "the answer is not JSON (%s): \"%s\"", j ? "not an object" : je.text,
                                 first);
        }
        blocks = json_object_get(j, "content");
        if (!json_is_array(blocks) && model_error_from_json(j, ret_err))
                return -EBADMSG;
        if (!json_is_array(blocks))
                return hull_fail(e, -EPROTO, "the answer has no content array");
        if (json_array_size(blocks) > MODEL_BLOCKS_MAX)
                return hull_fail(e, -E2BIG, "the answer has more than %u blocks", MODEL_BLOCKS_MAX);
        content = json_array();
        if (!content)
                return hull_fail(e, -ENOMEM, "out of memory");
        json_array_foreach(blocks, k, b) {
                if (!json_is_object(b))
                        return hull_fail(e, -EPROTO, "the answer's content[%zu] is not an object", k);
                if (json_array_append_new(content, neutral_block(b)) < 0)
                        return hull_fail(e, -ENOMEM, "out of memory");
        }
        model_set_str(stop, sizeof(stop), json_object_get(j, "stop_reason"));
        model_set_str(model, sizeof(model), json_object_get(j, "model"));
        read_usage(json_object_get(j, "usage"), &usage);
        return respond(content, stop, model, &usage, ret, e);
}

/* ---- the stream ---- */

typedef struct an_block {
        bool started, stopped;
        json_t *raw;     /* the content_block as it started */
        dynbuf text;     /* text_delta (and the start's text) */
        dynbuf thinking; /* thinking_delta (and the start's) */
        dynbuf json;     /* input_json_delta pieces */
        json_t *signature, *citations;
} an_block;

typedef struct an_state {
        dynbuf blocks; /* an_block[], by index */
        size_t n_blocks;
        char stop[MODEL_SHORT_STR_MAX];
        char model[MODEL_SHORT_STR_MAX];
        model_usage usage;
} an_state;

static void *an_new(void) {
        an_state *st = calloc(1, sizeof(*st));
        if (st)
                dynbuf_init(&st->blocks, MODEL_BLOCKS_MAX * sizeof(an_block));
        return st;
}

static void block_free(an_block *b) {
        json_decref(b->raw);
        json_decref(b->signature);
        json_decref(b->citations);
        dynbuf_free(&b->text);
        dynbuf_free(&b->thinking);
        dynbuf_free(&b->json);
}

static void an_free(void *p) {
        an_state *st = p;

        if (!st)
                return;
        for (size_t i = 0; i < st->n_blocks; i++)
                block_free((an_block *) st->blocks.buf + i);
        dynbuf_free(&st->blocks);
        free(st);
}

/* Block index of an event: started (or, for content_block_start, made). */
static an_block *block_at(an_state *st, const json_t *j, bool make, hull_error *e) {
        const json_t *index = json_object_get(j, "index");
        json_int_t i = json_is_integer(index) ? json_integer_value(index) : -1;
        an_block *b;

        if (i < 0 || i >= (json_int_t) MODEL_BLOCKS_MAX) {
                hull_fail(e, -EPROTO, "a content block event without a valid index (0 to %u)", MODEL_BLOCKS_MAX - 1);
                return NULL;
        }
        while (st->n_blocks <= (size_t) i) {
                an_block z = {0};
                dynbuf_init(&z.text, MODEL_STREAM_BYTES_MAX);
                dynbuf_init(&z.thinking, MODEL_STREAM_BYTES_MAX);
                dynbuf_init(&z.json, MODEL_STREAM_BYTES_MAX);
                if (dynbuf_add(&st->blocks, &z, sizeof(z)) < 0) {
                        hull_fail(e, -ENOMEM, "out of memory");
                        return NULL;
                }
                st->n_blocks++;
        }
        b = (an_block *) st->blocks.buf + i;
        if (make && b->started) {
                hull_fail(e, -EPROTO, "content block %lld started twice", (long long) i);
                return NULL;
        }
        if (!make && !b->started) {
                hull_fail(e, -EPROTO, "an event for content block %lld, which never started", (long long) i);
                return NULL;
        }
        return b;
}

static int add_str(dynbuf *b, const json_t *v, hull_error *e) {
        int r = json_is_string(v) ? dynbuf_add(b, json_string_value(v), json_string_length(v)) : 0;
        if (r == -E2BIG)
                return hull_fail(e, r, "the answer is too long");
        if (r < 0)
                return hull_fail(e, r, "out of memory");
        return 0;
}

static int block_start(model_stream *s, an_state *st, const json_t *j, const model_call_opts *o, hull_error *e) {
        const json_t *cb = json_object_get(j, "content_block");
        const char *type = json_string_value(json_object_get(cb, "type"));
        an_block *b;
        int r;

        if (!json_is_object(cb) || !type)
                return hull_fail(e, -EPROTO, "content_block_start without a content_block and its type");
        b = block_at(st, j, true, e);
        if (!b)
                return -EPROTO;
        b->started = true;
        b->raw = json_deep_copy(cb);
        if (!b->raw)
                return hull_fail(e, -ENOMEM, "out of memory");
        r = add_str(&b->text, json_object_get(cb, "text"), e);
        if (r == 0)
                r = add_str(&b->thinking, json_object_get(cb, "thinking"), e);
        if (r < 0)
                return r;
        if (strcmp(type, "tool_use") == 0) {
                const char *id = json_string_value(json_object_get(cb, "id"));
                const char *name = json_string_value(json_object_get(cb, "name"));
                if (!id || !name)
                        return hull_fail(e, -EPROTO, "a tool_use block without id and name");
                return model_stream_tool(s, o, id, name);
        }
        return 0;
}

static int block_delta(model_stream *s, an_state *st, const json_t *j, const model_call_opts *o, hull_error *e) {
        const json_t *d = json_object_get(j, "delta");
        const char *type = json_string_value(json_object_get(d, "type"));
        an_block *b = block_at(st, j, false, e);
        int r;

        if (!b)
                return -EPROTO;
        if (!type)
                return 0;
        if (strcmp(type, "text_delta") == 0) {
                const json_t *t = json_object_get(d, "text");
                r = add_str(&b->text, t, e);
                if (r == 0 && json_is_string(t) &&
                    strcmp(json_string_value(json_object_get(b->raw, "type")), "text") == 0)
                        r = model_stream_text(s, o, json_string_value(t), json_string_length(t));
                return r;
        }
        if (strcmp(type, "input_json_delta") == 0)
                return add_str(&b->json, json_object_get(d, "partial_json"), e);
        if (strcmp(type, "thinking_delta") == 0)
                return add_str(&b->thinking, json_object_get(d, "thinking"), e);
        if (strcmp(type, "signature_delta") == 0) {
                /* The whole signature (the SDK assigns, it does not append). */
                json_decref(b->signature);
                b->signature = json_incref(json_object_get(d, "signature"));
                return 0;
        }
        if (strcmp(type, "citations_delta") == 0 && json_object_get(d, "citation")) {
                if (!b->citations)
                        b->citations = json_array();
                if (!b->citations || json_array_append(b->citations, json_object_get(d, "citation")) < 0)
                        return hull_fail(e, -ENOMEM, "out of memory");
        }
        return 0; /* unknown delta types: ignored */
}

/* A streamed block as the API would have sent it whole, then in the neutral form. */
static json_t *finish_block(an_block *b) {
        const char *type = json_string_value(json_object_get(b->raw, "type"));
        _cleanup_(json_decrefp) json_t *whole = NULL;

        if (strcmp(type, "tool_use") == 0 && b->json.len > 0)
                return model_tool_use_block(json_string_value(json_object_get(b->raw, "id")),
                                            json_string_value(json_object_get(b->raw, "name")), b->json.buf,
                                            b->json.len, false);
        whole = json_deep_copy(b->raw);
        if (!whole)
                return NULL;
        if (b->text.len > 0 && json_object_set_new(whole, "text", json_stringn(b->text.buf, b->text.len)) < 0)
                return NULL;
        if (b->thinking.len > 0 &&
            json_object_set_new(whole, "thinking", json_stringn(b->thinking.buf, b->thinking.len)) < 0)
                return NULL;
        if (b->signature && json_object_set(whole, "signature", b->signature) < 0)
                return NULL;
        if (b->citations && strcmp(type, "text") != 0) {
                const json_t *had = json_object_get(whole, "citations");
                if (json_is_array(had) ? json_array_extend((json_t *) had, b->citations) < 0
                                       : json_object_set(whole, "citations", b->citations) < 0)
                        return NULL;
        }
        if (b->json.len > 0) {
                /* A server tool's input (server_tool_use): kept when it parses. */
                json_t *in = json_loadb(b->json.buf, b->json.len, 0, NULL);
                if (in && json_object_set_new(whole, "input", in) < 0)
                        return NULL;
        }
        return neutral_block(whole);
}

static int an_event(model_stream *s, const sse_event *ev, const model_call_opts *o, hull_error *e) {
        an_state *st = s->st;
        _cleanup_(json_decrefp) json_t *j = NULL;
        json_error_t je;
        const char *type;
        char first[80];

        if (ev->data_len == 0)
                return 0; /* "event: ping" alone */
        j = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &je);
        if (!j || !json_is_object(j)) {
                model_quote(first, sizeof(first), ev->data, ev->data_len);
                return hull_fail(e, -EPROTO, "a stream event is not a JSON object (%s): \"%s\"",
                                 j ? "another value" : je.text, first);
        }
        type = json_string_value(json_object_get(j, "type"));
        if (!type)
                type = ev->name;
        if (strcmp(type, "message_start") == 0) {
                const json_t *m = json_object_get(j, "message");
                model_set_str(st->model, sizeof(st->model), json_object_get(m, "model"));
                model_set_str(st->stop, sizeof(st->stop), json_object_get(m, "stop_reason"));
                read_usage(json_object_get(m, "usage"), &st->usage);
                return 0;
        }
        if (strcmp(type, "content_block_start") == 0)
                return block_start(s, st, j, o, e);
        if (strcmp(type, "content_block_delta") == 0)
                return block_delta(s, st, j, o, e);
        if (strcmp(type, "content_block_stop") == 0) {
                an_block *b = block_at(st, j, false, e);
                if (!b)
                        return -EPROTO;
                b->stopped = true;
                return 0;
        }
        if (strcmp(type, "message_delta") == 0) {
                const json_t *d = json_object_get(j, "delta");
                model_set_str(st->stop, sizeof(st->stop), json_object_get(d, "stop_reason"));
                read_usage(json_object_get(j, "usage"), &st->usage);
                return 0;
        }
        if (strcmp(type, "message_stop") == 0)
                return 1;
        if (strcmp(type, "error") == 0) {
                if (!model_error_from_json(j, &s->error))
                        model_quote(s->error.message, sizeof(s->error.message), ev->data, ev->data_len);
                return -EBADMSG;
        }
        return 0; /* ping, and event types to come */
}

static int an_finish(model_stream *s, model_response *ret, hull_error *e) {
        an_state *st = s->st;
        _cleanup_(json_decrefp) json_t *content = NULL;

        if (!s->done)
                return hull_fail(e, -EPIPE, "the stream ended before message_stop after %lu events", s->events);
        content = json_array();
        if (!content)
                return hull_fail(e, -ENOMEM, "out of memory");
        for (size_t i = 0; i < st->n_blocks; i++) {
                an_block *b = (an_block *) st->blocks.buf + i;
                if (b->started && json_array_append_new(content, finish_block(b)) < 0)
                        return hull_fail(e, -ENOMEM, "out of memory");
        }
        return respond(content, st->stop, st->model, &st->usage, ret, e);
}

const model_stream_ops model_anthropic_stream_ops = {
        .new_state = an_new,
        .free_state = an_free,
        .event = an_event,
        .finish = an_finish,
};
