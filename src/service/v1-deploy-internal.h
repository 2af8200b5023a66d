/* v1-deploy-internal.h: what v1-deploy.c (the deployments' shapes and operations, the runs) and
 * v1-deploy-sched.c (the heap and the scheduler thread) share. */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "cron.h"
#include "v1-deploy.h"

typedef struct sched_entry {
        int64_t due_ms;
        char id[STORE_ID_MAX];
} sched_entry;

struct v1_deploy {
        v1_deploy_config cfg;
        pthread_mutex_t edit; /* one read-modify-write of a deployment at a time */
        pthread_mutex_t lock; /* the heap, armed, stop */
        pthread_cond_t cond;
        sched_entry *heap; /* a min-heap on due_ms */
        size_t n, cap;
        json_t *armed; /* id -> the due_ms of its live heap entry (an older entry is stale) */
        bool stop, started;
        pthread_t thread;
        int64_t mono_start_ms; /* the test clock's origin */
        /* the zones read so far (immutable once read, shared by every thread), by name */
        pthread_mutex_t zlock;
        struct {
                char name[TZ_NAME_MAX];
                tz_zone *zone;
        } zones[DEPLOY_ZONE_CACHE_MAX];
        size_t n_zones;
};

/* The zone name, read once (a cache of DEPLOY_ZONE_CACHE_MAX; beyond it *ret_owned is set and the
 * caller frees the zone). */
int deploy_zone(v1_deploy *d, const char *name, const tz_zone **ret, tz_zone **ret_owned, hull_error *e);

/* Arm dep (a stored deployment) at its next run after now, or disarm it when it is archived,
 * has no schedule or its schedule never fires. */
void deploy_sched_arm(v1_deploy *d, const json_t *dep);
int deploy_sched_start(v1_deploy *d, hull_error *e);
void deploy_sched_stop(v1_deploy *d);

/* The next run of dep's schedule after after_ms (Unix ms): 0 with *ret, or -ENOENT (no schedule,
 * or it never fires), -EINVAL (a time zone the tz database lost). */
int deploy_next_ms(v1_deploy *d, const json_t *dep, int64_t after_ms, int64_t *ret);

/* A run of deployment id (trigger "schedule" with scheduled_ms, or "manual"); *ret the run stored
 * (may be NULL). The deployment is archived when its agent is missing, and paused with the
 * error when a scheduled run fails. */
int deploy_run(v1_deploy *d, const char *id, bool scheduled, int64_t scheduled_ms, json_t **ret, v1_err *err);

/* Hook point for webhooks (issue 23): every deployment event is announced here (event_type one of
 * the SDK's deployment.* / deployment_run.*, obj the deployment or the run). */
void deploy_announce(v1_deploy *d, const char *event_type, const json_t *obj);
