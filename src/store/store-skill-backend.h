/* store-skill-backend.h: what a backend of the store implements for skills (store-skill.h), as
 * rows: skills (id, created_ms, body) and skill_versions (skill_id, version, created_ms, body,
 * zip as base64 text). The front (store-skill.c) checks the arguments and makes the JSON and the
 * cursors. Only src/store/ includes it. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store-backend.h"

typedef struct store_skill_ops {
        /* create: insert the skill row; else update its body (-ENOENT without it). Then insert the
         * version. One transaction. */
        int (*put)(store *s, bool create, const char *skill_id, int64_t created_ms, const char *skill_body,
                   int64_t version, int64_t version_ms, const char *version_body, const char *zip_b64, hull_error *e);
        /* version 0: the skill's body; else the version's */
        int (*get)(store *s, const char *skill_id, int64_t version, json_t **ret, hull_error *e);
        int (*zip)(store *s, const char *skill_id, int64_t version, char **ret_b64, hull_error *e);
        /* skill_id NULL: skills by (created_ms, id) descending, below (after_key, after_id) when
         * has_after; else the skill's versions by version descending, below after_key. Up to want
         * bodies appended to out, with their keys into keys[] and ids[] (skills). */
        int (*list)(store *s, const char *skill_id, bool has_after, int64_t after_key, const char *after_id,
                    unsigned want, json_t *out, int64_t *keys, char (*ids)[STORE_ID_MAX], size_t *ret_n, hull_error *e);
        /* version 0: the skill (-ENOTEMPTY while it has versions); -1: the skill and its
         * versions; else the version, and the skill's body replaced by skill_body; each in one
         * transaction */
        int (*remove)(store *s, const char *skill_id, int64_t version, const char *skill_body, hull_error *e);
} store_skill_ops;

extern const store_skill_ops sqlt_skill_ops;
extern const store_skill_ops pg_skill_ops;
