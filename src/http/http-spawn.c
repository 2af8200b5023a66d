/* http-spawn.c: the threads of http_req_spawn. A request that waits long (a run, a cell) gets a
 * thread of its own; once it answered, the thread parks for up to SERVE_SPAWN_PARKED_MS (at most
 * SERVE_SPAWN_PARKED_MAX of them) and the next spawned request takes it, so a session's cells do
 * not pay for a thread's creation, its stack and its exit each.
 *
 * A short call (http_req_spawn_short: a session's cell) skips even that hand-off, and the one back
 * to libmicrohttpd's thread, when nobody can wait behind it: libmicrohttpd's thread serves its
 * connection and no other (libmicrohttpd cannot move a connection to another of its threads, so
 * any other client of that thread would wait for the call), and no other call runs that way (so
 * the daemon always has a thread free to accept: each of its threads polls the listening
 * socket). A client with one connection then has its cells answered from the thread that read
 * them. */
#include "http-server-internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <time.h>

#include "limits.h"
#include "metrics.h"
#include "time-util.h"

void http_spawn_init(http_server *s) {
        pthread_mutex_init(&s->spawn_lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&s->spawn_cond, &ca);
        pthread_condattr_destroy(&ca);
        atomic_init(&s->spawn_alive, 0);
        atomic_init(&s->spawn_made, 0);
        atomic_init(&s->inline_calls, 0);
}

/* No thread parks any more; those parked end. Returns once none uses the server. */
void http_spawn_close(http_server *s) {
        pthread_mutex_lock(&s->spawn_lock);
        s->spawn_closing = true;
        pthread_cond_broadcast(&s->spawn_cond);
        pthread_mutex_unlock(&s->spawn_lock);
        while (atomic_load(&s->spawn_alive) > 0)
                (void) nanosleep(&(struct timespec){.tv_nsec = 1000000L}, NULL);
}

void http_spawn_done(http_server *s) {
        pthread_cond_destroy(&s->spawn_cond);
        pthread_mutex_destroy(&s->spawn_lock);
}

uint64_t http_spawn_threads_made(http_server *s) {
        return atomic_load(&s->spawn_made);
}

/* After a request: park (the thread counts as available before the answer goes out, so the
 * client's next request finds it). False: the thread ends after this request. */
static bool park(http_server *s) {
        pthread_mutex_lock(&s->spawn_lock);
        bool parked = !s->spawn_closing && s->spawn_parked < SERVE_SPAWN_PARKED_MAX;
        if (parked) {
                s->spawn_parked++;
                atomic_fetch_add(&s->spawn_alive, 1);
        }
        pthread_mutex_unlock(&s->spawn_lock);
        return parked;
}

/* A parked thread's next request, NULL once none came in time (or the server stops). */
static http_req *wait_next(http_server *s) {
        struct timespec until = timespec_after_ms(CLOCK_MONOTONIC, SERVE_SPAWN_PARKED_MS);
        http_req *r = NULL;
        pthread_mutex_lock(&s->spawn_lock);
        for (;;) {
                if (s->spawn_queue) { /* promised to a parked thread: spawn_parked counted it off */
                        r = s->spawn_queue;
                        s->spawn_queue = r->spawn_next;
                        r->spawn_next = NULL;
                        break;
                }
                if (s->spawn_closing || pthread_cond_timedwait(&s->spawn_cond, &s->spawn_lock, &until) == ETIMEDOUT) {
                        if (s->spawn_queue)
                                continue;
                        s->spawn_parked--;
                        break;
                }
        }
        pthread_mutex_unlock(&s->spawn_lock);
        return r;
}

static void *spawn_main(void *arg) {
        http_req *r = arg;
        http_server *s = r->srv;
        for (;;) {
                struct MHD_Connection *conn = r->conn;
                r->spawned(r);
                bool parked = park(s);
                /* From here on r belongs to libmicrohttpd again. */
                MHD_resume_connection(conn);
                /* Once threads is 0, http_stop may run: it waits for spawn_alive too. */
                atomic_fetch_sub(&s->threads, 1);
                if (!parked)
                        break;
                r = wait_next(s);
                if (!r) {
                        atomic_fetch_sub(&s->spawn_alive, 1); /* last: http_stop may free s */
                        return NULL;
                }
                atomic_fetch_sub(&s->spawn_alive, 1); /* counted in threads again */
        }
        return NULL;
}

uint64_t http_inline_calls(http_server *s) {
        return atomic_load(&s->inline_calls);
}

/* Whether r's call may run on this libmicrohttpd thread: the thread serves r's connection and no
 * other (so no other client waits behind the call), and no other call runs so (so another thread
 * of the daemon is free to accept new connections: each polls the listening socket). */
static bool inline_admit(http_server *s, http_req *r) {
        if (!r->c || atomic_load(&s->stopping))
                return false;
        bool ok = false;
        pthread_mutex_lock(&s->lock);
        int w = r->c->worker;
        if (w >= 0 && !s->inline_busy && s->workers[w].conns == 1 &&
            pthread_equal(s->workers[w].thread, pthread_self()))
                ok = s->inline_busy = true;
        pthread_mutex_unlock(&s->lock);
        return ok;
}

int http_req_spawn_short(http_req *r, http_handler_fn *fn) {
        http_server *s = r->srv;
        if (SERVE_HTTP_THREADS < 2 || !inline_admit(s, r)) {
                int q = http_req_spawn(r, fn);
                if (q == 0)
                        metrics_http_short(s->cfg.metrics, false);
                return q;
        }
        metrics_http_short(s->cfg.metrics, true);
        atomic_fetch_add(&s->threads, 1); /* busy as a spawned call is, for http_stop */
        atomic_fetch_add(&s->inline_calls, 1);
        fn(r);
        pthread_mutex_lock(&s->lock);
        s->inline_busy = false;
        pthread_mutex_unlock(&s->lock);
        atomic_fetch_sub(&s->threads, 1);
        return 0;
}

int http_req_spawn(http_req *r, http_handler_fn *fn) {
        http_server *s = r->srv;
        atomic_fetch_add(&s->threads, 1);
        r->spawned = fn;
        r->state = REQ_SPAWNED;
        MHD_suspend_connection(r->conn);
        pthread_mutex_lock(&s->spawn_lock);
        if (s->spawn_parked > 0 && !s->spawn_closing) { /* a parked thread takes it */
                s->spawn_parked--;
                http_req **p = &s->spawn_queue;
                while (*p)
                        p = &(*p)->spawn_next;
                r->spawn_next = NULL;
                *p = r;
                pthread_cond_signal(&s->spawn_cond);
                pthread_mutex_unlock(&s->spawn_lock);
                return 0;
        }
        pthread_mutex_unlock(&s->spawn_lock);
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, SERVE_RUN_THREAD_STACK);
        int q = pthread_create(&t, &attr, spawn_main, r);
        pthread_attr_destroy(&attr);
        if (q != 0) {
                MHD_resume_connection(r->conn);
                r->state = REQ_BODY;
                r->spawned = NULL;
                atomic_fetch_sub(&s->threads, 1);
                return -EAGAIN;
        }
        atomic_fetch_add(&s->spawn_made, 1);
        return 0;
}
