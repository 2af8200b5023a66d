/* store-sqlite-skills.c: the SQLite backend's skills and skill versions (store-skill-backend.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-skill-backend.h"
#include "store-sqlite-internal.h"

/* One statement with its values bound (texts t1..t4 where non-NULL, integers i1..i3 at 5..7). */
typedef struct sk_args {
        const char *t[4];
        int64_t i[3];
        bool has_i[3];
} sk_args;

static int prep_bind(sqlt_store *s, const char *sql, const sk_args *a, sqlite3_stmt **ret, hull_error *e) {
        int r = sqlt_prep(s, sql, ret, e);
        if (r < 0)
                return r;
        int rc = 0;
        for (int k = 0; k < 4 && !rc; k++)
                if (a->t[k])
                        rc = sqlt_bind_text(*ret, k + 1, a->t[k]);
        for (int k = 0; k < 3 && !rc; k++)
                if (a->has_i[k])
                        rc = sqlite3_bind_int64(*ret, k + 5, a->i[k]);
        return rc ? sqlt_bind_fail(s, rc, e) : 0;
}

static int exec_args(sqlt_store *s, const char *sql, const sk_args *a, const char *what, int *ret_changes,
                     hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep_bind(s, sql, a, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return hull_fail(e, -EEXIST, "store: %s: it exists already", what);
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, what, e);
        if (ret_changes)
                *ret_changes = sqlite3_changes(s->db);
        return 0;
}

static int sk_put(store *base, bool create, const char *skill_id, int64_t created_ms, const char *skill_body,
                  int64_t version, int64_t version_ms, const char *version_body, const char *zip_b64, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_tx_ sqlt_tx t = {0};
        int r, changes = 0;
        if ((r = sqlt_tx_begin(s, &t, e)) < 0)
                return r;
        sk_args a = {.t = {skill_id, skill_body}, .i = {created_ms}, .has_i = {true}};
        if (create)
                r = exec_args(s, "INSERT INTO skills (id, created_ms, body) VALUES (?1, ?5, ?2)", &a,
                              "cannot store a skill", &changes, e);
        else
                r = exec_args(s, "UPDATE skills SET body = ?2 WHERE id = ?1", &(sk_args){.t = {skill_id, skill_body}},
                              "cannot update a skill", &changes, e);
        if (r < 0)
                return r;
        if (changes == 0)
                return hull_fail(e, -ENOENT, "store: no skill %.64s", skill_id);
        sk_args v = {.t = {skill_id, version_body, zip_b64}, .i = {version, version_ms}, .has_i = {true, true}};
        if ((r = exec_args(s,
                           "INSERT INTO skill_versions (skill_id, version, created_ms, body, zip)"
                           " VALUES (?1, ?5, ?6, ?2, ?3)",
                           &v, "cannot store a skill version", NULL, e)) < 0)
                return r;
        return sqlt_tx_commit(&t, e);
}

static int sk_get(store *base, const char *skill_id, int64_t version, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        sk_args a = {.t = {skill_id}, .i = {version}, .has_i = {version > 0}};
        int r = prep_bind(s,
                          version > 0 ? "SELECT body FROM skill_versions WHERE skill_id = ?1 AND version = ?5"
                                      : "SELECT body FROM skills WHERE id = ?1",
                          &a, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return version > 0
                               ? hull_fail(e, -ENOENT, "store: skill %.64s has no version %" PRId64, skill_id, version)
                               : hull_fail(e, -ENOENT, "store: no skill %.64s", skill_id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a skill", e);
        return ret ? sqlt_load_column(st, 0, "a skill", ret, e) : 0;
}

static int sk_zip(store *base, const char *skill_id, int64_t version, char **ret_b64, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        sk_args a = {.t = {skill_id}, .i = {version}, .has_i = {true}};
        int r = prep_bind(s, "SELECT zip FROM skill_versions WHERE skill_id = ?1 AND version = ?5", &a, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: skill %.64s has no version %" PRId64, skill_id, version);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a skill's files", e);
        const char *z = (const char *) sqlite3_column_text(st, 0);
        *ret_b64 = strdup(z ? z : "");
        return *ret_b64 ? 0 : hull_err(e, -ENOMEM, "store: out of memory");
}

static int sk_list(store *base, const char *skill_id, bool has_after, int64_t after_key, const char *after_id,
                   unsigned want, json_t *out, int64_t *keys, char (*ids)[STORE_ID_MAX], size_t *ret_n, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        const char *sql;
        sk_args a = {.i = {after_key, want}, .has_i = {true, true}};
        if (!skill_id) {
                sql = has_after ? "SELECT created_ms, id, body FROM skills WHERE (created_ms, id) < (?5, ?1)"
                                  " ORDER BY created_ms DESC, id DESC LIMIT ?6"
                                : "SELECT created_ms, id, body FROM skills ORDER BY created_ms DESC, id DESC LIMIT ?6";
                a.t[0] = has_after ? after_id : NULL;
        } else {
                sql = has_after ? "SELECT version, skill_id, body FROM skill_versions WHERE skill_id = ?1 AND version "
                                  "< ?5"
                                  " ORDER BY version DESC LIMIT ?6"
                                : "SELECT version, skill_id, body FROM skill_versions WHERE skill_id = ?1"
                                  " ORDER BY version DESC LIMIT ?6";
                a.t[0] = skill_id;
        }
        int r = prep_bind(s, sql, &a, &st, e);
        if (r < 0)
                return r;
        size_t n = 0;
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list skills", e);
                json_t *o;
                if ((r = sqlt_load_column(st, 2, "a skill", &o, e)) < 0)
                        return r;
                if (json_array_append_new(out, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
                keys[n] = sqlite3_column_int64(st, 0);
                snprintf(ids[n], STORE_ID_MAX, "%s", (const char *) sqlite3_column_text(st, 1) ?: "");
                n++;
        }
        *ret_n = n;
        return 0;
}

static int sk_remove(store *base, const char *skill_id, int64_t version, const char *skill_body, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_tx_ sqlt_tx t = {0};
        int r, changes = 0;
        if ((r = sqlt_tx_begin(s, &t, e)) < 0)
                return r;
        if (version == -1 &&
            (r = exec_args(s, "DELETE FROM skill_versions WHERE skill_id = ?1", &(sk_args){.t = {skill_id}},
                           "cannot delete a skill's versions", NULL, e)) < 0)
                return r;
        if (version <= 0) {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                if ((r = prep_bind(s, "SELECT count(*) FROM skill_versions WHERE skill_id = ?1",
                                   &(sk_args){.t = {skill_id}}, &st, e)) < 0)
                        return r;
                if (sqlite3_step(st) != SQLITE_ROW)
                        return sqlt_fail(s->db, sqlite3_errcode(s->db), "cannot count a skill's versions", e);
                int64_t n = sqlite3_column_int64(st, 0);
                if (n > 0)
                        return hull_fail(e, -ENOTEMPTY, "skill %.64s still has %" PRId64 " version%s", skill_id, n,
                                         n == 1 ? "" : "s");
                r = exec_args(s, "DELETE FROM skills WHERE id = ?1", &(sk_args){.t = {skill_id}},
                              "cannot delete a skill", &changes, e);
        } else {
                sk_args a = {.t = {skill_id}, .i = {version}, .has_i = {true}};
                r = exec_args(s, "DELETE FROM skill_versions WHERE skill_id = ?1 AND version = ?5", &a,
                              "cannot delete a skill version", &changes, e);
                if (r >= 0 && changes > 0)
                        r = exec_args(s, "UPDATE skills SET body = ?2 WHERE id = ?1",
                                      &(sk_args){.t = {skill_id, skill_body}}, "cannot update a skill", NULL, e);
        }
        if (r < 0)
                return r;
        if (changes == 0)
                return version > 0
                               ? hull_fail(e, -ENOENT, "store: skill %.64s has no version %" PRId64, skill_id, version)
                               : hull_fail(e, -ENOENT, "store: no skill %.64s", skill_id);
        return sqlt_tx_commit(&t, e);
}

const store_skill_ops sqlt_skill_ops = {
        .put = sk_put,
        .get = sk_get,
        .zip = sk_zip,
        .list = sk_list,
        .remove = sk_remove,
};
