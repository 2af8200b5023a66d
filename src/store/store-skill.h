/* store-skill.h: skills (/v1/skills) in the store: a skill (its JSON object, "skill_...") and its
 * versions (each its JSON object, its "version" a decimal string of epoch microseconds, and the
 * zip of its files as skill-pack.h wrote it). Lists are newest first in pages of opaque cursors.
 * Every function returns 0 or a negative errno with *e: -ENOENT (no such skill or version),
 * -EINVAL (a cursor that is not one of this list's), -ENOTEMPTY (a skill that still has
 * versions), -EEXIST (an id or version taken). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* A new skill (skill: "id", "created_at") with its first version (version: "version"). */
int store_skill_create(store *s, const json_t *skill, const json_t *version, const uint8_t *zip, size_t len,
                       hull_error *e);
/* A new version of the skill skill (its object as it is after: latest_version, updated_at set). */
int store_skill_version_add(store *s, const json_t *skill, const json_t *version, const uint8_t *zip, size_t len,
                            hull_error *e);
int store_skill_get(store *s, const char *id, json_t **ret, hull_error *e);
/* with_versions: its versions go too; else -ENOTEMPTY while it has any. */
int store_skill_delete(store *s, const char *id, bool with_versions, hull_error *e);
/* versions_of NULL: the skills; else that skill's versions. */
int store_skill_list(store *s, const char *versions_of, const char *page, unsigned limit, store_page *ret,
                     hull_error *e);
/* version: the decimal string of a version. */
int store_skill_version_get(store *s, const char *id, const char *version, json_t **ret, hull_error *e);
/* The version deleted and the skill's latest_version (and updated_at: now, an RFC 3339 time)
 * moved to the newest left, or null. *ret_skill (may be NULL): the skill after. */
int store_skill_version_delete(store *s, const char *id, const char *version, const char *now, json_t **ret_skill,
                               hull_error *e);
/* The version's zip into *ret (malloc'd). */
int store_skill_zip(store *s, const char *id, const char *version, uint8_t **ret, size_t *ret_len, hull_error *e);
