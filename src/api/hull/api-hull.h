/* api-hull.h: hull's own API's route table on hull serve's HTTP server:
 * {base...}/hull.v1.Workspace/{Exec,Read,Write,Edit,Glob,Grep,Persist,Hydrate},
 * {base...}/hull.v1.Sessions/List and {base...}/hull.v1.Handles/{List,Inspect,Query,Read,AddInput},
 * each a Connect procedure (api_connect's wording) handed to hs_rpc on a thread of its own. */
#pragma once

#include "api-connect.h"
#include "http-server.h"
#include "sessions.h"

typedef struct api_hull_config {
        hs_manager *sessions; /* NULL: every procedure answers unimplemented (sessions are off) */
        const dlog *log;
        metrics *metrics;
} api_hull_config;

typedef struct api_hull api_hull;

/* Returns 0 with *ret or -ENOMEM. */
int api_hull_new(const api_hull_config *cfg, api_hull **ret);

/* Add the routes to s (before http_start). Returns 0 or -E2BIG. */
int api_hull_register(api_hull *a, http_server *s);

/* Free it; only once the server's threads have ended. */
void api_hull_free(api_hull *a);
