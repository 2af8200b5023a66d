/* store-sqlite-internal.h: the SQLite backend's own (store-sqlite*.c), seen by no other file.
 *
 * One connection behind a mutex. Every call takes the mutex and, while it holds it, charges
 * SQLite's memory to nobody (sqlmem_begin_unbounded): a budget left open on the calling thread
 * by untrusted work (the handle store's queries) can never fail a write here. Writes of more
 * than one statement run in one BEGIN IMMEDIATE transaction. SQL is constant text (a list's
 * fragments chosen from constants), every value from outside is bound.
 *
 * Every function here returns 0 or a negative errno with *e (SQLite's codes mapped by sqlt_fail). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlib-sqlite3.h"
#include "macro.h"
#include "sqlite-mem.h"
#include "store-backend.h"

/* The statements of the hot paths (a GET of a resource, a key's lookup, a turn's appends and
 * updates, their transactions), prepared once. */
enum {
        CACHED_BEGIN,
        CACHED_COMMIT,
        CACHED_SESSION_EXISTS,
        CACHED_LAST_SEQ,
        CACHED_EVENT_INSERT,
        CACHED_EVENT_PROCESSED,
        CACHED_CONVERSATION_PUT,
        CACHED_CONVERSATION_APPEND, /* a turn's messages after the kept text: each turn's end */
        CACHED_UPDATE_ENVIRONMENT,
        CACHED_UPDATE_MEMORY_STORE,
        CACHED_UPDATE_SESSION,
        CACHED_GET_AGENT,
        CACHED_GET_ENVIRONMENT,
        CACHED_GET_SESSION,
        CACHED_GET_MEMORY_STORE,
        CACHED_KEY_FIND,
        CACHED_KEY_COUNT,
        CACHED_DATA_VERSION,
        CACHED_WEBHOOK_WANTED,  /* is there a subscription to a type: each session status of a turn */
        CACHED_WEBHOOK_ENQUEUE, /* to the subscriptions of a type, when there is one */
        _CACHED_MAX,
};

typedef struct sqlt_store {
        store base; /* first: a store * is a sqlt_store * */
        pthread_mutex_t lock;
        sqlite3 *db;
        sqlite3_stmt *cached[_CACHED_MAX];
        uint64_t prepares; /* statements compiled since the store opened (store_prepares) */
        /* how many keys there are, as read when PRAGMA data_version was keys_version (keys_known
         * false: not read yet); this store's own changes forget it at once, another
         * connection's commits change data_version */
        size_t keys;
        int64_t keys_version;
        bool keys_known;
        /* the files' blobs, one file each named by its digest, in path-blobs/ beside hull.db (one
         * node: no bytes through the database); made on first use */
        char blob_dir[4096];
        int blob_fd; /* -1 until then */
} sqlt_store;

static inline sqlt_store *sqlt_of(store *s) {
        return (sqlt_store *) s;
}

/* ---- locking: the mutex, and no memory budget while it is held ---- */

typedef struct sqlt_guard {
        sqlt_store *s;
        sqlmem_scope mem;
} sqlt_guard;

sqlt_guard sqlt_guard_take(sqlt_store *s);
void sqlt_guard_release(sqlt_guard *g);
/* Declared first in a function, so its statements (declared after) are finalized before. */
#define LOCKED(s) _cleanup_(sqlt_guard_release) _unused_ sqlt_guard _guard = sqlt_guard_take(s)

/* ---- statements ---- */

/* SQLite's rc as a negative errno, in *e with what failed and SQLite's message. */
int sqlt_fail(sqlite3 *db, int rc, const char *what, hull_error *e);
int sqlt_prep(sqlt_store *s, const char *sql, sqlite3_stmt **ret, hull_error *e);
/* A cached statement (under the lock): prepared on first use; give it back with sqlt_stmt_resetp. */
int sqlt_prep_cached(sqlt_store *s, unsigned slot, const char *sql, sqlite3_stmt **ret, hull_error *e);
/* The end of a cached statement's use: its read transaction ends, its values go. */
void sqlt_stmt_resetp(sqlite3_stmt **p);
/* v, or NULL as SQL NULL; SQLite's rc. */
int sqlt_bind_text(sqlite3_stmt *st, int i, const char *v);
int sqlt_bind_fail(sqlt_store *s, int rc, hull_error *e);
/* Run a statement that returns no row. */
int sqlt_step_done(sqlt_store *s, sqlite3_stmt *st, const char *what, hull_error *e);
int sqlt_exec(sqlt_store *s, const char *sql, const char *what, hull_error *e);
/* The JSON text in column col parsed (-EBADMSG when it is not). */
int sqlt_load_column(sqlite3_stmt *st, int col, const char *what, json_t **ret, hull_error *e);
/* One statement with its values bound: texts ?1..?6 where non-NULL, integers ?7..?10, each only
 * up to the highest number the statement names. */
typedef struct sqlt_args {
        const char *t[6];
        int64_t i[4];
} sqlt_args;
int sqlt_args_prep(sqlt_store *s, const char *sql, const sqlt_args *a, sqlite3_stmt **ret, hull_error *e);
/* Prepared, bound and stepped to its end: -EEXIST on a constraint, the rows changed in *ret_changes
 * (when not NULL). */
int sqlt_args_run(sqlt_store *s, const char *sql, const sqlt_args *a, const char *what, int *ret_changes,
                  hull_error *e);
/* Steps a listing's statement to its end (columns: key, id, the object's JSON): each row's key
 * into keys (when not NULL), its object appended to out (when not NULL), the count in *ret_n. */
int sqlt_page_rows(sqlt_store *s, sqlite3_stmt *st, const char *what, store_rowkey *keys, json_t *out, size_t *ret_n,
                   hull_error *e);
/* -ENOENT with *e when there is no session of this id. */
int sqlt_session_exists(sqlt_store *s, const char *session_id, hull_error *e);

/* A transaction that rolls back unless committed. */
typedef struct sqlt_tx {
        sqlt_store *s;
} sqlt_tx;

int sqlt_tx_begin(sqlt_store *s, sqlt_tx *t, hull_error *e);
int sqlt_tx_commit(sqlt_tx *t, hull_error *e);
void sqlt_tx_rollbackp(sqlt_tx *t);
#define _cleanup_tx_ _cleanup_(sqlt_tx_rollbackp)

/* ---- the operations (store_ops), by resource ---- */

/* store-sqlite-objects.c */
int sqlt_insert(store *base, store_kind k, const store_cols *c, const char *body, hull_error *e);
int sqlt_get(store *base, store_kind k, const char *id, int64_t version, json_t **ret, char **ret_raw, size_t *ret_len,
             hull_error *e);
int sqlt_update(store *base, store_kind k, const store_cols *c, const char *body, hull_error *e);
/* sqlt_update with the store's lock held (inside a transaction of the caller's) */
int sqlt_update_locked(sqlt_store *s, store_kind k, const store_cols *c, const char *body, hull_error *e);
int sqlt_remove(store *base, store_kind k, const char *id, hull_error *e);
int sqlt_list(store *base, const store_listing *l, const char *page, unsigned limit, store_page *ret,
              int64_t **ret_keys, hull_error *e);
int sqlt_sessions_with_status(store *base, const char *statuses, json_t **ret, hull_error *e);

/* store-sqlite-events.c */
int sqlt_events_append(store *base, const char *session_id, json_t *const *events, size_t n, int64_t *ret_first_seq,
                       hull_error *e);
int sqlt_events_append_object(store *base, const char *session_id, json_t *const *events, size_t n, const store_cols *c,
                              const char *body, store_conv_write *conv, char **ret_texts, int64_t *ret_first_seq,
                              hull_error *e);
int sqlt_events_set_processed(store *base, const char *session_id, const char *event_id, const char *processed_at,
                              int64_t processed_ms, hull_error *e);
int sqlt_events_last_seq(store *base, const char *session_id, int64_t *ret, hull_error *e);
int sqlt_events_seq_of(store *base, const char *session_id, const char *event_id, int64_t *ret, hull_error *e);
int sqlt_conversation_put(store *base, const char *session_id, const char *body, hull_error *e);
int sqlt_conversation_get(store *base, const char *session_id, json_t **ret, hull_error *e);
int sqlt_conversation_append(store *base, const char *session_id, const char *tail, hull_error *e);

/* store-sqlite-keys.c */
int sqlt_key_add(store *base, const store_key *k, hull_error *e);
int sqlt_key_list(store *base, store_key **ret, size_t *ret_n, hull_error *e);
int sqlt_key_delete(store *base, const char *id, hull_error *e);
int sqlt_key_find(store *base, const char digest_hex[static 65], store_key *ret, hull_error *e);
int sqlt_key_count(store *base, size_t *ret, hull_error *e);
int sqlt_sandbox_add(store *base, const char *session_id, const char *fingerprint, const char *opened_at,
                     hull_error *e);
int sqlt_sandbox_list(store *base, const char *session_id, json_t **ret, hull_error *e);
int sqlt_thread_get(store *base, const char *thread_id, char ret[static STORE_ID_MAX], hull_error *e);
int sqlt_thread_put(store *base, const char *thread_id, const char *session_id, hull_error *e);
int sqlt_env_put(store *base, const char *name, const json_t *spec, const char *digest, json_t **ret, hull_error *e);
int sqlt_env_get(store *base, const char *name, int64_t version, json_t **ret, hull_error *e);
int sqlt_env_list(store *base, bool all_versions, json_t **ret, hull_error *e);
int sqlt_env_delete(store *base, const char *name, hull_error *e);

/* store-sqlite-vaults.c */
extern const store_vault_ops sqlt_vault_ops;
/* store-sqlite-deploy.c */
extern const store_deploy_ops sqlt_deploy_ops;
/* store-sqlite-memory.c */
int sqlt_memory_apply(store *base, const store_memory_change *c, const char *memory_body, const char *memory_path,
                      const char *version_id, const char *operation, int64_t created_ms, const char *version_body,
                      char ret_conflict[static STORE_ID_MAX], hull_error *e);
int sqlt_memory_get(store *base, const char *store_id, const char *memory_id, const char *path, json_t **ret,
                    hull_error *e);
int sqlt_memory_scan(store *base, const char *store_id, const char *from, bool from_inclusive, const char *below,
                     unsigned limit, json_t **ret, hull_error *e);
int sqlt_memory_version_get(store *base, const char *store_id, const char *version_id, json_t **ret, hull_error *e);
int sqlt_memory_version_put(store *base, const char *store_id, const char *version_id, const char *body, hull_error *e);
/* store-sqlite-files.c */
int sqlt_file_insert(store *base, const char *id, int64_t created_ms, const char *scope_id, const char *sha256,
                     int64_t size, const char *body, int fd, hull_error *e);
int sqlt_file_get(store *base, const char *id, json_t **ret, char *ret_sha256, hull_error *e);
int sqlt_file_list(store *base, const store_files_q *q, json_t **ret, bool *ret_more, hull_error *e);
int sqlt_file_delete(store *base, const char *id, hull_error *e);
int sqlt_blob_read(store *base, const char *sha256, store_chunk_fn fn, void *ud, hull_error *e);
int sqlt_blob_path(store *base, const char *sha256, char *ret, size_t size, hull_error *e);
