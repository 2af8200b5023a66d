/* serve-metrics.h: hull serve's run and session counters (plimsoll's outcomes, refusal reasons
 * and session ends), registered by name in the HTTP layer's registry (metrics.h). Every function
 * takes the registry; a NULL one counts nothing. */
#pragma once

#include <stdint.h>

#include "metrics.h"
#include "plimsoll.h"

typedef enum metrics_outcome {
        METRICS_RUN_OK,     /* ran and exited 0 (every step, for a project) */
        METRICS_RUN_FAILED, /* ran and exited non-zero, or a step failed */
        METRICS_RUN_TIMED_OUT,
        METRICS_RUN_SETUP_FAILED, /* the project's files could not be written */
        METRICS_RUN_ERROR,        /* the sandbox or the broker failed; cancelled at shutdown */
        _METRICS_RUN_MAX,
} metrics_outcome;

/* Register the families below in m (at start-up). Returns 0 or -E2BIG. */
int serve_metrics_register(metrics *m);

void metrics_run_started(metrics *m);
/* A run ended after `us` microseconds with an outcome. */
void metrics_run_ended(metrics *m, metrics_outcome o, uint64_t us);
/* An admitted run the broker did not start (counted as a capacity refusal instead). */
void metrics_run_dropped(metrics *m);
void metrics_refusal(metrics *m, plim_reason r);
void metrics_session_opened(metrics *m);
void metrics_session_ended(metrics *m, plim_session_end why);
void metrics_session_call(metrics *m);
