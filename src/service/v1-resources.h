/* v1-resources.h: a /v1 session's resources (the session's "resources" and
 * /v1/sessions/{id}/resources): each resource object made from what the SDK sends, by type (file
 * today; another type adds a case to v1_resource_make and to v1_resource_place), and placed in the
 * session's resource directory, MNT_ROOT/<session id>, which the session's sandbox sees read-only
 * at /mnt: a file resource mounted at /mnt/session/uploads/<file_id> (the SDK's default) or at its
 * mount_path under /mnt/session/. Files placed while a sandbox is open show through at once; a
 * sandbox made later finds them all. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "settings.h"
#include "v1-files.h"
#include "v1-shape.h"

/* The sandbox path a file resource is mounted at: given (NULL or "": the default
 * /mnt/session/uploads/<file_id>; a relative path goes below /mnt/session/uploads/) checked: below
 * /mnt/session/, no "." or ".." or empty segment, no control character, at most
 * V1_MOUNT_PATH_MAX - 1 bytes. Returns 0 or -EINVAL (400) with *err naming path. */
int v1_mount_path_resolve(const char *given, const char *file_id, const char *path, char ret[V1_MOUNT_PATH_MAX],
                          v1_err *err);

/* A resource object ({"id": "sesrsc_...", "type", ..., "created_at", "updated_at"}) from a body
 * of the SDK's (path names it in messages); a file resource's file must exist (404); a
 * github_repository is cloned (v1-repo.h) into mnt_root/.repos/ through st's egress guard. */
int v1_resource_make(v1_files *f, const settings *st, const char *mnt_root, const json_t *body, const char *path,
                     const char *now, json_t **ret, v1_err *err);

/* The session object's "resources" (as the create body gave them) made into resource objects,
 * in place; two resources at one mount path are refused (409). */
int v1_resources_resolve(v1_files *f, const settings *st, const char *mnt_root, json_t *session, v1_err *err);

/* The session's resource directory, MNT_ROOT/<session id> (made, mode 0711), into ret, with every
 * resource of resources placed in it. Returns 0 or a negative errno with *e. */
int v1_resources_materialize(v1_files *f, const char *mnt_root, const char *session_id, const json_t *resources,
                             char *ret, size_t size, hull_error *e);
/* Place one resource in the directory dir (a file: a read-only copy at its mount path; a
 * repository: a copy of its clone in mnt_root/.repos/). */
int v1_resource_place(v1_files *f, const char *mnt_root, const char *dir, const json_t *res, hull_error *e);
/* Take one resource out of dir (a repository's clone in mnt_root/.repos/ too when forget). */
void v1_resource_unplace(const char *mnt_root, const char *dir, const json_t *res, bool forget);
/* Take every resource of list out of dir ("": none placed) and drop the repositories' clones (a
 * session that is deleted, or whose create failed). */
void v1_resources_forget(const char *mnt_root, const char *dir, const json_t *list);
/* Make the directories of mount's parent below dir (0755). Returns 0 or a negative errno. */
int v1_resource_mkdir_parent(const char *dir, const char *mount);
