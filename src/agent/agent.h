/* agent.h: the agent loop. One agent is one conversation with a model in one session sandbox:
 * a turn takes the user's message, asks the model, runs the tools it calls (arguments validated,
 * permission policy, deadline, spill), sends the results back, and repeats until the model
 * answers without calling a tool or a bound ends the turn. Every step is an event on the status
 * bus (bus.h). The system prompt is hull's operating manual (the handles, the tools, the
 * sandbox, the search -> read -> analyze habit) followed by the user's instructions.
 *
 * Bounds of a turn: model requests (max_turns), tool calls, wall clock, and a context budget
 * (estimated from the request; past it, older tool results are replaced by their short forms,
 * oldest first, and if that is not enough the turn ends with a clear error).
 *
 * An always_ask tool pauses the turn: decide() answers at once (a terminal's y/n prompt) or
 * defers; a deferred call ends the turn with stop "requires_action" and the ids of the
 * agent.tool_use events awaiting a decision; agent_decide() records each decision and
 * agent_resume() continues the turn (the /v1 API's user.tool_confirmation). A client tool
 * (tool_def.client) pauses the same way: agent_supply() gives its result
 * (user.custom_tool_result).
 *
 * Single-threaded: one thread drives an agent; another may only set *interrupt. */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus.h"
#include "error.h"
#include "limits.h"
#include "model.h"
#include "spill.h"
#include "tool.h"

typedef enum agent_decision {
        AGENT_ALLOW,
        AGENT_DENY,
        AGENT_DEFER, /* no answer now: the turn ends with requires_action */
} agent_decision;

typedef struct agent_config {
        model_client *model;          /* borrowed */
        bus *bus;                     /* borrowed */
        const char *instructions;     /* the user's, after hull's manual; NULL: none */
        const tool_def *const *tools; /* borrowed; offered in this order */
        const tool_policy *policies;  /* per tool (same index); NULL: each tool's default_policy */
        size_t n_tools;
        ss_manager *ss;          /* the session the tools work in */
        ss_session *session;     /* may be NULL when no tool needs it */
        unsigned max_turns;      /* model requests per turn; 0: AGENT_MAX_TURNS_DEFAULT */
        unsigned max_tool_calls; /* per turn; 0: AGENT_MAX_TOOL_CALLS_DEFAULT */
        uint64_t context_tokens; /* the budget; 0: AGENT_CONTEXT_TOKENS_DEFAULT */
        uint64_t wall_ms;        /* per turn; 0: AGENT_WALL_MS_DEFAULT */
        uint64_t spill_bytes;    /* a tool value's JSON above this becomes a handle; 0: AGENT_SPILL_BYTES_DEFAULT */
        /* An always_ask call: tool_use_id is its agent.tool_use event's id. On AGENT_DENY,
         * *ret_message (malloc'd, or NULL) is what the model is told. NULL decide: every ask
         * defers. */
        agent_decision (*decide)(void *ud, const char *tool_use_id, const char *name, const json_t *input,
                                 char **ret_message);
        void *decide_ud;
        /* After each call of a tool that needs the session, while it is still held (tool_run_ctx's
         * after: a /v1 session's mounted memory stores are read back there). NULL: none. */
        void (*after_call)(void *ud, ss_manager *ss, ss_session *s, call_result *res);
        void *after_call_ud;
        /* Before each model request: false ends the turn with AGENT_STOP_BUDGET (a spending
         * ceiling reached: the request that crossed it was the last). NULL: always true. */
        bool (*may_ask)(void *ud);
        void *may_ask_ud;
        /* The /v1 API's session states: session.status_rescheduled while a failed model request
         * waits for its retry (session.status_running when one succeeds), and a fatal model error
         * (the key, the model, the request or billing refused) ends the turn with
         * session.status_terminated instead of session.status_idle. */
        bool session_states;
} agent_config;

typedef enum agent_stop {
        AGENT_STOP_END_TURN,
        AGENT_STOP_REQUIRES_ACTION,
        AGENT_STOP_MAX_TURNS,
        AGENT_STOP_MAX_TOOL_CALLS,
        AGENT_STOP_CONTEXT, /* the context budget could not be met */
        AGENT_STOP_WALL_CLOCK,
        AGENT_STOP_INTERRUPTED,
        AGENT_STOP_REFUSAL,
        AGENT_STOP_ERROR,  /* the model failed (after its retries); *e says how */
        AGENT_STOP_BUDGET, /* may_ask said no */
        _AGENT_STOP_MAX,
} agent_stop;

const char *agent_stop_to_string(agent_stop s); /* "end_turn", "requires_action", "max_turns", ... */

typedef struct agent_turn_result {
        agent_stop stop;
        char *text;        /* the model's last text of the turn (malloc'd; "" when none) */
        model_usage usage; /* summed over the turn's model requests */
        unsigned model_requests, tool_calls;
        json_t *pending;       /* requires_action: the agent.tool_use event ids awaiting a decision */
        model_failure failure; /* AGENT_STOP_ERROR */
} agent_turn_result;
void agent_turn_result_done(agent_turn_result *r);

typedef struct agent agent;

/* A new agent. conversation (or NULL): messages of an earlier conversation to continue (model.h's
 * form; validated: -EINVAL with *e when malformed). */
int agent_new(const agent_config *cfg, const json_t *conversation, agent **ret, hull_error *e);
void agent_free(agent *a);
static inline void agent_freep(agent **a) {
        if (*a)
                agent_free(*a);
}
#define _cleanup_agent_ _cleanup_(agent_freep)

/* Run one turn for the user's text. Returns 0 with *ret whatever stop came (an error stop
 * included: *e then holds its line), or a negative errno when the turn could not start (-EBUSY:
 * a turn awaits decisions; -EINVAL). interrupt (or NULL): set by another thread or a signal
 * handler to end the turn (AGENT_STOP_INTERRUPTED; a model request or tool call in flight is
 * cancelled). */
int agent_turn(agent *a, const char *user_text, const atomic_bool *interrupt, agent_turn_result *ret, hull_error *e);

/* A decision for a call awaiting one (tool_use_id: its agent.tool_use event id). -ENOENT when no
 * such call waits. */
int agent_decide(agent *a, const char *tool_use_id, bool allow, const char *deny_message, hull_error *e);
/* The result of a client tool's call awaiting one (tool_use_id: its agent.custom_tool_use event
 * id): text for the model, and whether it is an error. -ENOENT when no such call waits. */
int agent_supply(agent *a, const char *tool_use_id, const char *text, bool is_error, hull_error *e);
/* Continue a turn that stopped with requires_action once every pending call has a decision
 * (-EAGAIN otherwise). */
int agent_resume(agent *a, const atomic_bool *interrupt, agent_turn_result *ret, hull_error *e);

/* The conversation so far (borrowed; model.h's form), to store and to continue later. */
const json_t *agent_conversation(const agent *a);
/* The conversation's JSON text (json_dumps(agent_conversation(a), JSON_COMPACT)'s bytes), made
 * from its messages' text kept from the last time: only what is new is dumped. Returns 0 with *ret
 * (malloc'd) and *ret_len, -E2BIG, or -ENOMEM. */
int agent_conversation_text(agent *a, char **ret, size_t *ret_len);
/* How many messages agent_conversation_text dumped (not taken from what it kept): what the tests
 * count. */
uint64_t agent_conversation_dumped(const agent *a);

/* hull's operating manual for these tools (malloc'd), followed by instructions. */
char *agent_system_prompt(const tool_def *const *tools, size_t n_tools, const char *instructions);
