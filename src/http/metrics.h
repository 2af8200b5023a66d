/* metrics.h: hull serve's counters and their Prometheus text rendering. Every counter is an
 * atomic in one struct owned by the daemon; any thread may count. */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "plimsoll.h"

typedef enum metrics_outcome {
        METRICS_RUN_OK,     /* ran and exited 0 (every step, for a project) */
        METRICS_RUN_FAILED, /* ran and exited non-zero, or a step failed */
        METRICS_RUN_TIMED_OUT,
        METRICS_RUN_SETUP_FAILED, /* the project's files could not be written */
        METRICS_RUN_ERROR,        /* the sandbox or the broker failed; cancelled at shutdown */
        _METRICS_RUN_MAX,
} metrics_outcome;

/* The statuses hull serve answers with; anything else is counted as "other". */
#define METRICS_STATUSES 200, 400, 401, 403, 404, 405, 429, 500, 501, 503
#define METRICS_N_STATUSES 11 /* the list above and "other" */
#define METRICS_N_BUCKETS 13  /* latency histogram upper bounds, see metrics.c */

typedef struct metrics {
        atomic_uint_fast64_t runs[_METRICS_RUN_MAX];
        atomic_int_fast64_t runs_in_flight;
        atomic_uint_fast64_t run_buckets[METRICS_N_BUCKETS + 1]; /* the last is +Inf */
        atomic_uint_fast64_t run_us_sum;
        atomic_uint_fast64_t refusals[_PLIM_REASON_MAX]; /* by NotDispatched reason */
        atomic_uint_fast64_t http[METRICS_N_STATUSES];
        atomic_int_fast64_t sessions_open;
        atomic_uint_fast64_t sessions_opened;
        atomic_uint_fast64_t session_calls;
        atomic_uint_fast64_t sessions_ended[16]; /* by plim_session_end */
} metrics;

void metrics_init(metrics *m);
void metrics_run_started(metrics *m);
/* A run ended after `us` microseconds with an outcome. */
void metrics_run_ended(metrics *m, metrics_outcome o, uint64_t us);
/* An admitted run the broker did not start (counted as a capacity refusal instead). */
void metrics_run_dropped(metrics *m);
void metrics_refusal(metrics *m, plim_reason r);
void metrics_http(metrics *m, unsigned status);
void metrics_session_opened(metrics *m);
void metrics_session_ended(metrics *m, plim_session_end why);
void metrics_session_call(metrics *m);

/* The Prometheus text exposition (format 0.0.4). Returns 0 with a new buffer or -ENOMEM. */
int metrics_render(metrics *m, char **ret, size_t *ret_len);
