/* agent.c: the agent loop (agent.h). A turn is a small state machine over the conversation:
 *
 *   ask the model (context budget first) -> its answer appended -> each tool call of the answer,
 *   in order: announced (agent.tool_use), checked (known tool, arguments, the schema), decided
 *   (policy, decide(), perhaps a pause for agent_decide/agent_resume), run and shaped by the
 *   tool-call runner (tool-run.h: the session claimed, a watcher thread for the interrupt, the
 *   deadline and progress, spill.c's handles for big values and bodies), answered
 *   (agent.tool_result) -> the results appended as one user message -> ask again, until the
 *   model answers without a call or a bound ends the turn.
 *
 * Whatever ends a turn, the conversation stays valid for both APIs: every tool_use of an
 * assistant message has its tool_result, first, in the next user message (calls that never ran
 * get an error result saying why). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-internal.h"
#include "dynbuf.h"
#include "schema.h"
#include "ss.h"
#include "time-util.h"
#include "tool-run.h"
#include "utf8.h"
#include "watch.h"

typedef struct agent_tool {
        const tool_def *def;
        tool_policy policy;
        json_t *schema;
} agent_tool;

struct agent {
        agent_config cfg;
        agent_tool *tools;
        size_t n_tools;
        json_t *tools_json; /* [{name, description, input_schema}] as offered */
        char *system;
        json_t *messages;
        model_wire_cache *wire; /* the messages' wire JSON from the requests before */
        model_wire_cache *text; /* their text as they are, for agent_conversation_text */
        json_t *call_ids;       /* {id: true} of the tool calls of messages[0, ids_upto) */
        size_t ids_upto;        /* (never the last message: it may still grow in place) */

        /* the turn (kept across a requires_action pause) */
        bool in_turn;
        const atomic_bool *interrupt;
        unsigned model_requests, tool_calls;
        model_usage usage;
        uint64_t wall_left_ms; /* what is left of the turn's wall clock */
        uint64_t deadline_ms;  /* now_mono_ms() by which this part of the turn must end */
        char *last_text;
        model_failure failure;
        bool rescheduled; /* a failed request waits for its retry (session_states) */

        /* the answer whose calls run */
        json_t *calls;   /* its tool_use blocks (references) */
        size_t next;     /* the next one to answer */
        json_t *results; /* tool_result blocks so far */
        bool cut_last;   /* the answer stopped at max_tokens: its last block may be cut */

        /* a call awaiting a decision */
        bool waiting;
        char wait_event[BUS_ID_MAX];
        int decision; /* -1: none yet, else AGENT_ALLOW or AGENT_DENY */
        char *deny_message;
        bool wait_client; /* the call is a client tool's: its result comes by agent_supply */
        char *supplied;   /* ... that result */
        bool supplied_error;

        watch *watch; /* the tool calls' watch, kept across calls and turns (NULL: none made yet) */
};

static const char *const stop_names[_AGENT_STOP_MAX] = {
        [AGENT_STOP_END_TURN] = "end_turn",
        [AGENT_STOP_REQUIRES_ACTION] = "requires_action",
        [AGENT_STOP_MAX_TURNS] = "max_turns",
        [AGENT_STOP_MAX_TOOL_CALLS] = "max_tool_calls",
        [AGENT_STOP_CONTEXT] = "context",
        [AGENT_STOP_WALL_CLOCK] = "wall_clock",
        [AGENT_STOP_INTERRUPTED] = "interrupted",
        [AGENT_STOP_REFUSAL] = "refusal",
        [AGENT_STOP_ERROR] = "error",
        [AGENT_STOP_BUDGET] = "budget",
};

const char *agent_stop_to_string(agent_stop s) {
        return s < _AGENT_STOP_MAX ? stop_names[s] : "unknown";
}

void agent_turn_result_done(agent_turn_result *r) {
        if (!r)
                return;
        free(r->text);
        json_decref(r->pending);
        *r = (agent_turn_result){0};
}

/* ---- events ---- */

static void emit(agent *a, json_t *ev, char ret_id[BUS_ID_MAX]) {
        if (ret_id)
                ret_id[0] = '\0';
        if (!ev)
                return; /* out of memory: the event is lost, the turn goes on */
        (void) bus_emit(a->cfg.bus, ev, ret_id);
}

static json_t *usage_json(const model_usage *u) {
        return json_pack("{s:I, s:I, s:I, s:I}", "input_tokens", (json_int_t) u->input_tokens, "output_tokens",
                         (json_int_t) u->output_tokens, "cache_creation_input_tokens",
                         (json_int_t) u->cache_creation_input_tokens, "cache_read_input_tokens",
                         (json_int_t) u->cache_read_input_tokens);
}

static void emit_error(agent *a, const char *type, const char *message, const char *retry) {
        emit(a,
             json_pack("{s:s, s:{s:s, s:s, s:{s:s}}}", "type", "session.error", "error", "type", type, "message",
                       message, "retry_status", "type", retry),
             NULL);
}

static const char *error_type(model_fail f) {
        switch (f) {
        case MODEL_FAIL_RATE_LIMITED:
                return "model_rate_limited_error";
        case MODEL_FAIL_OVERLOADED:
                return "model_overloaded_error";
        case MODEL_FAIL_BILLING:
                return "billing_error";
        case MODEL_FAIL_NONE:
        case MODEL_FAIL_CANCELED:
                return "unknown_error";
        case MODEL_FAIL_AUTH:
        case MODEL_FAIL_NOT_FOUND:
        case MODEL_FAIL_CONTEXT:
        case MODEL_FAIL_BAD_REQUEST:
        case MODEL_FAIL_SERVER:
        case MODEL_FAIL_UNREACHABLE:
        case MODEL_FAIL_TIMEOUT:
        case MODEL_FAIL_TRUNCATED:
        case MODEL_FAIL_MALFORMED:
        case _MODEL_FAIL_MAX:
                break;
        }
        return "model_request_failed_error";
}

/* ---- small helpers ---- */

static const char *str_of(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

/* A JSON string from bytes that may not be UTF-8 (a tool's output). */
static json_t *text_json(const char *s, size_t len) {
        if (utf8_is_valid(s, len))
                return json_stringn(s, len);
        _cleanup_free_ char *fixed = NULL;
        size_t n;
        return utf8_make_valid(s, len, &fixed, &n) < 0 ? NULL : json_stringn(fixed, n);
}

static agent_tool *find_tool(agent *a, const char *name) {
        for (size_t i = 0; name && i < a->n_tools; i++)
                if (strcmp(a->tools[i].def->name, name) == 0)
                        return &a->tools[i];
        return NULL;
}

static bool interrupted(const agent *a) {
        return a->interrupt && atomic_load(a->interrupt);
}

/* ---- the conversation ---- */

static bool block_ok(const json_t *b, const char *role) {
        const char *type = str_of(b, "type");
        if (!json_is_object(b) || !type)
                return false;
        if (strcmp(type, "text") == 0)
                return json_is_string(json_object_get(b, "text"));
        if (strcmp(type, "tool_use") == 0)
                return strcmp(role, "assistant") == 0 && str_of(b, "id") && str_of(b, "name") &&
                       json_is_object(json_object_get(b, "input"));
        if (strcmp(type, "tool_result") == 0)
                return strcmp(role, "user") == 0 && str_of(b, "tool_use_id") &&
                       json_is_string(json_object_get(b, "content"));
        if (strcmp(type, "opaque") == 0)
                return str_of(b, "api") && json_object_get(b, "block");
        return false;
}

/* Does message m answer every tool_use of the assistant message before it? */
static bool answers(const json_t *assistant, const json_t *m) {
        size_t i, j;
        const json_t *b, *r;
        json_array_foreach(json_object_get(assistant, "content"), i, b) {
                if (strcmp(str_of(b, "type"), "tool_use") != 0)
                        continue;
                bool found = false;
                json_array_foreach(json_object_get(m, "content"), j, r) {
                        if (strcmp(str_of(r, "type"), "tool_result") == 0 &&
                            strcmp(str_of(r, "tool_use_id"), str_of(b, "id")) == 0)
                                found = true;
                }
                if (!found)
                        return false;
        }
        return true;
}

static bool has_tool_use(const json_t *m) {
        size_t i;
        const json_t *b;
        json_array_foreach(json_object_get(m, "content"), i, b) {
                if (strcmp(str_of(b, "type"), "tool_use") == 0)
                        return true;
        }
        return false;
}

static json_t *error_result(const char *call_id, const char *text) {
        return json_pack("{s:s, s:s, s:s, s:b}", "type", "tool_result", "tool_use_id", call_id, "content", text,
                         "is_error", true);
}

static int conversation_load(agent *a, const json_t *conv, hull_error *e) {
        if (!conv) {
                a->messages = json_array();
                return a->messages ? 0 : hull_err(e, -ENOMEM, "agent: out of memory");
        }
        if (!json_is_array(conv) || json_array_size(conv) > AGENT_CONVERSATION_MESSAGES_MAX)
                return hull_fail(e, -EINVAL, "agent: the conversation is not an array of at most %u messages",
                                 AGENT_CONVERSATION_MESSAGES_MAX);
        size_t i, j;
        const json_t *m, *b;
        json_array_foreach(conv, i, m) {
                const char *role = str_of(m, "role");
                const json_t *content = json_object_get(m, "content");
                if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0) || !json_is_array(content))
                        return hull_fail(e, -EINVAL,
                                         "agent: conversation message %zu is not {\"role\": \"user\"|\"assistant\", "
                                         "\"content\": [...]}",
                                         i);
                json_array_foreach(content, j, b) {
                        if (!block_ok(b, role))
                                return hull_fail(e, -EINVAL,
                                                 "agent: conversation message %zu, block %zu is malformed or out of "
                                                 "place",
                                                 i, j);
                }
                if (strcmp(role, "assistant") == 0 && i + 1 < json_array_size(conv) &&
                    !answers(m, json_array_get(conv, i + 1)))
                        return hull_fail(e, -EINVAL,
                                         "agent: conversation message %zu has a tool call without a result in the "
                                         "next message",
                                         i);
        }
        a->messages = json_deep_copy(conv);
        if (!a->messages)
                return hull_err(e, -ENOMEM, "agent: out of memory");
        /* Saved while calls were pending: answer them, so the conversation can go on. */
        json_t *last = json_array_get(a->messages, json_array_size(a->messages) - 1);
        if (last && strcmp(str_of(last, "role"), "assistant") == 0 && has_tool_use(last)) {
                json_t *content = json_array();
                json_array_foreach(json_object_get(last, "content"), j, b) {
                        if (strcmp(str_of(b, "type"), "tool_use") == 0)
                                json_array_append_new(content,
                                                      error_result(str_of(b, "id"), "not run: the conversation was "
                                                                                    "saved before this call ran"));
                }
                if (json_array_append_new(a->messages, json_pack("{s:s, s:o}", "role", "user", "content", content)) < 0)
                        return hull_err(e, -ENOMEM, "agent: out of memory");
        }
        return 0;
}

const json_t *agent_conversation(const agent *a) {
        return a ? a->messages : NULL;
}

int agent_conversation_text(agent *a, char **ret, size_t *ret_len) {
        return model_conversation_text(a->text, a->messages, ret, ret_len);
}

uint64_t agent_conversation_dumped(const agent *a) {
        return model_wire_cache_encoded(a->text);
}

/* ---- making one ---- */

static bool name_ok(const char *n) {
        size_t len = n ? strlen(n) : 0;
        if (len == 0 || len > 64)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= '0' && n[i] <= '9') ||
                      n[i] == '_' || n[i] == '-'))
                        return false;
        return true;
}

static int tools_load(agent *a, hull_error *e) {
        const agent_config *c = &a->cfg;
        if (c->n_tools > AGENT_TOOLS_MAX)
                return hull_fail(e, -EINVAL, "agent: %zu tools, at most %u", c->n_tools, AGENT_TOOLS_MAX);
        a->tools = calloc(c->n_tools ? c->n_tools : 1, sizeof(agent_tool));
        a->tools_json = json_array();
        if (!a->tools || !a->tools_json)
                return hull_err(e, -ENOMEM, "agent: out of memory");
        for (size_t i = 0; i < c->n_tools; i++) {
                const tool_def *d = c->tools[i];
                if (!d || !name_ok(d->name) || (!d->run && !d->client) || !d->input_schema)
                        return hull_fail(e, -EINVAL,
                                         "agent: tool %zu has no valid name ([a-zA-Z0-9_-]{1,64}), schema "
                                         "or function",
                                         i);
                if (find_tool(a, d->name))
                        return hull_fail(e, -EINVAL, "agent: two tools are named %s", d->name);
                json_error_t je;
                json_t *schema = json_loads(d->input_schema, JSON_REJECT_DUPLICATES, &je);
                agent_tool *t = &a->tools[a->n_tools];
                *t = (agent_tool){.def = d, .schema = schema};
                a->n_tools++;
                hull_error se = {0};
                if (!schema || schema_check(schema, &se) < 0 || strcmp(str_of(schema, "type") ?: "", "object") != 0)
                        return hull_fail(e, -EINVAL, "agent: tool %s: its input schema is not a JSON Schema object%s%s",
                                         d->name, se.msg[0] ? ": " : "", se.msg);
                tool_policy p = c->policies ? c->policies[i] : d->default_policy;
                if (p < 0 || p >= _TOOL_POLICY_MAX)
                        return hull_fail(e, -EINVAL, "agent: tool %s: unknown policy", d->name);
                t->policy = p;
                if (json_array_append_new(a->tools_json,
                                          json_pack("{s:s, s:s, s:O}", "name", d->name, "description",
                                                    d->description ? d->description : "", "input_schema", schema)) < 0)
                        return hull_err(e, -ENOMEM, "agent: out of memory");
        }
        return 0;
}

int agent_new(const agent_config *cfg, const json_t *conversation, agent **ret, hull_error *e) {
        if (!cfg || !cfg->model || !cfg->bus || !ret || (cfg->n_tools && !cfg->tools))
                return hull_fail(e, -EINVAL, "agent: a model, a bus and the tools are required");
        if (cfg->instructions && strlen(cfg->instructions) > AGENT_INSTRUCTIONS_MAX)
                return hull_fail(e, -EINVAL, "agent: the instructions are longer than %u bytes",
                                 AGENT_INSTRUCTIONS_MAX);
        _cleanup_agent_ agent *a = calloc(1, sizeof(*a));
        if (!a)
                return hull_err(e, -ENOMEM, "agent: out of memory");
        a->cfg = *cfg;
        a->decision = -1;
        int r = tools_load(a, e);
        if (r < 0)
                return r;
        r = conversation_load(a, conversation, e);
        if (r < 0)
                return r;
        a->call_ids = json_object();
        if (!a->call_ids || model_wire_cache_new(&a->wire) < 0 || model_wire_cache_new(&a->text) < 0)
                return hull_err(e, -ENOMEM, "agent: out of memory");
        const tool_def **defs = calloc(a->n_tools ? a->n_tools : 1, sizeof(*defs));
        if (!defs)
                return hull_err(e, -ENOMEM, "agent: out of memory");
        for (size_t i = 0; i < a->n_tools; i++)
                defs[i] = a->tools[i].def;
        a->system = agent_system_prompt(defs, a->n_tools, cfg->instructions);
        free(defs);
        if (!a->system)
                return hull_err(e, -ENOMEM, "agent: out of memory");
        *ret = TAKE_PTR(a);
        return 0;
}

static void calls_clear(agent *a) {
        json_decref(a->calls);
        json_decref(a->results);
        a->calls = a->results = NULL;
        a->next = 0;
        a->cut_last = false;
        a->waiting = false;
        a->decision = -1;
        free(a->deny_message);
        a->deny_message = NULL;
        a->wait_client = false;
        free(TAKE_PTR(a->supplied));
}

void agent_free(agent *a) {
        if (!a)
                return;
        for (size_t i = 0; i < a->n_tools; i++)
                json_decref(a->tools[i].schema);
        free(a->tools);
        json_decref(a->tools_json);
        free(a->system);
        json_decref(a->messages);
        model_wire_cache_free(a->wire);
        model_wire_cache_free(a->text);
        if (a->watch) {
                watch_done(a->watch);
                free(a->watch);
        }
        json_decref(a->call_ids);
        free(a->last_text);
        calls_clear(a);
        free(a);
}

/* ---- the context budget ---- */

static uint64_t request_tokens(agent *a) {
        model_request req = {.system = a->system,
                             .messages = a->messages,
                             .tools = json_array_size(a->tools_json) ? a->tools_json : NULL,
                             .cache = a->wire};
        return model_estimate_tokens(&req);
}

/* Replace older tool results (not those of the last message: the model has not seen them yet) by
 * their short forms, oldest first, until the request fits. Returns 0 when it fits, -E2BIG. */
static int fit_context(agent *a, uint64_t budget, uint64_t *ret_tokens) {
        uint64_t est = request_tokens(a);
        unsigned elided = 0;
        size_t n = json_array_size(a->messages);
        /* The estimate is lowered by what each replacement saves (bytes / 4, as it counts), then
         * computed again: a second pass covers what the rounding left. */
        for (int pass = 0; pass < 2 && est > budget; pass++) {
                for (size_t i = 0; est > budget && i + 1 < n; i++) {
                        json_t *m = json_array_get(a->messages, i), *b;
                        size_t j;
                        if (strcmp(str_of(m, "role"), "user") != 0)
                                continue;
                        json_array_foreach(json_object_get(m, "content"), j, b) {
                                const char *type = str_of(b, "type"), *sh = str_of(b, "hull_short");
                                json_t *content = json_object_get(b, "content");
                                if (est <= budget)
                                        break;
                                if (strcmp(type, "tool_result") != 0 || !sh ||
                                    json_is_true(json_object_get(b, "hull_elided")))
                                        continue;
                                size_t old = json_string_length(content), now = strlen(sh);
                                if (now >= old)
                                        continue;
                                json_object_set_new(b, "content", json_string(sh));
                                json_object_set_new(b, "hull_elided", json_true());
                                /* an older message changed in place: its wire JSON, text and
                                 * size are made again */
                                model_wire_cache_forget(a->wire);
                                model_wire_cache_forget(a->text);
                                elided++;
                                est -= MIN(est, (uint64_t) (old - now) / 4);
                        }
                }
                est = request_tokens(a);
        }
        if (elided)
                emit(a,
                     json_pack("{s:s, s:I}", "type", "agent.thread_context_compacted", "hull_elided",
                               (json_int_t) elided),
                     NULL);
        *ret_tokens = est;
        return est > budget ? -E2BIG : 0;
}

/* ---- the model ---- */

static int on_text(void *ud, const char *text, size_t len) {
        agent *a = ud;
        json_t *t = text_json(text, len);
        if (t)
                (void) bus_emit_ephemeral(a->cfg.bus, json_pack("{s:s, s:o}", "type", "hull.text_delta", "text", t));
        return 0;
}

static void on_retry(void *ud, unsigned attempt, uint64_t delay_ms, const model_failure *f, const char *msg) {
        agent *a = ud;
        char line[HULL_ERROR_MSG_MAX + 64];
        snprintf(line, sizeof(line), "%s (retry %u in %" PRIu64 " ms)", msg ? msg : "the model request failed", attempt,
                 delay_ms);
        emit_error(a, error_type(f->kind), line, "retrying");
        if (a->cfg.session_states && !a->rescheduled) {
                a->rescheduled = true;
                emit(a, json_pack("{s:s}", "type", "session.status_rescheduled"), NULL);
        }
}

/* Whether a tool call of the conversation has this id: the ids of the messages before the last
 * kept as they come (a long conversation is not walked again for each answer), the last looked at
 * each time. */
static bool call_id_taken(agent *a, const char *id) {
        size_t n = json_array_size(a->messages), k;
        json_t *b;
        for (; a->ids_upto + 1 < n; a->ids_upto++)
                json_array_foreach(json_object_get(json_array_get(a->messages, a->ids_upto), "content"), k, b) {
                        if (strcmp(str_of(b, "type"), "tool_use") == 0 && str_of(b, "id") &&
                            json_object_set_new(a->call_ids, str_of(b, "id"), json_true()) < 0)
                                return true; /* out of memory: a fresh id is always safe */
                }
        if (json_object_get(a->call_ids, id))
                return true;
        json_array_foreach(json_object_get(json_array_get(a->messages, n - 1), "content"), k, b) {
                if (strcmp(str_of(b, "type"), "tool_use") == 0 && str_of(b, "id") && strcmp(str_of(b, "id"), id) == 0)
                        return true;
        }
        return false;
}

/* Give every tool call of the answer an id no other call of the conversation has (some
 * OpenAI-compatible servers send none, or the same one twice): the results are paired by it. */
static void fix_call_ids(agent *a, json_t *msg) {
        size_t i, k;
        json_t *b;
        unsigned seq = 0;
        json_array_foreach(json_object_get(msg, "content"), i, b) {
                if (strcmp(str_of(b, "type"), "tool_use") != 0)
                        continue;
                const char *id = str_of(b, "id");
                bool clash = !id || !id[0] || strlen(id) > 128;
                for (k = 0; !clash && k < i; k++) {
                        json_t *o = json_array_get(json_object_get(msg, "content"), k);
                        clash = strcmp(str_of(o, "type"), "tool_use") == 0 && strcmp(str_of(o, "id"), id) == 0;
                }
                if (!clash)
                        clash = call_id_taken(a, id);
                if (clash) {
                        char fresh[64];
                        snprintf(fresh, sizeof(fresh), "call_hull_%zu_%u", json_array_size(a->messages), seq++);
                        json_object_set_new(b, "id", json_string(fresh));
                }
        }
}

static bool answer_ok(const json_t *msg) {
        size_t i;
        const json_t *b;
        if (!json_is_object(msg) || strcmp(str_of(msg, "role") ?: "", "assistant") != 0 ||
            !json_is_array(json_object_get(msg, "content")))
                return false;
        json_array_foreach(json_object_get(msg, "content"), i, b) {
                if (!block_ok(b, "assistant"))
                        return false;
        }
        return true;
}

static char *answer_text(const json_t *msg) {
        _cleanup_dynbuf_ dynbuf t;
        dynbuf_init(&t, MODEL_ANSWER_MAX);
        size_t i;
        const json_t *b;
        json_array_foreach(json_object_get(msg, "content"), i, b) {
                const json_t *x = json_object_get(b, "text");
                if (strcmp(str_of(b, "type"), "text") == 0)
                        (void) dynbuf_add(&t, json_string_value(x), json_string_length(x));
        }
        return dynbuf_take(&t, NULL);
}

static agent_stop stop_error(agent *a, agent_stop s, hull_error *e, const char *type, const char *fmt, ...)
        _printf_(5, 6);
static agent_stop stop_error(agent *a, agent_stop s, hull_error *e, const char *type, const char *fmt, ...) {
        char line[HULL_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        hull_fail(e, s == AGENT_STOP_CONTEXT ? -E2BIG : -ECANCELED, "%s", line);
        if (type)
                emit_error(a, type, line, "terminal");
        return s;
}

/* One model request. Returns -1 to go on (the answer is in the conversation; its calls, if any,
 * in a->calls), or the turn's stop. */
static int ask_model(agent *a, hull_error *e) {
        uint64_t budget = a->cfg.context_tokens ? a->cfg.context_tokens : AGENT_CONTEXT_TOKENS_DEFAULT, est = 0;
        if (fit_context(a, budget, &est) < 0)
                return stop_error(a, AGENT_STOP_CONTEXT, e, "compaction_limit_reached_error",
                                  "agent: the conversation needs about %" PRIu64
                                  " tokens, over the context budget of %" PRIu64
                                  " even with the older tool results shortened (start a new conversation, ask for "
                                  "less at once, or raise the budget)",
                                  est, budget);
        char start_id[BUS_ID_MAX];
        emit(a, json_pack("{s:s}", "type", "span.model_request_start"), start_id);
        model_request req = {.system = a->system,
                             .messages = a->messages,
                             .tools = json_array_size(a->tools_json) ? a->tools_json : NULL,
                             .cache = a->wire};
        model_call_opts o = {.cancel = a->interrupt,
                             .deadline_mono_ms = a->deadline_ms,
                             .on_text = on_text,
                             .on_retry = on_retry,
                             .ud = a};
        model_response resp = {0};
        model_failure fail = {0};
        hull_error me = {0};
        a->model_requests++;
        int r = model_call(a->cfg.model, &req, &o, &resp, &fail, &me);
        if (a->rescheduled && r >= 0) /* the retry went through: running again */
                emit(a, json_pack("{s:s}", "type", "session.status_running"), NULL);
        a->rescheduled = false;
        if (r >= 0 && !answer_ok(resp.message)) {
                r = hull_fail(&me, -EPROTO, "model: the provider's answer is not an assistant message");
                fail.kind = MODEL_FAIL_MALFORMED;
        }
        emit(a,
             json_pack("{s:s, s:s, s:b, s:o}", "type", "span.model_request_end", "model_request_start_id", start_id,
                       "is_error", r < 0, "model_usage", usage_json(&resp.usage)),
             NULL);
        if (r < 0) {
                model_response_done(&resp);
                if (r == -ECANCELED || fail.kind == MODEL_FAIL_CANCELED || interrupted(a))
                        return AGENT_STOP_INTERRUPTED;
                if (fail.kind == MODEL_FAIL_TIMEOUT && a->deadline_ms && now_mono_ms() >= a->deadline_ms)
                        return stop_error(a, AGENT_STOP_WALL_CLOCK, e, NULL,
                                          "agent: the turn ran out of its wall-clock time during a model request");
                a->failure = fail;
                *e = me;
                bool retried = fail.kind == MODEL_FAIL_RATE_LIMITED || fail.kind == MODEL_FAIL_OVERLOADED ||
                               fail.kind == MODEL_FAIL_SERVER || fail.kind == MODEL_FAIL_UNREACHABLE ||
                               fail.kind == MODEL_FAIL_TIMEOUT;
                emit_error(a, error_type(fail.kind), me.msg, retried ? "exhausted" : "terminal");
                return fail.kind == MODEL_FAIL_CONTEXT ? AGENT_STOP_CONTEXT : AGENT_STOP_ERROR;
        }
        a->usage.known |= resp.usage.known;
        a->usage.input_tokens += resp.usage.input_tokens;
        a->usage.output_tokens += resp.usage.output_tokens;
        a->usage.cache_read_input_tokens += resp.usage.cache_read_input_tokens;
        a->usage.cache_creation_input_tokens += resp.usage.cache_creation_input_tokens;

        json_t *msg = TAKE_PTR(resp.message);
        model_stop stop = resp.stop;
        model_response_done(&resp);
        fix_call_ids(a, msg);
        _cleanup_free_ char *text = answer_text(msg);
        if (text && text[0]) {
                emit(a,
                     json_pack("{s:s, s:[{s:s, s:s}]}", "type", "agent.message", "content", "type", "text", "text",
                               text),
                     NULL);
                free(a->last_text);
                a->last_text = TAKE_PTR(text);
        }
        /* After a pause the answer continues the same assistant turn: one message. */
        json_t *last = json_array_get(a->messages, json_array_size(a->messages) - 1);
        if (last && strcmp(str_of(last, "role"), "assistant") == 0) {
                json_array_extend(json_object_get(last, "content"), json_object_get(msg, "content"));
                json_decref(msg);
                msg = last;
        } else if (json_array_append_new(a->messages, msg) < 0)
                return stop_error(a, AGENT_STOP_ERROR, e, "unknown_error", "agent: out of memory");
        json_t *calls = json_array();
        size_t i, n = json_array_size(json_object_get(msg, "content"));
        json_t *b;
        json_array_foreach(json_object_get(msg, "content"), i, b) {
                if (strcmp(str_of(b, "type"), "tool_use") == 0)
                        json_array_append(calls, b);
        }
        if (json_array_size(calls) > 0) {
                calls_clear(a);
                a->calls = calls;
                a->results = json_array();
                json_t *lastb = json_array_get(json_object_get(msg, "content"), n - 1);
                a->cut_last = stop == MODEL_STOP_MAX_TOKENS && strcmp(str_of(lastb, "type"), "tool_use") == 0;
                return -1;
        }
        json_decref(calls);
        switch (stop) {
        case MODEL_STOP_PAUSE:
                return -1; /* send the turn back as it is: the model goes on */
        case MODEL_STOP_REFUSAL:
                return AGENT_STOP_REFUSAL;
        case MODEL_STOP_END:
        case MODEL_STOP_TOOL_USE:
        case MODEL_STOP_MAX_TOKENS:
        case MODEL_STOP_OTHER:
        case _MODEL_STOP_MAX:
                break;
        }
        return AGENT_STOP_END_TURN;
}

/* ---- one tool call ---- */

/* The loop's progress sink (tool-run.h): hull.tool_progress on the bus. */
typedef struct progress_sink {
        bus *bus;
        const char *tool_use_id;
} progress_sink;

static bool progress_report(void *ud, uint64_t elapsed_ms, const char *note) {
        progress_sink *p = ud;
        json_t *ev = json_pack("{s:s, s:s, s:I}", "type", "hull.tool_progress", "tool_use_id", p->tool_use_id,
                               "elapsed_ms", (json_int_t) elapsed_ms);
        if (ev && note)
                json_object_set_new(ev, "note", text_json(note, strnlen(note, AGENT_ERROR_TEXT_MAX)));
        if (ev)
                (void) bus_emit(p->bus, ev, NULL);
        return true;
}

static int result_error(call_result *c, const char *fmt, ...) _printf_(2, 3);
static int result_error(call_result *c, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&c->text, fmt, ap);
        va_end(ap);
        if (k < 0)
                c->text = NULL;
        c->is_error = true;
        return 0;
}

/* Run the tool through the runner (tool-run.h): the session claimed when it needs one, the turn's
 * interrupt and wall clock, progress on the bus, the result shaped by the spill middleware. */
static void run_tool(agent *a, agent_tool *t, const json_t *input, const char *event_id, call_result *res) {
        progress_sink p = {.bus = a->cfg.bus, .tool_use_id = event_id};
        if (!a->watch) { /* failing that, each call makes its own */
                a->watch = malloc(sizeof(*a->watch));
                if (a->watch && watch_init(a->watch) < 0) {
                        watch_done(a->watch);
                        free(TAKE_PTR(a->watch));
                }
        }
        tool_run_ctx c = {.ss = a->cfg.ss,
                          .session = a->cfg.session,
                          .watch = a->watch,
                          .interrupt = a->interrupt,
                          .deadline_mono_ms = a->deadline_ms,
                          .spill_bytes = a->cfg.spill_bytes,
                          .who = "agent",
                          .stopped = "interrupted",
                          .take_net_log = true,
                          .progress = progress_report,
                          .progress_ms = BUS_PROGRESS_MS,
                          .notes = TOOL_RUN_NOTE_NEXT,
                          .ud = &p,
                          .after = a->cfg.after_call,
                          .after_ud = a->cfg.after_call_ud};
        tool_run_call(&c, t->def, input, res, NULL);
}

/* Answer the call: the result block in the conversation, agent.tool_result and a
 * hull.handle_created per handle on the bus. */
static void answer(agent *a, const char *call_id, const char *event_id, call_result *res, uint64_t duration_ms) {
        const char *text = res->text ? res->text : TOOL_RUN_LOST_TEXT;
        json_t *content = text_json(text, strlen(text));
        if (!content)
                content = json_string("(the result is not text)");
        char *sh = res->short_form ? res->short_form : spill_short_form(text, res->handles);
        json_t *block = json_pack("{s:s, s:s, s:O, s:b}", "type", "tool_result", "tool_use_id", call_id, "content",
                                  content, "is_error", res->is_error);
        if (block && sh)
                json_object_set_new(block, "hull_short", text_json(sh, strlen(sh)));
        if (block && event_id[0])
                json_object_set_new(block, "hull_event_id", json_string(event_id));
        if (sh != res->short_form)
                free(sh);
        if (block)
                json_array_append_new(a->results, block);
        json_t *ids = json_array();
        size_t i;
        json_t *h;
        json_array_foreach(res->handles, i, h) {
                json_array_append(ids, json_object_get(h, "id"));
                json_t *ev = json_pack("{s:s, s:O}", "type", "hull.handle_created", "handle", h);
                if (ev && event_id[0])
                        json_object_set_new(ev, "tool_use_id", json_string(event_id));
                emit(a, ev, NULL);
        }
        if (res->net_log_len > 0) {
                json_t *ev = json_pack("{s:s, s:o?}", "type", "hull.network", "connections",
                                       ss_net_log_json(res->net_log, res->net_log_len));
                if (ev && event_id[0])
                        json_object_set_new(ev, "tool_use_id", json_string(event_id));
                emit(a, ev, NULL);
        }
        if (event_id[0] && !res->client)
                emit(a,
                     json_pack("{s:s, s:s, s:[{s:s, s:o}], s:b, s:I, s:o}", "type",
                               res->mcp_server ? "agent.mcp_tool_result" : "agent.tool_result",
                               res->mcp_server ? "mcp_tool_use_id" : "tool_use_id", event_id, "content", "type", "text",
                               "text", content, "is_error", res->is_error, "hull_duration_ms", (json_int_t) duration_ms,
                               "hull_handles", ids),
                     NULL);
        else {
                json_decref(content);
                json_decref(ids);
        }
}

static const char *permission_name(tool_policy p) {
        return p == TOOL_ALWAYS_ALLOW ? "allow" : p == TOOL_ALWAYS_ASK ? "ask" : "deny";
}

static void list_tools(agent *a, char *buf, size_t size) {
        size_t o = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < a->n_tools && o + 1 < size; i++) {
                int k = snprintf(buf + o, size - o, "%s%s", i ? ", " : "", a->tools[i].def->name);
                if (k < 0)
                        break;
                o += (size_t) k;
        }
        if (a->n_tools == 0)
                snprintf(buf, size, "none");
}

/* A client's (custom tool's) result, shaped like every tool's: a big one becomes a handle of the
 * session (a JSON object or array as a json handle, else text), the model sees its summary. */
static void client_result(agent *a, const char *name, char *text, bool is_error, call_result *res) {
        uint64_t threshold = a->cfg.spill_bytes ? a->cfg.spill_bytes : AGENT_SPILL_BYTES_DEFAULT;
        if (!text || !a->cfg.ss || !a->cfg.session || strlen(text) <= threshold) {
                res->text = text;
                res->is_error = is_error;
                res->handles = json_array();
                return;
        }
        tool_output out = {.is_error = is_error};
        json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        if (json_is_object(v) || json_is_array(v)) {
                out.value = v;
                free(text);
        } else {
                json_decref(v);
                out.text = text;
        }
        bool claimed = false;
        spill_shape(a->cfg.ss, a->cfg.session, &claimed, a->cfg.spill_bytes, name, &out, res);
        if (claimed)
                ss_call_end(a->cfg.ss, a->cfg.session);
        tool_output_done(&out);
}

/* Check, decide and run call i; the answer goes to a->results. Returns -1 to go on, or
 * AGENT_STOP_REQUIRES_ACTION when the call waits for a decision. */
static int one_call(agent *a, const json_t *call, bool last) {
        const char *name = str_of(call, "name"), *call_id = str_of(call, "id");
        const json_t *input = json_object_get(call, "input");
        agent_tool *t = find_tool(a, name);
        char event_id[BUS_ID_MAX] = "";
        call_result res = {0};
        uint64_t started = now_mono_ms();

        if (a->waiting) { /* resumed: the call was announced and is decided */
                snprintf(event_id, sizeof(event_id), "%s", a->wait_event);
                a->waiting = false;
                if (a->wait_client) {
                        a->wait_client = false;
                        client_result(a, name, TAKE_PTR(a->supplied), a->supplied_error, &res);
                        res.client = true;
                } else if (a->decision == AGENT_ALLOW && t)
                        run_tool(a, t, input, event_id, &res);
                else
                        result_error(&res, "the user denied this call of %s%s%s", name,
                                     a->deny_message && a->deny_message[0] ? ": " : "",
                                     a->deny_message ? a->deny_message : "");
                a->decision = -1;
                free(TAKE_PTR(a->deny_message));
                goto done;
        }
        a->tool_calls++;
        tool_policy policy = t ? t->policy : TOOL_DENY;
        bool client = t && t->def->client;
        const char *mcp = t ? t->def->mcp_server : NULL;
        json_t *ev = client && t->def->client_builtin
                             ? json_pack("{s:s, s:s, s:O, s:s, s:s, s:b}", "type", "agent.tool_use", "name", name,
                                         "input", input, "evaluated_permission", "allow", "hull_call_id", call_id,
                                         "hull_client_run", true)
                     : client ? json_pack("{s:s, s:s, s:O, s:s}", "type", "agent.custom_tool_use", "name", name,
                                          "input", input, "hull_call_id", call_id)
                     : mcp    ? json_pack("{s:s, s:s, s:O, s:s, s:s, s:s}", "type", "agent.mcp_tool_use", "name",
                                       t->def->mcp_tool ? t->def->mcp_tool : name, "input", input, "mcp_server_name",
                                          mcp, "evaluated_permission", permission_name(policy), "hull_call_id", call_id)
                              : json_pack("{s:s, s:s, s:O, s:s, s:s}", "type", "agent.tool_use", "name", name, "input",
                                          input, "evaluated_permission", permission_name(policy), "hull_call_id", call_id);
        emit(a, ev, event_id);

        const char *input_error = str_of(call, "input_error");
        if (!t) {
                char names[1024];
                list_tools(a, names, sizeof(names));
                result_error(&res, "unknown tool \"%.64s\"; the tools are: %s", name, names);
        } else if (last && a->cut_last)
                result_error(&res,
                             "this call of %s was cut off: your answer reached its output token limit while writing "
                             "it, so its arguments are incomplete and it did not run. Send it again with less in it "
                             "(split a long content over several calls)",
                             name);
        else if (input_error)
                result_error(&res, "the arguments of this call of %s are not a JSON object (%s); it did not run", name,
                             input_error);
        else if (tool_run_validate(t->schema, input, "input", name, &res) < 0) {
                /* res says why */
        } else if (client && event_id[0]) {
                a->waiting = true;
                a->wait_client = true;
                a->decision = -1;
                free(TAKE_PTR(a->supplied));
                snprintf(a->wait_event, sizeof(a->wait_event), "%s", event_id);
                return AGENT_STOP_REQUIRES_ACTION;
        } else if (client)
                result_error(&res, "%s could not be handed to the client (out of memory)", name);
        else if (policy == TOOL_DENY)
                result_error(&res, "the tool %s is not allowed here (its permission policy is deny); do without it",
                             name);
        else if (policy == TOOL_ALWAYS_ASK) {
                char *msg = NULL;
                agent_decision dec = a->cfg.decide && event_id[0]
                                             ? a->cfg.decide(a->cfg.decide_ud, event_id, name, input, &msg)
                                             : AGENT_DEFER;
                if (dec == AGENT_DEFER) {
                        free(msg);
                        a->waiting = true;
                        a->decision = -1;
                        snprintf(a->wait_event, sizeof(a->wait_event), "%s", event_id);
                        return AGENT_STOP_REQUIRES_ACTION;
                }
                if (dec == AGENT_ALLOW)
                        run_tool(a, t, input, event_id, &res);
                else
                        result_error(&res, "the user denied this call of %s%s%s", name, msg && msg[0] ? ": " : "",
                                     msg ? msg : "");
                free(msg);
        } else
                run_tool(a, t, input, event_id, &res);
done:
        res.mcp_server = t ? t->def->mcp_server : NULL;
        answer(a, call_id, event_id, &res, now_mono_ms() - started);
        call_result_done(&res);
        return -1;
}

/* Answer every call of the answer not answered yet with why it did not run. */
static void calls_close(agent *a, const char *why) {
        for (size_t i = a->next; a->calls && i < json_array_size(a->calls); i++) {
                const json_t *call = json_array_get(a->calls, i);
                char event_id[BUS_ID_MAX] = "";
                if (a->waiting && i == a->next)
                        snprintf(event_id, sizeof(event_id), "%s", a->wait_event);
                call_result res = {0};
                result_error(&res, "%s did not run: %s", str_of(call, "name"), why);
                const agent_tool *t = find_tool(a, str_of(call, "name"));
                res.mcp_server = t ? t->def->mcp_server : NULL;
                answer(a, str_of(call, "id"), event_id, &res, 0);
                call_result_done(&res);
        }
        if (a->results && json_array_size(a->results) > 0)
                json_array_append_new(a->messages, json_pack("{s:s, s:O}", "role", "user", "content", a->results));
        calls_clear(a);
}

/* Run the answer's calls from a->next. Returns -1 when all are answered (the results appended),
 * or the turn's stop. */
static int run_calls(agent *a, hull_error *e) {
        unsigned max = a->cfg.max_tool_calls ? a->cfg.max_tool_calls : AGENT_MAX_TOOL_CALLS_DEFAULT;
        size_t n = json_array_size(a->calls);
        while (a->next < n) {
                if (interrupted(a))
                        return AGENT_STOP_INTERRUPTED;
                if (a->deadline_ms && now_mono_ms() >= a->deadline_ms)
                        return stop_error(
                                a, AGENT_STOP_WALL_CLOCK, e, NULL,
                                "agent: the turn ran out of its wall-clock time (%" PRIu64 " s)",
                                (uint64_t) ((a->cfg.wall_ms ? a->cfg.wall_ms : AGENT_WALL_MS_DEFAULT) / 1000));
                if (!a->waiting && a->tool_calls >= max)
                        return stop_error(a, AGENT_STOP_MAX_TOOL_CALLS, e, "tool_use_limit_reached_error",
                                          "agent: the turn reached its limit of %u tool calls", max);
                int s = one_call(a, json_array_get(a->calls, a->next), a->next + 1 == n);
                if (s >= 0)
                        return s;
                a->next++;
        }
        json_array_append_new(a->messages, json_pack("{s:s, s:O}", "role", "user", "content", a->results));
        calls_clear(a);
        return -1;
}

/* ---- the turn ---- */

static const char *stop_reason(agent_stop s) {
        switch (s) {
        case AGENT_STOP_REQUIRES_ACTION:
                return "requires_action";
        case AGENT_STOP_MAX_TURNS:
        case AGENT_STOP_MAX_TOOL_CALLS:
        case AGENT_STOP_CONTEXT:
        case AGENT_STOP_WALL_CLOCK:
                return "budget_reached";
        case AGENT_STOP_REFUSAL:
                return "refusal";
        case AGENT_STOP_ERROR:
                return "retries_exhausted";
        case AGENT_STOP_BUDGET:
                return "budget_reached";
        case AGENT_STOP_END_TURN:
        case AGENT_STOP_INTERRUPTED:
        case _AGENT_STOP_MAX:
                break;
        }
        return "end_turn";
}

static const char *close_reason(agent_stop s) {
        switch (s) {
        case AGENT_STOP_INTERRUPTED:
                return "the turn was interrupted";
        case AGENT_STOP_MAX_TOOL_CALLS:
                return "the turn reached its limit of tool calls";
        case AGENT_STOP_WALL_CLOCK:
                return "the turn ran out of time";
        case AGENT_STOP_END_TURN:
        case AGENT_STOP_REQUIRES_ACTION:
        case AGENT_STOP_MAX_TURNS:
        case AGENT_STOP_CONTEXT:
        case AGENT_STOP_REFUSAL:
        case AGENT_STOP_ERROR:
        case AGENT_STOP_BUDGET:
        case _AGENT_STOP_MAX:
                break;
        }
        return "the turn ended";
}

/* A model error no retry and no later turn mends: the session ends (session_states). */
static bool fatal(model_fail f) {
        return f == MODEL_FAIL_AUTH || f == MODEL_FAIL_NOT_FOUND || f == MODEL_FAIL_BAD_REQUEST ||
               f == MODEL_FAIL_BILLING;
}

static int run(agent *a, const atomic_bool *interrupt, agent_turn_result *ret, hull_error *e) {
        unsigned max_turns = a->cfg.max_turns ? a->cfg.max_turns : AGENT_MAX_TURNS_DEFAULT;
        uint64_t begun = now_mono_ms();
        int stop;
        a->interrupt = interrupt;
        a->deadline_ms = begun + a->wall_left_ms;
        emit(a, json_pack("{s:s}", "type", "session.status_running"), NULL);
        for (;;) {
                if (a->calls && (stop = run_calls(a, e)) >= 0)
                        break;
                if (interrupted(a)) {
                        stop = AGENT_STOP_INTERRUPTED;
                        break;
                }
                if (now_mono_ms() >= a->deadline_ms) {
                        stop = stop_error(
                                a, AGENT_STOP_WALL_CLOCK, e, NULL,
                                "agent: the turn ran out of its wall-clock time (%" PRIu64 " s)",
                                (uint64_t) ((a->cfg.wall_ms ? a->cfg.wall_ms : AGENT_WALL_MS_DEFAULT) / 1000));
                        break;
                }
                if (a->model_requests >= max_turns) {
                        stop = stop_error(a, AGENT_STOP_MAX_TURNS, e, NULL,
                                          "agent: the turn reached its limit of %u model requests", max_turns);
                        break;
                }
                if (a->cfg.may_ask && !a->cfg.may_ask(a->cfg.may_ask_ud)) {
                        stop = AGENT_STOP_BUDGET;
                        break;
                }
                if ((stop = ask_model(a, e)) >= 0)
                        break;
        }
        uint64_t spent = now_mono_ms() - begun;
        a->wall_left_ms = spent < a->wall_left_ms ? a->wall_left_ms - spent : 0;
        if (stop == AGENT_STOP_INTERRUPTED)
                hull_fail(e, -ECANCELED, "agent: the turn was interrupted");
        *ret = (agent_turn_result){.stop = (agent_stop) stop,
                                   .text = strdup(a->last_text ? a->last_text : ""),
                                   .usage = a->usage,
                                   .model_requests = a->model_requests,
                                   .tool_calls = a->tool_calls,
                                   .failure = a->failure};
        json_t *idle = json_pack("{s:s, s:{s:s}, s:s}", "type", "session.status_idle", "stop_reason", "type",
                                 stop_reason((agent_stop) stop), "hull_stop", agent_stop_to_string((agent_stop) stop));
        if (stop == AGENT_STOP_ERROR && a->cfg.session_states && fatal(a->failure.kind)) {
                json_decref(idle);
                idle = json_pack("{s:s, s:s}", "type", "session.status_terminated", "hull_stop", "error");
        }
        if (stop == AGENT_STOP_REQUIRES_ACTION) {
                ret->pending = json_pack("[s]", a->wait_event);
                json_object_set_new(json_object_get(idle, "stop_reason"), "event_ids", json_pack("[s]", a->wait_event));
        } else {
                calls_close(a, close_reason((agent_stop) stop));
                a->in_turn = false;
        }
        emit(a, json_pack("{s:s, s:o}", "type", "session.usage", "usage", usage_json(&a->usage)), NULL);
        emit(a, idle, NULL);
        a->interrupt = NULL;
        return ret->text ? 0 : hull_err(e, -ENOMEM, "agent: out of memory");
}

int agent_turn(agent *a, const char *user_text, const atomic_bool *interrupt, agent_turn_result *ret, hull_error *e) {
        if (!a || !user_text || !ret)
                return hull_fail(e, -EINVAL, "agent: a turn needs the user's text");
        if (a->in_turn)
                return hull_fail(e, -EBUSY,
                                 "agent: the turn waits for a decision on a tool call (agent_decide, then "
                                 "agent_resume)");
        size_t len = strlen(user_text);
        if (len > AGENT_USER_TEXT_MAX || !utf8_is_valid(user_text, len))
                return hull_fail(e, -EINVAL, "agent: the message is not UTF-8 text of at most %u bytes",
                                 AGENT_USER_TEXT_MAX);
        json_t *block = json_pack("{s:s, s:s}", "type", "text", "text", user_text);
        json_t *last = json_array_get(a->messages, json_array_size(a->messages) - 1);
        int k;
        if (last && strcmp(str_of(last, "role"), "user") == 0) /* after results: one user message */
                k = json_array_append_new(json_object_get(last, "content"), block);
        else
                k = json_array_append_new(a->messages, json_pack("{s:s, s:[o]}", "role", "user", "content", block));
        if (k < 0)
                return hull_err(e, -ENOMEM, "agent: out of memory");
        a->in_turn = true;
        a->model_requests = a->tool_calls = 0;
        a->usage = (model_usage){0};
        a->failure = (model_failure){0};
        free(a->last_text);
        a->last_text = NULL;
        a->wall_left_ms = a->cfg.wall_ms ? a->cfg.wall_ms : AGENT_WALL_MS_DEFAULT;
        return run(a, interrupt, ret, e);
}

int agent_decide(agent *a, const char *tool_use_id, bool allow, const char *deny_message, hull_error *e) {
        if (!a || !tool_use_id || !a->waiting || a->wait_client || strcmp(a->wait_event, tool_use_id) != 0)
                return hull_fail(e, -ENOENT, "agent: no tool call %.64s waits for a decision",
                                 tool_use_id ? tool_use_id : "(none)");
        a->decision = allow ? AGENT_ALLOW : AGENT_DENY;
        free(a->deny_message);
        a->deny_message = !allow && deny_message ? strndup(deny_message, AGENT_ERROR_TEXT_MAX) : NULL;
        return 0;
}

int agent_supply(agent *a, const char *tool_use_id, const char *text, bool is_error, hull_error *e) {
        if (!a || !tool_use_id || !a->waiting || !a->wait_client || strcmp(a->wait_event, tool_use_id) != 0)
                return hull_fail(e, -ENOENT, "agent: no custom tool call %.64s waits for its result",
                                 tool_use_id ? tool_use_id : "(none)");
        char *copy = strdup(text ? text : "");
        if (!copy)
                return hull_err(e, -ENOMEM, "agent: out of memory");
        free(a->supplied);
        a->supplied = copy;
        a->supplied_error = is_error;
        a->decision = AGENT_ALLOW;
        return 0;
}

int agent_resume(agent *a, const atomic_bool *interrupt, agent_turn_result *ret, hull_error *e) {
        if (!a || !ret)
                return hull_fail(e, -EINVAL, "agent: nothing to resume");
        if (!a->in_turn || !a->waiting)
                return hull_fail(e, -EINVAL, "agent: no turn waits for a decision");
        if (a->decision < 0)
                return hull_fail(e, -EAGAIN, "agent: tool call %s still waits for a decision", a->wait_event);
        return run(a, interrupt, ret, e);
}
