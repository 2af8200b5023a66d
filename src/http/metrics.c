/* metrics.c: the registry and the /metrics text. */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static const unsigned statuses[] = {200, 400, 401, 403, 404, 405, 429, 500, 501, 503};
static const char *const status_names[] = {"200", "400", "401", "403", "404",  "405",
                                           "429", "500", "501", "503", "other"};
_Static_assert(ELEMENTSOF(statuses) + 1 == ELEMENTSOF(status_names), "statuses and their names");

static const char http_family[] = "hull_http_requests_total";
static const char *const short_names[] = {"polling_thread", "own_thread"};

void metrics_init(metrics *m) {
        *m = (metrics){.http_fam = -1, .http_short_fam = -1};
        for (size_t i = 0; i < METRICS_SERIES_MAX; i++)
                atomic_init(&m->v[i], 0);
        for (size_t i = 0; i < METRICS_FAMILIES_MAX; i++)
                atomic_init(&m->sum_us[i], 0);
}

static size_t series_of(const metrics_desc *d) {
        if (d->type == METRICS_HISTOGRAM)
                return d->n_bounds + 1;
        return d->label ? d->n_values : 1;
}

int metrics_find(const metrics *m, const char *name) {
        for (size_t i = 0; i < m->n_fam; i++)
                if (strcmp(m->fam[i].name, name) == 0)
                        return (int) i;
        return -ENOENT;
}

int metrics_register(metrics *m, const metrics_desc *d) {
        int have = metrics_find(m, d->name);
        if (have >= 0)
                return have;
        size_t n = series_of(d);
        if (m->n_fam >= METRICS_FAMILIES_MAX || n > METRICS_SERIES_MAX - m->n_v)
                return -E2BIG;
        m->fam[m->n_fam] = *d;
        m->first[m->n_fam] = m->n_v;
        m->n_v += n;
        return (int) m->n_fam++;
}

void metrics_add(metrics *m, int fam, size_t series, int64_t delta) {
        if (!m || fam < 0 || (size_t) fam >= m->n_fam || series >= series_of(&m->fam[fam]))
                return;
        atomic_fetch_add(&m->v[m->first[fam] + series], delta);
}

void metrics_add_named(metrics *m, const char *name, size_t series, int64_t delta) {
        if (m)
                metrics_add(m, metrics_find(m, name), series, delta);
}

void metrics_observe(metrics *m, int fam, uint64_t us) {
        if (!m || fam < 0 || (size_t) fam >= m->n_fam || m->fam[fam].type != METRICS_HISTOGRAM)
                return;
        const metrics_desc *d = &m->fam[fam];
        size_t b = 0;
        while (b < d->n_bounds && (double) us / 1e6 > d->bounds_s[b])
                b++;
        atomic_fetch_add(&m->v[m->first[fam] + b], 1);
        atomic_fetch_add(&m->sum_us[fam], us);
}

int metrics_http_register(metrics *m) {
        metrics_desc d = {.name = http_family,
                          .help = "HTTP requests answered, by status.",
                          .type = METRICS_COUNTER,
                          .label = "code",
                          .values = status_names,
                          .n_values = ELEMENTSOF(status_names)};
        int f = metrics_register(m, &d);
        if (f < 0)
                return f;
        m->http_fam = f; /* every answer counts: no lookup by name on that path */
        metrics_desc sd = {.name = "hull_http_short_calls_total",
                           .help = "Short calls (a session's cell, a hull.v1 procedure), by the thread they ran on: "
                                   "libmicrohttpd's own, when it served their connection alone, or one of their own.",
                           .type = METRICS_COUNTER,
                           .label = "thread",
                           .values = short_names,
                           .n_values = ELEMENTSOF(short_names)};
        int g = metrics_register(m, &sd);
        if (g >= 0)
                m->http_short_fam = g;
        return g < 0 ? g : f;
}

void metrics_http_short(metrics *m, bool polling_thread) {
        if (m)
                metrics_add(m, m->http_short_fam, polling_thread ? 0 : 1, 1);
}

void metrics_http(metrics *m, unsigned status) {
        size_t i = 0;
        while (i < ELEMENTSOF(statuses) && statuses[i] != status)
                i++;
        if (m)
                metrics_add(m, m->http_fam, i, 1);
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

static void render_histogram(text *t, metrics *m, size_t f) {
        const metrics_desc *d = &m->fam[f];
        uint64_t cum = 0;
        for (size_t i = 0; i <= d->n_bounds; i++) {
                cum += (uint64_t) atomic_load(&m->v[m->first[f] + i]);
                if (i < d->n_bounds)
                        add(t, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", d->name, d->bounds_s[i], cum);
                else
                        add(t, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", d->name, cum);
        }
        add(t, "%s_sum %.6f\n%s_count %" PRIu64 "\n", d->name, (double) atomic_load(&m->sum_us[f]) / 1e6, d->name, cum);
}

static const char *const type_names[] = {
        [METRICS_COUNTER] = "counter",
        [METRICS_GAUGE] = "gauge",
        [METRICS_HISTOGRAM] = "histogram",
};

int metrics_render(metrics *m, char **ret, size_t *ret_len) {
        text t = {.p = malloc(SERVE_METRICS_TEXT_MAX), .max = SERVE_METRICS_TEXT_MAX};
        if (!t.p)
                return -ENOMEM;
        for (size_t f = 0; f < m->n_fam; f++) {
                const metrics_desc *d = &m->fam[f];
                add(&t, "# HELP %s %s\n# TYPE %s %s\n", d->name, d->help, d->name, type_names[d->type]);
                if (d->type == METRICS_HISTOGRAM)
                        render_histogram(&t, m, f);
                else if (!d->label)
                        add(&t, "%s %" PRIdFAST64 "\n", d->name, atomic_load(&m->v[m->first[f]]));
                else
                        for (size_t i = 0; i < d->n_values; i++)
                                add(&t, "%s{%s=\"%s\"} %" PRIdFAST64 "\n", d->name, d->label,
                                    d->values ? d->values[i] : d->value_name(i), atomic_load(&m->v[m->first[f] + i]));
        }
        if (t.overflow) {
                free(t.p);
                return -ENOMEM;
        }
        *ret = t.p;
        *ret_len = t.len;
        return 0;
}
