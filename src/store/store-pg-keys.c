/* store-pg-keys.c: the PostgreSQL backend's API keys (their digests), the sandboxes each session
 * opened, the AG-UI threads' sessions and hull's named environments (every version a row). */
#include "store-pg-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- API keys ---- */

int pg_key_add(store *base, const store_key *k, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        const char *v[] = {k->id, k->name, k->digest_hex, k->created_at, k->hint};
        /* every write of api_keys NOTIFYs "keys": the nodes forget the count they kept */
        int r = pg_exec(pc,
                        "WITH k AS (INSERT INTO api_keys (id, name, digest, created_at, hint)"
                        " VALUES ($1, $2, $3, $4, $5) RETURNING id) SELECT pg_notify('hull_events', 'keys') FROM k",
                        5, v, "cannot add a key", NULL, e);
        pg_cache_keys_forget(&s->cache);
        if (r == -EEXIST)
                return hull_fail(e, -EEXIST, "store: that key (or key id %s) is already stored", k->id);
        return r;
}

static void key_row(PGresult *res, int row, store_key *k) {
        *k = (store_key){0};
        snprintf(k->id, sizeof(k->id), "%s", PQgetvalue(res, row, 0));
        snprintf(k->name, sizeof(k->name), "%s", PQgetvalue(res, row, 1));
        snprintf(k->digest_hex, sizeof(k->digest_hex), "%s", PQgetvalue(res, row, 2));
        snprintf(k->created_at, sizeof(k->created_at), "%s", PQgetvalue(res, row, 3));
        snprintf(k->hint, sizeof(k->hint), "%s", PQgetvalue(res, row, 4));
}

int pg_key_list(store *base, store_key **ret, size_t *ret_n, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, "SELECT id, name, digest, created_at, hint FROM api_keys ORDER BY created_at, ord", 0, NULL,
                        "cannot list keys", &res, e);
        if (r < 0)
                return r;
        size_t n = (size_t) PQntuples(res);
        store_key *keys = calloc(n ? n : 1, sizeof(*keys));
        if (!keys)
                return hull_err(e, -ENOMEM, "store: cannot list keys");
        for (size_t i = 0; i < n; i++)
                key_row(res, (int) i, &keys[i]);
        *ret = keys;
        *ret_n = n;
        return 0;
}

int pg_key_delete(store *base, const char *id, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {id};
        int r = pg_exec(pc,
                        "WITH d AS (DELETE FROM api_keys WHERE id = $1 RETURNING id)"
                        " SELECT pg_notify('hull_events', 'keys') FROM d",
                        1, v, "cannot delete a key", &res, e);
        pg_cache_keys_forget(&s->cache);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no key %s", id);
        return 0;
}

int pg_key_find(store *base, const char digest_hex[static 65], store_key *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        char d[65];
        snprintf(d, sizeof(d), "%s", digest_hex);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {d};
        int r = pg_exec(pc, "SELECT id, name, digest, created_at, hint FROM api_keys WHERE digest = $1", 1, v,
                        "cannot find a key", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return 0;
        if (ret)
                key_row(res, 0, ret);
        return 1;
}

/* Read each time another node or a hull key create may have changed it (one round trip); on a
 * node from memory while no "keys" NOTIFY came (store-pg-cache.c). */
int pg_key_count(store *base, size_t *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        if (pg_cache_keys_get(&s->cache, ret))
                return 0;
        uint64_t gen = pg_cache_gen(&s->cache);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, "SELECT count(*) FROM api_keys", 0, NULL, "cannot count the keys", &res, e);
        if (r < 0)
                return r;
        *ret = (size_t) pg_get_int(res, 0, 0);
        pg_cache_keys_put(&s->cache, *ret, gen);
        return 0;
}

/* ---- the sandboxes of a session; AG-UI threads ---- */

int pg_sandbox_add(store *base, const char *session_id, const char *fingerprint, const char *opened_at, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        int r = pg_session_exists(pc, session_id, e);
        if (r < 0)
                return r;
        const char *v[] = {session_id, fingerprint, opened_at};
        return pg_exec(pc,
                       "INSERT INTO session_sandboxes (session_id, fingerprint, opened_at) VALUES ($1, $2, $3)"
                       " ON CONFLICT DO NOTHING",
                       3, v, "cannot keep a session's sandbox", NULL, e);
}

int pg_sandbox_list(store *base, const char *session_id, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_(json_decrefp) json_t *arr = json_array();
        if (!arr)
                return hull_err(e, -ENOMEM, "store: out of memory");
        PG_LOCKED(s);
        int r = pg_session_exists(pc, session_id, e);
        if (r < 0)
                return r;
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {session_id};
        r = pg_exec(pc, "SELECT fingerprint, opened_at FROM session_sandboxes WHERE session_id = $1 ORDER BY ord", 1, v,
                    "cannot list a session's sandboxes", &res, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++)
                if (json_array_append_new(arr, json_pack("{s:s, s:s}", "fingerprint", PQgetvalue(res, i, 0),
                                                         "opened_at", PQgetvalue(res, i, 1))) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        *ret = TAKE_PTR(arr);
        return 0;
}

int pg_thread_get(store *base, const char *thread_id, char ret[static STORE_ID_MAX], hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {thread_id};
        int r = pg_exec(pc, "SELECT session_id FROM agui_threads WHERE thread_id = $1", 1, v, "cannot read a thread",
                        &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return -ENOENT;
        const char *id = PQgetvalue(res, 0, 0);
        if (strlen(id) >= STORE_ID_MAX)
                return hull_fail(e, -EBADMSG,
                                 "store: a stored thread's session is not an id (the database is damaged)");
        snprintf(ret, STORE_ID_MAX, "%s", id);
        return 0;
}

int pg_thread_put(store *base, const char *thread_id, const char *session_id, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        int r = pg_session_exists(pc, session_id, e);
        if (r < 0)
                return r;
        const char *v[] = {thread_id, session_id};
        r = pg_exec(pc, "INSERT INTO agui_threads (thread_id, session_id) VALUES ($1, $2)", 2, v,
                    "cannot keep a thread", NULL, e);
        if (r == -EEXIST)
                return hull_fail(e, -EEXIST, "store: thread %.64s has a session already", thread_id);
        return r;
}

/* ---- hull's named environments ---- */

static int env_row(PGresult *res, int row, int col, json_t **ret, hull_error *e) {
        json_error_t je;
        json_t *o = PQgetisnull(res, row, col) ? NULL : json_loads(PQgetvalue(res, row, col), 0, &je);
        if (!json_is_object(o)) {
                json_decref(o);
                return hull_fail(e, -EBADMSG, "store: an environment's stored body is not a JSON object");
        }
        *ret = o;
        return 0;
}

/* The newest version (its row locked until the transaction ends, so two puts of one name take
 * turns) and its body (NULL: none yet). */
static int env_newest(pg_conn *pc, const char *name, int64_t *ret, json_t **ret_cur, hull_error *e) {
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {name};
        int r = pg_exec(pc, "SELECT version, body FROM env_specs WHERE name = $1 AND latest = 1 FOR UPDATE", 1, v,
                        "cannot read an environment", &res, e);
        if (r < 0)
                return r;
        *ret = 0;
        *ret_cur = NULL;
        if (PQntuples(res) == 0)
                return 0;
        *ret = pg_get_int(res, 0, 0);
        return env_row(res, 0, 1, ret_cur, e);
}

int pg_env_put(store *base, const char *name, const json_t *spec, const char *digest, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx t = {0};
        int r = pg_tx_begin(pc, &t, e);
        if (r < 0)
                return r;
        int64_t newest = 0;
        _cleanup_(json_decrefp) json_t *cur = NULL;
        if ((r = env_newest(pc, name, &newest, &cur, e)) < 0)
                return r;
        /* The same spec again is no new version. */
        if (cur && json_equal(json_object_get(cur, "spec"), (json_t *) spec)) {
                *ret = TAKE_PTR(cur);
                return 0;
        }
        char now[STORE_TIME_MAX];
        int64_t now_ms = 0;
        store_now_rfc3339(now);
        (void) store_time_ms(now, &now_ms);
        _cleanup_(json_decrefp) json_t *o =
                json_pack("{s:s,s:I,s:s,s:s,s:O}", "name", name, "version", (json_int_t) (newest + 1), "created_at",
                          now, "digest", digest ? digest : "", "spec", (json_t *) spec);
        _cleanup_free_ char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (!body)
                return hull_err(e, -ENOMEM, "store: out of memory");
        char vbuf[PG_INT_MAX], ms[PG_INT_MAX];
        const char *v[] = {name, pg_int(vbuf, newest + 1), pg_int(ms, now_ms), body};
        if ((r = pg_exec(pc, "UPDATE env_specs SET latest = 0 WHERE name = $1 AND latest = 1", 1, v,
                         "cannot update an environment", NULL, e)) < 0 ||
            (r = pg_exec(pc,
                         "INSERT INTO env_specs (name, version, latest, created_ms, body) VALUES ($1, $2, 1, $3, $4)",
                         4, v, "cannot store an environment", NULL, e)) < 0)
                return r == -EEXIST ? hull_fail(e, -EBUSY,
                                                "store: environment %.64s was changed at the same time; "
                                                "try again",
                                                name)
                                    : r;
        if ((r = pg_tx_commit(&t, e)) < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int pg_env_get(store *base, const char *name, int64_t version, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        char vbuf[PG_INT_MAX];
        const char *v[] = {name, pg_int(vbuf, version)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        version > 0 ? "SELECT body FROM env_specs WHERE name = $1 AND version = $2"
                                    : "SELECT body FROM env_specs WHERE name = $1 AND latest = 1",
                        version > 0 ? 2 : 1, v, "cannot read an environment", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no environment %.64s", name);
        return env_row(res, 0, 0, ret, e);
}

int pg_env_list(store *base, bool all_versions, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_(json_decrefp) json_t *a = json_array();
        if (!a)
                return hull_err(e, -ENOMEM, "store: out of memory");
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        all_versions ? "SELECT body FROM env_specs ORDER BY name, version"
                                     : "SELECT body FROM env_specs WHERE latest = 1 ORDER BY name",
                        0, NULL, "cannot list environments", &res, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++) {
                json_t *o;
                if ((r = env_row(res, i, 0, &o, e)) < 0)
                        return r;
                if (json_array_append_new(a, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        *ret = TAKE_PTR(a);
        return 0;
}

int pg_env_delete(store *base, const char *name, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {name};
        int r = pg_exec(pc, "DELETE FROM env_specs WHERE name = $1", 1, v, "cannot delete an environment", &res, e);
        if (r < 0)
                return r;
        if (pg_changes(res) == 0)
                return hull_fail(e, -ENOENT, "store: no environment %.64s", name);
        return 0;
}
