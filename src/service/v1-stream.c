/* v1-stream.c: a /v1 session's subscribers (event streams, resumed from the log) and watchers. */
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

static const char ping_frame[] = "event: ping\ndata: {\"type\":\"ping\"}\n\n";

/* ---- subscribers ---- */

static int frame(dynbuf *b, int64_t seq, const char *type, const json_t *ev) {
        _cleanup_free_ char *data = json_dumps(ev, JSON_COMPACT);
        if (!data)
                return -ENOMEM;
        dynbuf_reset(b);
        if (seq > 0 && dynbuf_addf(b, "id: %" PRId64 "\n", seq) < 0)
                return -ENOMEM;
        return dynbuf_addf(b, "event: %s\ndata: %s\n\n", type, data);
}

void v1_sub_free(sub *s, bool cut) {
        if (s->pumped) { /* the pump ends it */
                s->dead = true;
                return;
        }
        if (cut)
                http_sse_close(s->sse);
        free(s);
}

static void subs_unlink(live *l, sub *s) {
        for (sub **p = &l->subs; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        return;
                }
}

/* Unlink and end the subscribers for which drop is true (under l->lock). */
void v1_subs_sweep(live *l, bool (*drop)(sub *s, void *ud), void *ud) {
        for (sub **p = &l->subs; *p;) {
                sub *s = *p;
                if (drop(s, ud)) {
                        *p = s->next;
                        v1_sub_free(s, true);
                } else
                        p = &s->next;
        }
}

typedef struct fan {
        live *l;
        const char *buf;
        size_t len;
        int64_t seq;
        bool deltas_only;
} fan;

static void lag(live *l, sub *s);

static bool fan_one(sub *s, void *ud) {
        fan *f = ud;
        if (!s->live || (f->deltas_only && !s->deltas))
                return false;
        int r = http_sse_send_raw(s->sse, f->buf, f->len);
        if (r == -EAGAIN && f->seq > 0) { /* too slow for now: it catches up from the log */
                s->live = false;
                s->need = f->len;
                lag(f->l, s);
                return s->dead; /* no thread for it: it loses its stream */
        }
        if (r == 0 && f->seq > 0)
                s->sent = f->seq;
        return r < 0 && r != -EAGAIN; /* gone (a preview that does not fit is only skipped) */
}

/* Send one event to every live subscriber (under l->lock). seq 0: a preview, not logged. */
void v1_fanout(live *l, int64_t seq, const json_t *ev, bool deltas_only) {
        for (v1_watch *w = l->watches; w; w = w->next)
                w->fn(w->ud, seq, ev);
        if (!l->subs)
                return;
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, SERVE_SSE_QUEUE_MAX);
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (!type || frame(&b, seq, type, ev) < 0)
                return;
        fan f = {.l = l, .buf = b.buf, .len = b.len, .seq = seq, .deltas_only = deltas_only};
        v1_subs_sweep(l, fan_one, &f);
}

/* ---- streams ---- */

/* Send events after s->sent until the queue is full or the log's end (under l->lock). Returns 1
 * when caught up, 0 when the queue is full, -1 when the stream is gone. */
static int catch_up_locked(live *l, sub *s) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, SERVE_SSE_QUEUE_MAX);
        for (;;) {
                if (s->sent >= l->last_seq)
                        return 1;
                store_events_q q = {.limit = 100, .after_seq = s->sent};
                store_page p = {0};
                _cleanup_free_ int64_t *seqs = NULL;
                hull_error e = {0};
                if (store_events_list(l->g->cfg.store, l->id, &q, &p, &seqs, &e) < 0)
                        return -1;
                size_t i;
                json_t *ev;
                int res = 2;
                json_array_foreach(p.data, i, ev) {
                        const char *type = json_string_value(json_object_get(ev, "type"));
                        if (!type || frame(&b, seqs[i], type, ev) < 0) {
                                res = -1;
                                break;
                        }
                        int r = http_sse_send_raw(s->sse, b.buf, b.len);
                        if (r == -EAGAIN) {
                                s->need = b.len;
                                res = 0;
                                break;
                        }
                        if (r < 0) {
                                res = -1;
                                break;
                        }
                        s->sent = seqs[i];
                }
                bool empty = json_array_size(p.data) == 0;
                store_page_done(&p);
                if (res != 2)
                        return res;
                if (empty)
                        return 1;
        }
}

static bool is_sub(sub *s, void *ud) {
        return s == ud;
}

/* A subscriber behind the log, fed from the store as it reads; one that reads nothing for
 * V1_STREAM_STALL_MS loses its stream (it resumes with Last-Event-ID). */
static void *pump_main(void *arg) {
        sub *s = arg;
        live *l = s->l;
        uint64_t progress = now_mono_ms();
        for (;;) {
                int w = http_sse_wait(s->sse, s->need, 1000);
                pthread_mutex_lock(&l->lock);
                int64_t before = s->sent;
                int r = s->dead || w == -EPIPE || l->deleted || l->g->stopping ? -1 : catch_up_locked(l, s);
                if (r == 0 && (w == 0 || s->sent != before))
                        progress = now_mono_ms();
                else if (r == 0 && now_mono_ms() - progress >= V1_STREAM_STALL_MS)
                        r = -1;
                if (r == 1) {
                        s->live = true;
                        s->pumped = false; /* the list's now */
                } else if (r < 0 && !s->dead)
                        subs_unlink(l, s);
                pthread_mutex_unlock(&l->lock);
                if (r < 0) {
                        http_sse_close(s->sse);
                        free(s);
                }
                if (r != 0)
                        break;
        }
        v1_engine *g = l->g;
        v1_live_unref(l);
        atomic_fetch_sub(&g->pumps, 1);
        return NULL;
}

/* Give s a pump (under l->lock); without a thread it loses its stream. */
static void lag(live *l, sub *s) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_mutex_lock(&l->g->lock);
        l->refs++;
        pthread_mutex_unlock(&l->g->lock);
        s->pumped = true;
        atomic_fetch_add(&l->g->pumps, 1);
        if (pthread_create(&t, &a, pump_main, s) != 0) {
                atomic_fetch_sub(&l->g->pumps, 1);
                s->pumped = false;
                s->dead = true; /* swept below by its caller's sweep or the next */
                pthread_mutex_lock(&l->g->lock);
                l->refs--;
                pthread_mutex_unlock(&l->g->lock);
        }
        pthread_attr_destroy(&a);
}

int v1_engine_subscribe(v1_engine *g, const char *session_id, int64_t after_seq, bool deltas, http_sse *sse,
                        v1_err *err) {
        _cleanup_(v1_live_unrefp) live *l = NULL;
        int r = v1_live_get(g, session_id, &l, err);
        if (r < 0) {
                http_sse_close(sse);
                return r;
        }
        sub *s = calloc(1, sizeof(*s));
        if (!s) {
                http_sse_close(sse);
                return v1_fail(err, 500, "", "out of memory");
        }
        http_sse_set_keepalive(sse, ping_frame);
        *s = (sub){.sse = sse, .deltas = deltas, .l = l};
        pthread_mutex_lock(&l->lock);
        if (g->stopping || l->deleted) {
                pthread_mutex_unlock(&l->lock);
                v1_sub_free(s, true);
                return 0;
        }
        s->sent = after_seq < 0 ? l->last_seq : after_seq;
        s->next = l->subs;
        l->subs = s;
        r = catch_up_locked(l, s);
        if (r == 1)
                s->live = true;
        else if (r < 0)
                v1_subs_sweep(l, is_sub, s);
        else { /* the rest of the history as the client reads: a pump of its own */
                lag(l, s);
                if (s->dead)
                        v1_subs_sweep(l, is_sub, s);
        }
        pthread_mutex_unlock(&l->lock);
        return 0;
}

int v1_engine_watch(v1_engine *g, const char *session_id, v1_watch_fn *fn, void *ud, int64_t *ret_last_seq,
                    json_t **ret_session, v1_watch **ret, v1_err *err) {
        live *l = NULL;
        int r = v1_live_get(g, session_id, &l, err);
        if (r < 0)
                return r;
        v1_watch *w = calloc(1, sizeof(*w));
        if (!w) {
                v1_live_unref(l);
                return v1_fail(err, 500, "", "out of memory");
        }
        *w = (v1_watch){.fn = fn, .ud = ud, .l = l};
        pthread_mutex_lock(&l->lock);
        w->next = l->watches;
        l->watches = w;
        *ret_last_seq = l->last_seq;
        *ret_session = json_deep_copy(l->obj);
        pthread_mutex_unlock(&l->lock);
        *ret = w;
        return 0;
}

void v1_engine_unwatch(v1_watch *w) {
        if (!w)
                return;
        live *l = w->l;
        pthread_mutex_lock(&l->lock);
        for (v1_watch **p = &l->watches; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
        pthread_mutex_unlock(&l->lock);
        v1_live_unref(l);
        free(w);
}
