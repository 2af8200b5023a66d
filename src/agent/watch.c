/* watch.c: see watch.h. */
#include "watch.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "limits.h"
#include "macro.h"
#include "time-util.h"

static void fire_locked(watch *w) {
        uint64_t one = 1;
        (void) !write(w->efd, &one, sizeof(one));
        w->fired = true;
}

/* One tick of an armed call (under the lock; the lock is let go around should_fire). */
static void check_locked(watch *w) {
        uint64_t now = now_mono_ms();
        if (!w->fired) {
                bool fire = (w->cfg.interrupt && atomic_load(w->cfg.interrupt)) || now >= w->cfg.cancel_at_ms;
                if (!fire && w->cfg.should_fire) {
                        w->asking = true;
                        pthread_mutex_unlock(&w->lock);
                        fire = w->cfg.should_fire(w->cfg.ud);
                        pthread_mutex_lock(&w->lock);
                        w->asking = false;
                        pthread_cond_broadcast(&w->settled);
                        if (!w->armed) /* the call ended meanwhile: its answer is not this one's */
                                return;
                }
                if (fire)
                        fire_locked(w);
        }
        if (w->cfg.tick)
                w->cfg.tick(w->cfg.ud, now);
}

static void *watch_main(void *ud) {
        watch *w = ud;
        pthread_mutex_lock(&w->lock);
        uint64_t idle_until = now_mono_ms() + AGENT_WATCH_IDLE_MS;
        while (!w->stop) {
                if (!w->armed) {
                        if (now_mono_ms() >= idle_until)
                                break; /* no call for a while: the next one starts a thread again */
                        struct timespec ts = timespec_after_ms(CLOCK_MONOTONIC, AGENT_WATCH_IDLE_MS);
                        (void) pthread_cond_timedwait(&w->cond, &w->lock, &ts);
                        continue;
                }
                check_locked(w);
                idle_until = now_mono_ms() + AGENT_WATCH_IDLE_MS;
                if (!w->armed || w->stop)
                        continue;
                struct timespec ts = timespec_after_ms(CLOCK_MONOTONIC, AGENT_WATCH_TICK_MS);
                (void) pthread_cond_timedwait(&w->cond, &w->lock, &ts);
        }
        w->ended = true;
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int watch_init(watch *w) {
        pthread_condattr_t ca;
        *w = (watch){.efd = -1};
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0)
                return -errno;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, &ca);
        pthread_cond_init(&w->settled, NULL);
        pthread_condattr_destroy(&ca);
        w->inited = true;
        return 0;
}

/* Start the thread (under the lock; one that ended for idleness joined first). */
static int thread_start_locked(watch *w) {
        if (w->started && !w->ended)
                return 0;
        if (w->started) {
                pthread_join(w->thread, NULL);
                w->started = w->ended = false;
        }
        /* a small stack: its tick and checks are all it runs */
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, AGENT_WATCH_STACK);
        int r = pthread_create(&w->thread, &attr, watch_main, w);
        pthread_attr_destroy(&attr);
        w->started = r == 0;
        return -r;
}

int watch_arm(watch *w, const watch_config *cfg) {
        if (!w->inited)
                return -EBADF;
        pthread_mutex_lock(&w->lock);
        w->cfg = *cfg;
        w->fired = false;
        w->armed = true;
        int r = thread_start_locked(w);
        if (r < 0)
                w->armed = false;
        else
                pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        return r;
}

void watch_disarm(watch *w) {
        if (!w->inited)
                return;
        pthread_mutex_lock(&w->lock);
        w->armed = false;
        while (w->asking)
                pthread_cond_wait(&w->settled, &w->lock);
        uint64_t n;
        (void) !read(w->efd, &n, sizeof(n)); /* fired (or written by the caller): empty for the next call */
        w->fired = false;
        w->cfg = (watch_config){0};
        pthread_mutex_unlock(&w->lock);
}

void watch_done(watch *w) {
        if (!w->inited) {
                w->efd = safe_close(w->efd);
                return;
        }
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        w->armed = false;
        pthread_cond_signal(&w->cond);
        bool started = w->started;
        w->started = false;
        pthread_mutex_unlock(&w->lock);
        if (started)
                pthread_join(w->thread, NULL);
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        pthread_cond_destroy(&w->settled);
        w->inited = false;
        w->efd = safe_close(w->efd);
}

void watch_lock(watch *w) {
        pthread_mutex_lock(&w->lock);
}

void watch_unlock(watch *w) {
        pthread_mutex_unlock(&w->lock);
}
