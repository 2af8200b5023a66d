/* v1-files.c: see v1-files.h. An upload goes to a temporary file in the cache directory while the
 * multipart parser (src/shared/multipart.c) hands on the bytes of its "file" part and SHA-256 is
 * computed; at the end it is renamed to its digest (the node-local copy) and the store keeps the
 * bytes (one transaction: the blob, unless held already, and the file's row). */
#include "v1-files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "multipart.h"
#include "sha256.h"
#include "utf8.h"
#include "v1-run.h"

struct v1_files {
        store *store;
        int cache_fd;
        uint64_t file_max;
};

struct v1_upload {
        v1_files *f;
        mp_parser mp;
        int fd; /* the temporary file in the cache directory */
        char tmp_name[64];
        sha256_ctx sha;
        uint64_t size;
        char *buf; /* the parser hands on short runs (a CR in the data ends one): written in blocks */
        size_t buf_len;
        int err; /* the first error: -EFBIG, -EBADMSG, -EIO */
        char why[160];
        bool in_file, have_file;
        char filename[V1_FILE_NAME_MAX];
        char mime[V1_FILE_MIME_MAX];
};

int v1_files_new(const v1_files_config *cfg, v1_files **ret, hull_error *e) {
        if (mkdir(cfg->cache_dir, 0700) < 0 && errno != EEXIST)
                return hull_err(e, -errno, "files: cannot make the cache directory %s", cfg->cache_dir);
        _cleanup_close_ int fd = open(cfg->cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return hull_err(e, -errno, "files: cannot open the cache directory %s", cfg->cache_dir);
        v1_files *f = calloc(1, sizeof(*f));
        if (!f)
                return hull_err(e, -ENOMEM, "files: out of memory");
        f->store = cfg->store;
        f->cache_fd = TAKE_FD(fd);
        f->file_max = cfg->file_max && cfg->file_max < V1_FILE_BYTES_MAX ? cfg->file_max : V1_FILE_BYTES_MAX;
        *ret = f;
        return 0;
}

void v1_files_free(v1_files *f) {
        if (!f)
                return;
        safe_close(f->cache_fd);
        free(f);
}

uint64_t v1_files_max(const v1_files *f) {
        return f->file_max;
}

/* ---- an upload ---- */

static int up_fail(v1_upload *u, int err, const char *why) {
        if (!u->err) {
                u->err = err;
                snprintf(u->why, sizeof(u->why), "%s", why);
        }
        return err;
}

static int on_part(void *ud, const mp_part *p) {
        v1_upload *u = ud;
        u->in_file = strcmp(p->name, "file") == 0;
        if (!u->in_file)
                return 0; /* another field (a purpose, say): read past */
        if (u->have_file)
                return up_fail(u, -EBADMSG, "the form has two parts named file: send one file an upload");
        u->have_file = true;
        if (!p->has_filename || !p->filename[0])
                return up_fail(u, -EBADMSG,
                               "the file part has no filename: give it one (Content-Disposition's filename)");
        if (strlen(p->filename) >= sizeof(u->filename)) {
                char why[64];
                snprintf(why, sizeof(why), "the file's name is longer than %u bytes", V1_FILE_NAME_MAX - 1);
                return up_fail(u, -EBADMSG, why);
        }
        for (const char *c = p->filename; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return up_fail(u, -EBADMSG, "the file's name holds a control character");
        if (!utf8_is_valid(p->filename, strlen(p->filename)))
                return up_fail(u, -EBADMSG, "the file's name is not UTF-8");
        memcpy(u->filename, p->filename, strlen(p->filename) + 1); /* its length checked above */
        snprintf(u->mime, sizeof(u->mime), "%s", p->content_type);
        return 0;
}

static int flush(v1_upload *u) {
        if (u->buf_len == 0)
                return 0;
        int r = sha256_update(&u->sha, u->buf, u->buf_len) < 0 ? -EIO : loop_write(u->fd, u->buf, u->buf_len);
        u->buf_len = 0;
        return r < 0 ? up_fail(u, -EIO, "the upload could not be written to disk") : 0;
}

static int on_data(void *ud, const void *p, size_t n) {
        v1_upload *u = ud;
        if (!u->in_file)
                return 0;
        if (n > u->f->file_max - u->size)
                return up_fail(u, -EFBIG, "");
        u->size += n;
        if (u->buf_len + n > V1_FILE_WRITE_BLOCK && flush(u) < 0)
                return u->err;
        if (n >= V1_FILE_WRITE_BLOCK) {
                if (sha256_update(&u->sha, p, n) < 0 || loop_write(u->fd, p, n) < 0)
                        return up_fail(u, -EIO, "the upload could not be written to disk");
                return 0;
        }
        memcpy(u->buf + u->buf_len, p, n);
        u->buf_len += n;
        return 0;
}

static int on_end(void *ud) {
        v1_upload *u = ud;
        u->in_file = false;
        return flush(u);
}

static const mp_callbacks upload_cbs = {.part_begin = on_part, .part_data = on_data, .part_end = on_end};

int v1_upload_begin(v1_files *f, const char *content_type, v1_upload **ret, v1_err *err) {
        char boundary[MULTIPART_BOUNDARY_MAX];
        if (mp_boundary(content_type, boundary) < 0)
                return v1_fail(err, 400, "",
                               "an upload is a multipart/form-data body with a boundary (Content-Type: "
                               "multipart/form-data; boundary=...) holding the file as the field 'file'; got "
                               "Content-Type '%.80s'",
                               content_type ? content_type : "(none)");
        v1_upload *u = calloc(1, sizeof(*u));
        if (!u)
                return v1_fail(err, 500, "", "out of memory");
        u->f = f;
        u->fd = -1;
        if (!(u->buf = malloc(V1_FILE_WRITE_BLOCK))) {
                free(u);
                return v1_fail(err, 500, "", "out of memory");
        }
        if (sha256_init(&u->sha) < 0) {
                free(u->buf);
                free(u);
                return v1_fail(err, 500, "", "SHA-256 is not available (libcrypto)");
        }
        char rnd[STORE_ID_MAX];
        v1_id_new(".upload-", rnd);
        snprintf(u->tmp_name, sizeof(u->tmp_name), "%s", rnd);
        u->fd = openat(f->cache_fd, u->tmp_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (u->fd < 0) {
                v1_upload_free(u);
                return v1_fail(err, 500, "", "the upload cannot be written to disk (%s)", strerror(errno));
        }
        mp_init(&u->mp, boundary, &upload_cbs, u);
        *ret = u;
        return 0;
}

int v1_upload_write(v1_upload *u, const void *p, size_t n) {
        if (u->err)
                return u->err;
        int r = mp_feed(&u->mp, p, n);
        if (r == -EBADMSG && !u->err)
                up_fail(u, -EBADMSG, u->mp.error);
        return r < 0 ? u->err : 0;
}

void v1_upload_free(v1_upload *u) {
        if (!u)
                return;
        if (u->fd >= 0) {
                (void) unlinkat(u->f->cache_fd, u->tmp_name, 0);
                safe_close(u->fd);
        }
        sha256_done(&u->sha);
        free(u->buf);
        free(u);
}

/* A media type for a name when the form gave none. */
static const char *guess_mime(const char *name) {
        static const struct {
                const char *ext, *mime;
        } t[] = {
                {".txt", "text/plain"},        {".md", "text/markdown"},    {".csv", "text/csv"},
                {".json", "application/json"}, {".pdf", "application/pdf"}, {".png", "image/png"},
                {".jpg", "image/jpeg"},        {".jpeg", "image/jpeg"},     {".gif", "image/gif"},
                {".webp", "image/webp"},       {".html", "text/html"},      {".zip", "application/zip"},
        };
        const char *dot = strrchr(name, '.');
        for (size_t i = 0; dot && i < ELEMENTSOF(t); i++)
                if (strcasecmp(dot, t[i].ext) == 0)
                        return t[i].mime;
        return "application/octet-stream";
}

static int upload_refusal(v1_files *f, v1_upload *u, int body_err, v1_err *err) {
        int r = u->err ? u->err : body_err;
        if (r == -EFBIG)
                return v1_fail(err, 413, "file_too_large",
                               "the file is larger than %" PRIu64
                               " bytes, the most this hull serve keeps (hull serve --file-max); nothing was kept",
                               f->file_max);
        if (r == -EBADMSG)
                return v1_fail(err, 400, "", "the multipart form is malformed: %s; nothing was kept", u->why);
        return v1_fail(err, 500, "", "the upload could not be received (%s); nothing was kept",
                       u->why[0] ? u->why : strerror(-r));
}

int v1_upload_finish(v1_files *f, v1_upload *u, int body_err, json_t **ret, v1_err *err) {
        if (u->err || body_err < 0)
                return upload_refusal(f, u, body_err, err);
        if (mp_finish(&u->mp) < 0)
                return v1_fail(err, 400, "", "the multipart form is malformed: %s; nothing was kept", u->mp.error);
        if (!u->have_file)
                return v1_fail(err, 400, "",
                               "the form has no part named 'file': send the file as the multipart/form-data "
                               "field 'file' with a filename");
        char sha[SHA256_HEX_SIZE];
        if (sha256_final_hex(&u->sha, sha) < 0)
                return v1_fail(err, 500, "", "the file's digest could not be computed");
        /* the node-local copy first (the bytes are on disk), then the store */
        if (renameat(f->cache_fd, u->tmp_name, f->cache_fd, sha) < 0)
                return v1_fail(err, 500, "", "the upload could not be kept on disk (%s)", strerror(errno));
        u->tmp_name[0] = '\0';
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        v1_id_new("file_", id);
        store_now_rfc3339(now);
        json_auto_t *obj = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:b}", "id", id, "type", "file", "filename",
                                     u->filename, "mime_type", u->mime[0] ? u->mime : guess_mime(u->filename),
                                     "size_bytes", (json_int_t) u->size, "created_at", now, "downloadable", true);
        if (!obj)
                return v1_fail(err, 500, "", "out of memory");
        hull_error e = {0};
        int r = store_file_insert(f->store, obj, NULL, sha, (int64_t) u->size, u->fd, &e);
        safe_close(u->fd);
        u->fd = -1;
        if (r < 0)
                return v1_fail(err, 500, "", "the file could not be stored: %s; nothing was kept", e.msg);
        *ret = json_incref(obj);
        return 0;
}

/* ---- the files ---- */

static int store_refusal(int r, const hull_error *e, const char *id, v1_err *err) {
        if (r == -ENOENT)
                return v1_fail(err, 404, "file_not_found", "no file %.64s", id);
        if (r == -EINVAL)
                return v1_fail(err, 400, "", "%s", e->msg);
        return v1_fail(err, 500, "", "the files could not be read: %s", e->msg);
}

int v1_file_get(v1_files *f, const char *id, json_t **ret, v1_err *err) {
        hull_error e = {0};
        int r = store_file_get(f->store, id, ret, NULL, &e);
        return r < 0 ? store_refusal(r, &e, id, err) : 0;
}

int v1_file_list(v1_files *f, const store_files_q *q, json_t **ret, v1_err *err) {
        hull_error e = {0};
        json_t *data = NULL;
        bool more = false;
        int r = store_file_list(f->store, q, &data, &more, &e);
        if (r == -ENOENT) /* the anchor is gone (deleted): a page of nothing, not an error */
                return (*ret = json_pack("{s:[], s:b, s:n, s:n}", "data", "has_more", false, "first_id", "last_id"))
                               ? 0
                               : v1_fail(err, 500, "", "out of memory");
        if (r < 0)
                return store_refusal(r, &e, "", err);
        size_t n = json_array_size(data);
        json_t *first = n ? json_object_get(json_array_get(data, 0), "id") : NULL;
        json_t *last = n ? json_object_get(json_array_get(data, n - 1), "id") : NULL;
        *ret = json_pack("{s:o, s:b, s:O?, s:O?}", "data", data, "has_more", more, "first_id", first, "last_id", last);
        if (*ret && !first)
                json_object_set_new(*ret, "first_id", json_null());
        if (*ret && !last)
                json_object_set_new(*ret, "last_id", json_null());
        /* the SDK's PageCursor reads next_page: the last id, going on downward */
        if (*ret)
                json_object_set_new(*ret, "next_page", more && !q->before_id && last ? json_copy(last) : json_null());
        return *ret ? 0 : v1_fail(err, 500, "", "out of memory");
}

int v1_file_list_ids(v1_files *f, const char *const *ids, size_t n, const char *scope_id, json_t **ret, v1_err *err) {
        json_auto_t *data = json_array();
        if (!data)
                return v1_fail(err, 500, "", "out of memory");
        for (size_t i = 0; i < n; i++) {
                json_t *obj = NULL;
                hull_error e = {0};
                int r = store_file_get(f->store, ids[i], &obj, NULL, &e);
                if (r == -ENOENT || r == -EINVAL)
                        continue; /* an id that names no file is left out */
                if (r < 0)
                        return store_refusal(r, &e, ids[i], err);
                const char *sc = json_string_value(json_object_get(json_object_get(obj, "scope"), "id"));
                if (scope_id && (!sc || strcmp(sc, scope_id) != 0)) {
                        json_decref(obj);
                        continue;
                }
                json_array_append_new(data, obj);
        }
        size_t k = json_array_size(data);
        *ret = json_pack("{s:O, s:b, s:O?, s:O?, s:n}", "data", data, "has_more", false, "first_id",
                         k ? json_object_get(json_array_get(data, 0), "id") : NULL, "last_id",
                         k ? json_object_get(json_array_get(data, k - 1), "id") : NULL, "next_page");
        return *ret ? 0 : v1_fail(err, 500, "", "out of memory");
}

static int stop_at_first(void *ud, const void *p, size_t n, hull_error *e) {
        (void) ud, (void) p, (void) n, (void) e;
        return -ECANCELED;
}

int v1_file_delete(v1_files *f, const char *id, json_t **ret, v1_err *err) {
        hull_error e = {0};
        char sha[SHA256_HEX_SIZE];
        json_t *obj = NULL;
        int r = store_file_get(f->store, id, &obj, sha, &e);
        if (r < 0)
                return store_refusal(r, &e, id, err);
        json_decref(obj);
        if ((r = store_file_delete(f->store, id, &e)) < 0)
                return store_refusal(r, &e, id, err);
        /* the node-local copy goes with the last file of those bytes */
        if (store_blob_read(f->store, sha, stop_at_first, NULL, &e) == -ENOENT)
                (void) unlinkat(f->cache_fd, sha, 0);
        *ret = json_pack("{s:s, s:s}", "id", id, "type", "file_deleted");
        return *ret ? 0 : v1_fail(err, 500, "", "out of memory");
}

typedef struct fill {
        int fd;
        sha256_ctx sha;
        uint64_t n;
} fill;

static int fill_chunk(void *ud, const void *p, size_t n, hull_error *e) {
        fill *c = ud;
        c->n += n;
        if (sha256_update(&c->sha, p, n) < 0 || loop_write(c->fd, p, n) < 0)
                return hull_err(e, -EIO, "files: cannot write the node-local copy");
        return 0;
}

/* Make the node-local copy of blob sha from the store, checked against its digest. */
static int cache_fill(v1_files *f, const char *sha, hull_error *e) {
        char tmp[STORE_ID_MAX];
        v1_id_new(".fill-", tmp);
        fill c = {.fd = openat(f->cache_fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)};
        if (c.fd < 0)
                return hull_err(e, -errno, "files: cannot make the node-local copy");
        int r = sha256_init(&c.sha);
        if (r >= 0)
                r = store_blob_read(f->store, sha, fill_chunk, &c, e);
        char got[SHA256_HEX_SIZE] = "";
        if (r >= 0 && sha256_final_hex(&c.sha, got) < 0)
                r = hull_fail(e, -EIO, "files: cannot compute a digest");
        sha256_done(&c.sha);
        if (r >= 0 && strcmp(got, sha) != 0)
                r = hull_fail(e, -EBADMSG, "files: the store's bytes of blob %.12s... do not match its digest", sha);
        if (r >= 0 && renameat(f->cache_fd, tmp, f->cache_fd, sha) < 0)
                r = hull_err(e, -errno, "files: cannot keep the node-local copy");
        if (r < 0)
                (void) unlinkat(f->cache_fd, tmp, 0);
        safe_close(c.fd);
        return r;
}

int v1_file_open(v1_files *f, const char *id, int *ret_fd, uint64_t *ret_size, json_t **ret_obj, v1_err *err) {
        hull_error e = {0};
        char sha[SHA256_HEX_SIZE];
        json_auto_t *obj = NULL;
        int r = store_file_get(f->store, id, &obj, sha, &e);
        if (r < 0)
                return store_refusal(r, &e, id, err);
        json_int_t size = json_integer_value(json_object_get(obj, "size_bytes"));
        char path[4200];
        int fd = -1;
        if (store_blob_path(f->store, sha, path, sizeof(path), &e) == 0) /* the store's own file (SQLite) */
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                fd = openat(f->cache_fd, sha, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && errno == ENOENT) {
                if ((r = cache_fill(f, sha, &e)) < 0)
                        return v1_fail(err, 500, "", "the bytes of file %.64s could not be read: %s", id, e.msg);
                fd = openat(f->cache_fd, sha, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        }
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != (off_t) size) {
                safe_close(fd);
                return v1_fail(err, 500, "", "the node-local copy of file %.64s is missing or of another size", id);
        }
        *ret_fd = fd;
        *ret_size = (uint64_t) size;
        if (ret_obj)
                *ret_obj = TAKE_PTR(obj);
        return 0;
}
