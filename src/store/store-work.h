/* store-work.h: the Work API's queue (self-hosted environments, docs/DEPLOY.md "Self-hosted
 * workers") in the store: one row a work item (its environment, session, state, when it was last
 * handed to a poller, until when its lease runs, its last heartbeat, the poller's worker id, a
 * version for compare-and-set, and its other fields as JSON), at most one item not "stopped" per
 * session; and the scoped credentials of workers: an environment key or a work item's sessions
 * token, only their SHA-256 digests. The state machine itself is v1-work.c's. Every function
 * returns 0 or a negative errno with *e. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

typedef struct store_work {
        char id[STORE_ID_MAX], env_id[STORE_ID_MAX], session_id[STORE_ID_MAX];
        char state[STORE_WORK_STATE_MAX]; /* queued, starting, active, stopping, stopped */
        char heartbeat[STORE_ID_MAX];     /* "" with has_heartbeat false: none */
        bool has_heartbeat;
        char worker_id[WORK_WORKER_ID_MAX];      /* the last poller's Anthropic-Worker-ID ("" none) */
        int64_t created_ms, polled_ms, lease_ms; /* polled_ms 0: not handed out; lease_ms 0: none */
        int64_t version;                         /* bumped by each update */
        json_t *body;                            /* owned: metadata and the times (acknowledged_ms, started_ms, ...) */
} store_work;

void store_work_done(store_work *w);

typedef struct store_work_stats {
        int64_t depth;          /* queued, not handed out */
        int64_t pending;        /* queued, handed out, not acknowledged */
        int64_t oldest_created; /* the oldest queued item's created_ms; 0: none */
} store_work_stats;

/* A new item (version 1). -EEXIST when its session has an item that is not stopped (or the id
 * is taken). */
int store_work_insert(store *s, const store_work *w, hull_error *e);
/* -ENOENT when there is none. */
int store_work_get(store *s, const char *id, store_work *ret, hull_error *e);
/* Replace the item if its version is still w->version (then it becomes w->version + 1);
 * -ESTALE when it changed meanwhile, -ENOENT when it is gone. */
int store_work_update(store *s, const store_work *w, hull_error *e);
/* The environment's items whose lease ended by now_ms: "starting" and "active" ones back to
 * "queued" (not handed out, heartbeat and worker cleared), "stopping" ones to "stopped". */
int store_work_expire(store *s, const char *env_id, int64_t now_ms, hull_error *e);
/* Up to max ids (a JSON array, oldest first) of the environment's queued items never handed out
 * or handed out before reclaim_before_ms and not acknowledged. */
int store_work_due(store *s, const char *env_id, int64_t reclaim_before_ms, unsigned max, json_t **ret, hull_error *e);
/* Up to max items of the environment after (after_ms, after_id) in (created_ms, id) order (after_id
 * NULL: from the first); *ret malloc'd, each to store_work_done. */
int store_work_list(store *s, const char *env_id, int64_t after_ms, const char *after_id, unsigned max,
                    store_work **ret, size_t *ret_n, hull_error *e);
int store_work_stats_get(store *s, const char *env_id, store_work_stats *ret, hull_error *e);

/* ---- scoped credentials: scope "env:<env_id>" (an environment key) or "session:<session_id>"
 * (a sessions token, work_id its item's) ---- */
int store_work_key_add(store *s, const char digest_hex[static 65], const char *scope, const char *work_id,
                       int64_t created_ms, hull_error *e);
/* 1 with the scope (and work_id, may be NULL) of the credential with this digest, 0 when none. */
int store_work_key_find(store *s, const char digest_hex[static 65], char ret_scope[static STORE_WORK_SCOPE_MAX],
                        char *ret_work_id, hull_error *e);
/* Forget the sessions tokens of a work item. */
int store_work_key_drop(store *s, const char *work_id, hull_error *e);
