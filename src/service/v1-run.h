/* v1-run.h: the /v1 API's sessions at work: each session's append-only event log (in the store,
 * durable before anyone is told), its live subscribers (event streams), and its turns: the agent
 * loop (agent.h) on a worker thread of the session's own, in a sandbox of the session core that
 * opens with the first turn that needs one and opens again when it ended (its idle time or
 * lifetime ran out).
 *
 * Every event a session gets goes one way: an id ("sevt_..."), its processed_at, an append to the
 * store (the session's next sequence number), then a frame to each subscriber
 * ("id: <seq>\nevent: <type>\ndata: <json>\n\n"), all under the session's lock, so a subscriber
 * that replays from a sequence number and then goes live sees every event once, in order. A
 * subscriber that reads too slowly for its queue loses its stream (it resumes with Last-Event-ID);
 * nothing waits for it. The session object's status, usage and stats follow the log
 * (session.status_running, session.status_idle, session.usage).
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
#include "http-server.h"
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
} v1_engine_config;

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

/* Stream a session's events to sse (an answer already made, given to the engine whatever
 * happens): from the event after sequence after_seq (0: the whole log), or live only (-1).
 * deltas: agent.message previews (event_start / event_delta) while the model writes. */
int v1_engine_subscribe(v1_engine *g, const char *session_id, int64_t after_seq, bool deltas, http_sse *sse,
                        v1_err *err);

/* The session object with body's update applied (v1_session_update), stored, and a
 * session.updated event when something changed; *ret the object (a new reference). */
int v1_engine_update(v1_engine *g, const char *session_id, const json_t *body, json_t **ret, v1_err *err);

/* Archive a session (409 session_running while a turn runs); *ret the object. */
int v1_engine_archive(v1_engine *g, const char *session_id, json_t **ret, v1_err *err);

/* Delete a session: its streams get session.deleted and end, its turn is interrupted, its sandbox
 * closed, and the store forgets it. */
int v1_engine_delete(v1_engine *g, const char *session_id, v1_err *err);

/* The session's sandbox while it is open (hull's /v1 extensions read its handles): *ret a
 * reference (ss_unref with v1_engine_ss), or NULL when none is open now. Returns 0. */
int v1_engine_sandbox(v1_engine *g, const char *session_id, ss_session **ret);
ss_manager *v1_engine_ss(v1_engine *g);

/* A watcher of one session's events (AG-UI): fn gets every event as it is logged (seq > 0) and
 * the agent.message previews (seq 0: event_start, event_delta), under the session's lock: it
 * must only copy what it needs and return (never block, never call the engine). */
typedef struct v1_watch v1_watch;
typedef void v1_watch_fn(void *ud, int64_t seq, const json_t *ev);
/* Start watching: *ret_last_seq the log's last sequence number then (what fn gets comes after
 * it), *ret_session a copy of the session object then. 404 for an unknown session. */
int v1_engine_watch(v1_engine *g, const char *session_id, v1_watch_fn *fn, void *ud, int64_t *ret_last_seq,
                    json_t **ret_session, v1_watch **ret, v1_err *err);
/* Stop: fn is not called any more once this returns. */
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
