/* bus.h: the status bus, hull's one event model for what an agent does. The loop emits an event
 * for every step (a model request, a tool call's start, progress and end, a handle made, an
 * error, the turn's end); subscribers show it (`--verbose` on stderr, `hull chat`), store it (a
 * run's transcript; later the /v1 API's event log) and stream it (later SSE). Event types and
 * fields are those of the Claude Managed Agents API (../shared/reference/cma-api.md §5.3) where
 * it has one, "hull.*" where it has none, so the /v1 API stores and streams them unchanged.
 *
 * An event is a JSON object; the bus adds "id" (unique in the bus, given by its id maker) and
 * "processed_at" (RFC 3339, UTC, milliseconds) before handing it to every subscriber in the order
 * they subscribed. Events of one emitting thread reach a subscriber in the order emitted.
 *
 * Persisted events (transcript, event log):
 *   session.status_running     {}                                  a turn starts or resumes
 *   span.model_request_start   {}
 *   span.model_request_end     {"model_request_start_id", "is_error", "model_usage":{input_tokens,
 *                               output_tokens, cache_creation_input_tokens, cache_read_input_tokens}}
 *   agent.message              {"content":[{"type":"text","text"}]}  the model's text of one request
 *   agent.tool_use             {"name", "input", "evaluated_permission":"allow"|"ask"|"deny",
 *                               "hull_call_id": the model's call id}
 *   agent.tool_result          {"tool_use_id": the agent.tool_use event's id, "content":[{"type":
 *                               "text","text"}], "is_error", "hull_duration_ms",
 *                               "hull_handles":[ids made by the call]}
 *   agent.mcp_tool_use         an MCP server's tool (tool_def.mcp_server): agent.tool_use's fields
 *                               with "name" the server's own tool name and "mcp_server_name"
 *   agent.mcp_tool_result      agent.tool_result's fields, "mcp_tool_use_id" for "tool_use_id"
 *   hull.tool_progress         {"tool_use_id", "elapsed_ms", "note"?}   a long call still runs
 *                               (at most one per BUS_PROGRESS_MS per call; an MCP tool's
                               note: "mcp:SERVER: 2/4 ...")
 *   hull.mcp_message           {"source":"mcp:SERVER", "level", "logger"?, "data"}  an MCP
 *                               server's notifications/message (src/cli emits it)
 *   hull.handle_created        {"handle": the handle's summary, "tool_use_id"?}
 *   hull.network               {"connections": [lines], "tool_use_id"?}  a limited network's
 *                               connections that ended during a tool call (the proxy's log lines,
 *                               sbx-net.h), when the session keeps its log (ss_net_log_take)
 *   agent.thread_context_compacted {"hull_elided": tool results replaced by their summaries}
 *   session.error              {"error":{"type", "message", "retry_status":{"type":"retrying"|
 *                               "exhausted"|"terminal"}}}  types as cma-api.md §5.3
 *                               (model_rate_limited_error, model_overloaded_error,
 *                               model_request_failed_error, tool_use_limit_reached_error,
 *                               unknown_error, ...)
 *   session.status_idle        {"stop_reason":{"type":"end_turn"|"requires_action"|
 *                               "retries_exhausted"|"budget_reached"|"refusal",
 *                               "event_ids"?: [agent.tool_use ids awaiting a decision]},
 *                               "hull_stop": "end_turn"|"requires_action"|"max_turns"|
 *                               "max_tool_calls"|"context"|"wall_clock"|"interrupted"|"error"}
 *   session.usage              {"usage":{input_tokens, output_tokens, ...}}  the turn's totals
 * Ephemeral events (shown and streamed, never stored; bus_emit_ephemeral):
 *   hull.text_delta            {"text"}                             streamed answer text
 *
 * Thread-safe: subscribe, unsubscribe and emit from any thread; a subscriber must not emit or
 * unsubscribe from inside its callback. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "limits.h"

typedef struct bus bus;

/* A subscriber: event is borrowed for the call. persisted: false for ephemeral events. */
typedef void (*bus_fn)(void *ud, const json_t *event, bool persisted);

/* An id maker: write a new unique id for event (at most BUS_ID_MAX - 1 bytes) to ret. NULL in bus_new: the
 * bus's own, "evt_" and a sequence number. */
typedef void (*bus_id_fn)(void *ud, const json_t *event, char ret[BUS_ID_MAX]);

int bus_new(bus_id_fn make_id, void *make_id_ud, bus **ret);
void bus_free(bus *b);
static inline void bus_freep(bus **b) {
        if (*b)
                bus_free(*b);
}
#define _cleanup_bus_ _cleanup_(bus_freep)

/* Returns a subscription number (>= 0) for bus_unsubscribe, or -ENOSPC past BUS_SUBSCRIBERS_MAX. */
int bus_subscribe(bus *b, bus_fn fn, void *ud);
void bus_unsubscribe(bus *b, int subscription);

/* Give event (a JSON object with "type"; the reference is stolen) its id and time and hand it to
 * every subscriber. ret_id (or NULL) gets the id. Returns 0, or -EINVAL (no "type"; event
 * dropped), -ENOMEM. */
int bus_emit(bus *b, json_t *event, char ret_id[BUS_ID_MAX]);
/* The same for an ephemeral event: no id, never stored. */
int bus_emit_ephemeral(bus *b, json_t *event);
