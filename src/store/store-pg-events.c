/* store-pg-events.c: the PostgreSQL backend's event log of each session and each session's
 * conversation.
 *
 * A session's seqs come from a counter on its row (sessions.last_seq), not from max(seq): the
 * append is one statement that adds n to the counter and inserts the events numbered from its
 * old value. The UPDATE takes the session row's lock until the statement commits, so appenders
 * to one session (threads, processes, nodes) take turns on it, and each sees the counter as the
 * one before committed it (READ COMMITTED re-reads an updated row): no two get the same seqs.
 * One statement is one transaction, so a batch that fails (a duplicate id) leaves the counter
 * as it was: no gap. This rather than SELECT ... FOR UPDATE on the session row then an INSERT,
 * which locks the same way but takes three round trips (and a transaction) to the append's one;
 * and rather than max(seq) + 1, which two appenders may read alike (one then fails on the key).
 * The same statement NOTIFYs hull_events with "session_id:last_seq", delivered at commit: the
 * wake-up of the streams on other nodes (store_events_wait), never the events themselves. */
#include "store-pg-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The batch as one JSON parameter: [{"i":0,"id":..,"type":..,"p":ms|null,"b":"<body>"}, ...]. */
static int batch_json(json_t *const *events, size_t n, char **ret, hull_error *e) {
        _cleanup_(json_decrefp) json_t *a = json_array();
        if (!a)
                return hull_err(e, -ENOMEM, "store: out of memory");
        for (size_t i = 0; i < n; i++) {
                store_event_cols c;
                int r = store_read_event(events[i], i, &c, e);
                if (r < 0)
                        return r;
                _cleanup_free_ char *body = NULL;
                if ((r = store_dump(events[i], "an event", &body, e)) < 0)
                        return r;
                json_t *o = json_pack("{s:I, s:s, s:s, s:o, s:s}", "i", (json_int_t) i, "id", c.id, "type", c.type, "p",
                                      c.processed ? json_integer(c.processed_ms) : json_null(), "b", body);
                if (!o || json_array_append_new(a, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        char *text = json_dumps(a, JSON_COMPACT);
        if (!text)
                return hull_err(e, -ENOMEM, "store: out of memory");
        *ret = text;
        return 0;
}

/* The id in a unique violation's detail: Key (id)=(sevt_2) already exists. */
static void taken_id(const char *detail, char *buf, size_t size) {
        const char *p = strstr(detail, "=(");
        const char *q = p ? strstr(p, ") already exists") : NULL;
        if (!p || !q)
                snprintf(buf, size, "(one of the batch)");
        else
                snprintf(buf, size, "%.*s", (int) (q - p - 2 < (ptrdiff_t) size ? q - p - 2 : (ptrdiff_t) size - 1),
                         p + 2);
}

/* An append's failure: a unique violation names the event id that exists. */
static int append_error(const pg_conn *pc, int r, hull_error *e) {
        if (r != -EEXIST || strcmp(pc->sqlstate, "23505") != 0)
                return r;
        char id[STORE_ID_MAX];
        taken_id(pc->detail, id, sizeof(id));
        return hull_fail(e, -EEXIST, "store: an event with id %s exists (nothing was appended)", id);
}

int pg_events_append(store *base, const char *session_id, json_t *const *events, size_t n, int64_t *ret_first_seq,
                     hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_free_ char *batch = NULL;
        int r = batch_json(events, n, &batch, e);
        if (r < 0)
                return r;
        char nbuf[PG_INT_MAX];
        const char *v[] = {session_id, pg_int(nbuf, (int64_t) n), batch};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        r = pg_exec_hot(pc,
                        "WITH s AS (UPDATE sessions SET last_seq = last_seq + $2::bigint WHERE id = $1"
                        "  RETURNING last_seq - $2::bigint AS first),"
                        " ins AS (INSERT INTO events (session_id, seq, id, type, processed_ms, body)"
                        "  SELECT $1, s.first + e.i + 1, e.id, e.type, e.p, e.b"
                        "  FROM s, json_to_recordset($3::json) AS e(i bigint, id text, type text, p bigint, b text))"
                        " SELECT first + 1, pg_notify('hull_events', $1 || ':' || (first + $2::bigint)) FROM s",
                        3, v, "cannot append events", &res, e);
        if (r < 0)
                return append_error(pc, r, e);
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        if (ret_first_seq)
                *ret_first_seq = pg_get_int(res, 0, 0);
        return 0;
}

/* pg_events_append's statement with the session's lease claimed for node_id (inserted, or renewed
 * when it is node_id's and alive) in front: the events only when the claim went through, both in
 * one commit. The lease's row is locked first (its INSERT ... ON CONFLICT), then the session's, as
 * a claim then an append would. */
int pg_events_append_claim(store *base, const char *session_id, json_t *const *events, size_t n, const char *node_id,
                           uint64_t ttl_ms, int64_t *ret_first_seq, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_free_ char *batch = NULL;
        int r = batch_json(events, n, &batch, e);
        if (r < 0)
                return r;
        char nbuf[PG_INT_MAX], ttl[PG_INT_MAX];
        const char *v[] = {session_id, pg_int(nbuf, (int64_t) n), batch, node_id, pg_int(ttl, (int64_t) ttl_ms)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        r = pg_exec_hot(pc,
                        "WITH c AS (INSERT INTO session_leases (session_id, node_id, expires_at)"
                        "  VALUES ($1, $4, now() + ($5::bigint * interval '1 millisecond'))"
                        "  ON CONFLICT (session_id) DO UPDATE SET expires_at = EXCLUDED.expires_at"
                        "  WHERE session_leases.node_id = EXCLUDED.node_id AND session_leases.expires_at >= now()"
                        "  RETURNING 1),"
                        " s AS (UPDATE sessions SET last_seq = last_seq + $2::bigint WHERE id = $1"
                        "  AND EXISTS (SELECT 1 FROM c) RETURNING last_seq - $2::bigint AS first),"
                        " ins AS (INSERT INTO events (session_id, seq, id, type, processed_ms, body)"
                        "  SELECT $1, s.first + e.i + 1, e.id, e.type, e.p, e.b"
                        "  FROM s, json_to_recordset($3::json) AS e(i bigint, id text, type text, p bigint, b text))"
                        " SELECT (SELECT count(*) FROM c), (SELECT first + 1 FROM s),"
                        " (SELECT pg_notify('hull_events', $1 || ':' || (first + $2::bigint)) FROM s)",
                        5, v, "cannot append events", &res, e);
        if (r == -EEXIST && strcmp(pc->sqlstate, "23503") == 0)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        if (r < 0)
                return append_error(pc, r, e);
        if (PQntuples(res) != 1 || pg_get_int(res, 0, 0) == 0)
                return hull_fail(e, -EBUSY, "store: session %s's lease is another node's or expired", session_id);
        if (PQgetisnull(res, 0, 1))
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        if (ret_first_seq)
                *ret_first_seq = pg_get_int(res, 0, 1);
        return 0;
}

/* pg_events_append_session's statement (wh: the status changes' webhooks, queued in the same
 * commit, wh_enqueue's rows); cte: one more written in its commit (or "") */
#define APPEND_SESSION_SQL(cte)                                                                                        \
        "WITH s AS (UPDATE sessions SET last_seq = last_seq + $2::bigint, created_ms = $4, archived = $5,"             \
        "  body = $6, status = $7, agent_id = $8, agent_version = $9"                                                  \
        "  WHERE id = $1 AND body = $10 RETURNING last_seq - $2::bigint AS first),"                                    \
        " ins AS (INSERT INTO events (session_id, seq, id, type, processed_ms, body)"                                  \
        "  SELECT $1, s.first + e.i + 1, e.id, e.type, e.p, e.b"                                                       \
        "  FROM s, json_to_recordset($3::json) AS e(i bigint, id text, type text, p bigint, b text)),"                 \
        " wh AS (INSERT INTO webhook_deliveries (event_id, webhook_id, created_ms, due_ms, attempts, body)"            \
        "  SELECT d.e, w.id, d.c, d.c, 0, d.b FROM s, json_to_recordset($11::json) AS d(e text, t text,"               \
        "  c bigint, b text) JOIN webhooks w ON w.enabled = 1 AND strpos(w.types, ',' || d.t || ',') > 0"              \
        "  RETURNING 1)" cte " SELECT first + 1, pg_notify('hull_events', $1 || ':' || (first + $2::bigint)),"         \
        " (SELECT count(*) FROM wh) FROM s"
/* the conversation ($12), only with the events (it reads s): a statement of its own text, so the
 * appends without one (most) plan and log no more than before */
#define CONV_CTE                                                                                                       \
        ", cv AS (INSERT INTO conversations (session_id, body) SELECT $1, $12 FROM s"                                  \
        "  ON CONFLICT (session_id) DO UPDATE SET body = excluded.body)"

/* pg_events_append's statement that also writes the session row (its columns from c, its body),
 * where the stored body is still if_body: one round trip, one commit (one fsync), the session
 * object and its events visible together. Its NOTIFY also tells the other nodes the row changed.
 * With conversation (else NULL): the session's conversation upserted whole in the same statement,
 * only when the events go in (its CTE reads s; the table's trigger drops the parts added to the
 * text before), so the turn's idle and what the model remembers of it commit together. */
int pg_events_append_session(store *base, const char *session_id, json_t *const *events, size_t n, const store_cols *c,
                             const char *body, const char *if_body, const char *deliveries, const char *conversation,
                             int64_t *ret_first_seq, size_t *ret_queued, char **ret_stored, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_free_ char *batch = NULL;
        int r = batch_json(events, n, &batch, e);
        if (r < 0)
                return r;
        char nbuf[PG_INT_MAX], ms[PG_INT_MAX], av[PG_INT_MAX];
        const char *v[] = {session_id,
                           pg_int(nbuf, (int64_t) n),
                           batch,
                           pg_int(ms, c->created_ms),
                           c->archived ? "1" : "0",
                           body,
                           c->status,
                           c->agent_id,
                           pg_int(av, c->agent_version),
                           if_body,
                           deliveries,
                           conversation};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        pg_cache_forget(&s->cache, session_id);
        r = pg_exec_hot(pc, conversation ? APPEND_SESSION_SQL(CONV_CTE) : APPEND_SESSION_SQL(""), 11 + !!conversation,
                        v, "cannot append events", &res, e);
        pg_cache_forget(&s->cache, session_id); /* a read that ran meanwhile may have kept the old body */
        if (r < 0)
                return append_error(pc, r, e);
        if (PQntuples(res) == 1) {
                if (ret_first_seq)
                        *ret_first_seq = pg_get_int(res, 0, 0);
                *ret_queued = (size_t) pg_get_int(res, 0, 2);
                return 0;
        }
        _cleanup_res_ PGresult *now = NULL;
        if ((r = pg_exec(pc, "SELECT body FROM sessions WHERE id = $1", 1, v, "cannot read", &now, e)) < 0)
                return r;
        if (PQntuples(now) == 0)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        if (ret_stored && !(*ret_stored = strdup(PQgetvalue(now, 0, 0))))
                return hull_err(e, -ENOMEM, "store: out of memory");
        return hull_fail(e, -ESTALE, "store: session %s changed since it was read (nothing was appended)", session_id);
}

/* The body read (locked) and written back with processed_at set, its keys in their order. */
int pg_events_set_processed(store *base, const char *session_id, const char *event_id, const char *processed_at,
                            int64_t processed_ms, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx t = {0};
        int r = pg_tx_begin(pc, &t, e);
        if (r < 0)
                return r;
        _cleanup_(json_decrefp) json_t *ev = NULL;
        {
                _cleanup_res_ PGresult *res = NULL;
                const char *v[] = {session_id, event_id};
                r = pg_exec(pc, "SELECT body FROM events WHERE session_id = $1 AND id = $2 FOR UPDATE", 2, v,
                            "cannot read an event", &res, e);
                if (r < 0)
                        return r;
                if (PQntuples(res) == 0)
                        return hull_fail(e, -ENOENT, "store: no event %s in session %s", event_id, session_id);
                if ((r = pg_load(res, 0, 0, "an event", &ev, e)) < 0)
                        return r;
        }
        if (!json_is_object(ev) || json_object_set_new(ev, "processed_at", json_string(processed_at)) < 0)
                return hull_fail(e, -EBADMSG, "store: event %s: its stored body is not an object", event_id);
        _cleanup_free_ char *body = NULL;
        if ((r = store_dump(ev, "an event", &body, e)) < 0)
                return r;
        char ms[PG_INT_MAX];
        const char *v[] = {session_id, event_id, pg_int(ms, processed_ms), body};
        if ((r = pg_exec(pc, "UPDATE events SET processed_ms = $3, body = $4 WHERE session_id = $1 AND id = $2", 4, v,
                         "cannot update an event", NULL, e)) < 0)
                return r;
        return pg_tx_commit(&t, e);
}

int pg_events_last_seq(store *base, const char *session_id, int64_t *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {session_id};
        int r = pg_exec_hot(pc, "SELECT last_seq FROM sessions WHERE id = $1", 1, v, "cannot read", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        *ret = pg_get_int(res, 0, 0);
        return 0;
}

int pg_events_seq_of(store *base, const char *session_id, const char *event_id, int64_t *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {session_id, event_id};
        int r = pg_exec(pc, "SELECT seq FROM events WHERE session_id = $1 AND id = $2", 2, v, "cannot read", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no event %s in session %s", event_id, session_id);
        *ret = pg_get_int(res, 0, 0);
        return 0;
}

/* ---- conversations ---- */

int pg_conversation_put(store *base, const char *session_id, const char *body, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {session_id, body};
        int r = pg_exec(pc,
                        "INSERT INTO conversations (session_id, body)"
                        " SELECT id, $2 FROM sessions WHERE id = $1"
                        " ON CONFLICT (session_id) DO UPDATE SET body = excluded.body",
                        2, v, "cannot keep a conversation", &res, e);
        if (r < 0)
                return r;
        if (pg_changes(res) == 0)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        return 0;
}

int pg_conversation_get(store *base, const char *session_id, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {session_id};
        int r = pg_exec(pc,
                        "SELECT c.body, (SELECT string_agg(p.body, '' ORDER BY p.idx) FROM conversation_parts p"
                        " WHERE p.session_id = s.id)"
                        " FROM sessions s LEFT JOIN conversations c ON c.session_id = s.id WHERE s.id = $1",
                        1, v, "cannot read a conversation", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        if (PQgetisnull(res, 0, 0)) {
                *ret = NULL;
                return 0;
        }
        if (PQgetisnull(res, 0, 1)) /* nothing appended since the last full text */
                return pg_load(res, 0, 0, "a conversation", ret, e);
        return store_conversation_join(PQgetvalue(res, 0, 0), (size_t) PQgetlength(res, 0, 0), PQgetvalue(res, 0, 1),
                                       (size_t) PQgetlength(res, 0, 1), ret, e);
}

int pg_conversation_append(store *base, const char *session_id, const char *tail, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {session_id, tail};
        int r = pg_exec(pc,
                        "INSERT INTO conversation_parts (session_id, idx, body)"
                        " SELECT session_id, 1 + (SELECT COALESCE(MAX(idx), 0) FROM conversation_parts"
                        " WHERE session_id = $1), $2 FROM conversations WHERE session_id = $1",
                        2, v, "cannot add to a conversation", &res, e);
        if (r < 0)
                return r;
        if (pg_changes(res) == 0)
                return hull_fail(e, -ENOENT, "store: session %s keeps no conversation", session_id);
        return 0;
}
