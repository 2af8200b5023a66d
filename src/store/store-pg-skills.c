/* store-pg-skills.c: the PostgreSQL backend's skills and skill versions (store-skill-backend.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-pg-internal.h"
#include "store-skill-backend.h"

static int sk_put(store *base, bool create, const char *skill_id, int64_t created_ms, const char *skill_body,
                  int64_t version, int64_t version_ms, const char *version_body, const char *zip_b64, hull_error *e) {
        pg_store *s = pg_of(base);
        char cb[PG_INT_MAX], vb[PG_INT_MAX], vmb[PG_INT_MAX];
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx t = {0};
        _cleanup_res_ PGresult *res = NULL;
        int r;
        if ((r = pg_tx_begin(pc, &t, e)) < 0)
                return r;
        const char *a[] = {skill_id, skill_body, pg_int(cb, created_ms)};
        r = create ? pg_exec(pc, "INSERT INTO skills (id, created_ms, body) VALUES ($1, $3, $2)", 3, a,
                             "cannot store a skill", &res, e)
                   : pg_exec(pc, "UPDATE skills SET body = $2 WHERE id = $1", 2, a, "cannot update a skill", &res, e);
        if (r == -EEXIST)
                return hull_fail(e, -EEXIST, "store: skill %.64s exists already", skill_id);
        if (r < 0)
                return r;
        if (pg_changes(res) == 0)
                return hull_fail(e, -ENOENT, "store: no skill %.64s", skill_id);
        const char *v[] = {skill_id, pg_int(vb, version), pg_int(vmb, version_ms), version_body, zip_b64};
        r = pg_exec(pc,
                    "INSERT INTO skill_versions (skill_id, version, created_ms, body, zip) VALUES ($1, $2, $3, $4, $5)",
                    5, v, "cannot store a skill version", NULL, e);
        if (r == -EEXIST)
                return hull_fail(e, -EEXIST, "store: skill %.64s has a version %" PRId64 " already", skill_id, version);
        if (r < 0)
                return r;
        return pg_tx_commit(&t, e);
}

static int sk_get(store *base, const char *skill_id, int64_t version, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        char vb[PG_INT_MAX];
        const char *v[] = {skill_id, pg_int(vb, version)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        version > 0 ? "SELECT body FROM skill_versions WHERE skill_id = $1 AND version = $2"
                                    : "SELECT body FROM skills WHERE id = $1",
                        version > 0 ? 2 : 1, v, "cannot read a skill", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return version > 0
                               ? hull_fail(e, -ENOENT, "store: skill %.64s has no version %" PRId64, skill_id, version)
                               : hull_fail(e, -ENOENT, "store: no skill %.64s", skill_id);
        return ret ? pg_load(res, 0, 0, "a skill", ret, e) : 0;
}

static int sk_zip(store *base, const char *skill_id, int64_t version, char **ret_b64, hull_error *e) {
        pg_store *s = pg_of(base);
        char vb[PG_INT_MAX];
        const char *v[] = {skill_id, pg_int(vb, version)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, "SELECT zip FROM skill_versions WHERE skill_id = $1 AND version = $2", 2, v,
                        "cannot read a skill's files", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: skill %.64s has no version %" PRId64, skill_id, version);
        *ret_b64 = strdup(PQgetvalue(res, 0, 0));
        return *ret_b64 ? 0 : hull_err(e, -ENOMEM, "store: out of memory");
}

static int sk_list(store *base, const char *skill_id, bool has_after, int64_t after_key, const char *after_id,
                   unsigned want, json_t *out, int64_t *keys, char (*ids)[STORE_ID_MAX], size_t *ret_n, hull_error *e) {
        pg_store *s = pg_of(base);
        char kb[PG_INT_MAX], wb[PG_INT_MAX];
        const char *v[3];
        int nv = 0;
        const char *sql;
        if (!skill_id && has_after) {
                sql = "SELECT created_ms, id, body FROM skills WHERE (created_ms, id) < ($2, $1)"
                      " ORDER BY created_ms DESC, id DESC LIMIT $3";
                v[nv++] = after_id;
                v[nv++] = pg_int(kb, after_key);
        } else if (!skill_id)
                sql = "SELECT created_ms, id, body FROM skills ORDER BY created_ms DESC, id DESC LIMIT $1";
        else if (has_after) {
                sql = "SELECT version, skill_id, body FROM skill_versions WHERE skill_id = $1 AND version < $2"
                      " ORDER BY version DESC LIMIT $3";
                v[nv++] = skill_id;
                v[nv++] = pg_int(kb, after_key);
        } else {
                sql = "SELECT version, skill_id, body FROM skill_versions WHERE skill_id = $1"
                      " ORDER BY version DESC LIMIT $2";
                v[nv++] = skill_id;
        }
        v[nv++] = pg_int(wb, want);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, sql, nv, v, "cannot list skills", &res, e);
        if (r < 0)
                return r;
        size_t n = 0;
        for (int i = 0; i < PQntuples(res); i++) {
                json_t *o;
                if ((r = pg_load(res, i, 2, "a skill", &o, e)) < 0)
                        return r;
                if (json_array_append_new(out, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
                keys[n] = pg_get_int(res, i, 0);
                snprintf(ids[n], STORE_ID_MAX, "%s", PQgetvalue(res, i, 1));
                n++;
        }
        *ret_n = n;
        return 0;
}

static int sk_remove(store *base, const char *skill_id, int64_t version, const char *skill_body, hull_error *e) {
        pg_store *s = pg_of(base);
        char vb[PG_INT_MAX];
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx t = {0};
        _cleanup_res_ PGresult *res = NULL;
        int r;
        if ((r = pg_tx_begin(pc, &t, e)) < 0)
                return r;
        if (version <= 0) {
                const char *v[] = {skill_id};
                _cleanup_res_ PGresult *cnt = NULL;
                /* the skill's row locked first: a version added meanwhile waits for this */
                if ((r = pg_exec(pc, "SELECT 1 FROM skills WHERE id = $1 FOR UPDATE", 1, v, "cannot lock a skill", NULL,
                                 e)) < 0 ||
                    (version == -1 && (r = pg_exec(pc, "DELETE FROM skill_versions WHERE skill_id = $1", 1, v,
                                                   "cannot delete a skill's versions", NULL, e)) < 0) ||
                    (r = pg_exec(pc, "SELECT count(*) FROM skill_versions WHERE skill_id = $1", 1, v,
                                 "cannot count a skill's versions", &cnt, e)) < 0)
                        return r;
                int64_t n = pg_get_int(cnt, 0, 0);
                if (n > 0)
                        return hull_fail(e, -ENOTEMPTY, "skill %.64s still has %" PRId64 " version%s", skill_id, n,
                                         n == 1 ? "" : "s");
                r = pg_exec(pc, "DELETE FROM skills WHERE id = $1", 1, v, "cannot delete a skill", &res, e);
        } else {
                const char *v[] = {skill_id, pg_int(vb, version)}, *u[] = {skill_id, skill_body};
                r = pg_exec(pc, "DELETE FROM skill_versions WHERE skill_id = $1 AND version = $2", 2, v,
                            "cannot delete a skill version", &res, e);
                if (r >= 0 && pg_changes(res) > 0)
                        r = pg_exec(pc, "UPDATE skills SET body = $2 WHERE id = $1", 2, u, "cannot update a skill",
                                    NULL, e);
        }
        if (r < 0)
                return r;
        if (pg_changes(res) == 0)
                return version > 0
                               ? hull_fail(e, -ENOENT, "store: skill %.64s has no version %" PRId64, skill_id, version)
                               : hull_fail(e, -ENOENT, "store: no skill %.64s", skill_id);
        return pg_tx_commit(&t, e);
}

const store_skill_ops pg_skill_ops = {
        .put = sk_put,
        .get = sk_get,
        .zip = sk_zip,
        .list = sk_list,
        .remove = sk_remove,
};
