/* v1-shape-internal.h: what the v1-shape*.c files (one per resource: agents, environments,
 * sessions, client events) share beyond v1-shape.h: a field's path, the checkers every body goes
 * through (v1-shape.c), and what a session borrows from the agents and the events. Every checker
 * refuses through v1_fail (see v1-shape.h): a negative errno, e filled, naming the field's path. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "limits.h"
#include "v1-shape.h"

/* A field's path ("tools[2].configs[0].name"), as each refusal names it. */
typedef char v1_path[V1_FIELD_PATH_MAX];

static inline bool eq(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

/* ---- the shared checkers (v1-shape.c) ---- */

/* p = base.key (key alone when base is NULL or ""), p = base[i]; a path too long for the buffer
 * is cut short (it only ever names the field). */
void v1_path_key(v1_path p, const char *base, const char *key);
void v1_path_idx(v1_path p, const char *base, size_t i);

/* "a, b, c" from a NULL-ended list, written in buf (n bytes, cut short when too long); returns buf. */
const char *v1_join(const char *const *v, char *buf, size_t n);
/* Whether s is one of the NULL-ended list v. */
bool v1_in_list(const char *s, const char *const *v);
/* "an object", "a string", ... for a refusal (a static string). */
const char *v1_json_kind(const json_t *v);

/* 0 when v is of type t, else -EINVAL (400: "path: must be what, not ..."; v NULL: missing). */
int v1_want(const json_t *v, json_type t, const char *path, const char *what, v1_err *e);
/* 0 when o is an object whose every key is in known (NULL-ended), else -EINVAL (400) naming the
 * first unknown field and the known ones. */
int v1_check_object(const json_t *o, const char *path, const char *const *known, v1_err *e);

enum {
        F_REQUIRED = 1 << 0, /* absent refused */
        F_NULLABLE = 1 << 1, /* null accepted (*ret NULL) */
        F_NONEMPTY = 1 << 2, /* "" refused */
};

/* o[key] as a string of at most max bytes, no NUL, borrowed from o; *ret NULL when absent (or
 * null with F_NULLABLE). -EINVAL (400) otherwise. */
int v1_get_str(const json_t *o, const char *key, const char *path, size_t max, unsigned flags, const char **ret,
               v1_err *e);
/* o[key] as one of the strings in v (required unless def is given; absent: *ret = def). */
int v1_get_enum(const json_t *o, const char *key, const char *path, const char *const *v, const char *def,
                const char **ret, v1_err *e);
/* o[key] as a boolean: *ret 1 or 0, -1 when absent. */
int v1_get_bool(const json_t *o, const char *key, const char *path, int *ret, v1_err *e);

/* A new reference: the string s, or null when s is NULL or "" (NULL on ENOMEM). */
json_t *v1_str_or_null(const char *s);

/* ---- what a session borrows (v1-shape-agent.c, v1-shape-event.c) ---- */

/* Set the agent object a's field key from the body's value v (null clears what can be cleared);
 * keys that are not an agent's fields are ignored. path prefixes the field's path in refusals. */
int v1_agent_set(json_t *a, const char *key, const json_t *v, const char *path, v1_err *e);
/* 0 when every mcp_toolset of tools names a server of servers and every server is used by one;
 * else -EINVAL (400). */
int v1_agent_check_mcp(const json_t *tools, const json_t *servers, const char *path, v1_err *e);

/* An array of events (path names it) checked → *ret a new array of the events' copies;
 * only_messages for a session's initial_events (user.message only, none allowed). */
int v1_events_parse_array(const json_t *v, const char *path, bool only_messages, json_t **ret, v1_err *e);
