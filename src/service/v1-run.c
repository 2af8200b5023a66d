/* v1-run.c: see v1-run.h. The table of live sessions, the log, the worker and the API's calls;
 * watchers are in v1-stream.c, the agent in v1-agent.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "bus.h"
#include "dynbuf.h"
#include "egress.h"
#include "env-layer.h"
#include "home.h"
#include "macro.h"
#include "mcp-client.h"
#include "mcp-tools.h"
#include "model.h"
#include "sbx-net.h"
#include "time-util.h"
#include "tool-web.h"
#include "v1-run-internal.h"
#include "v1-webhook.h"

void v1_id_new(const char *prefix, char ret[static STORE_ID_MAX]) {
        static const char b32[] = "0123456789abcdefghjkmnpqrstvwxyz";
        uint8_t r[26];
        if (getrandom(r, sizeof(r), 0) != (ssize_t) sizeof(r)) { /* never on Linux >= 3.17 with a seeded pool */
                uint64_t t = now_mono_us() ^ ((uint64_t) (uintptr_t) ret << 17);
                for (size_t i = 0; i < sizeof(r); i++)
                        r[i] = (uint8_t) (t >> (i % 8 * 8)) ^ (uint8_t) i;
        }
        size_t n = (size_t) snprintf(ret, STORE_ID_MAX, "%s", prefix);
        for (size_t i = 0; i < sizeof(r) && n + 1 < STORE_ID_MAX; i++)
                ret[n++] = b32[r[i] & 31];
        ret[n] = '\0';
}

void v1_now_time(char ret[static STORE_TIME_MAX]) {
        store_now_rfc3339(ret);
}

int v1_store_fail(v1_err *err, const hull_error *e) {
        return v1_fail(err, 500, "", "the event log could not be written: %s (nothing was stored; try again)",
                       e->msg[0] ? e->msg : "unknown error");
}

/* ---- the log ---- */

static void add_int(json_t *o, const char *key, json_int_t n) {
        json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) + n));
}

/* Add a model_usage-shaped object (a model request's or a grading call's) to the session's usage. */
static void usage_add(json_t *o, const json_t *u) {
        json_t *su = json_object_get(o, "usage");
        if (!json_is_object(u))
                return;
        if (!json_is_object(su)) {
                su = json_object();
                json_object_set_new(o, "usage", su);
        }
        add_int(su, "input_tokens", json_integer_value(json_object_get(u, "input_tokens")));
        add_int(su, "output_tokens", json_integer_value(json_object_get(u, "output_tokens")));
        add_int(su, "cache_read_input_tokens", json_integer_value(json_object_get(u, "cache_read_input_tokens")));
        json_t *cc = json_object_get(su, "cache_creation");
        if (!json_is_object(cc)) {
                cc = json_object();
                json_object_set_new(su, "cache_creation", cc);
        }
        add_int(cc, "ephemeral_5m_input_tokens", json_integer_value(json_object_get(u, "cache_creation_input_tokens")));
}

/* The session object follows an event (under l->lock). Returns true when it changed. Its usage
 * sums every model request (span.model_request_end) and grading call (span.outcome_evaluation_end)
 * as it ends, so a budget is measured step by step. */
static bool follow(live *l, const json_t *ev, const char *now) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        json_t *o = l->obj;
        if (!type || !o)
                return false;
        bool changed = v1_outcome_follow(o, ev, type, now);
        if (strcmp(type, "session.status_running") == 0) {
                if (!l->turn_started_ms)
                        l->turn_started_ms = now_mono_ms();
                json_object_set_new(o, "status", json_string("running"));
        } else if (strcmp(type, "session.status_rescheduled") == 0)
                json_object_set_new(o, "status", json_string("rescheduling"));
        else if (strcmp(type, "session.status_idle") == 0 || strcmp(type, "session.status_terminated") == 0) {
                json_object_set_new(o, "status", json_string(type[15] == 'i' ? "idle" : "terminated"));
                json_t *stats = json_object_get(o, "stats");
                if (json_is_object(stats) && l->turn_started_ms) {
                        double active = json_number_value(json_object_get(stats, "active_seconds"));
                        active += (double) (now_mono_ms() - l->turn_started_ms) / 1000.0;
                        json_object_set_new(stats, "active_seconds", json_real(active));
                }
                l->turn_started_ms = 0;
        } else if (strcmp(type, "span.model_request_end") == 0 || strcmp(type, "span.outcome_evaluation_end") == 0) {
                usage_add(o, json_object_get(ev, type[5] == 'm' ? "model_usage" : "usage"));
                v1_usage_price(&l->g->cfg, o);
        } else if (!changed)
                return false;
        json_object_set_new(o, "updated_at", json_string(now));
        return true;
}

/* Can follow() change l->obj for ev? Its status types, the ends whose usage it sums, an outcome's
 * definition and any event naming an outcome (v1_outcome_follow): true for every event for which
 * follow() returns true. The others (a model request's start, tool calls and results, messages)
 * leave the object as it is: no copy of it is needed to put back. */
static bool may_follow(const json_t *ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (!type)
                return false;
        return strncmp(type, "session.status_", 15) == 0 || strcmp(type, "span.model_request_end") == 0 ||
               strcmp(type, "span.outcome_evaluation_end") == 0 || strcmp(type, "user.define_outcome") == 0 ||
               json_is_string(json_object_get(ev, "outcome_id"));
}

/* l->obj stored (on nodes with what another node changed meanwhile; under l->lock). */
static void store_session_locked(live *l) {
        hull_error ue = {0};
        v1_node_merge_locked(l); /* what another node changed meanwhile stays */
        if (store_update(l->g->cfg.store, STORE_SESSION, l->obj, &ue) < 0)
                dlog_log(l->g->cfg.log, DLOG_WARN, "event=v1-session-update-failed session=%s error=\"%s\"", l->id,
                         ue.msg);
}

/* Log events (each gets an id unless it has one, and its processed_at), then tell the
 * watchers (under l->lock). Returns 0, or -1 with *e (nothing logged). */
static int append_now(live *l, json_t *const *evs, size_t n, hull_error *e) {
        char now[STORE_TIME_MAX];
        v1_now_time(now);
        for (size_t i = 0; i < n; i++) {
                if (!json_is_string(json_object_get(evs[i], "id"))) {
                        char id[STORE_ID_MAX];
                        v1_id_new("sevt_", id);
                        json_object_set_new(evs[i], "id", json_string(id));
                }
                if (!json_object_get(evs[i], "processed_at")) /* null: queued behind the turn that runs */
                        json_object_set_new(evs[i], "processed_at", json_string(now));
        }
        /* whoever sees session.status_idle and asks finds the session idle: the object is written
         * in the append's own transaction (one commit; put back when it fails): on nodes by
         * v1_node_append_locked (another node's stream sees the events at its commit), else by
         * store_events_append_object. It follows the events before the append: a session.usage
         * held behind a model request's end (v1_log_hold_locked) carries the cost with it. */
        bool node = v1_node_mode(l->g), changed = false;
        bool may = false; /* copied only when an event may change it: a deep copy each append was ~5% of a turn's CPU */
        for (size_t i = 0; i < n && !may; i++)
                may = may_follow(evs[i]);
        json_auto_t *before = may ? json_deep_copy(l->obj) : NULL;
        l->n_appends++;
        l->n_obj_copies += may;
        for (size_t i = 0; i < n; i++) {
                v1_node_usage_cost(l, evs[i]);
                changed |= follow(l, evs[i], now);
        }
        /* the webhooks of the status changes (v1_webhook_session_types): on nodes queued in the
         * append's own statement (one commit, atomic with the events), else after the fan-out */
        bool announced = l->budget_announced;
        _cleanup_free_ const char **wh = calloc(n * V1_WEBHOOK_PER_EVENT_MAX + 1, sizeof(*wh));
        size_t k = 0;
        for (size_t i = 0; wh && i < n; i++)
                k += v1_webhook_session_types(evs[i], &announced, wh + k);
        json_auto_t *queue = node && changed && !l->claim_with_append && k ? json_array() : NULL;
        for (size_t i = 0; queue && i < k; i++)
                (void) v1_webhook_delivery(wh[i], l->id, queue, NULL);
        _cleanup_free_ char *deliveries = queue ? json_dumps(queue, JSON_COMPACT) : NULL;
        int64_t seq = 0;
        int r;
        _cleanup_free_ char **texts = NULL; /* its strings the store's on failure (none given), else freed below */
        if (l->claim_with_append) {         /* the message that starts a turn: the lease claimed in its commit */
                r = changed ? hull_fail(e, -EBUSY, "v1: the session object changes: the lease is claimed first")
                            : store_events_append_claim(l->g->cfg.store, l->id, evs, n, l->g->cfg.node->id,
                                                        NODE_LEASE_TTL_MS, &seq, e);
                l->claim_refused = r == -EBUSY;
        } else if (changed && node) { /* the conversation goes with the session row (the idle's append) */
                r = v1_node_append_locked(l, evs, n, deliveries, l->conv_pending, &seq, e);
                l->conv_pending = NULL; /* taken (conv_pending->result: committed or not) */
        } else { /* SQLite: the events' texts as stored go to the streams too (one json_dumps each, not two) */
                texts = l->watches ? calloc(n, sizeof(*texts)) : NULL;
                r = store_events_append_object(l->g->cfg.store, l->id, evs, n, changed ? l->obj : NULL,
                                               node ? NULL : l->conv_pending, texts, &seq, e);
                if (!node)                      /* (on nodes left for the idle's append) */
                        l->conv_pending = NULL; /* taken (conv_pending->result: committed or not) */
                if (r == -EOPNOTSUPP && (r = store_events_append(l->g->cfg.store, l->id, evs, n, &seq, e)) == 0 &&
                    changed)
                        store_session_locked(l); /* a store without the one transaction: after */
        }
        if (r < 0) {
                if (changed && before) {
                        json_decref(l->obj);
                        l->obj = TAKE_PTR(before);
                }
                return r;
        }
        l->last_seq = seq + (int64_t) n - 1;
        for (size_t i = 0; i < n; i++)
                v1_fanout_text(l, seq + (int64_t) i, evs[i], texts ? texts[i] : NULL, false);
        for (size_t i = 0; texts && i < n; i++)
                free(texts[i]);
        l->budget_announced = announced;
        for (size_t i = 0; !deliveries && i < k; i++) /* durable now (and streamed first) */
                (void) v1_webhook_emit(l->g->cfg.store, wh[i], l->id, NULL, NULL);
        return 0;
}

/* The events held (v1_log_hold_locked) first, in the same append: one commit. */
int v1_log_append_locked(live *l, json_t *const *evs, size_t n, hull_error *e) {
        v1_node_start_wait_locked(l); /* a model request's start, still being committed, goes first */
        size_t k = json_array_size(l->held);
        if (k == 0)
                return append_now(l, evs, n, e);
        _cleanup_free_ json_t **all = calloc(k + n, sizeof(*all));
        if (!all)
                return hull_err(e, -ENOMEM, "v1: out of memory");
        for (size_t i = 0; i < k; i++)
                all[i] = json_array_get(l->held, i);
        for (size_t i = 0; i < n; i++)
                all[k + i] = evs[i];
        int r = append_now(l, all, k + n, e);
        if (r == 0) /* kept on failure: tried again with the next append */
                json_array_clear(l->held);
        return r;
}

void v1_log_hold_locked(live *l, json_t *ev) {
        if (ev && (l->held || (l->held = json_array())) && json_array_size(l->held) < V1_HELD_MAX &&
            json_array_append_new(l->held, ev) == 0)
                return;
        json_t *evs[1] = {ev};
        v1_log_server_locked(l, evs, 1);
}

void v1_log_flush_locked(live *l) {
        if (json_array_size(l->held) > 0)
                v1_log_server_locked(l, NULL, 0);
}

/* Log events the server makes (steals the references; under l->lock). */
void v1_log_server_locked(live *l, json_t *const *evs, size_t n) {
        hull_error e = {0};
        bool ok = true;
        for (size_t i = 0; i < n; i++)
                ok &= evs[i] != NULL;
        if (!ok || v1_log_append_locked(l, evs, n, &e) < 0)
                dlog_log(l->g->cfg.log, DLOG_ERROR, "event=v1-log-failed session=%s error=\"%s\"", l->id,
                         ok ? e.msg : "out of memory");
        for (size_t i = 0; i < n; i++)
                json_decref(evs[i]);
}

/* A turn that could not run: session.error (naming the MCP server when server is not NULL), then
 * idle. */
void v1_log_failure_server_locked(live *l, const char *type, const char *msg, bool running, const char *server) {
        json_t *evs[3];
        size_t n = 0;
        if (!running)
                evs[n++] = json_pack("{s:s}", "type", "session.status_running");
        evs[n++] = json_pack("{s:s, s:{s:s, s:s, s:{s:s}}}", "type", "session.error", "error", "type", type, "message",
                             msg, "retry_status", "type", "terminal");
        if (evs[n - 1] && server)
                json_object_set_new(json_object_get(evs[n - 1], "error"), "mcp_server_name", json_string(server));
        evs[n++] = json_pack("{s:s, s:{s:s}, s:n}", "type", "session.status_idle", "stop_reason", "type", "end_turn",
                             "stop_details");
        v1_log_server_locked(l, evs, n);
}

void v1_log_failure_locked(live *l, const char *type, const char *msg, bool running) {
        v1_log_failure_server_locked(l, type, msg, running, NULL);
}

/* ---- the table ---- */

void v1_live_free(live *l) {
        v1_watches_end(l, NULL);
        if (l->agent)
                agent_free(l->agent);
        if (l->bus)
                bus_free(l->bus);
        if (l->model)
                model_client_free(l->model);
        if (l->box && l->g->cfg.ss) {
                ss_close_info ci;
                ss_close(l->g->cfg.ss, l->box, &ci);
                ss_unref(l->g->cfg.ss, l->box);
        }
        v1_tools_drop(l);
        v1_memory_mounts_free(l->mem);
        v1_inputs_free(l);
        json_decref(l->obj);
        free(l->stored);
        free(l->kept);
        json_decref(l->agent_pins);
        json_decref(l->queue);
        json_decref(l->stash);
        json_decref(l->held);
        json_decref(l->outcome);
        json_decref(l->start_ev);
        pthread_cond_destroy(&l->start_done);
        pthread_cond_destroy(&l->wake);
        pthread_mutex_destroy(&l->lock);
        free(l);
}

void v1_live_unref(live *l) {
        if (!l)
                return;
        v1_engine *g = l->g;
        pthread_mutex_lock(&g->lock);
        bool last = --l->refs == 0;
        pthread_mutex_unlock(&g->lock);
        if (last) {
                if (l->joinable)
                        pthread_join(l->worker, NULL);
                v1_live_free(l);
        }
}
void v1_live_unrefp(live **l) {
        v1_live_unref(*l);
}

/* The live state of a session (a reference), made from the store when there is none. -ENOENT
 * (404) when the store has no such session. */
int v1_live_get(v1_engine *g, const char *id, live **ret, v1_err *err) {
        pthread_mutex_lock(&g->lock);
        for (live *l = g->lives; l; l = l->next)
                if (strcmp(l->id, id) == 0) {
                        l->refs++;
                        pthread_mutex_unlock(&g->lock);
                        if (v1_node_mode(g)) { /* another node may have changed it */
                                pthread_mutex_lock(&l->lock);
                                if (!v1_node_presynced(l))
                                        v1_node_sync_locked(l);
                                pthread_mutex_unlock(&l->lock);
                        }
                        *ret = l;
                        return 0;
                }
        pthread_mutex_unlock(&g->lock);

        hull_error e = {0};
        json_t *obj = NULL;
        int r = store_get(g->cfg.store, STORE_SESSION, id, 0, &obj, &e);
        if (r == -ENOENT)
                return v1_fail(err, 404, "session_not_found", "no session %.64s (GET /v1/sessions lists them)", id);
        if (r < 0)
                return v1_fail(err, 500, "", "the session could not be read: %s", e.msg);
        int64_t last = 0;
        if (store_events_last_seq(g->cfg.store, id, &last, &e) < 0) {
                json_decref(obj);
                return v1_fail(err, 500, "", "the session's log could not be read: %s", e.msg);
        }
        live *l = calloc(1, sizeof(*l));
        if (!l) {
                json_decref(obj);
                return v1_fail(err, 500, "", "out of memory");
        }
        pthread_mutex_init(&l->lock, NULL);
        pthread_cond_init(&l->start_done, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&l->wake, &ca);
        pthread_condattr_destroy(&ca);
        l->g = g;
        snprintf(l->id, sizeof(l->id), "%s", id);
        snprintf(l->principal, sizeof(l->principal), "v1:%s", id);
        l->obj = obj;
        l->last_seq = last;
        l->queue = json_array();
        l->stash = json_array();
        l->refs = 2; /* the table's and the caller's */

        pthread_mutex_lock(&g->lock);
        for (live *o = g->lives; o; o = o->next) /* another thread made it meanwhile */
                if (strcmp(o->id, id) == 0) {
                        o->refs++;
                        pthread_mutex_unlock(&g->lock);
                        l->refs = 1;
                        v1_live_unref(l);
                        *ret = o;
                        return 0;
                }
        l->next = g->lives;
        g->lives = l;
        pthread_mutex_unlock(&g->lock);
        *ret = l;
        return 0;
}

/* ---- the worker ---- */

static json_t *stash_take(live *l, const char *id) {
        size_t i;
        json_t *ev;
        json_array_foreach(l->stash, i, ev) {
                const char *k = json_string_value(json_object_get(ev, "tool_use_id"))
                                        ?: json_string_value(json_object_get(ev, "custom_tool_use_id"));
                if (k && strcmp(k, id) == 0) {
                        json_t *t = json_incref(ev);
                        json_array_remove(l->stash, i);
                        return t;
                }
        }
        return NULL;
}

static char *result_text(const json_t *ev) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, V1_TEXT_MAX);
        size_t i;
        json_t *blk;
        json_array_foreach(json_object_get(ev, "content"), i, blk) {
                const char *t = json_string_value(json_object_get(blk, "text"));
                if (t && (dynbuf_addf(&b, "%s%s", b.len ? "\n" : "", t) < 0))
                        break;
        }
        return strdup(b.len ? b.buf : "");
}

/* Apply a decision or a result to the paused call (under l->lock, the agent not running).
 * Returns 0 when it matched. */
static int apply_locked(live *l, const json_t *ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        hull_error e = {0};
        int r;
        if (!l->agent || !l->ask_id[0])
                return -ENOENT;
        if (strcmp(type, "user.tool_confirmation") == 0) {
                bool allow = strcmp(json_string_value(json_object_get(ev, "result")) ?: "", "allow") == 0;
                r = agent_decide(l->agent, l->ask_id, allow, json_string_value(json_object_get(ev, "deny_message")),
                                 &e);
        } else {
                _cleanup_free_ char *text = result_text(ev);
                r = agent_supply(l->agent, l->ask_id, text, json_is_true(json_object_get(ev, "is_error")), &e);
        }
        if (r < 0)
                return r;
        l->ask_id[0] = '\0';
        l->resume_ready = true;
        return 0;
}

/* End the paused call without running it (an interrupt, a new message instead). */
static void drop_paused_locked(live *l, const char *why) {
        if (!l->agent || !l->ask_id[0])
                return;
        hull_error e = {0};
        if (l->ask_client)
                (void) agent_supply(l->agent, l->ask_id, why, true, &e);
        else
                (void) agent_decide(l->agent, l->ask_id, false, why, &e);
        l->ask_id[0] = '\0';
        l->resume_ready = true;
}

/* The events of a message that waited for the turn before it: processed now. */
void v1_mark_processed_locked(live *l, const json_t *ids) {
        char now[STORE_TIME_MAX];
        v1_now_time(now);
        size_t i;
        json_t *id;
        json_array_foreach(ids, i, id) {
                hull_error e = {0};
                if (store_events_set_processed(l->g->cfg.store, l->id, json_string_value(id), now, &e) < 0)
                        dlog_log(l->g->cfg.log, DLOG_WARN, "event=v1-processed-at-not-set session=%s error=\"%s\"",
                                 l->id, e.msg);
        }
}

/* Past V1_AGENTS_KEPT_MAX sessions holding an agent in memory, the one idle longest (no turn,
 * no pause) lets its agent and model client go; its conversation is in the store, and its next
 * turn makes them again. Never under a session's lock. */
static void evict(v1_engine *g, live *self) {
        live *victim = NULL;
        unsigned n = 0;
        pthread_mutex_lock(&g->lock);
        for (live *l = g->lives; l; l = l->next) {
                if (!l->agent)
                        continue;
                n++;
                if (l != self && !l->running && !l->ask_id[0] && (!victim || l->used_ms < victim->used_ms))
                        victim = l;
        }
        if (n <= V1_AGENTS_KEPT_MAX || !victim) {
                pthread_mutex_unlock(&g->lock);
                return;
        }
        victim->refs++;
        pthread_mutex_unlock(&g->lock);
        pthread_mutex_lock(&victim->lock);
        if (!victim->running && !victim->ask_id[0] && victim->agent) {
                agent_free(TAKE_PTR(victim->agent));
                model_client_free(TAKE_PTR(victim->model));
                free(TAKE_PTR(victim->kept)); /* (its next turn writes the conversation whole) */
        }
        pthread_mutex_unlock(&victim->lock);
        v1_live_unref(victim);
}

/* Forget the messages that waited (each marked processed: nothing will answer it). */
static void drop_queue_locked(live *l) {
        size_t i;
        json_t *entry;
        json_array_foreach(l->queue, i, entry) v1_mark_processed_locked(l, json_object_get(entry, "queued"));
        json_array_clear(l->queue);
}

/* The answer of an outcome's turn is graded, unless the budget is spent: then no grading call is
 * made, the session idles with budget_reached and the outcome stays open (raising the budget
 * resumes the turn, whose answer is graded then). */
static void grade_or_stop(live *l, agent_turn_result *res) {
        pthread_mutex_lock(&l->lock);
        bool spent = v1_budget_reached(&l->g->cfg, l->obj);
        if (spent) {
                json_t *idle[1] = {json_pack("{s:s, s:{s:s}, s:n}", "type", "session.status_idle", "stop_reason",
                                             "type", "budget_reached", "stop_details")};
                v1_log_server_locked(l, idle, 1);
                res->stop = AGENT_STOP_BUDGET;
        }
        pthread_mutex_unlock(&l->lock);
        if (!spent)
                (void) v1_outcome_grade(l, res->text);
}

/* The turn's end as the session's other users see it: what was held logged, the worker no longer
 * running (under l->lock). */
static void turn_end_locked(live *l) {
        v1_log_flush_locked(l);
        v1_node_start_join_locked(l);
        dlog_log(l->g->cfg.log, DLOG_DEBUG,
                 "event=v1-turn-appends session=%s appends=%u object_copies=%u stream_dumps=%u", l->id, l->n_appends,
                 l->n_obj_copies, l->n_fan_dumps);
        l->n_appends = l->n_obj_copies = l->n_fan_dumps = 0;
        l->running = false;
        l->used_ms = now_mono_ms();
}

/* Outside nodes mode (where the session's lease goes back at once), a worker with nothing left to
 * do waits up to V1_WORKER_LINGER_MS for the session's next message before it ends: a turn that
 * follows another soon starts no thread (its start, and its stack given back at its end, were on
 * every turn's path). The turn has ended for everyone else meanwhile (running false; an idle
 * agent may be evicted). Returns whether kick_locked handed it work (running again), under
 * l->lock; false also at shutdown or when the session is deleted. */
static bool park_locked(live *l) {
        v1_engine *g = l->g;
        if (v1_node_mode(g) || g->stopping || l->deleted)
                return false;
        turn_end_locked(l);
        l->parked = true;
        pthread_mutex_unlock(&l->lock);
        evict(g, l);
        pthread_mutex_lock(&l->lock);
        struct timespec until = timespec_after_ms(CLOCK_MONOTONIC, V1_WORKER_LINGER_MS);
        while (!l->running && !g->stopping && !l->deleted)
                if (pthread_cond_timedwait(&l->wake, &l->lock, &until) == ETIMEDOUT)
                        break;
        l->parked = false;
        return l->running;
}

static void *worker_main(void *arg) {
        live *l = arg;
        v1_engine *g = l->g;
        bool released = false;
        pthread_mutex_lock(&l->lock);
        for (;;) {
                if (g->stopping || l->deleted)
                        break;
                bool resume = l->resume_ready;
                _cleanup_free_ char *text = NULL;
                if (resume)
                        l->resume_ready = false;
                else if (json_array_size(l->queue) > 0) {
                        json_t *entry = json_array_get(l->queue, 0);
                        text = strdup(json_string_value(json_object_get(entry, "text")));
                        if (json_object_get(entry, "outcome")) { /* the outcome this turn works toward */
                                json_decref(l->outcome);
                                l->outcome = json_incref(json_object_get(entry, "outcome"));
                        }
                        l->budget_stopped = false;
                        v1_mark_processed_locked(l, json_object_get(entry, "queued"));
                        json_array_remove(l->queue, 0);
                        atomic_store(&l->interrupt, false);
                        if (!text)
                                continue;
                } else {
                        if (park_locked(l))
                                continue;
                        if (v1_node_handoff_locked(l, true, &released)) /* queued on other nodes */
                                continue;
                        break;
                }
                l->hold_running = !resume; /* committed with the model request's start */
                pthread_mutex_unlock(&l->lock);

                hull_error e = {0};
                const char *etype = "unknown_error";
                agent_turn_result res = {0};
                int r = v1_agent_ready(l, &etype, &e);
                if (r >= 0)
                        r = v1_inputs_apply(l, &etype, &e);
                if (r >= 0)
                        r = resume ? agent_resume(l->agent, &l->interrupt, &res, &e)
                                   : agent_turn(l->agent, text, &l->interrupt, &res, &e);
                /* the conversation goes into the session's next append: the one that logs the idle
                 * the agent left held, or one before it (one commit for both; on nodes one that
                 * writes the session row, as the idle's does), so a node that dies after the idle
                 * leaves the turn in the conversation too */
                v1_conv_save conv = {0};
                bool conv_now = false;
                if (r >= 0) {
                        if ((conv_now = v1_conv_prepare(l, &conv))) {
                                pthread_mutex_lock(&l->lock);
                                l->conv_pending = &conv.w;
                                pthread_mutex_unlock(&l->lock);
                        }
                        if (l->outcome && res.stop == AGENT_STOP_END_TURN) /* its idle waits for the verdict */
                                grade_or_stop(l, &res);
                }
                pthread_mutex_lock(&l->lock);
                l->hold_running = false;
                v1_log_flush_locked(l); /* what the agent's last events left held */
                if (conv_now) {
                        l->conv_pending = NULL; /* written here when no append took it */
                        v1_conv_finish(l, &conv);
                }
                if (r >= 0 && l->outcome && res.stop != AGENT_STOP_END_TURN && res.stop != AGENT_STOP_REQUIRES_ACTION &&
                    res.stop != AGENT_STOP_BUDGET) {
                        char why[128];
                        snprintf(why, sizeof(why), "the turn ended before an answer could be graded (%s)",
                                 agent_stop_to_string(res.stop));
                        v1_outcome_close_locked(l, res.stop == AGENT_STOP_INTERRUPTED ? "interrupted" : "failed", why);
                }
                if (r >= 0)
                        l->budget_stopped = res.stop == AGENT_STOP_BUDGET;
                if (strcmp(json_string_value(json_object_get(l->obj, "status")) ?: "", "terminated") == 0) {
                        drop_queue_locked(l); /* a terminated session takes no more turns */
                        v1_outcome_close_locked(l, "failed", "the session was terminated");
                        agent_turn_result_done(&res);
                        break;
                }
                if (r < 0 && (r == -ECANCELED || e.err == -ECANCELED) && atomic_load(&l->interrupt)) {
                        /* interrupted while the agent's MCP servers were connecting: no error, the
                         * turn just ends (the next one connects again) */
                        json_t *evs[2] = {json_pack("{s:s}", "type", "session.status_running"),
                                          json_pack("{s:s, s:{s:s}, s:n}", "type", "session.status_idle", "stop_reason",
                                                    "type", "end_turn", "stop_details")};
                        v1_log_server_locked(l, evs, 2);
                        l->mcp_failed[0] = '\0';
                        agent_turn_result_done(&res);
                        continue;
                }
                if (r < 0) {
                        char msg[HULL_ERROR_MSG_MAX + 64];
                        snprintf(msg, sizeof(msg), "the turn could not run: %s", e.msg);
                        v1_log_failure_server_locked(l, etype, msg, false, l->mcp_failed[0] ? l->mcp_failed : NULL);
                        l->mcp_failed[0] = '\0';
                        agent_turn_result_done(&res);
                        continue;
                }
                if (res.stop != AGENT_STOP_REQUIRES_ACTION)
                        l->ask_id[0] = '\0'; /* a call announced, answered without a pause */
                else if (l->ask_id[0]) {
                        json_t *early = stash_take(l, l->ask_id);
                        if (early && apply_locked(l, early) < 0)
                                l->resume_ready = false;
                        json_decref(early);
                }
                agent_turn_result_done(&res);
        }
        if (l->running) /* (else it ended when the worker parked) */
                turn_end_locked(l);
        if (!released) /* (given back by the handoff: nothing claimed it since, l->lock held) */
                v1_node_release_locked(l);
        pthread_mutex_unlock(&l->lock);
        evict(g, l);
        return NULL;
}

/* Start the worker when there is work and none runs (under l->lock). */
static void kick_locked(live *l) {
        if (l->running || l->g->stopping || (!l->resume_ready && json_array_size(l->queue) == 0))
                return;
        if (l->parked) { /* the last turn's worker waits for this */
                l->running = true;
                pthread_cond_signal(&l->wake);
                return;
        }
        if (l->joinable) { /* the last one has ended (running is false) */
                pthread_join(l->worker, NULL);
                l->joinable = false;
        }
        l->running = true;
        if (pthread_create(&l->worker, NULL, worker_main, l) != 0) {
                l->running = false;
                drop_queue_locked(l);
                v1_log_failure_locked(l, "unknown_error", "no thread could be started for the turn; try again", false);
                return;
        }
        l->joinable = true;
}

/* ---- the API's calls ---- */

static bool archived(const json_t *obj) {
        return json_is_string(json_object_get(obj, "archived_at"));
}

/* Does the log hold an event of type with this id? */
static bool logged(live *l, const char *id) {
        int64_t seq;
        hull_error e = {0};
        return store_events_seq_of(l->g->cfg.store, l->id, id, &seq, &e) == 0;
}

/* Can ev be taken now (under l->lock)? */
static int admit_locked(live *l, const json_t *ev, v1_err *err) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        bool conf = strcmp(type, "user.tool_confirmation") == 0, tres = strcmp(type, "user.tool_result") == 0;
        if (!conf && !tres && strcmp(type, "user.custom_tool_result") != 0)
                return 0;
        const char *id = json_string_value(json_object_get(ev, conf || tres ? "tool_use_id" : "custom_tool_use_id"));
        if (id && l->ask_id[0] && strcmp(id, l->ask_id) == 0) {
                bool want_conf = !l->ask_client, want_tres = l->ask_client && l->ask_builtin;
                if (conf != want_conf || tres != want_tres)
                        return v1_fail(err, 400, "", "%s is %s, not %s", id,
                                       want_conf   ? "a tool call awaiting confirmation (send user.tool_confirmation)"
                                       : want_tres ? "a built-in tool call the client runs (send user.tool_result)"
                                                   : "a custom tool call (send user.custom_tool_result)",
                                       conf   ? "a call awaiting confirmation"
                                       : tres ? "a built-in tool call the client runs"
                                              : "a custom tool call");
                return 0;
        }
        if (id && l->running && logged(l, id)) /* the turn has not paused on it yet */
                return 0;
        return v1_fail(err, 400, "",
                       "no %s %.64s waits for %s (the session's events show what waits: "
                       "session.status_idle with stop_reason requires_action%s)",
                       conf   ? "tool call"
                       : tres ? "built-in tool call"
                              : "custom tool call",
                       id ? id : "(none)", conf ? "a confirmation" : "a result",
                       tres ? "; user.tool_result answers the built-in tools of a session in a self_hosted "
                              "environment, where the client runs them"
                            : "");
}

static bool is_result(const json_t *ev) {
        const char *type = json_string_value(json_object_get(ev, "type")) ?: "";
        return strcmp(type, "user.tool_result") == 0 || strcmp(type, "user.custom_tool_result") == 0;
}

/* A result followed by a system.message: a copy of the result with the message's text as one
 * more text block ("[system] ..."); NULL when sys is not a system.message after a result. */
static json_t *result_with_system(const json_t *res, const json_t *sys) {
        if (!is_result(res) || strcmp(json_string_value(json_object_get(sys, "type")) ?: "", "system.message") != 0)
                return NULL;
        _cleanup_free_ char *text = v1_user_message_text(sys);
        _cleanup_free_ char *line = NULL;
        json_t *copy = json_deep_copy(res);
        if (!text || !copy || asprintf(&line, "[system] %s", text) < 0) {
                json_decref(copy);
                return NULL;
        }
        json_t *content = json_object_get(copy, "content");
        if (!json_is_array(content))
                json_object_set_new(copy, "content", content = json_array());
        json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", line));
        return copy;
}

/* Only user.message and system.message events (what may wait for another node's turn)? */
static bool messages_only(const json_t *events) {
        size_t i;
        json_t *ev;
        json_array_foreach(events, i, ev) {
                const char *type = json_string_value(json_object_get(ev, "type"));
                if (!type || (strcmp(type, "user.message") != 0 && strcmp(type, "system.message") != 0))
                        return false;
        }
        return json_array_size(events) > 0;
}

/* A message behind a running turn (or another message) waits: processed_at null till then. */
void v1_mark_waiting(json_t *const *evs, size_t n, bool waits) {
        for (size_t i = 0; i < n; i++) {
                const char *type = json_string_value(json_object_get(evs[i], "type"));
                bool msg = strcmp(type, "user.message") == 0 || strcmp(type, "user.define_outcome") == 0;
                if ((msg || strcmp(type, "system.message") == 0) && waits)
                        json_object_set_new(evs[i], "processed_at", json_null());
                waits |= msg;
        }
}

int v1_engine_send(v1_engine *g, const char *session_id, const json_t *events, json_t **ret_echo, v1_err *err) {
        _cleanup_(v1_live_unrefp) live *l = NULL;
        int r = v1_live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        size_t n = json_array_size(events);
        json_t **evs = calloc(n ? n : 1, sizeof(*evs));
        json_auto_t *echo = json_array();
        if (!evs || !echo) {
                free(evs);
                return v1_fail(err, 500, "", "out of memory");
        }
        bool foreign = false;                /* several nodes: another node's turn runs */
        bool together = false;               /* ... the lease claimed in the messages' append */
        json_auto_t *rubrics = json_array(); /* each user.define_outcome's rubric text, in order */
        pthread_mutex_lock(&l->lock);
        if (l->deleted)
                r = v1_fail(err, 404, "session_not_found", "no session %.64s", session_id);
        else if (archived(l->obj))
                r = v1_fail(err, 409, "session_archived", "session %.64s is archived: it takes no more events",
                            session_id);
        else if (strcmp(json_string_value(json_object_get(l->obj, "status")) ?: "", "terminated") == 0)
                r = v1_fail(err, 409, "session_terminated",
                            "session %.64s is terminated (a fatal error ended it; its events say which): it takes no "
                            "more events, start a new session",
                            session_id);
        else if ((together = v1_node_claim_with_append(l, messages_only(events))))
                ;
        else if ((r = v1_node_claim_locked(l, messages_only(events), err)) == -EBUSY && messages_only(events)) {
                r = 0; /* another node runs the turn: the messages wait in the log for it */
                foreign = true;
        }
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = admit_locked(l, json_array_get(events, i), err);
                if (r >= 0 && !(evs[i] = json_deep_copy(json_array_get(events, i))))
                        r = v1_fail(err, 500, "", "out of memory");
                json_t *rub = NULL;
                if (r >= 0 && strcmp(json_string_value(json_object_get(evs[i], "type")), "user.define_outcome") == 0 &&
                    (r = v1_outcome_admit_locked(l, evs[i], &rub, err)) >= 0)
                        json_array_append_new(rubrics, rub);
        }
        if (r >= 0)
                v1_mark_waiting(evs, n, l->running || json_array_size(l->queue) > 0 || foreign);
        size_t outcomes = 0;
        if (r >= 0)
                r = v1_node_append_sent(l, evs, n, together, &foreign, err);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                json_t *ev = evs[i];
                const char *type = json_string_value(json_object_get(ev, "type"));
                json_array_append(echo, ev);
                if (foreign)
                        continue;
                if (type[0] == 's' && i > 0 && is_result(evs[i - 1]))
                        continue; /* it went with the result before it */
                if (strcmp(type, "user.message") == 0 || strcmp(type, "system.message") == 0) {
                        _cleanup_free_ char *text = v1_user_message_text(ev);
                        if (!text)
                                continue;
                        bool queued = json_is_null(json_object_get(ev, "processed_at"));
                        json_t *id = json_object_get(ev, "id");
                        size_t q = json_array_size(l->queue);
                        json_t *last = q ? json_array_get(l->queue, q - 1) : NULL;
                        if (type[0] == 's' && last) { /* it goes with the message before it */
                                const char *prev = json_string_value(json_object_get(last, "text"));
                                _cleanup_free_ char *joined = NULL;
                                if (asprintf(&joined, "%s\n\n[system] %s", prev ? prev : "", text) >= 0)
                                        json_object_set_new(last, "text", json_string(joined));
                                if (queued)
                                        json_array_append(json_object_get(last, "queued"), id);
                                continue;
                        }
                        if (!l->running && type[0] == 'u')
                                drop_paused_locked(l, "the user sent a new message instead");
                        json_t *entry = json_pack("{s:s, s:[]}", "text", text, "queued");
                        if (entry && queued)
                                json_array_append(json_object_get(entry, "queued"), id);
                        if (entry)
                                json_array_append_new(l->queue, entry);
                } else if (strcmp(type, "user.define_outcome") == 0) {
                        if (!l->running)
                                drop_paused_locked(l, "the user defined an outcome instead");
                        json_t *entry = v1_outcome_entry(ev, json_array_get(rubrics, outcomes++));
                        if (entry && json_is_null(json_object_get(ev, "processed_at")))
                                json_array_append(json_object_get(entry, "queued"), json_object_get(ev, "id"));
                        if (entry)
                                json_array_append_new(l->queue, entry);
                } else if (strcmp(type, "user.interrupt") == 0) {
                        atomic_store(&l->interrupt, true);
                        drop_queue_locked(l); /* what waited is not answered: the interrupt ends it */
                        if (!l->running && l->ask_id[0])
                                drop_paused_locked(l, "the user interrupted the turn");
                } else {
                        /* a system.message after a result goes to the model with it */
                        json_auto_t *with = i + 1 < n ? result_with_system(ev, evs[i + 1]) : NULL;
                        json_t *use = with ? with : ev;
                        if (l->ask_id[0] && !l->running && apply_locked(l, use) == 0)
                                ;
                        else
                                json_array_append(l->stash, use); /* before the pause: the worker applies it */
                }
        }
        if (r >= 0 && foreign) { /* the owner may have let go meanwhile: then this node runs them */
                v1_err busy = {0};
                if (v1_node_claim_locked(l, false, &busy) == 0 && v1_node_handoff_locked(l, false, NULL))
                        kick_locked(l);
        } else if (r >= 0)
                kick_locked(l);
        if (!l->running && v1_node_handoff_locked(l, false, NULL)) /* no turn started: the lease back */
                kick_locked(l);
        pthread_mutex_unlock(&l->lock);
        for (size_t i = 0; i < n; i++)
                json_decref(evs[i]);
        free(evs);
        if (r < 0)
                return r;
        *ret_echo = TAKE_PTR(echo);
        return 0;
}

/* ---- the session's life ---- */

int v1_engine_update(v1_engine *g, const char *session_id, const json_t *body, json_t **ret, v1_err *err) {
        _cleanup_(v1_live_unrefp) live *l = NULL;
        int r = v1_live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        char now[STORE_TIME_MAX];
        v1_now_time(now);
        json_t *next = NULL, *changed = NULL;
        pthread_mutex_lock(&l->lock);
        r = v1_session_update(l->obj, body, now, &next, &changed, err);
        if (r >= 0 && next && json_object_get(changed, "budget"))
                r = v1_budget_admit(&g->cfg, next, err);
        hull_error e = {0};
        if (r >= 0 && next) {
                if (store_update(g->cfg.store, STORE_SESSION, next, &e) < 0)
                        r = v1_fail(err, 500, "", "the session could not be stored: %s", e.msg);
                else {
                        json_decref(l->obj);
                        l->obj = json_incref(next);
                        json_t *ev = json_deep_copy(changed);
                        if (ev) {
                                json_object_set_new(ev, "type", json_string("session.updated"));
                                json_t *evs[1] = {ev};
                                v1_log_server_locked(l, evs, 1);
                        }
                        /* new tools: the agent is made again for the next turn */
                        if (json_object_get(changed, "agent") && !l->running && !l->ask_id[0] && l->agent) {
                                json_auto_t *conv = json_incref((json_t *) agent_conversation(l->agent));
                                hull_error ce = {0};
                                (void) store_conversation_put(g->cfg.store, l->id, conv, &ce);
                                free(TAKE_PTR(l->kept)); /* written whole: its next turn too */
                                agent_free(TAKE_PTR(l->agent));
                                v1_tools_drop(l); /* and its MCP connections: the new servers are connected then */
                        }
                        /* a turn the budget stopped goes on once it allows more */
                        if (json_object_get(changed, "budget") && l->budget_stopped && !l->running &&
                            !v1_budget_reached(&g->cfg, l->obj)) {
                                l->budget_stopped = false;
                                json_array_insert_new(
                                        l->queue, 0,
                                        json_pack("{s:s, s:[]}", "text",
                                                  "[system] The session's budget was raised: continue the task where "
                                                  "you stopped.",
                                                  "queued"));
                                kick_locked(l);
                        }
                }
        }
        json_t *out = json_incref(l->obj);
        pthread_mutex_unlock(&l->lock);
        json_decref(next);
        json_decref(changed);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

int v1_engine_edit(v1_engine *g, const char *session_id, int (*edit)(json_t *session, void *ud, v1_err *err), void *ud,
                   json_t **ret, v1_err *err) {
        _cleanup_(v1_live_unrefp) live *l = NULL;
        int r = v1_live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        char now[STORE_TIME_MAX];
        v1_now_time(now);
        pthread_mutex_lock(&l->lock);
        json_t *next = json_deep_copy(l->obj);
        r = next ? edit(next, ud, err) : v1_fail(err, 500, "", "out of memory");
        hull_error e = {0};
        if (r >= 0) {
                json_object_set_new(next, "updated_at", json_string(now));
                if (store_update(g->cfg.store, STORE_SESSION, next, &e) < 0)
                        r = v1_fail(err, 500, "", "the session could not be stored: %s", e.msg);
                else {
                        json_decref(l->obj);
                        l->obj = json_incref(next);
                }
        }
        pthread_mutex_unlock(&l->lock);
        if (r >= 0 && ret)
                *ret = json_incref(next);
        json_decref(next);
        return r;
}

int v1_engine_archive(v1_engine *g, const char *session_id, json_t **ret, v1_err *err) {
        _cleanup_(v1_live_unrefp) live *l = NULL;
        int r = v1_live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(&l->lock);
        if (l->running)
                r = v1_fail(err, 409, "session_running",
                            "session %.64s is running a turn: interrupt it (user.interrupt) or wait for it to idle, "
                            "then archive",
                            session_id);
        else if (!archived(l->obj)) {
                char now[STORE_TIME_MAX];
                v1_now_time(now);
                json_auto_t *next = json_deep_copy(l->obj);
                hull_error e = {0};
                if (!next)
                        r = v1_fail(err, 500, "", "out of memory");
                else {
                        json_object_set_new(next, "archived_at", json_string(now));
                        json_object_set_new(next, "updated_at", json_string(now));
                        if (store_update(g->cfg.store, STORE_SESSION, next, &e) < 0)
                                r = v1_fail(err, 500, "", "the session could not be stored: %s", e.msg);
                        else {
                                json_decref(l->obj);
                                l->obj = json_incref(next);
                        }
                }
        }
        json_t *out = r >= 0 ? json_incref(l->obj) : NULL;
        pthread_mutex_unlock(&l->lock);
        if (r < 0)
                return r;
        *ret = out;
        return 0;
}

int v1_engine_delete(v1_engine *g, const char *session_id, v1_err *err) {
        _cleanup_(v1_live_unrefp) live *l = NULL;
        int r = v1_live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(&l->lock);
        if (l->deleted) {
                pthread_mutex_unlock(&l->lock);
                return v1_fail(err, 404, "session_not_found", "no session %.64s", session_id);
        }
        l->deleted = true;
        atomic_store(&l->interrupt, true);
        json_array_clear(l->queue);
        json_auto_t *ev = json_pack("{s:s, s:s}", "type", "session.deleted", "id", session_id);
        if (ev) {
                char now[STORE_TIME_MAX];
                v1_now_time(now);
                json_object_set_new(ev, "processed_at", json_string(now));
        }
        v1_watches_end(l, ev);
        pthread_cond_signal(&l->wake); /* a parked worker ends now */
        bool joinable = l->joinable;
        l->joinable = false;
        pthread_mutex_unlock(&l->lock);
        if (joinable) /* the turn ends at its next step (interrupted) */
                pthread_join(l->worker, NULL);
        hull_error e = {0};
        r = store_delete(g->cfg.store, STORE_SESSION, session_id, &e);
        /* out of the table: the next request finds nothing */
        pthread_mutex_lock(&g->lock);
        for (live **p = &g->lives; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        l->refs--;
                        break;
                }
        pthread_mutex_unlock(&g->lock);
        if (r == -ENOENT)
                return v1_fail(err, 404, "session_not_found", "no session %.64s", session_id);
        if (r < 0)
                return v1_fail(err, 500, "", "the session could not be deleted: %s", e.msg);
        return 0;
}

unsigned v1_engine_running(v1_engine *g) {
        unsigned n = 0;
        pthread_mutex_lock(&g->lock);
        for (live *l = g->lives; l; l = l->next)
                n += l->running;
        pthread_mutex_unlock(&g->lock);
        return n;
}

int v1_engine_sandbox(v1_engine *g, const char *session_id, ss_session **ret) {
        char box_id[PLIM_SESSION_ID_MAX + 1] = "", principal[STORE_ID_MAX + 8] = "";
        live *found = NULL;
        pthread_mutex_lock(&g->lock); /* never with a session's lock held: the table's lock goes first alone */
        for (live *l = g->lives; l && !found; l = l->next)
                if (strcmp(l->id, session_id) == 0) {
                        l->refs++;
                        found = l;
                }
        pthread_mutex_unlock(&g->lock);
        if (found) {
                pthread_mutex_lock(&found->lock);
                snprintf(box_id, sizeof(box_id), "%s", found->box_id);
                snprintf(principal, sizeof(principal), "%s", found->principal);
                pthread_mutex_unlock(&found->lock);
                v1_live_unref(found);
        }
        ss_session *box = NULL;
        if (box_id[0] && g->cfg.ss && ss_lookup(g->cfg.ss, box_id, principal, &box) == 0) {
                char detail[PLIM_END_DETAIL_MAX];
                if (ss_end_state(g->cfg.ss, box, detail) != SS_END_NONE)
                        ss_unref(g->cfg.ss, TAKE_PTR(box));
        }
        *ret = box;
        return 0;
}

ss_manager *v1_engine_ss(v1_engine *g) {
        return g->cfg.ss;
}

const settings *v1_engine_settings(v1_engine *g) {
        return g->cfg.settings;
}

bool v1_engine_stopping(v1_engine *g) {
        pthread_mutex_lock(&g->lock);
        bool stopping = g->stopping;
        pthread_mutex_unlock(&g->lock);
        return stopping;
}
