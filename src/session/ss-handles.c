/* ss-handles.c: a session's data handles: the exchange directory of a call (what the hull module
 * saved, emitted and published, adopted into the store after the call) and the operations on the
 * store (list, inspect, query, read, add an input). The store is hull's own: these run with the
 * daemon's ids; only what the sandbox wrote is read as the sandbox user, through the jail. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "hd-exchange.h"
#include "sha256.h"
#include "ss-internal.h"
#include "time-util.h"

/* ---- the exchange ---- */

void ss_exchange_name(ss_manager *m, ss_session *s, char *rel) {
        rel[0] = '\0';
        if (!s->store)
                return;
        /* Only a name: runtime/hull.py makes the directory if the call saves, emits or publishes. */
        hull_error xe = {0};
        if (hd_exchange_name(rel, &xe) < 0) {
                rel[0] = '\0';
                ss_log(m, DLOG_WARN, "event=exchange-failed session=%.12s error=\"%s\"", s->chain.session, xe.msg);
        }
}

static hd_format format_of_kind(const char *kind) {
        if (strcmp(kind, "table") == 0)
                return HD_FORMAT_SQLITE;
        if (strcmp(kind, "json") == 0)
                return HD_FORMAT_JSON;
        if (strcmp(kind, "text") == 0)
                return HD_FORMAT_TEXT;
        return HD_FORMAT_BINARY;
}

/* Bytes the session's handles hold (the manifest's sizes). */
static uint64_t store_bytes(ss_session *s) {
        json_t *arr = NULL;
        hull_error e = {0};
        uint64_t total = 0;
        if (hd_list(s->store, &arr, &e) < 0)
                return 0;
        for (size_t i = 0; i < json_array_size(arr); i++)
                total += (uint64_t) json_integer_value(json_object_get(json_array_get(arr, i), "bytes"));
        json_decref(arr);
        return total;
}

/* A note line for the call's stderr; what does not fit HS_NOTES_MAX is dropped. */
static void note(dynbuf *n, const char *fmt, ...) _printf_(2, 3);
static void note(dynbuf *n, const char *fmt, ...) {
        char line[HULL_ERROR_MSG_MAX + 64];
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        if (k < 0)
                return;
        size_t len = MIN((size_t) k, sizeof(line) - 2);
        line[len++] = '\n';
        (void) dynbuf_add(n, line, len);
}

static uint64_t summary_bytes(const json_t *sum) {
        return (uint64_t) json_integer_value(json_object_get(sum, "bytes"));
}

/* A handle the call made: its summary to the call's list (best effort), the reference dropped. */
static void made_add(json_t *made, json_t *sum) {
        if (made && sum)
                json_array_append(made, sum);
        json_decref(sum);
}

/* Adopt the handles the call saved, within the session's total. */
static void adopt_saved(ss_manager *m, ss_session *s, hd_exchange *x, uint64_t *used, dynbuf *n, json_t *made) {
        for (size_t i = 0; i < x->n_handles; i++) {
                json_t *sum = NULL;
                hull_error ae = {0};
                if (*used + x->handles[i].size > m->cfg.store_bytes_max) {
                        note(n,
                             "[hull] handle %s was not saved: the session's handles would exceed %llu bytes; query or "
                             "delete data first",
                             x->handles[i].id, (unsigned long long) m->cfg.store_bytes_max);
                        continue;
                }
                if (hd_adopt_fd(s->store, x->handles[i].fd, x->handles[i].id, format_of_kind(x->handles[i].kind),
                                x->handles[i].source, &sum, &ae) < 0)
                        note(n, "[hull] handle %s was not saved: %s", x->handles[i].id, ae.msg);
                else /* what was really stored: the file may have grown after it was opened */
                        *used += summary_bytes(sum);
                made_add(made, sum);
        }
}

/* An emit over the inline bound becomes a json handle; a small one goes to the call's stdout. */
static void deliver_emit(ss_manager *m, ss_session *s, hd_exchange *x, uint64_t *used, dynbuf *n, dynbuf *out,
                         json_t *made) {
        if (x->emit_too_large && *used + x->emit_size > m->cfg.store_bytes_max) {
                note(n,
                     "[hull] the emitted value (over 1 MiB) was not kept: the session's handles would exceed %llu "
                     "bytes",
                     (unsigned long long) m->cfg.store_bytes_max);
        } else if (x->emit_too_large) {
                json_t *sum = NULL;
                hull_error ae = {0};
                if (hd_adopt_fd(s->store, x->emit_fd, NULL, HD_FORMAT_JSON, "emit", &sum, &ae) < 0)
                        note(n, "[hull] the emitted value (over 1 MiB) could not be kept: %s", ae.msg);
                else {
                        note(n, "[hull] the emitted value was over 1 MiB: kept as handle %s",
                             json_string_value(json_object_get(sum, "id")));
                        *used += summary_bytes(sum);
                }
                made_add(made, sum);
        } else if (x->emit && out->len + x->emit_len + 1 <= out->max) {
                (void) dynbuf_add(out, x->emit, x->emit_len);
                (void) dynbuf_add(out, "\n", 1);
        }
}

/* Publish path (normalized, under outputs/): the file, from the sandbox user's view (the jail, a
 * regular file, capped), becomes a binary handle. *used: the session's handle bytes so far. */
static int publish_one(ss_manager *m, ss_session *s, const char *path, const char *source, uint64_t *used,
                       json_t **ret_summary, hull_error *e) {
        hull_error pe = {0};
        ss_fs_enter(s);
        int fd = ws_open(s->sx.ws_fd, path, O_RDONLY | O_NONBLOCK, 0, &pe);
        ss_fs_leave();
        if (fd < 0) {
                *e = pe;
                return fd;
        }
        _cleanup_close_ _unused_ int owned = fd; /* closed on every return below */
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size > m->cfg.handle_bytes_max)
                return hull_fail(e, -EINVAL, "%s is not a regular file of at most %llu bytes", path,
                                 (unsigned long long) m->cfg.handle_bytes_max);
        if (*used + (uint64_t) st.st_size > m->cfg.store_bytes_max)
                return hull_fail(e, -EFBIG, "the session's handles would exceed %llu bytes",
                                 (unsigned long long) m->cfg.store_bytes_max);
        int r = hd_adopt_fd(s->store, fd, NULL, HD_FORMAT_BINARY, source, ret_summary, e);
        if (r >= 0)
                *used += summary_bytes(*ret_summary);
        return r;
}

/* Each publish request of the call. */
static void deliver_publishes(ss_manager *m, ss_session *s, hd_exchange *x, uint64_t *used, dynbuf *n, json_t *made) {
        for (size_t i = 0; i < x->n_publish; i++) {
                hull_error pe = {0};
                char source[HD_SOURCE_MAX];
                snprintf(source, sizeof(source), "published %s%s%s", x->publish[i].path,
                         x->publish[i].description[0] ? ": " : "", x->publish[i].description);
                json_t *sum = NULL;
                if (publish_one(m, s, x->publish[i].path, source, used, &sum, &pe) < 0)
                        note(n, "[hull] %s was not published: %s", x->publish[i].path, pe.msg);
                else
                        note(n, "[hull] published %s as handle %s", x->publish[i].path,
                             json_string_value(json_object_get(sum, "id")));
                made_add(made, sum);
        }
}

void ss_exchange_collect(ss_manager *m, ss_session *s, const char *rel, dynbuf *err, dynbuf *out, json_t *made) {
        hd_exchange x;
        hull_error e = {0};
        hd_exchange_limits lim = {
                .new_handles_bytes_max = HD_EXCHANGE_NEW_HANDLES_BYTES_MAX,
                .adopt_max = HD_EXCHANGE_ADOPT_MAX,
                .emit_inline_max = HD_EXCHANGE_EMIT_INLINE_MAX,
                .payload_bytes_max = m->cfg.handle_bytes_max,
                .publish_bytes_max = HD_EXCHANGE_PUBLISH_BYTES_MAX,
                .publish_max = HD_EXCHANGE_PUBLISH_MAX,
        };
        /* The common call saved nothing: seen absent without switching credentials. */
        if (hd_exchange_surely_absent(s->sx.ws_fd, rel))
                return;
        hd_exchange_init(&x);
        ss_fs_enter(s);
        int r = hd_exchange_read(s->sx.ws_fd, rel, &lim, &x, &e);
        ss_fs_leave();
        if (r < 0)
                note(err, "[hull] the call's handles could not be read: %s", e.msg);
        else {
                /* The store's size only when something is to be stored (it walks every handle). */
                uint64_t used = x.n_handles || x.emit_too_large || x.n_publish ? store_bytes(s) : 0;
                adopt_saved(m, s, &x, &used, err, made);
                deliver_emit(m, s, &x, &used, err, out, made);
                deliver_publishes(m, s, &x, &used, err, made);
        }
        for (size_t i = 0; i < x.n_errors; i++)
                note(err, "[hull] %s", x.errors[i]);
        if (x.errors_dropped)
                note(err, "[hull] ... and %zu more problems with the call's handles", x.errors_dropped);
        bool absent = r == 0 && x.absent;
        hd_exchange_done(&x);
        if (absent) /* the call never made it: nothing to remove */
                return;
        ss_fs_enter(s);
        (void) hd_exchange_remove(s->sx.ws_fd, rel, &e);
        ss_fs_leave();
        ss_log(m, DLOG_DEBUG, "event=exchange session=%.12s", s->chain.session);
}

/* ---- the store's operations ---- */

static int no_store(hull_error *e) {
        return hull_err(e, -EOPNOTSUPP, "this session keeps no handle store");
}

int ss_handles_list(ss_manager *m, ss_session *s, json_t **ret, hull_error *e) {
        if (!s->store)
                return no_store(e);
        /* Full summaries (checked against their digests; derived once, then cached). */
        json_auto_t *arr = NULL;
        json_auto_t *full = json_array();
        int r = full ? hd_list(s->store, &arr, e) : hull_err(e, -ENOMEM, "out of memory");
        for (size_t i = 0; r >= 0 && i < json_array_size(arr); i++) {
                json_t *sum = NULL;
                hull_error se = {0};
                const char *id = json_string_value(json_object_get(json_array_get(arr, i), "id"));
                if (id && hd_summary(s->store, id, &sum, &se) >= 0)
                        json_array_append_new(full, sum);
                else { /* a tampered or unreadable handle: listed with what the manifest says, and why */
                        json_t *h = json_deep_copy(json_array_get(arr, i));
                        if (h) {
                                json_object_set_new(h, "error", json_string(se.msg));
                                json_array_append_new(full, h);
                        }
                }
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(full);
        return 0;
}

int ss_handles_inspect(ss_manager *m, ss_session *s, const char *id, const ss_inspect_opts *o, json_t **ret,
                       hull_error *e) {
        if (!s->store)
                return no_store(e);
        hd_inspect_opts ho = {.head = o->head, .tail = o->tail, .stats = o->stats};
        return hd_inspect(s->store, id, &ho, ret, e);
}

int ss_handles_query(ss_manager *m, ss_session *s, const char *sql, const char *const *ids, size_t n_ids,
                     uint64_t max_rows, json_t **ret, hull_error *e) {
        if (!s->store)
                return no_store(e);
        hd_query_opts o = {.max_rows = max_rows};
        _cleanup_free_ const char **all = NULL;
        json_auto_t *list = NULL;
        if (n_ids == 0) { /* every table handle of the session */
                int r = hd_list(s->store, &list, e);
                if (r < 0)
                        return r;
                all = calloc(json_array_size(list) + 1, sizeof(char *));
                if (!all)
                        return hull_err(e, -ENOMEM, "out of memory");
                for (size_t i = 0; i < json_array_size(list) && n_ids < HULL_API_QUERY_HANDLES_MAX; i++) {
                        json_t *h = json_array_get(list, i);
                        const char *kind = json_string_value(json_object_get(h, "kind"));
                        if (kind && strcmp(kind, "table") == 0)
                                all[n_ids++] = json_string_value(json_object_get(h, "id"));
                }
                ids = all;
        }
        return hd_query(s->store, sql, ids, n_ids, &o, ret, e);
}

/* A binary handle (an input, a published file): a slice of its bytes, base64, after hd_summary()
 * has checked the file against its digest; and the whole file's SHA-256 when the slice is all of
 * it (reading a large file in pieces must not hash it whole each time). */
static int read_binary(ss_session *s, const char *id, const char *path, uint64_t offset, uint64_t limit, json_t **ret,
                       hull_error *e) {
        _cleanup_close_ int fd = openat(s->store_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_err(e, -EIO, "handle %s: its file cannot be read", id);
        limit = limit ? MIN(limit, (uint64_t) HULL_API_BINARY_READ_MAX) : HULL_API_BINARY_READ_MAX;
        uint64_t size = (uint64_t) st.st_size, off = MIN(offset, size);
        size_t n = (size_t) MIN(limit, size - off);
        _cleanup_free_ char *buf = malloc(n + 1);
        char hex[SHA256_HEX_SIZE] = "";
        if (!buf)
                return hull_err(e, -ENOMEM, "out of memory");
        if (off != 0 || n != size) {
                ssize_t k = n ? pread(fd, buf, n, (off_t) off) : 0;
                if (k < 0 || (size_t) k != n)
                        return hull_err(e, -EIO, "handle %s: short read", id);
        } else {
                _cleanup_sha256_ sha256_ctx c = {0};
                if (sha256_init(&c) < 0)
                        return hull_err(e, -ENOMEM, "out of memory");
                for (uint64_t at = 0; at < size;) {
                        ssize_t k = pread(fd, buf + at, (size_t) MIN((uint64_t) SBX_READ_CHUNK, size - at), (off_t) at);
                        if (k <= 0)
                                return hull_err(e, -EIO, "handle %s: short read", id);
                        if (sha256_update(&c, buf + at, (size_t) k) < 0)
                                return hull_err(e, -EIO, "handle %s: cannot hash", id);
                        at += (uint64_t) k;
                }
                if (sha256_final_hex(&c, hex) < 0)
                        return hull_err(e, -EIO, "handle %s: cannot hash", id);
        }
        json_t *content = pj_new_bytes(buf, n);
        *ret = content ? json_pack("{s:s, s:o, s:o, s:o, s:b, s:o}", "id", id, "offset", pj_new_uint64(off), "length",
                                   pj_new_uint64(n), "total_bytes", pj_new_uint64(size), "eof", off + n >= size,
                                   "content", content)
                       : NULL;
        if (*ret && hex[0])
                json_object_set_new(*ret, "sha256", json_string(hex));
        return *ret ? 0 : hull_err(e, -ENOMEM, "out of memory");
}

int ss_handles_read(ss_manager *m, ss_session *s, const char *id, uint64_t offset, uint64_t limit, json_t **ret,
                    hull_error *e) {
        if (!s->store)
                return no_store(e);
        json_auto_t *sum = NULL;
        int r = hd_summary(s->store, id, &sum, e);
        if (r < 0)
                return r;
        const char *kind = json_string_value(json_object_get(sum, "kind"));
        const char *path = json_string_value(json_object_get(sum, "path"));
        if (kind && strcmp(kind, "binary") == 0 && path)
                return read_binary(s, id, path, offset, limit, ret, e);
        return hd_read(s->store, id, offset, limit, ret, e);
}

int ss_handles_read_bytes(ss_manager *m, ss_session *s, const char *id, uint64_t offset, uint64_t limit, void **ret,
                          size_t *ret_len, uint64_t *ret_total, json_t **ret_summary, hull_error *e) {
        (void) m;
        if (!s->store)
                return no_store(e);
        json_auto_t *sum = NULL;
        int r = hd_summary(s->store, id, &sum, e); /* checks the file against its digest */
        if (r < 0)
                return r;
        const char *path = json_string_value(json_object_get(sum, "path"));
        _cleanup_close_ int fd = path ? openat(s->store_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_err(e, -EIO, "handle %s: its file cannot be read", id);
        limit = limit ? MIN(limit, (uint64_t) HULL_API_BINARY_READ_MAX) : HULL_API_BINARY_READ_MAX;
        uint64_t size = (uint64_t) st.st_size, off = MIN(offset, size);
        size_t n = (size_t) MIN(limit, size - off);
        _cleanup_free_ char *buf = malloc(n + 1);
        if (!buf)
                return hull_err(e, -ENOMEM, "out of memory");
        for (size_t at = 0; at < n;) {
                ssize_t k = pread(fd, buf + at, n - at, (off_t) (off + at));
                if (k <= 0)
                        return hull_err(e, -EIO, "handle %s: short read", id);
                at += (size_t) k;
        }
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        *ret_total = size;
        *ret_summary = TAKE_PTR(sum);
        return 0;
}

/* Bidirectional and zero-width format characters (U+200B-U+200F, U+202A-U+202E, U+2066-U+2069):
 * invisible, they make a name read as another. Returns the length of the one at c, or 0. */
static size_t format_char(const unsigned char *c) {
        if (c[0] != 0xe2 || !c[1] || !c[2])
                return 0;
        if (c[1] == 0x80 && ((c[2] >= 0x8b && c[2] <= 0x8f) || (c[2] >= 0xaa && c[2] <= 0xae)))
                return 3;
        if (c[1] == 0x81 && c[2] >= 0xa6 && c[2] <= 0xa9)
                return 3;
        return 0;
}

/* A display name from an upload or a publish: its last path segment, without control and format
 * characters, trimmed; "file" when nothing is left. */
static void clean_name(const char *name, char *ret, size_t size) {
        const char *base = name;
        for (const char *c = name; *c; c++)
                if (*c == '/' || *c == '\\')
                        base = c + 1;
        size_t k = 0;
        for (const char *c = base; *c && k + 1 < size;) {
                size_t f = format_char((const unsigned char *) c);
                if (f) {
                        c += f;
                        continue;
                }
                if ((unsigned char) *c >= 0x20 && *c != 0x7f && !(k == 0 && *c == ' '))
                        ret[k++] = *c;
                c++;
        }
        while (k > 0 && ret[k - 1] == ' ')
                k--;
        ret[k] = '\0';
        if (k == 0 || strcmp(ret, ".") == 0 || strcmp(ret, "..") == 0)
                snprintf(ret, size, "file");
}

/* An input also appears under /workspace/inputs/<inputId>/<name>, as a link to its read-only file
 * in /handles (resolved inside the sandbox; the bytes stay in the store, whatever sandboxed code
 * does to the link). Made as the sandbox user, never through a link: best effort. */
static void input_link(ss_session *s, const char *id, const char *name, const char *store_path) {
        char target[SBX_PATH_MAX];
        if (!store_path || (size_t) snprintf(target, sizeof(target), "/handles/%s", store_path) >= sizeof(target))
                return;
        hull_error e = {0};
        ss_fs_enter(s);
        (void) mkdirat(s->sx.ws_fd, "inputs", 0755);
        _cleanup_close_ int dir = ws_open(s->sx.ws_fd, "inputs", O_RDONLY | O_DIRECTORY, 0, &e);
        if (dir >= 0 && (mkdirat(dir, id, 0755) == 0 || errno == EEXIST)) {
                _cleanup_close_ int sub = openat(dir, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0)
                        (void) symlinkat(target, sub, name);
        }
        ss_fs_leave();
}

static const char *format_name(hd_format f) {
        switch (f) {
        case HD_FORMAT_CSV:
                return "csv";
        case HD_FORMAT_TSV:
                return "tsv";
        case HD_FORMAT_JSON_ARRAY:
                return "json";
        case HD_FORMAT_JSON_LINES:
                return "jsonl";
        case HD_FORMAT_BINARY:
                return "binary";
        case HD_FORMAT_JSON:
        case HD_FORMAT_TEXT:
        case HD_FORMAT_SQLITE:
        case _HD_FORMAT_MAX:
        case _HD_FORMAT_INVALID:
                break;
        }
        return NULL;
}

static int hash_fd(int fd, char hex[SHA256_HEX_SIZE], uint64_t *ret_size, hull_error *e) {
        _cleanup_sha256_ sha256_ctx c = {0};
        _cleanup_free_ char *buf = malloc(HD_IO_CHUNK);
        uint64_t total = 0;
        if (!buf || sha256_init(&c) < 0)
                return hull_err(e, -ENOMEM, "out of memory");
        for (;;) {
                ssize_t n = pread(fd, buf, HD_IO_CHUNK, (off_t) total);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return hull_err(e, negative_errno(), "cannot read the upload");
                if (n == 0)
                        break;
                if (sha256_update(&c, buf, (size_t) n) < 0)
                        return hull_err(e, -EIO, "cannot hash the upload");
                total += (uint64_t) n;
        }
        *ret_size = total;
        return sha256_final_hex(&c, hex) < 0 ? hull_err(e, -EIO, "cannot hash the upload") : 0;
}

int ss_upload_file(ss_manager *m, ss_session *s, hull_error *e) {
        if (!s->store)
                return no_store(e);
        int fd = openat(s->store_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        return fd >= 0 ? fd : hull_err(e, negative_errno(), "cannot make a file for the upload");
}

uint64_t ss_handle_bytes_max(const ss_manager *m) {
        return m->cfg.handle_bytes_max;
}

int ss_handles_add_input_fd(ss_manager *m, ss_session *s, const char *input_id, const char *name, hd_format format,
                            int fd, const char *sha256, json_t **ret_summary, json_t **ret_record, hull_error *e) {
        if (!s->store)
                return no_store(e);
        const char *fmt = format_name(format);
        if (!fmt)
                return hull_err(e, -EINVAL, "an input is binary, csv, tsv, json (an array of objects) or jsonl");
        uint64_t started = now_unix_ms(), size = 0;
        char clean[HULL_API_INPUT_NAME_MAX + 1], source[HD_SOURCE_MAX], hex[SHA256_HEX_SIZE];
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_err(e, -EINVAL, "the upload is not a regular file");
        /* An upload only this process can reach (ss_upload_file's O_TMPFILE: unlinked, ours,
         * 0600) cannot have changed since the caller hashed it on the way in: its digest is
         * taken, not recomputed (a second read of every byte), and the store parses it in
         * place (hd_adopt_own_fd). Any other file is hashed here and copied by the store. */
        bool own = sha256 && strlen(sha256) == SHA256_HEX_SIZE - 1 && st.st_nlink == 0 && st.st_uid == geteuid() &&
                   (st.st_mode & 0077) == 0;
        int r = 0;
        if (own) {
                snprintf(hex, sizeof(hex), "%s", sha256);
                size = (uint64_t) st.st_size;
        } else
                r = hash_fd(fd, hex, &size, e);
        if (r < 0)
                return r;
        if (sha256 && strcmp(sha256, hex) != 0)
                return hull_err(e, -EBADMSG, "the upload changed while it was read");
        clean_name(name, clean, sizeof(clean));
        /* The source says what came in (name, format, the upload's digest): the same input
         * again finds the same handle. */
        snprintf(source, sizeof(source), "input %s (%s, sha256 %s)", clean, fmt, hex);
        json_t *sum = NULL;
        if (hd_summary(s->store, input_id, &sum, NULL) >= 0) { /* idempotent by input id, format and bytes */
                const char *src = json_string_value(json_object_get(sum, "source"));
                if (!src || strcmp(src, source) != 0) {
                        json_decref(sum);
                        return hull_err(e, -EEXIST,
                                        "handle %s already exists with other content; pick another inputId; nothing "
                                        "changed",
                                        input_id);
                }
                *ret_summary = sum;
                return 0;
        }
        if (size > m->cfg.handle_bytes_max)
                return hull_err_hint(e, -EFBIG, "raise --handle-max, or split the data",
                                     "the upload is %llu bytes, over the limit of %llu for one handle; nothing changed",
                                     (unsigned long long) size, (unsigned long long) m->cfg.handle_bytes_max);
        if (store_bytes(s) + size > m->cfg.store_bytes_max)
                return hull_err_hint(e, -EFBIG, "raise --session-handles-max, or query and drop data first",
                                     "the session's handles would exceed %llu bytes; nothing changed",
                                     (unsigned long long) m->cfg.store_bytes_max);
        r = (own ? hd_adopt_own_fd : hd_adopt_fd)(s->store, fd, input_id, format, source, &sum, e);
        if (r < 0)
                return r;
        input_link(s, input_id, clean, json_string_value(json_object_get(sum, "path")));
        json_auto_t *request = json_pack("{s:s, s:s, s:o, s:s}", "inputId", input_id, "name", clean, "bytes",
                                         pj_new_uint64(size), "sha256", hex);
        json_auto_t *result =
                json_pack("{s:s, s:o, s:s}", "handle", input_id, "bytes", pj_new_uint64(size), "sha256", hex);
        ss_record_or_log(m, s, "add_input", request, result, started, ret_record);
        *ret_summary = sum;
        return 0;
}

int ss_handles_add_input(ss_manager *m, ss_session *s, const char *input_id, const char *name, hd_format format,
                         const void *content, size_t len, json_t **ret_summary, json_t **ret_record, hull_error *e) {
        _cleanup_close_ int fd = memfd_create("hull-input", MFD_CLOEXEC);
        if (fd < 0 || loop_write(fd, content, len) < 0)
                return hull_err(e, fd < 0 ? negative_errno() : -EIO, "cannot hold the upload");
        return ss_handles_add_input_fd(m, s, input_id, name, format, fd, NULL, ret_summary, ret_record, e);
}

int ss_handles_spill(ss_manager *m, ss_session *s, hd_format format, const char *source, const void *data, size_t len,
                     json_t **ret_summary, hull_error *e) {
        if (!s->store)
                return no_store(e);
        if (format == HD_FORMAT_SQLITE || format < 0 || format >= _HD_FORMAT_MAX)
                return hull_err(e, -EINVAL, "handles: a spilled result is json, text, binary, csv, tsv or json lines");
        if ((uint64_t) len > m->cfg.handle_bytes_max)
                return hull_err_hint(e, -EFBIG, "paginate or filter at the source and ask for less",
                                     "handles: the result of %zu bytes is over the limit of %llu for one handle", len,
                                     (unsigned long long) m->cfg.handle_bytes_max);
        if (store_bytes(s) + len > m->cfg.store_bytes_max)
                return hull_err_hint(e, -EFBIG, "query and drop data first",
                                     "handles: the session's handles would exceed %llu bytes",
                                     (unsigned long long) m->cfg.store_bytes_max);
        return hd_put(s->store, NULL, format, source, data, len, ret_summary, e);
}

/* What one more streamed handle may hold: at most one handle's bytes and the room left in the
 * session's handles. Returns 0 with *ret_max (> 0), or -EFBIG with *e when no room is left. */
static int spill_room(ss_manager *m, ss_session *s, uint64_t *ret_max, hull_error *e) {
        uint64_t used = store_bytes(s), room = used < m->cfg.store_bytes_max ? m->cfg.store_bytes_max - used : 0;
        uint64_t max = MIN(m->cfg.handle_bytes_max, room);
        if (max == 0)
                return hull_err_hint(e, -EFBIG, "query and drop data first",
                                     "handles: the session's handles would exceed %llu bytes",
                                     (unsigned long long) m->cfg.store_bytes_max);
        *ret_max = max;
        return 0;
}

/* r of a put bounded by spill_room's max: -EFBIG says which bound was passed. */
static int spill_verdict(ss_manager *m, int r, uint64_t max, const char *what, hull_error *e) {
        if (r == -EFBIG)
                return hull_err_hint(
                        e, r,
                        max < m->cfg.handle_bytes_max ? "query and drop data first"
                                                      : "paginate or filter at the source and ask for less",
                        "handles: the result's %s is over the %llu bytes %s", what, (unsigned long long) max,
                        max < m->cfg.handle_bytes_max ? "left in the session's handles" : "allowed for one handle");
        return r;
}

int ss_handles_spill_value(ss_manager *m, ss_session *s, const char *source, const json_t *value, size_t flags,
                           json_t **ret_summary, hull_error *e) {
        if (!s->store)
                return no_store(e);
        uint64_t max = 0;
        int r = spill_room(m, s, &max, e);
        if (r == 0)
                r = spill_verdict(m, hd_put_value(s->store, NULL, source, value, flags, max, ret_summary, e), max,
                                  "JSON", e);
        return r;
}

int ss_handles_spill_text(ss_manager *m, ss_session *s, const char *source, const char *text, json_t **ret_summary,
                          hull_error *e) {
        if (!s->store)
                return no_store(e);
        uint64_t max = 0;
        int r = spill_room(m, s, &max, e);
        if (r == 0)
                r = spill_verdict(m, hd_put_text(s->store, NULL, source, text, max, ret_summary, e), max, "text", e);
        return r;
}

int ss_publish(ss_manager *m, ss_session *s, const char *path, const char *name, const char *description,
               json_t **ret_summary, hull_error *e) {
        char norm[WS_PATH_MAX + 1], clean[WS_NAME_MAX + 1];
        if (!s->store)
                return no_store(e);
        int r = ws_path_resolve(path, strlen(path), norm, sizeof(norm), e);
        if (r < 0)
                return r;
        /* Only deliverables: nothing else of the workspace (the exchange directory, inputs, code)
         * is published; the refusal names only the path given. */
        if (strncmp(norm, "outputs/", 8) != 0 || norm[8] == '\0')
                return hull_fail(e, -EPERM,
                                 "publish: '%.200s' is not a file under outputs/ (write the deliverable "
                                 "there first, e.g. outputs/report.csv)",
                                 norm);
        const char *base = strrchr(norm, '/') + 1;
        clean_name(name && name[0] ? name : base, clean, sizeof(clean));
        if (strcmp(clean, "file") == 0 && (!name || !name[0]))
                snprintf(clean, sizeof(clean), "%s", base);
        /* the store cuts the source to HD_SOURCE_MAX bytes (the description goes last) */
        _cleanup_free_ char *source = NULL;
        if (asprintf(&source, "published %s as %s%s%.*s", norm, clean, description && description[0] ? ": " : "",
                     (int) HD_SOURCE_MAX, description ? description : "") < 0)
                return hull_err(e, -ENOMEM, "publish: out of memory");
        uint64_t used = store_bytes(s);
        json_t *sum = NULL;
        r = publish_one(m, s, norm, source, &used, &sum, e);
        if (r < 0)
                return r;
        *ret_summary = sum;
        return 0;
}

/* ---- export: the handles kept beyond the session ---- */

static int copy_one(int from_fd, int to_fd, const char *name, hull_error *e) {
        _cleanup_close_ int in = openat(from_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (in < 0 && errno == ELOOP)
                return 0; /* a link is no handle: left out */
        if (in < 0 || fstat(in, &st) < 0)
                return hull_err(e, negative_errno(), "handles: cannot open %s", name);
        if (!S_ISREG(st.st_mode))
                return 0; /* only files are handles */
        if (unlinkat(to_fd, name, 0) < 0 && errno != ENOENT)
                return hull_err(e, negative_errno(), "handles: cannot replace %s", name);
        _cleanup_close_ int out = openat(to_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (out < 0)
                return hull_err(e, negative_errno(), "handles: cannot create %s", name);
        for (off_t left = st.st_size; left > 0;) {
                ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t) MIN(left, (off_t) SS_COPY_CHUNK), 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return hull_err(e, n < 0 ? negative_errno() : -EIO, "handles: cannot copy %s", name);
                left -= n;
        }
        return 0;
}

int ss_store_copy(int from_fd, int to_fd, hull_error *e) {
        int dfd = fcntl(from_fd, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return hull_err(e, negative_errno(), "handles: cannot read the store");
        DIR *d = fdopendir(dfd);
        if (!d) {
                safe_close(dfd);
                return hull_err(e, negative_errno(), "handles: cannot read the store");
        }
        rewinddir(d);
        int r = 0;
        struct dirent *de;
        while (r >= 0 && (de = readdir(d)))
                if (de->d_name[0] != '.' && hd_store_owns_name(de->d_name))
                        r = copy_one(from_fd, to_fd, de->d_name, e);
        closedir(d);
        return r;
}

int ss_handles_export(ss_manager *m, ss_session *s, const char *dir, hull_error *e) {
        if (!s->store)
                return hull_fail(e, -EOPNOTSUPP, "this session keeps no handles");
        _cleanup_close_ int to = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (to < 0)
                return hull_err(e, negative_errno(), "handles: cannot open %s", dir);
        return ss_store_copy(s->store_fd, to, e);
}
