/* v1-deploy-sched.c: the scheduler of the deployments (v1-deploy.h): a min-heap of each armed
 * deployment's next run, and one thread that sleeps on a condition variable until the earliest is
 * due (or an arm wakes it), claims the run in the store and makes it. Re-arming a deployment
 * pushes a new entry and records its due time in armed; an entry whose time is not the one armed
 * is stale and dropped when it comes up. */
#include "v1-deploy-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"

static void heap_swap(sched_entry *a, sched_entry *b) {
        sched_entry t = *a;
        *a = *b;
        *b = t;
}

static int heap_push(v1_deploy *d, int64_t due, const char *id) {
        if (d->n == d->cap) {
                size_t cap = d->cap ? d->cap * 2 : 64;
                sched_entry *h = realloc(d->heap, cap * sizeof(*h));
                if (!h)
                        return -ENOMEM;
                d->heap = h;
                d->cap = cap;
        }
        size_t i = d->n++;
        d->heap[i].due_ms = due;
        snprintf(d->heap[i].id, sizeof(d->heap[i].id), "%s", id);
        while (i > 0 && d->heap[(i - 1) / 2].due_ms > d->heap[i].due_ms) {
                heap_swap(&d->heap[(i - 1) / 2], &d->heap[i]);
                i = (i - 1) / 2;
        }
        return 0;
}

static sched_entry heap_pop(v1_deploy *d) {
        sched_entry top = d->heap[0];
        d->heap[0] = d->heap[--d->n];
        for (size_t i = 0;;) {
                size_t l = 2 * i + 1, r = l + 1, m = i;
                if (l < d->n && d->heap[l].due_ms < d->heap[m].due_ms)
                        m = l;
                if (r < d->n && d->heap[r].due_ms < d->heap[m].due_ms)
                        m = r;
                if (m == i)
                        break;
                heap_swap(&d->heap[i], &d->heap[m]);
                i = m;
        }
        return top;
}

void deploy_sched_arm(v1_deploy *d, const json_t *dep) {
        const char *id = json_string_value(json_object_get(dep, "id"));
        int64_t due = 0;
        bool live = id && !json_is_string(json_object_get(dep, "archived_at")) &&
                    deploy_next_ms(d, dep, v1_deploy_now_ms(d), &due) == 0;
        if (!id)
                return;
        pthread_mutex_lock(&d->lock);
        if (!live)
                json_object_del(d->armed, id);
        else if (json_integer_value(json_object_get(d->armed, id)) != due) {
                if (heap_push(d, due, id) < 0 || json_object_set_new(d->armed, id, json_integer(due)) < 0)
                        dlog_log(d->cfg.log, DLOG_ERROR, "event=deployment-arm id=%s msg=\"out of memory\"", id);
                pthread_cond_signal(&d->cond);
        }
        pthread_mutex_unlock(&d->lock);
}

void v1_deploy_sched_stats(v1_deploy *d, size_t *ret_armed, size_t *ret_bytes) {
        pthread_mutex_lock(&d->lock);
        *ret_armed = json_object_size(d->armed);
        *ret_bytes = d->cap * sizeof(sched_entry);
        pthread_mutex_unlock(&d->lock);
}

/* One due entry: claimed, run, and the deployment armed at its next run. */
static void fire(v1_deploy *d, const sched_entry *en) {
        hull_error e = {0};
        int r = store_deploy_claim(d->cfg.start.store, en->id, en->due_ms, &e);
        if (r < 0)
                dlog_log(d->cfg.log, DLOG_WARN, "event=deployment-claim id=%s msg=\"%s\"", en->id, e.msg);
        if (r == 1) {
                v1_err err = {0};
                if (deploy_run(d, en->id, true, en->due_ms, NULL, &err) < 0)
                        dlog_log(d->cfg.log, DLOG_WARN, "event=deployment-run id=%s msg=\"%s\"", en->id, err.msg);
        }
        json_auto_t *dep = NULL;
        if (store_deploy_get(d->cfg.start.store, STORE_DEPLOYMENT, en->id, &dep, &e) >= 0)
                deploy_sched_arm(d, dep); /* paused ones too: unpause finds them armed */
}

/* The real time to wait for a due time of the scheduler's clock, capped at a minute (the wall
 * clock may be set meanwhile). */
static int64_t wait_ms(v1_deploy *d, int64_t due) {
        int64_t left = due - v1_deploy_now_ms(d);
        if (d->cfg.clock_rate)
                left /= d->cfg.clock_rate;
        return left < 60000 ? left : 60000;
}

static void *sched_main(void *arg) {
        v1_deploy *d = arg;
        pthread_mutex_lock(&d->lock);
        while (!d->stop) {
                if (d->n == 0) {
                        pthread_cond_wait(&d->cond, &d->lock);
                        continue;
                }
                int64_t left = wait_ms(d, d->heap[0].due_ms);
                if (left > 0) {
                        struct timespec ts;
                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        ts.tv_sec += left / 1000;
                        ts.tv_nsec += (left % 1000) * 1000000;
                        if (ts.tv_nsec >= 1000000000) {
                                ts.tv_sec++;
                                ts.tv_nsec -= 1000000000;
                        }
                        pthread_cond_timedwait(&d->cond, &d->lock, &ts);
                        continue;
                }
                sched_entry en = heap_pop(d);
                json_t *a = json_object_get(d->armed, en.id);
                if (!a || json_integer_value(a) != en.due_ms)
                        continue; /* stale */
                json_object_del(d->armed, en.id);
                pthread_mutex_unlock(&d->lock);
                fire(d, &en);
                pthread_mutex_lock(&d->lock);
        }
        pthread_mutex_unlock(&d->lock);
        return NULL;
}

int deploy_sched_start(v1_deploy *d, hull_error *e) {
        int r = -pthread_create(&d->thread, NULL, sched_main, d);
        if (r < 0)
                return hull_err(e, r, "deployments: cannot start the scheduler");
        d->started = true;
        return 0;
}

void deploy_sched_stop(v1_deploy *d) {
        pthread_mutex_lock(&d->lock);
        d->stop = true;
        pthread_cond_signal(&d->cond);
        pthread_mutex_unlock(&d->lock);
        if (d->started)
                pthread_join(d->thread, NULL);
        d->started = false;
}

/* Arm every deployment not archived, a page at a time. */
static int arm_all(v1_deploy *d, hull_error *e) {
        char page[STORE_CURSOR_MAX] = "";
        size_t n = 0;
        for (;;) {
                store_deploy_q q = {.limit = DEPLOY_SCHED_LOAD_PAGE, .page = page[0] ? page : NULL, .has_error = -1};
                store_page p = {0};
                int r = store_deploy_list(d->cfg.start.store, STORE_DEPLOYMENT, &q, &p, e);
                if (r < 0)
                        return r;
                size_t i;
                json_t *dep;
                json_array_foreach(p.data, i, dep) deploy_sched_arm(d, dep);
                n += json_array_size(p.data);
                snprintf(page, sizeof(page), "%s", p.next_page);
                store_page_done(&p);
                if (!page[0])
                        break;
        }
        dlog_log(d->cfg.log, DLOG_INFO, "event=deployments-armed deployments=%zu armed=%zu", n,
                 json_object_size(d->armed));
        return 0;
}

int v1_deploy_new(const v1_deploy_config *cfg, v1_deploy **ret, hull_error *e) {
        v1_deploy *d = calloc(1, sizeof(*d));
        if (!d || !(d->armed = json_object())) {
                free(d);
                return hull_err(e, -ENOMEM, "deployments: out of memory");
        }
        d->cfg = *cfg;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        d->mono_start_ms = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&d->cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&d->lock, NULL);
        pthread_mutex_init(&d->edit, NULL);
        pthread_mutex_init(&d->zlock, NULL);
        int r = arm_all(d, e);
        if (r >= 0)
                r = deploy_sched_start(d, e);
        if (r < 0) {
                v1_deploy_free(d);
                return r;
        }
        *ret = d;
        return 0;
}

void v1_deploy_stop(v1_deploy *d) {
        if (d)
                deploy_sched_stop(d);
}

void v1_deploy_free(v1_deploy *d) {
        if (!d)
                return;
        deploy_sched_stop(d);
        pthread_cond_destroy(&d->cond);
        pthread_mutex_destroy(&d->lock);
        pthread_mutex_destroy(&d->edit);
        pthread_mutex_destroy(&d->zlock);
        for (size_t i = 0; i < d->n_zones; i++)
                tz_free(d->zones[i].zone);
        json_decref(d->armed);
        free(d->heap);
        free(d);
}

int v1_deploy_test_clock(const char *spec, v1_deploy_config *cfg, hull_error *e) {
        if (!spec || !spec[0])
                return 0;
        long long start = 0;
        unsigned rate = 0;
        char tail;
        if (sscanf(spec, "%lld:%u%c", &start, &rate, &tail) != 2 || start <= 0 || rate == 0 || rate > 100000)
                return hull_fail(e, -EINVAL, "HULL_TEST_CLOCK must be START:RATE (Unix seconds, a rate of 1-100000)");
        cfg->clock_start = start;
        cfg->clock_rate = rate;
        dlog_log(cfg->log, DLOG_WARN, "event=test-clock start=%lld rate=%u msg=\"TESTING ONLY\"", start, rate);
        return 0;
}
