/* v1-deploy.h: scheduled deployments (/v1/deployments, /v1/deployment_runs; issue 23,
 * ../shared/reference/cma-api-more.md §8): an agent version pinned with an environment, initial
 * events, resources, vaults, a budget and metadata, started as a new session by hand (run now) or
 * on a cron schedule in an IANA time zone (cron.h).
 *
 * Each attempt is a deployment run: the session made through v1-session-start.h with the
 * deployment's id on it and its initial events sent, or the error that stopped it. A missing agent
 * archives the deployment; a scheduled run that fails pauses it with the error as its
 * paused_reason. The scheduler is one thread that sleeps until the earliest due run (a binary heap
 * keyed by each deployment's next run; the run claimed in the store first, store_deploy_claim, so
 * no run is made twice, also across a restart or by two nodes sharing PostgreSQL); at start it arms
 * every active deployment at its next run after now, so runs missed while hull was down are not
 * replayed.
 *
 * Thread-safe. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "dlog.h"
#include "error.h"
#include "store.h"
#include "v1-session-start.h"
#include "v1-shape.h"

typedef struct v1_deploy v1_deploy;

typedef struct v1_deploy_config {
        v1_starter start;
        const dlog *log;
        const char *tz_dir; /* the tz database (NULL: /usr/share/zoneinfo) */
        /* TESTING ONLY (hull serve's HULL_TEST_CLOCK=START:RATE): the scheduler's clock starts at
         * clock_start (Unix seconds) and runs clock_rate times as fast as the real one; 0: the
         * real clock. */
        int64_t clock_start;
        unsigned clock_rate;
} v1_deploy_config;

/* spec "START:RATE" (hull serve's HULL_TEST_CLOCK; NULL or "": the real clock) into cfg's
 * clock_start and clock_rate. -EINVAL with *e when it is not one. */
int v1_deploy_test_clock(const char *spec, v1_deploy_config *cfg, hull_error *e);
/* Arm every active deployment of the store and start the scheduler thread. */
int v1_deploy_new(const v1_deploy_config *cfg, v1_deploy **ret, hull_error *e);
/* Stop the scheduler (a run under way finishes first); the routes still answer (no run is made). */
void v1_deploy_stop(v1_deploy *d);
/* Stop it and free d (after the server stopped). */
void v1_deploy_free(v1_deploy *d);

/* The scheduler's clock, Unix milliseconds. */
int64_t v1_deploy_now_ms(v1_deploy *d);

/* POST /v1/deployments: *ret the deployment (a new reference). 400 (a bad body, a bad cron
 * expression or time zone, an archived agent or environment), 404 (no such agent, environment or
 * vault). */
int v1_deploy_create(v1_deploy *d, const json_t *body, json_t **ret, v1_err *err);
/* GET: the deployment with its schedule's upcoming_runs_at. 404 when none. */
int v1_deploy_get(v1_deploy *d, const char *id, json_t **ret, v1_err *err);
/* A stored deployment (a list's item) given its upcoming_runs_at in place. */
void v1_deploy_decorate(v1_deploy *d, json_t *dep);
/* POST /v1/deployments/{id}: 400 (a bad body, an archived deployment), 404. */
int v1_deploy_update(v1_deploy *d, const char *id, const json_t *body, json_t **ret, v1_err *err);

typedef enum v1_deploy_op { V1_DEPLOY_ARCHIVE, V1_DEPLOY_PAUSE, V1_DEPLOY_UNPAUSE } v1_deploy_op;
/* archive (again: the same object), pause ({"type":"manual"}), unpause. 400 on an archived one. */
int v1_deploy_act(v1_deploy *d, const char *id, v1_deploy_op op, json_t **ret, v1_err *err);
/* POST /v1/deployments/{id}/run: a manual run now (also while paused); *ret the run (its error
 * when the session could not be made). 400 on an archived deployment, 404. */
int v1_deploy_run_now(v1_deploy *d, const char *id, json_t **ret, v1_err *err);

/* ---- the scheduler (v1-deploy-sched.c) ---- */

/* The heap's size and the bytes it holds (for the bench). */
void v1_deploy_sched_stats(v1_deploy *d, size_t *ret_armed, size_t *ret_bytes);
