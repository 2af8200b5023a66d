/* v1-nodes.c: the /v1 engine as one node of several sharing a PostgreSQL store (hull serve
 * --node-id): each session's turns owned by one node through its lease (store_lease_claim), the
 * node's thread (its heartbeat renews the node's row and leases, reaps the leases of dead nodes
 * and cuts their turns, and wakes the streams of sessions another node appended to: LISTEN
 * hull_events, with a poll every NODE_POLL_MS as the fallback), and the sync of a session's live
 * state (object, last seq) from the store. Without a node id none of this runs (one node). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "time-util.h"
#include "v1-run-internal.h"

static live *live_find(v1_engine *g, const char *id);

bool v1_node_mode(const v1_engine *g) {
        return g->cfg.node != NULL;
}

/* The session as stored now (*ret_raw its text) and its log's last seq (one statement:
 * store_session_get_seq; with owner, the sandbox's holder read in the same statement:
 * store_session_get_seq_owner) (under l->lock). */
static int read_row(live *l, json_t **ret, char **ret_raw, int64_t *ret_last_seq, store_owner *owner, hull_error *e) {
        char *raw = NULL;
        size_t len = 0;
        int r = owner ? store_session_get_seq_owner(l->g->cfg.store, l->id, NODE_LEASE_TTL_MS, &raw, &len, ret_last_seq,
                                                    owner, e)
                      : store_session_get_seq(l->g->cfg.store, l->id, &raw, &len, ret_last_seq, e);
        if (r < 0)
                return r;
        json_error_t je;
        json_t *obj = json_loadb(raw, len, 0, &je);
        if (!obj) {
                free(raw);
                return hull_fail(e, -EBADMSG, "session %s: its stored body is not JSON", l->id);
        }
        *ret_raw = raw;
        *ret = obj;
        return 0;
}

/* The session as stored now, its text kept in l->stored (under l->lock). */
static int read_stored(live *l, json_t **ret, hull_error *e) {
        char *raw = NULL;
        int64_t last = 0;
        int r = read_row(l, ret, &raw, &last, NULL, e);
        if (r == 0) {
                free(l->stored);
                l->stored = raw;
        }
        return r;
}

/* Does o (a holder read) leave a send's turn to this node (none recorded, or this node's life)? */
static bool owned_here(const v1_engine *g, const store_owner *o) {
        return !o->node_id[0] || (strcmp(o->node_id, g->cfg.node->id) == 0 && o->alive);
}

/* What another node logged since l->last_seq, to this node's watchers (under l->lock). */
static void list_after(live *l) {
        hull_error e = {0};
        for (;;) {
                store_events_q q = {.limit = STORE_EVENTS_PAGE_MAX, .after_seq = l->last_seq};
                store_page p = {0};
                int64_t *seqs = NULL;
                if (store_events_list(l->g->cfg.store, l->id, &q, &p, &seqs, &e) < 0) {
                        dlog_log(l->g->cfg.log, DLOG_WARN, "event=node-sync-failed session=%s error=\"%s\"", l->id,
                                 e.msg);
                        return;
                }
                size_t n = json_array_size(p.data);
                for (size_t i = 0; i < n; i++) {
                        if (seqs[i] != l->last_seq + 1) /* the store's seqs are gap-free: never */
                                break;
                        l->last_seq = seqs[i];
                        v1_fanout(l, seqs[i], json_array_get(p.data, i), false);
                }
                free(seqs);
                store_page_done(&p);
                if (n < STORE_EVENTS_PAGE_MAX)
                        return;
        }
}

/* The sync of l (below), its row read with owner (may be NULL: not read; when the holder is
 * another node, the send is forwarded there and l stays as it was); 0, or the read's error (the
 * events are listed then, as before) (under l->lock). */
static int sync_with(live *l, store_owner *owner, hull_error *e) {
        json_t *obj = NULL;
        char *raw = NULL;
        int64_t last = 0;
        int r = read_row(l, &obj, &raw, &last, owner, e);
        if (r == 0 && owner && !owned_here(l->g, owner)) {
                json_decref(obj);
                free(raw);
                return 0;
        }
        if (r == 0) {
                free(l->stored);
                l->stored = raw;
                json_decref(l->obj);
                l->obj = obj;
                if (last <= l->last_seq)
                        return 0;
        }
        list_after(l);
        return r;
}

/* What another node logged since l->last_seq, to this node's watchers; the object as stored
 * (under l->lock). Nothing while this node's worker runs the turn: it logs every event itself.
 * The row's last_seq is written in the statement that appends (the same commit), so when the row
 * read says the log did not grow past l->last_seq there is nothing to list: one round trip. */
void v1_node_sync_locked(live *l) {
        hull_error e = {0};
        if (v1_node_mode(l->g) && !l->running && !l->deleted)
                (void) sync_with(l, NULL, &e);
}

bool v1_node_presynced(live *l) {
        bool fresh = l->presynced && pthread_equal(l->presync_thread, pthread_self()) &&
                     now_mono_ms() - l->presync_ms <= NODE_PRESYNC_MS;
        l->presynced = false;
        return fresh;
}

/* stored (a reference taken) becomes l->obj, with the fields of l->obj the log changes (status,
 * usage, stats) kept: another node may have updated its title or metadata since l->obj was read. */
static void overlay(live *l, json_t *stored) {
        static const char *const ours[] = {"status", "usage", "stats", "updated_at"};
        for (size_t i = 0; i < ELEMENTSOF(ours); i++) {
                json_t *v = json_object_get(l->obj, ours[i]);
                if (v)
                        json_object_set(stored, ours[i], v);
        }
        json_decref(l->obj);
        l->obj = stored;
}

/* Before the session object the log changed (status, usage, stats) is stored: the rest of it as
 * stored now, with those fields of l->obj (under l->lock). */
void v1_node_merge_locked(live *l) {
        if (!v1_node_mode(l->g))
                return;
        hull_error e = {0};
        json_t *stored = NULL;
        if (read_stored(l, &stored, &e) == 0)
                overlay(l, stored);
}

/* evs logged with l->obj (which they changed) in one statement: one commit a batch, where the
 * session row was written in a transaction of its own before (under l->lock). The write is
 * conditional on the stored body being l->stored (what this node last read or wrote); when another
 * node (or writer) changed it meanwhile, its version is merged (overlay) and the append tried again.
 * deliveries (may be NULL): the webhooks of the events' status changes, queued in the same statement
 * (v1_webhook_delivery). conv (may be NULL): the turn's conversation, whole, in the same statement
 * (conv->result). Nothing is written on failure. */
int v1_node_append_locked(live *l, json_t *const *evs, size_t n, const char *deliveries, store_conv_write *conv,
                          int64_t *ret_first, hull_error *e) {
        int r = 0;
        for (unsigned i = 0; i < NODE_APPEND_TRIES; i++) {
                json_t *stored = NULL;
                r = 0;
                if (!l->stored && (r = read_stored(l, &stored, e)) == 0)
                        overlay(l, stored);
                if (r < 0)
                        return r;
                char *now = NULL;
                r = store_events_append_with_session(l->g->cfg.store, l->id, evs, n, l->obj, l->stored, deliveries,
                                                     conv, ret_first, &now, e);
                if (r == 0 || r == -ESTALE) {
                        free(l->stored);
                        l->stored = now;
                } else
                        free(now);
                if (r != -ESTALE)
                        break;
                json_error_t je;
                if (!(stored = json_loads(l->stored, 0, &je))) {
                        free(l->stored);
                        l->stored = NULL; /* read again */
                        continue;
                }
                overlay(l, stored);
        }
        if (r < 0) { /* the caller puts l->obj back: read and merge again next time */
                free(l->stored);
                l->stored = NULL;
        }
        return r;
}

/* The thread of v1_node_log_start_locked: the start (and what was held) appended and streamed,
 * as the agent's thread would have; the flag cleared first, under the lock, so that whoever waits
 * for it (v1_node_start_wait_locked) runs after this append. */
static void *start_main(void *arg) {
        live *l = arg;
        pthread_mutex_lock(&l->lock);
        json_t *evs[1] = {l->start_ev};
        l->start_ev = NULL;
        l->start_pending = false;
        v1_log_server_locked(l, evs, 1);
        pthread_cond_broadcast(&l->start_done);
        pthread_mutex_unlock(&l->lock);
        return NULL;
}

void v1_node_start_wait_locked(live *l) {
        while (l->start_pending)
                pthread_cond_wait(&l->start_done, &l->lock);
}

void v1_node_start_join_locked(live *l) {
        v1_node_start_wait_locked(l);
        if (l->start_joinable) /* done with the lock, it only returns: joined with the lock held */
                pthread_join(l->start_thread, NULL);
        l->start_joinable = false;
}

/* A model request's start is followed by the request, which needs nothing from the log: on a node,
 * whose commit is a round trip and a WAL flush, the two overlap. The events are stamped now, when
 * they happen; the next event of the turn (its answer) waits for this append, so the log's order
 * and each event's durability before it is streamed stay. */
void v1_node_log_start_locked(live *l, json_t *ev) {
        v1_node_start_join_locked(l);
        json_t *evs[1] = {ev};
        if (!ev || !v1_node_mode(l->g)) {
                v1_log_server_locked(l, evs, 1);
                return;
        }
        char now[STORE_TIME_MAX];
        v1_now_time(now);
        size_t i;
        json_t *h;
        json_array_foreach(l->held, i, h) {
                if (!json_object_get(h, "processed_at"))
                        json_object_set_new(h, "processed_at", json_string(now));
        }
        if (!json_object_get(ev, "processed_at"))
                json_object_set_new(ev, "processed_at", json_string(now));
        l->start_ev = ev;
        l->start_pending = true;
        if (pthread_create(&l->start_thread, NULL, start_main, l) != 0) {
                l->start_ev = NULL;
                l->start_pending = false;
                v1_log_server_locked(l, evs, 1);
                return;
        }
        l->start_joinable = true;
}

/* Claim the lease on l's turns for this node (under l->lock; starts: for a message that starts
 * a turn). 0: this node's (a dead node's turn cut first); 503 with *err when it would start a
 * turn but the node runs its --capacity of turns (naming the node with the most room); -EBUSY with *err (409): a live
 * node runs them (messages still go to the log: v1_engine_send); another negative errno with *err (503). One node: 0.
 */
/* 503: this node runs its --capacity of turns; the answer names the live node with the most room. */
static int at_capacity(v1_engine *g, unsigned running, v1_err *err) {
        char other[STORE_ID_MAX], url[NODE_URL_MAX];
        hull_error e = {0};
        if (store_node_roomiest(g->cfg.store, g->cfg.node->id, NODE_LEASE_TTL_MS, other, url, &e) < 0)
                return v1_fail(err, 503, "node_at_capacity",
                               "node %s runs %u turns, its --capacity, and no other node has room: try again later",
                               g->cfg.node->id, running);
        return v1_fail(err, 503, "node_at_capacity",
                       "node %s runs %u turns, its --capacity: send this to node %s (%s), which has room",
                       g->cfg.node->id, running, other, url);
}

int v1_node_claim_locked(live *l, bool starts, v1_err *err) {
        v1_engine *g = l->g;
        if (!v1_node_mode(g))
                return 0;
        store_lease le;
        hull_error e = {0};
        int r = store_lease_claim(g->cfg.store, l->id, g->cfg.node->id, NODE_LEASE_TTL_MS, &le, &e);
        if (r == -EBUSY && le.node_id[0]) {
                v1_fail(err, 409, "session_busy_elsewhere",
                        "session %s's turn runs on node %s (%s): send its events there, or again once it is idle",
                        l->id, le.node_id, le.advertise[0] ? le.advertise : "its URL is unknown");
                return -EBUSY;
        }
        if (r < 0)
                return v1_fail(err, 503, "", "the session's lease could not be taken: %s (try again)", e.msg);
        if (le.dead_node[0])
                v1_node_cut_locked(l, le.dead_node);
        unsigned running = v1_engine_running(g);
        if (!starts || l->running || l->ask_id[0] || running < g->cfg.node->capacity)
                return 0;
        /* at capacity: this node takes no new turn; the answer names the node with the most room */
        (void) store_lease_release(g->cfg.store, l->id, g->cfg.node->id, NULL, &e);
        return at_capacity(g, running, err);
}

/* On a node, messages that would start a turn here (none runs, this node has room): the lease is
 * claimed in their append (store_events_append_claim, one commit); v1_node_claim_locked's long way
 * only when that is refused (another node's lease, or a dead one's). */
bool v1_node_claim_with_append(live *l, bool messages) {
        v1_engine *g = l->g;
        return v1_node_mode(g) && messages && !l->running && !l->resume_ready && !l->ask_id[0] &&
               json_array_size(l->queue) == 0 && v1_engine_running(g) < g->cfg.node->capacity;
}

/* The send's events appended (under l->lock); with together, the lease claimed in the same commit,
 * else (refused) the long way, *foreign set when another node runs the turn. */
int v1_node_append_sent(live *l, json_t *const *evs, size_t n, bool together, bool *foreign, v1_err *err) {
        hull_error e = {0};
        v1_node_start_wait_locked(l); /* before the flags below: the start's append must not see them */
        l->claim_with_append = together;
        l->claim_refused = false;
        int r = v1_log_append_locked(l, evs, n, &e);
        l->claim_with_append = false;
        if (r < 0 && together && l->claim_refused) {
                l->claim_refused = false;
                if ((r = v1_node_claim_locked(l, true, err)) == -EBUSY) {
                        r = 0; /* another node runs the turn: the messages wait in the log for it */
                        *foreign = true;
                }
                if (r < 0)
                        return r;
                v1_mark_waiting(evs, n, l->running || json_array_size(l->queue) > 0 || *foreign);
                memset(&e, 0, sizeof(e));
                r = v1_log_append_locked(l, evs, n, &e);
        }
        return r < 0 ? v1_store_fail(err, &e) : 0;
}

/* On nodes a session.usage is held (v1_log_hold_locked), maybe behind the model request's end that
 * adds to the session's cost: its list_cost is the session's as it is logged (the events before it
 * in its append followed). */
void v1_node_usage_cost(live *l, json_t *ev) {
        json_t *lc = json_object_get(json_object_get(l->obj, "usage"), "list_cost");
        json_t *u = json_object_get(ev, "usage");
        if (lc && json_is_object(u) &&
            strcmp(json_string_value(json_object_get(ev, "type")) ?: "", "session.usage") == 0)
                json_object_set(u, "list_cost", lc);
}

int v1_engine_admit_session(v1_engine *g, v1_err *err) {
        if (!v1_node_mode(g))
                return 0;
        unsigned running = v1_engine_running(g);
        return running < g->cfg.node->capacity ? 0 : at_capacity(g, running, err);
}

/* Remember a session whose lease could not be given back (the database away): the node's thread
 * mends it (mend_all) once the database answers again. */
static void mend_later(v1_engine *g, const char *id) {
        pthread_mutex_lock(&g->lock);
        bool known = false;
        for (size_t i = 0; i < g->n_mend && !known; i++)
                known = strcmp(g->mend[i], id) == 0;
        if (!known && !g->mend)
                g->mend = calloc(NODE_RELEASE_RETRY_MAX, sizeof(*g->mend));
        if (!known && g->mend && g->n_mend < NODE_RELEASE_RETRY_MAX)
                snprintf(g->mend[g->n_mend++], STORE_ID_MAX, "%s", id);
        else if (!known) /* its lease then expires: another node's heartbeat cuts the turn */
                dlog_log(g->cfg.log, DLOG_WARN, "event=node-mend-full session=%s", id);
        pthread_mutex_unlock(&g->lock);
}

/* Give up l's lease when this node has nothing of its turns left (under l->lock). */
void v1_node_release_locked(live *l) {
        v1_engine *g = l->g;
        if (!v1_node_mode(g) || l->running || l->ask_id[0])
                return;
        hull_error e = {0};
        if (store_lease_release(g->cfg.store, l->id, g->cfg.node->id, NULL, &e) < 0) {
                dlog_log(g->cfg.log, DLOG_WARN, "event=node-lease-release-failed session=%s error=\"%s\"", l->id,
                         e.msg);
                mend_later(g, l->id);
        }
}

char *v1_conversation_text(live *l, size_t *ret_len) {
        char *text = NULL;
        int r = agent_conversation_text(l->agent, &text, ret_len);
        if (r < 0)
                dlog_log(l->g->cfg.log, DLOG_WARN, "event=v1-conversation-not-saved session=%s error=\"%s\"", l->id,
                         r == -E2BIG ? "the conversation is too large" : "out of memory");
        return r < 0 ? NULL : text;
}

/* Hand the lease back when the turns are done (under l->lock; worker: the worker asks, its queue
 * empty; else only when no worker runs): unless messages another node queued wait in the log,
 * which then go to l->queue (returns true: the caller runs them). The turn's conversation is in
 * the store already (committed with its idle: v1_conv_prepare, l->conv_pending), so the release
 * carries no text. *ret_released (may be NULL): the lease was given back here. */
bool v1_node_handoff_locked(live *l, bool worker, bool *ret_released) {
        v1_engine *g = l->g;
        hull_error e = {0};
        if (!v1_node_mode(g) || l->ask_id[0] || (!worker && l->running) || g->stopping || l->deleted)
                return false;
        json_t *pending = NULL;
        int r = store_lease_release(g->cfg.store, l->id, g->cfg.node->id, &pending, &e);
        if (r != -EAGAIN) {
                if (r < 0)
                        dlog_log(g->cfg.log, DLOG_WARN, "event=node-lease-release-failed session=%s error=\"%s\"",
                                 l->id, e.msg);
                else if (ret_released)
                        *ret_released = true;
                return false;
        }
        size_t i;
        json_t *ev;
        json_array_foreach(pending, i, ev) {
                char *text = v1_user_message_text(ev);
                json_t *entry =
                        text ? json_pack("{s:s, s:[O]}", "text", text, "queued", json_object_get(ev, "id")) : NULL;
                free(text);
                if (entry)
                        json_array_append_new(l->queue, entry);
                else { /* nothing to say (or no memory): marked processed, never picked up again */
                        json_t *ids = json_pack("[O]", json_object_get(ev, "id"));
                        v1_mark_processed_locked(l, ids);
                        json_decref(ids);
                }
        }
        json_decref(pending);
        dlog_log(g->cfg.log, DLOG_INFO, "event=node-picked-up session=%s messages=%zu", l->id, i);
        return json_array_size(l->queue) > 0 || v1_node_handoff_locked(l, worker, ret_released);
}

/* The turn a dead node ran (its lease is this node's now): session.error and idle, when the
 * session is still running (under l->lock). */
void v1_node_cut_locked(live *l, const char *dead_node) {
        v1_node_sync_locked(l);
        const char *status = json_string_value(json_object_get(l->obj, "status"));
        if (l->running || !status || strcmp(status, "running") != 0)
                return;
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "node %.64s, which ran this turn, stopped (its lease expired); what the turn did after its last "
                 "event is lost: send the message again",
                 dead_node);
        v1_log_failure_locked(l, "unknown_error", msg, true);
        v1_outcomes_cut_locked(l); /* an outcome at work is not graded now */
        dlog_log(l->g->cfg.log, DLOG_WARN, "event=node-turn-cut session=%s dead_node=%s", l->id, dead_node);
}

int v1_engine_sandbox_node(v1_engine *g, const char *session_id, store_owner *ret, const char **ret_self, v1_err *err) {
        *ret_self = v1_node_mode(g) ? g->cfg.node->id : NULL;
        memset(ret, 0, sizeof(*ret));
        if (!v1_node_mode(g))
                return 0;
        hull_error e = {0};
        int r = store_sandbox_owner_get(g->cfg.store, session_id, NODE_LEASE_TTL_MS, ret, &e);
        if (r == -ENOENT || r == -EINVAL)
                return 0;
        if (r < 0)
                return v1_fail(err, 503, "",
                               "which node holds session %.64s's sandbox could not be read: %s (try again)", session_id,
                               e.msg);
        if (strcmp(ret->node_id, g->cfg.node->id) == 0 && ret->alive)
                return 0;
        return ret->alive && ret->advertise[0] ? 1 : -EHOSTDOWN;
}

int v1_engine_send_where(v1_engine *g, const char *session_id, store_owner *ret, const char **ret_self, v1_err *err) {
        live *l = v1_node_mode(g) ? live_find(g, session_id) : NULL;
        if (!l)
                return v1_engine_sandbox_node(g, session_id, ret, ret_self, err);
        *ret_self = g->cfg.node->id;
        memset(ret, 0, sizeof(*ret));
        hull_error e = {0};
        pthread_mutex_lock(&l->lock);
        bool plain = l->running || l->deleted;
        int r = plain ? 0 : sync_with(l, ret, &e);
        bool here = r == 0 && owned_here(g, ret);
        l->presynced = !plain && here; /* the send's own sync takes this read */
        l->presync_thread = pthread_self();
        l->presync_ms = now_mono_ms();
        pthread_mutex_unlock(&l->lock);
        v1_live_unref(l);
        if (plain || (r < 0 && r != -ENOENT)) /* as v1_engine_sandbox_node: its own read */
                return v1_engine_sandbox_node(g, session_id, ret, ret_self, err);
        if (r == -ENOENT || here)
                return 0;
        return ret->alive && ret->advertise[0] ? 1 : -EHOSTDOWN;
}

/* Record that this node holds l's sandbox now (it opened it): requests about it that reach
 * another node are forwarded here. */
void v1_node_own_sandbox(v1_engine *g, const char *session_id) {
        if (!v1_node_mode(g))
                return;
        hull_error e = {0};
        if (store_sandbox_owner_set(g->cfg.store, session_id, g->cfg.node->id, g->cfg.node->instance, &e) < 0)
                dlog_log(g->cfg.log, DLOG_WARN, "event=node-sandbox-owner-not-kept session=%s error=\"%s\"", session_id,
                         e.msg);
}

/* ---- the node's thread ---- */

/* A live session of this node's table (a reference), or NULL. */
static live *live_find(v1_engine *g, const char *id) {
        live *found = NULL;
        pthread_mutex_lock(&g->lock);
        for (live *l = g->lives; l; l = l->next)
                if (strcmp(l->id, id) == 0) {
                        l->refs++;
                        found = l;
                        break;
                }
        pthread_mutex_unlock(&g->lock);
        return found;
}

bool v1_engine_env_id(v1_engine *g, const char *session_id, char *buf, size_t size) {
        live *l = live_find(g, session_id);
        if (!l)
                return false;
        pthread_mutex_lock(&l->lock);
        bool known = !l->deleted;
        snprintf(buf, size, "%s",
                 l->env_not_hosted ? "" : json_string_value(json_object_get(l->obj, "environment_id")) ?: "");
        pthread_mutex_unlock(&l->lock);
        v1_live_unref(l);
        return known;
}

void v1_engine_env_not_hosted(v1_engine *g, const char *session_id) {
        live *l = live_find(g, session_id);
        if (!l)
                return;
        pthread_mutex_lock(&l->lock);
        l->env_not_hosted = true;
        pthread_mutex_unlock(&l->lock);
        v1_live_unref(l);
}

static void wake(void *ud, const char *session_id, int64_t seq) {
        live *l = live_find(ud, session_id);
        if (!l)
                return;
        pthread_mutex_lock(&l->lock);
        if (seq > l->last_seq && l->watches)
                v1_node_sync_locked(l);
        pthread_mutex_unlock(&l->lock);
        v1_live_unref(l);
}

/* A session watched here that another node deleted (its row is gone): its streams get
 * session.deleted and end, as on the node that deleted it, and it leaves the table. Not while this
 * node runs its turn (the turn's next write fails and ends it). */
static void gone(v1_engine *g, live *l) {
        pthread_mutex_lock(&l->lock);
        if (l->running || l->deleted) {
                pthread_mutex_unlock(&l->lock);
                return;
        }
        l->deleted = true;
        json_array_clear(l->queue);
        json_auto_t *ev = json_pack("{s:s, s:s}", "type", "session.deleted", "id", l->id);
        if (ev) {
                char now[STORE_TIME_MAX];
                v1_now_time(now);
                json_object_set_new(ev, "processed_at", json_string(now));
        }
        v1_watches_end(l, ev);
        pthread_mutex_unlock(&l->lock);
        dlog_log(g->cfg.log, DLOG_INFO, "event=node-session-gone session=%s", l->id);
        pthread_mutex_lock(&g->lock);
        for (live **p = &g->lives; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        l->refs--;
                        break;
                }
        pthread_mutex_unlock(&g->lock);
}

/* The fallback: every session watched here, synced (a NOTIFY lost across a reconnect). */
static void poll_all(v1_engine *g) {
        pthread_mutex_lock(&g->lock);
        size_t n = 0;
        for (live *l = g->lives; l; l = l->next)
                n += l->watches != NULL;
        live **list = calloc(n ? n : 1, sizeof(*list));
        size_t k = 0;
        for (live *l = g->lives; list && l && k < n; l = l->next)
                if (l->watches) {
                        l->refs++;
                        list[k++] = l;
                }
        pthread_mutex_unlock(&g->lock);
        for (size_t i = 0; i < k; i++) {
                int64_t last = 0;
                hull_error e = {0};
                int r = store_events_last_seq(g->cfg.store, list[i]->id, &last, &e);
                bool behind = r == 0;
                if (r == -ENOENT)
                        gone(g, list[i]);
                pthread_mutex_lock(&list[i]->lock);
                if (behind && last > list[i]->last_seq) /* one cheap read, the sync only when needed */
                        v1_node_sync_locked(list[i]);
                pthread_mutex_unlock(&list[i]->lock);
                v1_live_unref(list[i]);
        }
        free(list);
}

/* The leases of dead nodes: each turn cut, each lease given up. */
static void reap(v1_engine *g) {
        hull_error e = {0};
        json_t *taken = NULL;
        if (store_leases_reap(g->cfg.store, g->cfg.node->id, NODE_LEASE_TTL_MS, &taken, &e) < 0) {
                dlog_log(g->cfg.log, DLOG_WARN, "event=node-reap-failed error=\"%s\"", e.msg);
                return;
        }
        size_t i;
        json_t *t;
        json_array_foreach(taken, i, t) {
                const char *id = json_string_value(json_object_get(t, "session_id"));
                live *l = NULL;
                v1_err err = {0};
                if (v1_live_get(g, id, &l, &err) < 0)
                        continue;
                pthread_mutex_lock(&l->lock);
                v1_node_cut_locked(l, json_string_value(json_object_get(t, "dead_node")));
                v1_node_release_locked(l);
                pthread_mutex_unlock(&l->lock);
                v1_live_unref(l);
        }
        json_decref(taken);
}

/* The sessions whose turn ended here while the database was away: a turn whose end was not
 * written (the stored session still running) is ended with session.error and idle, as a dead
 * node's; then the lease goes. Those that still fail stay for the next heartbeat. */
static void mend_all(v1_engine *g) {
        char id[STORE_ID_MAX];
        pthread_mutex_lock(&g->lock);
        size_t n = g->n_mend;
        pthread_mutex_unlock(&g->lock);
        for (size_t k = 0; k < n; k++) {
                pthread_mutex_lock(&g->lock);
                if (g->n_mend == 0) {
                        pthread_mutex_unlock(&g->lock);
                        return;
                }
                snprintf(id, sizeof(id), "%s", g->mend[0]); /* take the first out; put back when it fails */
                memmove(g->mend, g->mend + 1, (g->n_mend - 1) * sizeof(*g->mend));
                g->n_mend--;
                pthread_mutex_unlock(&g->lock);
                live *l = NULL;
                v1_err err = {0};
                if (v1_live_get(g, id, &l, &err) < 0) {
                        if (err.status == 404) /* deleted meanwhile: its lease went with it */
                                continue;
                        mend_later(g, id);
                        continue;
                }
                pthread_mutex_lock(&l->lock);
                if (!l->running && !l->ask_id[0]) {
                        v1_node_sync_locked(l);
                        const char *status = json_string_value(json_object_get(l->obj, "status"));
                        if (status && strcmp(status, "running") == 0) {
                                v1_log_failure_locked(l, "unknown_error",
                                                      "the database could not be reached while this turn ran: what "
                                                      "it did after its last event is lost: send the message again",
                                                      true);
                                dlog_log(g->cfg.log, DLOG_WARN, "event=node-turn-mended session=%s", l->id);
                        }
                        v1_node_release_locked(l); /* fails again: back on the list */
                }
                pthread_mutex_unlock(&l->lock);
                v1_live_unref(l);
        }
}

static void beat(v1_engine *g) {
        hull_error e = {0};
        int r = store_node_beat(g->cfg.store, g->cfg.node->id, g->cfg.node->instance, NODE_LEASE_TTL_MS,
                                v1_engine_running(g), &e);
        if (r == -ESTALE) {
                dlog_log(g->cfg.log, DLOG_ERROR, "event=node-taken-for-dead node=%s msg=\"joining again\"",
                         g->cfg.node->id);
                r = store_node_join(g->cfg.store, g->cfg.node, NODE_LEASE_TTL_MS, &e);
        }
        if (r < 0)
                dlog_log(g->cfg.log, DLOG_WARN, "event=node-heartbeat-failed node=%s error=\"%s\"", g->cfg.node->id,
                         e.msg);
}

static void *node_main(void *arg) {
        v1_engine *g = arg;
        uint64_t next_beat = 0, next_poll = 0;
        while (!v1_engine_stopping(g)) {
                uint64_t now = now_mono_ms();
                if (now >= next_beat) {
                        beat(g);
                        reap(g);
                        mend_all(g);
                        next_beat = now + NODE_HEARTBEAT_MS;
                }
                if (now >= next_poll) {
                        poll_all(g);
                        next_poll = now + NODE_POLL_MS;
                }
                uint64_t until = next_poll < next_beat ? next_poll : next_beat;
                int wait = until > now ? (int) (until - now) : 0;
                hull_error e = {0};
                if (store_events_wait(g->cfg.store, wait > 200 ? 200 : wait, wake, g, &e) < 0) {
                        struct timespec ts = {0, 200 * 1000 * 1000}; /* PostgreSQL away: not a busy loop */
                        nanosleep(&ts, NULL);
                }
        }
        return NULL;
}

int v1_node_start(v1_engine *g, hull_error *e) {
        if (!v1_node_mode(g))
                return 0;
        if (pthread_create(&g->node_thread, NULL, node_main, g) != 0)
                return hull_err(e, -EAGAIN, "v1: cannot start the node's thread");
        g->node_started = true;
        return 0;
}

void v1_node_stop(v1_engine *g) {
        if (!g->node_started)
                return;
        pthread_join(g->node_thread, NULL);
        g->node_started = false;
        hull_error e = {0};
        if (store_node_leave(g->cfg.store, g->cfg.node->id, g->cfg.node->instance, &e) < 0)
                dlog_log(g->cfg.log, DLOG_WARN, "event=node-leave-failed error=\"%s\"", e.msg);
}
