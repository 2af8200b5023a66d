/* v1-run-internal.h: what the files of the /v1 engine share (v1-run.c: the table, the log, the
 * worker and the API's calls; v1-engine.c: start and stop; v1-stream.c: subscribers and streams;
 * v1-agent.c: an agent built for a session). Not for use outside src/service/v1-*.c. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>

#include "agent.h"
#include "bus.h"
#include "model.h"
#include "svc-agent.h"
#include "v1-memory.h"
#include "v1-run.h"

/* ---- a session at work ---- */

/* A watcher (v1_engine_watch). */
struct v1_watch {
        struct v1_watch *next;
        const v1_watch_ops *ops;
        void *ud;
        bool deltas;
        bool held;      /* the consumer's (v1_engine_unwatch ends it), with a reference to l */
        bool live;      /* caught up: gets every new event as it is logged */
        int64_t sent;   /* the last sequence number it was given */
        struct live *l; /* the pump's */
        bool pumped;    /* a pump thread owns it: ended, it is only marked dead */
        bool dead;      /* ended (a held one: no more deliveries) */
};

typedef struct live {
        struct live *next;
        v1_engine *g;
        char id[STORE_ID_MAX];
        unsigned refs;        /* the table's, and each user's (under g->lock) */
        pthread_mutex_t lock; /* the log, the subscribers, the state below */
        json_t *obj;          /* the session object, as stored */
        char *stored;         /* on nodes: the stored body's text as last read or written here (NULL: unknown) */
        json_t *agent_pins;   /* the agent objects l->tools and l->model borrow strings from (an array) */
        int64_t last_seq;     /* the log's last sequence number */
        v1_watch *watches;
        /* the turn */
        bool running; /* a worker exists and has work */
        bool joinable;
        /* outside nodes mode, a worker whose turn ended waits (up to V1_WORKER_LINGER_MS, on wake)
         * for the session's next message with running false: kick_locked hands it the turn */
        bool parked;
        pthread_cond_t wake;
        pthread_t worker;
        atomic_bool interrupt;
        json_t *queue;             /* texts of user messages waiting for a turn */
        bool resume_ready;         /* the paused call is decided: the worker resumes it */
        char ask_id[STORE_ID_MAX]; /* the call the turn paused on ("" none) */
        bool budget_announced;     /* session.budget_reached was sent for this budget (a change re-arms it) */
        bool ask_client;           /* ... a custom tool's (else a confirmation) */
        bool ask_builtin;          /* ... with ask_client: a built-in the client runs (user.tool_result) */
        json_t *stash;             /* confirmations and results that came before the pause */
        json_t *held; /* on nodes: the agent's events logged with the next append (one commit; NULL: none) */
        bool claim_with_append, claim_refused; /* v1_engine_send's append claims the lease (v1-run.c) */
        bool env_not_hosted; /* its environment is not self_hosted (a type never changes): no work queue */
        /* synced by a send's look at its sandbox's node (v1_engine_send_where), on that thread, then:
         * the send's own v1_live_get takes that read (v1_node_presynced) instead of another */
        bool presynced;
        pthread_t presync_thread;
        uint64_t presync_ms;
        bool hold_running; /* a fresh turn's first session.status_running is held too (v1-agent.c's on_bus) */
        /* on nodes, a model request's start (with what was held) committed on a thread of its own
         * while the request goes out (v1_node_log_start_locked); every append and bus event waits */
        bool start_pending, start_joinable;
        pthread_t start_thread;
        pthread_cond_t start_done;
        json_t *start_ev;
        uint64_t turn_started_ms;
        unsigned n_appends;    /* appends since the last turn's end (its debug line; test-v1-threads) */
        unsigned n_obj_copies; /* of them, those that copied l->obj first (to put it back on failure) */
        unsigned n_fan_dumps;  /* events serialised for the streams (v1_fanout_text without the store's text) */
        uint64_t used_ms;      /* when its last turn ended (which idle agent goes first) */
        /* outside nodes mode: the conversation's text as this process last kept it (the store's,
         * its full text and parts joined; NULL: unknown) and the parts appended since its full
         * text was written; the worker's while it runs, else under lock */
        char *kept;
        size_t kept_len;
        unsigned kept_parts;
        /* a turn's conversation, to be written in the session's next append (its transaction,
         * before the idle; on nodes the next that writes the session row, as the idle's does):
         * the worker's, under lock; NULL: none */
        store_conv_write *conv_pending;
        bool deleted;
        /* the agent (the worker's while it runs, else under lock) */
        agent *agent;
        bus *bus;
        model_client *model;
        /* its tools and MCP servers (svc-agent.h): built for its first turn, dropped when the
         * agent changes, closed with the session */
        svc_agent *tools;
        char mcp_failed[V1_NAME_MAX + 1]; /* the server that could not be reached ("" none) */
        bool needs_box;
        ss_session *box;
        char box_id[PLIM_SESSION_ID_MAX + 1];
        v1_memory_mounts *mem; /* the memory stores mounted in box (v1-memory-mount.c); NULL none */
        char principal[STORE_ID_MAX + 8];
        /* the agent.message being previewed */
        char preview_id[STORE_ID_MAX];
        /* the outcome being worked on (v1-outcome.c): {outcome_id, description, rubric,
         * max_iterations, iteration}, or NULL */
        json_t *outcome;
        bool budget_stopped; /* the last turn ended on the budget: raising it resumes */
        /* input files for the next turn (v1-inputs.c), under lock */
        struct v1_input *inputs;
        size_t inputs_bytes;
} live;

struct v1_engine {
        v1_engine_config cfg;
        pthread_mutex_t lock; /* the table */
        live *lives;
        bool stopping;
        atomic_uint pumps;     /* pump threads alive (each holds a session) */
        pthread_t node_thread; /* v1-nodes.c's, when cfg.node */
        bool node_started;
        /* sessions whose turn ended here while the database was away (the lease not given back,
         * maybe the status not written): the node's thread mends them once it is back. Under
         * lock; ids, NODE_RELEASE_RETRY_MAX at most */
        char (*mend)[STORE_ID_MAX];
        size_t n_mend;
        struct v1_webhooks *webhooks; /* the delivery worker (cfg.webhooks), or NULL */
};

/* v1-run.c */
void v1_now_time(char ret[static STORE_TIME_MAX]);
int v1_store_fail(v1_err *err, const hull_error *e);
int v1_live_get(v1_engine *g, const char *id, live **ret, v1_err *err);
void v1_live_unref(live *l);
/* Free a live state no one holds (v1_live_unref's last; v1-engine.c's at the end). */
void v1_live_free(live *l);
void v1_live_unrefp(live **l);
void v1_log_server_locked(live *l, json_t *const *evs, size_t n);
void v1_log_failure_server_locked(live *l, const char *type, const char *msg, bool running, const char *server);
void v1_log_failure_locked(live *l, const char *type, const char *msg, bool running);
int v1_log_append_locked(live *l, json_t *const *evs, size_t n, hull_error *e);
/* Set processed_at of the queued events (an array of ids, or one id) to now (under l->lock). */
void v1_mark_processed_locked(live *l, const json_t *ids);

/* v1-stream.c */
/* Give one event to every caught-up watcher (under l->lock). seq 0: a preview, not logged; with
 * deltas_only only to the watchers that asked for previews. */
void v1_fanout(live *l, int64_t seq, const json_t *ev, bool deltas_only);
/* v1_fanout with the event's compact JSON (text; NULL: serialised here) */
void v1_fanout_text(live *l, int64_t seq, const json_t *ev, const char *text, bool deltas_only);
/* End every engine-owned watcher (under l->lock), after giving it last (when not NULL) whether
 * it is caught up or not (session.deleted). Held watchers get last too and stay. */
void v1_watches_end(live *l, const json_t *last);

/* v1-nodes.c (each a no-op, or 0, without cfg.node) */
bool v1_node_mode(const v1_engine *g);
void v1_node_sync_locked(live *l);
/* l was synced on this thread by the send that asks now, within NODE_PRESYNC_MS (once: the mark
 * is taken; under l->lock). */
bool v1_node_presynced(live *l);
void v1_node_merge_locked(live *l);
int v1_node_append_locked(live *l, json_t *const *evs, size_t n, const char *deliveries, store_conv_write *conv,
                          int64_t *ret_first, hull_error *e);
/* v1-run.c: ev (stolen) logged with the next append (the next event of the turn, at the latest
 * when the agent returns: v1_log_flush_locked), one commit for both; logged now when V1_HELD_MAX
 * are held. Only for events after which the turn does not wait before its next append (never
 * across a model call, a tool's run or the turn's end). */
void v1_log_hold_locked(live *l, json_t *ev);
/* v1-nodes.c: on nodes, ev (a span.model_request_start, stolen) and the events held before it
 * logged on a thread of their own, so the commit and the model request overlap; durable before
 * they are streamed, as every event; else (or when no thread starts) logged now (under l->lock). */
void v1_node_log_start_locked(live *l, json_t *ev);
/* Wait until that append is done (under l->lock): what follows it in the log waits for it. */
void v1_node_start_wait_locked(live *l);
/* ... and its thread joined (under l->lock; the worker, before its turn's state goes). */
void v1_node_start_join_locked(live *l);
void v1_log_flush_locked(live *l);
int v1_node_claim_locked(live *l, bool starts, v1_err *err);
void v1_node_release_locked(live *l);
bool v1_node_handoff_locked(live *l, bool worker, bool *ret_released);
/* The session's conversation's text (agent_conversation_text: only the messages new since the
 * last time are dumped), malloc'd; NULL when it cannot be made (logged: the log of events is the
 * record). */
char *v1_conversation_text(live *l, size_t *ret_len);

/* A turn's conversation on its way to the store (v1-agent.c). */
typedef struct v1_conv_save {
        store_conv_write w; /* the write: the whole text, or the tail after the kept text */
        char *text;         /* the whole text */
        size_t len;
} v1_conv_save;
/* The write that keeps the session's conversation, in *c: false when there is nothing to write
 * (the text kept). Outside nodes mode, when the text this process kept last is where this one
 * starts (no older message changed in place), only the messages after it are appended (a turn
 * writes its own few KB); else, and after V1_CONVERSATION_PARTS_MAX appends, the whole text. On
 * nodes always the whole text: another node may have run a turn of the session since this one
 * kept its text, and a tail added to what it no longer is would lose that turn.
 * The worker's. */
bool v1_conv_prepare(live *l, v1_conv_save *c);
/* The conversation kept: written here unless an append committed it already (c->w.result 0;
 * l->conv_pending), the whole text when adding to it failed; a failure logged. */
void v1_conv_finish(live *l, v1_conv_save *c);
bool v1_node_claim_with_append(live *l, bool messages);
int v1_node_append_sent(live *l, json_t *const *evs, size_t n, bool together, bool *foreign, v1_err *err);
/* Messages behind a running turn (waits) or another message: processed_at null till they run. */
void v1_mark_waiting(json_t *const *evs, size_t n, bool waits);
void v1_node_usage_cost(live *l, json_t *ev);
void v1_node_cut_locked(live *l, const char *dead_node);
void v1_node_own_sandbox(v1_engine *g, const char *session_id);
int v1_node_start(v1_engine *g, hull_error *e);
void v1_node_stop(v1_engine *g);

/* v1-inputs.c */
typedef struct v1_input v1_input;
/* Add the inputs waiting for this turn to the session's sandbox (the worker's, after
 * v1_agent_ready). Returns 0, or a negative errno with *e and *ret_type (the rest are dropped). */
int v1_inputs_apply(live *l, const char **ret_type, hull_error *e);
/* Drop the waiting inputs (under l->lock, or when l is freed). */
void v1_inputs_free(live *l);

/* v1-agent.c */
/* Build the session's agent for a turn when it has none (under no lock: the worker's). */
int v1_agent_ready(live *l, const char **ret_type, hull_error *e);
/* Free the agent's tools and MCP connections (svc_agent_free). */
void v1_tools_drop(live *l);
/* Is the session's sandbox open and usable? */
bool v1_box_alive(live *l);

/* v1-budget.c */
typedef struct v1_price {
        double input, output, cache_read, cache_write; /* US dollars per million tokens */
} v1_price;
/* The model a session's turns use (borrowed from cfg or obj; NULL when none). */
const char *v1_session_model(const v1_engine_config *cfg, const json_t *obj);
/* Its price from config.json's "pricing": 0, or -ENOENT when the table has none. */
int v1_price_of(const v1_engine_config *cfg, const char *model, v1_price *ret);
/* The session's list cost in cents (fractions kept), or -1 when its model has no price. */
double v1_list_cost_cents(const v1_engine_config *cfg, const json_t *obj);
/* Its budget's ceiling in cents, or -1 without one. */
double v1_budget_cents(const json_t *obj);
/* Has it spent its budget (false without one)? */
bool v1_budget_reached(const v1_engine_config *cfg, const json_t *obj);
/* Set obj's usage.list_cost (whole cents, rounded up) when its model has a price. */
void v1_usage_price(const v1_engine_config *cfg, json_t *obj);
/* Can obj (with its new budget) have it? 400 model_not_budgetable without a price, 400
 * budget_not_raised at or below what it has spent. */
int v1_budget_admit(const v1_engine_config *cfg, const json_t *obj, v1_err *err);

/* v1-outcome.c */
/* A user.define_outcome about to be logged (under l->lock): its outcome_id, and *ret_rubric the
 * rubric's text (a file's read now; a new reference). 400 when the file cannot be the rubric. */
int v1_outcome_admit_locked(live *l, json_t *ev, json_t **ret_rubric, v1_err *err);
/* The queue entry of a logged user.define_outcome: {"text": the agent's task, "queued": [],
 * "outcome": {outcome_id, description, rubric, max_iterations, iteration}}; NULL on ENOMEM. */
json_t *v1_outcome_entry(const json_t *ev, const json_t *rubric);
/* The session object's outcome_evaluations follow an event of type (returns true when changed). */
bool v1_outcome_follow(json_t *obj, const json_t *ev, const char *type, const char *now);
/* The outcome at work ends without a grading (interrupted, an error): result and why, in
 * outcome_evaluations; l->outcome dropped (under l->lock). */
void v1_outcome_close_locked(live *l, const char *result, const char *why);
/* Every outcome not yet ended is interrupted (a restart cut it; under l->lock). */
void v1_outcomes_cut_locked(live *l);
/* Grade the answer of the turn that just ended (the worker's, under no lock): the span events,
 * then a revision turn queued first, or at max_iterations the outcome closed and one last
 * acknowledgment turn queued (returns 1), or the outcome closed and session.status_idle logged
 * (returns 0). */
int v1_outcome_grade(live *l, const char *answer);
