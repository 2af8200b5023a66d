/* store-sqlite-files.c: the SQLite backend's files and blobs (store.h's "files"): a file's row,
 * and its blob's chunks in blob_chunks, written in the same transaction. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-sqlite-internal.h"

/* Is a blob of this digest held? 1 yes, 0 no. */
static int blob_held(sqlt_store *s, const char *sha256, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "SELECT 1 FROM blob_chunks WHERE sha256 = ?1 AND seq = 0", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, sha256);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                return 1;
        return rc == SQLITE_DONE ? 0 : sqlt_fail(s->db, rc, "cannot read a blob", e);
}

static int blob_write(sqlt_store *s, const char *sha256, int64_t size, int fd, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "INSERT INTO blob_chunks (sha256, seq, data) VALUES (?1, ?2, ?3)", &st, e);
        if (r < 0)
                return r;
        int64_t n = store_blob_chunks(size);
        for (int64_t seq = 0; seq < n; seq++) {
                _cleanup_free_ char *b64 = NULL;
                if ((r = store_blob_chunk_b64(fd, size, seq, &b64, e)) < 0)
                        return r;
                sqlite3_reset(st);
                int rc = sqlt_bind_text(st, 1, sha256);
                rc = rc ?: sqlite3_bind_int64(st, 2, seq);
                rc = rc ?: sqlite3_bind_text(st, 3, b64, -1, SQLITE_STATIC);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                if ((r = sqlt_step_done(s, st, "cannot keep a blob's chunk", e)) < 0)
                        return r;
        }
        return 0;
}

int sqlt_file_insert(store *base, const char *id, int64_t created_ms, const char *scope_id, const char *sha256,
                     int64_t size, const char *body, int fd, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_tx_ sqlt_tx t = {0};
        int r = sqlt_tx_begin(s, &t, e);
        if (r < 0)
                return r;
        if ((r = blob_held(s, sha256, e)) < 0)
                return r;
        if (r == 0 && (r = blob_write(s, sha256, size, fd, e)) < 0)
                return r;
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                r = sqlt_prep(s,
                              "INSERT INTO files (id, created_ms, sha256, size, scope_id, body)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                              &st, e);
                if (r < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, id);
                rc = rc ?: sqlite3_bind_int64(st, 2, created_ms);
                rc = rc ?: sqlt_bind_text(st, 3, sha256);
                rc = rc ?: sqlite3_bind_int64(st, 4, size);
                rc = rc ?: sqlt_bind_text(st, 5, scope_id ? scope_id : "");
                rc = rc ?: sqlt_bind_text(st, 6, body);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                if ((r = sqlt_step_done(s, st, "cannot keep a file", e)) < 0)
                        return r;
        }
        return sqlt_tx_commit(&t, e);
}

int sqlt_file_get(store *base, const char *id, json_t **ret, char *ret_sha256, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "SELECT body, sha256 FROM files WHERE id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no file %s", id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a file", e);
        if (ret_sha256)
                snprintf(ret_sha256, 65, "%s", (const char *) sqlite3_column_text(st, 1));
        return sqlt_load_column(st, 0, "file", ret, e);
}

/* The (created_ms, id) key of file id into *ret_ms. */
static int file_key(sqlt_store *s, const char *id, int64_t *ret_ms, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "SELECT created_ms FROM files WHERE id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no file %s", id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a file", e);
        *ret_ms = sqlite3_column_int64(st, 0);
        return 0;
}

int sqlt_file_list(store *base, const store_files_q *q, json_t **ret, bool *ret_more, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        _cleanup_(json_decrefp) json_t *arr = json_array();
        if (!arr)
                return hull_fail(e, -ENOMEM, "store: out of memory");
        LOCKED(s);
        const char *anchor = q->after_id ? q->after_id : q->before_id;
        int64_t ms = 0;
        int r;
        if (anchor && (r = file_key(s, anchor, &ms, e)) < 0)
                return r;
        /* newest first; before_id reads upward from its anchor, then the page is turned round */
        static const char *const sql[] = {
                "SELECT body FROM files WHERE (?1 = '' OR scope_id = ?1)"
                " ORDER BY created_ms DESC, id DESC LIMIT ?4",
                "SELECT body FROM files WHERE (?1 = '' OR scope_id = ?1) AND (created_ms, id) < (?2, ?3)"
                " ORDER BY created_ms DESC, id DESC LIMIT ?4",
                "SELECT body FROM files WHERE (?1 = '' OR scope_id = ?1) AND (created_ms, id) > (?2, ?3)"
                " ORDER BY created_ms ASC, id ASC LIMIT ?4",
        };
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = sqlt_prep(s, sql[q->after_id ? 1 : q->before_id ? 2 : 0], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, q->scope_id ? q->scope_id : "");
        rc = rc ?: sqlite3_bind_int64(st, 2, ms);
        rc = rc ?: sqlt_bind_text(st, 3, anchor ? anchor : "");
        rc = rc ?: sqlite3_bind_int64(st, 4, (int64_t) q->limit + 1);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        bool more = false;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (json_array_size(arr) == q->limit) {
                        more = true;
                        break;
                }
                json_t *o = NULL;
                if ((r = sqlt_load_column(st, 0, "file", &o, e)) < 0)
                        return r;
                if (json_array_insert_new(arr, q->before_id ? 0 : json_array_size(arr), o) < 0)
                        return hull_fail(e, -ENOMEM, "store: out of memory");
        }
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, "cannot list files", e);
        *ret = TAKE_PTR(arr);
        *ret_more = more;
        return 0;
}

int sqlt_file_delete(store *base, const char *id, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_tx_ sqlt_tx t = {0};
        int r = sqlt_tx_begin(s, &t, e);
        if (r < 0)
                return r;
        static const char *const sql[] = {
                "DELETE FROM blob_chunks WHERE sha256 = (SELECT sha256 FROM files WHERE id = ?1)"
                " AND NOT EXISTS (SELECT 1 FROM files f, files g WHERE f.id = ?1 AND g.sha256 = f.sha256"
                " AND g.id <> f.id)",
                "DELETE FROM files WHERE id = ?1",
        };
        for (size_t i = 0; i < ELEMENTSOF(sql); i++) {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                if ((r = sqlt_prep(s, sql[i], &st, e)) < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, id);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                if ((r = sqlt_step_done(s, st, "cannot delete a file", e)) < 0)
                        return r;
                if (i == 1 && sqlite3_changes(s->db) == 0)
                        return hull_fail(e, -ENOENT, "store: no file %s", id);
        }
        return sqlt_tx_commit(&t, e);
}

int sqlt_blob_read(store *base, const char *sha256, store_chunk_fn fn, void *ud, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "SELECT data FROM blob_chunks WHERE sha256 = ?1 ORDER BY seq", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, sha256);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        bool any = false;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                any = true;
                r = store_blob_chunk_out((const char *) sqlite3_column_text(st, 0),
                                         (size_t) sqlite3_column_bytes(st, 0), fn, ud, e);
                if (r < 0)
                        return r;
        }
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, "cannot read a blob", e);
        return any ? 0 : hull_fail(e, -ENOENT, "store: no blob %s", sha256);
}
