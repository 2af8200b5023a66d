/* time-util.h: the clocks hull reads, in the units it uses. */
#pragma once

#include <stdint.h>
#include <time.h>

/* Monotonic time, for deadlines and durations. */
static inline uint64_t now_mono_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

static inline uint64_t now_mono_ms(void) {
        return now_mono_us() / 1000ULL;
}

/* Wall-clock time in milliseconds since the Unix epoch, for timestamps others read. */
static inline uint64_t now_unix_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000ULL + (uint64_t) ts.tv_nsec / 1000000ULL;
}

/* The time ms milliseconds from now on clock (CLOCK_REALTIME for pthread_cond_timedwait's default
 * condition variables, CLOCK_MONOTONIC for those made with pthread_condattr_setclock). */
static inline struct timespec timespec_after_ms(clockid_t clock, uint64_t ms) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        ts.tv_sec += (time_t) (ms / 1000);
        ts.tv_nsec += (long) (ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        return ts;
}
