/* agui.h: the AG-UI protocol (https://docs.ag-ui.com, @ag-ui/core 1.0) over hull's /v1 session
 * events. Pure (no I/O, no clock), fuzzed (fuzz/fuzz-agui.c): a RunAgentInput checked and turned
 * into the client events a /v1 session takes, and the session's events turned into AG-UI events
 * (RUN_STARTED, TEXT_MESSAGE_START/CONTENT/END, TOOL_CALL_START/ARGS/END/RESULT, RUN_FINISHED,
 * RUN_ERROR; STATE_SNAPSHOT is the caller's, which knows the session's handles). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limits.h"

/* A checked RunAgentInput. The pointers borrow from the body. */
typedef struct agui_input {
        const char *thread_id;      /* 1..STORE_THREAD_ID_MAX - 1 bytes of [A-Za-z0-9_.:-] */
        const char *run_id;         /* 1..AGUI_ID_MAX - 1 bytes */
        const char *agent_id;       /* forwardedProps.agent_id, or NULL */
        const char *environment_id; /* forwardedProps.environment_id, or NULL */
        /* The client events the run sends the session (a new array): the last message's
         * user.message, or the resume entries' user.tool_confirmation (resolved: allow,
         * cancelled: deny) and user.custom_tool_result (a resolved entry with a payload). */
        json_t *events;
        /* tools (the client's own, "frontend" tools) as /v1 custom tools ({type:"custom", name,
         * description, input_schema}), a new array; NULL when the body has no tools. */
        json_t *tools;
} agui_input;
void agui_input_done(agui_input *in);

/* Check body (the request's JSON) as a RunAgentInput: threadId, runId and messages are required;
 * state, tools, context, forwardedProps, resume, parentRunId and protocolVersion checked for
 * their AG-UI types; other keys ignored (the schema is open). Without resume the last message
 * must be role "user" with content a string or an array of {"type":"text","text"} parts. Returns
 * 0 with *ret, or -EINVAL with one sentence in msg (what was wrong, naming the field, and what
 * to do). */
int agui_input_parse(const json_t *body, agui_input *ret, char msg[static V1_ERROR_MSG_MAX]);

/* The tools a thread's session gets for a run with frontend tools: session_tools (the session's
 * agent.tools now) less the custom tools that are not agent_tools' (the agent version's own: what
 * an earlier run added), plus frontend (agui_input.tools). *ret a new array, or NULL when that is
 * session_tools already. Returns 0 or -ENOMEM. */
int agui_tools_merge(const json_t *session_tools, const json_t *agent_tools, const json_t *frontend, json_t **ret);

/* One run's translation state. */
typedef struct agui_run {
        char thread_id[STORE_THREAD_ID_MAX];
        char run_id[AGUI_ID_MAX];
        char text_id[STORE_ID_MAX];     /* the text message open now ("" none) */
        size_t text_sent;               /* bytes of its text sent as deltas */
        char last_text[STORE_ID_MAX];   /* the last text message (a tool call's parent) */
        char last_custom[STORE_ID_MAX]; /* the last custom tool call (its interrupt wants a result) */
        char error_type[64];            /* a session.error seen in this run ("" none) */
        char error_msg[V1_ERROR_MSG_MAX];
        bool interrupted; /* a user.interrupt came */
        json_t *frontend; /* the run's frontend tool names (an object name → true; NULL none) */
        json_t *fe_calls; /* the ids of this run's calls of them (an object id → true; NULL none) */
        int64_t input_tokens, output_tokens;
        bool ended;
} agui_run;

void agui_run_init(agui_run *r, const char *thread_id, const char *run_id);
/* The run's frontend tools (agui_input.tools): a call of one ends the run with RUN_FINISHED and
 * no interrupt (the client runs the tool and answers with a role "tool" message). */
void agui_run_frontend(agui_run *r, const json_t *tools);
void agui_run_done(agui_run *r);

enum {
        AGUI_ENDED = 1 << 0, /* RUN_FINISHED or RUN_ERROR was added: the stream ends */
        AGUI_STATE = 1 << 1, /* a tool made handles: the caller sends a STATE_SNAPSHOT */
};

/* RUN_STARTED, appended to out. */
void agui_started(agui_run *r, json_t *out);
/* One session event (as logged, or a preview: event_start / event_delta) → AG-UI events
 * appended to out (new objects). Returns AGUI_* flags. */
unsigned agui_translate(agui_run *r, const json_t *ev, json_t *out);
/* The run ends without its session saying so (the engine stops): RUN_ERROR with code and msg. */
void agui_fail(agui_run *r, const char *code, const char *msg, json_t *out);
