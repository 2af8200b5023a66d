/* serve-metrics.c: see serve-metrics.h. */
#include "serve-metrics.h"

#include <errno.h>

#include "macro.h"

static const double buckets_s[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
static const char *const outcomes[_METRICS_RUN_MAX] = {
        [METRICS_RUN_OK] = "ok",
        [METRICS_RUN_FAILED] = "failed",
        [METRICS_RUN_TIMED_OUT] = "timed_out",
        [METRICS_RUN_SETUP_FAILED] = "setup_failed",
        [METRICS_RUN_ERROR] = "error",
};

static const char runs[] = "hull_runs_total", in_flight[] = "hull_runs_in_flight",
                  duration[] = "hull_run_duration_seconds", refusals[] = "hull_refusals_total",
                  open_now[] = "hull_sessions_open", opened[] = "hull_sessions_opened_total",
                  calls[] = "hull_session_calls_total", ended[] = "hull_sessions_ended_total";

/* Series i of the refusals and the session ends: the reasons after NONE / UNSPECIFIED. */
static const char *reason_name(size_t i) {
        return plim_reason_to_string((plim_reason) (i + 1));
}
static const char *end_name(size_t i) {
        return plim_session_end_to_string((plim_session_end) (i + 1));
}

int serve_metrics_register(metrics *m) {
        const metrics_desc d[] = {
                {.name = runs,
                 .help = "Runs that hull serve carried out, by outcome.",
                 .label = "outcome",
                 .values = outcomes,
                 .n_values = _METRICS_RUN_MAX},
                {.name = in_flight, .help = "Runs admitted and not yet answered.", .type = METRICS_GAUGE},
                {.name = duration,
                 .help = "Time from admission to answer of a run.",
                 .type = METRICS_HISTOGRAM,
                 .bounds_s = buckets_s,
                 .n_bounds = ELEMENTSOF(buckets_s)},
                {.name = refusals,
                 .help = "Requests refused before anything ran, by reason.",
                 .label = "reason",
                 .value_name = reason_name,
                 .n_values = _PLIM_REASON_MAX - 1},
                {.name = open_now, .help = "Sessions open now.", .type = METRICS_GAUGE},
                {.name = opened, .help = "Sessions opened."},
                {.name = calls, .help = "Calls made in sessions (cells, runs, workspace operations)."},
                {.name = ended,
                 .help = "Sessions that ended, by reason.",
                 .label = "reason",
                 .value_name = end_name,
                 .n_values = _PLIM_SESSION_END_MAX - 1},
        };
        for (size_t i = 0; i < ELEMENTSOF(d); i++)
                if (metrics_register(m, &d[i]) < 0)
                        return -E2BIG;
        return 0;
}

void metrics_run_started(metrics *m) {
        metrics_add_named(m, in_flight, 0, 1);
}

void metrics_run_ended(metrics *m, metrics_outcome o, uint64_t us) {
        if (!m)
                return;
        metrics_add_named(m, in_flight, 0, -1);
        metrics_add_named(m, runs, (unsigned) o < _METRICS_RUN_MAX ? o : METRICS_RUN_ERROR, 1);
        metrics_observe(m, metrics_find(m, duration), us);
}

void metrics_run_dropped(metrics *m) {
        metrics_add_named(m, in_flight, 0, -1);
}

void metrics_refusal(metrics *m, plim_reason r) {
        if (r > PLIM_REASON_NONE && r < _PLIM_REASON_MAX)
                metrics_add_named(m, refusals, (size_t) r - 1, 1);
}

void metrics_session_opened(metrics *m) {
        metrics_add_named(m, open_now, 0, 1);
        metrics_add_named(m, opened, 0, 1);
}

void metrics_session_ended(metrics *m, plim_session_end why) {
        metrics_add_named(m, open_now, 0, -1);
        if (why > PLIM_SESSION_END_UNSPECIFIED && why < _PLIM_SESSION_END_MAX)
                metrics_add_named(m, ended, (size_t) why - 1, 1);
}

void metrics_session_call(metrics *m) {
        metrics_add_named(m, calls, 0, 1);
}
