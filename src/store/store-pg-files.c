/* store-pg-files.c: the PostgreSQL backend's files and blobs (store.h's "files"): a file's row,
 * and its blob's chunks in blob_chunks, written in the same transaction; a blob is read back one
 * chunk a statement, so no answer holds more than a chunk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-pg-internal.h"

static int blob_write(pg_conn *pc, const char *sha256, int64_t size, int fd, hull_error *e) {
        int64_t n = store_blob_chunks(size);
        for (int64_t seq = 0; seq < n; seq++) {
                _cleanup_free_ char *b64 = NULL;
                int r = store_blob_chunk_b64(fd, size, seq, &b64, e);
                if (r < 0)
                        return r;
                char sb[PG_INT_MAX];
                const char *v[] = {sha256, pg_int(sb, seq), b64};
                r = pg_exec(pc, "INSERT INTO blob_chunks (sha256, seq, data) VALUES ($1, $2, $3)", 3, v,
                            "cannot keep a blob's chunk", NULL, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

int pg_file_insert(store *base, const char *id, int64_t created_ms, const char *scope_id, const char *sha256,
                   int64_t size, const char *body, int fd, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx t = {0};
        int r = pg_tx_begin(pc, &t, e);
        if (r < 0)
                return r;
        {
                /* two uploads of the same bytes at once: one writes the chunks, the other waits */
                const char *v[] = {sha256};
                if ((r = pg_exec(pc, "SELECT pg_advisory_xact_lock(hashtext($1))", 1, v, "cannot lock a blob", NULL,
                                 e)) < 0)
                        return r;
                _cleanup_res_ PGresult *res = NULL;
                if ((r = pg_exec(pc, "SELECT 1 FROM blob_chunks WHERE sha256 = $1 AND seq = 0", 1, v,
                                 "cannot read a blob", &res, e)) < 0)
                        return r;
                if (PQntuples(res) == 0 && (r = blob_write(pc, sha256, size, fd, e)) < 0)
                        return r;
        }
        char mb[PG_INT_MAX], zb[PG_INT_MAX];
        const char *v[] = {id, pg_int(mb, created_ms), sha256, pg_int(zb, size), scope_id ? scope_id : "", body};
        r = pg_exec(pc,
                    "INSERT INTO files (id, created_ms, sha256, size, scope_id, body)"
                    " VALUES ($1, $2, $3, $4, $5, $6)",
                    6, v, "cannot keep a file", NULL, e);
        if (r < 0)
                return r;
        return pg_tx_commit(&t, e);
}

int pg_file_get(store *base, const char *id, json_t **ret, char *ret_sha256, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {id};
        int r = pg_exec(pc, "SELECT body, sha256 FROM files WHERE id = $1", 1, v, "cannot read a file", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no file %s", id);
        if (ret_sha256)
                snprintf(ret_sha256, 65, "%s", PQgetvalue(res, 0, 1));
        return pg_load(res, 0, 0, "file", ret, e);
}

int pg_file_list(store *base, const store_files_q *q, json_t **ret, bool *ret_more, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_(json_decrefp) json_t *arr = json_array();
        if (!arr)
                return hull_fail(e, -ENOMEM, "store: out of memory");
        PG_LOCKED(s);
        const char *anchor = q->after_id ? q->after_id : q->before_id;
        char ms[PG_INT_MAX] = "0", lim[PG_INT_MAX];
        int r;
        if (anchor) {
                _cleanup_res_ PGresult *res = NULL;
                const char *v[] = {anchor};
                if ((r = pg_exec(pc, "SELECT created_ms FROM files WHERE id = $1", 1, v, "cannot read a file", &res,
                                 e)) < 0)
                        return r;
                if (PQntuples(res) == 0)
                        return hull_fail(e, -ENOENT, "store: no file %s", anchor);
                pg_int(ms, pg_get_int(res, 0, 0));
        }
        static const char *const sql[] = {
                "SELECT body FROM files WHERE ($1 = '' OR scope_id = $1) AND $2::bigint = $2::bigint"
                " AND $3::text = $3::text ORDER BY created_ms DESC, id DESC LIMIT $4::bigint",
                "SELECT body FROM files WHERE ($1 = '' OR scope_id = $1) AND (created_ms, id) < ($2::bigint, $3::text)"
                " ORDER BY created_ms DESC, id DESC LIMIT $4::bigint",
                "SELECT body FROM files WHERE ($1 = '' OR scope_id = $1) AND (created_ms, id) > ($2::bigint, $3::text)"
                " ORDER BY created_ms ASC, id ASC LIMIT $4::bigint",
        };
        const char *v[] = {q->scope_id ? q->scope_id : "", ms, anchor ? anchor : "", pg_int(lim, q->limit + 1)};
        _cleanup_res_ PGresult *res = NULL;
        if ((r = pg_exec(pc, sql[q->after_id ? 1 : q->before_id ? 2 : 0], 4, v, "cannot list files", &res, e)) < 0)
                return r;
        int n = PQntuples(res);
        bool more = n > (int) q->limit;
        for (int i = 0; i < n && i < (int) q->limit; i++) {
                json_t *o = NULL;
                if ((r = pg_load(res, i, 0, "file", &o, e)) < 0)
                        return r;
                if (json_array_insert_new(arr, q->before_id ? 0 : json_array_size(arr), o) < 0)
                        return hull_fail(e, -ENOMEM, "store: out of memory");
        }
        *ret = TAKE_PTR(arr);
        *ret_more = more;
        return 0;
}

int pg_file_delete(store *base, const char *id, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx t = {0};
        int r = pg_tx_begin(pc, &t, e);
        if (r < 0)
                return r;
        const char *v[] = {id};
        _cleanup_res_ PGresult *res = NULL;
        if ((r = pg_exec(pc, "DELETE FROM files WHERE id = $1 RETURNING sha256", 1, v, "cannot delete a file", &res,
                         e)) < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no file %s", id);
        const char *w[] = {PQgetvalue(res, 0, 0)};
        if ((r = pg_exec(pc, "SELECT pg_advisory_xact_lock(hashtext($1))", 1, w, "cannot lock a blob", NULL, e)) < 0)
                return r;
        if ((r = pg_exec(pc,
                         "DELETE FROM blob_chunks WHERE sha256 = $1"
                         " AND NOT EXISTS (SELECT 1 FROM files WHERE sha256 = $1)",
                         1, w, "cannot delete a blob", NULL, e)) < 0)
                return r;
        return pg_tx_commit(&t, e);
}

int pg_blob_read(store *base, const char *sha256, store_chunk_fn fn, void *ud, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        for (int64_t seq = 0;; seq++) {
                char sb[PG_INT_MAX];
                const char *v[] = {sha256, pg_int(sb, seq)};
                _cleanup_res_ PGresult *res = NULL;
                int r = pg_exec(pc, "SELECT data FROM blob_chunks WHERE sha256 = $1 AND seq = $2", 2, v,
                                "cannot read a blob", &res, e);
                if (r < 0)
                        return r;
                if (PQntuples(res) == 0)
                        return seq > 0 ? 0 : hull_fail(e, -ENOENT, "store: no blob %s", sha256);
                r = store_blob_chunk_out(PQgetvalue(res, 0, 0), (size_t) PQgetlength(res, 0, 0), fn, ud, e);
                if (r < 0)
                        return r;
        }
}

int pg_blob_path(store *base, const char *sha256, char *ret, size_t size, hull_error *e) {
        (void) base, (void) sha256, (void) ret, (void) size;
        return hull_fail(e, -EOPNOTSUPP, "store: PostgreSQL keeps blobs in the database");
}
