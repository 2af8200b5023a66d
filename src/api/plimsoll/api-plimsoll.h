/* api-plimsoll.h: the plimsoll protocol's route table on hull serve's HTTP server:
 * {base...}/plimsoll.v1.SandboxService/{Describe,Run,OpenSession,SessionRun,CloseSession}.
 * A single run is orchestrated here: parse, admission (--max-runs plus --queue), the run's
 * thread waiting in brk_call while its connection is suspended, the answer with its record, the
 * runs audit log. The session procedures go to hs_rpc on a thread of their own.
 * The Connect wording it shares with hull's own API is src/api/connect. */
#pragma once

#include "broker.h"
#include "dlog.h"
#include "http-server.h"
#include "serve-metrics.h"
#include "plimsoll.h"
#include "sessions.h"

/* ---- plimsoll ---- */

typedef struct api_plimsoll_config {
        unsigned max_runs, queue_max; /* admission: runs at once and waiting */
        tg_gate *tier;                /* the evidence (the kernel tier once its check passed) */
        brk_broker *broker;
        hs_manager *sessions; /* NULL: the session procedures answer unimplemented */
        const dlog *log;
        metrics *metrics;
        /* Run's hullEnvironment (hull's extension): the hs_config.env_resolve and env_done of
         * OpenSession, called from the run's thread; NULL: a Run naming one is failed_precondition */
        int (*env_resolve)(void *ctx, const char *name, char ret_layer[SBX_PATH_MAX], sbx_net_mode *ret_net,
                           sbx_net_policy *ret_policy, char ret_desc[ENV_DESC_MAX], hull_error *e);
        void (*env_done)(void *ctx, sbx_net_policy *policy);
        void *env_ctx;
} api_plimsoll_config;

typedef struct api_plimsoll api_plimsoll;

/* The pointed-to parts of cfg must outlive it. Returns 0 with *ret or -ENOMEM. */
int api_plimsoll_new(const api_plimsoll_config *cfg, api_plimsoll **ret);

/* Add the routes to s (before http_start). Returns 0 or -E2BIG. */
int api_plimsoll_register(api_plimsoll *a, http_server *s);

/* Free it; only once the server's threads have ended (http_stop succeeded). */
void api_plimsoll_free(api_plimsoll *a);
