/* watch.h: the watcher of one running tool call, the tool-call runner's (tool-run.c: the agent
 * loop's and hull mcp's server's). A thread that, every AGENT_WATCH_TICK_MS until
 * watch_stop, makes an eventfd readable once (the tool's cancel_fd) when the call must end: the
 * interrupt flag set, the cancel time passed, or the caller's should_fire saying so; and calls
 * the caller's tick (its progress reports) under the watch's lock. A tool's own notes reach the
 * caller's state under the same lock (watch_lock / watch_unlock). */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct watch_config {
        const atomic_bool *interrupt;            /* set: fire; NULL: none */
        uint64_t cancel_at_ms;                   /* fire at this time (now_mono_ms's clock) */
        bool (*should_fire)(void *ud);           /* asked every tick (without the lock); NULL: never */
        void (*tick)(void *ud, uint64_t now_ms); /* every tick, under the lock; NULL: none */
        void *ud;
} watch_config;

typedef struct watch {
        watch_config cfg;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_t thread;
        bool stop, started, fired, inited;
        int efd; /* the cancel fd: readable once the call must end; -1 before watch_start */
} watch;

/* Make the fd and start the thread. Returns 0, or a negative errno (w can still be stopped). */
int watch_start(watch *w, const watch_config *cfg);
/* Stop the thread, close the fd. After a failed watch_start too. */
void watch_stop(watch *w);

void watch_lock(watch *w);
void watch_unlock(watch *w);
