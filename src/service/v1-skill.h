/* v1-skill.h: /v1 skills (the skills-2025-10-02 beta): an upload (multipart files[] or one zip or
 * tar) made a skill or a new version of one (skill-pack.h checks it, store-skill.h keeps it), the
 * objects as the API shows them, and an agent's skills made ready for its session: their files
 * in one read-only directory the sandbox gets at /skills (one directory per skill, as its upload
 * named it) and the text the system prompt names them with. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limits.h"
#include "store-skill.h"
#include "v1-shape.h"

/* Where a session's sandbox sees its agent's skills. */
#define V1_SKILLS_MOUNT "/skills"

/* An upload (the request's Content-Type and body) made a new skill (skill_id NULL; *ret the
 * skill) or a new version of skill_id (*ret the version). Returns 0, or a negative errno with *e:
 * 400 for the upload (what was wrong), 404 without the skill, 500 for the store. */
int v1_skill_upload(store *st, const char *skill_id, const char *content_type, const uint8_t *body, size_t len,
                    json_t **ret, v1_err *e);

/* A stored skill as the API shows it: both the skills-2025-10-02 beta's fields (display_title,
 * latest_version, source "custom") and the current SDK's (display_name, latest_version_id), source
 * an object {type} unless beta. A new reference, or NULL (out of memory). A version is shown as
 * stored (id and version the same decimal string; name, description, directory). */
json_t *v1_skill_view(const json_t *stored, bool beta);

/* An agent's skills (its "skills": [{type, skill_id, version?}]) made ready: each version
 * resolved (absent or "latest": the skill's latest_version), its files installed once under
 * home/skills/<digest of the list>/<directory>/ (read-only; made again only when missing), that
 * directory into ret_dir ("" when the agent has no skills) and the system prompt's words for
 * them into *ret_prompt (NULL when none; malloc'd). Returns 0 or a negative errno with *e
 * naming the skill that could not be had. */
int v1_skills_prepare(store *st, const json_t *skills, const char *home, char ret_dir[static SBX_PATH_MAX],
                      char **ret_prompt, hull_error *e);
