/* metrics.h: a registry of counters, gauges and histograms, registered by name, and their
 * Prometheus text rendering. It knows no protocol: the HTTP server registers its status counts,
 * the service its runs and sessions (src/service/serve-metrics.h). Every value is an atomic in
 * one struct owned by the daemon; families are registered at start-up, before any thread counts,
 * and any thread may count after. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limits.h"

typedef enum metrics_type {
        METRICS_COUNTER,
        METRICS_GAUGE,
        METRICS_HISTOGRAM, /* of durations: observed in microseconds, rendered in seconds */
} metrics_type;

/* A family. label names the one label its series differ by (NULL: one series); values are the
 * label's values, one series each (for a counter or a gauge), or value_name(i) gives the i-th
 * (for a table that only a function knows). A histogram has one series per
 * bound in bounds_s (upper bounds in seconds, ascending) and +Inf. Every pointer must outlive the
 * registry (string literals, static tables). */
typedef struct metrics_desc {
        const char *name, *help;
        metrics_type type;
        const char *label;
        const char *const *values;
        const char *(*value_name)(size_t i);
        size_t n_values;
        const double *bounds_s;
        size_t n_bounds;
} metrics_desc;

typedef struct metrics {
        metrics_desc fam[METRICS_FAMILIES_MAX];
        size_t first[METRICS_FAMILIES_MAX]; /* each family's first series in v */
        size_t n_fam, n_v;
        atomic_int_fast64_t v[METRICS_SERIES_MAX];
        atomic_uint_fast64_t sum_us[METRICS_FAMILIES_MAX]; /* a histogram's sum */
        int http_fam;       /* hull_http_requests_total's index (metrics_http_register), or -1 */
        int http_short_fam; /* hull_http_short_calls_total's, or -1 */
} metrics;

/* An empty registry. */
void metrics_init(metrics *m);

/* Register a family (at start-up, before any thread counts). Returns its index (>= 0), the index
 * it already has when one of that name is registered, or -E2BIG when the registry is full. */
int metrics_register(metrics *m, const metrics_desc *d);

/* The family called name, or -ENOENT. */
int metrics_find(const metrics *m, const char *name);

/* Add delta to a series of a family (series: the label value's index; 0 without a label).
 * An unknown family or series is ignored. Any thread. */
void metrics_add(metrics *m, int fam, size_t series, int64_t delta);
/* The same by name (what a module that registered by name calls). */
void metrics_add_named(metrics *m, const char *name, size_t series, int64_t delta);
/* Observe a duration in a histogram family. */
void metrics_observe(metrics *m, int fam, uint64_t us);

/* The HTTP statuses the server counts (anything else is "other"): registers
 * hull_http_requests_total (and hull_http_short_calls_total) and returns the first's index (or
 * -E2BIG); metrics_http counts one answer, metrics_http_short one short call
 * (http_req_spawn_short), on the polling thread or not. */
int metrics_http_register(metrics *m);
void metrics_http(metrics *m, unsigned status);
void metrics_http_short(metrics *m, bool polling_thread);

/* The Prometheus text exposition (format 0.0.4), families in the order they were registered.
 * Returns 0 with a new buffer (the caller frees) or -ENOMEM. */
int metrics_render(metrics *m, char **ret, size_t *ret_len);
