/* hd-store.c: the handle store: ids, the manifest, digests, puts, spills and reads. Tables
 * live in hd-table*.c (hd-table.h). See hd-store.h. */
#include "hd-store.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "fs-util.h"
#include "hd-internal.h"
#include "hd-json.h"
#include "hd-sink.h"
#include "hd-table.h"
#include "sha256.h"
#include "sqlite-mem.h"
#include "utf8.h"

#define MANIFEST "_manifest.json"

typedef struct hd_record {
        char id[HD_ID_MAX + 1];
        hd_kind kind;
        char *source;
        uint64_t bytes;
        char digest[SHA256_HEX_SIZE];
        int64_t created;
        bool pending;    /* id reserved by a put in progress */
        json_t *summary; /* derived from the file, cached */
        /* the file's identity at the last successful digest check */
        bool verified;
        struct stat seen;
} hd_record;

struct hd_store {
        pthread_mutex_t lock;
        int dir_fd;
        uint64_t spill_threshold, max_spill;
        uint64_t sqlite_mem; /* SQLite memory of one operation */
        uint64_t next_seq;   /* next automatic hN */
        hd_record **records;
        size_t n_records, cap_records;
        hd_store_io io; /* counted with __atomic_fetch_add: puts run outside the lock */
};

static const char *const kind_names[_HD_KIND_MAX] = {
        [HD_KIND_JSON] = "json",
        [HD_KIND_TEXT] = "text",
        [HD_KIND_TABLE] = "table",
        [HD_KIND_BINARY] = "binary",
};
static const char *const kind_ext[_HD_KIND_MAX] = {
        [HD_KIND_JSON] = "json",
        [HD_KIND_TEXT] = "txt",
        [HD_KIND_TABLE] = "sqlite",
        [HD_KIND_BINARY] = "bin",
};

bool hd_store_owns_name(const char *name) {
        if (strcmp(name, MANIFEST) == 0)
                return true;
        const char *dot = strrchr(name, '.');
        if (!dot || dot == name)
                return false;
        for (int k = 0; k < _HD_KIND_MAX; k++)
                if (strcmp(dot + 1, kind_ext[k]) == 0)
                        return true;
        return false;
}

const char *hd_kind_to_string(hd_kind k) {
        return k >= 0 && k < _HD_KIND_MAX ? kind_names[k] : NULL;
}

hd_kind hd_kind_from_string(const char *s) {
        for (int k = 0; s && k < _HD_KIND_MAX; k++)
                if (strcmp(s, kind_names[k]) == 0)
                        return (hd_kind) k;
        return _HD_KIND_INVALID;
}

hd_kind hd_format_kind(hd_format f) {
        switch (f) {
        case HD_FORMAT_JSON:
                return HD_KIND_JSON;
        case HD_FORMAT_TEXT:
                return HD_KIND_TEXT;
        case HD_FORMAT_BINARY:
                return HD_KIND_BINARY;
        case HD_FORMAT_CSV:
        case HD_FORMAT_TSV:
        case HD_FORMAT_JSON_ARRAY:
        case HD_FORMAT_JSON_LINES:
        case HD_FORMAT_SQLITE:
                return HD_KIND_TABLE;
        case _HD_FORMAT_MAX:
        case _HD_FORMAT_INVALID:
                break;
        }
        return _HD_KIND_INVALID;
}

bool hd_id_is_valid(const char *id) {
        if (!id ||
            !((id[0] >= 'a' && id[0] <= 'z') || (id[0] >= 'A' && id[0] <= 'Z') || (id[0] >= '0' && id[0] <= '9')))
                return false;
        size_t i = 1;
        for (; id[i]; i++) {
                char c = id[i];
                if (i >= HD_ID_MAX)
                        return false;
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '.' || c == '-'))
                        return false;
        }
        return true;
}

/* "hN" with N in 1..HD_SEQ_MAX, no leading zeros: returns N, else 0. */
static uint64_t seq_of(const char *id) {
        if (id[0] != 'h' || id[1] < '1' || id[1] > '9')
                return 0;
        uint64_t n = 0;
        for (const char *p = id + 1; *p; p++) {
                if (*p < '0' || *p > '9' || n > HD_SEQ_MAX / 10)
                        return 0;
                n = n * 10 + (uint64_t) (*p - '0');
        }
        return n <= HD_SEQ_MAX ? n : 0;
}

static void file_name(const hd_record *r, char buf[HD_ID_MAX + 16]) {
        snprintf(buf, HD_ID_MAX + 16, "%s.%s", r->id, kind_ext[r->kind]);
}

static void record_free(hd_record *r) {
        if (!r)
                return;
        free(r->source);
        json_decref(r->summary);
        free(r);
}

static hd_record *find(hd_store *s, const char *id) {
        for (size_t i = 0; i < s->n_records; i++)
                if (strcmp(s->records[i]->id, id) == 0)
                        return s->records[i];
        return NULL;
}

static int add_record(hd_store *s, hd_record *r) {
        if (s->n_records >= s->cap_records) {
                size_t cap = s->cap_records ? s->cap_records * 2 : 16;
                hd_record **n = realloc(s->records, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                s->records = n;
                s->cap_records = cap;
        }
        s->records[s->n_records++] = r;
        uint64_t q = seq_of(r->id);
        if (q >= s->next_seq)
                s->next_seq = q + 1;
        return 0;
}

static void remove_record(hd_store *s, hd_record *r) {
        for (size_t i = 0; i < s->n_records; i++)
                if (s->records[i] == r) {
                        memmove(s->records + i, s->records + i + 1, (s->n_records - i - 1) * sizeof(*s->records));
                        s->n_records--;
                        break;
                }
        record_free(r);
}

/* A fresh ".tmp-<random>-<suffix>" name below the store. */
static void tmp_name(char buf[64], const char *suffix) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof(r), 0) != (ssize_t) sizeof(r))
                r = (uint64_t) time(NULL) ^ ((uint64_t) getpid() << 32) ^ (uint64_t) (uintptr_t) buf;
        snprintf(buf, 64, ".tmp-%016" PRIx64 "%s", r, suffix);
}

static json_t *record_json(const hd_record *r, bool with_summary) {
        char name[HD_ID_MAX + 16];
        file_name(r, name);
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:I}", "id", r->id, "kind", kind_names[r->kind], "source",
                              r->source, "path", name, "bytes", (json_int_t) r->bytes, "digest", r->digest, "created",
                              (json_int_t) r->created);
        if (o && with_summary && r->summary)
                json_object_set(o, "summary", r->summary);
        return o;
}

/* Rewrite _manifest.json atomically. Under the lock. */
static int manifest_write(hd_store *s, hull_error *e) {
        _cleanup_(json_decrefp) json_t *m = json_object();
        if (!m)
                return hull_err(e, -ENOMEM, "handles: cannot write the manifest");
        for (size_t i = 0; i < s->n_records; i++) {
                hd_record *r = s->records[i];
                if (r->pending)
                        continue;
                if (json_object_set_new(m, r->id, record_json(r, true)) < 0)
                        return hull_err(e, -ENOMEM, "handles: cannot write the manifest");
        }
        _cleanup_free_ char *text = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                return hull_err(e, -ENOMEM, "handles: cannot write the manifest");
        char tmp[64];
        tmp_name(tmp, "-manifest");
        _cleanup_close_ int fd = hd_openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0444);
        if (fd < 0)
                return hull_err(e, fd, "handles: cannot write the manifest");
        size_t len = strlen(text);
        for (size_t off = 0; off < len;) {
                ssize_t w = write(fd, text + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        int r = w < 0 ? -errno : -EIO;
                        unlinkat(s->dir_fd, tmp, 0);
                        return hull_err(e, r, "handles: cannot write the manifest");
                }
                off += (size_t) w;
        }
        if (renameat(s->dir_fd, tmp, s->dir_fd, MANIFEST) < 0) {
                int r = -errno;
                unlinkat(s->dir_fd, tmp, 0);
                return hull_err(e, r, "handles: cannot replace the manifest");
        }
        return 0;
}

/* Believe a manifest record only as far as it can be checked. */
static hd_record *record_from_json(hd_store *s, const char *key, json_t *v) {
        const char *id = json_string_value(json_object_get(v, "id"));
        const char *kind = json_string_value(json_object_get(v, "kind"));
        const char *source = json_string_value(json_object_get(v, "source"));
        const char *path = json_string_value(json_object_get(v, "path"));
        const char *digest = json_string_value(json_object_get(v, "digest"));
        json_t *bytes = json_object_get(v, "bytes"), *created = json_object_get(v, "created");
        if (!id || strcmp(id, key) != 0 || !hd_id_is_valid(id) || !source || !path || !digest ||
            !json_is_integer(bytes) || json_integer_value(bytes) < 0 || !sha256_hex_is_valid(digest, strlen(digest)) ||
            strlen(source) > HD_SOURCE_MAX || !utf8_is_valid(source, strlen(source)))
                return NULL;
        hd_kind k = hd_kind_from_string(kind);
        if (k < 0 || find(s, id))
                return NULL;
        hd_record *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        snprintf(r->id, sizeof(r->id), "%s", id);
        r->kind = k;
        char name[HD_ID_MAX + 16];
        file_name(r, name);
        struct stat st;
        if (strcmp(path, name) != 0 || fstatat(s->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            (uint64_t) st.st_size != (uint64_t) json_integer_value(bytes) || !(r->source = strdup(source))) {
                record_free(r);
                return NULL;
        }
        r->bytes = (uint64_t) json_integer_value(bytes);
        memcpy(r->digest, digest, SHA256_HEX_SIZE);
        r->created = json_is_integer(created) ? (int64_t) json_integer_value(created) : 0;
        return r;
}

static int manifest_load(hd_store *s, hull_error *e) {
        _cleanup_close_ int fd = hd_openat(s->dir_fd, MANIFEST, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return hull_err(e, fd, "handles: cannot open the manifest");
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = hd_read_all_fd(fd, HD_MANIFEST_MAX_BYTES, &text, &len);
        if (r == -EINVAL)
                return 0; /* not a regular file: ignored, replaced on the next put */
        if (r < 0)
                return hull_err(e, r, "handles: cannot read the manifest");
        _cleanup_(json_decrefp) json_t *m = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(m))
                return 0;
        const char *key;
        json_t *v;
        json_object_foreach(m, key, v) {
                if (s->n_records >= HD_HANDLES_MAX)
                        break;
                hd_record *rec = record_from_json(s, key, v);
                if (rec && add_record(s, rec) < 0) {
                        record_free(rec);
                        return hull_err(e, -ENOMEM, "handles: cannot load the manifest");
                }
        }
        return 0;
}

int hd_store_open(int dir_fd, const hd_store_opts *opts, hd_store **ret, hull_error *e) {
        hd_store_opts o = opts ? *opts : (hd_store_opts){0};
        if (!o.spill_threshold_bytes)
                o.spill_threshold_bytes = HD_SPILL_THRESHOLD_DEFAULT;
        if (!o.max_spill_bytes)
                o.max_spill_bytes = HD_MAX_SPILL_DEFAULT;
        if (!o.sqlite_mem_bytes)
                o.sqlite_mem_bytes = HD_SQLITE_MEM_DEFAULT;
        if (o.max_spill_bytes > HD_MAX_SPILL_MAX || o.spill_threshold_bytes > o.max_spill_bytes)
                return hull_err(e, -EINVAL, "handles: bad limits (spill threshold %" PRIu64 ", max %" PRIu64 ")",
                                o.spill_threshold_bytes, o.max_spill_bytes);
        if (o.sqlite_mem_bytes < (1ULL << 20) || o.sqlite_mem_bytes > HD_SQLITE_MEM_MAX)
                return hull_err(e, -EINVAL, "handles: SQLite memory of %" PRIu64 " bytes is not within 1 MiB..%llu GiB",
                                o.sqlite_mem_bytes, HD_SQLITE_MEM_MAX >> 30);
        struct stat st;
        if (fstat(dir_fd, &st) < 0)
                return hull_err(e, -errno, "handles: cannot stat the store directory");
        if (!S_ISDIR(st.st_mode))
                return hull_err(e, -ENOTDIR, "handles: the store is not a directory");
        hd_store *s = calloc(1, sizeof(*s));
        if (!s)
                return hull_err(e, -ENOMEM, "handles: cannot open the store");
        pthread_mutex_init(&s->lock, NULL);
        s->spill_threshold = o.spill_threshold_bytes;
        s->max_spill = o.max_spill_bytes;
        s->sqlite_mem = o.sqlite_mem_bytes;
        s->next_seq = 1;
        s->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        if (s->dir_fd < 0) {
                int r = -errno;
                hd_store_free(s);
                return hull_err(e, r, "handles: cannot duplicate the store directory fd");
        }
        int r = manifest_load(s, e);
        if (r < 0) {
                hd_store_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

hd_store *hd_store_free(hd_store *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_records; i++)
                record_free(s->records[i]);
        free(s->records);
        safe_close(s->dir_fd);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

/* ---- digests ---- */

static bool same_identity(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Open r's file and check it against its digest. Under the lock. Returns the fd. */
static int open_verified(hd_store *s, hd_record *r, hull_error *e) {
        char name[HD_ID_MAX + 16];
        file_name(r, name);
        _cleanup_close_ int fd = hd_openat(s->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
        if (fd == -ELOOP || fd == -ENOENT)
                return hull_err_hint(e, -EBADMSG, "the handle is lost; recreate it", "handle %s tampered: its file %s",
                                     r->id, fd == -ENOENT ? "is gone" : "was replaced by a link");
        if (fd < 0)
                return hull_err(e, fd, "handles: cannot open handle %s", r->id);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return hull_err(e, -errno, "handles: cannot stat handle %s", r->id);
        if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size != r->bytes)
                return hull_err_hint(e, -EBADMSG, "the handle is lost; recreate it",
                                     "handle %s tampered: its file is not the regular file of %" PRIu64
                                     " bytes recorded",
                                     r->id, r->bytes);
        if (r->verified && same_identity(&st, &r->seen))
                return TAKE_FD(fd);
        char digest[SHA256_HEX_SIZE];
        int k = hd_hash_fd(fd, digest);
        if (k < 0)
                return hull_err(e, k, "handles: cannot hash handle %s", r->id);
        if (strcmp(digest, r->digest) != 0) {
                r->verified = false;
                return hull_err_hint(e, -EBADMSG, "the handle is lost; recreate it",
                                     "handle %s tampered: its file no longer matches the digest recorded at creation",
                                     r->id);
        }
        r->verified = true;
        r->seen = st;
        return TAKE_FD(fd);
}

/* ---- summaries ---- */

/* Every parse of JSON by the store goes through here, counted (hd_store_io_get). */
static int scan_json(hd_store *s, const void *data, size_t len, json_t **ret_shape, hull_error *e) {
        __atomic_fetch_add(&s->io.bytes_scanned, len, __ATOMIC_RELAXED);
        return hd_json_scan(data, len, ret_shape, NULL, NULL, e);
}

/* What a put already knows of the bytes it wrote: hashed on the way (digest); from memory
 * (data), also validated (text UTF-8, JSON scanned with its shape), so the file is not read
 * back at all. */
typedef struct put_known {
        const void *data; /* NULL: only the digest is known; the file is scanned */
        size_t len;
        const char *digest;
        json_t *shape;
} put_known;

/* The summary of r from its file (fd, named name below the store), derived, never taken; from
 * the memory it was written from when known (k). */
static int derive_summary(hd_store *s, const hd_record *r, int fd, const char *name, put_known *kn, json_t **ret,
                          hull_error *e) {
        char path[HD_ID_MAX + 16];
        file_name(r, path);
        _cleanup_(json_decrefp) json_t *o =
                json_pack("{s:s, s:s, s:s, s:I, s:s}", "id", r->id, "kind", kind_names[r->kind], "source", r->source,
                          "bytes", (json_int_t) r->bytes, "path", path);
        if (!o)
                return hull_err(e, -ENOMEM, "handles: cannot summarize %s", r->id);
        int k = 0;
        switch (r->kind) {
        case HD_KIND_BINARY: {
                char p[64];
                snprintf(p, sizeof(p), "<binary, %" PRIu64 " bytes>", r->bytes);
                json_object_set_new(o, "preview", json_string(p));
                break;
        }
        case HD_KIND_TEXT:
        case HD_KIND_JSON: {
                _cleanup_(hd_mapping_done) hd_mapping m = {0};
                json_t *shape = NULL;
                if (kn && kn->data) {
                        json_object_set_new(
                                o, "preview",
                                json_stringn(kn->data, utf8_prefix_len(kn->data, kn->len, HD_PREVIEW_CHARS)));
                        if (kn->shape)
                                json_object_set(o, "shape", kn->shape);
                        break;
                }
                k = hd_map_fd(fd, (size_t) r->bytes, &m);
                if (k < 0)
                        return hull_err(e, k, "handles: cannot map handle %s", r->id);
                size_t n = utf8_prefix_len(m.p, m.len, HD_PREVIEW_CHARS);
                if (r->kind == HD_KIND_JSON) {
                        k = scan_json(s, m.p, m.len, &shape, e);
                        if (k < 0)
                                return k;
                } else if (!utf8_is_valid(m.p, m.len))
                        return hull_err(e, -EILSEQ, "handle %s: text is not UTF-8", r->id);
                json_object_set_new(o, "preview", json_stringn(m.p, n));
                if (shape)
                        json_object_set_new(o, "shape", shape);
                break;
        }
        case HD_KIND_TABLE:
                k = hd_table_summary(s->dir_fd, name, o, e);
                if (k < 0)
                        return k;
                break;
        case _HD_KIND_MAX:
        case _HD_KIND_INVALID:
                return hull_err(e, -EINVAL, "handles: bad kind");
        }
        *ret = TAKE_PTR(o);
        return 0;
}

/* Look id up, check its digest, derive its summary once. Under the lock. Returns the open fd
 * of its file, with *ret_rec. */
static int get_verified(hd_store *s, const char *id, hd_record **ret_rec, hull_error *e) {
        if (!id || !hd_id_is_valid(id))
                return hull_err(e, -EINVAL, "handles: bad handle id");
        hd_record *r = find(s, id);
        if (!r || r->pending)
                return hull_err_hint(e, -ENOENT, "list the handles", "handle %s not found", id);
        _cleanup_close_ int fd = open_verified(s, r, e);
        if (fd < 0)
                return fd;
        if (!r->summary) {
                char name[HD_ID_MAX + 16];
                file_name(r, name);
                hull_error why = {0};
                int k = derive_summary(s, r, fd, name, NULL, &r->summary, &why);
                if (k == -ENOMEM)
                        return hull_err(e, k, "handles: cannot summarize %s", id);
                if (k < 0) /* the digest matched, yet the bytes are not what was stored */
                        return hull_err(e, -EBADMSG, "handle %s tampered: %s", id, why.msg);
        }
        *ret_rec = r;
        return TAKE_FD(fd);
}

static int summary(hd_store *s, const char *id, json_t **ret, hull_error *e) {
        pthread_mutex_lock(&s->lock);
        hd_record *r;
        int fd = get_verified(s, id, &r, e);
        if (fd >= 0) {
                safe_close(fd);
                *ret = json_deep_copy(r->summary);
                fd = *ret ? 0 : -ENOMEM;
        }
        pthread_mutex_unlock(&s->lock);
        return fd;
}

int hd_list(hd_store *s, json_t **ret, hull_error *e) {
        json_t *a = json_array();
        if (!a)
                return hull_err(e, -ENOMEM, "handles: cannot list");
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_records; i++) {
                hd_record *r = s->records[i];
                if (r->pending)
                        continue;
                json_t *o = record_json(r, false);
                if (o) {
                        json_object_del(o, "digest");
                        json_object_del(o, "created");
                }
                json_array_append_new(a, o);
        }
        pthread_mutex_unlock(&s->lock);
        *ret = a;
        return 0;
}

/* ---- SQLite's memory: one budget per operation ---- */

/* Charge every SQLite allocation of this thread to one budget of s->sqlite_mem bytes until m
 * ends (sqlite-mem.h): a hostile file or query fails alone, and no other SQLite connection of
 * the process (the event log's) is touched. */
static int mem_begin(hd_store *s, sqlmem_scope *m, hull_error *e) {
        int k = sqlmem_begin(m, s->sqlite_mem);
        return k < 0 ? hull_err(e, k, "handles: out of memory") : 0;
}

/* k, the result of an operation that ran in m; when it failed after its budget refused memory,
 * that is the reason given, whatever SQLite made of the refusal. A time-out stays a time-out. */
static int mem_verdict(hd_store *s, const sqlmem_scope *m, int k, const char *what, const char *hint, hull_error *e) {
        if (k >= 0 || k == -ETIMEDOUT || !sqlmem_refused(m))
                return k;
        hull_err_hint(e, 0, hint, "handles: %s needs more than %" PRIu64 " MiB of memory", what, s->sqlite_mem >> 20);
        if (e)
                e->err = -ENOMEM;
        return -ENOMEM;
}

/* ---- puts ---- */

/* Reserve id (or the next hN) with a pending record. */
static int reserve(hd_store *s, const char *id, hd_kind kind, const char *source, hd_record **ret, hull_error *e) {
        if (id && !hd_id_is_valid(id))
                return hull_err_hint(
                        e, -EINVAL,
                        "use letters, digits, '_', '.' and '-', at most 64, starting with a letter or digit",
                        "handles: bad handle id");
        hd_record *r = calloc(1, sizeof(*r));
        if (!r)
                return hull_err(e, -ENOMEM, "handles: cannot store a handle");
        r->kind = kind;
        r->pending = true;
        const char *src = source ? source : "";
        size_t sl = strnlen(src, HD_SOURCE_MAX + 1), fixed_len;
        if (sl > HD_SOURCE_MAX) {
                sl = HD_SOURCE_MAX;
                while (sl > 0 && ((unsigned char) src[sl] & 0xc0) == 0x80)
                        sl--; /* cut at a character boundary */
        }
        if (utf8_make_valid(src, sl, &r->source, &fixed_len) < 0) {
                free(r);
                return hull_err(e, -ENOMEM, "handles: cannot store a handle");
        }
        pthread_mutex_lock(&s->lock);
        int k = 0;
        if (s->n_records >= HD_HANDLES_MAX)
                k = hull_err(e, -ENOSPC, "handles: the store holds %u handles already", HD_HANDLES_MAX);
        else if (id && find(s, id))
                k = hull_err_hint(e, -EEXIST, "choose another id", "handle %s already exists", id);
        else if (!id && s->next_seq > HD_SEQ_MAX)
                k = hull_err(e, -ENOSPC, "handles: no more handle ids");
        else {
                if (!id)
                        snprintf(r->id, sizeof(r->id), "h%" PRIu64, s->next_seq);
                else
                        snprintf(r->id, sizeof(r->id), "%s", id);
                k = add_record(s, r);
                if (k < 0)
                        hull_err(e, k, "handles: cannot store a handle");
        }
        pthread_mutex_unlock(&s->lock);
        if (k < 0) {
                record_free(r);
                return k;
        }
        *ret = r;
        return 0;
}

static void unreserve(hd_store *s, hd_record *r) {
        pthread_mutex_lock(&s->lock);
        remove_record(s, r);
        pthread_mutex_unlock(&s->lock);
}

/* The file tmp (below the store) holds r's bytes: check, hash (unless kn knows the digest),
 * summarize, rename into place, publish the record. Removes tmp on failure; kn's shape is
 * released either way. */
static int commit(hd_store *s, hd_record *r, const char *tmp, put_known *kn, json_t **ret_summary, hull_error *e) {
        _cleanup_(json_decrefp) json_t *shape = kn ? kn->shape : NULL;
        char name[HD_ID_MAX + 16];
        file_name(r, name);
        int k;
        _cleanup_close_ int fd = hd_openat(s->dir_fd, tmp, O_RDONLY | O_NOFOLLOW, 0);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                k = hull_err(e, fd < 0 ? fd : -errno, "handles: cannot reopen a new handle");
                goto fail;
        }
        if ((uint64_t) st.st_size > s->max_spill) {
                k = hull_err_hint(e, -EFBIG, "paginate or filter the result",
                                  "handles: %" PRIu64 " bytes is over the limit of %" PRIu64, (uint64_t) st.st_size,
                                  s->max_spill);
                goto fail;
        }
        r->bytes = (uint64_t) st.st_size;
        if (kn && kn->data && kn->len != r->bytes) {
                k = hull_err(e, -EIO, "handles: a new handle's file is not the %zu bytes written", kn->len);
                goto fail;
        }
        if (kn) {
                memcpy(r->digest, kn->digest, SHA256_HEX_SIZE);
                k = 0;
        } else {
                k = hd_hash_fd(fd, r->digest);
                __atomic_fetch_add(&s->io.bytes_hashed, r->bytes, __ATOMIC_RELAXED);
        }
        if (k < 0) {
                hull_err(e, k, "handles: cannot hash a new handle");
                goto fail;
        }
        json_t *summary = NULL;
        k = derive_summary(s, r, fd, tmp, kn, &summary, e);
        if (k < 0)
                goto fail;
        if (fchmod(fd, 0444) < 0 || fstat(fd, &r->seen) < 0) {
                k = hull_err(e, -errno, "handles: cannot seal a new handle");
                json_decref(summary);
                goto fail;
        }
        if (syscall(SYS_renameat2, s->dir_fd, tmp, s->dir_fd, name, RENAME_NOREPLACE) < 0) {
                k = hull_err_hint(e, -errno, "remove the stray file from the store", "handles: cannot store %s", name);
                json_decref(summary);
                goto fail;
        }
        pthread_mutex_lock(&s->lock);
        r->summary = summary;
        r->verified = true;
        r->created = (int64_t) time(NULL);
        r->pending = false;
        k = manifest_write(s, e);
        if (k < 0) {
                unlinkat(s->dir_fd, name, 0);
                remove_record(s, r);
                pthread_mutex_unlock(&s->lock);
                return k;
        }
        if (ret_summary)
                *ret_summary = json_deep_copy(summary);
        pthread_mutex_unlock(&s->lock);
        return 0;
fail:
        unlinkat(s->dir_fd, tmp, 0);
        unreserve(s, r);
        return k;
}

/* Validate bytes of a non-table format before storing them: text is UTF-8; JSON is scanned
 * here, once, with its shape for the summary (*ret_shape). A refusal leaves no file (a big
 * JSON's, written beside its scan, is removed). */
static int check_format(hd_store *s, hd_format f, const void *data, size_t len, json_t **ret_shape, hull_error *e) {
        if (f == HD_FORMAT_TEXT && !utf8_is_valid(data, len))
                return hull_err_hint(e, -EILSEQ, "store it as binary", "handles: the text is not UTF-8");
        if (f == HD_FORMAT_JSON)
                return scan_json(s, data, len, ret_shape, e);
        return 0;
}

static void count_written(hd_store *s, const hd_sink *k) {
        __atomic_fetch_add(&s->io.bytes_written, k->bytes, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->io.bytes_hashed, k->bytes, __ATOMIC_RELAXED);
}

/* Copy src_fd into the store's new file named copy, hashed on the way: its size in *ret_total,
 * the copy's digest in ret_digest. */
static int copy_in(hd_store *s, int src_fd, const char *copy, uint64_t *ret_total, char ret_digest[SHA256_HEX_SIZE],
                   hull_error *e) {
        _cleanup_close_ int out = hd_openat(s->dir_fd, copy, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (out < 0)
                return hull_err(e, out, "handles: cannot create a file in the store");
        _cleanup_free_ char *buf = malloc(HD_IO_CHUNK);
        _cleanup_(hd_sink_done) hd_sink sink;
        int k = hd_sink_init(&sink, out, s->max_spill);
        if (k == 0 && !buf)
                k = -ENOMEM;
        for (uint64_t off = 0; k == 0;) {
                ssize_t n = pread(src_fd, buf, HD_IO_CHUNK, (off_t) off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        k = hull_err(e, -errno, "handles: cannot read the file to adopt");
                        break;
                }
                if (n == 0)
                        break;
                off += (uint64_t) n;
                k = hd_sink_write(&sink, buf, (size_t) n);
                if (k == -EFBIG)
                        hull_err_hint(e, -EFBIG, "write less, or filter before saving",
                                      "handles: the file is over the limit of %" PRIu64 " bytes", s->max_spill);
                else if (k < 0)
                        hull_err(e, k, "handles: cannot copy into the store");
        }
        if (k == 0 && (k = hd_sink_finish(&sink, ret_digest)) < 0)
                hull_err(e, k, "handles: cannot hash a new handle");
        __atomic_fetch_add(&s->io.bytes_copied, sink.bytes, __ATOMIC_RELAXED);
        count_written(s, &sink);
        *ret_total = sink.bytes;
        return k;
}

/* Write data into the store's new file tmp (hashed beside it by the caller's hd_hasher). */
static int write_in(hd_store *s, const char *tmp, const void *data, size_t len, hull_error *e) {
        _cleanup_close_ int out = hd_openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (out < 0)
                return hull_err(e, out, "handles: cannot create a file in the store");
        int k = hd_write_all(out, data, len);
        __atomic_fetch_add(&s->io.bytes_written, len, __ATOMIC_RELAXED);
        if (k < 0) {
                unlinkat(s->dir_fd, tmp, 0);
                return hull_err(e, k, "handles: cannot write a new handle");
        }
        return 0;
}

/* A file only this process can reach: unlinked (O_TMPFILE), ours, no access for others. */
static bool fd_is_own(int fd, uint64_t max) {
        struct stat st;
        return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 0 && st.st_uid == geteuid() &&
               (st.st_mode & 0077) == 0 && (uint64_t) st.st_size <= max;
}

/* Store data of format f from memory (src_fd < 0) or from src_fd: copied into the store first,
 * except a table parsed straight from src_fd when own (fd_is_own: no one else can change it).
 * str_max > 0: data is a NUL-terminated text of at most str_max bytes, its length found beside
 * its hash (len unused). */
static int put_common(hd_store *s, const char *id, hd_format format, const char *source, const void *data, size_t len,
                      uint64_t str_max, int src_fd, bool own, json_t **ret_summary, hull_error *e) {
        hd_kind kind = hd_format_kind(format);
        if (kind < 0)
                return hull_err(e, -EINVAL, "handles: bad format");
        if (src_fd < 0 && !str_max && len > s->max_spill)
                return hull_err_hint(e, -EFBIG, "paginate or filter the result",
                                     "handles: %zu bytes is over the limit of %" PRIu64, len, s->max_spill);
        hd_record *r;
        int k = reserve(s, id, kind, source, &r, e);
        if (k < 0)
                return k;
        char tmp[64], raw[64];
        tmp_name(tmp, "");
        raw[0] = 0;
        bool ingest = kind == HD_KIND_TABLE && format != HD_FORMAT_SQLITE;
        _cleanup_(hd_mapping_done) hd_mapping m = {0};
        char digest[SHA256_HEX_SIZE];
        put_known kn = {.digest = digest}, *known = NULL;

        if (src_fd >= 0 && own && ingest && fd_is_own(src_fd, s->max_spill)) {
                struct stat st;
                k = fstat(src_fd, &st) < 0 ? -errno : hd_map_fd(src_fd, (size_t) st.st_size, &m);
                if (k < 0) {
                        unreserve(s, r);
                        return hull_err(e, k, "handles: cannot map the file to adopt");
                }
                data = m.p;
                len = m.len;
        } else if (src_fd >= 0) {
                /* copy the caller's file into the store first; parse only the copy, from the
                 * copy's mapping, and keep the digest taken while copying */
                char *copy = ingest ? raw : tmp;
                if (ingest)
                        tmp_name(raw, "-raw");
                uint64_t total = 0;
                k = copy_in(s, src_fd, copy, &total, digest, e);
                if (k == 0 && format != HD_FORMAT_SQLITE) {
                        _cleanup_close_ int fd = hd_openat(s->dir_fd, copy, O_RDONLY | O_NOFOLLOW, 0);
                        k = fd < 0 ? fd : hd_map_fd(fd, (size_t) total, &m);
                        if (k < 0)
                                hull_err(e, k, "handles: cannot map a new handle");
                        else if (!ingest)
                                k = check_format(s, format, m.p, m.len, &kn.shape, e);
                        data = kn.data = m.p;
                        len = kn.len = m.len;
                }
                if (k < 0) {
                        unlinkat(s->dir_fd, copy, 0);
                        unreserve(s, r);
                        return k;
                }
                if (format == HD_FORMAT_SQLITE) {
                        k = hd_table_check(s->dir_fd, tmp, total, e);
                        if (k < 0) {
                                unlinkat(s->dir_fd, tmp, 0);
                                unreserve(s, r);
                                return k;
                        }
                }
                known = ingest ? NULL : &kn;
        } else if (format == HD_FORMAT_SQLITE || !ingest) {
                /* validated (and JSON scanned) from memory, written, and hashed from the same
                 * memory beside both: the file is never read back. A big JSON's scan outlasts the
                 * hash and the write together: the thread does both while it runs (a refusal
                 * removes the file); else the write follows the check (a refusal makes no file) */
                hd_hasher h;
                _cleanup_close_ int wfd = !str_max && format == HD_FORMAT_JSON && len >= HD_HASH_THREAD_MIN
                                                  ? hd_openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0600)
                                                  : -1;
                k = 0;
                if (wfd >= 0)
                        hd_hasher_start_write(&h, data, len, wfd);
                else if (!str_max)
                        hd_hasher_start(&h, data, len);
                else if ((k = hd_hasher_start_str(&h, data, (size_t) MIN(str_max, (uint64_t) SIZE_MAX), &len)) < 0)
                        hull_err_hint(e, k, "paginate or filter the result",
                                      "handles: the text is over the limit of %" PRIu64 " bytes", str_max);
                if (k == 0)
                        k = check_format(s, format, data, len, &kn.shape, e);
                if (k < 0 && wfd >= 0)
                        hd_hasher_cancel(&h);
                if (k == 0 && wfd < 0)
                        k = write_in(s, tmp, data, len, e);
                int hk = hd_hasher_join(&h, digest);
                __atomic_fetch_add(&s->io.bytes_hashed, h.hashed, __ATOMIC_RELAXED);
                __atomic_fetch_add(&s->io.bytes_written, h.written, __ATOMIC_RELAXED);
                if (k == 0 && h.werr < 0)
                        k = hull_err(e, h.werr, "handles: cannot write a new handle");
                if (k < 0 && wfd >= 0)
                        unlinkat(s->dir_fd, tmp, 0);
                if (k == 0 && hk < 0) {
                        k = hull_err(e, hk, "handles: cannot hash a new handle");
                        unlinkat(s->dir_fd, tmp, 0);
                }
                if (k == 0 && format == HD_FORMAT_SQLITE && (k = hd_table_check(s->dir_fd, tmp, len, e)) < 0)
                        unlinkat(s->dir_fd, tmp, 0);
                if (k < 0) {
                        json_decref(kn.shape);
                        unreserve(s, r);
                        return k;
                }
                kn.data = format == HD_FORMAT_SQLITE ? NULL : data;
                kn.len = len;
                known = &kn;
        }
        if (ingest) {
                k = hd_table_ingest(s->dir_fd, tmp, format, data, len, e);
                if (raw[0])
                        unlinkat(s->dir_fd, raw, 0);
                if (k < 0) {
                        unreserve(s, r);
                        return k;
                }
        }
        return commit(s, r, tmp, known, ret_summary, e);
}

int hd_put(hd_store *s, const char *id, hd_format format, const char *source, const void *data, size_t len,
           json_t **ret_summary, hull_error *e) {
        if (!data && len > 0)
                return hull_err(e, -EINVAL, "handles: no data");
        _cleanup_sqlmem_ sqlmem_scope m = {0};
        int k = mem_begin(s, &m, e);
        if (k == 0)
                k = put_common(s, id, format, source, data ? data : "", len, 0, -1, false, ret_summary, e);
        return mem_verdict(s, &m, k, "storing the table", "save fewer rows or columns", e);
}

int hd_put_text(hd_store *s, const char *id, const char *source, const char *text, uint64_t max, json_t **ret_summary,
                hull_error *e) {
        if (!text)
                return hull_err(e, -EINVAL, "handles: no text");
        max = max && max < s->max_spill ? max : s->max_spill;
        return put_common(s, id, HD_FORMAT_TEXT, source, text, 0, max, -1, false, ret_summary, e);
}

int hd_put_value(hd_store *s, const char *id, const char *source, const json_t *v, size_t flags, uint64_t max,
                 json_t **ret_summary, hull_error *e) {
        if (!v)
                return hull_err(e, -EINVAL, "handles: no value");
        max = max && max < s->max_spill ? max : s->max_spill;
        hd_record *r;
        int k = reserve(s, id, HD_KIND_JSON, source, &r, e);
        if (k < 0)
                return k;
        char tmp[64], digest[SHA256_HEX_SIZE];
        tmp_name(tmp, "");
        _cleanup_close_ int out = hd_openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (out < 0) {
                unreserve(s, r);
                return hull_err(e, out, "handles: cannot create a file in the store");
        }
        /* serialized once, straight into the file, hashed on the way; the scan for the shape
         * (and the check that the text is one JSON value) reads the file's pages just written */
        _cleanup_(hd_sink_done) hd_sink sink;
        k = hd_sink_init(&sink, out, max);
        __atomic_fetch_add(&s->io.values_serialized, 1, __ATOMIC_RELAXED);
        if (k == 0 && json_dump_callback(v, hd_sink_dump, &sink, flags) < 0)
                k = sink.err < 0 ? sink.err : -ENOMEM;
        if (k == 0)
                k = hd_sink_finish(&sink, digest);
        count_written(s, &sink);
        if (k < 0) {
                unlinkat(s->dir_fd, tmp, 0);
                unreserve(s, r);
                if (k == -EFBIG)
                        return hull_err_hint(e, k, "paginate or filter the result",
                                             "handles: the value's JSON is over the limit of %" PRIu64 " bytes", max);
                return hull_err(e, k, "handles: cannot write the value as a new handle");
        }
        put_known kn = {.digest = digest};
        return commit(s, r, tmp, &kn, ret_summary, e);
}

static int adopt(hd_store *s, int fd, const char *id, hd_format format, const char *source, bool own,
                 json_t **ret_summary, hull_error *e) {
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_err(e, -EINVAL, "handles: the file to adopt is not a regular file");
        _cleanup_sqlmem_ sqlmem_scope m = {0};
        int k = mem_begin(s, &m, e);
        if (k == 0)
                k = put_common(s, id, format, source, NULL, 0, 0, fd, own, ret_summary, e);
        return mem_verdict(s, &m, k, "reading the table", "save fewer rows or columns", e);
}

int hd_adopt_fd(hd_store *s, int fd, const char *id, hd_format format, const char *source, json_t **ret_summary,
                hull_error *e) {
        return adopt(s, fd, id, format, source, false, ret_summary, e);
}

int hd_adopt_own_fd(hd_store *s, int fd, const char *id, hd_format format, const char *source, json_t **ret_summary,
                    hull_error *e) {
        return adopt(s, fd, id, format, source, true, ret_summary, e);
}

void hd_store_io_get(hd_store *s, hd_store_io *ret) {
        ret->bytes_copied = __atomic_load_n(&s->io.bytes_copied, __ATOMIC_RELAXED);
        ret->bytes_scanned = __atomic_load_n(&s->io.bytes_scanned, __ATOMIC_RELAXED);
        ret->bytes_written = __atomic_load_n(&s->io.bytes_written, __ATOMIC_RELAXED);
        ret->bytes_hashed = __atomic_load_n(&s->io.bytes_hashed, __ATOMIC_RELAXED);
        ret->values_serialized = __atomic_load_n(&s->io.values_serialized, __ATOMIC_RELAXED);
}

int hd_spill(hd_store *s, const char *source, const void *data, size_t len, bool is_table, json_t **ret_summary,
             hull_error *e) {
        if (len > s->max_spill)
                return hull_err_hint(e, -EFBIG, "paginate or filter at the source and ask for less",
                                     "%s: the result of %zu bytes is over the limit of %" PRIu64 " bytes",
                                     source ? source : "tool", len, s->max_spill);
        if (!is_table && len <= s->spill_threshold)
                return 0;
        int k;
        if (is_table) {
                static const hd_format tries[] = {HD_FORMAT_JSON_ARRAY, HD_FORMAT_JSON_LINES, HD_FORMAT_CSV};
                for (size_t i = 0; i < ELEMENTSOF(tries); i++) {
                        k = hd_put(s, NULL, tries[i], source, data, len, ret_summary, NULL);
                        if (k >= 0)
                                return 1;
                        if (k == -ENOMEM || k == -ENOSPC)
                                return hull_err(e, k, "handles: cannot spill the result");
                }
                if (len <= s->spill_threshold)
                        return 0;
        }
        hd_format f = scan_json(s, data, len, NULL, NULL) == 0 ? HD_FORMAT_JSON
                      : utf8_is_valid(data, len)               ? HD_FORMAT_TEXT
                                                               : HD_FORMAT_BINARY;
        k = hd_put(s, NULL, f, source, data, len, ret_summary, e);
        return k < 0 ? k : 1;
}

/* ---- reads ---- */

static int inspect(hd_store *s, const char *id, const hd_inspect_opts *opts, json_t **ret, hull_error *e) {
        hd_inspect_opts o = opts ? *opts : (hd_inspect_opts){.head = HD_PREVIEW_ROWS};
        if (o.head > HD_INSPECT_ROWS_MAX || o.tail > HD_INSPECT_ROWS_MAX)
                return hull_err(e, -EINVAL, "handles: inspect shows at most %u head and %u tail rows",
                                HD_INSPECT_ROWS_MAX, HD_INSPECT_ROWS_MAX);
        pthread_mutex_lock(&s->lock);
        hd_record *r;
        int fd = get_verified(s, id, &r, e);
        json_t *out = fd >= 0 ? json_deep_copy(r->summary) : NULL;
        hd_kind kind = fd >= 0 ? r->kind : HD_KIND_BINARY;
        char name[HD_ID_MAX + 16];
        if (fd >= 0)
                file_name(r, name);
        pthread_mutex_unlock(&s->lock);
        if (fd < 0)
                return fd;
        safe_close(fd);
        if (!out)
                return hull_err(e, -ENOMEM, "handles: cannot inspect %s", id);
        if (kind == HD_KIND_TABLE) {
                /* the file is immutable once stored; the digest was just checked */
                int k = hd_table_inspect(s->dir_fd, name, &o, out, e);
                if (k < 0) {
                        json_decref(out);
                        return k;
                }
        }
        *ret = out;
        return 0;
}

static int read_text(hd_store *s, const char *id, uint64_t offset, uint64_t limit, json_t **ret, hull_error *e) {
        if (limit == 0)
                limit = HD_READ_DEFAULT_BYTES;
        if (limit > HD_READ_MAX_BYTES)
                return hull_err(e, -EINVAL, "handles: read at most %u bytes at a time", HD_READ_MAX_BYTES);
        pthread_mutex_lock(&s->lock);
        hd_record *r;
        int fd = get_verified(s, id, &r, e);
        hd_kind kind = fd >= 0 ? r->kind : HD_KIND_BINARY;
        uint64_t size = fd >= 0 ? r->bytes : 0;
        pthread_mutex_unlock(&s->lock);
        if (fd < 0)
                return fd;
        _cleanup_close_ int f = fd;
        if (kind != HD_KIND_TEXT && kind != HD_KIND_JSON)
                return hull_err_hint(e, -EMEDIUMTYPE,
                                     kind == HD_KIND_TABLE ? "use inspect or query"
                                                           : "binary handles are not read as text",
                                     "handle %s is a %s handle", id, kind_names[kind]);
        if (offset > size)
                offset = size;
        /* 3 bytes before and after: room to find character boundaries */
        uint64_t from = offset >= 3 ? offset - 3 : 0, want = MIN(limit + 6, size - from);
        _cleanup_free_ char *buf = malloc((size_t) want + 1);
        if (!buf)
                return hull_err(e, -ENOMEM, "handles: cannot read %s", id);
        ssize_t n = pread(f, buf, (size_t) want, (off_t) from);
        if (n < 0)
                return hull_err(e, -errno, "handles: cannot read %s", id);
        size_t start = (size_t) (offset - from);
        while (start < (size_t) n && ((unsigned char) buf[start] & 0xc0) == 0x80)
                start++;
        size_t end = MIN(start + (size_t) limit, (size_t) n);
        if (end < (size_t) n) /* not at the end of the file: back to a boundary */
                while (end > start && ((unsigned char) buf[end] & 0xc0) == 0x80)
                        end--;
        uint64_t real_off = from + start;
        json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:b, s:s%}", "id", id, "offset", (json_int_t) real_off, "length",
                              (json_int_t) (end - start), "total_bytes", (json_int_t) size, "eof",
                              real_off + (end - start) >= size, "text", buf + start, end - start);
        if (!o)
                return hull_err(e, -EBADMSG, "handles: %s is not valid text", id);
        *ret = o;
        return 0;
}

static int query(hd_store *s, const char *sql, const char *const *ids, size_t n_ids, const hd_query_opts *opts,
                 json_t **ret, hull_error *e) {
        hd_query_opts o = opts ? *opts : (hd_query_opts){0};
        if (!o.time_ms)
                o.time_ms = HD_QUERY_MS_DEFAULT;
        if (!o.max_rows)
                o.max_rows = HD_QUERY_ROWS_DEFAULT;
        if (o.time_ms > HD_QUERY_MS_MAX || o.max_rows > HD_QUERY_ROWS_MAX)
                return hull_err(e, -EINVAL, "handles: a query may run at most %u ms and return %llu rows",
                                HD_QUERY_MS_MAX, (unsigned long long) HD_QUERY_ROWS_MAX);
        if (!sql || !*sql)
                return hull_err(e, -EINVAL, "handles: no SQL statement");
        if (n_ids == 0 || n_ids > HD_QUERY_HANDLES_MAX)
                return hull_err(e, -EINVAL, "handles: a query names 1 to %u table handles", HD_QUERY_HANDLES_MAX);
        hd_query_table t[HD_QUERY_HANDLES_MAX];
        char names[HD_QUERY_HANDLES_MAX][HD_ID_MAX + 16];
        pthread_mutex_lock(&s->lock);
        int k = 0;
        for (size_t i = 0; i < n_ids && k == 0; i++) {
                hd_record *r;
                for (size_t j = 0; j < i; j++)
                        if (strcmp(ids[i], ids[j]) == 0)
                                k = hull_err(e, -EINVAL, "handles: %s is named twice", ids[i]);
                if (k < 0)
                        break;
                int fd = get_verified(s, ids[i], &r, e);
                if (fd < 0) {
                        k = fd;
                        break;
                }
                safe_close(fd);
                if (r->kind != HD_KIND_TABLE) {
                        k = hull_err_hint(e, -EMEDIUMTYPE, "query table handles only", "handle %s is a %s handle",
                                          ids[i], kind_names[r->kind]);
                        break;
                }
                file_name(r, names[i]);
                t[i] = (hd_query_table){.id = r->id, .name = names[i]};
        }
        pthread_mutex_unlock(&s->lock);
        if (k < 0)
                return k;
        hd_record *out;
        k = reserve(s, o.result_id, HD_KIND_TABLE, "query", &out, e);
        if (k < 0)
                return k;
        {
                /* the source says what made it: the SQL, cut to fit */
                char src[HD_SOURCE_MAX + 1];
                snprintf(src, sizeof(src), "query: %s", sql);
                _cleanup_free_ char *fixed = NULL;
                size_t fl;
                if (utf8_make_valid(src, utf8_prefix_len(src, strlen(src), HD_SOURCE_MAX), &fixed, &fl) == 0) {
                        pthread_mutex_lock(&s->lock);
                        free(out->source);
                        out->source = TAKE_PTR(fixed);
                        pthread_mutex_unlock(&s->lock);
                }
        }
        char tmp[64];
        tmp_name(tmp, "");
        json_t *inline_rows = NULL;
        k = hd_table_query(s->dir_fd, sql, t, n_ids, o.time_ms, o.max_rows, s->max_spill, tmp, &inline_rows, e);
        if (k < 0 || inline_rows) {
                unreserve(s, out);
                if (k >= 0)
                        *ret = inline_rows;
                return k;
        }
        json_t *summary;
        k = commit(s, out, tmp, NULL, &summary, e);
        if (k < 0)
                return k;
        *ret = json_pack("{s:o}", "handle", summary);
        return *ret ? 0 : -ENOMEM;
}

/* ---- the reading operations, each with its own SQLite budget ---- */

int hd_summary(hd_store *s, const char *id, json_t **ret, hull_error *e) {
        _cleanup_sqlmem_ sqlmem_scope m = {0};
        int k = mem_begin(s, &m, e);
        if (k == 0)
                k = summary(s, id, ret, e);
        return mem_verdict(s, &m, k, "summarizing the table", "save fewer rows or columns", e);
}

int hd_inspect(hd_store *s, const char *id, const hd_inspect_opts *opts, json_t **ret, hull_error *e) {
        _cleanup_sqlmem_ sqlmem_scope m = {0};
        int k = mem_begin(s, &m, e);
        if (k == 0)
                k = inspect(s, id, opts, ret, e);
        return mem_verdict(s, &m, k, "inspecting the table", "ask for fewer rows or no stats", e);
}

int hd_read(hd_store *s, const char *id, uint64_t offset, uint64_t limit, json_t **ret, hull_error *e) {
        _cleanup_sqlmem_ sqlmem_scope m = {0}; /* a first read may derive a table's summary */
        int k = mem_begin(s, &m, e);
        if (k == 0)
                k = read_text(s, id, offset, limit, ret, e);
        return mem_verdict(s, &m, k, "summarizing the table", "save fewer rows or columns", e);
}

int hd_query(hd_store *s, const char *sql, const char *const *ids, size_t n_ids, const hd_query_opts *opts,
             json_t **ret, hull_error *e) {
        _cleanup_sqlmem_ sqlmem_scope m = {0};
        int k = mem_begin(s, &m, e);
        if (k == 0)
                k = query(s, sql, ids, n_ids, opts, ret, e);
        return mem_verdict(s, &m, k, "the query", "filter or aggregate more, or add a LIMIT", e);
}
