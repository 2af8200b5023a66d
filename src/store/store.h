/* store.h: hull's own state, behind one interface whatever holds it: SQLite ($HULL_HOME/hull.db;
 * store-sqlite*.c) or PostgreSQL (a postgres:// URL; store-pg*.c), the only modules that see
 * sqlite3* or PGconn* for it; a backend implements store-backend.h's store_ops, and callers see
 * only this header. Agents (every version kept), environments, sessions, each session's
 * append-only event log, API keys (their digests only) and the conversation of each session.
 * SQLite's database is opened in WAL mode with synchronous=NORMAL and a busy timeout; both are
 * brought to the newest schema by the same numbered migrations (each in one transaction; SQLite's
 * user_version, PostgreSQL's schema_migrations say which ran). A function that returns 0 after a
 * write has committed it: an event appended is durable against a crash of the process before the
 * caller answers, and a session's events are numbered 1, 2, ... without a gap or a duplicate even
 * when several processes append to it.
 *
 * Resources are JSON objects as the /v1 API shows them, stored whole beside the columns the
 * lists filter and sort on. The store checks only what its columns need ("id", "created_at",
 * "version", "status", "archived_at", "agent"); their meaning is the caller's.
 *
 * Thread-safe (SQLite: one connection behind a mutex; PostgreSQL: a small pool of connections,
 * one held by each call); every call is short. PostgreSQL's
 * errors add -ECONNRESET (the connection was lost during the call: whether a write was done is
 * unknown; the next call reconnects) and -ENOTCONN (no connection to be had). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

typedef struct store store;

/* Open (creating it, mode 0600) and migrate the database at path: a file path or "sqlite:PATH" is
 * SQLite; "postgres://..." or "postgresql://..." is PostgreSQL (a libpq connection URI; the
 * database must exist, its tables are made). Returns 0 with *ret (free with store_close), or a
 * negative errno with *e (SQLite or libpq cannot be loaded: -ENOSYS; a newer schema than this hull
 * knows: -EPROTO; a file that is not a database: -EINVAL; a PostgreSQL server that cannot be
 * reached or refuses: -ECONNREFUSED). *e never holds the URL's password. */
int store_open(const char *path, store **ret, hull_error *e);
/* Whether url names PostgreSQL (postgres:// or postgresql://). */
bool store_url_is_pg(const char *url);
/* url for a log or a message: a PostgreSQL URL without its password and query; a path as is. */
void store_url_describe(const char *url, char *buf, size_t size);
/* The backend's name: "sqlite" or "postgresql". */
const char *store_backend_name(store *s);
void store_close(store *s);
static inline void store_closep(store **s) {
        if (*s)
                store_close(*s);
}
#define _cleanup_store_ _cleanup_(store_closep)

/* The schema version this hull migrates SQLite's database to, and the one of an open database. */
int store_schema_version(void);
int store_user_version(store *s);
/* The schema version s's backend migrates to (the same number for both today). */
int store_backend_schema_version(store *s);

typedef enum store_kind {
        STORE_AGENT, /* versioned: every version is a row; "version" counts from 1 */
        STORE_ENVIRONMENT,
        STORE_SESSION,
        STORE_MEMORY_STORE, /* a memory store (store-memory.c has its memories and versions) */
        _STORE_KIND_MAX,
} store_kind;

/* ---- resources ----
 * obj must hold "id" (a string of at most STORE_ID_MAX bytes) and "created_at" (RFC 3339 UTC,
 * as from store_now_rfc3339); "archived_at" (null or a string) decides whether it is archived.
 * Agents: "version" (integer >= 1). Sessions: "status" (string) and "agent" ({"id","version"}). */

/* Insert a new resource (an agent: its version 1). -EEXIST when the id exists. */
int store_insert(store *s, store_kind k, const json_t *obj, hull_error *e);

/* The resource (a new reference): the newest version of an agent when version is 0, else that
 * version. -ENOENT when there is none. */
int store_get(store *s, store_kind k, const char *id, int64_t version, json_t **ret, hull_error *e);

/* The same as its stored JSON text (malloc'd, NUL-terminated; *ret_len bytes): what a GET answers
 * without parsing it. */
int store_get_raw(store *s, store_kind k, const char *id, int64_t version, char **ret, size_t *ret_len, hull_error *e);

/* Replace a resource by obj (same id). For an agent this adds a version: obj's "version" must be
 * the newest + 1, else -ESTALE (someone else updated it first; nothing is written). -ENOENT when
 * there is none. */
int store_update(store *s, store_kind k, const json_t *obj, hull_error *e);

/* Delete a resource (every version of an agent; a session's events and conversation too).
 * -ENOENT when there is none. */
int store_delete(store *s, store_kind k, const char *id, hull_error *e);

/* A list query. Pages are opaque cursors (at most STORE_CURSOR_MAX - 1 bytes, [A-Za-z0-9_-]). */
typedef struct store_list_q {
        unsigned limit;   /* 1..STORE_PAGE_MAX (0: STORE_PAGE_DEFAULT) */
        const char *page; /* a cursor from an earlier answer of the same query, or NULL */
        bool descending;  /* by created_at then id; false: oldest first */
        bool include_archived;
        const char *created_gt, *created_gte, *created_lt, *created_lte; /* RFC 3339 or NULL */
        /* sessions only */
        const char *agent_id;        /* NULL: any */
        int64_t agent_version;       /* 0: any */
        const char *const *statuses; /* n_statuses of them; 0: any */
        size_t n_statuses;
        const char *memory_store_id; /* with a memory_store resource of this store; NULL: any */
        /* agents only: every version of this agent, oldest first (the other filters ignored) */
        const char *versions_of;
} store_list_q;

typedef struct store_page {
        json_t *data;                     /* array of the objects (a new reference) */
        char next_page[STORE_CURSOR_MAX]; /* "" when there is no next page */
        char prev_page[STORE_CURSOR_MAX]; /* "" when there is no previous page */
} store_page;
void store_page_done(store_page *p);

/* -EINVAL with *e for a cursor that is not one of this query's. */
int store_list(store *s, store_kind k, const store_list_q *q, store_page *ret, hull_error *e);

/* ---- a session's events ----
 * Each event is a JSON object with "id" (unique in the store), "type" and "processed_at"; the
 * store gives it the session's next sequence number (1, 2, ...). */

/* Append n events to the session's log in one transaction; *ret_first_seq (may be NULL) gets
 * the first one's sequence number (the others follow). -ENOENT when the session does not
 * exist, -EEXIST when an id is taken (nothing written). */
int store_events_append(store *s, const char *session_id, json_t *const *events, size_t n, int64_t *ret_first_seq,
                        hull_error *e);
/* A session's conversation written in an append's own transaction (store_events_append_object;
 * on nodes store_events_append_with_session, which takes the whole text only):
 * the whole text (len bytes, NUL-terminated), or with append what follows the kept text's last
 * message, as store_conversation_put_text and store_conversation_append_text take them (total_len:
 * the whole text's length). result, set by the append: 0 once committed with the events, else why
 * not: -ENOENT (no conversation kept to add to), -EINVAL, -E2BIG (the events are appended all the
 * same), -ECANCELED (the append failed: nothing was written). */
typedef struct store_conv_write {
        const char *text;
        size_t len, total_len;
        bool append;
        int result;
} store_conv_write;

/* store_events_append and store_update of the session object (session, its id session_id; NULL:
 * the events alone) in the same transaction: one commit where they took two. SQLite only
 * (-EOPNOTSUPP elsewhere: nodes use store_events_append_with_session, which takes a conversation
 * too, whole). Nothing written on failure.
 * conv (NULL: none): the session's conversation written in the same transaction, when it can be
 * (conv->result). ret_texts (NULL, or n pointers set to NULL that the caller frees, set on
 * success): each event's compact JSON as stored, for a caller that streams it (one serialisation,
 * not two). */
int store_events_append_object(store *s, const char *session_id, json_t *const *events, size_t n, const json_t *session,
                               store_conv_write *conv, char **ret_texts, int64_t *ret_first_seq, hull_error *e);

typedef struct store_events_q {
        unsigned limit;           /* 1..STORE_EVENTS_PAGE_MAX (0: STORE_PAGE_DEFAULT) */
        const char *page;         /* a cursor from an earlier answer, or NULL */
        bool descending;          /* false: oldest first (by sequence) */
        int64_t after_seq;        /* only events with a larger sequence number (0: all) */
        const char *const *types; /* n_types of them; 0: any */
        size_t n_types;
        const char *created_gt, *created_gte, *created_lt, *created_lte; /* on processed_at */
} store_events_q;

/* A page of events (store_page.data: the event objects; prev_page unused). *ret_seqs (may be
 * NULL; malloc'd, one per event) gets their sequence numbers. */
int store_events_list(store *s, const char *session_id, const store_events_q *q, store_page *ret, int64_t **ret_seqs,
                      hull_error *e);

/* Set the "processed_at" of an event appended while queued (null then), in its body and in the
 * column the created_* filters read. -ENOENT when the session has no event with this id,
 * -EINVAL when processed_at is not an RFC 3339 time. */
int store_events_set_processed(store *s, const char *session_id, const char *event_id, const char *processed_at,
                               hull_error *e);

/* The session's last sequence number (0 when it has no event). */
int store_events_last_seq(store *s, const char *session_id, int64_t *ret, hull_error *e);

/* The sequence number of the event with this id in this session; -ENOENT when none. */
int store_events_seq_of(store *s, const char *session_id, const char *event_id, int64_t *ret, hull_error *e);

/* ---- a session's conversation (the model messages, model.h's form) ---- */
int store_conversation_put(store *s, const char *session_id, const json_t *messages, hull_error *e);
/* The same from the conversation's JSON text as json_dumps(messages, JSON_COMPACT) writes it (len
 * bytes, NUL-terminated): what a caller that keeps it (model_conversation_text) hands on without
 * the dump. -EINVAL when it is not an array's text, -E2BIG past STORE_OBJECT_BYTES_MAX. */
int store_conversation_put_text(store *s, const char *session_id, const char *body, size_t len, hull_error *e);
/* Add messages to the kept conversation without writing it again: tail (tail_len bytes,
 * NUL-terminated) is what follows the kept text's last message in the longer text, without its
 * closing ']' (",{...},{...}"); total_len the whole text's length (the bound's check). A turn's
 * end appends a few KB instead of rewriting the conversation (store_conversation_put_text
 * writes it whole again, when an older message changed in place). -ENOENT when no conversation
 * is kept (put it whole), -EINVAL for a tail that does not start with ',', -E2BIG past the bound. */
int store_conversation_append_text(store *s, const char *session_id, const char *tail, size_t tail_len,
                                   size_t total_len, hull_error *e);
/* *ret: a new reference, or NULL when none was stored. */
int store_conversation_get(store *s, const char *session_id, json_t **ret, hull_error *e);

/* ---- API keys: only the SHA-256 digest (hex) of a key is stored ---- */
typedef struct store_key {
        char id[STORE_ID_MAX]; /* "key_..." */
        char name[STORE_NAME_MAX];
        char digest_hex[65];
        char created_at[STORE_TIME_MAX];
        char hint[STORE_KEY_HINT_MAX]; /* the key's first characters, to tell keys apart */
} store_key;

/* -EEXIST for a digest already stored. */
int store_key_add(store *s, const store_key *k, hull_error *e);
/* All keys, oldest first (malloc'd). */
int store_key_list(store *s, store_key **ret, size_t *ret_n, hull_error *e);
/* -ENOENT when none. */
int store_key_delete(store *s, const char *id, hull_error *e);
/* Is there a key with this digest? 1 yes, 0 no, or a negative errno. */
int store_key_find(store *s, const char digest_hex[static 65], store_key *ret, hull_error *e);
/* How many keys there are: read again after this store changed them, or after another process
 * committed anything to the database (PRAGMA data_version), so a key `hull key create` adds
 * beside a running daemon counts from its next request. */
int store_key_count(store *s, size_t *ret, hull_error *e);

/* How many SQL statements s has compiled since it opened (SQLite's prepares: a turn's statements
 * are prepared once and kept, and a test counts that they stay so); 0 for a backend that does not
 * count (PostgreSQL prepares once per connection, counted by its own test). */
uint64_t store_prepares(store *s);

/* Sessions whose "status" is one of statuses (for the start-up's recovery of cut turns): their
 * ids, a new array. */
int store_sessions_with_status(store *s, const char *const *statuses, size_t n, json_t **ret, hull_error *e);

/* ---- the sandboxes a session opened (hull's extension: their audit logs) ---- */

/* Remember that the session opened a sandbox of this fingerprint (64 lowercase hex digits) at
 * opened_at (RFC 3339); the same one again is not an error. -ENOENT without the session. */
int store_sandbox_add(store *s, const char *session_id, const char *fingerprint, const char *opened_at, hull_error *e);
/* The session's sandboxes, oldest first: a new array of {"fingerprint","opened_at"}. */
int store_sandbox_list(store *s, const char *session_id, json_t **ret, hull_error *e);

/* ---- AG-UI threads: each is one session (deleted with it) ---- */

/* The session of thread_id (1 to STORE_THREAD_ID_MAX - 1 bytes) into ret; -ENOENT when none. */
int store_thread_get(store *s, const char *thread_id, char ret[static STORE_ID_MAX], hull_error *e);
/* Map thread_id to session_id; -EEXIST when the thread has one, -ENOENT without the session. */
int store_thread_put(store *s, const char *thread_id, const char *session_id, hull_error *e);
/* ---- hull's named environments (hull env): every change a new version ----
 * Each version is an object {"name", "version" (1, 2, ...), "created_at", "digest" (the layer's,
 * "" when it has no packages), "spec" (env-spec.h's JSON form)}. */

/* Store spec as the next version of name (version 1 when new); the same spec as the newest
 * version adds nothing. *ret: the newest version's object (a new reference). */
int store_env_put(store *s, const char *name, const json_t *spec, const char *digest, json_t **ret, hull_error *e);
/* The newest version (version 0) or that version. -ENOENT when there is none. */
int store_env_get(store *s, const char *name, int64_t version, json_t **ret, hull_error *e);
/* The newest version of each environment by name, or every version of every one (a new array). */
int store_env_list(store *s, bool all_versions, json_t **ret, hull_error *e);
/* Delete every version. -ENOENT when there is none. */
int store_env_delete(store *s, const char *name, hull_error *e);

/* ---- memory stores' memories and their versions (store-memory.c) ----
 * A memory store is a resource of kind STORE_MEMORY_STORE; deleting it deletes its memories and
 * versions. A memory is a JSON object with at least "id", "path" (unique in its store) and
 * "memory_version_id" (its head); a version one with "id", "memory_id", "operation" and
 * "created_at". Their meaning is the caller's (src/service/v1-memory*.c). */

/* One change of a memory, written in one transaction with the version it makes. */
typedef struct store_memory_change {
        const char *store_id;
        const char *memory_id;
        const char *expect_version_id; /* the memory's head now; NULL: it is new (its path must be free) */
        const json_t *memory;          /* its new object, or NULL: the memory is deleted */
        const json_t *version;         /* the version appended to the store's history */
        const char *session_id;        /* the session that made the change, or NULL */
        size_t memories_max;           /* a new memory beyond this many in the store: -ENOSPC */
} store_memory_change;

/* Apply c: -ENOENT without the store, -ESTALE when the memory's head is not c->expect_version_id
 * (or it is gone, or a new one's id exists), -EEXIST when another memory of the store has the
 * path (*ret_conflict, may be NULL, gets its id), -ENOSPC when the store is full. Nothing is
 * written unless it returns 0. */
int store_memory_apply(store *s, const store_memory_change *c, char ret_conflict[static STORE_ID_MAX], hull_error *e);
/* The memory of this id (path NULL) or this path (memory_id NULL): -ENOENT when none. */
int store_memory_get(store *s, const char *store_id, const char *memory_id, const char *path, json_t **ret,
                     hull_error *e);
/* Up to limit memories of the store in path order (bytes), their paths from from (inclusive or
 * not; NULL: the first) and below below (NULL: no bound): a new array. */
int store_memory_scan(store *s, const char *store_id, const char *from, bool from_inclusive, const char *below,
                      unsigned limit, json_t **ret, hull_error *e);
/* A version of the store's history: -ENOENT when none. */
int store_memory_version_get(store *s, const char *store_id, const char *version_id, json_t **ret, hull_error *e);
/* Replace a version's object (a redaction): -ENOENT when none. */
int store_memory_version_put(store *s, const char *store_id, const json_t *version, hull_error *e);

typedef struct store_memory_versions_q {
        unsigned limit;                                 /* 1..STORE_PAGE_MAX (0: STORE_PAGE_DEFAULT) */
        const char *page;                               /* a cursor from an earlier answer of the same query, or NULL */
        const char *memory_id, *session_id, *operation; /* filters; NULL: any */
        const char *created_gte, *created_lte;          /* RFC 3339 or NULL */
} store_memory_versions_q;

/* The store's versions, newest first. -ENOENT without the store. */
int store_memory_versions_list(store *s, const char *store_id, const store_memory_versions_q *q, store_page *ret,
                               hull_error *e);

/* Now, RFC 3339 UTC with milliseconds ("2026-12-02T10:00:00.123Z"). */
void store_now_rfc3339(char ret[static STORE_TIME_MAX]);

/* An RFC 3339 time ("2026-12-02T10:00:00Z", fractions and offsets too) as Unix milliseconds, as
 * the store reads "created_at", "processed_at" and the created_* filters. Pure. Returns 0, or
 * -EINVAL when s is not one (NULL included). */
int store_time_ms(const char *s, int64_t *ret);

/* ---- hull db ---- */

/* 1 when s holds no row in any table, 0 when it does; a negative errno with *e. */
int store_is_empty(store *s, hull_error *e);

/* After each table: its name and the rows copied. */
typedef void (*store_copy_progress_fn)(void *ud, const char *table, size_t rows);
/* Every row of from into to (empty, else -ENOTEMPTY; the same schema version, else -EPROTO), table
 * by table, parents first, a batch of STORE_COPY_BATCH rows a transaction: agents with every
 * version, environments, sessions, events with their seqs, conversations, keys, sandboxes,
 * threads, named environments, memory stores with their memories and versions. A failure leaves to partly written (copy
 * again into a new one). */
int store_copy(store *from, store *to, store_copy_progress_fn progress, void *ud, hull_error *e);

/* What is wrong with s (*ret a JSON array of strings, one a problem; empty: nothing): a schema
 * version not this hull's, a session whose seqs are not 1..N without a gap (or, on PostgreSQL,
 * whose counter is not N). Returns 0 or a negative errno with *e. */
int store_check(store *s, json_t **ret, hull_error *e);

/* ---- vaults and their credentials (issue 22; store-vault.c) ----
 * A vault or a credential is its JSON object as the API shows it (no secret in it), and a
 * credential also has its sealed secrets (vault-seal.h's envelope, never parsed here) and the id
 * of the key that sealed them, in columns of their own. obj must hold "id", "created_at" and
 * "archived_at" (null or a string); a credential also "vault_id" and "auth" with a string
 * "mcp_server_url". Deleting a vault deletes its credentials. */
typedef enum store_vkind {
        STORE_VAULT,
        STORE_VAULT_CREDENTIAL,
} store_vkind;

/* create: insert (-EEXIST when the id exists, or a credential of the same mcp_server_url is
 * active in the vault; -ENOENT for a credential without its vault), else replace the row of
 * obj's id (-ENOENT without one). sealed and key_id: a credential's (else NULL). */
int store_vault_put(store *s, store_vkind k, const json_t *obj, const char *sealed, const char *key_id, bool create,
                    hull_error *e);
/* The object (a new reference) and, for a credential when ret_sealed, its sealed secrets
 * (malloc'd). vault_id: a credential's vault (-ENOENT when it is another's). */
int store_vault_get(store *s, store_vkind k, const char *vault_id, const char *id, json_t **ret, char **ret_sealed,
                    hull_error *e);
/* -ENOENT when there is none. */
int store_vault_delete(store *s, store_vkind k, const char *vault_id, const char *id, hull_error *e);
/* The vaults, or the credentials of vault_id (-ENOENT without the vault), oldest first; q's
 * limit, page and include_archived (the other filters are not used). */
int store_vault_list(store *s, store_vkind k, const char *vault_id, const store_list_q *q, store_page *ret,
                     hull_error *e);
/* The credentials whose secrets were sealed with another key than key_id (for a rekey): a new
 * array of [vault_id, id]. */
int store_vault_stale(store *s, const char *key_id, json_t **ret, hull_error *e);
/* ---- files (/v1/files): a file's row, and its bytes as a blob named by its SHA-256; two files
 * of the same bytes share one blob. PostgreSQL keeps a blob in the database itself, in chunks of
 * STORE_BLOB_CHUNK_BYTES (so every node sharing the database reads it); SQLite, which one node
 * alone uses, keeps it as a file named by its digest in the directory PATH-blobs beside hull.db
 * (hard-linked from the caller's file when they share a file system), so its bytes never pass
 * through SQLite's pages. ---- */

/* Insert the file obj ("id", "created_at"; its scope's session id or NULL in scope_id) whose
 * bytes are the size bytes of the regular file fd (read with pread from offset 0) with SHA-256
 * digest sha256 (64 lowercase hex): the blob's chunks are written unless a blob of that digest is
 * held already, all in one transaction. -EEXIST for an id that exists. */
int store_file_insert(store *s, const json_t *obj, const char *scope_id, const char *sha256, int64_t size, int fd,
                      hull_error *e);
/* The file id (-ENOENT when none) into *ret, and its blob's digest into ret_sha256 (may be NULL). */
int store_file_get(store *s, const char *id, json_t **ret, char *ret_sha256, hull_error *e);
typedef struct store_files_q {
        unsigned limit;        /* 1..V1_FILES_PAGE_MAX */
        const char *after_id;  /* the files after (older than) this one; NULL: from the newest */
        const char *before_id; /* the files before (newer than) this one; NULL: none */
        const char *scope_id;  /* only the files of this session's scope; NULL: every file */
} store_files_q;
/* Files newest first (created_at, then id): *ret a JSON array of them, *ret_more whether more
 * lie beyond the page in the direction asked. -ENOENT when after_id or before_id names no file. */
int store_file_list(store *s, const store_files_q *q, json_t **ret, bool *ret_more, hull_error *e);
/* Delete file id and, when no other file holds its bytes, its blob. -ENOENT when none. */
int store_file_delete(store *s, const char *id, hull_error *e);
/* Each chunk of the blob sha256, in order, to fn (which returns 0 or a negative errno that stops
 * the read). -ENOENT when no such blob is held. */
typedef int (*store_chunk_fn)(void *ud, const void *p, size_t n, hull_error *e);
int store_blob_read(store *s, const char *sha256, store_chunk_fn fn, void *ud, hull_error *e);
/* The path of blob sha256 (into ret, size bytes) when the backend keeps it as a file (SQLite):
 * 0, -ENOENT when no such blob is held; -EOPNOTSUPP when it keeps blobs in the database. */
int store_blob_path(store *s, const char *sha256, char *ret, size_t size, hull_error *e);
/* ---- scheduled deployments and their runs (issue 23; store-deploy.c) ----
 * A deployment is its JSON object as the API shows it, with "id", "created_at", "archived_at" (null
 * or a string), "status" ("active" or "paused") and "agent" {"id"}; a run one with "id",
 * "created_at", "deployment_id", "trigger_context" {"type"} and "error" (null: it succeeded). Each
 * deployment row also keeps the time of the last scheduled run claimed (store_deploy_claim), which
 * no put changes. Runs are append-only. */
typedef enum store_dkind {
        STORE_DEPLOYMENT,
        STORE_DEPLOYMENT_RUN,
} store_dkind;

/* create: insert (-EEXIST when the id exists), else replace a deployment's object (-ENOENT without
 * it; runs cannot be replaced: -EINVAL). */
int store_deploy_put(store *s, store_dkind k, const json_t *obj, bool create, hull_error *e);
/* -ENOENT when there is none. */
int store_deploy_get(store *s, store_dkind k, const char *id, json_t **ret, hull_error *e);

typedef struct store_deploy_q {
        unsigned limit;   /* 1..STORE_PAGE_MAX (0: STORE_PAGE_DEFAULT) */
        const char *page; /* a cursor from an earlier answer of the same query, or NULL */
        /* deployments */
        bool include_archived;
        const char *status, *agent_id; /* NULL: any */
        /* runs */
        const char *deployment_id, *trigger_type;                        /* NULL: any */
        int has_error;                                                   /* -1: any, 0: succeeded, 1: failed */
        const char *created_gt, *created_gte, *created_lt, *created_lte; /* RFC 3339 or NULL */
} store_deploy_q;

/* Newest first (created_at, then id). */
int store_deploy_list(store *s, store_dkind k, const store_deploy_q *q, store_page *ret, hull_error *e);

/* Claim deployment id's scheduled run at scheduled_ms (Unix milliseconds) in one atomic statement:
 * 1 when this caller claimed it (the deployment is active, not archived, and no run at or after
 * scheduled_ms was claimed before, by this process or any other sharing the database), 0 when
 * not; so a run is never made twice, whatever restarts. */
int store_deploy_claim(store *s, const char *id, int64_t scheduled_ms, hull_error *e);

/* ---- nodes: several hull serve sharing one PostgreSQL store (store-node.c) ----
 * Every function is -EOPNOTSUPP on SQLite (one node). Times are the database server's (no clock
 * of a node is compared with another's); a row or lease not renewed for ttl_ms is dead. */
typedef struct store_node {
        const char *id;        /* --node-id: [A-Za-z0-9._-], 1 to 63 bytes */
        const char *instance;  /* this process's random id: tells a restart from a second live node */
        const char *advertise; /* the URL other nodes and clients reach it at */
        unsigned capacity;     /* sessions it runs turns of at once */
        const char *tiers;     /* a JSON array of the sandbox tiers it has */
} store_node;
/* Register node n: its row made, or taken over from a dead one of that id (or from an earlier
 * life of this instance). -EEXIST with a message naming it when a live node holds the id. */
int store_node_join(store *s, const store_node *n, uint64_t ttl_ms, hull_error *e);
/* The heartbeat: the node's row (with the turns it runs now) and every lease it holds renewed for
 * ttl_ms. -ESTALE when the row is gone or another instance's (this node was taken for dead): it
 * joins again. */
int store_node_beat(store *s, const char *node_id, const char *instance, uint64_t ttl_ms, unsigned running,
                    hull_error *e);
/* The live node other than except_id with the most free capacity (capacity - running > 0): its id
 * and advertise URL; -ENOENT when every other node is full or there is none. */
int store_node_roomiest(store *s, const char *except_id, uint64_t ttl_ms, char ret_id[static STORE_ID_MAX],
                        char ret_url[static NODE_URL_MAX], hull_error *e);
/* The node's row and its leases removed (hull serve stops cleanly). */
int store_node_leave(store *s, const char *node_id, const char *instance, hull_error *e);

typedef struct store_lease {
        char node_id[STORE_ID_MAX];   /* who holds it now */
        char advertise[NODE_URL_MAX]; /* ... and its URL ("" unknown) */
        char dead_node[STORE_ID_MAX]; /* claimed from this dead node's expired lease ("" none) */
} store_lease;
/* Claim the lease on session_id's turns for node_id (or renew it when held). 0: held by node_id
 * (ret->dead_node says whether it was taken from a dead node: its turn is cut); -EBUSY: another
 * live node holds it (ret->node_id, ret->advertise); -ENOENT: no such session. */
int store_lease_claim(store *s, const char *session_id, const char *node_id, uint64_t ttl_ms, store_lease *ret,
                      hull_error *e);
/* Give the lease up (when node_id holds it). With ret_pending (else NULL): only when the session's
 * log has no user.message or system.message still queued (processed_at null: sent on another
 * node while this one ran the turn); else -EAGAIN, the lease kept, and *ret_pending those events
 * in order (a JSON array), for this node to run. Checked and deleted in one statement, so a
 * message queued by another node is either seen here or finds the lease gone (and runs there). */
int store_lease_release(store *s, const char *session_id, const char *node_id, json_t **ret_pending, hull_error *e);
/* Take every lease that expired (its node died) for node_id, with FOR UPDATE SKIP LOCKED so two
 * nodes never take the same one: *ret a JSON array of {"session_id", "dead_node"}. */
int store_leases_reap(store *s, const char *node_id, uint64_t ttl_ms, json_t **ret, hull_error *e);
/* Wait at most timeout_ms for appends to any session (PostgreSQL's NOTIFY hull_events from every
 * node, this one's too): fn(ud, session_id, last_seq) for each. A wake-up only: a NOTIFY lost (a
 * reconnect) is not replayed, so the caller also polls. 0 (nothing, or after the calls), or a
 * negative errno (-ECONNRESET: the connection was lost and is made again on the next call). One
 * thread calls it. */
typedef void (*store_wake_fn)(void *ud, const char *session_id, int64_t seq);
int store_events_wait(store *s, int timeout_ms, store_wake_fn fn, void *ud, hull_error *e);
/* store_events_append and the session object written in one transaction (one round trip, one
 * commit), only when the session's stored body is still the text if_body. 0 with *ret_stored
 * (malloc'd; ret_stored may be NULL) the body written; -ESTALE with *ret_stored the body stored now
 * (another node, or another writer here, changed it: merge, then try again), nothing written;
 * -ENOENT: no such session. PostgreSQL only (nodes; -EOPNOTSUPP on SQLite). */
/* A session's stored body as store_get_raw gives it; on a node from memory while no NOTIFY for it
 * came (store-pg-cache.c): another node's write may be missing for the short window docs/DEPLOY.md
 * gives, this store's own never. For reads that are answered, never for one a write is made from.
 * Without nodes (SQLite): store_get_raw. */
int store_session_get_cached(store *s, const char *id, char **ret, size_t *ret_len, hull_error *e);
/* A session's stored body (as store_get_raw, never from memory) and its log's last seq, read
 * together in one statement (one round trip): a node's sync of a session asks for the events after
 * its last seq only when the log grew. PostgreSQL only (nodes; -EOPNOTSUPP on SQLite). */
int store_session_get_seq(store *s, const char *id, char **ret, size_t *ret_len, int64_t *ret_last_seq, hull_error *e);
/* deliveries (JSON text, may be NULL): webhook deliveries queued in the same statement, only when
 * the events are appended, each [{"e": its event id, "t": its type, "c": created ms, "b": its
 * body}] for every enabled subscription that wants its type (as store_webhook_enqueue; the
 * delivery worker woken when one was). conv (NULL: none): the session's conversation, its whole
 * text, written in the same statement (conv->result 0 once committed with the events; nothing of
 * it when the append fails: -ECANCELED), so a turn's idle and its conversation commit together
 * and a node that dies after the idle leaves both. A tail (conv->append) is not taken here
 * (-EOPNOTSUPP: the caller writes it apart): a node's kept text may be stale, another node having
 * run a turn of the session since, so nodes write the whole text; -EINVAL and -E2BIG as
 * store_conversation_put_text (the events are appended all the same). */
int store_events_append_with_session(store *s, const char *session_id, json_t *const *events, size_t n,
                                     const json_t *session, const char *if_body, const char *deliveries,
                                     store_conv_write *conv, int64_t *ret_first_seq, char **ret_stored, hull_error *e);

/* store_events_append and store_lease_claim in one statement (one commit, where they took two)
 * when the lease is free or already node_id's and alive: the message that starts a turn. -EBUSY
 * when it is another node's or expired (nothing written, no message set): claim it with
 * store_lease_claim (which says whose, or cuts a dead node's turn), then append. -ENOENT: no such
 * session. PostgreSQL only (nodes; -EOPNOTSUPP on SQLite). */
int store_events_append_claim(store *s, const char *session_id, json_t *const *events, size_t n, const char *node_id,
                              uint64_t ttl_ms, int64_t *ret_first_seq, hull_error *e);

/* Which node holds a session's sandbox (the node that opened it; its life told by its instance). */
typedef struct store_owner {
        char node_id[STORE_ID_MAX];
        char advertise[NODE_URL_MAX]; /* "" when its row is gone */
        bool alive;                   /* that life of the node is alive (its row, its instance, a fresh heartbeat) */
        int64_t beat_age_ms;          /* its last heartbeat's age (-1: its row is gone or another life's) */
} store_owner;
/* Record that node_id (life instance) holds session_id's sandbox now. */
int store_sandbox_owner_set(store *s, const char *session_id, const char *node_id, const char *instance, hull_error *e);
/* The node that holds session_id's sandbox: 0 with *ret, -ENOENT when none is recorded. A node
 * that leaves, dies (reaped) or starts a new life has its rows removed. */
int store_sandbox_owner_get(store *s, const char *session_id, uint64_t ttl_ms, store_owner *ret, hull_error *e);
/* A node by its id (what an id that names its node, an MCP session's, is forwarded to): 0 with
 * *ret (its advertise URL, whether it is alive, its heartbeat's age), -ENOENT when no node has
 * that id (it left, or never joined). */
int store_node_get(store *s, const char *node_id, uint64_t ttl_ms, store_owner *ret, hull_error *e);
/* store_session_get_seq and store_sandbox_owner_get in one statement (one round trip): a send's
 * look at where the session's sandbox is, with the sync of the session it then appends to
 * (*ret_owner's node_id "" when no holder is recorded). PostgreSQL only (-EOPNOTSUPP on SQLite). */
int store_session_get_seq_owner(store *s, const char *id, uint64_t ttl_ms, char **ret, size_t *ret_len,
                                int64_t *ret_last_seq, store_owner *ret_owner, hull_error *e);
/* Whether the database could not be reached on the last try (PostgreSQL stopped, restarting,
 * unreachable): a failure then is worth a 503 and a retry, not a 500. Always false on SQLite. */
bool store_unreachable(store *s);
