/* watch.h: the watcher of a running tool call, the tool-call runner's (tool-run.c: the agent
 * loop's and hull mcp's server's). A thread that, every AGENT_WATCH_TICK_MS while a call is armed,
 * makes an eventfd readable once (the tool's cancel_fd) when the call must end: the interrupt flag
 * set, the cancel time passed, or the caller's should_fire saying so; and calls the caller's tick
 * (its progress reports) under the watch's lock. A tool's own notes reach the caller's state under
 * the same lock (watch_lock / watch_unlock).
 *
 * A watch is either made for one call (watch_init, watch_arm, watch_done) or kept by its owner
 * across calls (watch_init once, watch_arm ... watch_disarm per call, watch_done at the end): a kept
 * watch's thread and eventfd serve every call, so a call makes neither; the thread waits between
 * calls and ends after AGENT_WATCH_IDLE_MS without one (the next call starts it again). One call
 * at a time per watch. */
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
        pthread_cond_t cond;    /* the thread's wake-up: a call armed, or stop */
        pthread_cond_t settled; /* a should_fire in flight returned (watch_disarm waits for it) */
        pthread_t thread;
        bool stop, started, ended, fired, inited, armed, asking;
        int efd; /* the cancel fd: readable once the call must end; -1 before watch_init */
} watch;

/* Make the lock and the fd; no thread yet. Returns 0, or a negative errno (w can still be done). */
int watch_init(watch *w);
/* Watch one call with cfg: the thread started when none runs, else woken. The fd is unread (not
 * readable) when the call starts. Returns 0, or a negative errno (no thread: the call is not
 * watched; disarm it still). */
int watch_arm(watch *w, const watch_config *cfg);
/* The call ended: after this returns, none of its callbacks runs or will run, and the fd is read
 * empty again. */
void watch_disarm(watch *w);
/* End the thread, close the fd (after a failed watch_init too). */
void watch_done(watch *w);

void watch_lock(watch *w);
void watch_unlock(watch *w);
