/* http-sse.c: server-sent events: a bounded queue per stream fed by a producer on any thread and
 * drained into the connection by libmicrohttpd's callback, the connection suspended while the
 * queue is empty (no thread per stream). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http-server-internal.h"
#include "macro.h"
#include "sock-util.h"
#include "time-util.h"

/* ---- server-sent events ---- */

static void sse_unref(http_sse *x) {
        pthread_mutex_lock(&x->lock);
        bool last = --x->refs == 0;
        pthread_mutex_unlock(&x->lock);
        if (!last)
                return;
        dynbuf_free(&x->q);
        pthread_cond_destroy(&x->room);
        pthread_mutex_destroy(&x->lock);
        free(x);
}

/* Wake a stream whose connection waits for a frame (under x->lock). */
void http_sse_wake_locked(http_sse *x) {
        if (x->parked) {
                x->parked = false;
                MHD_resume_connection(x->conn);
        }
}

/* Room for n more bytes at the queue's end (under x->lock): the unsent bytes are moved to the
 * front when that makes room. Returns where to write them (then dynbuf_advance), or NULL when
 * they do not fit now (*ret_err: -EAGAIN, or -ENOMEM). */
static char *sse_room_locked(http_sse *x, size_t n, int *ret_err) {
        if (x->q.len - x->off + n > x->max && x->q.len > x->off) { /* an empty queue takes any frame */
                *ret_err = -EAGAIN;
                return NULL;
        }
        if (x->off > 0 && x->q.len + n > x->max) {
                memmove(x->q.buf, x->q.buf + x->off, x->q.len - x->off);
                x->q.len -= x->off;
                x->off = 0;
        }
        int r = dynbuf_reserve(&x->q, n);
        if (r < 0) {
                *ret_err = r;
                return NULL;
        }
        return x->q.buf + x->q.len;
}

/* Queue bytes (under x->lock). Returns 0, -EAGAIN or -ENOMEM. */
static int sse_put_locked(http_sse *x, const char *p, size_t n) {
        int r = 0;
        char *at = sse_room_locked(x, n, &r);
        if (!at)
                return r;
        memcpy(at, p, n);
        dynbuf_advance(&x->q, n);
        x->queued_max = MAX(x->queued_max, x->q.len - x->off);
        return 0;
}

void http_sse_tick_locked(http_sse *x, uint64_t now) {
        pthread_mutex_lock(&x->lock);
        if (!x->gone && !x->ended) {
                if (x->parked && sock_fd_hung_up(x->fd)) { /* nobody reads: end it */
                        x->gone = true;
                        pthread_cond_broadcast(&x->room);
                        http_sse_wake_locked(x);
                } else if (x->q.len == x->off && x->keepalive_us != UINT64_MAX && now - x->last_us >= x->keepalive_us) {
                        static const char comment[] = ": keep-alive\n\n";
                        const char *k = x->keepalive_frame ? x->keepalive_frame : comment;
                        if (sse_put_locked(x, k, strlen(k)) == 0) {
                                x->last_us = now;
                                http_sse_wake_locked(x);
                        }
                }
        }
        pthread_mutex_unlock(&x->lock);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
        http_sse *x = cls;
        ssize_t n;
        pthread_mutex_lock(&x->lock);
        size_t avail = x->q.len - x->off;
        if (x->gone)
                n = MHD_CONTENT_READER_END_WITH_ERROR;
        else if (avail > 0) {
                n = (ssize_t) MIN(avail, max);
                memcpy(buf, x->q.buf + x->off, (size_t) n);
                x->off += (size_t) n;
                if (x->off == x->q.len) {
                        dynbuf_reset(&x->q);
                        x->off = 0;
                }
                x->last_us = now_mono_us();
                pthread_cond_broadcast(&x->room);
        } else if (x->ended)
                n = x->abort ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
        else { /* nothing to send: wait, suspended, for the producer (or the watchdog) */
                x->parked = true;
                MHD_suspend_connection(x->conn);
                n = 0;
        }
        pthread_mutex_unlock(&x->lock);
        return n;
}

static void sse_response_free(void *cls) {
        sse_unref(cls);
}

void http_sse_set_keepalive(http_sse *s, const char *frame) {
        pthread_mutex_lock(&s->lock);
        s->keepalive_frame = frame;
        pthread_mutex_unlock(&s->lock);
}

int http_answer_sse(http_req *r, size_t queue_max, uint64_t keepalive_ms, http_sse **ret) {
        http_server *s = r->srv;
        if (r->answer || r->sse)
                return -EALREADY;
        http_sse *x = calloc(1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        pthread_mutex_init(&x->lock, NULL);
        pthread_cond_init(&x->room, NULL);
        x->srv = s;
        x->conn = r->conn;
        x->fd = http_req_fd(r);
        x->max = MIN(queue_max ? queue_max : SERVE_SSE_QUEUE_DEFAULT, (size_t) SERVE_SSE_QUEUE_MAX);
        dynbuf_init(&x->q, SERVE_SSE_FRAME_MAX);
        x->keepalive_us =
                keepalive_ms == HTTP_SSE_NO_KEEPALIVE
                        ? UINT64_MAX
                        : MIN(keepalive_ms ? keepalive_ms : SERVE_SSE_KEEPALIVE_MS, UINT64_MAX / 2000) * 1000ULL;
        x->last_us = now_mono_us();
        x->refs = 3; /* the producer's, the response's, the request's */
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SERVE_SSE_BLOCK_BYTES, sse_read,
                                                                      x, sse_response_free);
        if (!resp) {
                x->refs = 1;
                sse_unref(x);
                return -ENOMEM;
        }
        resp = http_dress(r, resp, "text/event-stream; charset=utf-8");
        if (!resp || MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache") != MHD_YES) {
                if (resp)
                        MHD_destroy_response(resp); /* frees the response's reference */
                x->refs = 1;
                sse_unref(x);
                return -ENOMEM;
        }
        pthread_mutex_lock(&s->lock);
        x->next = s->streams;
        if (s->streams)
                s->streams->prev = x;
        s->streams = x;
        x->listed = true;
        if (atomic_load(&s->stopping))
                x->ended = true;
        pthread_mutex_unlock(&s->lock);
        r->answer = resp;
        r->answer_status = 200;
        r->sse = x;
        *ret = x;
        return 0;
}

/* The bytes of one event: "event: EVENT\n" (when not NULL), "data: LINE\n" per line of data
 * (split at LF, CRs dropped), and the blank line. Written at p when p is not NULL. */
static size_t sse_frame(char *p, const char *event, const char *data, size_t len) {
        size_t n = 0;
#define PUT(s, k)                                                                                                      \
        do {                                                                                                           \
                if (p)                                                                                                 \
                        memcpy(p + n, (s), (k));                                                                       \
                n += (k);                                                                                              \
        } while (0)
        if (event) {
                PUT("event: ", 7);
                PUT(event, strlen(event));
                PUT("\n", 1);
        }
        PUT("data: ", 6);
        for (size_t i = 0; i < len; i++) {
                if (data[i] == '\n')
                        PUT("\ndata: ", 7);
                else if (data[i] != '\r')
                        PUT(data + i, 1);
        }
        PUT("\n\n", 2);
#undef PUT
        return n;
}

int http_sse_send(http_sse *x, const char *event, const char *data, size_t len) {
        if (event && (!event[0] || strpbrk(event, "\r\n")))
                return -EINVAL;
        size_t n = sse_frame(NULL, event, data, len);
        int r = 0;
        pthread_mutex_lock(&x->lock);
        if (x->gone || x->ended)
                r = -EPIPE;
        else if (n > SERVE_SSE_FRAME_MAX)
                r = -E2BIG;
        else {
                char *at = sse_room_locked(x, n, &r); /* no allocation per frame: written in place */
                if (at) {
                        sse_frame(at, event, data, len);
                        dynbuf_advance(&x->q, n);
                        x->queued_max = MAX(x->queued_max, x->q.len - x->off);
                        http_sse_wake_locked(x);
                }
        }
        pthread_mutex_unlock(&x->lock);
        return r;
}

int http_sse_send_raw(http_sse *x, const void *p, size_t n) {
        int r;
        pthread_mutex_lock(&x->lock);
        if (x->gone || x->ended)
                r = -EPIPE;
        else if (n > SERVE_SSE_FRAME_MAX)
                r = -E2BIG;
        else if ((r = sse_put_locked(x, p, n)) == 0)
                http_sse_wake_locked(x);
        pthread_mutex_unlock(&x->lock);
        return r;
}

int http_sse_wait(http_sse *x, size_t n, uint64_t timeout_ms) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        uint64_t ns = (uint64_t) until.tv_nsec + (timeout_ms % 1000) * 1000000ULL;
        until.tv_sec += (time_t) (timeout_ms / 1000 + ns / 1000000000ULL);
        until.tv_nsec = (long) (ns % 1000000000ULL);
        int r = 0;
        pthread_mutex_lock(&x->lock);
        while (!x->gone && !x->ended && x->q.len > x->off && x->q.len - x->off + n > x->max && r == 0)
                if (pthread_cond_timedwait(&x->room, &x->lock, &until) == ETIMEDOUT)
                        r = -ETIMEDOUT;
        if (x->gone || x->ended)
                r = -EPIPE;
        pthread_mutex_unlock(&x->lock);
        return r;
}

int http_sse_drain(http_sse *x, uint64_t timeout_ms) {
        return http_sse_wait(x, x->max, timeout_ms);
}

size_t http_sse_queued_max(http_sse *x) {
        pthread_mutex_lock(&x->lock);
        size_t n = x->queued_max;
        pthread_mutex_unlock(&x->lock);
        return n;
}

static void sse_end(http_sse *x, bool abort) {
        pthread_mutex_lock(&x->lock);
        x->ended = true;
        x->abort = abort;
        http_sse_wake_locked(x);
        pthread_mutex_unlock(&x->lock);
        sse_unref(x);
}

void http_sse_close(http_sse *x) {
        sse_end(x, false);
}

void http_sse_abort(http_sse *x) {
        sse_end(x, true);
}

/* The request is over: its stream is gone. */
void http_sse_request_done(http_server *s, http_sse *x) {
        pthread_mutex_lock(&s->lock);
        if (x->listed) {
                if (x->prev)
                        x->prev->next = x->next;
                else
                        s->streams = x->next;
                if (x->next)
                        x->next->prev = x->prev;
                x->listed = false;
        }
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_lock(&x->lock);
        x->gone = true;
        x->parked = false; /* a completed request is not suspended */
        pthread_cond_broadcast(&x->room);
        pthread_mutex_unlock(&x->lock);
        sse_unref(x);
}
