/* bus.c: the status bus (bus.h). One mutex orders everything: an event gets its id and time and
 * reaches every subscriber under it, so subscribers see events in one order (the order they were
 * emitted, for one thread) and never after they unsubscribed. Callbacks must be short: they run
 * with the bus held (a terminal's line, a transcript's append, an SSE queue's push). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus.h"
#include "macro.h"

typedef struct bus_sub {
        bus_fn fn;
        void *ud;
} bus_sub;

struct bus {
        pthread_mutex_t lock;
        bus_id_fn make_id;
        void *make_id_ud;
        uint64_t seq; /* the bus's own ids */
        bus_sub subs[BUS_SUBSCRIBERS_MAX];
};

int bus_new(bus_id_fn make_id, void *make_id_ud, bus **ret) {
        if (!ret)
                return -EINVAL;
        bus *b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        if (pthread_mutex_init(&b->lock, NULL) != 0) {
                free(b);
                return -ENOMEM;
        }
        b->make_id = make_id;
        b->make_id_ud = make_id_ud;
        *ret = b;
        return 0;
}

void bus_free(bus *b) {
        if (!b)
                return;
        pthread_mutex_destroy(&b->lock);
        free(b);
}

int bus_subscribe(bus *b, bus_fn fn, void *ud) {
        int r = -ENOSPC;
        if (!b || !fn)
                return -EINVAL;
        pthread_mutex_lock(&b->lock);
        for (size_t i = 0; i < BUS_SUBSCRIBERS_MAX; i++)
                if (!b->subs[i].fn) {
                        b->subs[i] = (bus_sub){.fn = fn, .ud = ud};
                        r = (int) i;
                        break;
                }
        pthread_mutex_unlock(&b->lock);
        return r;
}

void bus_unsubscribe(bus *b, int subscription) {
        if (!b || subscription < 0 || (size_t) subscription >= BUS_SUBSCRIBERS_MAX)
                return;
        pthread_mutex_lock(&b->lock);
        b->subs[subscription] = (bus_sub){0};
        pthread_mutex_unlock(&b->lock);
}

/* RFC 3339 in UTC with milliseconds: 2026-04-01T12:34:56.789Z */
static void format_time(char ret[64]) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        snprintf(ret, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L);
}

static void deliver(bus *b, const json_t *event, bool persisted) {
        for (size_t i = 0; i < BUS_SUBSCRIBERS_MAX; i++)
                if (b->subs[i].fn)
                        b->subs[i].fn(b->subs[i].ud, event, persisted);
}

static bool has_type(const json_t *event) {
        return json_is_object(event) && json_string_length(json_object_get(event, "type")) > 0;
}

int bus_emit(bus *b, json_t *event, char ret_id[BUS_ID_MAX]) {
        json_auto_t *ev = event;
        char id[BUS_ID_MAX], when[64];
        if (!b || !has_type(ev))
                return -EINVAL;
        pthread_mutex_lock(&b->lock);
        if (b->make_id) {
                id[0] = '\0';
                b->make_id(b->make_id_ud, event, id);
                id[BUS_ID_MAX - 1] = '\0';
        } else
                snprintf(id, sizeof(id), "evt_%" PRIu64, ++b->seq);
        format_time(when);
        int r = json_object_set_new(ev, "id", json_string(id)) < 0 ||
                                json_object_set_new(ev, "processed_at", json_string(when)) < 0
                        ? -ENOMEM
                        : 0;
        if (r == 0)
                deliver(b, ev, true);
        pthread_mutex_unlock(&b->lock);
        if (r == 0 && ret_id)
                memcpy(ret_id, id, sizeof(id));
        return r;
}

int bus_emit_ephemeral(bus *b, json_t *event) {
        json_auto_t *ev = event;
        if (!b || !has_type(ev))
                return -EINVAL;
        pthread_mutex_lock(&b->lock);
        deliver(b, ev, false);
        pthread_mutex_unlock(&b->lock);
        return 0;
}
