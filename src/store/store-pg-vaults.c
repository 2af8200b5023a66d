/* store-pg-vaults.c: the PostgreSQL backend's vaults and vault credentials (store_vault_ops):
 * rows of the tables of migration 4, their pages for store_paginate, and the credentials a rekey
 * must seal again. */
#include "store-pg-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int vput(store *base, store_vkind k, const store_vrow *row, bool create, hull_error *e) {
        pg_store *s = pg_of(base);
        static const char *const sql[2][2] = {
                [STORE_VAULT] = {"UPDATE vaults SET archived = $3, body = $4 WHERE id = $1 AND $2::bigint IS NOT NULL",
                                 "INSERT INTO vaults (id, created_ms, archived, body) VALUES ($1, $2, $3, $4)"},
                [STORE_VAULT_CREDENTIAL] =
                        {"UPDATE vault_credentials SET archived = $3, body = $4, sealed = $5, key_id = $6"
                         " WHERE id = $1 AND vault_id = $7 AND $2::bigint IS NOT NULL AND $8::text IS NOT NULL",
                         "INSERT INTO vault_credentials (id, created_ms, archived, body, sealed, key_id, vault_id, url)"
                         " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"},
        };
        char ms[PG_INT_MAX];
        const char *v[8] = {row->id,
                            pg_int(ms, row->created_ms),
                            row->archived ? "1" : "0",
                            row->body,
                            row->sealed,
                            row->key_id,
                            row->vault_id,
                            row->url};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, sql[k][create], k == STORE_VAULT ? 4 : 8, v, create ? "cannot insert" : "cannot update",
                        &res, e);
        if (r == -EEXIST && strcmp(pc->sqlstate, "23503") == 0)
                return hull_fail(e, -ENOENT, "store: no vault %s", row->vault_id);
        if (r == -EEXIST)
                return hull_fail(e, -EEXIST,
                                 k == STORE_VAULT ? "store: a vault with id %s exists"
                                                  : "store: credential %s: the vault has an active credential for "
                                                    "that mcp_server_url",
                                 row->id);
        if (r < 0)
                return r;
        if (!create && pg_changes(res) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", k == STORE_VAULT ? "vault" : "credential", row->id);
        return 0;
}

static int vget(store *base, store_vkind k, const char *vault_id, const char *id, json_t **ret, char **ret_sealed,
                hull_error *e) {
        pg_store *s = pg_of(base);
        static const char *const sql[2] = {
                [STORE_VAULT] = "SELECT body, NULL FROM vaults WHERE id = $1",
                [STORE_VAULT_CREDENTIAL] = "SELECT body, sealed FROM vault_credentials WHERE id = $1 AND vault_id = $2",
        };
        const char *v[] = {id, vault_id};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, sql[k], k == STORE_VAULT ? 1 : 2, v, "cannot read", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", k == STORE_VAULT ? "vault" : "credential", id);
        if (ret_sealed) {
                if (PQgetisnull(res, 0, 1))
                        return hull_fail(e, -EBADMSG, "store: credential %s: its secrets are missing", id);
                if (!(*ret_sealed = strdup(PQgetvalue(res, 0, 1))))
                        return hull_err(e, -ENOMEM, "store: cannot read");
        }
        r = ret ? pg_load(res, 0, 0, k == STORE_VAULT ? "vault" : "credential", ret, e) : 0;
        if (r < 0 && ret_sealed) {
                free(*ret_sealed);
                *ret_sealed = NULL;
        }
        return r;
}

static int vremove(store *base, store_vkind k, const char *vault_id, const char *id, hull_error *e) {
        pg_store *s = pg_of(base);
        static const char *const sql[2] = {
                [STORE_VAULT] = "DELETE FROM vaults WHERE id = $1", /* its credentials too (ON DELETE CASCADE) */
                [STORE_VAULT_CREDENTIAL] = "DELETE FROM vault_credentials WHERE id = $1 AND vault_id = $2",
        };
        const char *v[] = {id, vault_id};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, sql[k], k == STORE_VAULT ? 1 : 2, v, "cannot delete", &res, e);
        if (r < 0)
                return r;
        if (pg_changes(res) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", k == STORE_VAULT ? "vault" : "credential", id);
        return 0;
}

typedef struct vlisting {
        pg_conn *pc;
        store_vkind k;
        const char *vault_id;
        bool include_archived;
} vlisting;

static int vfetch(void *ctx, const store_rowkey *anchor, bool asc, unsigned want, json_t *out, store_rowkey *keys,
                  size_t *ret_n, hull_error *e) {
        const vlisting *vl = ctx;
        /* [kind][asc]; $2 is the vault (credentials), $3 and $4 the anchor or NULL */
        static const char *const sql[2][2] = {
                [STORE_VAULT] = {"SELECT created_ms, id, body FROM vaults WHERE ($1::int = 1 OR archived = 0)"
                                 " AND $2::text IS NULL AND ($3::bigint IS NULL OR (created_ms, id) < ($3::bigint, $4))"
                                 " ORDER BY created_ms DESC, id DESC LIMIT $5::bigint",
                                 "SELECT created_ms, id, body FROM vaults WHERE ($1::int = 1 OR archived = 0)"
                                 " AND $2::text IS NULL AND ($3::bigint IS NULL OR (created_ms, id) > ($3::bigint, $4))"
                                 " ORDER BY created_ms, id LIMIT $5::bigint"},
                [STORE_VAULT_CREDENTIAL] =
                        {"SELECT created_ms, id, body FROM vault_credentials WHERE ($1::int = 1 OR archived = 0)"
                         " AND vault_id = $2 AND ($3::bigint IS NULL OR (created_ms, id) < ($3::bigint, $4))"
                         " ORDER BY created_ms DESC, id DESC LIMIT $5::bigint",
                         "SELECT created_ms, id, body FROM vault_credentials WHERE ($1::int = 1 OR archived = 0)"
                         " AND vault_id = $2 AND ($3::bigint IS NULL OR (created_ms, id) > ($3::bigint, $4))"
                         " ORDER BY created_ms, id LIMIT $5::bigint"},
        };
        char key[PG_INT_MAX], lim[PG_INT_MAX];
        const char *v[5] = {vl->include_archived ? "1" : "0", vl->vault_id, anchor ? pg_int(key, anchor->key) : NULL,
                            anchor ? anchor->id : NULL, pg_int(lim, want)};
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(vl->pc, sql[vl->k][asc], 5, v, "cannot list", &res, e);
        if (r < 0)
                return r;
        return pg_page_rows(res, "vault", keys, out, ret_n, e);
}

static int vlist(store *base, store_vkind k, const char *vault_id, const store_listing *l, const char *page,
                 unsigned limit, store_page *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        if (k == STORE_VAULT_CREDENTIAL) {
                _cleanup_res_ PGresult *res = NULL;
                const char *v[] = {vault_id};
                int r = pg_exec(pc, "SELECT 1 FROM vaults WHERE id = $1", 1, v, "cannot list", &res, e);
                if (r < 0)
                        return r;
                if (PQntuples(res) == 0)
                        return hull_fail(e, -ENOENT, "store: no vault %s", vault_id);
        }
        vlisting vl = {.pc = pc, .k = k, .vault_id = vault_id, .include_archived = l->include_archived};
        return store_paginate(l, page, limit, vfetch, &vl, ret, NULL, e);
}

static int vstale(store *base, const char *key_id, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_(json_decrefp) json_t *out = json_array();
        if (!out)
                return hull_err(e, -ENOMEM, "store: cannot list credentials");
        const char *v[] = {key_id};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, "SELECT vault_id, id FROM vault_credentials WHERE key_id <> $1 ORDER BY created_ms, id", 1,
                        v, "cannot list credentials", &res, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++)
                if (json_array_append_new(out, json_pack("[s, s]", PQgetvalue(res, i, 0), PQgetvalue(res, i, 1))) < 0)
                        return hull_err(e, -ENOMEM, "store: cannot list credentials");
        *ret = TAKE_PTR(out);
        return 0;
}

const store_vault_ops pg_vault_ops = {
        .put = vput,
        .get = vget,
        .remove = vremove,
        .list = vlist,
        .stale = vstale,
};
