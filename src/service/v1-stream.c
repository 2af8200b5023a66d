/* v1-stream.c: a /v1 session's watchers (v1_engine_watch, v1-run.h): each event given to every
 * caught-up watcher as it is logged (its JSON made once), the replay from the log, and the pump
 * threads that catch a slow watcher up from the store. How an event reaches a client (SSE frames,
 * AG-UI) is the consumer's: this file only calls its ops. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "time-util.h"
#include "v1-run-internal.h"

/* ---- watchers ---- */

static void watch_close(v1_watch *w, bool cut) {
        if (w->ops->close)
                w->ops->close(w->ud, cut);
        free(w);
}

/* End w, unlinked (under l->lock): a pumped one is only marked, its pump ends it. */
static void watch_end(v1_watch *w) {
        if (w->pumped) {
                w->dead = true;
                return;
        }
        watch_close(w, true);
}

static void watches_unlink(live *l, v1_watch *w) {
        for (v1_watch **p = &l->watches; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        return;
                }
}

/* Unlink and end the engine-owned watchers for which drop is true (under l->lock). */
static void watches_sweep(live *l, bool (*drop)(v1_watch *w, void *ud), void *ud) {
        for (v1_watch **p = &l->watches; *p;) {
                v1_watch *w = *p;
                if (!w->held && drop(w, ud)) {
                        *p = w->next;
                        watch_end(w);
                } else
                        p = &w->next;
        }
}

static bool is_watch(v1_watch *w, void *ud) {
        return w == ud;
}

static bool any_watch(v1_watch *w, void *ud) {
        return true;
}

typedef struct fan {
        live *l;
        const json_t *ev;
        const char *text;
        size_t len;
        int64_t seq;
        bool deltas_only;
} fan;

static void lag(live *l, v1_watch *w);

static bool fan_one(v1_watch *w, void *ud) {
        fan *f = ud;
        if (!w->live || w->dead || (f->deltas_only && !w->deltas))
                return false;
        if (f->seq > w->sent + 1 && !w->held && w->ops->wait) { /* another node logged between: from the log */
                w->live = false;
                lag(f->l, w);
                return w->dead;
        }
        int r = w->ops->deliver(w->ud, f->seq, f->ev, f->text, f->len);
        if (r == 0 && f->seq > 0)
                w->sent = f->seq;
        if (r == 0 || r == -E2BIG || (r == -EAGAIN && f->seq == 0)) /* done, or dropped */
                return false;
        if (r == -EAGAIN && !w->held && w->ops->wait) { /* too slow for now: it catches up from the log */
                w->live = false;
                lag(f->l, w);
                return w->dead; /* no thread for it: it loses its stream */
        }
        if (w->held) /* it stays the holder's till v1_engine_unwatch; it gets nothing more */
                w->dead = true;
        return true; /* gone */
}

void v1_fanout_text(live *l, int64_t seq, const json_t *ev, const char *text, bool deltas_only) {
        if (!l->watches)
                return;
        _cleanup_free_ char *own = NULL;
        if (!text) {
                l->n_fan_dumps += seq > 0; /* a logged event's (a preview's is never stored) */
                if (!(text = own = json_dumps(ev, JSON_COMPACT)))
                        return;
        }
        fan f = {.l = l, .ev = ev, .text = text, .len = strlen(text), .seq = seq, .deltas_only = deltas_only};
        watches_sweep(l, fan_one, &f);
        for (v1_watch *w = l->watches; w; w = w->next) /* the held ones (the sweep passes them by) */
                if (w->held)
                        (void) fan_one(w, &f);
}

void v1_fanout(live *l, int64_t seq, const json_t *ev, bool deltas_only) {
        v1_fanout_text(l, seq, ev, NULL, deltas_only);
}

void v1_watches_end(live *l, const json_t *last) {
        if (last) {
                for (v1_watch *w = l->watches; w; w = w->next)
                        if (!w->held)
                                w->live = true; /* even one behind the log learns why its stream ends */
                v1_fanout(l, 0, last, false);
        }
        watches_sweep(l, any_watch, NULL);
}

/* ---- catching up ---- */

/* Give w the events after w->sent until it has no room or the log's end (under l->lock). Returns
 * 1 when caught up, 0 when it has no room, -1 when it is gone (or the log cannot be read). */
static int catch_up_locked(live *l, v1_watch *w) {
        for (;;) {
                if (w->sent >= l->last_seq)
                        return 1;
                store_events_q q = {.limit = 100, .after_seq = w->sent};
                store_page p = {0};
                _cleanup_free_ int64_t *seqs = NULL;
                hull_error e = {0};
                if (store_events_list(l->g->cfg.store, l->id, &q, &p, &seqs, &e) < 0)
                        return -1;
                size_t i;
                json_t *ev;
                int res = 2;
                json_array_foreach(p.data, i, ev) {
                        _cleanup_free_ char *text = json_dumps(ev, JSON_COMPACT);
                        int r = text ? w->ops->deliver(w->ud, seqs[i], ev, text, strlen(text)) : -ENOMEM;
                        if (r == -EAGAIN) {
                                res = 0;
                                break;
                        }
                        if (r < 0) {
                                res = -1;
                                break;
                        }
                        w->sent = seqs[i];
                }
                bool empty = json_array_size(p.data) == 0;
                store_page_done(&p);
                if (res != 2)
                        return res;
                if (empty)
                        return 1;
        }
}

/* A watcher behind the log, fed from the store as it takes events; one that takes nothing for
 * V1_STREAM_STALL_MS loses its stream (it resumes with Last-Event-ID). */
static void *pump_main(void *arg) {
        v1_watch *w = arg;
        live *l = w->l;
        uint64_t progress = now_mono_ms();
        for (;;) {
                int room = w->ops->wait(w->ud, 1000);
                pthread_mutex_lock(&l->lock);
                int64_t before = w->sent;
                int r = w->dead || room == -EPIPE || l->deleted || l->g->stopping ? -1 : catch_up_locked(l, w);
                if (r == 0 && (room == 0 || w->sent != before))
                        progress = now_mono_ms();
                else if (r == 0 && now_mono_ms() - progress >= V1_STREAM_STALL_MS)
                        r = -1;
                if (r == 1) {
                        w->live = true;
                        w->pumped = false; /* the list's now */
                } else if (r < 0 && !w->dead)
                        watches_unlink(l, w);
                pthread_mutex_unlock(&l->lock);
                if (r < 0)
                        watch_close(w, true);
                if (r != 0)
                        break;
        }
        v1_engine *g = l->g;
        v1_live_unref(l);
        atomic_fetch_sub(&g->pumps, 1);
        return NULL;
}

/* Give w a pump (under l->lock); without a thread it is marked dead (it loses its stream). */
static void lag(live *l, v1_watch *w) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_mutex_lock(&l->g->lock);
        l->refs++;
        pthread_mutex_unlock(&l->g->lock);
        w->pumped = true;
        atomic_fetch_add(&l->g->pumps, 1);
        if (pthread_create(&t, &a, pump_main, w) != 0) {
                atomic_fetch_sub(&l->g->pumps, 1);
                w->pumped = false;
                w->dead = true; /* swept by its caller's sweep */
                pthread_mutex_lock(&l->g->lock);
                l->refs--;
                pthread_mutex_unlock(&l->g->lock);
        }
        pthread_attr_destroy(&a);
}

/* ---- the API ---- */

/* Link w and replay the log it asked for (under l->lock). */
static void watch_start_locked(live *l, v1_watch *w) {
        w->next = l->watches;
        l->watches = w;
        int r = catch_up_locked(l, w);
        if (r == 1)
                w->live = true;
        else if (w->held) /* no pump for a held watch: it gets nothing more */
                w->dead = true;
        else if (r < 0 || !w->ops->wait)
                watches_sweep(l, is_watch, w);
        else { /* the rest of the history as the consumer takes it: a pump of its own */
                lag(l, w);
                if (w->dead)
                        watches_sweep(l, is_watch, w);
        }
}

int v1_engine_watch(v1_engine *g, const char *session_id, const v1_watch_ops *ops, void *ud, const v1_watch_opts *opts,
                    int64_t *ret_last_seq, json_t **ret_session, v1_watch **ret_watch, v1_err *err) {
        live *l = NULL;
        int r = v1_live_get(g, session_id, &l, err);
        v1_watch *w = r < 0 ? NULL : calloc(1, sizeof(*w));
        if (!w) {
                if (ops->close)
                        ops->close(ud, true);
                if (r < 0)
                        return r;
                v1_live_unref(l);
                return v1_fail(err, 500, "", "out of memory");
        }
        *w = (v1_watch){.ops = ops, .ud = ud, .deltas = opts->deltas, .held = ret_watch != NULL, .l = l};
        pthread_mutex_lock(&l->lock);
        if (ret_last_seq)
                *ret_last_seq = l->last_seq;
        if (ret_session)
                *ret_session = json_deep_copy(l->obj);
        if (!w->held && (g->stopping || l->deleted)) {
                pthread_mutex_unlock(&l->lock);
                watch_close(w, true);
                v1_live_unref(l);
                return 0;
        }
        w->sent = opts->after_seq < 0 ? l->last_seq : opts->after_seq;
        watch_start_locked(l, w);
        pthread_mutex_unlock(&l->lock);
        if (ret_watch)
                *ret_watch = w; /* with its reference to l */
        else
                v1_live_unref(l);
        return 0;
}

void v1_engine_unwatch(v1_watch *w) {
        if (!w)
                return;
        live *l = w->l;
        pthread_mutex_lock(&l->lock);
        watches_unlink(l, w);
        pthread_mutex_unlock(&l->lock);
        watch_close(w, false);
        v1_live_unref(l);
}
