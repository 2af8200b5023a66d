/* metrics.c: counters and the /metrics text. */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "limits.h"
#include "macro.h"

static const unsigned statuses[] = {METRICS_STATUSES};
static const double buckets_s[METRICS_N_BUCKETS] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
static const char *const outcomes[_METRICS_RUN_MAX] = {
        [METRICS_RUN_OK] = "ok",
        [METRICS_RUN_FAILED] = "failed",
        [METRICS_RUN_TIMED_OUT] = "timed_out",
        [METRICS_RUN_SETUP_FAILED] = "setup_failed",
        [METRICS_RUN_ERROR] = "error",
};

_Static_assert(ELEMENTSOF(statuses) + 1 == METRICS_N_STATUSES, "METRICS_N_STATUSES");

void metrics_init(metrics *m) {
        for (size_t i = 0; i < _METRICS_RUN_MAX; i++)
                atomic_init(&m->runs[i], 0);
        atomic_init(&m->runs_in_flight, 0);
        for (size_t i = 0; i <= METRICS_N_BUCKETS; i++)
                atomic_init(&m->run_buckets[i], 0);
        atomic_init(&m->run_us_sum, 0);
        for (size_t i = 0; i < _PLIM_REASON_MAX; i++)
                atomic_init(&m->refusals[i], 0);
        for (size_t i = 0; i < METRICS_N_STATUSES; i++)
                atomic_init(&m->http[i], 0);
}

void metrics_run_started(metrics *m) {
        atomic_fetch_add(&m->runs_in_flight, 1);
}

void metrics_run_ended(metrics *m, metrics_outcome o, uint64_t us) {
        atomic_fetch_sub(&m->runs_in_flight, 1);
        atomic_fetch_add(&m->runs[(unsigned) o < _METRICS_RUN_MAX ? o : METRICS_RUN_ERROR], 1);
        size_t b = 0;
        while (b < METRICS_N_BUCKETS && (double) us / 1e6 > buckets_s[b])
                b++;
        atomic_fetch_add(&m->run_buckets[b], 1);
        atomic_fetch_add(&m->run_us_sum, us);
}

void metrics_run_dropped(metrics *m) {
        atomic_fetch_sub(&m->runs_in_flight, 1);
}

void metrics_refusal(metrics *m, plim_reason r) {
        if (r > PLIM_REASON_NONE && r < _PLIM_REASON_MAX)
                atomic_fetch_add(&m->refusals[r], 1);
}

void metrics_http(metrics *m, unsigned status) {
        size_t i = 0;
        while (i < ELEMENTSOF(statuses) && statuses[i] != status)
                i++;
        atomic_fetch_add(&m->http[i], 1);
}

/* A bounded text buffer: appends past the end are dropped and reported by the final check. */
typedef struct text {
        char *p;
        size_t len, max;
        bool overflow;
} text;

static void add(text *t, const char *fmt, ...) _printf_(2, 3);
static void add(text *t, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->max - t->len, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= t->max - t->len)
                t->overflow = true;
        else
                t->len += (size_t) n;
}

void metrics_session_opened(metrics *m) {
        if (!m)
                return;
        atomic_fetch_add(&m->sessions_open, 1);
        atomic_fetch_add(&m->sessions_opened, 1);
}

void metrics_session_ended(metrics *m, plim_session_end why) {
        if (!m)
                return;
        atomic_fetch_sub(&m->sessions_open, 1);
        if ((size_t) why < ELEMENTSOF(m->sessions_ended))
                atomic_fetch_add(&m->sessions_ended[why], 1);
}

void metrics_session_call(metrics *m) {
        if (m)
                atomic_fetch_add(&m->session_calls, 1);
}

int metrics_render(metrics *m, char **ret, size_t *ret_len) {
        text t = {.p = malloc(SERVE_METRICS_TEXT_MAX), .max = SERVE_METRICS_TEXT_MAX};
        if (!t.p)
                return -ENOMEM;
        add(&t,
            "# HELP hull_runs_total Runs that hull serve carried out, by outcome.\n# TYPE hull_runs_total counter\n");
        for (size_t i = 0; i < _METRICS_RUN_MAX; i++)
                add(&t, "hull_runs_total{outcome=\"%s\"} %" PRIuFAST64 "\n", outcomes[i], atomic_load(&m->runs[i]));
        add(&t,
            "# HELP hull_runs_in_flight Runs admitted and not yet answered.\n# TYPE hull_runs_in_flight gauge\n"
            "hull_runs_in_flight %" PRIdFAST64 "\n",
            atomic_load(&m->runs_in_flight));
        add(&t, "# HELP hull_run_duration_seconds Time from admission to answer of a run.\n"
                "# TYPE hull_run_duration_seconds histogram\n");
        uint64_t cum = 0;
        for (size_t i = 0; i <= METRICS_N_BUCKETS; i++) {
                cum += atomic_load(&m->run_buckets[i]);
                if (i < METRICS_N_BUCKETS)
                        add(&t, "hull_run_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", buckets_s[i], cum);
                else
                        add(&t, "hull_run_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
        }
        add(&t, "hull_run_duration_seconds_sum %.6f\nhull_run_duration_seconds_count %" PRIu64 "\n",
            (double) atomic_load(&m->run_us_sum) / 1e6, cum);
        add(&t, "# HELP hull_refusals_total Requests refused before anything ran, by reason.\n"
                "# TYPE hull_refusals_total counter\n");
        for (size_t i = 1; i < _PLIM_REASON_MAX; i++)
                add(&t, "hull_refusals_total{reason=\"%s\"} %" PRIuFAST64 "\n", plim_reason_to_string((plim_reason) i),
                    atomic_load(&m->refusals[i]));
        add(&t, "# HELP hull_http_requests_total HTTP requests answered, by status.\n"
                "# TYPE hull_http_requests_total counter\n");
        for (size_t i = 0; i < METRICS_N_STATUSES; i++) {
                if (i < ELEMENTSOF(statuses))
                        add(&t, "hull_http_requests_total{code=\"%u\"} %" PRIuFAST64 "\n", statuses[i],
                            atomic_load(&m->http[i]));
                else
                        add(&t, "hull_http_requests_total{code=\"other\"} %" PRIuFAST64 "\n", atomic_load(&m->http[i]));
        }
        add(&t,
            "# HELP hull_sessions_open Sessions open now.\n# TYPE hull_sessions_open gauge\nhull_sessions_open "
            "%" PRIdFAST64 "\n"
            "# HELP hull_sessions_opened_total Sessions opened.\n# TYPE hull_sessions_opened_total counter\n"
            "hull_sessions_opened_total %" PRIuFAST64 "\n"
            "# HELP hull_session_calls_total Calls made in sessions (cells, runs, workspace operations).\n"
            "# TYPE hull_session_calls_total counter\nhull_session_calls_total %" PRIuFAST64 "\n",
            atomic_load(&m->sessions_open), atomic_load(&m->sessions_opened), atomic_load(&m->session_calls));
        add(&t, "# HELP hull_sessions_ended_total Sessions that ended, by reason.\n# TYPE hull_sessions_ended_total "
                "counter\n");
        for (size_t i = 1; i < _PLIM_SESSION_END_MAX && i < ELEMENTSOF(m->sessions_ended); i++)
                add(&t, "hull_sessions_ended_total{reason=\"%s\"} %" PRIuFAST64 "\n",
                    plim_session_end_to_string((plim_session_end) i), atomic_load(&m->sessions_ended[i]));
        if (t.overflow) {
                free(t.p);
                return -ENOMEM;
        }
        *ret = t.p;
        *ret_len = t.len;
        return 0;
}
