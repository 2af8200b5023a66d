/* v1-memory.h: memory stores on /v1 (the agent-memory-2026-07-22 beta;
 * ../shared/reference/cma-api-more.md §4): stores, their memories (paths with content) and every
 * memory's versions (the audit trail, with redaction), over the store (store.h's
 * STORE_MEMORY_STORE and store_memory_*). The shapes (v1-memory.c) are pure; the operations
 * (v1-memory-ops.c) read and write the store, each change one new immutable version, a
 * precondition or a lost race a 409; the attachment of stores to sessions (resources of type
 * memory_store, mounted in the session's sandbox and read back after each tool call) is
 * v1-memory-mount.c's. Refusals fill a v1_err (v1-shape.h). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "store.h"
#include "v1-shape.h"

#define V1_MEMORY_BETA "agent-memory-2026-07-22"

/* ---- shapes (pure) ---- */

/* A create body (name, description?, metadata?) → the memory_store object, a new reference. */
int v1_memory_store_create(const json_t *body, const char *id, const char *now, json_t **ret, v1_err *e);
/* An update body (name?, description? ("" or null clears), metadata? per-key patch) applied to
 * cur; *ret NULL when nothing changes. An archived store cannot be updated (400). */
int v1_memory_store_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, v1_err *e);

/* 0 when path (len bytes: a NUL inside is refused) is a memory's path: "/" then one or more
 * segments, none empty, "." or "..", no control or format character, valid UTF-8, at most
 * STORE_MEMORY_PATH_MAX bytes; as a prefix (prefix true) it must end with "/" instead. Else
 * -EINVAL (400) naming field. */
int v1_memory_path_check(const char *path, size_t len, bool prefix, const char *field, v1_err *e);

/* A memory or a version as an answer shows it: a copy, its content null unless full. */
json_t *v1_memory_view(const json_t *obj, bool full);

/* ---- operations (store I/O) ---- */

/* Who makes a change: an API key (api_key_id; "" when the server has no keys) or a session. */
typedef struct v1_memory_actor {
        const char *session_id; /* a session's tools wrote it, or NULL */
        const char *api_key_id; /* else the key of the request */
} v1_memory_actor;

/* A change of one memory. */
typedef struct v1_memory_req {
        const char *store_id;
        const char *memory_id; /* the memory changed or deleted; NULL: a new one at path */
        const char *path;      /* a new memory's path, or a rename (NULL: kept) */
        const char *content;   /* NULL: kept */
        size_t content_len;
        const char *expect_sha256; /* the content_sha256 the memory must have now, or NULL */
        bool remove;               /* delete the memory */
        v1_memory_actor actor;
} v1_memory_req;

/* Apply q: *ret (may be NULL) the memory after it (full view; NULL after a delete). A no-op
 * (the same content and path) adds no version. 404 without the store or the memory, 400 for a
 * bad path, content over MEMORY_CONTENT_MAX (413) or an archived store, 409
 * memory_precondition_failed_error when expect_sha256 is not the memory's (unless it already
 * holds what was asked), 409 memory_path_conflict_error when the path is another memory's. */
int v1_memory_write(store *s, const v1_memory_req *q, json_t **ret, v1_err *e);

/* The memory (full view) of this id or this path (memory_id NULL): 404 when none. */
int v1_memory_read(store *s, const char *store_id, const char *memory_id, const char *path, json_t **ret, v1_err *e);

/* A page of the store's memories in path order under prefix (NULL: "/"), deeper than depth
 * segments (0: any) rolled up as memory_prefix items; page a cursor of an earlier answer or
 * NULL. *ret {"data":[...],"next_page":...}. */
int v1_memory_list(store *s, const char *store_id, const char *prefix, unsigned depth, const char *page, unsigned limit,
                   bool full, json_t **ret, v1_err *e);

/* Redact a version: its content, path and digests gone, redacted_at and redacted_by set, its
 * record kept. The head of a live memory cannot be (409: change or delete the memory first). */
int v1_memory_redact(store *s, const char *store_id, const char *version_id, const v1_memory_actor *actor, json_t **ret,
                     v1_err *e);

/* The memory store of id (404 when none). */
int v1_memory_store_get(store *s, const char *id, json_t **ret, v1_err *e);

/* ---- sessions (v1-memory-mount.c) ---- */

/* The session object's memory_store resources resolved at its creation: each store must exist
 * and not be archived (404, 400), at most MEMORY_STORES_PER_SESSION_MAX of them, each echoed as
 * {type, memory_store_id, access, instructions, name, description, mount_path} (name and
 * description as they are now; mount_path /mnt/memory/<slug of the name>, unique in the
 * session). Other resources are left as they are. */
int v1_memory_resources_resolve(store *s, json_t *session, v1_err *e);

/* The system prompt's section on the session's memory stores (malloc'd), NULL when it has none. */
char *v1_memory_prompt(const json_t *session);

/* A session's stores as mounted in its sandbox: each store's memories written under
 * /workspace/.memory/<slug> (/mnt/memory is a link there in every sandbox), and what was
 * written, to tell the agent's changes apart after each tool call. */
typedef struct v1_memory_mounts v1_memory_mounts;

/* Mount the session's memory_store resources in box (claims the box for the call itself). *ret
 * NULL when the session has none. Returns 0 or a negative errno with *e. */
struct ss_manager;
struct ss_session;
int v1_memory_mount(store *st, struct ss_manager *ss, struct ss_session *box, const json_t *session,
                    v1_memory_mounts **ret, hull_error *e);
void v1_memory_mounts_free(v1_memory_mounts *m);

/* agent_config.after_call (ud: the mounts): the agent's changes in the mounted stores become new
 * versions (a read-only store's are refused and undone; a change that lost to another session's
 * is not saved and the store's version comes back), told in the call's result. */
struct call_result;
void v1_memory_after_call(void *ud, struct ss_manager *ss, struct ss_session *s, struct call_result *res);
