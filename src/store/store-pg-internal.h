/* store-pg-internal.h: the PostgreSQL backend's own (store-pg*.c), seen by no other file.
 *
 * One PGconn behind a mutex, as the SQLite backend keeps one connection: callers share one store
 * from many threads (the /v1 service's handlers), every call is short, and a mutex keeps each
 * call's statements (and a transaction's) on one connection in order. Several processes or nodes
 * each have their own connection; what they share is PostgreSQL's to order (row locks, unique
 * keys). Every statement goes through pg_exec: constant SQL text, each value bound as $1, $2, ...
 * (never spliced), one round trip (PQexecParams). The connection string is never logged nor put
 * in an error: it may carry a password.
 *
 * Every function here returns 0 or a negative errno with *e (SQLSTATEs mapped by pg_exec). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlib-pq.h"
#include "macro.h"
#include "store-backend.h"

/* One connection of the pool. */
typedef struct pg_conn {
        struct pg_store *owner;
        PGconn *conn; /* NULL until first used (or out of memory then: connected on the next use) */
        bool in_tx;   /* a transaction is open (no reconnect, no retry in it) */
        /* the last failed statement's SQLSTATE and detail */
        char sqlstate[6];
        char detail[256];
        /* the statements prepared on this connection's server session (pg_exec_hot), by their
         * text's hash; forgotten when it is reset */
        uint64_t prepared[STORE_PG_PREPARED_MAX];
        unsigned n_prepared;
        bool no_prepare; /* the server lost one (a pooler's other session): none prepared again */
} pg_conn;

/* What a node answers from memory (store-pg-cache.c says when it is trusted). */
typedef struct pg_cached {
        char id[STORE_ID_MAX];
        char *body; /* a session's stored body, NUL-terminated; NULL: empty slot */
        size_t len;
} pg_cached;
typedef struct pg_cache {
        pthread_mutex_t lock;
        pg_cached *slots; /* STORE_PG_CACHE_SLOTS, made at the first keep */
        uint64_t gen;     /* moves at every forget: a read that raced one is not kept */
        bool connected;   /* the LISTEN connection is up */
        bool waiting;     /* the node's thread is in its poll on it */
        uint64_t drained_ms;
        bool keys_known;
        size_t keys;
        const int *down; /* the store's: nothing is trusted while it is set */
} pg_cache;
typedef enum pg_listen_state { PG_LISTEN_NEW, PG_LISTEN_WAITING, PG_LISTEN_DRAINED, PG_LISTEN_LOST } pg_listen_state;
void pg_cache_init(pg_cache *c, const int *down);
void pg_cache_done(pg_cache *c);
uint64_t pg_cache_gen(pg_cache *c);
/* 1 with a copy of id's stored body (free it), 0 when not kept or not trusted now. */
int pg_cache_session_get(pg_cache *c, const char *id, char **ret, size_t *ret_len);
/* Keep id's body read from PostgreSQL, unless a forget came since pg_cache_gen returned gen. */
void pg_cache_session_put(pg_cache *c, const char *id, const char *body, size_t len, uint64_t gen);
void pg_cache_forget(pg_cache *c, const char *id);
bool pg_cache_keys_get(pg_cache *c, size_t *ret);
void pg_cache_keys_put(pg_cache *c, size_t n, uint64_t gen);
void pg_cache_keys_forget(pg_cache *c);
void pg_cache_listen(pg_cache *c, pg_listen_state st);
/* store_session_get_cached's: from memory when kept and trusted, else read (and kept). */
int pg_session_cached(store *base, const char *id, char **ret, size_t *ret_len, hull_error *e);
int pg_session_seq(store *base, const char *id, char **ret, size_t *ret_len, int64_t *ret_last_seq, uint64_t ttl_ms,
                   store_owner *ret_owner, hull_error *e);

typedef struct pg_store {
        store base;           /* first: a store * is a pg_store * */
        pthread_mutex_t lock; /* over busy and n_open */
        pthread_cond_t freed;
        char *url; /* to open more connections; never logged, wiped at close */
        unsigned n_open;
        bool busy[STORE_PG_CONNS];
        pg_conn conns[STORE_PG_CONNS];
        PGconn *listen; /* LISTEN hull_events (store_events_wait's, one thread's); NULL till then */
        int down;       /* the last try to reach the server failed (__atomic: read by any thread) */
        pg_cache cache; /* trusted only while the LISTEN connection is read */
} pg_store;

static inline pg_store *pg_of(store *s) {
        return (pg_store *) s;
}

/* A free connection of s's pool, held by the caller alone until pg_release (never NULL: one is
 * opened when none is free and the pool is not full, else the call waits for one). */
pg_conn *pg_acquire(pg_store *s);
void pg_release(pg_conn *pc);
static inline void pg_releasep(pg_conn **p) {
        if (*p)
                pg_release(*p);
}
/* Declared first in a function: pc is a connection of s's pool, held until it returns. */
#define PG_LOCKED(s) _cleanup_(pg_releasep) pg_conn *pc = pg_acquire(s)

static inline void pg_clearp(PGresult **p) {
        if (*p)
                PQclear(*p);
}
#define _cleanup_res_ _cleanup_(pg_clearp)

/* An integer as a parameter's text. */
#define PG_INT_MAX 24
const char *pg_int(char buf[static PG_INT_MAX], int64_t v);

/* Run sql with n parameters (v[i] NULL: SQL NULL), what naming it in errors. Returns 0 with *ret
 * (may be NULL: dropped; else PQclear it) holding its rows, or a negative errno with *e: a unique or
 * other constraint -EEXIST, the connection lost -ECONNRESET (none to be had: -ENOTCONN), a full disk
 * -ENOSPC, out of memory -ENOMEM, no permission -EACCES, a serialization failure or deadlock -EBUSY
 * (retried first when not in a transaction), else -EIO. pc->sqlstate and pc->detail say more. */
int pg_exec(pg_conn *pc, const char *sql, int n, const char *const *v, const char *what, PGresult **ret, hull_error *e);
/* pg_exec for the statements a turn sends again and again (outside a transaction): prepared once on
 * the connection (named by a hash of its text, so a same name is a same text on any server session,
 * PgBouncer's too), then only bound and run: PostgreSQL parses and plans it once, where each
 * PQexecParams parsed and planned it again (most of a turn's statement's time on the server). When
 * the server no longer knows it (a reset, a pooler's other session) it runs as pg_exec does. */
int pg_exec_hot(pg_conn *pc, const char *sql, int n, const char *const *v, const char *what, PGresult **ret,
                hull_error *e);
/* The number of rows the last statement of res changed. */
int64_t pg_changes(PGresult *res);
/* Row r, column c of res as an integer (0 when NULL). */
int64_t pg_get_int(PGresult *res, int r, int c);
/* Row r, column c of res parsed as JSON (-EBADMSG when it is not). */
int pg_load(PGresult *res, int r, int c, const char *what, json_t **ret, hull_error *e);
/* A listing's rows (columns: key, id, the object's JSON): each row's key into keys (when not
 * NULL), its object appended to out (when not NULL), the count in *ret_n. */
int pg_page_rows(PGresult *res, const char *what, store_rowkey *keys, json_t *out, size_t *ret_n, hull_error *e);
/* -ENOENT with *e when there is no session of this id. */
int pg_session_exists(pg_conn *pc, const char *session_id, hull_error *e);

/* A transaction that rolls back unless committed. */
typedef struct pg_tx {
        pg_conn *pc;
} pg_tx;

int pg_tx_begin(pg_conn *pc, pg_tx *t, hull_error *e);
int pg_tx_commit(pg_tx *t, hull_error *e);
void pg_tx_rollbackp(pg_tx *t);
#define _cleanup_pg_tx_ _cleanup_(pg_tx_rollbackp)

/* ---- the operations (store_ops), by resource ---- */

/* store-pg-objects.c */
int pg_insert(store *base, store_kind k, const store_cols *c, const char *body, hull_error *e);
int pg_get(store *base, store_kind k, const char *id, int64_t version, json_t **ret, char **ret_raw, size_t *ret_len,
           hull_error *e);
int pg_update(store *base, store_kind k, const store_cols *c, const char *body, hull_error *e);
int pg_remove(store *base, store_kind k, const char *id, hull_error *e);
int pg_list(store *base, const store_listing *l, const char *page, unsigned limit, store_page *ret, int64_t **ret_keys,
            hull_error *e);
int pg_sessions_with_status(store *base, const char *statuses, json_t **ret, hull_error *e);

/* store-pg-events.c */
int pg_events_append_claim(store *base, const char *session_id, json_t *const *events, size_t n, const char *node_id,
                           uint64_t ttl_ms, int64_t *ret_first_seq, hull_error *e);
int pg_events_append_session(store *base, const char *session_id, json_t *const *events, size_t n, const store_cols *c,
                             const char *body, const char *if_body, const char *deliveries, const char *conversation,
                             int64_t *ret_first_seq, size_t *ret_queued, char **ret_stored, hull_error *e);
int pg_events_append(store *base, const char *session_id, json_t *const *events, size_t n, int64_t *ret_first_seq,
                     hull_error *e);
int pg_events_set_processed(store *base, const char *session_id, const char *event_id, const char *processed_at,
                            int64_t processed_ms, hull_error *e);
int pg_events_last_seq(store *base, const char *session_id, int64_t *ret, hull_error *e);
int pg_events_seq_of(store *base, const char *session_id, const char *event_id, int64_t *ret, hull_error *e);
int pg_conversation_put(store *base, const char *session_id, const char *body, hull_error *e);
int pg_conversation_get(store *base, const char *session_id, json_t **ret, hull_error *e);
int pg_conversation_append(store *base, const char *session_id, const char *tail, hull_error *e);

/* store-pg-keys.c */
int pg_key_add(store *base, const store_key *k, hull_error *e);
int pg_key_list(store *base, store_key **ret, size_t *ret_n, hull_error *e);
int pg_key_delete(store *base, const char *id, hull_error *e);
int pg_key_find(store *base, const char digest_hex[static 65], store_key *ret, hull_error *e);
int pg_key_count(store *base, size_t *ret, hull_error *e);
int pg_sandbox_add(store *base, const char *session_id, const char *fingerprint, const char *opened_at, hull_error *e);
int pg_sandbox_list(store *base, const char *session_id, json_t **ret, hull_error *e);
int pg_thread_get(store *base, const char *thread_id, char ret[static STORE_ID_MAX], hull_error *e);
int pg_thread_put(store *base, const char *thread_id, const char *session_id, hull_error *e);
int pg_env_put(store *base, const char *name, const json_t *spec, const char *digest, json_t **ret, hull_error *e);
int pg_env_get(store *base, const char *name, int64_t version, json_t **ret, hull_error *e);
int pg_env_list(store *base, bool all_versions, json_t **ret, hull_error *e);
int pg_env_delete(store *base, const char *name, hull_error *e);

/* store-pg-memory.c */
int pg_memory_apply(store *base, const store_memory_change *c, const char *memory_body, const char *memory_path,
                    const char *version_id, const char *operation, int64_t created_ms, const char *version_body,
                    char ret_conflict[static STORE_ID_MAX], hull_error *e);
int pg_memory_get(store *base, const char *store_id, const char *memory_id, const char *path, json_t **ret,
                  hull_error *e);
int pg_memory_scan(store *base, const char *store_id, const char *from, bool from_inclusive, const char *below,
                   unsigned limit, json_t **ret, hull_error *e);
int pg_memory_version_get(store *base, const char *store_id, const char *version_id, json_t **ret, hull_error *e);
int pg_memory_version_put(store *base, const char *store_id, const char *version_id, const char *body, hull_error *e);

/* store-pg-copy.c: hull db copy and check */
int pg_rows_read(store *base, const store_table *t, store_row_fn fn, void *ud, hull_error *e);
int pg_rows_write(store *base, const store_table *t, json_t *rows, hull_error *e);
int pg_check(store *base, json_t **ret, hull_error *e);

/* A new connection to url (never NULL but out of memory; PQstatus says whether it is up). */
PGconn *pg_connect_url(const char *url);
/* SET what a server session of the store needs (after a connection, or a PQreset that worked). */
void pg_session_setup(PGconn *conn);

/* store-pg-nodes.c */
extern const store_node_ops pg_node_ops;

/* store-pg-vaults.c */
extern const store_vault_ops pg_vault_ops;
/* store-pg-deploy.c */
extern const store_deploy_ops pg_deploy_ops;
/* store-pg-files.c */
int pg_file_insert(store *base, const char *id, int64_t created_ms, const char *scope_id, const char *sha256,
                   int64_t size, const char *body, int fd, hull_error *e);
int pg_file_get(store *base, const char *id, json_t **ret, char *ret_sha256, hull_error *e);
int pg_file_list(store *base, const store_files_q *q, json_t **ret, bool *ret_more, hull_error *e);
int pg_file_delete(store *base, const char *id, hull_error *e);
int pg_blob_read(store *base, const char *sha256, store_chunk_fn fn, void *ud, hull_error *e);
int pg_blob_path(store *base, const char *sha256, char *ret, size_t size, hull_error *e);
