/* hd-exchange.c: reading back what sandboxed code left in a call's exchange directory (see
 * hd-exchange.h): pure JSONL parsers for new_handles.jsonl and publish.jsonl, an emit checker,
 * and the directory's creation, jailed reading and removal. */
#include "hd-exchange.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sbx-workspace.h"

#define NEW_HANDLES "new_handles.jsonl"
#define EMIT "emit.json"
#define PUBLISH "publish.jsonl"
#define HULL_DIR ".hull"

static const char *const kinds[] = {"json", "text", "table", "binary"};

/* ---- results ---- */

void hd_exchange_init(hd_exchange *x) {
        *x = (hd_exchange){.emit_fd = -1};
}

void hd_exchange_done(hd_exchange *x) {
        for (size_t i = 0; i < x->n_handles; i++) {
                safe_close(x->handles[i].fd);
                free(x->handles[i].source);
        }
        free(x->handles);
        free(x->emit);
        safe_close(x->emit_fd);
        for (size_t i = 0; i < x->n_publish; i++) {
                free(x->publish[i].path);
                free(x->publish[i].description);
        }
        free(x->publish);
        for (size_t i = 0; i < x->n_errors; i++)
                free(x->errors[i]);
        free(x->errors);
        hd_exchange_init(x);
}

/* Append one error line; past HD_EXCHANGE_ERRORS_MAX it is only counted. -ENOMEM or 0. */
_printf_(2, 3) static int add_error(hd_exchange *x, const char *fmt, ...) {
        if (x->n_errors >= HD_EXCHANGE_ERRORS_MAX) {
                x->errors_dropped++;
                return 0;
        }
        if (!x->errors) {
                x->errors = calloc(HD_EXCHANGE_ERRORS_MAX, sizeof(char *));
                if (!x->errors)
                        return -ENOMEM;
        }
        char buf[HULL_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        char *s = strdup(buf);
        if (!s)
                return -ENOMEM;
        x->errors[x->n_errors++] = s;
        return 0;
}

/* A sandbox-written string for an error line: at most HD_EXCHANGE_SHOWN_MAX bytes, cut at a
 * UTF-8 character boundary, control characters as '?'. */
static void shown(const char *s, size_t len, char out[HD_EXCHANGE_SHOWN_MAX + 4]) {
        size_t n = len;
        bool cut = false;
        if (n > HD_EXCHANGE_SHOWN_MAX) {
                n = HD_EXCHANGE_SHOWN_MAX;
                while (n > 0 && ((unsigned char) s[n] & 0xC0) == 0x80)
                        n--;
                cut = true;
        }
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];
                out[i] = c < 0x20 || c == 0x7F ? '?' : (char) c;
        }
        memcpy(out + n, cut ? "..." : "", cut ? 4 : 1);
}

static bool has_control(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) s[i] < 0x20 || (unsigned char) s[i] == 0x7F)
                        return true;
        return false;
}

static bool id_is_valid(const char *s, size_t len) {
        if (len < 1 || len > HD_EXCHANGE_ID_MAX)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
                        return false;
        }
        return true;
}

static bool is_control_file(const char *name) {
        return strcmp(name, NEW_HANDLES) == 0 || strcmp(name, EMIT) == 0 || strcmp(name, PUBLISH) == 0;
}

/* ---- the JSONL parsers ---- */

typedef int (*line_fn)(const char *file, size_t lineno, json_t *obj, void *userdata, hd_exchange *x);

/* Split data into lines, skip blank ones, parse each as one strict JSON object, and hand it to
 * fn. A line over HD_EXCHANGE_LINE_MAX, not JSON, or not an object is an error line. fn returns
 * 0 (go on), 1 (stop: the cap is reached) or -ENOMEM. On a stop, *ret_rest counts the non-blank
 * lines after the one that stopped it. */
static int each_line(const char *file, const char *data, size_t len, line_fn fn, void *userdata, hd_exchange *x,
                     size_t *ret_rest) {
        size_t lineno = 0, rest = 0;
        bool stopped = false;
        for (size_t pos = 0; pos < len;) {
                const char *nl = memchr(data + pos, '\n', len - pos);
                size_t end = nl ? (size_t) (nl - data) : len, n = end - pos;
                const char *line = data + pos;
                pos = end + 1;
                lineno++;
                bool blank = true;
                for (size_t i = 0; i < n && blank; i++)
                        blank = line[i] == ' ' || line[i] == '\t' || line[i] == '\r';
                if (blank)
                        continue;
                if (stopped) {
                        rest++;
                        continue;
                }
                int r;
                if (n > HD_EXCHANGE_LINE_MAX) {
                        r = add_error(x, "%s line %zu: longer than %u bytes; ignored", file, lineno,
                                      HD_EXCHANGE_LINE_MAX);
                } else {
                        json_error_t jerr;
                        json_auto_t *j = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
                        if (!j)
                                r = add_error(x, "%s line %zu: not JSON (%s); ignored", file, lineno, jerr.text);
                        else if (!json_is_object(j))
                                r = add_error(x, "%s line %zu: not a JSON object; ignored", file, lineno);
                        else
                                r = fn(file, lineno, j, userdata, x);
                }
                if (r < 0)
                        return r;
                if (r > 0)
                        stopped = true;
        }
        if (ret_rest)
                *ret_rest = rest;
        return stopped ? 1 : 0;
}

/* The string member key of obj, or NULL with an error line. */
static const char *member_string(const char *file, size_t lineno, json_t *obj, const char *key, size_t *ret_len,
                                 hd_exchange *x, int *r) {
        json_t *v = json_object_get(obj, key);
        if (!v)
                *r = add_error(x, "%s line %zu: \"%s\" is missing; ignored", file, lineno, key);
        else if (!json_is_string(v))
                *r = add_error(x, "%s line %zu: \"%s\" is not a string; ignored", file, lineno, key);
        else {
                *ret_len = json_string_length(v);
                return json_string_value(v);
        }
        return NULL;
}

/* Exactly the keys named (n of them), or an error line. */
static bool exact_keys(const char *file, size_t lineno, json_t *obj, const char *const *keys, size_t n, hd_exchange *x,
                       int *r) {
        const char *k;
        json_t *v;
        json_object_foreach(obj, k, v) {
                bool known = false;
                for (size_t i = 0; i < n && !known; i++)
                        known = strcmp(k, keys[i]) == 0;
                if (!known) {
                        char q[HD_EXCHANGE_SHOWN_MAX + 4];
                        shown(k, strlen(k), q);
                        *r = add_error(x, "%s line %zu: unknown key \"%s\"; ignored", file, lineno, q);
                        return false;
                }
        }
        return true;
}

typedef struct handles_ctx {
        size_t max;
} handles_ctx;

static int handle_line(const char *file, size_t lineno, json_t *obj, void *userdata, hd_exchange *x) {
        static const char *const keys[] = {"id", "kind", "file", "source"};
        handles_ctx *c = userdata;
        int r = 0;
        size_t id_len = 0, kind_len = 0, file_len = 0, src_len = 0;
        char q[HD_EXCHANGE_SHOWN_MAX + 4];

        if (!exact_keys(file, lineno, obj, keys, ELEMENTSOF(keys), x, &r))
                return r;
        const char *id = member_string(file, lineno, obj, "id", &id_len, x, &r);
        const char *kind = id ? member_string(file, lineno, obj, "kind", &kind_len, x, &r) : NULL;
        const char *name = kind ? member_string(file, lineno, obj, "file", &file_len, x, &r) : NULL;
        const char *source = name ? member_string(file, lineno, obj, "source", &src_len, x, &r) : NULL;
        if (!source)
                return r;
        if (!id_is_valid(id, id_len)) {
                shown(id, id_len, q);
                return add_error(x, "%s line %zu: bad handle id \"%s\" (want [A-Za-z0-9][A-Za-z0-9_.-]{0,63}); ignored",
                                 file, lineno, q);
        }
        const char *k = NULL;
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                if (strlen(kinds[i]) == kind_len && memcmp(kinds[i], kind, kind_len) == 0)
                        k = kinds[i];
        if (!k) {
                shown(kind, kind_len, q);
                return add_error(x,
                                 "%s line %zu: handle %s: unknown kind \"%s\" (json, text, table or binary); ignored",
                                 file, lineno, id, q);
        }
        if (file_len == 0 || file_len > WS_NAME_MAX || memchr(name, '/', file_len) || memchr(name, '\0', file_len) ||
            strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || has_control(name, file_len) || is_control_file(name)) {
                shown(name, file_len, q);
                return add_error(x,
                                 "%s line %zu: handle %s: \"%s\" is not a payload file name in the exchange "
                                 "directory; ignored",
                                 file, lineno, id, q);
        }
        if (src_len == 0 || src_len > HD_EXCHANGE_SOURCE_MAX || has_control(source, src_len))
                return add_error(x,
                                 "%s line %zu: handle %s: the source must be 1 to %u bytes without control "
                                 "characters; ignored",
                                 file, lineno, id, HD_EXCHANGE_SOURCE_MAX);
        for (size_t i = 0; i < x->n_handles; i++) {
                if (strcmp(x->handles[i].id, id) == 0)
                        return add_error(x,
                                         "%s line %zu: handle %s is saved twice in this call; handles are "
                                         "immutable, the first one stands",
                                         file, lineno, id);
                if (strcmp(x->handles[i].file, name) == 0)
                        return add_error(x, "%s line %zu: handle %s: file %s is already handle %s; ignored", file,
                                         lineno, id, x->handles[i].file, x->handles[i].id);
        }
        if (x->n_handles >= c->max)
                return 1;
        if (!x->handles) {
                x->handles = calloc(c->max, sizeof(hd_exchange_handle));
                if (!x->handles)
                        return -ENOMEM;
        }
        hd_exchange_handle *h = &x->handles[x->n_handles];
        *h = (hd_exchange_handle){.kind = k, .fd = -1};
        h->source = strndup(source, src_len);
        if (!h->source)
                return -ENOMEM;
        memcpy(h->id, id, id_len + 1);
        memcpy(h->file, name, file_len + 1);
        x->n_handles++;
        return 0;
}

int hd_exchange_parse_new_handles(const char *data, size_t len, size_t adopt_max, hd_exchange *x) {
        handles_ctx c = {.max = adopt_max ? adopt_max : HD_EXCHANGE_ADOPT_MAX};
        size_t rest = 0;
        int r = each_line(NEW_HANDLES, data, len, handle_line, &c, x, &rest);
        if (r < 0)
                return r;
        if (r > 0)
                return add_error(x, "%s: too many new handles: %zu adopted, %zu more refused (at most %zu per call)",
                                 NEW_HANDLES, x->n_handles, rest + 1, c.max);
        return 0;
}

typedef struct publish_ctx {
        size_t max;
} publish_ctx;

static int publish_line(const char *file, size_t lineno, json_t *obj, void *userdata, hd_exchange *x) {
        static const char *const keys[] = {"path", "description"};
        publish_ctx *c = userdata;
        int r = 0;
        size_t path_len = 0, desc_len = 0;
        char q[HD_EXCHANGE_SHOWN_MAX + 4];

        if (!exact_keys(file, lineno, obj, keys, ELEMENTSOF(keys), x, &r))
                return r;
        const char *path = member_string(file, lineno, obj, "path", &path_len, x, &r);
        const char *desc = path ? member_string(file, lineno, obj, "description", &desc_len, x, &r) : NULL;
        if (!desc)
                return r;
        shown(path, path_len, q);
        char norm[WS_PATH_MAX + 1];
        if (ws_path_check(path, path_len, NULL) < 0 || has_control(path, path_len) ||
            ws_path_normalize(path, path_len, norm, sizeof(norm), NULL) < 0)
                return add_error(x,
                                 "%s line %zu: \"%s\" is not a path relative to /workspace (absolute, \"..\", "
                                 "control characters or too long); not published",
                                 file, lineno, q);
        if (strncmp(norm, "outputs/", 8) != 0 || norm[8] == '\0')
                return add_error(x, "%s line %zu: \"%s\" is not under outputs/; not published", file, lineno, q);
        if (desc_len > HD_EXCHANGE_DESCRIPTION_MAX || memchr(desc, '\0', desc_len))
                return add_error(x, "%s line %zu: the description of \"%s\" is longer than %u bytes; not published",
                                 file, lineno, q, HD_EXCHANGE_DESCRIPTION_MAX);
        if (x->n_publish >= c->max)
                return 1;
        if (!x->publish) {
                x->publish = calloc(c->max, sizeof(hd_exchange_publish));
                if (!x->publish)
                        return -ENOMEM;
        }
        hd_exchange_publish *p = &x->publish[x->n_publish];
        p->path = strdup(norm);
        p->description = strndup(desc, desc_len);
        if (!p->path || !p->description) {
                free(p->path);
                free(p->description);
                *p = (hd_exchange_publish){0};
                return -ENOMEM;
        }
        x->n_publish++;
        return 0;
}

int hd_exchange_parse_publish(const char *data, size_t len, size_t publish_max, hd_exchange *x) {
        publish_ctx c = {.max = publish_max ? publish_max : HD_EXCHANGE_PUBLISH_MAX};
        size_t rest = 0;
        int r = each_line(PUBLISH, data, len, publish_line, &c, x, &rest);
        if (r < 0)
                return r;
        if (r > 0)
                return add_error(x,
                                 "%s: too many publish requests: %zu accepted, %zu more refused (at most %zu per call)",
                                 PUBLISH, x->n_publish, rest + 1, c.max);
        return 0;
}

static bool emit_is_json(const char *data, size_t len, json_error_t *jerr) {
        json_auto_t *j = json_loadb(data, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, jerr);
        return j != NULL;
}

int hd_exchange_check_emit(const char *data, size_t len, hull_error *e) {
        json_error_t jerr;
        if (!emit_is_json(data, len, &jerr))
                return hull_err(e, -EBADMSG, "malformed emit payload: %s at line %d, column %d", jerr.text, jerr.line,
                                jerr.column);
        return 0;
}

bool hd_exchange_rel_is_valid(const char *rel) {
        if (!rel || strlen(rel) != HD_EXCHANGE_REL_SIZE - 1 || strncmp(rel, HULL_DIR "/x-", 8) != 0)
                return false;
        for (const char *p = rel + 8; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/* ---- the directory ---- */

bool hd_exchange_surely_absent(int ws_fd, const char *rel) {
        if (!hd_exchange_rel_is_valid(rel))
                return false;
        _cleanup_close_ int hfd = openat(ws_fd, HULL_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (hfd < 0)
                return errno == ENOENT;
        struct stat st;
        return fstatat(hfd, rel + strlen(HULL_DIR "/"), &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
}

int hd_exchange_name(char ret_rel_path[HD_EXCHANGE_REL_SIZE], hull_error *e) {
        uint8_t rnd[8];
        ssize_t n = getrandom(rnd, sizeof(rnd), 0);
        if (n != (ssize_t) sizeof(rnd))
                return hull_err(e, n < 0 ? negative_errno() : -EIO, "exchange: getrandom");
        snprintf(ret_rel_path, HD_EXCHANGE_REL_SIZE, HULL_DIR "/x-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
                 rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
        return 0;
}

int hd_exchange_remove(int ws_fd, const char *rel, hull_error *e) {
        if (!hd_exchange_rel_is_valid(rel))
                return hull_err(e, -EINVAL, "exchange: not an exchange directory path");
        _cleanup_close_ int hfd = ws_open(ws_fd, HULL_DIR, O_RDONLY | O_DIRECTORY, 0, NULL);
        if (hfd == -ENOENT)
                return 0;
        if (hfd == -ELOOP)
                return hull_err(e, -ELOOP, "exchange: /workspace/" HULL_DIR " is a symbolic link: nothing removed");
        if (hfd < 0)
                return hull_err(e, hfd, "exchange: cannot open /workspace/" HULL_DIR);
        int r = rm_rf_at(hfd, rel + strlen(HULL_DIR "/"));
        if (r < 0 && r != -ENOENT)
                return hull_err(e, r, "exchange: cannot remove /workspace/%s", rel);
        return 0;
}

/* Open name in the exchange directory as a regular file of at most max bytes. Returns the fd
 * (size in *ret_size), -ENOENT when absent (no error line), or another negative errno after
 * adding an error line (what says which file it is, for the message). */
static int open_regular(int xfd, const char *name, const char *what, uint64_t max, bool control, uint64_t *ret_size,
                        hd_exchange *x, int *ret_oom) {
        int fd = ws_open(xfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY, 0, NULL);
        if (fd == -ENOENT)
                return -ENOENT;
        _cleanup_close_ int f = fd;
        const char *why = NULL;
        struct stat st;
        if (fd == -ELOOP)
                why = "a symbolic link";
        else if (fd < 0)
                why = strerror(-fd);
        else if (fstat(f, &st) < 0)
                why = "cannot stat it", fd = -EIO;
        else if (S_ISDIR(st.st_mode))
                why = "a directory", fd = -EISDIR;
        else if (!S_ISREG(st.st_mode))
                why = S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file", fd = -EINVAL;
        else if (st.st_nlink != 1)
                why = "a file with other hard links", fd = -EMLINK;
        else if ((uint64_t) st.st_size > max) {
                unsigned long long size = (unsigned long long) st.st_size, m = (unsigned long long) max;
                *ret_oom =
                        control ? add_error(x, "control file %s too large (%llu bytes, at most %llu); ignored", what,
                                            size, m)
                                : add_error(x, "%s: too large (%llu bytes, at most %llu); not adopted", what, size, m);
                return -EFBIG;
        } else {
                *ret_size = (uint64_t) st.st_size;
                return TAKE_FD(f);
        }
        *ret_oom = control ? add_error(x, "control file %s was replaced (%s); ignored", what, why)
                           : add_error(x, "%s: %s; not adopted", what, why);
        return fd;
}

/* Read the regular file open at fd, of at most max bytes (it may still grow: at most max + 1
 * bytes are read). Returns 0 and *ret (NUL-terminated, caller frees), or -ENOMEM, or -EFBIG /
 * -EIO after an error line (*ret_oom is -ENOMEM when even that failed). */
static int read_fd(int fd, const char *name, uint64_t max, char **ret, size_t *ret_len, hd_exchange *x, int *ret_oom) {
        _cleanup_free_ char *buf = malloc((size_t) max + 2);
        if (!buf)
                return *ret_oom = -ENOMEM;
        size_t got = 0;
        while (got <= max) {
                ssize_t n = read(fd, buf + got, (size_t) (max + 1 - got));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        *ret_oom = add_error(x, "control file %s: read failed: %s; ignored", name, strerror(errno));
                        return -EIO;
                }
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        if (got > max) {
                *ret_oom = add_error(x, "control file %s too large (it grew past %llu bytes); ignored", name,
                                     (unsigned long long) max);
                return -EFBIG;
        }
        buf[got] = '\0';
        *ret_len = got;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* A control file of at most max bytes: 0 and *ret, -ENOENT (absent), or another negative errno
 * after an error line; *ret_oom is -ENOMEM when memory ran out. */
static int read_control(int xfd, const char *name, uint64_t max, char **ret, size_t *ret_len, hd_exchange *x,
                        int *ret_oom) {
        uint64_t size = 0;
        _cleanup_close_ int fd = open_regular(xfd, name, name, max, true, &size, x, ret_oom);
        if (fd < 0)
                return fd;
        return read_fd(fd, name, max, ret, ret_len, x, ret_oom);
}

static int read_emit(int xfd, const hd_exchange_limits *lim, hd_exchange *x) {
        int oom = 0;
        uint64_t size = 0;
        _cleanup_close_ int fd = open_regular(xfd, EMIT, EMIT, lim->payload_bytes_max, true, &size, x, &oom);
        if (fd < 0)
                return oom;
        if (size > lim->emit_inline_max) {
                x->emitted = x->emit_too_large = true;
                x->emit_size = size;
                x->emit_fd = TAKE_FD(fd);
                return 0;
        }
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        if (read_fd(fd, EMIT, lim->emit_inline_max, &buf, &len, x, &oom) < 0)
                return oom;
        json_error_t jerr;
        if (!emit_is_json(buf, len, &jerr))
                return add_error(x, "malformed emit payload (emit.json: %s at line %d, column %d); nothing emitted",
                                 jerr.text, jerr.line, jerr.column);
        x->emitted = true;
        x->emit_len = len;
        x->emit = TAKE_PTR(buf);
        return 0;
}

/* Why the exchange directory rel could not be opened (err from ws_open): which of the two levels
 * sandboxed code replaced. Only on that error path: one more open. */
static const char *replaced_why(int ws_fd, int err) {
        _cleanup_close_ int hfd = ws_open(ws_fd, HULL_DIR, O_RDONLY | O_DIRECTORY, 0, NULL);
        if (hfd == -ELOOP)
                return "is below /workspace/" HULL_DIR ", which is a symbolic link: refused";
        if (hfd == -ENOTDIR)
                return "is below /workspace/" HULL_DIR ", which is not a directory: refused";
        if (err == -ELOOP)
                return "was replaced by a symbolic link";
        if (err == -ENOTDIR)
                return "was replaced by a file";
        return "could not be opened";
}

int hd_exchange_read(int ws_fd, const char *rel, const hd_exchange_limits *lim_in, hd_exchange *ret, hull_error *e) {
        hd_exchange_limits lim = lim_in ? *lim_in : (hd_exchange_limits){0};
        if (!lim.new_handles_bytes_max)
                lim.new_handles_bytes_max = HD_EXCHANGE_NEW_HANDLES_BYTES_MAX;
        if (!lim.adopt_max)
                lim.adopt_max = HD_EXCHANGE_ADOPT_MAX;
        if (!lim.emit_inline_max)
                lim.emit_inline_max = HD_EXCHANGE_EMIT_INLINE_MAX;
        if (!lim.payload_bytes_max)
                lim.payload_bytes_max = HD_EXCHANGE_PAYLOAD_MAX;
        if (!lim.publish_bytes_max)
                lim.publish_bytes_max = HD_EXCHANGE_PUBLISH_BYTES_MAX;
        if (!lim.publish_max)
                lim.publish_max = HD_EXCHANGE_PUBLISH_MAX;
        if (!hd_exchange_rel_is_valid(rel))
                return hull_err(e, -EINVAL, "exchange: not an exchange directory path");

        hd_exchange x;
        hd_exchange_init(&x);
        int r = 0, oom = 0;
        _cleanup_free_ char *lines = NULL, *pub = NULL;
        size_t len = 0;
        /* One openat2 in the common case: a call that saved, emitted and published nothing never
         * made the directory (runtime/hull.py makes it on first use), so ENOENT is "nothing". */
        _cleanup_close_ int xfd = ws_open(ws_fd, rel, O_RDONLY | O_DIRECTORY, 0, NULL);
        if (xfd == -ENOENT) {
                x.absent = true;
                goto out;
        }
        if (xfd < 0) {
                r = add_error(&x, "the exchange directory /workspace/%s %s; nothing was adopted, emitted or published",
                              rel, replaced_why(ws_fd, xfd));
                goto out;
        }

        if (read_control(xfd, NEW_HANDLES, lim.new_handles_bytes_max, &lines, &len, &x, &oom) == 0) {
                r = hd_exchange_parse_new_handles(lines, len, lim.adopt_max, &x);
                if (r < 0)
                        goto out;
        } else if ((r = oom) < 0)
                goto out;
        /* Open every payload now; a handle whose file is not fit is dropped. */
        size_t kept = 0;
        for (size_t i = 0; i < x.n_handles; i++) {
                hd_exchange_handle *h = &x.handles[i];
                char what[HD_EXCHANGE_ID_MAX + WS_NAME_MAX + 32];
                snprintf(what, sizeof(what), "new handle %s (file %s)", h->id, h->file);
                uint64_t size = 0;
                oom = 0;
                int fd = open_regular(xfd, h->file, what, lim.payload_bytes_max, false, &size, &x, &oom);
                if (fd == -ENOENT)
                        oom = add_error(&x, "%s: the file is missing; not adopted", what);
                if (oom < 0) {
                        safe_close(fd);
                        r = oom;
                        goto out;
                }
                if (fd < 0) {
                        free(h->source);
                        continue;
                }
                h->fd = fd;
                h->size = size;
                x.handles[kept++] = *h;
        }
        x.n_handles = kept;

        r = read_emit(xfd, &lim, &x);
        if (r < 0)
                goto out;

        oom = 0;
        if (read_control(xfd, PUBLISH, lim.publish_bytes_max, &pub, &len, &x, &oom) == 0)
                r = hd_exchange_parse_publish(pub, len, lim.publish_max, &x);
        else
                r = oom;
out:
        if (r == -ENOMEM) {
                hd_exchange_done(&x);
                return hull_err(e, -ENOMEM, "exchange: out of memory");
        }
        *ret = x;
        return 0;
}
