/* v1-work.h: the Work API of self-hosted environments (/v1/environments/{id}/work..., the SDK's
 * shapes; docs/DEPLOY.md "Self-hosted workers"): a session in an environment whose config.type
 * is self_hosted becomes a work item that workers poll, acknowledge, heartbeat and stop; the
 * state machine over store-work.h, the work object, the secret of a poll (a sessions token
 * scoped to that one session), and the environment keys workers poll with. Every function
 * returns 0 or a negative errno with *err filled (status 400, 404, 409, 412 or 500). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "v1-shape.h"

/* The scope of a worker's credential as the store keeps it: "env:<id>" or "session:<id>". */
#define V1_WORK_SCOPE_ENV "env:"
#define V1_WORK_SCOPE_SESSION "session:"
#define V1_WORK_KEY_SIZE 80U /* "hull_env_" + 64 hex digits, NUL included */

/* The worker ids seen polling (workers_polling), in memory: one a server. */
typedef struct v1_work_pollers v1_work_pollers;
int v1_work_pollers_new(v1_work_pollers **ret);
void v1_work_pollers_free(v1_work_pollers *p);

/* Is env_id a self_hosted environment? 0, or 404 (no such environment) / 400 (another type). */
int v1_work_env(store *s, const char *env_id, v1_err *err);

/* Queue a work item for the session when its environment is self_hosted and it has no live item
 * (none that is not stopped): at its creation, and when a dormant session receives events.
 * Sessions elsewhere: nothing. */
int v1_work_enqueue(store *s, const char *session_id, v1_err *err);
/* v1_work_enqueue when the session's environment_id is known (env_id, "" for none): no read of
 * the session (a send on a live session: one round trip fewer on PostgreSQL). 1 (nothing queued)
 * when the environment is not self_hosted, which it never becomes (its type does not change). */
int v1_work_enqueue_env(store *s, const char *session_id, const char *env_id, v1_err *err);

/* The oldest due item (queued, or handed out and not acknowledged before reclaim_ms), handed to
 * worker_id with a fresh secret; *ret NULL when none came within block_ms. */
int v1_work_poll(store *s, v1_work_pollers *p, const char *env_id, const char *worker_id, uint64_t block_ms,
                 uint64_t reclaim_ms, json_t **ret, v1_err *err);
/* The item (its secret null); ret_session (may be NULL): its session's id. */
int v1_work_get(store *s, const char *env_id, const char *work_id, json_t **ret, char *ret_session, v1_err *err);
/* body {"metadata": {k: string or null}}: a patch. */
int v1_work_update(store *s, const char *env_id, const char *work_id, const json_t *body, json_t **ret, v1_err *err);
int v1_work_ack(store *s, const char *env_id, const char *work_id, json_t **ret, v1_err *err);
/* expected: the last heartbeat the caller saw ("NO_HEARTBEAT": none); desired_ttl_s 0: the
 * default. A mismatch: -ESTALE, status 412, with *ret the current state (a work_heartbeat-like
 * object for the error's details). */
int v1_work_heartbeat(store *s, const char *env_id, const char *work_id, const char *expected, uint64_t desired_ttl_s,
                      json_t **ret, v1_err *err);
int v1_work_stop(store *s, const char *env_id, const char *work_id, bool force, json_t **ret, v1_err *err);
/* A PageCursor page. */
int v1_work_list(store *s, const char *env_id, const char *page, unsigned limit, json_t **ret, v1_err *err);
int v1_work_stats(store *s, v1_work_pollers *p, const char *env_id, json_t **ret, v1_err *err);

/* A new environment key for env_id (a self_hosted environment): its text in ret_key (shown
 * once), only its digest stored. */
int v1_work_key_new(store *s, const char *env_id, char ret_key[static V1_WORK_KEY_SIZE], v1_err *err);
