/* v1-run.h: the /v1 API's sessions at work: each session's append-only event log (in the store,
 * durable before anyone is told), its live subscribers (event streams), and its turns: the agent
 * loop (agent.h) on a worker thread of the session's own, in a sandbox of the session core that
 * opens with the first turn that needs one and opens again when it ended (its idle time or
 * lifetime ran out).
 *
 * Every event a session gets goes one way: an id ("sevt_..."), its processed_at, an append to the
 * store (the session's next sequence number), then to each watcher (v1_engine_watch: the /v1
 * event stream, AG-UI), all under the session's lock, so a watcher that replays from a sequence
 * number and then goes live sees every event once, in order. A watcher that takes events too
 * slowly is caught up from the store by a thread of its own, or loses its stream when it takes
 * nothing for V1_STREAM_STALL_MS (it resumes with Last-Event-ID); nothing waits for it. The session
 * object's status, usage and stats follow the log (session.status_running, session.status_idle,
 * session.usage).
 *
 * Start-up recovers turns a crash cut: a session stored as running gets a session.error
 * (unknown_error, terminal) and a session.status_idle, and is usable again.
 *
 * Thread-safe: every function from any thread. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "dlog.h"
#include "error.h"
#include "settings.h"
#include "ss.h"
#include "store.h"
#include "v1-shape.h"

typedef struct v1_engine v1_engine;

typedef struct v1_engine_config {
        store *store;
        /* The model settings (hull serve's flags, the environment, config.json); NULL: every turn
         * ends with a session.error saying why (settings_error). */
        const settings *settings;
        const char *settings_error;
        /* --model was given: every agent uses it; else an agent's model id goes to the provider. */
        bool force_model;
        ss_manager *ss; /* where sandboxes open; NULL: a tool that needs one fails */
        const dlog *log;
        /* A session whose environment's config.networking is limited gets a limited network
         * (sbx-net.h) with its allowed_hosts and allow_package_managers; its proxy logs to
         * netlog_dir/network-<session id>.log (NULL: no log). The operator's part of the policy:
         * net_allow_cidrs (NULL-terminated, or NULL) and net_allow_loopback (TESTING ONLY). */
        const char *netlog_dir;
        char *const *net_allow_cidrs;
        bool net_allow_loopback;
        /* An environment whose networking is unrestricted (CMA's default) gets a real network
         * (pasta, sbx-net.h) only when the operator allowed it (hull serve
         * --allow-unrestricted-network); else its sessions have none, as with networking none. */
        bool allow_unrestricted;
        /* A session's resources (v1-resources.h): the files they name, and the root of each
         * session's resource directory, MNT_ROOT/<session id>, bound read-only at /mnt in its
         * sandbox (reachable by the sandbox user). NULL: no resources are mounted. */
        struct v1_files *files;
        const char *mnt_root;
        /* One of several nodes sharing a PostgreSQL store (hull serve --node-id; joined already):
         * each session's turns run on the node holding its lease, the node's thread heartbeats,
         * cuts dead nodes' turns and wakes streams (v1-nodes.c). NULL: the only node. */
        const store_node *node;
        /* Deliver the outbound webhooks (v1-webhook.h's worker, started and stopped with the
         * engine; settings' web allowlist is the egress guard's). */
        bool webhooks;
} v1_engine_config;

/* Change a session's object: edit gets a copy of it (returns 0, or a negative errno with *err);
 * the copy is stored and becomes the session's (updated_at now) and a reference to it goes to
 * *ret (may be NULL). The session's lock is held meanwhile. -ENOENT (404) without the session. */
int v1_engine_edit(v1_engine *g, const char *session_id, int (*edit)(json_t *session, void *ud, v1_err *err), void *ud,
                   json_t **ret, v1_err *err);

/* Start the engine: recover the turns a crash cut. The pointed-to parts of cfg must outlive it. */
int v1_engine_new(const v1_engine_config *cfg, v1_engine **ret, hull_error *e);
/* Interrupt every turn and wait (at most wait_ms) for the workers; end every stream. */
void v1_engine_shutdown(v1_engine *g, uint64_t wait_ms);
/* Free it (after v1_engine_shutdown). */
void v1_engine_free(v1_engine *g);

/* A new id: prefix and 26 characters of base32 from getrandom ("sevt_", "sesn_", "agent_"...). */
void v1_id_new(const char *prefix, char ret[static STORE_ID_MAX]);

/* Client events (checked by v1_events_parse) for a session: refused as a whole (nothing stored)
 * when the session is archived (409), a confirmation or a custom tool result names no call that
 * waits for it (400), or the log cannot be written (500); else stored, acted on (a user.message
 * starts a turn, or waits for the running one; a confirmation or result continues the paused
 * turn; user.interrupt ends the turn) and *ret_echo (a new array) is what was stored. */
int v1_engine_send(v1_engine *g, const char *session_id, const json_t *events, json_t **ret_echo, v1_err *err);

/* An input file for the session's next turn (hull's extension POST /v1/sessions/{id}/inputs):
 * name its display name (one path segment), handle the handle it becomes (NULL: the name's
 * stem), format "binary" (NULL: the file as it is, a binary handle) or a table's "csv", "tsv",
 * "json" (an array of objects), "jsonl" (the file under /workspace/inputs is then the table's
 * SQLite database); len bytes of data, copied. Kept in memory (V1_INPUTS_PENDING_MAX, _BYTES) until the
 * next turn's worker adds it to the sandbox (/workspace/inputs/<handle>/<name>). *ret the
 * answer ({"type": "session_input", handle, name, path, bytes, status: "pending"}). Errors with
 * *err: 400 (a bad name, handle or format), 404, 409 (archived, the same handle waiting, too
 * many), 413. */
int v1_engine_add_input(v1_engine *g, const char *session_id, const char *handle, const char *name, const char *format,
                        const void *data, size_t len, json_t **ret, v1_err *err);

/* The session object with body's update applied (v1_session_update), stored, and a
 * session.updated event when something changed; *ret the object (a new reference). */
int v1_engine_update(v1_engine *g, const char *session_id, const json_t *body, json_t **ret, v1_err *err);

/* Can a new session (its object, before it is stored) have its budget? 400 model_not_budgetable
 * when its model has no price in config.json's "pricing" (v1-budget.c). */
int v1_engine_budget_admit(v1_engine *g, const json_t *session, v1_err *err);

/* Archive a session (409 session_running while a turn runs); *ret the object. */
int v1_engine_archive(v1_engine *g, const char *session_id, json_t **ret, v1_err *err);

/* Delete a session: its streams get session.deleted and end, its turn is interrupted, its sandbox
 * closed, and the store forgets it. */
int v1_engine_delete(v1_engine *g, const char *session_id, v1_err *err);

/* The session's sandbox while it is open (hull's /v1 extensions read its handles): *ret a
 * reference (ss_unref with v1_engine_ss), or NULL when none is open now. Returns 0. */
int v1_engine_sandbox(v1_engine *g, const char *session_id, ss_session **ret);
/* The session's environment_id ("" when none) into buf from this engine's live state, without a
 * store read (a session's environment never changes): false when the session is not live here. */
bool v1_engine_env_id(v1_engine *g, const char *session_id, char *buf, size_t size);
/* Its environment is not self_hosted (v1_work_enqueue_env said so): v1_engine_env_id gives "" from
 * then on, so a send reads the environment no more (an environment's type never changes). */
void v1_engine_env_not_hosted(v1_engine *g, const char *session_id);
ss_manager *v1_engine_ss(v1_engine *g);
/* A new session on this node (one of several): 0, or 503 in *err when it runs its --capacity of
 * turns (a node at capacity takes no new session), naming the live node with the most room. */
int v1_engine_admit_session(v1_engine *g, v1_err *err);
/* Where the session's sandbox is, one node of several (hull serve --node-id): 0 here (one node,
 * this node, or none recorded), 1 on another live node (*ret names it and its URL), -EHOSTDOWN
 * when the node that held it stopped (*ret names it; the sandbox is gone), or a store error in
 * *err (503). This node's id (NULL: the only node) in *ret_self. */
int v1_engine_sandbox_node(v1_engine *g, const char *session_id, store_owner *ret, const char **ret_self, v1_err *err);
/* v1_engine_sandbox_node for a send of events: when the session is live here and runs no turn, its
 * sync read in the same statement (store_session_get_seq_owner, one round trip where there were
 * two), which the send's own sync then takes (on the same thread, at once: v1_node_presynced). */
int v1_engine_send_where(v1_engine *g, const char *session_id, store_owner *ret, const char **ret_self, v1_err *err);
/* The engine's settings (the egress guard's allowlist of the vaults' token endpoints), or NULL. */
const settings *v1_engine_settings(v1_engine *g);

/* ---- watching a session's events ----
 *
 * A watcher is a consumer's ops and its ud. The engine gives it the session's events, each once
 * and in order: the log from where it asked, then every event as it is logged (seq > 0) and, with
 * deltas, the agent.message previews (seq 0: event_start, event_delta; never logged, never
 * replayed). */
typedef struct v1_watch v1_watch;
typedef struct v1_watch_ops {
        /* One event: ev, and json_text (len bytes, NUL-terminated) its compact JSON, made once for
         * every watcher. Called under the session's lock: copy what is needed and return, never
         * block, never call the engine. Returns 0; -EAGAIN: no room now (a logged event comes
         * again, from the log, once wait says there is room; a preview is dropped); -E2BIG: this
         * event can never go to it (dropped when it comes live; a replay from the log ends the
         * watch); any other negative errno: the consumer is gone (the watch ends). */
        int (*deliver)(void *ud, int64_t seq, const json_t *ev, const char *json_text, size_t len);
        /* Wait (on a thread of the engine's, under no lock) until there is room for what deliver
         * refused with -EAGAIN. Returns 0, -ETIMEDOUT or -EPIPE (gone). NULL: the watch cannot lag
         * (a logged event refused ends it). */
        int (*wait)(void *ud, uint64_t timeout_ms);
        /* The engine is done with ud: called exactly once per v1_engine_watch (also when it
         * fails), and ud is not touched after. cut: the engine ended the watch (the session was
         * deleted or its log could not be read, hull serve stops, the consumer was gone or too
         * slow); false: v1_engine_unwatch. NULL: nothing to do. */
        void (*close)(void *ud, bool cut);
} v1_watch_ops;

#define V1_WATCH_LIVE (-1) /* v1_watch_opts.after_seq: only what is logged from now on */

typedef struct v1_watch_opts {
        int64_t after_seq; /* the log after this sequence number (0: all of it), or V1_WATCH_LIVE */
        bool deltas;       /* the agent.message previews too */
} v1_watch_opts;

/* Watch a session's events. ops must outlive the watch.
 * With ret_watch NULL the engine owns the watch: it ends when the consumer is gone (deliver or
 * wait say so), reads too slowly (nothing for V1_STREAM_STALL_MS), the session is deleted (after
 * its session.deleted, sent to every such watcher) or the engine shuts down; each ends with
 * close(ud, true). A watcher behind the log (a replay, or a slow reader) is caught up from the
 * store by a thread of its own.
 * With ret_watch the caller holds it (*ret_watch, end it with v1_engine_unwatch): it is never
 * ended by the engine (it gets session.deleted and watches on) and never caught up by a thread (a
 * logged event it refuses ends its deliveries).
 * *ret_last_seq (may be NULL) the log's last sequence number and *ret_session (may be NULL) a
 * copy of the session object, both as of the start.
 * Returns 0 (an engine-owned watch of a deleted session, or while the engine stops, ends at once),
 * or a negative errno with *err (status 404: an unknown session; 500: out of memory). */
int v1_engine_watch(v1_engine *g, const char *session_id, const v1_watch_ops *ops, void *ud, const v1_watch_opts *opts,
                    int64_t *ret_last_seq, json_t **ret_session, v1_watch **ret_watch, v1_err *err);
/* Stop a held watch: deliver is not called any more once this returns, and close(ud, false) is
 * called before it returns. NULL: nothing. */
void v1_engine_unwatch(v1_watch *w);
/* Is the engine shutting down? */
bool v1_engine_stopping(v1_engine *g);

/* Sessions with a worker now (for the metrics and the shutdown). */
unsigned v1_engine_running(v1_engine *g);

/* A session's handles as GET /v1/sessions/{id}/handles lists them (*ret_data, an array) and its
 * sandbox's state (*ret_sandbox: {"state": "open"|"closed"|"none", "fingerprint"?}), new
 * references. For AG-UI's STATE_SNAPSHOT too. */
int v1_engine_handles(store *st, v1_engine *g, const char *id, json_t **ret_data, json_t **ret_sandbox, hull_error *e);
/* One handle as those show it, from the store's summary (a new reference, NULL on ENOMEM). */
json_t *v1_handle_json(const json_t *sum);
