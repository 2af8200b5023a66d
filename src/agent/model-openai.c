/* model-openai.c: the OpenAI Chat Completions wire format (../shared/reference/model-apis.md §1),
 * with the deviations of compatible servers (§1.8): the request from the neutral conversation, a
 * whole answer, and a streamed one assembled from its chunks. Pure.
 *
 * The neutral form in OpenAI's terms: a user message's tool_result blocks become one "tool"
 * message each, before the user's text; an assistant message's text becomes "content" (null when
 * the turn is only calls) and its tool_use blocks "tool_calls", each with the arguments string
 * as it was received ("arguments", byte for byte) or the input serialized. Opaque blocks made by
 * OpenAI (a refusal) are content parts; Anthropic's are dropped.
 *
 * Usage in model.h's (Anthropic's) terms: input_tokens is prompt_tokens less the cached ones,
 * which are cache_read_input_tokens. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "model-internal.h"

/* ---- the request ---- */

/* A user message's content: a string when it is one text, else parts. */
static int add_user(json_t *msgs, const json_t *parts) {
        const json_t *first = json_array_get(parts, 0);
        json_t *content;

        if (json_array_size(parts) == 0)
                return 0;
        if (json_array_size(parts) == 1 && json_is_string(json_object_get(first, "text")) &&
            json_is_string(json_object_get(first, "type")) &&
            strcmp(json_string_value(json_object_get(first, "type")), "text") == 0)
                content = json_copy(json_object_get(first, "text"));
        else
                content = json_deep_copy(parts);
        return json_array_append_new(msgs, json_pack("{s:s, s:o}", "role", "user", "content", content));
}

static int encode_user(json_t *msgs, const json_t *blocks, size_t i, hull_error *e) {
        _cleanup_(json_decrefp) json_t *parts = json_array();
        const json_t *b;
        size_t k;

        if (!parts)
                return -ENOMEM;
        /* The results first, one tool message each, right after the assistant's calls. */
        json_array_foreach(blocks, k, b) {
                const char *type = model_block_type(b, MODEL_ROLE_USER, i, k, e);
                const json_t *c = json_object_get(b, "content");
                json_t *m;
                if (!type)
                        return -EINVAL;
                if (strcmp(type, "tool_result") != 0)
                        continue;
                m = json_pack("{s:s, s:O}", "role", "tool", "tool_call_id", json_object_get(b, "tool_use_id"));
                if (!m || json_object_set_new(m, "content", c ? json_incref((json_t *) c) : json_string("")) < 0 ||
                    json_array_append_new(msgs, m) < 0)
                        return -ENOMEM;
        }
        json_array_foreach(blocks, k, b) {
                const char *type = json_string_value(json_object_get(b, "type"));
                const char *api = json_string_value(json_object_get(b, "api"));
                int r = 0;
                if (strcmp(type, "text") == 0)
                        r = json_array_append_new(
                                parts, json_pack("{s:s, s:O}", "type", "text", "text", json_object_get(b, "text")));
                else if (strcmp(type, "opaque") == 0 && strcmp(api, "openai") == 0)
                        r = json_array_append(parts, json_object_get(b, "block"));
                if (r < 0)
                        return -ENOMEM;
        }
        return add_user(msgs, parts) < 0 ? -ENOMEM : 0;
}

static int encode_assistant(json_t *msgs, const json_t *blocks, size_t i, hull_error *e) {
        _cleanup_(json_decrefp) json_t *parts = json_array(), *calls = json_array();
        _cleanup_dynbuf_ dynbuf text;
        bool only_text = true;
        const json_t *b;
        json_t *m, *content;
        size_t k;

        dynbuf_init(&text, MODEL_STREAM_BYTES_MAX);
        if (!parts || !calls)
                return -ENOMEM;
        json_array_foreach(blocks, k, b) {
                const char *type = model_block_type(b, MODEL_ROLE_ASSISTANT, i, k, e);
                int r = 0;
                if (!type)
                        return -EINVAL;
                if (strcmp(type, "text") == 0) {
                        const json_t *t = json_object_get(b, "text");
                        r = json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "text", "text", t));
                        if (r == 0)
                                r = dynbuf_add(&text, json_string_value(t), json_string_length(t));
                } else if (strcmp(type, "tool_use") == 0) {
                        const json_t *args = json_object_get(b, "arguments");
                        json_t *a;
                        if (json_is_string(args))
                                a = json_incref((json_t *) args); /* byte for byte as received */
                        else {
                                char *s = json_dumps(json_object_get(b, "input"), JSON_COMPACT);
                                a = s ? json_string(s) : NULL;
                                free(s);
                        }
                        r = json_array_append_new(calls,
                                                  json_pack("{s:O, s:s, s:{s:O, s:o}}", "id", json_object_get(b, "id"),
                                                            "type", "function", "function", "name",
                                                            json_object_get(b, "name"), "arguments", a));
                } else if (strcmp(type, "opaque") == 0 &&
                           strcmp(json_string_value(json_object_get(b, "api")), "openai") == 0) {
                        only_text = false;
                        r = json_array_append(parts, json_object_get(b, "block"));
                }
                if (r < 0)
                        return r == -E2BIG ? hull_fail(e, -E2BIG, "model: messages[%zu] is too long", i) : -ENOMEM;
        }
        if (json_array_size(parts) == 0)
                content = json_array_size(calls) ? json_null() : json_string("");
        else if (only_text)
                content = json_stringn(text.buf ? text.buf : "", text.len);
        else
                content = json_incref(parts);
        m = json_pack("{s:s, s:o}", "role", "assistant", "content", content);
        if (!m || (json_array_size(calls) && json_object_set(m, "tool_calls", calls) < 0) ||
            json_array_append_new(msgs, m) < 0)
                return -ENOMEM;
        return 0;
}

static int encode_tools(json_t *body, const json_t *tools, hull_error *e) {
        _cleanup_(json_decrefp) json_t *out = json_array();
        const json_t *t;
        size_t k;

        if (!out)
                return -ENOMEM;
        json_array_foreach(tools, k, t) {
                const json_t *name = json_object_get(t, "name"), *desc = json_object_get(t, "description");
                const json_t *schema = json_object_get(t, "input_schema");
                json_t *f;
                if (!json_is_string(name))
                        return hull_fail(e, -EINVAL, "model: tools[%zu] has no name", k);
                f = json_pack("{s:O}", "name", name);
                if (!f)
                        return -ENOMEM;
                if ((json_is_string(desc) && json_object_set(f, "description", (json_t *) desc) < 0) ||
                    (json_is_object(schema) && json_object_set(f, "parameters", (json_t *) schema) < 0) ||
                    json_array_append_new(out, json_pack("{s:s, s:o}", "type", "function", "function", f)) < 0)
                        return -ENOMEM;
        }
        return json_object_set(body, "tools", out) < 0 ? -ENOMEM : 0;
}

/* The body's members after "messages" (tools, the output cap, store, stream, effort). */
static int encode_tail(const model_wire_cfg *w, const model_request *r, json_t **ret, hull_error *e) {
        _cleanup_(json_decrefp) json_t *tail = json_object();
        int k;

        if (!tail)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        if (r->tools && json_array_size(r->tools) > 0) {
                k = encode_tools(tail, r->tools, e);
                if (k < 0)
                        return k == -ENOMEM ? hull_fail(e, k, "model: out of memory") : k;
        }
        if (json_object_set_new(tail, w->compat ? "max_tokens" : "max_completion_tokens",
                                json_integer(w->max_output_tokens)) < 0 ||
            json_object_set_new(tail, "store", json_false()) < 0 ||
            (w->stream && (json_object_set_new(tail, "stream", json_true()) < 0 ||
                           json_object_set_new(tail, "stream_options", json_pack("{s:b}", "include_usage", 1)) < 0)))
                return hull_fail(e, -ENOMEM, "model: out of memory");
        /* the model object's effort: reasoning_effort tops out at "high" */
        if (w->effort &&
            json_object_set_new(tail, "reasoning_effort",
                                json_string(strcmp(w->effort, "xhigh") == 0 || strcmp(w->effort, "max") == 0
                                                    ? "high"
                                                    : w->effort)) < 0)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        *ret = TAKE_PTR(tail);
        return 0;
}

int model_openai_encode(const model_wire_cfg *w, const model_request *r, char **ret, size_t *ret_len, hull_error *e) {
        _cleanup_(json_decrefp) json_t *body = NULL, *msgs = json_array(), *sys = NULL, *tail = NULL;
        size_t n = json_array_size(r->messages);
        int k;

        if (!msgs)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        if (!json_is_array(r->messages) || n == 0)
                return hull_fail(e, -EINVAL, "model: a request needs at least one message");
        if (r->system) {
                sys = json_pack("{s:s, s:s}", "role", w->compat ? "system" : "developer", "content", r->system);
                if (!sys)
                        return hull_fail(e, -ENOMEM, "model: out of memory");
        }
        k = encode_tail(w, r, &tail, e);
        if (k < 0)
                return k;
        body = json_pack("{s:s}", "model", w->model);
        if (!body)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        if (r->cache) /* the messages' wire JSON kept from the requests before */
                return model_wire_body(r->cache, MODEL_API_OPENAI, body, sys, r->messages, encode_user,
                                       encode_assistant, tail, ret, ret_len, e);
        if (sys && json_array_append(msgs, sys) < 0)
                return hull_fail(e, -ENOMEM, "model: out of memory");
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
        /* the whole body as one tree: the model, the messages, tail's members, in that order */
        if (json_object_set(body, "messages", msgs) < 0 || json_object_update(body, tail) < 0)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        *ret = json_dumps(body, JSON_COMPACT);
        if (!*ret)
                return hull_fail(e, -ENOMEM, "model: out of memory");
        *ret_len = strlen(*ret);
        return 0;
}

/* ---- the answer: whole or assembled from chunks ---- */

typedef struct oa_call {
        long key;     /* the fragments' "index", -1 when they had none */
        char *id;     /* NULL until one came */
        bool id_made; /* made up here (none came yet): a real one replaces it */
        char *name;
        dynbuf args;
        bool announced; /* on_tool_use was called */
} oa_call;

typedef struct oa_state {
        dynbuf text, refusal;
        dynbuf calls; /* oa_call[] */
        size_t n_calls;
        char finish[MODEL_SHORT_STR_MAX];
        bool finished;
        json_t *usage; /* the last non-null usage */
        char model[MODEL_SHORT_STR_MAX];
        char id[MODEL_SHORT_STR_MAX]; /* the completion's, for ids made up */
} oa_state;

static void *oa_new(void) {
        oa_state *st = calloc(1, sizeof(*st));
        if (!st)
                return NULL;
        dynbuf_init(&st->text, MODEL_STREAM_BYTES_MAX);
        dynbuf_init(&st->refusal, MODEL_STREAM_BYTES_MAX);
        dynbuf_init(&st->calls, MODEL_BLOCKS_MAX * sizeof(oa_call));
        return st;
}

static void oa_free(void *p) {
        oa_state *st = p;
        oa_call *calls;

        if (!st)
                return;
        calls = (oa_call *) st->calls.buf;
        for (size_t i = 0; i < st->n_calls; i++) {
                free(calls[i].id);
                free(calls[i].name);
                dynbuf_free(&calls[i].args);
        }
        dynbuf_free(&st->calls);
        dynbuf_free(&st->text);
        dynbuf_free(&st->refusal);
        json_decref(st->usage);
        free(st);
}

static oa_call *new_call(oa_state *st, long key, hull_error *e) {
        oa_call c = {.key = key};
        int r;

        dynbuf_init(&c.args, MODEL_STREAM_BYTES_MAX);
        r = dynbuf_add(&st->calls, &c, sizeof(c));
        if (r == -E2BIG) {
                hull_fail(e, r, "more than %u tool calls in one answer", MODEL_BLOCKS_MAX);
                return NULL;
        }
        if (r < 0) {
                hull_fail(e, r, "out of memory");
                return NULL;
        }
        return (oa_call *) st->calls.buf + st->n_calls++;
}

static int set_string(char **dst, const json_t *v) {
        char *s;

        if (!json_is_string(v) || json_string_length(v) == 0)
                return 0;
        s = strdup(json_string_value(v));
        if (!s)
                return -ENOMEM;
        free(*dst);
        *dst = s;
        return 0;
}

/* The slot a tool-call fragment belongs to (model-apis.md §3): by its index, a new one when an
 * index comes with a different id than its slot holds (Ollama reuses index 0); without an index,
 * a new one when an id starts a call, else the latest (or, among several fragments in one chunk,
 * the one at its position). whole: an answer's message, where each entry is a call of its own. */
static oa_call *slot_of(oa_state *st, const json_t *f, size_t pos, size_t n_frags, bool whole, hull_error *e) {
        const json_t *index = json_object_get(f, "index");
        const char *id = json_string_value(json_object_get(f, "id"));
        oa_call *calls = (oa_call *) st->calls.buf;
        long key = json_is_integer(index) && json_integer_value(index) >= 0 && json_integer_value(index) <= INT32_MAX
                           ? (long) json_integer_value(index)
                           : -1;

        if (id && !id[0])
                id = NULL;
        if (whole)
                return new_call(st, key, e);
        if (key >= 0) {
                for (size_t i = st->n_calls; i > 0; i--) {
                        oa_call *c = &calls[i - 1];
                        if (c->key != key)
                                continue;
                        if (id && c->id && !c->id_made && strcmp(c->id, id) != 0)
                                break; /* a new call at a reused index */
                        return c;
                }
                return new_call(st, key, e);
        }
        if (st->n_calls == 0)
                return new_call(st, key, e);
        if (id) {
                oa_call *last = &calls[st->n_calls - 1];
                if (last->id && !last->id_made && strcmp(last->id, id) == 0)
                        return last;
                if (last->id_made || !last->id) {
                        /* The latest call had no id yet: this one names it, unless it has a name
                         * of its own already and this fragment brings another. */
                        const char *name = json_string_value(json_object_get(json_object_get(f, "function"), "name"));
                        if (!(last->name && name && name[0]))
                                return last;
                }
                return new_call(st, key, e);
        }
        if (n_frags > 1 && pos < st->n_calls)
                return &calls[pos];
        return &calls[st->n_calls - 1];
}

static int add_fragment(model_stream *s, oa_state *st, const json_t *f, size_t pos, size_t n_frags, bool whole,
                        const model_call_opts *o, hull_error *e) {
        const json_t *fn = json_object_get(f, "function"), *args = json_object_get(fn, "arguments");
        oa_call *c;
        int r;

        if (!json_is_object(f))
                return hull_fail(e, -EPROTO, "a tool call that is not an object");
        c = slot_of(st, f, pos, n_frags, whole, e);
        if (!c)
                return e ? e->err : -ENOMEM;
        if (json_is_string(json_object_get(f, "id")) && json_string_length(json_object_get(f, "id")) > 0) {
                if (set_string(&c->id, json_object_get(f, "id")) < 0)
                        return hull_fail(e, -ENOMEM, "out of memory");
                c->id_made = false;
        }
        if (set_string(&c->name, json_object_get(fn, "name")) < 0)
                return hull_fail(e, -ENOMEM, "out of memory");
        if (json_is_string(args))
                r = dynbuf_add(&c->args, json_string_value(args), json_string_length(args));
        else if (args && !json_is_null(args)) {
                /* Arguments sent as a JSON value rather than a string: serialized. */
                _cleanup_free_ char *text = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
                r = text ? dynbuf_add(&c->args, text, strlen(text)) : -ENOMEM;
        } else
                r = 0;
        if (r < 0)
                return r == -E2BIG ? hull_fail(e, r, "a tool call's arguments are too long")
                                   : hull_fail(e, r, "out of memory");
        if (!c->id) {
                char made[MODEL_SHORT_STR_MAX + 32];
                size_t n = (size_t) (c - (oa_call *) st->calls.buf);
                if (st->id[0])
                        snprintf(made, sizeof(made), "call_%s_%zu", st->id, n);
                else
                        snprintf(made, sizeof(made), "call_%zu", n);
                c->id = strdup(made);
                if (!c->id)
                        return hull_fail(e, -ENOMEM, "out of memory");
                c->id_made = true;
        }
        if (c->name && !c->announced) {
                c->announced = true;
                return model_stream_tool(s, o, c->id, c->name);
        }
        return 0;
}

/* A chunk's delta, or a whole answer's message (whole). */
static int add_delta(model_stream *s, oa_state *st, const json_t *d, bool whole, const model_call_opts *o,
                     hull_error *e) {
        const json_t *content = json_object_get(d, "content"), *refusal = json_object_get(d, "refusal");
        const json_t *calls = json_object_get(d, "tool_calls"), *f;
        size_t k;
        int r = 0;

        if (!json_is_object(d))
                return 0;
        if (json_is_string(content)) {
                r = dynbuf_add(&st->text, json_string_value(content), json_string_length(content));
                if (r == 0)
                        r = model_stream_text(s, o, json_string_value(content), json_string_length(content));
        } else if (json_is_array(content)) {
                /* Text parts (an answer's message may have them, and a server's delta). */
                json_array_foreach(content, k, f) {
                        const json_t *t = json_object_get(f, "text");
                        if (r == 0 && json_is_string(t))
                                r = dynbuf_add(&st->text, json_string_value(t), json_string_length(t));
                        if (r == 0 && json_is_string(t))
                                r = model_stream_text(s, o, json_string_value(t), json_string_length(t));
                }
        }
        if (r == 0 && json_is_string(refusal))
                r = dynbuf_add(&st->refusal, json_string_value(refusal), json_string_length(refusal));
        if (r == -E2BIG)
                return hull_fail(e, r, "the answer's text is too long");
        if (r == -ENOMEM)
                return hull_fail(e, r, "out of memory");
        if (r < 0)
                return r; /* the caller's callback */
        if (!json_is_array(calls))
                return 0;
        json_array_foreach(calls, k, f) {
                r = add_fragment(s, st, f, k, json_array_size(calls), whole, o, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void read_top(oa_state *st, const json_t *j) {
        const json_t *usage = json_object_get(j, "usage");

        if (!st->model[0] || json_is_string(json_object_get(j, "model")))
                model_set_str(st->model, sizeof(st->model), json_object_get(j, "model"));
        if (!st->id[0])
                model_set_str(st->id, sizeof(st->id), json_object_get(j, "id"));
        if (json_is_object(usage)) {
                json_decref(st->usage);
                st->usage = json_incref((json_t *) usage);
        }
}

/* The choice that counts: index 0 (or without an index), else the first. */
static const json_t *choice_of(const json_t *choices) {
        const json_t *c;
        size_t k;

        json_array_foreach(choices, k, c) {
                const json_t *index = json_object_get(c, "index");
                if (json_is_object(c) && (!index || (json_is_integer(index) && json_integer_value(index) == 0)))
                        return c;
        }
        return NULL;
}

static void read_usage(const json_t *u, model_usage *ret) {
        uint64_t prompt = 0, completion = 0, cached = 0;
        bool p = model_json_count(json_object_get(u, "prompt_tokens"), &prompt);
        bool c = model_json_count(json_object_get(u, "completion_tokens"), &completion);

        if (!p && !c)
                return;
        model_json_count(json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens"), &cached);
        cached = MIN(cached, prompt);
        *ret = (model_usage){
                .known = true,
                .input_tokens = prompt - cached,
                .output_tokens = completion,
                .cache_read_input_tokens = cached,
        };
}

static model_stop stop_of(const char *finish, bool calls) {
        if (calls)
                return MODEL_STOP_TOOL_USE;
        if (strcmp(finish, "stop") == 0)
                return MODEL_STOP_END;
        if (strcmp(finish, "length") == 0)
                return MODEL_STOP_MAX_TOKENS;
        if (strcmp(finish, "content_filter") == 0)
                return MODEL_STOP_REFUSAL;
        return MODEL_STOP_OTHER;
}

/* The neutral answer from what was gathered. */
static int build(oa_state *st, model_response *ret, hull_error *e) {
        _cleanup_(json_decrefp) json_t *content = json_array();
        oa_call *calls = (oa_call *) st->calls.buf;
        model_response a = {0};

        if (!content)
                return hull_fail(e, -ENOMEM, "out of memory");
        if (st->text.len > 0 && json_array_append_new(content, json_pack("{s:s, s:s%}", "type", "text", "text",
                                                                         st->text.buf, st->text.len)) < 0)
                return hull_fail(e, -ENOMEM, "out of memory");
        if (st->refusal.len > 0 &&
            json_array_append_new(content,
                                  json_pack("{s:s, s:s, s:{s:s, s:s%}}", "type", "opaque", "api", "openai", "block",
                                            "type", "refusal", "refusal", st->refusal.buf, st->refusal.len)) < 0)
                return hull_fail(e, -ENOMEM, "out of memory");
        for (size_t i = 0; i < st->n_calls; i++) {
                oa_call *c = &calls[i];
                json_t *b = model_tool_use_block(c->id, c->name ? c->name : "", c->args.buf ? c->args.buf : "",
                                                 c->args.len, true);
                if (!b || json_array_append_new(content, b) < 0)
                        return hull_fail(e, -ENOMEM, "out of memory");
        }
        a.message = json_pack("{s:s, s:O}", "role", "assistant", "content", content);
        if (!a.message)
                return hull_fail(e, -ENOMEM, "out of memory");
        a.stop = stop_of(st->finish, st->n_calls > 0);
        if (a.stop == MODEL_STOP_END && st->refusal.len > 0 && st->text.len == 0)
                a.stop = MODEL_STOP_REFUSAL;
        memcpy(a.stop_raw, st->finish, sizeof(a.stop_raw));
        memcpy(a.model, st->model, sizeof(a.model));
        read_usage(st->usage, &a.usage);
        *ret = a;
        return 0;
}

int model_openai_decode(const char *body, size_t len, model_response *ret, model_api_error *ret_err, hull_error *e) {
        _cleanup_(json_decrefp) json_t *j = NULL;
        json_error_t je;
        oa_state *st;
        const json_t *choice;
        char first[80];
        int r;

        j = json_loadb(body, len, JSON_ALLOW_NUL, &je);
        if (!j || !json_is_object(j)) {
                model_quote(first, sizeof(first), body, len);
                return hull_fail(e, -EPROTO, "the answer is not JSON (%s): \"%s\"", j ? "not an object" : je.text,
                                 first);
        }
        if (!json_object_get(j, "choices") && model_error_from_json(j, ret_err))
                return -EBADMSG;
        choice = choice_of(json_object_get(j, "choices"));
        if (!choice || !json_is_object(json_object_get(choice, "message")))
                return hull_fail(e, -EPROTO, "the answer has no choices[0].message");
        st = oa_new();
        if (!st)
                return hull_fail(e, -ENOMEM, "out of memory");
        read_top(st, j);
        r = add_delta(NULL, st, json_object_get(choice, "message"), true, NULL, e);
        if (r == 0) {
                model_set_str(st->finish, sizeof(st->finish), json_object_get(choice, "finish_reason"));
                r = build(st, ret, e);
        }
        oa_free(st);
        return r;
}

static int oa_event(model_stream *s, const sse_event *ev, const model_call_opts *o, hull_error *e) {
        oa_state *st = s->st;
        _cleanup_(json_decrefp) json_t *j = NULL;
        const json_t *choice, *finish, *err;
        json_error_t je;
        char first[80];

        if (strncmp(ev->data, "[DONE]", 6) == 0)
                return 1;
        if (ev->data_len == 0)
                return 0; /* an event without data (a proxy's keep-alive) */
        j = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &je);
        if (!j || !json_is_object(j)) {
                model_quote(first, sizeof(first), ev->data, ev->data_len);
                return hull_fail(e, -EPROTO, "a stream event is not a JSON object (%s): \"%s\"",
                                 j ? "another value" : je.text, first);
        }
        err = json_object_get(j, "error");
        if (err && !json_is_null(err) && !json_is_false(err)) {
                if (!model_error_from_json(j, &s->error))
                        model_quote(s->error.message, sizeof(s->error.message), ev->data, ev->data_len);
                return -EBADMSG;
        }
        read_top(st, j);
        choice = choice_of(json_object_get(j, "choices"));
        if (!choice)
                return 0; /* the usage chunk (choices: []), or another choice's */
        finish = json_object_get(choice, "finish_reason");
        if (json_is_string(finish)) {
                model_set_str(st->finish, sizeof(st->finish), finish);
                st->finished = true;
        }
        return add_delta(s, st, json_object_get(choice, "delta"), false, o, e);
}

static int oa_finish(model_stream *s, model_response *ret, hull_error *e) {
        oa_state *st = s->st;

        /* Complete after [DONE], or after a finish_reason with the end right after it. */
        if (!s->done && !st->finished)
                return hull_fail(e, -EPIPE, "the stream ended without a finish_reason or [DONE] after %lu events",
                                 s->events);
        return build(st, ret, e);
}

const model_stream_ops model_openai_stream_ops = {
        .new_state = oa_new,
        .free_state = oa_free,
        .event = oa_event,
        .finish = oa_finish,
};
