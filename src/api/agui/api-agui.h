/* api-agui.h: hull serve's AG-UI endpoint, POST /agui (agui.h's protocol): a RunAgentInput runs
 * a turn of the /v1 session its threadId maps to (made on the thread's first run), and the answer
 * is the AG-UI event stream of that turn (text/event-stream, one "data:" frame per event),
 * translated from the session's events as they are logged. Same keys as /v1 (scope "v1"). With
 * several nodes, a run whose session's sandbox another live node holds is forwarded there (its
 * stream relayed: http_forward_stream), so that the turn runs in that sandbox. */
#pragma once

#include <stdint.h>

#include "dlog.h"
#include "http-server.h"
#include "store.h"
#include "v1-run.h"

typedef struct api_agui_config {
        store *store;
        v1_engine *engine;
        const char *agent_id;       /* hull serve --agui-agent: a new thread's agent; NULL: forwardedProps names it */
        const char *environment_id; /* --agui-environment; NULL: forwardedProps, else the newest environment */
        const dlog *log;
} api_agui_config;

typedef struct api_agui api_agui;

int api_agui_new(const api_agui_config *cfg, api_agui **ret);
/* Add POST /agui to s (before http_start). Returns 0 or -E2BIG. */
int api_agui_register(api_agui *a, http_server *s);
/* No new run; each stream running ends with RUN_ERROR shutting_down (its turn goes on until the
 * engine stops it); wait (at most wait_ms) for them. Before the server ends every stream
 * (http_quiesce), so that the clients get that last event. */
void api_agui_shutdown(api_agui *a, uint64_t wait_ms);
void api_agui_free(api_agui *a);
