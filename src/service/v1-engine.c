/* v1-engine.c: the /v1 engine's start and stop (v1-run.h): the turns a crash cut recovered at
 * start, every turn interrupted and its worker (a parked one too) ended at shutdown. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "macro.h"
#include "time-util.h"
#include "v1-run-internal.h"
#include "v1-webhook.h"

/* Turns a crash cut: end each with a session.error and idle. */
static int recover(v1_engine *g, hull_error *e) {
        static const char *const running[] = {"running", "rescheduling"};
        json_auto_t *ids = NULL;
        int r = store_sessions_with_status(g->cfg.store, running, 2, &ids, e);
        if (r < 0)
                return r;
        size_t i;
        json_t *id;
        json_array_foreach(ids, i, id) {
                live *l = NULL;
                v1_err err = {0};
                if (v1_live_get(g, json_string_value(id), &l, &err) < 0)
                        continue;
                pthread_mutex_lock(&l->lock);
                if (v1_node_mode(g)) { /* another live node's turn stays; else it is cut */
                        if (v1_node_claim_locked(l, false, &err) == 0) {
                                v1_node_cut_locked(l, g->cfg.node->id); /* its outcome too */
                                v1_node_release_locked(l);
                        }
                } else
                        v1_log_failure_locked(
                                l, "unknown_error",
                                "hull serve stopped during this turn (it was restarted); what the turn did after its "
                                "last event is lost: send the message again",
                                true);
                if (!v1_node_mode(g))
                        v1_outcomes_cut_locked(l); /* an outcome at work is not graded now */
                pthread_mutex_unlock(&l->lock);
                dlog_log(g->cfg.log, DLOG_WARN, "event=v1-turn-recovered session=%s", l->id);
                v1_live_unref(l);
        }
        return 0;
}

int v1_engine_new(const v1_engine_config *cfg, v1_engine **ret, hull_error *e) {
        v1_engine *g = calloc(1, sizeof(*g));
        if (!g)
                return hull_err(e, -ENOMEM, "v1: out of memory");
        g->cfg = *cfg;
        pthread_mutex_init(&g->lock, NULL);
        int r = recover(g, e);
        if (r >= 0)
                r = v1_node_start(g, e);
        if (r >= 0 && cfg->webhooks)
                r = v1_webhooks_start(cfg->store, cfg->settings, cfg->log, &g->webhooks, e);
        if (r < 0) {
                v1_engine_free(g);
                return r;
        }
        *ret = g;
        return 0;
}

void v1_engine_shutdown(v1_engine *g, uint64_t wait_ms) {
        if (!g)
                return;
        pthread_mutex_lock(&g->lock);
        g->stopping = true;
        for (live *l = g->lives; l; l = l->next) {
                atomic_store(&l->interrupt, true);
                l->refs++;
        }
        live *list = g->lives;
        pthread_mutex_unlock(&g->lock);
        uint64_t deadline = now_mono_ms() + wait_ms;
        for (live *l = list; l; l = l->next) {
                pthread_mutex_lock(&l->lock);
                v1_watches_end(l, NULL);
                pthread_cond_signal(&l->wake); /* a parked worker ends now */
                bool running = l->running;
                pthread_mutex_unlock(&l->lock);
                while (running && now_mono_ms() < deadline) {
                        struct timespec ts = {0, 10 * 1000 * 1000};
                        nanosleep(&ts, NULL);
                        pthread_mutex_lock(&l->lock);
                        running = l->running;
                        pthread_mutex_unlock(&l->lock);
                }
        }
        pthread_mutex_lock(&g->lock);
        for (live *l = list; l; l = l->next)
                l->refs--;
        pthread_mutex_unlock(&g->lock);
        while (atomic_load(&g->pumps) > 0 && now_mono_ms() < deadline + 2000) { /* their streams ended */
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        v1_node_stop(g); /* the node's row and leases go: its turns ended */
}

void v1_engine_free(v1_engine *g) {
        if (!g)
                return;
        v1_webhooks_stop(TAKE_PTR(g->webhooks));
        pthread_mutex_lock(&g->lock);
        g->stopping = true; /* (a parked worker waits no more) */
        pthread_mutex_unlock(&g->lock);
        if (atomic_load(&g->pumps) > 0) /* a pump still holds a session: leave it all (the process exits) */
                return;
        live *l = g->lives;
        while (l) {
                live *next = l->next;
                bool running;
                pthread_mutex_lock(&l->lock);
                running = l->running;
                pthread_cond_signal(&l->wake);
                pthread_mutex_unlock(&l->lock);
                if (!running) { /* a worker still in a turn keeps its session (the process exits) */
                        if (l->joinable)
                                pthread_join(l->worker, NULL);
                        l->joinable = false;
                        v1_live_free(l);
                }
                l = next;
        }
        free(g->mend);
        pthread_mutex_destroy(&g->lock);
        free(g);
}
