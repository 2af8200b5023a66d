/* store-sqlite-objects.c: the SQLite backend's resources (agents with every version,
 * environments, sessions) and their lists: a list's filters as SQL of constant fragments with
 * every value bound, fetched a page at a time for store_paginate. */
#include "store-sqlite-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- resources ---- */

static int insert_row(sqlt_store *s, store_kind k, const store_cols *c, const char *body, bool agent_version,
                      hull_error *e) {
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_AGENT] = "INSERT INTO agents (id, version, latest, created_ms, archived, body)"
                                " VALUES (?1, ?5, 1, ?2, ?3, ?4)",
                [STORE_ENVIRONMENT] =
                        "INSERT INTO environments (id, created_ms, archived, body) VALUES (?1, ?2, ?3, ?4)",
                [STORE_MEMORY_STORE] =
                        "INSERT INTO memory_stores (id, created_ms, archived, body) VALUES (?1, ?2, ?3, ?4)",
                [STORE_SESSION] =
                        "INSERT INTO sessions (id, created_ms, archived, body, status, agent_id, agent_version)"
                        " VALUES (?1, ?2, ?3, ?4, ?6, ?7, ?8)",
        };
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, c->id);
        rc = rc ?: sqlite3_bind_int64(st, 2, c->created_ms);
        rc = rc ?: sqlite3_bind_int64(st, 3, c->archived);
        rc = rc ?: sqlt_bind_text(st, 4, body);
        if (k == STORE_AGENT)
                rc = rc ?: sqlite3_bind_int64(st, 5, c->version);
        if (k == STORE_SESSION) {
                rc = rc ?: sqlt_bind_text(st, 6, c->status);
                rc = rc ?: sqlt_bind_text(st, 7, c->agent_id);
                rc = rc ?: sqlite3_bind_int64(st, 8, c->agent_version);
        }
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return agent_version
                               ? hull_fail(e, -ESTALE,
                                           "store: agent %s already has version %" PRId64
                                           " (someone else updated it first: read it again)",
                                           c->id, c->version)
                               : hull_fail(e, -EEXIST, "store: a %s with id %s exists", store_kind_name(k), c->id);
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, "cannot insert", e);
        return 0;
}

int sqlt_insert(store *base, store_kind k, const store_cols *c, const char *body, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        return insert_row(s, k, c, body, false, e);
}

int sqlt_get(store *base, store_kind k, const char *id, int64_t version, json_t **ret, char **ret_raw, size_t *ret_len,
             hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_AGENT] = "SELECT body FROM agents WHERE id = ?1 AND (?2 = 0 AND latest = 1 OR version = ?2)",
                [STORE_ENVIRONMENT] = "SELECT body FROM environments WHERE id = ?1",
                [STORE_SESSION] = "SELECT body FROM sessions WHERE id = ?1",
                [STORE_MEMORY_STORE] = "SELECT body FROM memory_stores WHERE id = ?1",
        };
        static const unsigned slot[_STORE_KIND_MAX] = {
                [STORE_AGENT] = CACHED_GET_AGENT,
                [STORE_ENVIRONMENT] = CACHED_GET_ENVIRONMENT,
                [STORE_SESSION] = CACHED_GET_SESSION,
                [STORE_MEMORY_STORE] = CACHED_GET_MEMORY_STORE,
        };
        LOCKED(s);
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, slot[k], sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        if (k == STORE_AGENT)
                rc = rc ?: sqlite3_bind_int64(st, 2, version);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                if (version > 0)
                        return hull_fail(e, -ENOENT, "store: no version %" PRId64 " of agent %s", version, id);
                return hull_fail(e, -ENOENT, "store: no %s %s", store_kind_name(k), id);
        }
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read", e);
        if (ret)
                return sqlt_load_column(st, 0, store_kind_name(k), ret, e);
        const char *p = (const char *) sqlite3_column_text(st, 0);
        int n = sqlite3_column_bytes(st, 0);
        if (!p)
                return hull_fail(e, -EBADMSG, "store: %s: stored body is missing (hull.db is damaged)",
                                 store_kind_name(k));
        char *copy = malloc((size_t) n + 1);
        if (!copy)
                return hull_err(e, -ENOMEM, "store: out of memory");
        memcpy(copy, p, (size_t) n);
        copy[n] = '\0';
        *ret_raw = copy;
        *ret_len = (size_t) n;
        return 0;
}

static int update_agent(sqlt_store *s, const store_cols *c, const char *body, hull_error *e) {
        _cleanup_tx_ sqlt_tx t = {0};
        int r = sqlt_tx_begin(s, &t, e);
        if (r < 0)
                return r;
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                r = sqlt_prep(s, "SELECT version FROM agents WHERE id = ?1 AND latest = 1", &st, e);
                if (r < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, c->id);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        return hull_fail(e, -ENOENT, "store: no agent %s", c->id);
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot read", e);
                int64_t newest = sqlite3_column_int64(st, 0);
                if (c->version != newest + 1)
                        return hull_fail(e, -ESTALE,
                                         "store: agent %s is at version %" PRId64 ", so the next is %" PRId64
                                         ", not %" PRId64 " (someone else updated it first: read it again)",
                                         c->id, newest, newest + 1, c->version);
        }
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                r = sqlt_prep(s, "UPDATE agents SET latest = 0 WHERE id = ?1 AND latest = 1", &st, e);
                if (r < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, c->id);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                r = sqlt_step_done(s, st, "cannot update", e);
                if (r < 0)
                        return r;
        }
        r = insert_row(s, STORE_AGENT, c, body, true, e);
        if (r < 0)
                return r;
        return sqlt_tx_commit(&t, e);
}

int sqlt_update(store *base, store_kind k, const store_cols *c, const char *body, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        return sqlt_update_locked(s, k, c, body, e);
}

int sqlt_update_locked(sqlt_store *s, store_kind k, const store_cols *c, const char *body, hull_error *e) {
        if (k == STORE_AGENT)
                return update_agent(s, c, body, e);
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_ENVIRONMENT] = "UPDATE environments SET created_ms = ?2, archived = ?3, body = ?4 WHERE id = ?1",
                [STORE_MEMORY_STORE] =
                        "UPDATE memory_stores SET created_ms = ?2, archived = ?3, body = ?4 WHERE id = ?1",
                [STORE_SESSION] = "UPDATE sessions SET created_ms = ?2, archived = ?3, body = ?4, status = ?5,"
                                  " agent_id = ?6, agent_version = ?7 WHERE id = ?1",
        };
        static const unsigned slot[_STORE_KIND_MAX] = {
                [STORE_ENVIRONMENT] = CACHED_UPDATE_ENVIRONMENT,
                [STORE_MEMORY_STORE] = CACHED_UPDATE_MEMORY_STORE,
                [STORE_SESSION] = CACHED_UPDATE_SESSION,
        };
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, slot[k], sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, c->id);
        rc = rc ?: sqlite3_bind_int64(st, 2, c->created_ms);
        rc = rc ?: sqlite3_bind_int64(st, 3, c->archived);
        rc = rc ?: sqlt_bind_text(st, 4, body);
        if (k == STORE_SESSION) {
                rc = rc ?: sqlt_bind_text(st, 5, c->status);
                rc = rc ?: sqlt_bind_text(st, 6, c->agent_id);
                rc = rc ?: sqlite3_bind_int64(st, 7, c->agent_version);
        }
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        r = sqlt_step_done(s, st, "cannot update", e);
        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", store_kind_name(k), c->id);
        return 0;
}

int sqlt_remove(store *base, store_kind k, const char *id, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_AGENT] = "DELETE FROM agents WHERE id = ?1",
                [STORE_ENVIRONMENT] = "DELETE FROM environments WHERE id = ?1",
                /* its memories and their versions go too (ON DELETE CASCADE) */
                [STORE_MEMORY_STORE] = "DELETE FROM memory_stores WHERE id = ?1",
                /* its events and conversation go too (ON DELETE CASCADE) */
                [STORE_SESSION] = "DELETE FROM sessions WHERE id = ?1",
        };
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        r = sqlt_step_done(s, st, "cannot delete", e);
        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", store_kind_name(k), id);
        return 0;
}

/* ---- lists ---- */

typedef struct bindv {
        const char *text; /* NULL: num */
        int64_t num;
} bindv;

#define SQL_MAX 2048U
#define BINDS_MAX 16U

/* A statement being built: constant fragments and the values they bind, in order. */
typedef struct query {
        char sql[SQL_MAX];
        size_t len;
        bindv v[BINDS_MAX];
        unsigned n;
        bool overflow;
} query;

static void q_add(query *q, const char *frag, const char *text, int64_t num, bool bind) {
        size_t n = strlen(frag);
        if (q->len + n >= sizeof(q->sql) || (bind && q->n >= BINDS_MAX)) {
                q->overflow = true;
                return;
        }
        memcpy(q->sql + q->len, frag, n + 1);
        q->len += n;
        if (bind)
                q->v[q->n++] = (bindv){text, num};
}
#define q_sql(q, f) q_add(q, f, NULL, 0, false)
#define q_text(q, f, t) q_add(q, f, t, 0, true)
#define q_int(q, f, i) q_add(q, f, NULL, i, true)

/* A list as SQL: its select ("SELECT key, id, body FROM ... WHERE ...") and the " AND ..."
 * fragments of its filters that follow. */
typedef struct sql_listing {
        sqlt_store *s;
        const store_listing *l;
        const char *key;    /* the key's column */
        const char *select; /* binds filter's first values, if any */
        query filter;
} sql_listing;

/* Up to want rows after (asc: above, else below) the anchor (store_fetch_fn). */
static int fetch(void *ctx, const store_rowkey *anchor, bool asc, unsigned want, json_t *out, store_rowkey *keys,
                 size_t *ret_n, hull_error *e) {
        const sql_listing *sl = ctx;
        const store_listing *l = sl->l;
        sqlt_store *s = sl->s;
        query q = sl->filter;
        q.len = 0;
        q.n = 0;
        q_sql(&q, sl->select);
        for (unsigned i = 0; i < sl->filter.n; i++)
                q.v[q.n++] = sl->filter.v[i];
        q_sql(&q, sl->filter.sql);
        if (anchor) {
                char frag[128];
                if (l->with_id) {
                        snprintf(frag, sizeof(frag), " AND (%s, id) %s (?, ?)", sl->key, asc ? ">" : "<");
                        q_int(&q, frag, anchor->key);
                        q_text(&q, "", anchor->id);
                } else {
                        snprintf(frag, sizeof(frag), " AND %s %s ?", sl->key, asc ? ">" : "<");
                        q_int(&q, frag, anchor->key);
                }
        }
        char order[128];
        snprintf(order, sizeof(order), " ORDER BY %s %s%s LIMIT ?", sl->key, asc ? "ASC" : "DESC",
                 l->with_id ? (asc ? ", id ASC" : ", id DESC") : "");
        q_int(&q, order, want);
        if (q.overflow)
                return hull_fail(e, -E2BIG, "store: a %s list query is too long", l->what);

        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, q.sql, &st, e);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < q.n; i++) {
                int rc = q.v[i].text ? sqlt_bind_text(st, (int) i + 1, q.v[i].text)
                                     : sqlite3_bind_int64(st, (int) i + 1, q.v[i].num);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
        }
        return sqlt_page_rows(s, st, l->what, keys, out, ret_n, e);
}

/* The created_at filters on column col. */
static void time_filters(query *f, const store_listing *l, const char *col) {
        static const char *const op[_STORE_TIME_MAX] = {
                [STORE_TIME_GT] = ">",
                [STORE_TIME_GTE] = ">=",
                [STORE_TIME_LT] = "<",
                [STORE_TIME_LTE] = "<=",
        };
        for (size_t i = 0; i < _STORE_TIME_MAX; i++) {
                if (!l->has_time[i])
                        continue;
                char frag[64];
                snprintf(frag, sizeof(frag), " AND %s %s ?", col, op[i]);
                q_int(f, frag, l->time_ms[i]);
        }
}

/* The SQL of l (its filters in the order the front read them). */
static void list_sql(sql_listing *sl) {
        const store_listing *l = sl->l;
        query *f = &sl->filter;
        switch (l->of) {
        case STORE_LIST_VERSIONS:
                sl->key = "version";
                sl->select = "SELECT version, NULL, body FROM agents WHERE id = ?";
                q_text(f, "", l->versions_of);
                break;
        case STORE_LIST_EVENTS:
                sl->key = "seq";
                sl->select = "SELECT seq, NULL, body FROM events WHERE session_id = ?";
                q_text(f, "", l->session_id);
                if (l->after_seq > 0)
                        q_int(f, " AND seq > ?", l->after_seq);
                if (l->in_set)
                        q_text(f, " AND type IN (SELECT value FROM json_each(?))", l->in_set);
                time_filters(f, l, "processed_ms");
                break;
        case STORE_LIST_MEMORY_VERSIONS:
                sl->key = "seq";
                sl->select = "SELECT seq, NULL, body FROM memory_versions WHERE store_id = ?";
                q_text(f, "", l->memory_store_id);
                if (l->memory_id)
                        q_text(f, " AND memory_id = ?", l->memory_id);
                if (l->session_id)
                        q_text(f, " AND session_id = ?", l->session_id);
                if (l->operation)
                        q_text(f, " AND operation = ?", l->operation);
                time_filters(f, l, "created_ms");
                break;
        case STORE_LIST_OBJECTS: {
                static const char *const select[_STORE_KIND_MAX] = {
                        [STORE_AGENT] = "SELECT created_ms, id, body FROM agents WHERE latest = 1",
                        [STORE_ENVIRONMENT] = "SELECT created_ms, id, body FROM environments WHERE 1",
                        [STORE_SESSION] = "SELECT created_ms, id, body FROM sessions WHERE 1",
                        [STORE_MEMORY_STORE] = "SELECT created_ms, id, body FROM memory_stores WHERE 1",
                };
                sl->key = "created_ms";
                sl->select = select[l->kind];
                if (!l->include_archived)
                        q_sql(f, " AND archived = 0");
                time_filters(f, l, "created_ms");
                if (l->agent_id)
                        q_text(f, " AND agent_id = ?", l->agent_id);
                if (l->agent_version)
                        q_int(f, " AND agent_version = ?", l->agent_version);
                if (l->kind == STORE_SESSION && l->memory_store_id)
                        q_text(f,
                               " AND EXISTS (SELECT 1 FROM json_each(body, '$.resources') WHERE"
                               " json_extract(value, '$.type') = 'memory_store' AND"
                               " json_extract(value, '$.memory_store_id') = ?)",
                               l->memory_store_id);
                if (l->in_set)
                        q_text(f, " AND status IN (SELECT value FROM json_each(?))", l->in_set);
                break;
        }
        }
}

/* -ENOENT without the agent whose versions are listed (or the memory store). */
static int agent_exists(sqlt_store *s, const char *id, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        bool mem = strncmp(id, "memstore_", 9) == 0;
        int r = sqlt_prep(s,
                          mem ? "SELECT count(*) FROM memory_stores WHERE id = ?1"
                              : "SELECT count(*) FROM agents WHERE id = ?1",
                          &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot list", e);
        if (!sqlite3_column_int64(st, 0))
                return hull_fail(e, -ENOENT, "store: no %s %s", mem ? "memory store" : "agent", id);
        return 0;
}

int sqlt_list(store *base, const store_listing *l, const char *page, unsigned limit, store_page *ret,
              int64_t **ret_keys, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        sql_listing sl = {.s = s, .l = l};
        list_sql(&sl);
        LOCKED(s);
        int r = 0;
        if (l->of == STORE_LIST_VERSIONS)
                r = agent_exists(s, l->versions_of, e);
        else if (l->of == STORE_LIST_EVENTS)
                r = sqlt_session_exists(s, l->session_id, e);
        else if (l->of == STORE_LIST_MEMORY_VERSIONS)
                r = agent_exists(s, l->memory_store_id, e);
        if (r < 0)
                return r;
        return store_paginate(l, page, limit, fetch, &sl, ret, ret_keys, e);
}

int sqlt_sessions_with_status(store *base, const char *set, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        _cleanup_(json_decrefp) json_t *ids = json_array();
        if (!ids)
                return hull_err(e, -ENOMEM, "store: cannot list sessions");
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(
                s, "SELECT id FROM sessions WHERE status IN (SELECT value FROM json_each(?1)) ORDER BY created_ms, id",
                &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, set);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        for (;;) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list sessions", e);
                const char *id = (const char *) sqlite3_column_text(st, 0);
                if (!id || json_array_append_new(ids, json_string(id)) < 0)
                        return hull_fail(e, -EBADMSG, "store: a stored session id is not text (hull.db is damaged)");
        }
        *ret = TAKE_PTR(ids);
        return 0;
}
