/* store-files.c: the front of the files and their blobs (store.h's "files"): each argument
 * checked before a backend sees it, and what both backends share to write and read a blob's
 * chunks (base64 text, so hull db copy moves them as any other text column). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "macro.h"
#include "sha256.h"
#include "store-backend.h"

static int sha_check(const char *sha256, hull_error *e) {
        if (!sha256 || !sha256_hex_is_valid(sha256, strlen(sha256)))
                return hull_fail(e, -EINVAL, "store: a blob's digest must be 64 lowercase hex digits");
        return 0;
}

int store_file_insert(store *s, const json_t *obj, const char *scope_id, const char *sha256, int64_t size, int fd,
                      hull_error *e) {
        const char *id = json_string_value(json_object_get(obj, "id"));
        int64_t ms;
        int r = store_id_check("file", id, e);
        if (r < 0 || (r = sha_check(sha256, e)) < 0)
                return r;
        if (scope_id && (r = store_id_check("session", scope_id, e)) < 0)
                return r;
        if (store_time_ms(json_string_value(json_object_get(obj, "created_at")), &ms) < 0)
                return hull_fail(e, -EINVAL, "store: file %s: \"created_at\" must be an RFC 3339 time", id);
        if (size < 0 || fd < 0)
                return hull_fail(e, -EINVAL, "store: file %s: no bytes to keep", id);
        _cleanup_free_ char *body = NULL;
        if ((r = store_dump(obj, "file", &body, e)) < 0)
                return r;
        return s->ops->file_insert(s, id, ms, scope_id, sha256, size, body, fd, e);
}

int store_file_get(store *s, const char *id, json_t **ret, char *ret_sha256, hull_error *e) {
        int r = store_id_check("file", id, e);
        if (r < 0)
                return r;
        return s->ops->file_get(s, id, ret, ret_sha256, e);
}

int store_file_list(store *s, const store_files_q *q, json_t **ret, bool *ret_more, hull_error *e) {
        if (q->limit < 1 || q->limit > V1_FILES_PAGE_MAX)
                return hull_fail(e, -EINVAL, "store: a files list's limit must be 1 to %u", V1_FILES_PAGE_MAX);
        if (q->after_id && q->before_id)
                return hull_fail(e, -EINVAL, "store: a files list takes after_id or before_id, not both");
        int r = 0;
        if ((q->after_id && (r = store_id_check("file", q->after_id, e)) < 0) ||
            (q->before_id && (r = store_id_check("file", q->before_id, e)) < 0) ||
            (q->scope_id && (r = store_id_check("session", q->scope_id, e)) < 0))
                return r;
        return s->ops->file_list(s, q, ret, ret_more, e);
}

int store_file_delete(store *s, const char *id, hull_error *e) {
        int r = store_id_check("file", id, e);
        if (r < 0)
                return r;
        return s->ops->file_delete(s, id, e);
}

int store_blob_read(store *s, const char *sha256, store_chunk_fn fn, void *ud, hull_error *e) {
        int r = sha_check(sha256, e);
        if (r < 0)
                return r;
        return s->ops->blob_read(s, sha256, fn, ud, e);
}

int store_blob_path(store *s, const char *sha256, char *ret, size_t size, hull_error *e) {
        int r = sha_check(sha256, e);
        if (r < 0)
                return r;
        return s->ops->blob_path(s, sha256, ret, size, e);
}

/* ---- what the backends share ---- */

int64_t store_blob_chunks(int64_t size) {
        return size <= 0 ? 1 : (size + STORE_BLOB_CHUNK_BYTES - 1) / STORE_BLOB_CHUNK_BYTES;
}

int store_blob_chunk_b64(int fd, int64_t size, int64_t seq, char **ret, hull_error *e) {
        int64_t off = seq * (int64_t) STORE_BLOB_CHUNK_BYTES;
        size_t want = off >= size ? 0 : (size_t) MIN((int64_t) STORE_BLOB_CHUNK_BYTES, size - off);
        _cleanup_free_ char *buf = malloc(want ? want : 1);
        if (!buf)
                return hull_fail(e, -ENOMEM, "store: out of memory");
        for (size_t got = 0; got < want;) {
                ssize_t n = pread(fd, buf + got, want - got, off + (int64_t) got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return hull_err(e, n < 0 ? -errno : -EIO, "store: cannot read a blob's bytes");
                got += (size_t) n;
        }
        size_t len;
        int r = base64_encode(buf, want, true, ret, &len);
        if (r < 0)
                return hull_fail(e, r, "store: cannot encode a blob's chunk");
        return 0;
}

int store_blob_chunk_out(const char *b64, size_t n, store_chunk_fn fn, void *ud, hull_error *e) {
        if (n == 0)
                return fn(ud, "", 0, e);
        _cleanup_free_ void *raw = NULL;
        size_t len;
        int r = base64_decode(b64, n, &raw, &len);
        if (r < 0)
                return hull_fail(e, r == -ENOMEM ? r : -EBADMSG, "store: a blob's chunk is not base64");
        return fn(ud, raw, len, e);
}
