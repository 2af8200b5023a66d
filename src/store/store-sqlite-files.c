/* store-sqlite-files.c: the SQLite backend's files and blobs (store.h's "files"): a file's row,
 * and its blob as a file named by its digest in PATH-blobs/ beside hull.db (written before the
 * row that names it, removed after the last row that named it). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store-sqlite-internal.h"

/* The blobs' directory (made on first use), under the lock. */
static int blob_dir(sqlt_store *s, hull_error *e) {
        if (s->blob_fd >= 0)
                return s->blob_fd;
        if (mkdir(s->blob_dir, 0700) < 0 && errno != EEXIST)
                return hull_err(e, -errno, "store: cannot make the blobs' directory %s", s->blob_dir);
        s->blob_fd = open(s->blob_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (s->blob_fd < 0)
                return hull_err(e, -errno, "store: cannot open the blobs' directory %s", s->blob_dir);
        return s->blob_fd;
}

/* Keep the size bytes of fd as blob sha256: a hard link to fd's file when it has a name on the
 * same file system, else a copy renamed into place. */
static int blob_write(sqlt_store *s, const char *sha256, int64_t size, int fd, hull_error *e) {
        int dfd = blob_dir(s, e);
        if (dfd < 0)
                return dfd;
        char self[64];
        snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_size == size && linkat(AT_FDCWD, self, dfd, sha256, AT_SYMLINK_FOLLOW) == 0)
                return 0;
        if (errno == EEXIST)
                return 0;
        char tmp[96];
        snprintf(tmp, sizeof(tmp), ".in-%.16s-%ld", sha256, (long) gettid());
        _cleanup_close_ int out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (out < 0)
                return hull_err(e, -errno, "store: cannot write a blob in %s", s->blob_dir);
        loff_t in_off = 0;
        while (in_off < size) {
                ssize_t n = copy_file_range(fd, &in_off, out, NULL, (size_t) (size - in_off), 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        int r = n < 0 ? -errno : -EIO;
                        (void) unlinkat(dfd, tmp, 0);
                        return hull_err(e, r, "store: cannot copy a blob into %s", s->blob_dir);
                }
        }
        if (renameat(dfd, tmp, dfd, sha256) < 0) {
                int r = -errno;
                (void) unlinkat(dfd, tmp, 0);
                return hull_err(e, r, "store: cannot keep a blob in %s", s->blob_dir);
        }
        return 0;
}

int sqlt_file_insert(store *base, const char *id, int64_t created_ms, const char *scope_id, const char *sha256,
                     int64_t size, const char *body, int fd, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int r = blob_write(s, sha256, size, fd, e); /* first: a row never names missing bytes */
        if (r < 0)
                return r;
        _cleanup_tx_ sqlt_tx t = {0};
        if ((r = sqlt_tx_begin(s, &t, e)) < 0)
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
        char sha[65] = "";
        bool last = false;
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                if ((r = sqlt_prep(s,
                                   "SELECT f.sha256, NOT EXISTS (SELECT 1 FROM files g WHERE g.sha256 = f.sha256"
                                   " AND g.id <> f.id) FROM files f WHERE f.id = ?1",
                                   &st, e)) < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, id);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        return hull_fail(e, -ENOENT, "store: no file %s", id);
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot read a file", e);
                snprintf(sha, sizeof(sha), "%s", (const char *) sqlite3_column_text(st, 0));
                last = sqlite3_column_int64(st, 1) != 0;
        }
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                if ((r = sqlt_prep(s, "DELETE FROM files WHERE id = ?1", &st, e)) < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, id);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                if ((r = sqlt_step_done(s, st, "cannot delete a file", e)) < 0)
                        return r;
        }
        if ((r = sqlt_tx_commit(&t, e)) < 0)
                return r;
        int dfd = last ? blob_dir(s, e) : -1;
        if (dfd >= 0)
                (void) unlinkat(dfd, sha, 0); /* the last file of those bytes */
        return 0;
}

int sqlt_blob_read(store *base, const char *sha256, store_chunk_fn fn, void *ud, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        _cleanup_close_ int fd = -1;
        {
                LOCKED(s);
                int dfd = blob_dir(s, e);
                if (dfd < 0)
                        return dfd;
                fd = openat(dfd, sha256, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        }
        if (fd < 0)
                return errno == ENOENT ? hull_fail(e, -ENOENT, "store: no blob %s", sha256)
                                       : hull_err(e, -errno, "store: cannot open blob %s", sha256);
        _cleanup_free_ char *buf = malloc(STORE_BLOB_CHUNK_BYTES);
        if (!buf)
                return hull_fail(e, -ENOMEM, "store: out of memory");
        for (;;) {
                ssize_t n = read(fd, buf, STORE_BLOB_CHUNK_BYTES);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return hull_err(e, -errno, "store: cannot read blob %s", sha256);
                if (n == 0)
                        return 0;
                int r = fn(ud, buf, (size_t) n, e);
                if (r < 0)
                        return r;
        }
}

int sqlt_blob_path(store *base, const char *sha256, char *ret, size_t size, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int dfd = blob_dir(s, e);
        if (dfd < 0)
                return dfd;
        if (faccessat(dfd, sha256, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return hull_fail(e, -ENOENT, "store: no blob %s", sha256);
        if ((size_t) snprintf(ret, size, "%s/%s", s->blob_dir, sha256) >= size)
                return hull_fail(e, -ENAMETOOLONG, "store: the path of a blob is too long");
        return 0;
}
