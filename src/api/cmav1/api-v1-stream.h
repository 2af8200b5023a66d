/* api-v1-stream.h: GET /v1/sessions/{id}/events/stream's consumer of the engine's watch (v1-run.h):
 * the session's events as SSE frames. For api-v1.c only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "http-server.h"
#include "v1-run.h"

/* Stream a session's events to sse (an answer already made, given up whatever happens: closed
 * when the stream ends): from the event after sequence after_seq (0: the whole log), or live only
 * (V1_WATCH_LIVE); deltas: agent.message previews too. Each event is a frame
 * "id: <seq>\nevent: <type>\ndata: <json>\n\n" (a preview and session.deleted without the id
 * line); the keep-alive is an "event: ping" frame. Returns 0, or the errors of v1_engine_watch
 * (the stream was closed). */
int api_v1_stream(v1_engine *g, const char *session_id, int64_t after_seq, bool deltas, http_sse *sse, v1_err *err);
