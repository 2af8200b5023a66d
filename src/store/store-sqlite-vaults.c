/* store-sqlite-vaults.c: the SQLite backend's vaults and vault credentials (store_vault_ops):
 * rows of the tables of migration 4, their pages for store_paginate, and the credentials a rekey
 * must seal again. */
#include "store-sqlite-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int vput(store *base, store_vkind k, const store_vrow *row, bool create, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        static const char *const sql[2][2] = {
                [STORE_VAULT] = {"UPDATE vaults SET archived = ?3, body = ?4 WHERE id = ?1",
                                 "INSERT INTO vaults (id, created_ms, archived, body) VALUES (?1, ?2, ?3, ?4)"},
                [STORE_VAULT_CREDENTIAL] =
                        {"UPDATE vault_credentials SET archived = ?3, body = ?4, sealed = ?5, key_id = ?6"
                         " WHERE id = ?1 AND vault_id = ?7",
                         "INSERT INTO vault_credentials (id, created_ms, archived, body, sealed, key_id, vault_id, url)"
                         " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
        };
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql[k][create], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, row->id);
        if (create)
                rc = rc ?: sqlite3_bind_int64(st, 2, row->created_ms);
        rc = rc ?: sqlite3_bind_int64(st, 3, row->archived);
        rc = rc ?: sqlt_bind_text(st, 4, row->body);
        if (k == STORE_VAULT_CREDENTIAL) {
                rc = rc ?: sqlt_bind_text(st, 5, row->sealed);
                rc = rc ?: sqlt_bind_text(st, 6, row->key_id);
                rc = rc ?: sqlt_bind_text(st, 7, row->vault_id);
                if (create)
                        rc = rc ?: sqlt_bind_text(st, 8, row->url);
        }
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT && sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_FOREIGNKEY)
                return hull_fail(e, -ENOENT, "store: no vault %s", row->vault_id);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return hull_fail(e, -EEXIST,
                                 k == STORE_VAULT ? "store: a vault with id %s exists"
                                                  : "store: credential %s: the vault has an active credential for "
                                                    "that mcp_server_url",
                                 row->id);
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, create ? "cannot insert" : "cannot update", e);
        if (!create && sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", k == STORE_VAULT ? "vault" : "credential", row->id);
        return 0;
}

static int vget(store *base, store_vkind k, const char *vault_id, const char *id, json_t **ret, char **ret_sealed,
                hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        static const char *const sql[2] = {
                [STORE_VAULT] = "SELECT body, NULL FROM vaults WHERE id = ?1",
                [STORE_VAULT_CREDENTIAL] = "SELECT body, sealed FROM vault_credentials WHERE id = ?1 AND vault_id = ?2",
        };
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        if (k == STORE_VAULT_CREDENTIAL)
                rc = rc ?: sqlt_bind_text(st, 2, vault_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no %s %s", k == STORE_VAULT ? "vault" : "credential", id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read", e);
        if (ret_sealed) {
                const char *p = (const char *) sqlite3_column_text(st, 1);
                if (!p || !(*ret_sealed = strdup(p)))
                        return hull_fail(e, p ? -ENOMEM : -EBADMSG, "store: credential %s: its secrets are missing",
                                         id);
        }
        r = ret ? sqlt_load_column(st, 0, k == STORE_VAULT ? "vault" : "credential", ret, e) : 0;
        if (r < 0 && ret_sealed) {
                free(*ret_sealed);
                *ret_sealed = NULL;
        }
        return r;
}

static int vremove(store *base, store_vkind k, const char *vault_id, const char *id, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        static const char *const sql[2] = {
                [STORE_VAULT] = "DELETE FROM vaults WHERE id = ?1", /* its credentials too (ON DELETE CASCADE) */
                [STORE_VAULT_CREDENTIAL] = "DELETE FROM vault_credentials WHERE id = ?1 AND vault_id = ?2",
        };
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        if (k == STORE_VAULT_CREDENTIAL)
                rc = rc ?: sqlt_bind_text(st, 2, vault_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        if ((r = sqlt_step_done(s, st, "cannot delete", e)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", k == STORE_VAULT ? "vault" : "credential", id);
        return 0;
}

typedef struct vlisting {
        sqlt_store *s;
        store_vkind k;
        const char *vault_id;
        bool include_archived;
} vlisting;

static int vfetch(void *ctx, const store_rowkey *anchor, bool asc, unsigned want, json_t *out, store_rowkey *keys,
                  size_t *ret_n, hull_error *e) {
        const vlisting *vl = ctx;
        /* [kind][asc] */
        static const char *const sql[2][2] = {
                [STORE_VAULT] = {"SELECT created_ms, id, body FROM vaults WHERE (?1 OR archived = 0)"
                                 " AND (?3 IS NULL OR (created_ms, id) < (?3, ?4)) ORDER BY created_ms DESC, id DESC"
                                 " LIMIT ?5",
                                 "SELECT created_ms, id, body FROM vaults WHERE (?1 OR archived = 0)"
                                 " AND (?3 IS NULL OR (created_ms, id) > (?3, ?4)) ORDER BY created_ms, id LIMIT ?5"},
                [STORE_VAULT_CREDENTIAL] =
                        {"SELECT created_ms, id, body FROM vault_credentials WHERE (?1 OR archived = 0)"
                         " AND vault_id = ?2 AND (?3 IS NULL OR (created_ms, id) < (?3, ?4))"
                         " ORDER BY created_ms DESC, id DESC LIMIT ?5",
                         "SELECT created_ms, id, body FROM vault_credentials WHERE (?1 OR archived = 0)"
                         " AND vault_id = ?2 AND (?3 IS NULL OR (created_ms, id) > (?3, ?4))"
                         " ORDER BY created_ms, id LIMIT ?5"},
        };
        sqlt_store *s = vl->s;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql[vl->k][asc], &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_bind_int64(st, 1, vl->include_archived);
        if (vl->k == STORE_VAULT_CREDENTIAL)
                rc = rc ?: sqlt_bind_text(st, 2, vl->vault_id);
        if (anchor) {
                rc = rc ?: sqlite3_bind_int64(st, 3, anchor->key);
                rc = rc ?: sqlt_bind_text(st, 4, anchor->id);
        }
        rc = rc ?: sqlite3_bind_int64(st, 5, want);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        return sqlt_page_rows(s, st, "vault", keys, out, ret_n, e);
}

static int vlist(store *base, store_vkind k, const char *vault_id, const store_listing *l, const char *page,
                 unsigned limit, store_page *ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        if (k == STORE_VAULT_CREDENTIAL) {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                int r = sqlt_prep(s, "SELECT 1 FROM vaults WHERE id = ?1", &st, e);
                if (r < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, vault_id);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        return hull_fail(e, -ENOENT, "store: no vault %s", vault_id);
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list", e);
        }
        vlisting vl = {.s = s, .k = k, .vault_id = vault_id, .include_archived = l->include_archived};
        return store_paginate(l, page, limit, vfetch, &vl, ret, NULL, e);
}

static int vstale(store *base, const char *key_id, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        _cleanup_(json_decrefp) json_t *out = json_array();
        if (!out)
                return hull_err(e, -ENOMEM, "store: cannot list credentials");
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "SELECT vault_id, id FROM vault_credentials WHERE key_id <> ?1 ORDER BY created_ms, id",
                          &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, key_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *v = (const char *) sqlite3_column_text(st, 0),
                           *id = (const char *) sqlite3_column_text(st, 1);
                if (!v || !id || json_array_append_new(out, json_pack("[s, s]", v, id)) < 0)
                        return hull_err(e, -ENOMEM, "store: cannot list credentials");
        }
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, "cannot list credentials", e);
        *ret = TAKE_PTR(out);
        return 0;
}

const store_vault_ops sqlt_vault_ops = {
        .put = vput,
        .get = vget,
        .remove = vremove,
        .list = vlist,
        .stale = vstale,
};
