/* store-backend.h: what a backend of the store implements (struct store_ops), and the helpers
 * every backend shares (store-util.c): the checks of a resource's columns, JSON in and out, list
 * cursors and their pagination. Only src/store/ includes it; callers see store.h alone.
 *
 * The front (store.c) checks every argument, serialises what is written, and computes a list's
 * filters and cursor digest before it calls a backend, so a backend only reads and writes rows:
 * what it gets through struct store_ops is already valid. Each operation has the meaning and the
 * errors of the store.h function of the same name. A backend allocates its own struct with a
 * `store` first (its ops set) and frees it in close. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "store.h"

/* What the columns need of a resource (read_cols), pointing into its JSON object. */
typedef struct store_cols {
        const char *id;
        int64_t created_ms;
        bool archived;
        int64_t version; /* agents */
        const char *status, *agent_id;
        int64_t agent_version; /* sessions */
} store_cols;

/* What an event's columns need, pointing into its JSON object. */
typedef struct store_event_cols {
        const char *id, *type;
        bool processed;
        int64_t processed_ms;
} store_event_cols;

/* ---- lists ----
 * A list is ordered by a key (created_ms then id, an agent's version, an event's seq). A cursor
 * names one row's key, a direction and a digest of the query it came from (store-util.c). */

typedef enum store_list_of {
        STORE_LIST_OBJECTS,         /* the resources of .kind, by (created_ms, id) */
        STORE_LIST_VERSIONS,        /* every version of agent .versions_of, by version */
        STORE_LIST_EVENTS,          /* the events of session .session_id, by seq */
        STORE_LIST_MEMORY_VERSIONS, /* the versions of memory store .memory_store_id, by seq */
} store_list_of;

enum { STORE_TIME_GT, STORE_TIME_GTE, STORE_TIME_LT, STORE_TIME_LTE, _STORE_TIME_MAX };

/* A list query as the front checked it: the rows a backend selects, and the cursors' form. */
typedef struct store_listing {
        store_list_of of;
        char tag;           /* its cursors' first byte */
        bool bidirectional; /* prev_page too */
        bool with_id;       /* ordered by (key, id), else by key */
        bool descending;    /* the list's order */
        const char *what;   /* in messages */
        uint32_t digest;    /* of the query */
        store_kind kind;    /* STORE_LIST_OBJECTS */
        const char *versions_of, *session_id;
        /* the filters, each ANDed */
        bool include_archived; /* objects */
        bool has_time[_STORE_TIME_MAX];
        int64_t time_ms[_STORE_TIME_MAX]; /* on created_ms (objects), processed_ms (events) */
        const char *agent_id;             /* sessions; NULL: any */
        int64_t agent_version;            /* sessions; 0: any */
        const char *in_set;               /* a JSON array of strings: the statuses (sessions) or types
                                           * (events) to keep; NULL: any */
        int64_t after_seq;                /* events; 0: all */
        /* memory versions: the store, and filters (NULL: any; .session_id too); sessions: those
         * with a memory_store resource of .memory_store_id */
        const char *memory_store_id, *memory_id, *operation;
} store_listing;

typedef struct store_rowkey {
        int64_t key;
        char id[STORE_ID_MAX];
} store_rowkey;

/* A backend's fetch for store_paginate: up to want rows after (asc: above, else below) the anchor
 * (or from the start), in that order, into out (may be NULL) and keys (may be NULL); *ret_n how
 * many. Returns 0 or a negative errno with *e. */
typedef int (*store_fetch_fn)(void *ctx, const store_rowkey *anchor, bool asc, unsigned want, json_t *out,
                              store_rowkey *keys, size_t *ret_n, hull_error *e);

/* A page of the listing l after page (a cursor, or NULL) by fetch: store_list's answer; *ret_keys
 * (may be NULL; malloc'd) the rows' keys. -EINVAL with *e for a cursor that is not one of l's. */
int store_paginate(const store_listing *l, const char *page, unsigned limit, store_fetch_fn fetch, void *ctx,
                   store_page *ret, int64_t **ret_keys, hull_error *e);

/* ---- copy and check (hull db) ----
 * A table as both backends hold it: its columns (the same names and order in each), one type
 * letter a column (t text, i integer, n integer or NULL) and the order its rows are read in. */
typedef struct store_table {
        const char *name;    /* "events" */
        const char *columns; /* "session_id, seq, id, type, processed_ms, body" */
        const char *types;   /* "tittnt" */
        const char *order;   /* PostgreSQL's order of its rows (SQLite's is rowid) */
} store_table;

/* Every table, parents before children (the order a copy writes them in). */
extern const store_table store_tables[];
extern const size_t store_n_tables;

/* One row (a JSON array of its columns' values: strings, integers, null) to a reader; returns
 * < 0 to fail (that errno is returned), > 0 to stop early, 0 for the next. */
typedef int (*store_row_fn)(void *ud, json_t *row, hull_error *e);

/* ---- vaults and credentials (store-vault.c's front; a backend's store-NAME-vaults.c) ---- */

/* A row of vaults or vault_credentials, as the front checked it. */
typedef struct store_vrow {
        const char *id;
        const char *vault_id; /* credentials */
        const char *url;      /* credentials: auth.mcp_server_url */
        int64_t created_ms;
        bool archived;
        const char *body;
        const char *sealed, *key_id; /* credentials */
} store_vrow;

typedef struct store_vault_ops {
        int (*put)(store *s, store_vkind k, const store_vrow *row, bool create, hull_error *e);
        int (*get)(store *s, store_vkind k, const char *vault_id, const char *id, json_t **ret, char **ret_sealed,
                   hull_error *e);
        int (*remove)(store *s, store_vkind k, const char *vault_id, const char *id, hull_error *e);
        /* l: include_archived, tag, digest, what (with_id, ascending); vault_id: credentials' */
        int (*list)(store *s, store_vkind k, const char *vault_id, const store_listing *l, const char *page,
                    unsigned limit, store_page *ret, hull_error *e);
        int (*stale)(store *s, const char *key_id, json_t **ret, hull_error *e);
} store_vault_ops;

/* ---- deployments and their runs (store-deploy.c's front; a backend's store-NAME-deploy.c) ---- */

/* A row of deployments or deployment_runs, as the front checked it. */
typedef struct store_drow {
        const char *id;
        int64_t created_ms;
        bool archived;                            /* deployments */
        const char *status;                       /* deployments */
        const char *agent_id;                     /* deployments */
        const char *deployment_id, *trigger_type; /* runs */
        bool has_error;                           /* runs */
        const char *body;
} store_drow;

/* A list's filters as the front checked them (NULL, or has_error -1: any). */
typedef struct store_dfilter {
        bool include_archived;
        const char *s1, *s2; /* deployments: status, agent_id; runs: deployment_id, trigger_type */
        int has_error;       /* runs */
} store_dfilter;

typedef struct store_deploy_ops {
        int (*put)(store *s, store_dkind k, const store_drow *row, bool create, hull_error *e);
        int (*get)(store *s, store_dkind k, const char *id, json_t **ret, hull_error *e);
        /* l: the time filters (has_time, time_ms), tag, digest, what (with_id, descending) */
        int (*list)(store *s, store_dkind k, const store_dfilter *f, const store_listing *l, const char *page,
                    unsigned limit, store_page *ret, hull_error *e);
        int (*claim)(store *s, const char *id, int64_t scheduled_ms, hull_error *e);
} store_deploy_ops;

/* ---- the backend ---- */

typedef struct store_ops {
        const char *name; /* "sqlite" */
        void (*close)(store *s);
        int (*user_version)(store *s);

        int (*insert)(store *s, store_kind k, const store_cols *c, const char *body, hull_error *e);
        /* into *ret (parsed) when ret, else into *ret_raw and *ret_len */
        int (*get)(store *s, store_kind k, const char *id, int64_t version, json_t **ret, char **ret_raw,
                   size_t *ret_len, hull_error *e);
        int (*update)(store *s, store_kind k, const store_cols *c, const char *body, hull_error *e);
        int (*remove)(store *s, store_kind k, const char *id, hull_error *e);
        /* -ENOENT without l->versions_of's agent or l->session_id's session; else store_paginate */
        int (*list)(store *s, const store_listing *l, const char *page, unsigned limit, store_page *ret,
                    int64_t **ret_keys, hull_error *e);
        /* statuses: a JSON array of strings */
        int (*sessions_with_status)(store *s, const char *statuses, json_t **ret, hull_error *e);

        /* the events were checked by store_read_event (the backend reads them again) */
        int (*events_append)(store *s, const char *session_id, json_t *const *events, size_t n, int64_t *ret_first_seq,
                             hull_error *e);
        /* events_append and update (STORE_SESSION, c and body; c NULL: none) in one transaction, with
         * conv (checked already; NULL: none) when it can be, the events' texts given to ret_texts
         * (NULL: freed); NULL: -EOPNOTSUPP */
        int (*events_append_object)(store *s, const char *session_id, json_t *const *events, size_t n,
                                    const store_cols *c, const char *body, store_conv_write *conv, char **ret_texts,
                                    int64_t *ret_first_seq, hull_error *e);
        int (*events_set_processed)(store *s, const char *session_id, const char *event_id, const char *processed_at,
                                    int64_t processed_ms, hull_error *e);
        int (*events_last_seq)(store *s, const char *session_id, int64_t *ret, hull_error *e);
        int (*events_seq_of)(store *s, const char *session_id, const char *event_id, int64_t *ret, hull_error *e);
        int (*conversation_put)(store *s, const char *session_id, const char *body, hull_error *e);
        int (*conversation_get)(store *s, const char *session_id, json_t **ret, hull_error *e);
        /* tail: ",message..." texts to add after the kept ones; -ENOENT when none is kept */
        int (*conversation_append)(store *s, const char *session_id, const char *tail, hull_error *e);

        int (*key_add)(store *s, const store_key *k, hull_error *e);
        int (*key_list)(store *s, store_key **ret, size_t *ret_n, hull_error *e);
        int (*key_delete)(store *s, const char *id, hull_error *e);
        int (*key_find)(store *s, const char digest_hex[static 65], store_key *ret, hull_error *e);
        int (*key_count)(store *s, size_t *ret, hull_error *e);

        int (*sandbox_add)(store *s, const char *session_id, const char *fingerprint, const char *opened_at,
                           hull_error *e);
        int (*sandbox_list)(store *s, const char *session_id, json_t **ret, hull_error *e);
        int (*thread_get)(store *s, const char *thread_id, char ret[static STORE_ID_MAX], hull_error *e);
        int (*thread_put)(store *s, const char *thread_id, const char *session_id, hull_error *e);

        int (*env_put)(store *s, const char *name, const json_t *spec, const char *digest, json_t **ret, hull_error *e);
        int (*env_get)(store *s, const char *name, int64_t version, json_t **ret, hull_error *e);
        int (*env_list)(store *s, bool all_versions, json_t **ret, hull_error *e);
        int (*env_delete)(store *s, const char *name, hull_error *e);

        /* memory stores' memories and versions (store-memory.c's front checked the arguments);
         * c->memory and c->version as text, with their columns */
        int (*memory_apply)(store *s, const store_memory_change *c, const char *memory_body, const char *memory_path,
                            const char *version_id, const char *operation, int64_t created_ms, const char *version_body,
                            char ret_conflict[static STORE_ID_MAX], hull_error *e);
        int (*memory_get)(store *s, const char *store_id, const char *memory_id, const char *path, json_t **ret,
                          hull_error *e);
        int (*memory_scan)(store *s, const char *store_id, const char *from, bool from_inclusive, const char *below,
                           unsigned limit, json_t **ret, hull_error *e);
        int (*memory_version_get)(store *s, const char *store_id, const char *version_id, json_t **ret, hull_error *e);
        int (*memory_version_put)(store *s, const char *store_id, const char *version_id, const char *body,
                                  hull_error *e);

        /* every row of t in the order it was written (SQLite's rowid; PostgreSQL's keys or
         * identity), to fn */
        int (*rows_read)(store *s, const store_table *t, store_row_fn fn, void *ud, hull_error *e);
        /* rows (a JSON array of rows as rows_read gives them) added in one transaction; a
         * session's next seq follows its events' */
        int (*rows_write)(store *s, const store_table *t, json_t *rows, hull_error *e);
        /* the problems of the sequences (a JSON array of strings, one a problem; empty: none) */
        int (*check)(store *s, json_t **ret, hull_error *e);
        const store_vault_ops *vault;
        const struct store_node_ops *node; /* store-node.c's backend; NULL: no nodes (SQLite) */

        const struct store_skill_ops *skills;     /* store-skill-backend.h */
        const struct store_webhook_ops *webhooks; /* store-webhook-backend.h */
        const struct store_work_ops *work;        /* store-work-backend.h */

        /* files and their blobs (store-*-files.c): the arguments checked by store-files.c */
        int (*file_insert)(store *s, const char *id, int64_t created_ms, const char *scope_id, const char *sha256,
                           int64_t size, const char *body, int fd, hull_error *e);
        int (*file_get)(store *s, const char *id, json_t **ret, char *ret_sha256, hull_error *e);
        int (*file_list)(store *s, const store_files_q *q, json_t **ret, bool *ret_more, hull_error *e);
        int (*file_delete)(store *s, const char *id, hull_error *e);
        int (*blob_read)(store *s, const char *sha256, store_chunk_fn fn, void *ud, hull_error *e);
        int (*blob_path)(store *s, const char *sha256, char *ret, size_t size, hull_error *e);

        const store_deploy_ops *deploy; /* deployments (store-*-deploy.c) */

        /* statements compiled since the store opened (store_prepares); NULL: not counted */
        uint64_t (*prepares)(store *s);
} store_ops;

/* The head of every backend's store. */
struct store {
        const store_ops *ops;
        void (*webhook_wake)(void *ud); /* store_webhook_set_wake's */
        void *webhook_wake_ud;
};

/* The backends. store_open picks one by the path or URL it is given. */

/* SQLite at path (store-sqlite.c); the errors of store_open. */
int store_sqlite_open(const char *path, store **ret, hull_error *e);
/* The schema version the SQLite backend migrates to. */
int store_sqlite_schema_version(void);
/* The SQLite backend's copy and check (store-sqlite-copy.c): store_ops' rows_read, rows_write, check. */
int sqlt_rows_read(store *base, const store_table *t, store_row_fn fn, void *ud, hull_error *e);
int sqlt_rows_write(store *base, const store_table *t, json_t *rows, hull_error *e);
int sqlt_check(store *base, json_t **ret, hull_error *e);
/* PostgreSQL at url (postgres://... or postgresql://..., store-pg.c); the errors of store_open,
 * and a server that cannot be reached: -ECONNREFUSED. */
int store_pg_open(const char *url, store **ret, hull_error *e);
/* The schema version the PostgreSQL backend migrates to (the same numbers as SQLite's). */
int store_pg_schema_version(void);

/* msg with every occurrence of url's password (its user:PASSWORD@ or password=) replaced by ***:
 * for libpq's messages, which may quote a piece of the connection string. */
void store_redact(const char *url, char *msg, size_t size);

/* ---- shared helpers (store-util.c); each returns 0 or a negative errno with *e ---- */

/* A resource kind's name in messages ("agent") and its cursors' tag. */
const char *store_kind_name(store_kind k);
char store_kind_tag(store_kind k);

/* -EINVAL unless k is a kind. */
int store_kind_check(store_kind k, hull_error *e);
/* -EINVAL unless id is a string of 1 to STORE_ID_MAX - 1 bytes; what names it ("session"). */
int store_id_check(const char *what, const char *id, hull_error *e);
/* -EINVAL unless v is up to max - 1 bytes (and not empty unless empty_ok); what: "a key's WHAT". */
int store_text_check(const char *what, const char *v, size_t max, bool empty_ok, hull_error *e);
/* -EINVAL unless thread_id is 1 to STORE_THREAD_ID_MAX - 1 bytes. */
int store_thread_check(const char *thread_id, hull_error *e);
/* The limit of a page: 0 is STORE_PAGE_DEFAULT; -EINVAL above max. */
int store_limit_check(unsigned limit, unsigned max, unsigned *ret, hull_error *e);

/* The columns of a resource of kind k (-EINVAL with *e when one is missing or wrong). */
int store_read_cols(store_kind k, const json_t *obj, store_cols *c, hull_error *e);
/* The columns of the i-th event of a batch (-EINVAL with *e). */
int store_read_event(const json_t *ev, size_t i, store_event_cols *c, hull_error *e);

/* Chunk seq of the size bytes of fd (pread) as base64 text, the form blob_chunks keeps (*ret
 * malloc'd); the chunks of a blob of size bytes: store_blob_chunks(size). */
int store_blob_chunk_b64(int fd, int64_t size, int64_t seq, char **ret, hull_error *e);
int64_t store_blob_chunks(int64_t size);
/* A chunk as blob_chunks keeps it (base64 text, n bytes) decoded and handed to fn. */
int store_blob_chunk_out(const char *b64, size_t n, store_chunk_fn fn, void *ud, hull_error *e);

/* o as compact JSON text (*ret malloc'd); -E2BIG above STORE_OBJECT_BYTES_MAX. */
int store_dump(const json_t *o, const char *what, char **ret, hull_error *e);
/* A conversation's text as store_conversation_put_text takes it: 0, -EINVAL (not an array's
 * text), -E2BIG (past STORE_OBJECT_BYTES_MAX). */
int store_conversation_text_check(const char *body, size_t len, hull_error *e);
/* conv (may be NULL) checked as store_conversation_put_text or store_conversation_append_text
 * would (a tail refused, -EOPNOTSUPP, when whole_only): conv itself when it may be written in an
 * append's transaction (conv->result -ECANCELED until that commits), else NULL (conv->result
 * why). */
store_conv_write *store_conv_admit(store_conv_write *conv, bool whole_only);
/* A conversation's kept text (base, the last full one) and its appended parts (parts_len bytes:
 * the parts' runs of ",message" texts, in order, one after the other) made one text again, then
 * parsed: *ret a new reference. 0, or -EBADMSG when the result is not JSON, -ENOMEM. */
int store_conversation_join(const char *base, size_t base_len, const char *parts, size_t parts_len, json_t **ret,
                            hull_error *e);
/* n bytes of stored JSON text (p NULL: missing) parsed; -EBADMSG when it is not JSON. */
int store_load(const char *p, size_t n, const char *what, json_t **ret, hull_error *e);

/* ---- nodes and leases (store-node.c's front; PostgreSQL's store-pg-nodes.c) ---- */
typedef struct store_node_ops {
        int (*join)(store *s, const store_node *n, uint64_t ttl_ms, hull_error *e);
        int (*beat)(store *s, const char *node_id, const char *instance, uint64_t ttl_ms, unsigned running,
                    hull_error *e);
        int (*roomiest)(store *s, const char *except_id, uint64_t ttl_ms, char *ret_id, char *ret_url, hull_error *e);
        int (*leave)(store *s, const char *node_id, const char *instance, hull_error *e);
        int (*lease_claim)(store *s, const char *session_id, const char *node_id, uint64_t ttl_ms, store_lease *ret,
                           hull_error *e);
        int (*lease_release)(store *s, const char *session_id, const char *node_id, json_t **ret_pending,
                             hull_error *e);
        int (*leases_reap)(store *s, const char *node_id, uint64_t ttl_ms, json_t **ret, hull_error *e);
        int (*events_wait)(store *s, int timeout_ms, store_wake_fn fn, void *ud, hull_error *e);
        /* the events were checked by store_read_event, c read from the session (body its text);
         * deliveries: a JSON array (store_events_append_with_session), *ret_queued how many rows;
         * conversation (checked text, or NULL): the session's conversation, whole, in the same
         * statement */
        int (*append_with_session)(store *s, const char *session_id, json_t *const *events, size_t n,
                                   const store_cols *c, const char *body, const char *if_body, const char *deliveries,
                                   const char *conversation, int64_t *ret_first_seq, size_t *ret_queued,
                                   char **ret_stored, hull_error *e);
        int (*session_cached)(store *s, const char *id, char **ret, size_t *ret_len, hull_error *e);
        /* ret_owner (may be NULL): the sandbox's holder read too (node_id "" when none) */
        int (*session_seq)(store *s, const char *id, char **ret, size_t *ret_len, int64_t *ret_last_seq,
                           uint64_t ttl_ms, store_owner *ret_owner, hull_error *e);
        /* the events were checked by store_read_event */
        int (*append_claim)(store *s, const char *session_id, json_t *const *events, size_t n, const char *node_id,
                            uint64_t ttl_ms, int64_t *ret_first_seq, hull_error *e);
        int (*owner_set)(store *s, const char *session_id, const char *node_id, const char *instance, hull_error *e);
        int (*owner_get)(store *s, const char *session_id, uint64_t ttl_ms, store_owner *ret, hull_error *e);
        bool (*unreachable)(store *s);
        int (*node_get)(store *s, const char *node_id, uint64_t ttl_ms, store_owner *ret, hull_error *e);
} store_node_ops;
