/* store-sqlite-keys.c: the SQLite backend's API keys (their digests; the count cached against
 * PRAGMA data_version), the sandboxes each session opened, the AG-UI threads' sessions and hull's
 * named environments (every version a row). */
#include "store-sqlite-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"

/* ---- API keys ---- */

int sqlt_key_add(store *base, const store_key *k, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        s->keys_known = false; /* the count is read again */
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "INSERT INTO api_keys (id, name, digest, created_at, hint) VALUES (?1, ?2, ?3, ?4, ?5)",
                          &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, k->id);
        rc = rc ?: sqlt_bind_text(st, 2, k->name);
        rc = rc ?: sqlt_bind_text(st, 3, k->digest_hex);
        rc = rc ?: sqlt_bind_text(st, 4, k->created_at);
        rc = rc ?: sqlt_bind_text(st, 5, k->hint);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return hull_fail(e, -EEXIST, "store: that key (or key id %s) is already stored", k->id);
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, "cannot add a key", e);
        return 0;
}

static void key_row(sqlite3_stmt *st, store_key *k) {
        *k = (store_key){0};
        const char *v[5];
        for (int i = 0; i < 5; i++) {
                v[i] = (const char *) sqlite3_column_text(st, i);
                if (!v[i])
                        v[i] = "";
        }
        snprintf(k->id, sizeof(k->id), "%s", v[0]);
        snprintf(k->name, sizeof(k->name), "%s", v[1]);
        snprintf(k->digest_hex, sizeof(k->digest_hex), "%s", v[2]);
        snprintf(k->created_at, sizeof(k->created_at), "%s", v[3]);
        snprintf(k->hint, sizeof(k->hint), "%s", v[4]);
}

int sqlt_key_list(store *base, store_key **ret, size_t *ret_n, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "SELECT id, name, digest, created_at, hint FROM api_keys ORDER BY created_at, rowid", &st,
                          e);
        if (r < 0)
                return r;
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, SIZE_MAX / 2);
        size_t n = 0;
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list keys", e);
                store_key k;
                key_row(st, &k);
                if (dynbuf_add(&b, &k, sizeof(k)) < 0)
                        return hull_err(e, -ENOMEM, "store: cannot list keys");
                n++;
        }
        store_key *keys = n ? (store_key *) dynbuf_take(&b, NULL) : calloc(1, sizeof(*keys));
        if (!keys)
                return hull_err(e, -ENOMEM, "store: cannot list keys");
        *ret = keys;
        *ret_n = n;
        return 0;
}

int sqlt_key_delete(store *base, const char *id, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        s->keys_known = false; /* the count is read again */
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "DELETE FROM api_keys WHERE id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        if ((r = sqlt_step_done(s, st, "cannot delete a key", e)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no key %s", id);
        return 0;
}

int sqlt_key_find(store *base, const char digest_hex[static 65], store_key *ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, CACHED_KEY_FIND,
                                 "SELECT id, name, digest, created_at, hint FROM api_keys WHERE digest = ?1", &st, e);
        if (r < 0)
                return r;
        char d[65];
        snprintf(d, sizeof(d), "%s", digest_hex);
        int rc = sqlt_bind_text(st, 1, d);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return 0;
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot find a key", e);
        if (ret)
                key_row(st, ret);
        return 1;
}

/* PRAGMA data_version: the same number until another connection (a `hull key create` beside the
 * daemon) commits a change. */
static int data_version(sqlt_store *s, int64_t *ret, hull_error *e) {
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, CACHED_DATA_VERSION, "PRAGMA data_version", &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read the data version", e);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

int sqlt_key_count(store *base, size_t *ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int64_t version = 0;
        int r = data_version(s, &version, e);
        if (r < 0)
                return r;
        if (s->keys_known && version == s->keys_version) {
                *ret = s->keys;
                return 0;
        }
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        r = sqlt_prep_cached(s, CACHED_KEY_COUNT, "SELECT count(*) FROM api_keys", &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot count the keys", e);
        s->keys = (size_t) sqlite3_column_int64(st, 0);
        s->keys_version = version;
        s->keys_known = true;
        *ret = s->keys;
        return 0;
}

/* ---- the sandboxes of a session; AG-UI threads ---- */

int sqlt_sandbox_add(store *base, const char *session_id, const char *fingerprint, const char *opened_at,
                     hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int r;
        if ((r = sqlt_session_exists(s, session_id, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = sqlt_prep(s,
                      "INSERT INTO session_sandboxes (session_id, fingerprint, opened_at) VALUES (?1, ?2, ?3)"
                      " ON CONFLICT DO NOTHING",
                      &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, session_id);
        rc = rc ?: sqlt_bind_text(st, 2, fingerprint);
        rc = rc ?: sqlt_bind_text(st, 3, opened_at);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        return sqlt_step_done(s, st, "cannot keep a session's sandbox", e);
}

int sqlt_sandbox_list(store *base, const char *session_id, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        _cleanup_(json_decrefp) json_t *arr = json_array();
        if (!arr)
                return hull_err(e, -ENOMEM, "store: out of memory");
        LOCKED(s);
        int r;
        if ((r = sqlt_session_exists(s, session_id, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = sqlt_prep(s, "SELECT fingerprint, opened_at FROM session_sandboxes WHERE session_id = ?1 ORDER BY rowid",
                      &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, session_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        for (;;) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list a session's sandboxes", e);
                const char *fp = (const char *) sqlite3_column_text(st, 0);
                const char *at = (const char *) sqlite3_column_text(st, 1);
                if (!fp || !at ||
                    json_array_append_new(arr, json_pack("{s:s, s:s}", "fingerprint", fp, "opened_at", at)) < 0)
                        return hull_fail(e, -EBADMSG, "store: a stored sandbox is not text (hull.db is damaged)");
        }
        *ret = TAKE_PTR(arr);
        return 0;
}

int sqlt_thread_get(store *base, const char *thread_id, char ret[static STORE_ID_MAX], hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "SELECT session_id FROM agui_threads WHERE thread_id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, thread_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a thread", e);
        const char *id = (const char *) sqlite3_column_text(st, 0);
        if (!id || strlen(id) >= STORE_ID_MAX)
                return hull_fail(e, -EBADMSG, "store: a stored thread's session is not an id (hull.db is damaged)");
        snprintf(ret, STORE_ID_MAX, "%s", id);
        return 0;
}

int sqlt_thread_put(store *base, const char *thread_id, const char *session_id, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int r;
        if ((r = sqlt_session_exists(s, session_id, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = sqlt_prep(s, "INSERT INTO agui_threads (thread_id, session_id) VALUES (?1, ?2)", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, thread_id);
        rc = rc ?: sqlt_bind_text(st, 2, session_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return hull_fail(e, -EEXIST, "store: thread %.64s has a session already", thread_id);
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, "cannot keep a thread", e);
        return 0;
}

/* ---- hull's named environments ---- */

static int env_row(sqlite3_stmt *st, int col, json_t **ret, hull_error *e) {
        const char *body = (const char *) sqlite3_column_text(st, col);
        json_error_t je;
        json_t *o = body ? json_loads(body, 0, &je) : NULL;
        if (!json_is_object(o)) {
                json_decref(o);
                return hull_fail(e, -EBADMSG, "store: an environment's stored body is not a JSON object");
        }
        *ret = o;
        return 0;
}

int sqlt_env_put(store *base, const char *name, const json_t *spec, const char *digest, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int r;
        _cleanup_tx_ sqlt_tx t = {0};
        if ((r = sqlt_tx_begin(s, &t, e)) < 0)
                return r;
        int64_t newest = 0;
        _cleanup_(json_decrefp) json_t *cur = NULL;
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                r = sqlt_prep(s, "SELECT version, body FROM env_specs WHERE name = ?1 AND latest = 1", &st, e);
                if (r < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, name);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if (rc == SQLITE_ROW) {
                        newest = sqlite3_column_int64(st, 0);
                        if ((r = env_row(st, 1, &cur, e)) < 0)
                                return r;
                } else if (rc != SQLITE_DONE)
                        return sqlt_fail(s->db, rc, "cannot read an environment", e);
        }
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
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                if ((r = sqlt_prep(s, "UPDATE env_specs SET latest = 0 WHERE name = ?1 AND latest = 1", &st, e)) < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, name);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                if ((r = sqlt_step_done(s, st, "cannot update an environment", e)) < 0)
                        return r;
        }
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                if ((r = sqlt_prep(s,
                                   "INSERT INTO env_specs (name, version, latest, created_ms, body)"
                                   " VALUES (?1, ?2, 1, ?3, ?4)",
                                   &st, e)) < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, name);
                rc = rc ?: sqlite3_bind_int64(st, 2, newest + 1);
                rc = rc ?: sqlite3_bind_int64(st, 3, now_ms);
                rc = rc ?: sqlt_bind_text(st, 4, body);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                if ((r = sqlt_step_done(s, st, "cannot store an environment", e)) < 0)
                        return r;
        }
        if ((r = sqlt_tx_commit(&t, e)) < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int sqlt_env_get(store *base, const char *name, int64_t version, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s,
                          version > 0 ? "SELECT body FROM env_specs WHERE name = ?1 AND version = ?2"
                                      : "SELECT body FROM env_specs WHERE name = ?1 AND latest = 1",
                          &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, name);
        if (!rc && version > 0)
                rc = sqlite3_bind_int64(st, 2, version);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no environment %.64s", name);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read an environment", e);
        return env_row(st, 0, ret, e);
}

int sqlt_env_list(store *base, bool all_versions, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s,
                          all_versions ? "SELECT body FROM env_specs ORDER BY name, version"
                                       : "SELECT body FROM env_specs WHERE latest = 1 ORDER BY name",
                          &st, e);
        if (r < 0)
                return r;
        _cleanup_(json_decrefp) json_t *a = json_array();
        if (!a)
                return hull_err(e, -ENOMEM, "store: out of memory");
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list environments", e);
                json_t *o;
                if ((r = env_row(st, 0, &o, e)) < 0)
                        return r;
                if (json_array_append_new(a, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        *ret = TAKE_PTR(a);
        return 0;
}

int sqlt_env_delete(store *base, const char *name, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "DELETE FROM env_specs WHERE name = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, name);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        if ((r = sqlt_step_done(s, st, "cannot delete an environment", e)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no environment %.64s", name);
        return 0;
}
