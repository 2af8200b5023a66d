/* store-pg-objects.c: the PostgreSQL backend's resources (agents with every version,
 * environments, sessions) and their lists: a list's filters as SQL of constant fragments with
 * every value bound ($n), fetched a page at a time for store_paginate. */
#include "store-pg-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- resources ---- */

static int insert_row(pg_conn *pc, store_kind k, const store_cols *c, const char *body, bool agent_version,
                      hull_error *e) {
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_AGENT] = "INSERT INTO agents (id, version, latest, created_ms, archived, body)"
                                " VALUES ($1, $5, 1, $2, $3, $4)",
                [STORE_ENVIRONMENT] =
                        "INSERT INTO environments (id, created_ms, archived, body) VALUES ($1, $2, $3, $4)",
                [STORE_MEMORY_STORE] =
                        "INSERT INTO memory_stores (id, created_ms, archived, body) VALUES ($1, $2, $3, $4)",
                [STORE_SESSION] =
                        "INSERT INTO sessions (id, created_ms, archived, body, status, agent_id, agent_version)"
                        " VALUES ($1, $2, $3, $4, $5, $6, $7)",
        };
        char ms[PG_INT_MAX], v5[PG_INT_MAX], v7[PG_INT_MAX];
        const char *v[7] = {c->id, pg_int(ms, c->created_ms), c->archived ? "1" : "0", body};
        int n = 4;
        if (k == STORE_AGENT)
                v[n++] = pg_int(v5, c->version);
        if (k == STORE_SESSION) {
                v[n++] = c->status;
                v[n++] = c->agent_id;
                v[n++] = pg_int(v7, c->agent_version);
        }
        int r = pg_exec(pc, sql[k], n, v, "cannot insert", NULL, e);
        if (r == -EEXIST && agent_version)
                return hull_fail(e, -ESTALE,
                                 "store: agent %s already has version %" PRId64
                                 " (someone else updated it first: read it again)",
                                 c->id, c->version);
        if (r == -EEXIST)
                return hull_fail(e, -EEXIST, "store: a %s with id %s exists", store_kind_name(k), c->id);
        return r;
}

int pg_insert(store *base, store_kind k, const store_cols *c, const char *body, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        return insert_row(pc, k, c, body, false, e);
}

/* Row 0's column 0 (a stored body) as a NUL-terminated copy of its bytes. */
static int body_copy(const PGresult *res, const char *what, char **ret, size_t *ret_len, hull_error *e) {
        if (PQgetisnull(res, 0, 0))
                return hull_fail(e, -EBADMSG, "store: %s: stored body is missing (the database is damaged)", what);
        size_t n = (size_t) PQgetlength(res, 0, 0);
        char *copy = malloc(n + 1);
        if (!copy)
                return hull_err(e, -ENOMEM, "store: out of memory");
        memcpy(copy, PQgetvalue(res, 0, 0), n);
        copy[n] = '\0';
        *ret = copy;
        *ret_len = n;
        return 0;
}

int pg_get(store *base, store_kind k, const char *id, int64_t version, json_t **ret, char **ret_raw, size_t *ret_len,
           hull_error *e) {
        pg_store *s = pg_of(base);
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_AGENT] = "SELECT body FROM agents WHERE id = $1"
                                " AND ($2::bigint = 0 AND latest = 1 OR version = $2::bigint)",
                [STORE_ENVIRONMENT] = "SELECT body FROM environments WHERE id = $1",
                [STORE_SESSION] = "SELECT body FROM sessions WHERE id = $1",
                [STORE_MEMORY_STORE] = "SELECT body FROM memory_stores WHERE id = $1",
        };
        char vbuf[PG_INT_MAX];
        const char *v[] = {id, pg_int(vbuf, version)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, sql[k], k == STORE_AGENT ? 2 : 1, v, "cannot read", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0) {
                if (version > 0)
                        return hull_fail(e, -ENOENT, "store: no version %" PRId64 " of agent %s", version, id);
                return hull_fail(e, -ENOENT, "store: no %s %s", store_kind_name(k), id);
        }
        if (ret)
                return pg_load(res, 0, 0, store_kind_name(k), ret, e);
        return body_copy(res, store_kind_name(k), ret_raw, ret_len, e);
}

int pg_session_seq(store *base, const char *id, char **ret, size_t *ret_len, int64_t *ret_last_seq, uint64_t ttl_ms,
                   store_owner *ret_owner, hull_error *e) {
        pg_store *s = pg_of(base);
        char ttl[PG_INT_MAX];
        const char *v[] = {id, pg_int(ttl, (int64_t) ttl_ms)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = ret_owner
                        ? pg_exec_hot(
                                  pc,
                                  "SELECT s.body, s.last_seq, o.node_id, coalesce(n.advertise, ''),"
                                  " coalesce(n.heartbeat_at >= now() - ($2::bigint * interval '1 millisecond'), false),"
                                  " coalesce((extract(epoch FROM now() - n.heartbeat_at) * 1000)::bigint, -1)"
                                  " FROM sessions s LEFT JOIN sandbox_owners o ON o.session_id = s.id"
                                  " LEFT JOIN nodes n ON n.id = o.node_id AND n.instance = o.instance WHERE s.id = $1",
                                  2, v, "cannot read", &res, e)
                        : pg_exec_hot(pc, "SELECT body, last_seq FROM sessions WHERE id = $1", 1, v, "cannot read",
                                      &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no session %s", id);
        r = body_copy(res, "session", ret, ret_len, e);
        if (r < 0)
                return r;
        *ret_last_seq = pg_get_int(res, 0, 1);
        if (ret_owner) { /* as pg_owner_get */
                memset(ret_owner, 0, sizeof(*ret_owner));
                ret_owner->beat_age_ms = -1;
                if (!PQgetisnull(res, 0, 2)) {
                        snprintf(ret_owner->node_id, sizeof(ret_owner->node_id), "%s", PQgetvalue(res, 0, 2));
                        snprintf(ret_owner->advertise, sizeof(ret_owner->advertise), "%s", PQgetvalue(res, 0, 3));
                        ret_owner->alive = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
                        ret_owner->beat_age_ms = pg_get_int(res, 0, 5);
                }
        }
        return 0;
}

/* The newest version's row locked (FOR UPDATE) until the transaction ends: two updates of one
 * agent take turns, and the second sees the first's version. */
static int update_agent(pg_conn *pc, const store_cols *c, const char *body, hull_error *e) {
        _cleanup_pg_tx_ pg_tx t = {0};
        int r = pg_tx_begin(pc, &t, e);
        if (r < 0)
                return r;
        {
                _cleanup_res_ PGresult *res = NULL;
                const char *v[] = {c->id};
                r = pg_exec(pc, "SELECT version FROM agents WHERE id = $1 AND latest = 1 FOR UPDATE", 1, v,
                            "cannot read", &res, e);
                if (r < 0)
                        return r;
                if (PQntuples(res) == 0)
                        return hull_fail(e, -ENOENT, "store: no agent %s", c->id);
                int64_t newest = pg_get_int(res, 0, 0);
                if (c->version != newest + 1)
                        return hull_fail(e, -ESTALE,
                                         "store: agent %s is at version %" PRId64 ", so the next is %" PRId64
                                         ", not %" PRId64 " (someone else updated it first: read it again)",
                                         c->id, newest, newest + 1, c->version);
        }
        const char *v[] = {c->id};
        if ((r = pg_exec(pc, "UPDATE agents SET latest = 0 WHERE id = $1 AND latest = 1", 1, v, "cannot update", NULL,
                         e)) < 0 ||
            (r = insert_row(pc, STORE_AGENT, c, body, true, e)) < 0)
                return r;
        return pg_tx_commit(&t, e);
}

int pg_update(store *base, store_kind k, const store_cols *c, const char *body, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        if (k == STORE_AGENT)
                return update_agent(pc, c, body, e);
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_ENVIRONMENT] = "UPDATE environments SET created_ms = $2, archived = $3, body = $4 WHERE id = $1",
                [STORE_MEMORY_STORE] =
                        "UPDATE memory_stores SET created_ms = $2, archived = $3, body = $4 WHERE id = $1",
                /* every write of a session row NOTIFYs: other nodes forget what they kept of it */
                [STORE_SESSION] = "WITH u AS (UPDATE sessions SET created_ms = $2, archived = $3, body = $4,"
                                  " status = $5, agent_id = $6, agent_version = $7 WHERE id = $1 RETURNING last_seq)"
                                  " SELECT pg_notify('hull_events', $1 || ':' || last_seq) FROM u",
        };
        char ms[PG_INT_MAX], v7[PG_INT_MAX];
        const char *v[7] = {c->id, pg_int(ms, c->created_ms), c->archived ? "1" : "0", body};
        int n = 4;
        if (k == STORE_SESSION) {
                v[n++] = c->status;
                v[n++] = c->agent_id;
                v[n++] = pg_int(v7, c->agent_version);
        }
        _cleanup_res_ PGresult *res = NULL;
        if (k == STORE_SESSION)
                pg_cache_forget(&s->cache, c->id);
        int r = pg_exec(pc, sql[k], n, v, "cannot update", &res, e);
        if (k == STORE_SESSION) /* again: a read that ran meanwhile may have kept the old body */
                pg_cache_forget(&s->cache, c->id);
        if (r < 0)
                return r;
        if ((k == STORE_SESSION ? PQntuples(res) : pg_changes(res)) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", store_kind_name(k), c->id);
        return 0;
}

int pg_remove(store *base, store_kind k, const char *id, hull_error *e) {
        pg_store *s = pg_of(base);
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_AGENT] = "DELETE FROM agents WHERE id = $1",
                [STORE_ENVIRONMENT] = "DELETE FROM environments WHERE id = $1",
                /* its memories and their versions go too (ON DELETE CASCADE) */
                [STORE_MEMORY_STORE] = "DELETE FROM memory_stores WHERE id = $1",
                /* its events and conversation go too (ON DELETE CASCADE) */
                [STORE_SESSION] = "WITH d AS (DELETE FROM sessions WHERE id = $1 RETURNING last_seq)"
                                  " SELECT pg_notify('hull_events', $1 || ':' || last_seq) FROM d",
        };
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {id};
        int r = pg_exec(pc, sql[k], 1, v, "cannot delete", &res, e);
        if (k == STORE_SESSION)
                pg_cache_forget(&s->cache, id);
        if (r < 0)
                return r;
        if ((k == STORE_SESSION ? PQntuples(res) : pg_changes(res)) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", store_kind_name(k), id);
        return 0;
}

/* ---- lists ---- */

#define SQL_MAX 2048U
#define BINDS_MAX 16U

/* A statement being built: constant fragments (each "$" a parameter, numbered as it is added)
 * and the values they bind, in order. */
typedef struct query {
        char sql[SQL_MAX];
        size_t len;
        const char *v[BINDS_MAX];
        char num[BINDS_MAX][PG_INT_MAX];
        unsigned n;
        bool overflow;
} query;

static void q_sql(query *q, const char *frag) {
        size_t n = strlen(frag);
        if (q->len + n >= sizeof(q->sql)) {
                q->overflow = true;
                return;
        }
        memcpy(q->sql + q->len, frag, n + 1);
        q->len += n;
}

/* frag with its one "$" as the next parameter, bound to text (or num when text is NULL). */
static void q_bind(query *q, const char *frag, const char *text, int64_t num) {
        if (q->n >= BINDS_MAX) {
                q->overflow = true;
                return;
        }
        const char *d = strchr(frag, '$');
        char head[256];
        snprintf(head, sizeof(head), "%.*s$%u", (int) (d ? d - frag : (ptrdiff_t) strlen(frag)), frag, q->n + 1);
        q_sql(q, head);
        if (d)
                q_sql(q, d + 1);
        q->v[q->n] = text ? text : pg_int(q->num[q->n], num);
        q->n++;
}
#define q_text(q, f, t) q_bind(q, f, t, 0)
#define q_int(q, f, i) q_bind(q, f, NULL, i)

typedef struct sql_listing {
        pg_conn *pc;
        const store_listing *l;
} sql_listing;

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
                snprintf(frag, sizeof(frag), " AND %s %s $::bigint", col, op[i]);
                q_int(f, frag, l->time_ms[i]);
        }
}

/* The select and filters of l (in the order the front read them); *ret_key its key's column. */
static void list_sql(const store_listing *l, query *f, const char **ret_key) {
        switch (l->of) {
        case STORE_LIST_VERSIONS:
                *ret_key = "version";
                q_text(f, "SELECT version, NULL, body FROM agents WHERE id = $", l->versions_of);
                break;
        case STORE_LIST_MEMORY_VERSIONS:
                *ret_key = "seq";
                q_text(f, "SELECT seq, NULL, body FROM memory_versions WHERE store_id = $", l->memory_store_id);
                if (l->memory_id)
                        q_text(f, " AND memory_id = $", l->memory_id);
                if (l->session_id)
                        q_text(f, " AND session_id = $", l->session_id);
                if (l->operation)
                        q_text(f, " AND operation = $", l->operation);
                time_filters(f, l, "created_ms");
                break;
        case STORE_LIST_EVENTS:
                *ret_key = "seq";
                q_text(f, "SELECT seq, NULL, body FROM events WHERE session_id = $", l->session_id);
                if (l->after_seq > 0)
                        q_int(f, " AND seq > $::bigint", l->after_seq);
                if (l->in_set)
                        q_text(f, " AND type IN (SELECT json_array_elements_text($::json))", l->in_set);
                time_filters(f, l, "processed_ms");
                break;
        case STORE_LIST_OBJECTS: {
                static const char *const select[_STORE_KIND_MAX] = {
                        [STORE_AGENT] = "SELECT created_ms, id, body FROM agents WHERE latest = 1",
                        [STORE_ENVIRONMENT] = "SELECT created_ms, id, body FROM environments WHERE true",
                        [STORE_SESSION] = "SELECT created_ms, id, body FROM sessions WHERE true",
                        [STORE_MEMORY_STORE] = "SELECT created_ms, id, body FROM memory_stores WHERE true",
                };
                *ret_key = "created_ms";
                q_sql(f, select[l->kind]);
                if (!l->include_archived)
                        q_sql(f, " AND archived = 0");
                time_filters(f, l, "created_ms");
                if (l->agent_id)
                        q_text(f, " AND agent_id = $", l->agent_id);
                if (l->agent_version)
                        q_int(f, " AND agent_version = $::bigint", l->agent_version);
                if (l->kind == STORE_SESSION && l->memory_store_id) {
                        q_sql(f, " AND EXISTS (SELECT 1 FROM json_array_elements(CASE WHEN json_typeof(body::json ->"
                                 " 'resources') = 'array' THEN body::json -> 'resources' ELSE '[]'::json END) r WHERE"
                                 " r ->> 'type' = 'memory_store' AND r ->> 'memory_store_id'");
                        q_text(f, " = $)", l->memory_store_id);
                }
                if (l->in_set)
                        q_text(f, " AND status IN (SELECT json_array_elements_text($::json))", l->in_set);
                break;
        }
        }
}

/* Up to want rows after (asc: above, else below) the anchor (store_fetch_fn). */
static int fetch(void *ctx, const store_rowkey *anchor, bool asc, unsigned want, json_t *out, store_rowkey *keys,
                 size_t *ret_n, hull_error *e) {
        const sql_listing *sl = ctx;
        const store_listing *l = sl->l;
        query q = {0};
        const char *key = NULL;
        list_sql(l, &q, &key);
        if (anchor) {
                char frag[128];
                if (l->with_id) {
                        snprintf(frag, sizeof(frag), " AND (%s, id) %s ($::bigint", key, asc ? ">" : "<");
                        q_int(&q, frag, anchor->key);
                        q_text(&q, ", $)", anchor->id);
                } else {
                        snprintf(frag, sizeof(frag), " AND %s %s $::bigint", key, asc ? ">" : "<");
                        q_int(&q, frag, anchor->key);
                }
        }
        char order[128];
        snprintf(order, sizeof(order), " ORDER BY %s %s%s LIMIT $::bigint", key, asc ? "ASC" : "DESC",
                 l->with_id ? (asc ? ", id ASC" : ", id DESC") : "");
        q_int(&q, order, want);
        if (q.overflow)
                return hull_fail(e, -E2BIG, "store: a %s list query is too long", l->what);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(sl->pc, q.sql, (int) q.n, q.v, "cannot list", &res, e);
        if (r < 0)
                return r;
        return pg_page_rows(res, l->what, keys, out, ret_n, e);
}

int pg_list(store *base, const store_listing *l, const char *page, unsigned limit, store_page *ret, int64_t **ret_keys,
            hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        sql_listing sl = {.pc = pc, .l = l};
        int r = 0;
        if (l->of == STORE_LIST_VERSIONS) {
                _cleanup_res_ PGresult *res = NULL;
                const char *v[] = {l->versions_of};
                if ((r = pg_exec(pc, "SELECT 1 FROM agents WHERE id = $1 LIMIT 1", 1, v, "cannot list", &res, e)) < 0)
                        return r;
                if (PQntuples(res) == 0)
                        return hull_fail(e, -ENOENT, "store: no agent %s", l->versions_of);
        } else if (l->of == STORE_LIST_EVENTS)
                r = pg_session_exists(pc, l->session_id, e);
        else if (l->of == STORE_LIST_MEMORY_VERSIONS) {
                _cleanup_res_ PGresult *res = NULL;
                const char *v[] = {l->memory_store_id};
                if ((r = pg_exec(pc, "SELECT 1 FROM memory_stores WHERE id = $1", 1, v, "cannot list", &res, e)) < 0)
                        return r;
                if (PQntuples(res) == 0)
                        return hull_fail(e, -ENOENT, "store: no memory store %s", l->memory_store_id);
        }
        if (r < 0)
                return r;
        return store_paginate(l, page, limit, fetch, &sl, ret, ret_keys, e);
}

int pg_sessions_with_status(store *base, const char *set, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_(json_decrefp) json_t *ids = json_array();
        if (!ids)
                return hull_err(e, -ENOMEM, "store: cannot list sessions");
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {set};
        int r = pg_exec(pc,
                        "SELECT id FROM sessions WHERE status IN (SELECT json_array_elements_text($1::json))"
                        " ORDER BY created_ms, id",
                        1, v, "cannot list sessions", &res, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++)
                if (json_array_append_new(ids, json_string(PQgetvalue(res, i, 0))) < 0)
                        return hull_fail(e, -EBADMSG,
                                         "store: a stored session id is not text (the database is damaged)");
        *ret = TAKE_PTR(ids);
        return 0;
}
