/* api-v1.h: the Claude Managed Agents compatible /v1 API of hull serve
 * (../shared/reference/cma-api.md): agents, environments, sessions, their events and the event
 * stream, and hull's API keys, over the store (store.h) and the engine that runs the sessions'
 * turns (v1-run.h).
 *
 * Every request names the API version (anthropic-version: 2023-06-01 or 2026-10-21) and, on the
 * agents, environments and sessions, the beta (anthropic-beta: a comma-separated list holding
 * managed-agents-2026-04-01); the query's "beta" is ignored, any other unknown query argument is
 * refused. Answers are JSON (content-type application/json) with a request-id header; errors the
 * envelope {"type":"error","error":{"type","message","details":{"error_code"}},"request_id"},
 * with x-should-retry: false on every 4xx but 429. */
#pragma once

#include "dlog.h"
#include "http-server.h"
#include "store.h"
#include "v1-deploy.h"
#include "v1-files.h"
#include "v1-run.h"

typedef struct api_v1_config {
        store *store;
        v1_engine *engine;
        const dlog *log;
        const char *audit_dir; /* where the sessions' audit logs are (hull's extensions); NULL: none */
        v1_files *files;       /* /v1/files (api-v1-files.c); NULL: not served */
        const char *mnt_root;  /* the sessions' resource directories (v1-resources.h); NULL: none */
        v1_deploy *deploy;     /* /v1/deployments (api-v1-deployments.c); NULL: not served */
} api_v1_config;

typedef struct api_v1 api_v1;

int api_v1_new(const api_v1_config *cfg, api_v1 **ret);
/* Add the routes to s (before http_start). Returns 0 or -E2BIG. */
int api_v1_register(api_v1 *a, http_server *s);
void api_v1_free(api_v1 *a);

/* The server's fallback for the prefix /v1: refusals of paths under /v1 without a route, in this
 * API's envelope. */
extern const http_api api_v1_fallback_api;

/* hull.db's API keys as the HTTP server's second source of keys (http_config.keys). */
http_keys api_v1_keys(store *s);
