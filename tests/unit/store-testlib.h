/* store-testlib.h: the resources and events tests/unit/test-store.c stores, as the /v1 API shapes
 * them (only the fields the store's columns need). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "store.h"

static inline char *time_of(unsigned sec, char buf[static STORE_TIME_MAX]) {
        snprintf(buf, STORE_TIME_MAX, "2026-01-01T00:%02u:%02u.000Z", sec / 60 % 60, sec % 60);
        return buf;
}

static inline json_t *agent_obj(const char *id, unsigned sec, int64_t version, bool archived) {
        char t[STORE_TIME_MAX];
        return json_pack("{s:s, s:s, s:s, s:I, s:o}", "id", id, "type", "agent", "created_at", time_of(sec, t),
                         "version", (json_int_t) version, "archived_at",
                         archived ? json_string("2026-02-01T00:00:00Z") : json_null());
}

static inline json_t *session_obj(const char *id, unsigned sec, const char *status, const char *agent, int64_t version,
                                  bool archived) {
        char t[STORE_TIME_MAX];
        return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:I}, s:o}", "id", id, "type", "session", "created_at",
                         time_of(sec, t), "status", status, "agent", "id", agent, "version", (json_int_t) version,
                         "archived_at", archived ? json_string("2026-02-01T00:00:00Z") : json_null());
}

static inline json_t *event_obj(const char *id, const char *type, const char *processed_at) {
        return json_pack("{s:s, s:s, s:o}", "id", id, "type", type, "processed_at",
                         processed_at ? json_string(processed_at) : json_null());
}

static inline const char *sid(json_t *o) {
        return json_string_value(json_object_get(o, "id"));
}
