/* spill.h: the spill middleware between a tool and whoever reads its result (the agent loop's
 * model, the MCP server's client): small results pass as they are; a value whose JSON is over the
 * threshold, a text over AGENT_TOOL_TEXT_MAX, or a tool's spill_* body becomes a handle of the
 * session, and the reader sees the handle's summary instead. (spill.c) */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "tool.h"

/* What a tool call hands back to its reader. */
typedef struct call_result {
        char *text;             /* for the reader; malloc'd */
        bool is_error;          /* the call failed */
        json_t *handles;        /* summaries of the handles it made (announced as hull.handle_created) */
        char *short_form;       /* what the result becomes when the context budget elides it; NULL: derived */
        bool client;            /* a client tool's result: the client's event announced it, not agent.tool_result */
        const char *mcp_server; /* an MCP tool's: answered as agent.mcp_tool_result (tool_def.mcp_server) */
        char *net_log;          /* a limited session's connections during the call (ss_net_log_take); NULL none */
        size_t net_log_len;
} call_result;

/* Free what res holds; *res is zeroed. */
void call_result_done(call_result *res);

/* Shape what a tool returned into what the reader sees. A value whose JSON is over spill_bytes
 * (0: AGENT_SPILL_BYTES_DEFAULT), a text over AGENT_TOOL_TEXT_MAX, or a spill_* body becomes a
 * handle of the session (claimed through *claimed when not yet: the caller then ends that
 * claim), and the reader sees its summary; without a store it sees the start of the result and
 * why. */
void spill_shape(ss_manager *ss, ss_session *s, bool *claimed, uint64_t spill_bytes, const char *tool,
                 const tool_output *out, call_result *res);

/* A result's short form for the context budget: its first AGENT_SHORT_FORM_CHARS characters and
 * a note (with the ids of its handles). malloc'd; NULL when out of memory or short already. */
char *spill_short_form(const char *text, const json_t *handles);
