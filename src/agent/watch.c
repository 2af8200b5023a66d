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

static void *watch_main(void *ud) {
        watch *w = ud;
        pthread_mutex_lock(&w->lock);
        while (!w->stop) {
                uint64_t now = now_mono_ms();
                if (!w->fired) {
                        bool fire = (w->cfg.interrupt && atomic_load(w->cfg.interrupt)) || now >= w->cfg.cancel_at_ms;
                        if (!fire && w->cfg.should_fire) {
                                pthread_mutex_unlock(&w->lock);
                                fire = w->cfg.should_fire(w->cfg.ud);
                                pthread_mutex_lock(&w->lock);
                        }
                        if (fire)
                                fire_locked(w);
                }
                if (w->cfg.tick)
                        w->cfg.tick(w->cfg.ud, now);
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += (long) AGENT_WATCH_TICK_MS * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                (void) pthread_cond_timedwait(&w->cond, &w->lock, &ts);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int watch_start(watch *w, const watch_config *cfg) {
        pthread_condattr_t ca;
        *w = (watch){.cfg = *cfg, .efd = -1};
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0)
                return -errno;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, &ca);
        pthread_condattr_destroy(&ca);
        w->inited = true;
        /* a small stack: one is made per tool call, and an 8 MiB one costs its unmapping */
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, AGENT_WATCH_STACK);
        int r = pthread_create(&w->thread, &attr, watch_main, w);
        pthread_attr_destroy(&attr);
        w->started = r == 0;
        return -r;
}

void watch_stop(watch *w) {
        if (w->started) {
                pthread_mutex_lock(&w->lock);
                w->stop = true;
                pthread_cond_signal(&w->cond);
                pthread_mutex_unlock(&w->lock);
                pthread_join(w->thread, NULL);
                w->started = false;
        }
        if (w->inited) {
                pthread_mutex_destroy(&w->lock);
                pthread_cond_destroy(&w->cond);
                w->inited = false;
        }
        w->efd = safe_close(w->efd);
}

void watch_lock(watch *w) {
        pthread_mutex_lock(&w->lock);
}

void watch_unlock(watch *w) {
        pthread_mutex_unlock(&w->lock);
}
