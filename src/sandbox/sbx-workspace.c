/* sbx-workspace.c: host-side workspace operations (read, write, edit, glob, grep, persist,
 * hydrate) confined to a session's work directory by one path jail (see sbx-workspace.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "sbx-workspace.h"
#include "sbx-archive.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dynbuf.h"
#include "macro.h"

#define SHOWN_SIZE (WS_PATH_SHOWN_MAX + 4)
#define TEMP_NAME_SIZE 32

/* ---- messages ---- */

/* A refusal whose reason the message states itself: no strerror() appended. */
static int ws_fail(hull_error *e, int err, const char *hint, const char *fmt, ...) _printf_(4, 5);
static int ws_fail(hull_error *e, int err, const char *hint, const char *fmt, ...) {
        char msg[HULL_ERROR_MSG_MAX];
        va_list ap;
        if (!e)
                return err;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (hint)
                hull_err_hint(e, 0, hint, "%s", msg);
        else
                hull_err(e, 0, "%s", msg);
        e->err = err;
        return err;
}

/* A printable, bounded copy of a path for a message: control bytes become '?'. */
static const char *show(const char *p, size_t len, char buf[SHOWN_SIZE]) {
        size_t n = MIN(len, (size_t) WS_PATH_SHOWN_MAX), o = 0;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) p[i];
                buf[o++] = c < 0x20 || c == 0x7f ? '?' : (char) c;
        }
        if (len > n) {
                memcpy(buf + o, "...", 3);
                o += 3;
        }
        buf[o] = '\0';
        return buf;
}

static const char *shows(const char *p, char buf[SHOWN_SIZE]) {
        return show(p, strnlen(p, WS_PATH_SHOWN_MAX + 1), buf);
}

static const char *type_name(mode_t m) {
        if (S_ISREG(m))
                return "regular file";
        if (S_ISDIR(m))
                return "directory";
        if (S_ISLNK(m))
                return "symbolic link";
        if (S_ISFIFO(m))
                return "FIFO";
        if (S_ISSOCK(m))
                return "socket";
        if (S_ISCHR(m))
                return "character device";
        if (S_ISBLK(m))
                return "block device";
        return "file of unknown type";
}

/* ---- the path jail ---- */

int ws_path_check(const char *path, size_t len, hull_error *e) {
        char q[SHOWN_SIZE];
        if (!path || len == 0)
                return ws_fail(e, -EINVAL, "use '.' for the workspace root", "workspace: empty path");
        if (memchr(path, '\0', len))
                return ws_fail(e, -EINVAL, "remove it", "workspace: path '%s' contains a NUL byte",
                               show(path, strnlen(path, len), q));
        if (len > WS_PATH_MAX)
                return ws_fail(e, -ENAMETOOLONG, "use a shorter path",
                               "workspace: path of %zu bytes is too long (at most %u)", len, WS_PATH_MAX);
        if (path[0] == '/')
                return ws_fail(e, -EPERM, "use a path relative to /workspace, e.g. 'src/main.py'",
                               "workspace: path '%s' is absolute", show(path, len, q));
        size_t depth = 0;
        for (size_t i = 0; i < len;) {
                size_t j = i;
                while (j < len && path[j] != '/')
                        j++;
                size_t n = j - i;
                if (n == 2 && path[i] == '.' && path[i + 1] == '.')
                        return ws_fail(e, -EPERM, "use a path relative to /workspace without '..'",
                                       "workspace: path '%s' leaves the workspace", show(path, len, q));
                if (n > WS_NAME_MAX)
                        return ws_fail(e, -ENAMETOOLONG, "use shorter names",
                                       "workspace: path '%s' has a component of %zu bytes (at most %u)",
                                       show(path, len, q), n, WS_NAME_MAX);
                if (n > 0 && !(n == 1 && path[i] == '.'))
                        depth++;
                if (depth > WS_PATH_DEPTH_MAX)
                        return ws_fail(e, -ENAMETOOLONG, "use a shallower path",
                                       "workspace: path '%s' has more than %u components", show(path, len, q),
                                       WS_PATH_DEPTH_MAX);
                i = j + 1;
        }
        return 0;
}

int ws_path_normalize(const char *path, size_t len, char *ret, size_t size, hull_error *e) {
        int r = ws_path_check(path, len, e);
        if (r < 0)
                return r;
        if (size < 2)
                return ws_fail(e, -ENOBUFS, NULL, "workspace: no room to normalize a path");
        size_t o = 0;
        for (size_t i = 0; i < len;) {
                size_t j = i;
                while (j < len && path[j] != '/')
                        j++;
                size_t n = j - i;
                if (n > 0 && !(n == 1 && path[i] == '.')) {
                        if (o + (o > 0) + n + 1 > size)
                                return ws_fail(e, -ENOBUFS, NULL, "workspace: no room to normalize a path");
                        if (o > 0)
                                ret[o++] = '/';
                        memcpy(ret + o, path + i, n);
                        o += n;
                }
                i = j + 1;
        }
        if (o == 0)
                ret[o++] = '.';
        ret[o] = '\0';
        return 0;
}

/* openat2 below dir_fd, never through a link; retried when a concurrent rename made the kernel
 * give up (EAGAIN). Returns the fd or a negative errno. */
static int open_beneath(int dir_fd, const char *path, int flags, mode_t mode) {
        struct open_how how = {
                .flags = (uint64_t) (unsigned) (flags | O_CLOEXEC),
                .mode = ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) ? mode : 0,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        for (unsigned i = 0;; i++) {
                long fd = syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
                if (fd >= 0)
                        return (int) fd;
                if (errno != EAGAIN || i >= WS_OPEN_RETRIES)
                        return negative_errno();
        }
}

static int open_error(hull_error *e, int r, const char *path) {
        char q[SHOWN_SIZE];
        shows(path, q);
        switch (-r) {
        case ELOOP:
                return ws_fail(e, r, "workspace tools never follow links; use the path the link points to",
                               "workspace: path '%s' goes through a symbolic link", q);
        case EXDEV:
                return ws_fail(e, r, "use a path relative to /workspace", "workspace: path '%s' leaves the workspace",
                               q);
        case ENOENT:
                return ws_fail(e, r, "check the path; glob lists what exists", "workspace: '%s' does not exist", q);
        case ENOTDIR:
                return ws_fail(e, r, "check the path; glob lists what exists",
                               "workspace: a component of '%s' is not a directory", q);
        case EISDIR:
                return ws_fail(e, r, "name a file inside it", "workspace: '%s' is a directory", q);
        case ENOSYS:
                return hull_err_hint(e, r, "hull needs Linux 5.6 or newer for openat2",
                                     "workspace: cannot open '%s' safely", q);
        default:
                return hull_err(e, r, "workspace: cannot open '%s'", q);
        }
}

int ws_open(int root_fd, const char *path, int flags, mode_t mode, hull_error *e) {
        if (!path)
                return ws_path_check(NULL, 0, e);
        int r = ws_path_check(path, strnlen(path, WS_PATH_MAX + 1), e);
        if (r < 0)
                return r;
        int fd = open_beneath(root_fd, path, flags, mode);
        if (fd < 0)
                return open_error(e, fd, path);
        return fd;
}

/* ---- helpers for the operations ---- */

/* Who new files belong to: the workspace root's owner, so the sandbox user can change them. */
typedef struct ws_owner {
        uid_t uid;
        gid_t gid;
        bool give; /* the process is not that owner (chown is tried, EPERM ignored) */
} ws_owner;

static void owner_of(int fd, ws_owner *o) {
        struct stat st;
        o->give = false;
        if (fstat(fd, &st) == 0) {
                o->uid = st.st_uid;
                o->gid = st.st_gid;
                o->give = st.st_uid != geteuid() || st.st_gid != getegid();
        }
}

static void give_fd(const ws_owner *o, int fd) {
        if (o && o->give && fchown(fd, o->uid, o->gid) < 0) {
                /* best effort: an unprivileged hull cannot give files away, and need not */
        }
}

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, MIN(len, (size_t) WS_IO_CHUNK));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, off_t off) {
        const char *p = buf;
        while (len > 0) {
                ssize_t n = pwrite(fd, p, MIN(len, (size_t) WS_IO_CHUNK), off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += n;
                off += n;
                len -= (size_t) n;
        }
        return 0;
}

/* Read up to len bytes at off; returns the count (short only at end of file) or a negative errno. */
static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off) {
        size_t got = 0;
        while (got < len) {
                ssize_t n = pread(fd, (char *) buf + got, MIN(len - got, (size_t) WS_IO_CHUNK), (off_t) (off + got));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        return (ssize_t) got;
}

static int temp_name(char buf[TEMP_NAME_SIZE]) {
        uint8_t r[8];
        if (getrandom(r, sizeof(r), 0) != (ssize_t) sizeof(r))
                return -EIO;
        snprintf(buf, TEMP_NAME_SIZE, ".hull-tmp-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5],
                 r[6], r[7]);
        return 0;
}

/* Open (creating when mkdirs) the directory rel, a normalized path, one component at a time so
 * that no component is ever a link. New directories get mode 0755 and the owner o. */
static int make_dirs(int root_fd, const char *rel, const ws_owner *o, hull_error *e) {
        char buf[WS_PATH_MAX + 1], q[SHOWN_SIZE];
        _cleanup_close_ int cur = open_beneath(root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
        if (cur < 0)
                return open_error(e, cur, ".");
        if (strcmp(rel, ".") == 0)
                return TAKE_FD(cur);
        size_t len = strnlen(rel, sizeof(buf));
        if (len >= sizeof(buf))
                return ws_fail(e, -ENAMETOOLONG, NULL, "workspace: path too long");
        memcpy(buf, rel, len + 1);
        for (char *p = buf; *p;) {
                char *slash = strchr(p, '/');
                if (slash)
                        *slash = '\0';
                bool made = mkdirat(cur, p, 0755) == 0;
                if (!made && errno != EEXIST)
                        return hull_err(e, negative_errno(), "workspace: cannot create directory '%s'", shows(buf, q));
                int next = open_beneath(cur, p, O_RDONLY | O_DIRECTORY, 0);
                if (next < 0)
                        return open_error(e, next, buf);
                if (made) {
                        if (fchmod(next, 0755) < 0) {
                                /* best effort: only the umask's narrowing is undone */
                        }
                        give_fd(o, next);
                }
                safe_close(cur);
                cur = next;
                if (!slash)
                        break;
                *slash = '/';
                p = slash + 1;
        }
        return TAKE_FD(cur);
}

/* Open the directory holding the normalized path norm (creating it when mkdirs) and point
 * *ret_name at the last component inside norm. norm must not be ".". */
static int open_parent(int root_fd, char *norm, bool mkdirs, const ws_owner *o, const char **ret_name, hull_error *e) {
        char *slash = strrchr(norm, '/');
        int fd;
        if (!slash) {
                fd = open_beneath(root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
                if (fd < 0)
                        return open_error(e, fd, ".");
                *ret_name = norm;
                return fd;
        }
        *slash = '\0';
        fd = mkdirs ? make_dirs(root_fd, norm, o, e) : ws_open(root_fd, norm, O_RDONLY | O_DIRECTORY, 0, e);
        *slash = '/';
        if (fd < 0)
                return fd;
        *ret_name = slash + 1;
        return fd;
}

/* Open a regular file for reading without ever blocking on a FIFO or following a link. */
static int open_regular(int root_fd, const char *path, struct stat *ret_st, hull_error *e) {
        char q[SHOWN_SIZE];
        _cleanup_close_ int fd = ws_open(root_fd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW, 0, e);
        if (fd < 0)
                return fd;
        if (fstat(fd, ret_st) < 0)
                return hull_err(e, negative_errno(), "workspace: cannot stat '%s'", shows(path, q));
        if (S_ISDIR(ret_st->st_mode))
                return ws_fail(e, -EISDIR, "list it with glob, e.g. 'dir/*'", "workspace: '%s' is a directory",
                               shows(path, q));
        if (!S_ISREG(ret_st->st_mode))
                return ws_fail(e, -EINVAL, "only regular files can be read or edited",
                               "workspace: '%s' is a %s, not a regular file", shows(path, q),
                               type_name(ret_st->st_mode));
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
                return hull_err(e, negative_errno(), "workspace: cannot read '%s'", shows(path, q));
        return TAKE_FD(fd);
}

/* ---- read, write, edit ---- */

int ws_read(int root_fd, const char *path, uint64_t offset, size_t limit, ws_read_result *ret, hull_error *e) {
        char q[SHOWN_SIZE];
        struct stat st;
        if (limit == 0)
                limit = WS_READ_DEFAULT_BYTES;
        if (limit > WS_READ_MAX_BYTES)
                return ws_fail(e, -EINVAL, "read a file in pieces with offset and limit",
                               "workspace: read limit of %zu bytes is over the maximum of %llu", limit,
                               (unsigned long long) WS_READ_MAX_BYTES);
        _cleanup_close_ int fd = open_regular(root_fd, path, &st, e);
        if (fd < 0)
                return fd;
        uint64_t size = (uint64_t) st.st_size;
        size_t want = offset >= size ? 0 : (size_t) MIN((uint64_t) limit, size - offset);
        _cleanup_free_ char *buf = malloc(want + 1);
        if (!buf)
                return hull_err(e, -ENOMEM, "workspace: cannot read '%s'", shows(path, q));
        ssize_t n = want ? pread_full(fd, buf, want, offset) : 0;
        if (n < 0)
                return hull_err(e, (int) n, "workspace: cannot read '%s'", shows(path, q));
        buf[n] = '\0';
        ret->len = (size_t) n;
        ret->size = size;
        ret->eof = offset + (uint64_t) n >= size;
        ret->data = TAKE_PTR(buf);
        return 0;
}

void ws_read_result_done(ws_read_result *r) {
        if (!r)
                return;
        free(r->data);
        r->data = NULL;
        r->len = 0;
}

/* Write data to a fresh temporary name next to norm and rename it over norm. own (if not NULL)
 * is the uid/gid to keep, else the root's owner is given. */
static int write_atomic(int root_fd, char *norm, const void *data, size_t len, mode_t mode, const struct stat *own,
                        unsigned flags, hull_error *e) {
        char q[SHOWN_SIZE], tmp[TEMP_NAME_SIZE];
        const char *name;
        ws_owner o;
        struct stat st;
        int r;

        owner_of(root_fd, &o);
        if (own) {
                o.uid = own->st_uid;
                o.gid = own->st_gid;
                o.give = own->st_uid != geteuid() || own->st_gid != getegid();
        }
        _cleanup_close_ int dfd = open_parent(root_fd, norm, flags & WS_WRITE_MKDIRS, &o, &name, e);
        if (dfd < 0)
                return dfd;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                return ws_fail(e, -EISDIR, "write to a file path", "workspace: '%s' is a directory", shows(norm, q));
        r = temp_name(tmp);
        if (r < 0)
                return hull_err(e, r, "workspace: cannot make a temporary name for '%s'", shows(norm, q));
        _cleanup_close_ int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return hull_err(e, negative_errno(), "workspace: cannot create a temporary file next to '%s'",
                                shows(norm, q));
        r = write_all(fd, data, len);
        if (r == 0 && fchmod(fd, mode) < 0)
                r = negative_errno();
        give_fd(&o, fd);
        if (r == 0 && (flags & WS_WRITE_FSYNC) && fsync(fd) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(dfd, tmp, 0);
                return hull_err(e, r, "workspace: cannot write '%s'", shows(norm, q));
        }
        if (renameat(dfd, tmp, dfd, name) < 0) {
                r = negative_errno();
                (void) unlinkat(dfd, tmp, 0);
                if (r == -EISDIR)
                        return ws_fail(e, r, "write to a file path", "workspace: '%s' is a directory", shows(norm, q));
                return hull_err(e, r, "workspace: cannot replace '%s'", shows(norm, q));
        }
        if ((flags & WS_WRITE_FSYNC) && fsync(dfd) < 0)
                return hull_err(e, negative_errno(), "workspace: cannot sync the directory of '%s'", shows(norm, q));
        return 0;
}

/* Normalize a path that must name something below the root (not the root itself). */
static int normalize_target(const char *path, char norm[WS_PATH_MAX + 1], hull_error *e) {
        char q[SHOWN_SIZE];
        if (!path)
                return ws_path_check(NULL, 0, e);
        size_t len = strnlen(path, WS_PATH_MAX + 1);
        int r = ws_path_normalize(path, len, norm, WS_PATH_MAX + 1, e);
        if (r < 0)
                return r;
        if (strcmp(norm, ".") == 0 || path[len - 1] == '/')
                return ws_fail(e, -EISDIR, "name a file, e.g. 'notes.txt'", "workspace: '%s' names a directory",
                               show(path, len, q));
        return 0;
}

int ws_write(int root_fd, const char *path, const void *data, size_t len, unsigned flags, hull_error *e) {
        char norm[WS_PATH_MAX + 1];
        if (len > WS_WRITE_MAX_BYTES)
                return ws_fail(e, -EFBIG, "write less, or produce large files with exec",
                               "workspace: %zu bytes are over the write limit of %llu", len,
                               (unsigned long long) WS_WRITE_MAX_BYTES);
        if (!data && len > 0)
                return ws_fail(e, -EINVAL, NULL, "workspace: no data to write");
        int r = normalize_target(path, norm, e);
        if (r < 0)
                return r;
        return write_atomic(root_fd, norm, data ? data : "", len, 0644, NULL, flags, e);
}

int ws_edit(int root_fd, const char *path, const void *old_text, size_t old_len, const void *new_text, size_t new_len,
            unsigned flags, hull_error *e) {
        char norm[WS_PATH_MAX + 1], q[SHOWN_SIZE];
        struct stat st;
        if (!old_text || old_len == 0)
                return ws_fail(e, -EINVAL, "give the exact text to replace, or use write to create a file",
                               "workspace: the text to replace is empty");
        if (!new_text && new_len > 0)
                return ws_fail(e, -EINVAL, NULL, "workspace: no replacement text");
        int r = normalize_target(path, norm, e);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open_regular(root_fd, norm, &st, e);
        if (fd < 0)
                return fd;
        uint64_t size = (uint64_t) st.st_size;
        if (size > WS_EDIT_MAX_BYTES)
                return ws_fail(e, -EFBIG, "edit it with exec (sed, python) instead",
                               "workspace: '%s' is %llu bytes, over the edit limit of %llu", shows(norm, q),
                               (unsigned long long) size, (unsigned long long) WS_EDIT_MAX_BYTES);
        _cleanup_free_ char *buf = malloc(size + 1);
        if (!buf)
                return hull_err(e, -ENOMEM, "workspace: cannot edit '%s'", shows(norm, q));
        ssize_t n = pread_full(fd, buf, size, 0);
        if (n < 0)
                return hull_err(e, (int) n, "workspace: cannot read '%s'", shows(norm, q));
        size_t len = (size_t) n;

        /* Count non-overlapping occurrences (what a reader counts); one more search from just after
         * the first finds an overlapping second one, which would make the span ambiguous too. */
        size_t count = 0;
        const char *first = NULL, *end = buf + len;
        for (const char *p = buf; (size_t) (end - p) >= old_len;) {
                const char *hit = memmem(p, (size_t) (end - p), old_text, old_len);
                if (!hit)
                        break;
                if (!first)
                        first = hit;
                count++;
                p = hit + old_len;
        }
        if (count == 1 && memmem(first + 1, (size_t) (end - first - 1), old_text, old_len))
                count = 2;
        if (count == 0)
                return ws_fail(e, -ENODATA,
                               "copy the text exactly from a fresh read, including whitespace and indentation",
                               "workspace: edit of '%s': the text to replace was not found", shows(norm, q));
        if (count > 1)
                return ws_fail(e, -ENOTUNIQ, "include more surrounding lines so that it occurs exactly once",
                               "workspace: edit of '%s': the text to replace occurs %zu times, not once",
                               shows(norm, q), count);

        size_t pre = (size_t) (first - buf), post = len - pre - old_len;
        if (new_len > WS_WRITE_MAX_BYTES || pre + post > WS_WRITE_MAX_BYTES - new_len)
                return ws_fail(e, -EFBIG, "edit it with exec instead",
                               "workspace: edit of '%s' would exceed %llu bytes", shows(norm, q),
                               (unsigned long long) WS_WRITE_MAX_BYTES);
        size_t out_len = pre + new_len + post;
        _cleanup_free_ char *out = malloc(out_len + 1);
        if (!out)
                return hull_err(e, -ENOMEM, "workspace: cannot edit '%s'", shows(norm, q));
        memcpy(out, buf, pre);
        if (new_len)
                memcpy(out + pre, new_text, new_len);
        memcpy(out + pre + new_len, first + old_len, post);
        return write_atomic(root_fd, norm, out, out_len, st.st_mode & 0777, &st, flags & WS_WRITE_FSYNC, e);
}

/* ---- glob matching ---- */

/* Bytes of the UTF-8 character at s (1 for an invalid byte), at most n. */
static size_t utf8_char_len(const char *s, size_t n) {
        unsigned char c = (unsigned char) s[0];
        size_t l = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        if (l > n)
                return 1;
        for (size_t i = 1; i < l; i++)
                if (((unsigned char) s[i] & 0xc0) != 0x80)
                        return 1;
        return l;
}

/* Match one pattern element other than '*' at p against the character at s: *pn gets the
 * element's length in the pattern, *sn the bytes it consumes. */
static bool match_one(const char *p, size_t plen, const char *s, size_t slen, size_t *pn, size_t *sn) {
        unsigned char c = (unsigned char) s[0];
        if (slen == 0)
                return false;
        if (p[0] == '?') {
                *pn = 1;
                *sn = utf8_char_len(s, slen);
                return true;
        }
        if (p[0] == '[') {
                size_t i = 1;
                bool neg = false, hit = false, first = true;
                if (i < plen && (p[i] == '!' || p[i] == '^')) {
                        neg = true;
                        i++;
                }
                while (i < plen && (p[i] != ']' || first)) {
                        unsigned char lo, hi;
                        if (p[i] == '\\' && i + 1 < plen)
                                i++;
                        lo = hi = (unsigned char) p[i++];
                        if (i + 1 < plen && p[i] == '-' && p[i + 1] != ']') {
                                i++;
                                if (p[i] == '\\' && i + 1 < plen)
                                        i++;
                                hi = (unsigned char) p[i++];
                        }
                        if (c >= lo && c <= hi)
                                hit = true;
                        first = false;
                }
                if (i < plen) { /* a closed class: one character */
                        *pn = i + 1;
                        *sn = utf8_char_len(s, slen);
                        return hit != neg;
                }
                /* an unclosed '[' is a literal */
        }
        if (p[0] == '\\' && plen >= 2) {
                *pn = 2;
                *sn = 1;
                return s[0] == p[1];
        }
        *pn = 1;
        *sn = 1;
        return s[0] == p[0];
}

/* Shell-style match of one name against one pattern component. A '*' backtracks only to the
 * latest star, so time is O(plen * slen) whatever the pattern. */
static bool wild_match(const char *p, size_t plen, const char *s, size_t slen, bool hidden) {
        if (!hidden && slen > 0 && s[0] == '.' &&
            !(plen > 0 && (p[0] == '.' || (plen > 1 && p[0] == '\\' && p[1] == '.'))))
                return false;
        size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
        while (si < slen) {
                size_t pn, sn;
                if (pi < plen && p[pi] == '*') {
                        star_p = ++pi;
                        star_s = si;
                        continue;
                }
                if (pi < plen && match_one(p + pi, plen - pi, s + si, slen - si, &pn, &sn)) {
                        pi += pn;
                        si += sn;
                        continue;
                }
                if (star_p == SIZE_MAX)
                        return false;
                star_s += utf8_char_len(s + star_s, slen - star_s);
                si = star_s;
                pi = star_p;
        }
        while (pi < plen && p[pi] == '*')
                pi++;
        return pi == plen;
}

/* A pattern split into components; matching runs a small NFA whose states are component
 * indexes (bit n: the whole pattern matched). */
typedef struct glob_pat {
        char buf[WS_PATH_MAX + 1];
        size_t n;
        const char *comp[WS_GLOB_COMPONENTS_MAX];
        size_t len[WS_GLOB_COMPONENTS_MAX];
        bool starstar[WS_GLOB_COMPONENTS_MAX];
        bool hidden;
} glob_pat;

static int glob_compile(glob_pat *g, const char *pattern, bool hidden, hull_error *e) {
        char q[SHOWN_SIZE];
        if (!pattern)
                return ws_path_check(NULL, 0, e);
        int r = ws_path_normalize(pattern, strnlen(pattern, WS_PATH_MAX + 1), g->buf, sizeof(g->buf), e);
        if (r < 0)
                return r;
        g->n = 0;
        g->hidden = hidden;
        if (strcmp(g->buf, ".") == 0)
                return ws_fail(e, -EINVAL, "use '**' for everything, or e.g. '**/*.py'",
                               "workspace: glob pattern '%s' names only the root", shows(pattern, q));
        for (char *p = g->buf; p;) {
                char *slash = strchr(p, '/');
                if (slash)
                        *slash = '\0';
                bool ss = strcmp(p, "**") == 0;
                if (!(ss && g->n > 0 && g->starstar[g->n - 1])) { /* "**" twice in a row is one */
                        if (g->n >= WS_GLOB_COMPONENTS_MAX)
                                return ws_fail(e, -EINVAL, "use fewer components",
                                               "workspace: glob pattern '%s' has more than %u components",
                                               shows(pattern, q), WS_GLOB_COMPONENTS_MAX);
                        g->comp[g->n] = p;
                        g->len[g->n] = strlen(p);
                        g->starstar[g->n] = ss;
                        g->n++;
                }
                p = slash ? slash + 1 : NULL;
        }
        return 0;
}

static uint64_t glob_close(const glob_pat *g, uint64_t s) {
        for (size_t i = 0; i < g->n; i++)
                if ((s >> i) & 1 && g->starstar[i])
                        s |= 1ULL << (i + 1);
        return s;
}

static uint64_t glob_start(const glob_pat *g) {
        return glob_close(g, 1);
}

static uint64_t glob_accept(const glob_pat *g) {
        return 1ULL << g->n;
}

static uint64_t glob_step(const glob_pat *g, uint64_t s, const char *name, size_t len) {
        uint64_t t = 0;
        bool dot = len > 0 && name[0] == '.';
        for (size_t i = 0; i < g->n; i++) {
                if (!((s >> i) & 1))
                        continue;
                if (g->starstar[i]) {
                        if (!dot || g->hidden)
                                t |= 1ULL << i;
                } else if (wild_match(g->comp[i], g->len[i], name, len, g->hidden))
                        t |= 1ULL << (i + 1);
        }
        return glob_close(g, t);
}

static bool glob_match_path(const glob_pat *g, const char *path) {
        uint64_t s = glob_start(g);
        for (const char *p = path; s && *p;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t) (slash - p) : strlen(p);
                if (n > 0 && !(n == 1 && p[0] == '.'))
                        s = glob_step(g, s, p, n);
                if (!slash)
                        break;
                p = slash + 1;
        }
        return s & glob_accept(g);
}

bool ws_glob_match(const char *pattern, const char *path, bool hidden) {
        _cleanup_free_ glob_pat *g = malloc(sizeof(*g));
        if (!g || !path || glob_compile(g, pattern, hidden, NULL) < 0)
                return false;
        if (ws_path_check(path, strnlen(path, WS_PATH_MAX + 1), NULL) < 0)
                return false;
        return glob_match_path(g, path);
}

/* ---- walking a tree ---- */

enum { WALK_NEXT = 0, WALK_DESCEND = 1, WALK_STOP = 2 };

typedef struct ws_walk ws_walk;
/* Called for each entry (w->path is its relative path) with the directory's state; returns a
 * negative errno, WALK_NEXT, WALK_DESCEND (directories only; *child is the state inside) or
 * WALK_STOP. */
typedef int (*ws_visit_fn)(ws_walk *w, int dir_fd, const char *name, const struct stat *st, uint64_t state,
                           uint64_t *child);

struct ws_walk {
        ws_visit_fn visit;
        void *data;
        hull_error *e;
        dev_t dev;        /* the start's filesystem: mount points below are not entered */
        bool strict;      /* persist: too many entries, too deep or too long is an error */
        uint64_t entries; /* directory entries read */
        uint64_t entries_max;
        uint64_t deadline_ns; /* 0: none */
        uint64_t mounts;      /* mount points skipped */
        unsigned stopped;     /* WS_STOP_* */
        size_t path_len;
        char path[WS_PATH_MAX + 1];
};

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

typedef struct name_list {
        char **v;
        size_t n, cap;
} name_list;

static void name_list_done(name_list *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int walk_dir(ws_walk *w, int fd, unsigned depth, uint64_t state);

/* Read every name of the directory (bounded by the entries budget), sorted, so that results
 * and truncation do not depend on the order readdir() happens to return. */
static int read_names(ws_walk *w, DIR *d, name_list *l) {
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno && w->strict)
                                return hull_err(w->e, negative_errno(), "workspace: cannot read directory '%s'",
                                                w->path_len ? w->path : ".");
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (w->entries >= w->entries_max) {
                        if (w->strict)
                                return ws_fail(w->e, -E2BIG, "remove files or raise the limit",
                                               "workspace: more than %llu entries",
                                               (unsigned long long) w->entries_max);
                        w->stopped |= WS_STOP_ENTRIES;
                        break;
                }
                w->entries++;
                if (l->n == l->cap) {
                        size_t cap = l->cap ? l->cap * 2 : 64;
                        char **v = realloc(l->v, cap * sizeof(*v));
                        if (!v)
                                return hull_err(w->e, -ENOMEM, "workspace: cannot list a directory");
                        l->v = v;
                        l->cap = cap;
                }
                l->v[l->n] = strdup(de->d_name);
                if (!l->v[l->n])
                        return hull_err(w->e, -ENOMEM, "workspace: cannot list a directory");
                l->n++;
        }
        if (l->n > 1)
                qsort(l->v, l->n, sizeof(*l->v), name_cmp);
        return 0;
}

static int walk_entry(ws_walk *w, int dfd, const char *name, unsigned depth, uint64_t state) {
        char q[SHOWN_SIZE];
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (w->strict && errno != ENOENT)
                        return hull_err(w->e, negative_errno(), "workspace: cannot stat '%s'", shows(w->path, q));
                return WALK_NEXT; /* gone meanwhile */
        }
        if (S_ISDIR(st.st_mode) && st.st_dev != w->dev) {
                w->mounts++;
                return WALK_NEXT;
        }
        uint64_t child = 0;
        int v = w->visit(w, dfd, name, &st, state, &child);
        if (v != WALK_DESCEND || !S_ISDIR(st.st_mode))
                return v;
        if (depth + 2 > WS_PATH_DEPTH_MAX) {
                if (w->strict)
                        return ws_fail(w->e, -ENAMETOOLONG, "flatten the tree",
                                       "workspace: '%s' is nested deeper than %u levels", shows(w->path, q),
                                       WS_PATH_DEPTH_MAX);
                w->stopped |= WS_STOP_DEPTH;
                return WALK_NEXT;
        }
        int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (cfd < 0) {
                if (w->strict && errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
                        return hull_err(w->e, negative_errno(), "workspace: cannot open directory '%s'",
                                        shows(w->path, q));
                return WALK_NEXT; /* replaced meanwhile */
        }
        return walk_dir(w, cfd, depth + 1, child);
}

/* Walk the directory open at fd (consumed) whose relative path is w->path, depth components
 * below the start. Returns 0, WALK_STOP or a negative errno. */
static int walk_dir(ws_walk *w, int fd, unsigned depth, uint64_t state) {
        _cleanup_(name_list_done) name_list l = {0};
        _cleanup_(closedirp) DIR *d = fdopendir(fd);
        char q[SHOWN_SIZE];
        int r = 0;
        if (!d) {
                r = negative_errno();
                safe_close(fd);
                return hull_err(w->e, r, "workspace: cannot read directory '%s'",
                                w->path_len ? shows(w->path, q) : ".");
        }
        r = read_names(w, d, &l);
        if (r < 0)
                return r;
        size_t base = w->path_len;
        for (size_t i = 0; i < l.n; i++) {
                if (w->deadline_ns && now_ns() >= w->deadline_ns) {
                        w->stopped |= WS_STOP_TIME;
                        r = WALK_STOP;
                        break;
                }
                size_t nl = strlen(l.v[i]), need = base + (base > 0) + nl;
                if (need > WS_PATH_MAX) {
                        if (w->strict) {
                                r = ws_fail(w->e, -ENAMETOOLONG, "use shorter names",
                                            "workspace: a path below '%s' is longer than %u bytes", shows(w->path, q),
                                            WS_PATH_MAX);
                                break;
                        }
                        w->stopped |= WS_STOP_DEPTH;
                        continue;
                }
                if (base > 0)
                        w->path[base] = '/';
                memcpy(w->path + base + (base > 0), l.v[i], nl + 1);
                w->path_len = need;
                r = walk_entry(w, dirfd(d), l.v[i], depth, state);
                w->path_len = base;
                w->path[base] = '\0';
                if (r < 0 || r == WALK_STOP)
                        break;
                r = 0;
        }
        return r;
}

/* Start a walk at the directory open at fd (consumed), whose relative path is prefix. */
static int walk_start(ws_walk *w, int fd, const char *prefix, uint64_t state) {
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = negative_errno();
                safe_close(fd);
                return hull_err(w->e, r, "workspace: cannot stat the start of a walk");
        }
        w->dev = st.st_dev;
        w->path_len = strcmp(prefix, ".") == 0 ? 0 : strlen(prefix);
        memcpy(w->path, prefix, w->path_len);
        w->path[w->path_len] = '\0';
        int r = walk_dir(w, fd, 0, state);
        return r < 0 ? r : 0;
}

static uint64_t deadline_after(uint64_t ms) {
        return now_ns() + ms * 1000000ULL;
}

const char *ws_stop_reason(unsigned stopped) {
        if (stopped & WS_STOP_TIME)
                return "the time budget ran out";
        if (stopped & WS_STOP_BYTES)
                return "the byte budget ran out";
        if (stopped & WS_STOP_ENTRIES)
                return "too many directory entries were examined";
        if (stopped & WS_STOP_RESULTS)
                return "the result limit was reached";
        if (stopped & WS_STOP_MATCH_LIMIT)
                return "the regular expression hit its backtracking limit on some lines";
        if (stopped & WS_STOP_DEPTH)
                return "some directories were nested too deep";
        return NULL;
}

/* ---- glob ---- */

typedef struct glob_ctx {
        glob_pat pat;
        size_t max;
        char **paths;
        size_t count, cap;
} glob_ctx;

static int glob_visit(ws_walk *w, int dir_fd, const char *name, const struct stat *st, uint64_t state,
                      uint64_t *child) {
        glob_ctx *g = w->data;
        uint64_t s = glob_step(&g->pat, state, name, strlen(name));
        bool dir = S_ISDIR(st->st_mode);
        if (s & glob_accept(&g->pat)) {
                if (g->count >= g->max) {
                        w->stopped |= WS_STOP_RESULTS;
                        return WALK_STOP;
                }
                if (g->count == g->cap) {
                        size_t cap = g->cap ? g->cap * 2 : 64;
                        char **v = realloc(g->paths, cap * sizeof(*v));
                        if (!v)
                                return hull_err(w->e, -ENOMEM, "workspace: glob");
                        g->paths = v;
                        g->cap = cap;
                }
                char *p = malloc(w->path_len + 2);
                if (!p)
                        return hull_err(w->e, -ENOMEM, "workspace: glob");
                memcpy(p, w->path, w->path_len);
                p[w->path_len] = dir ? '/' : '\0';
                p[w->path_len + dir] = '\0';
                g->paths[g->count++] = p;
        }
        if (dir && (s & ~glob_accept(&g->pat))) {
                *child = s;
                return WALK_DESCEND;
        }
        return WALK_NEXT;
}

static void free_strv(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

int ws_glob(int root_fd, const char *pattern, const ws_glob_opts *opts, ws_glob_result *ret, hull_error *e) {
        static const ws_glob_opts defaults = {0};
        if (!opts)
                opts = &defaults;
        if (opts->results_max > WS_GLOB_RESULTS_MAX || opts->entries_max > WS_WALK_ENTRIES_MAX ||
            opts->time_ms > WS_WALK_TIME_MS_MAX)
                return ws_fail(e, -EINVAL, "use smaller limits", "workspace: a glob limit is over its maximum");
        _cleanup_free_ glob_ctx *g = calloc(1, sizeof(*g));
        _cleanup_free_ ws_walk *w = calloc(1, sizeof(*w));
        if (!g || !w)
                return hull_err(e, -ENOMEM, "workspace: glob");
        int r = glob_compile(&g->pat, pattern, opts->hidden, e);
        if (r < 0)
                return r;
        g->max = opts->results_max ? opts->results_max : WS_GLOB_RESULTS_DEFAULT;
        int fd = open_beneath(root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return open_error(e, fd, ".");
        w->visit = glob_visit;
        w->data = g;
        w->e = e;
        w->entries_max = opts->entries_max ? opts->entries_max : WS_WALK_ENTRIES_DEFAULT;
        w->deadline_ns = deadline_after(opts->time_ms ? opts->time_ms : WS_GLOB_TIME_MS_DEFAULT);
        r = walk_start(w, fd, ".", glob_start(&g->pat));
        if (r < 0) {
                free_strv(g->paths, g->count);
                return r;
        }
        if (g->count > 1)
                qsort(g->paths, g->count, sizeof(*g->paths), name_cmp);
        ret->paths = g->paths;
        ret->count = g->count;
        ret->stopped = w->stopped;
        return 0;
}

void ws_glob_result_done(ws_glob_result *r) {
        if (!r)
                return;
        free_strv(r->paths, r->count);
        r->paths = NULL;
        r->count = 0;
}

/* ---- grep ---- */

typedef struct grep_ctx {
        pcre2_code *code;
        pcre2_match_context *mc;
        pcre2_match_data *md;
        pcre2_jit_stack *jit_stack;
        glob_pat *filter; /* NULL: every file */
        bool hidden;
        size_t matches_max;
        uint64_t bytes_max;
        uint64_t deadline_ns;
        size_t cap;
        ws_grep_result res;
        hull_error *e;
        char chunk[WS_IO_CHUNK];
        char line[WS_GREP_LINE_MAX];
} grep_ctx;

static void grep_ctx_free(grep_ctx *c) {
        if (!c)
                return;
        pcre2_match_data_free(c->md);
        pcre2_match_context_free(c->mc);
        pcre2_jit_stack_free(c->jit_stack);
        pcre2_code_free(c->code);
        free(c->filter);
        ws_grep_result_done(&c->res);
        free(c);
}

static void grep_ctx_freep(grep_ctx **c) {
        grep_ctx_free(*c);
}

static bool grep_time_up(grep_ctx *c) {
        if (now_ns() < c->deadline_ns)
                return false;
        c->res.stopped |= WS_STOP_TIME;
        return true;
}

/* Find the first match in a line, trying WS_GREP_START_CHUNK start positions per pcre2_match()
 * call (the offset limit) so that the clock is read between chunks: PCRE2's match limit applies
 * per start position, so one call over a whole line could cost line length x match limit.
 * Returns 1 (match at *ret_off), 0 (none, or a limit hit) or WALK_STOP (out of time). */
static int grep_line(grep_ctx *c, const char *line, size_t len, size_t *ret_off) {
        size_t start = 0;
        for (;;) {
                pcre2_set_offset_limit(c->mc, start + WS_GREP_START_CHUNK - 1);
                int rc = pcre2_match(c->code, (PCRE2_SPTR) line, len, start, 0, c->md, c->mc);
                if (rc >= 0) {
                        *ret_off = pcre2_get_ovector_pointer(c->md)[0];
                        return 1;
                }
                if (rc == PCRE2_ERROR_NOMATCH) {
                        start += WS_GREP_START_CHUNK;
                        if (start > len)
                                return 0;
                        while (start < len && ((unsigned char) line[start] & 0xc0) == 0x80)
                                start++;
                        if (grep_time_up(c))
                                return WALK_STOP;
                        continue;
                }
                if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
                    rc == PCRE2_ERROR_JIT_STACKLIMIT || rc == PCRE2_ERROR_NOMEMORY) {
                        c->res.lines_limited++;
                        c->res.stopped |= WS_STOP_MATCH_LIMIT;
                }
                return 0;
        }
}

static int grep_add(grep_ctx *c, const char *path, uint64_t lineno, const char *line, size_t len, size_t off) {
        if (c->res.count == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 16;
                ws_grep_match *v = realloc(c->res.matches, cap * sizeof(*v));
                if (!v)
                        return hull_err(c->e, -ENOMEM, "workspace: grep");
                c->res.matches = v;
                c->cap = cap;
        }
        size_t from = 0, n = len;
        bool cut = false;
        if (len > WS_GREP_TEXT_MAX) { /* a window around the match, on character boundaries */
                cut = true;
                from = off > WS_GREP_TEXT_MAX / 4 ? off - WS_GREP_TEXT_MAX / 4 : 0;
                from = MIN(from, len - WS_GREP_TEXT_MAX);
                while (from < len && ((unsigned char) line[from] & 0xc0) == 0x80)
                        from++;
                n = MIN((size_t) WS_GREP_TEXT_MAX, len - from);
                while (n > 0 && from + n < len && ((unsigned char) line[from + n] & 0xc0) == 0x80)
                        n--;
        }
        ws_grep_match *m = &c->res.matches[c->res.count];
        m->path = strdup(path);
        m->text = malloc(n + 1);
        if (!m->path || !m->text) {
                free(m->path);
                free(m->text);
                return hull_err(c->e, -ENOMEM, "workspace: grep");
        }
        memcpy(m->text, line + from, n);
        m->text[n] = '\0';
        m->text_len = n;
        m->text_cut = cut;
        m->line = lineno;
        m->column = off + 1;
        c->res.count++;
        return 0;
}

static int grep_process_line(grep_ctx *c, const char *path, uint64_t lineno, size_t len, bool long_line) {
        size_t off;
        if (long_line)
                c->res.lines_long++;
        else if (len > 0 && c->line[len - 1] == '\r')
                len--;
        int r = grep_line(c, c->line, len, &off);
        if (r <= 0 || r == WALK_STOP)
                return r;
        if (c->res.count >= c->matches_max) {
                c->res.stopped |= WS_STOP_RESULTS;
                return WALK_STOP;
        }
        r = grep_add(c, path, lineno, c->line, len, off);
        if (r < 0)
                return r;
        if (c->res.count >= c->matches_max) {
                c->res.stopped |= WS_STOP_RESULTS;
                return WALK_STOP;
        }
        return 0;
}

/* Search one regular file open at fd. Returns 0, WALK_STOP or a negative errno. */
static int grep_file(grep_ctx *c, int fd, const char *path) {
        uint64_t lineno = 1;
        size_t len = 0;
        bool long_line = false, first = true, any = false;
        for (;;) {
                if (c->res.bytes_read >= c->bytes_max) {
                        c->res.stopped |= WS_STOP_BYTES;
                        return WALK_STOP;
                }
                if (grep_time_up(c))
                        return WALK_STOP;
                size_t want = (size_t) MIN((uint64_t) sizeof(c->chunk), c->bytes_max - c->res.bytes_read);
                ssize_t n = read(fd, c->chunk, want);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return 0; /* unreadable: skip the file */
                }
                if (n == 0)
                        break;
                c->res.bytes_read += (uint64_t) n;
                if (first) {
                        first = false;
                        if (memchr(c->chunk, '\0', MIN((size_t) n, (size_t) WS_GREP_BINARY_PROBE))) {
                                c->res.files_binary++;
                                return 0;
                        }
                        c->res.files_searched++;
                }
                for (const char *p = c->chunk, *end = c->chunk + n; p < end;) {
                        const char *nl = memchr(p, '\n', (size_t) (end - p));
                        size_t seg = (size_t) ((nl ? nl : end) - p), room = sizeof(c->line) - len;
                        if (seg > room)
                                long_line = true;
                        memcpy(c->line + len, p, MIN(seg, room));
                        len += MIN(seg, room);
                        any = true;
                        if (!nl)
                                break;
                        int r = grep_process_line(c, path, lineno, len, long_line);
                        if (r < 0 || r == WALK_STOP)
                                return r;
                        lineno++;
                        len = 0;
                        long_line = false;
                        any = false;
                        p = nl + 1;
                }
        }
        if (first)
                c->res.files_searched++; /* empty */
        if (any)
                return grep_process_line(c, path, lineno, len, long_line);
        return 0;
}

static int grep_visit(ws_walk *w, int dir_fd, const char *name, const struct stat *st, uint64_t state,
                      uint64_t *child) {
        grep_ctx *c = w->data;
        if (name[0] == '.' && !c->hidden)
                return WALK_NEXT;
        if (S_ISDIR(st->st_mode))
                return WALK_DESCEND;
        if (!S_ISREG(st->st_mode))
                return WALK_NEXT;
        if (c->filter && !glob_match_path(c->filter, w->path))
                return WALK_NEXT;
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        struct stat fst;
        if (fd < 0 || fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode))
                return WALK_NEXT; /* replaced meanwhile */
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
                return WALK_NEXT;
        int r = grep_file(c, fd, w->path);
        if (r == WALK_STOP)
                w->stopped |= c->res.stopped;
        return r;
}

static int grep_compile(grep_ctx *c, const char *pattern, bool ignore_case, hull_error *e) {
        size_t plen = strnlen(pattern, WS_GREP_PATTERN_MAX + 1);
        int errcode;
        PCRE2_SIZE erroff;
        if (plen > WS_GREP_PATTERN_MAX)
                return ws_fail(e, -EINVAL, "use a shorter regular expression",
                               "workspace: grep pattern is longer than %u bytes", WS_GREP_PATTERN_MAX);
        pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
        if (!cc)
                return hull_err(e, -ENOMEM, "workspace: grep");
        pcre2_set_max_pattern_length(cc, WS_GREP_PATTERN_MAX);
        pcre2_set_parens_nest_limit(cc, WS_GREP_PARENS_MAX);
        uint32_t flags = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_USE_OFFSET_LIMIT | PCRE2_NEVER_BACKSLASH_C |
                         (ignore_case ? PCRE2_CASELESS : 0);
        c->code = pcre2_compile((PCRE2_SPTR) pattern, plen, flags, &errcode, &erroff, cc);
        pcre2_compile_context_free(cc);
        if (!c->code) {
                PCRE2_UCHAR msg[256];
                if (pcre2_get_error_message(errcode, msg, sizeof(msg)) < 0)
                        snprintf((char *) msg, sizeof(msg), "error %d", errcode);
                return ws_fail(e, -EINVAL, "fix the regular expression (PCRE2 syntax)",
                               "workspace: grep pattern is invalid at offset %zu: %s", (size_t) erroff, (char *) msg);
        }
        c->mc = pcre2_match_context_create(NULL);
        c->md = pcre2_match_data_create_from_pattern(c->code, NULL);
        if (!c->mc || !c->md)
                return hull_err(e, -ENOMEM, "workspace: grep");
        pcre2_set_match_limit(c->mc, WS_GREP_MATCH_LIMIT);
        pcre2_set_depth_limit(c->mc, WS_GREP_DEPTH_LIMIT);
        pcre2_set_heap_limit(c->mc, WS_GREP_HEAP_LIMIT_KIB);
        /* JIT is a speed-up only: without it the interpreter runs under the same limits. */
        if (pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE) == 0) {
                c->jit_stack = pcre2_jit_stack_create(WS_GREP_JIT_STACK_MIN, WS_GREP_JIT_STACK_MAX, NULL);
                if (c->jit_stack)
                        pcre2_jit_stack_assign(c->mc, NULL, c->jit_stack);
        }
        return 0;
}

int ws_grep(int root_fd, const char *pattern, const ws_grep_opts *opts, ws_grep_result *ret, hull_error *e) {
        static const ws_grep_opts defaults = {0};
        char norm[WS_PATH_MAX + 1], q[SHOWN_SIZE];
        struct stat st;
        if (!opts)
                opts = &defaults;
        if (!pattern)
                return ws_fail(e, -EINVAL, "give a regular expression", "workspace: no grep pattern");
        if (opts->matches_max > WS_GREP_MATCHES_MAX || opts->bytes_max > WS_GREP_BYTES_MAX ||
            opts->time_ms > WS_WALK_TIME_MS_MAX || opts->entries_max > WS_WALK_ENTRIES_MAX)
                return ws_fail(e, -EINVAL, "use smaller limits", "workspace: a grep limit is over its maximum");
        _cleanup_(grep_ctx_freep) grep_ctx *c = calloc(1, sizeof(*c));
        _cleanup_free_ ws_walk *w = calloc(1, sizeof(*w));
        if (!c || !w)
                return hull_err(e, -ENOMEM, "workspace: grep");
        c->e = e;
        c->hidden = opts->hidden;
        c->matches_max = opts->matches_max ? opts->matches_max : WS_GREP_MATCHES_DEFAULT;
        c->bytes_max = opts->bytes_max ? opts->bytes_max : WS_GREP_BYTES_DEFAULT;
        c->deadline_ns = deadline_after(opts->time_ms ? opts->time_ms : WS_GREP_TIME_MS_DEFAULT);
        int r = grep_compile(c, pattern, opts->ignore_case, e);
        if (r < 0)
                return r;
        if (opts->glob) {
                c->filter = malloc(sizeof(*c->filter));
                if (!c->filter)
                        return hull_err(e, -ENOMEM, "workspace: grep");
                char g[WS_PATH_MAX + 1];
                bool base = !strchr(opts->glob, '/');
                int n = snprintf(g, sizeof(g), "%s%s", base ? "**/" : "", opts->glob);
                if (n < 0 || (size_t) n >= sizeof(g))
                        return ws_fail(e, -ENAMETOOLONG, NULL, "workspace: grep glob is too long");
                r = glob_compile(c->filter, g, opts->hidden, e);
                if (r < 0)
                        return r;
        }
        r = ws_path_normalize(opts->path ? opts->path : ".", opts->path ? strnlen(opts->path, WS_PATH_MAX + 1) : 1,
                              norm, sizeof(norm), e);
        if (r < 0)
                return r;
        int fd = ws_open(root_fd, norm, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW, 0, e);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                safe_close(fd);
                return hull_err(e, r, "workspace: cannot stat '%s'", shows(norm, q));
        }
        if (S_ISREG(st.st_mode)) {
                int fl = fcntl(fd, F_GETFL);
                r = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? negative_errno() : grep_file(c, fd, norm);
                safe_close(fd);
                if (r < 0)
                        return hull_err(e, r, "workspace: cannot search '%s'", shows(norm, q));
        } else if (S_ISDIR(st.st_mode)) {
                w->visit = grep_visit;
                w->data = c;
                w->e = e;
                w->entries_max = opts->entries_max ? opts->entries_max : WS_WALK_ENTRIES_DEFAULT;
                w->deadline_ns = c->deadline_ns;
                r = walk_start(w, fd, norm, 0);
                if (r < 0)
                        return r;
                c->res.stopped |= w->stopped;
        } else {
                safe_close(fd);
                return ws_fail(e, -EINVAL, "search a regular file or a directory", "workspace: '%s' is a %s",
                               shows(norm, q), type_name(st.st_mode));
        }
        *ret = c->res;
        memset(&c->res, 0, sizeof(c->res));
        return 0;
}

void ws_grep_result_done(ws_grep_result *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->count; i++) {
                free(r->matches[i].path);
                free(r->matches[i].text);
        }
        free(r->matches);
        r->matches = NULL;
        r->count = 0;
}

/* ---- persist ---- */

static void archive_write_freep(struct archive **a) {
        if (*a)
                archive_write_free(*a);
}

static void archive_read_freep(struct archive **a) {
        if (*a)
                archive_read_free(*a);
}

static void archive_entry_freep(struct archive_entry **en) {
        if (*en)
                archive_entry_free(*en);
}

typedef struct tar_sink {
        int fd;       /* -1: into mem */
        dynbuf mem;   /* the archive when fd is -1; its maximum is max */
        uint64_t len; /* bytes written */
        uint64_t max;
        bool over; /* the cap was hit */
        int err;   /* the write error, negative */
} tar_sink;

static void tar_sink_done(tar_sink *s) {
        dynbuf_free(&s->mem);
}

static la_ssize_t tar_sink_write(struct archive *a, void *data, const void *buf, size_t n) {
        tar_sink *s = data;
        if (n > s->max || s->len > s->max - n) {
                s->over = true;
                archive_set_error(a, EFBIG, "archive over its size cap");
                return -1;
        }
        if (s->fd >= 0) {
                int r = write_all(s->fd, buf, n);
                if (r < 0) {
                        s->err = r;
                        archive_set_error(a, -r, "write failed");
                        return -1;
                }
        } else if (dynbuf_add(&s->mem, buf, n) < 0) {
                s->err = -ENOMEM;
                archive_set_error(a, ENOMEM, "out of memory");
                return -1;
        }
        s->len += n;
        return (la_ssize_t) n;
}

typedef struct persist_ctx {
        struct archive *a;
        struct archive_entry *entry;
        tar_sink *sink;
        ws_tar_stats stats;
        hull_error *e;
        char chunk[WS_IO_CHUNK];
        char target[WS_PATH_MAX + 2];
} persist_ctx;

static int persist_error(persist_ctx *p, const char *path) {
        char q[SHOWN_SIZE];
        if (p->sink->over)
                return ws_fail(p->e, -EFBIG, "remove large files from the workspace or raise the cap",
                               "workspace: persist: the archive grew over %llu bytes at '%s'",
                               (unsigned long long) p->sink->max, shows(path, q));
        if (p->sink->err < 0)
                return hull_err(p->e, p->sink->err, "workspace: persist: cannot write the archive");
        return hull_err(p->e, -EIO, "workspace: persist: cannot archive '%s' (%s)", shows(path, q),
                        archive_error_string(p->a) ? archive_error_string(p->a) : "libarchive error");
}

static int persist_header(persist_ctx *p, const char *path) {
        int r = archive_write_header(p->a, p->entry);
        return r >= ARCHIVE_WARN ? 0 : persist_error(p, path);
}

static int persist_file(persist_ctx *p, int dir_fd, const char *name, const char *path) {
        char q[SHOWN_SIZE];
        struct stat st;
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                p->stats.skipped++; /* replaced meanwhile */
                return 0;
        }
        uint64_t size = (uint64_t) st.st_size;
        /* fail early on a file that cannot fit; the sink enforces the exact cap */
        if (size > p->sink->max - p->sink->len)
                return ws_fail(p->e, -EFBIG, "remove large files from the workspace or raise the cap",
                               "workspace: persist: '%s' (%llu bytes) does not fit in the archive cap of %llu bytes",
                               shows(path, q), (unsigned long long) size, (unsigned long long) p->sink->max);
        archive_entry_set_filetype(p->entry, AE_IFREG);
        archive_entry_set_perm(p->entry, st.st_mode & 0777);
        archive_entry_set_size(p->entry, (la_int64_t) size);
        archive_entry_set_mtime(p->entry, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        int r = persist_header(p, path);
        if (r < 0)
                return r;
        /* Copy exactly the size in the header: a file that grows is cut, one that shrinks is
         * padded with zeros by libarchive when the entry is finished. */
        for (uint64_t done = 0; done < size;) {
                ssize_t n = pread_full(fd, p->chunk, (size_t) MIN((uint64_t) sizeof(p->chunk), size - done), done);
                if (n < 0)
                        return hull_err(p->e, (int) n, "workspace: persist: cannot read '%s'", shows(path, q));
                if (n == 0)
                        break;
                if (archive_write_data(p->a, p->chunk, (size_t) n) < 0)
                        return persist_error(p, path);
                done += (uint64_t) n;
        }
        if (archive_write_finish_entry(p->a) < ARCHIVE_WARN)
                return persist_error(p, path);
        p->stats.files++;
        p->stats.bytes += size;
        return 0;
}

static int persist_visit(ws_walk *w, int dir_fd, const char *name, const struct stat *st, uint64_t state,
                         uint64_t *child) {
        persist_ctx *p = w->data;
        char q[SHOWN_SIZE];
        archive_entry_clear(p->entry);
        archive_entry_copy_pathname(p->entry, w->path);
        archive_entry_set_uid(p->entry, 0);
        archive_entry_set_gid(p->entry, 0);
        if (S_ISREG(st->st_mode))
                return persist_file(p, dir_fd, name, w->path);
        if (S_ISDIR(st->st_mode)) {
                archive_entry_set_filetype(p->entry, AE_IFDIR);
                archive_entry_set_perm(p->entry, st->st_mode & 0777);
                archive_entry_set_mtime(p->entry, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
                int r = persist_header(p, w->path);
                if (r < 0)
                        return r;
                p->stats.dirs++;
                return WALK_DESCEND;
        }
        if (S_ISLNK(st->st_mode)) {
                ssize_t n = readlinkat(dir_fd, name, p->target, sizeof(p->target));
                if (n < 0) {
                        if (errno == ENOENT || errno == EINVAL) {
                                p->stats.skipped++; /* replaced meanwhile */
                                return WALK_NEXT;
                        }
                        return hull_err(p->e, negative_errno(), "workspace: persist: cannot read link '%s'",
                                        shows(w->path, q));
                }
                if ((size_t) n > WS_PATH_MAX || n == 0)
                        return ws_fail(p->e, -ENAMETOOLONG, "shorten the link",
                                       "workspace: persist: link '%s' has a target of %zd bytes", shows(w->path, q), n);
                p->target[n] = '\0';
                archive_entry_set_filetype(p->entry, AE_IFLNK);
                archive_entry_set_perm(p->entry, 0777);
                archive_entry_copy_symlink(p->entry, p->target);
                archive_entry_set_mtime(p->entry, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
                int r = persist_header(p, w->path);
                if (r < 0)
                        return r;
                p->stats.symlinks++;
                return WALK_NEXT;
        }
        p->stats.skipped++; /* sockets, FIFOs, devices */
        return WALK_NEXT;
}

static int persist(int root_fd, tar_sink *sink, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e) {
        static const ws_tar_limits defaults = {0};
        if (!lim)
                lim = &defaults;
        if (lim->bytes_max > WS_TAR_BYTES_MAX || lim->entries_max > WS_TAR_ENTRIES_MAX)
                return ws_fail(e, -EINVAL, "use smaller limits", "workspace: a persist limit is over its maximum");
        sink->max = lim->bytes_max ? lim->bytes_max : WS_TAR_BYTES_DEFAULT;
        dynbuf_init(&sink->mem, (size_t) sink->max);
        if (!ws_archive_load(e))
                return -ENOSYS;
        _cleanup_free_ persist_ctx *p = calloc(1, sizeof(*p));
        _cleanup_free_ ws_walk *w = calloc(1, sizeof(*w));
        _cleanup_(archive_write_freep) struct archive *a = archive_write_new();
        _cleanup_(archive_entry_freep) struct archive_entry *entry = archive_entry_new();
        if (!p || !w || !a || !entry)
                return hull_err(e, -ENOMEM, "workspace: persist");
        /* A name the locale cannot convert to UTF-8 is stored as its bytes (libarchive marks
         * that entry hdrcharset=BINARY and warns; a warning is not a failure here). */
        if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
            archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
            archive_write_open(a, sink, NULL, tar_sink_write, NULL) != ARCHIVE_OK)
                return hull_err(e, -EIO, "workspace: persist: cannot start the archive (%s)",
                                archive_error_string(a) ? archive_error_string(a) : "libarchive error");
        p->a = a;
        p->entry = entry;
        p->sink = sink;
        p->e = e;
        int fd = open_beneath(root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return open_error(e, fd, ".");
        w->visit = persist_visit;
        w->data = p;
        w->e = e;
        w->strict = true;
        w->entries_max = lim->entries_max ? lim->entries_max : WS_TAR_ENTRIES_DEFAULT;
        int r = walk_start(w, fd, ".", 0);
        if (r < 0)
                return r;
        if (archive_write_close(a) != ARCHIVE_OK)
                return persist_error(p, ".");
        p->stats.skipped += w->mounts;
        if (ret_stats)
                *ret_stats = p->stats;
        return 0;
}

int ws_persist_fd(int root_fd, int out_fd, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e) {
        tar_sink sink = {.fd = out_fd};
        if (out_fd < 0)
                return ws_fail(e, -EBADF, NULL, "workspace: persist: no output");
        return persist(root_fd, &sink, lim, ret_stats, e);
}

int ws_persist_mem(int root_fd, const ws_tar_limits *lim, void **ret_buf, size_t *ret_len, ws_tar_stats *ret_stats,
                   hull_error *e) {
        _cleanup_(tar_sink_done) tar_sink sink = {.fd = -1};
        int r = persist(root_fd, &sink, lim, ret_stats, e);
        if (r < 0)
                return r;
        void *p = dynbuf_take(&sink.mem, ret_len);
        if (!p)
                return hull_err(e, -ENOMEM, "workspace: persist");
        *ret_buf = p;
        return 0;
}

/* ---- hydrate ---- */

typedef struct hydrate_ctx {
        struct archive *a;
        int root_fd;
        ws_owner owner;
        uint64_t bytes_max, file_bytes_max, entries_max;
        uint64_t declared; /* sum of declared file sizes */
        ws_tar_stats stats;
        hull_error *e;
        char norm[WS_PATH_MAX + 1];
        char target[WS_PATH_MAX + 1];
} hydrate_ctx;

/* Re-word a refusal of the jail for an archive entry. */
static int entry_refused(hydrate_ctx *h, int r, hull_error *inner) {
        const char *msg = inner->msg;
        if (strncmp(msg, "workspace: ", 11) == 0)
                msg += 11;
        return ws_fail(h->e, r, NULL, "workspace: hydrate refused an entry: %s", msg);
}

static int hydrate_dir(hydrate_ctx *h, struct archive_entry *en) {
        hull_error inner = {0};
        int fd = make_dirs(h->root_fd, h->norm, &h->owner, &inner);
        if (fd < 0)
                return entry_refused(h, fd, &inner);
        if (fchmod(fd, (archive_entry_perm(en) & 0777) | 0700) < 0) {
                /* best effort: the directory exists, which is what matters */
        }
        safe_close(fd);
        h->stats.dirs++;
        return 0;
}

static int hydrate_exists(hydrate_ctx *h) {
        char q[SHOWN_SIZE];
        return ws_fail(h->e, -EEXIST, "hydrate into an empty workspace; existing files are never replaced",
                       "workspace: hydrate: '%s' already exists", shows(h->norm, q));
}

static int hydrate_file(hydrate_ctx *h, struct archive_entry *en) {
        char q[SHOWN_SIZE];
        hull_error inner = {0};
        const char *name;
        la_int64_t declared = archive_entry_size(en);
        if (declared < 0)
                return ws_fail(h->e, -EINVAL, NULL, "workspace: hydrate: entry '%s' has a negative size",
                               shows(h->norm, q));
        uint64_t size = (uint64_t) declared;
        if (size > h->file_bytes_max)
                return ws_fail(h->e, -EFBIG, "leave large files out of the archive",
                               "workspace: hydrate: entry '%s' declares %llu bytes, over the per-file cap of %llu",
                               shows(h->norm, q), (unsigned long long) size, (unsigned long long) h->file_bytes_max);
        if (size > h->bytes_max - h->declared)
                return ws_fail(h->e, -EFBIG, "leave large files out of the archive",
                               "workspace: hydrate: the files reach more than %llu bytes at entry '%s'",
                               (unsigned long long) h->bytes_max, shows(h->norm, q));
        h->declared += size;
        _cleanup_close_ int dfd = open_parent(h->root_fd, h->norm, true, &h->owner, &name, &inner);
        if (dfd < 0)
                return entry_refused(h, dfd, &inner);
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                if (errno == EEXIST)
                        return hydrate_exists(h);
                return hull_err(h->e, negative_errno(), "workspace: hydrate: cannot create '%s'", shows(h->norm, q));
        }
        int r = 0;
        for (;;) {
                const void *buf;
                size_t n;
                la_int64_t off;
                int ar = archive_read_data_block(h->a, &buf, &n, &off);
                if (ar == ARCHIVE_EOF)
                        break;
                if (ar < ARCHIVE_WARN) {
                        r = ws_fail(h->e, -EINVAL, "pass a tar made by persist",
                                    "workspace: hydrate: the data of '%s' is damaged (%s)", shows(h->norm, q),
                                    archive_error_string(h->a) ? archive_error_string(h->a) : "libarchive error");
                        break;
                }
                if (off < 0 || (uint64_t) off > size || n > size - (uint64_t) off) {
                        r = ws_fail(h->e, -EFBIG, NULL,
                                    "workspace: hydrate: entry '%s' holds more data than it declares",
                                    shows(h->norm, q));
                        break;
                }
                r = pwrite_all(fd, buf, n, (off_t) off);
                if (r < 0) {
                        r = hull_err(h->e, r, "workspace: hydrate: cannot write '%s'", shows(h->norm, q));
                        break;
                }
                h->stats.bytes += n;
        }
        if (r == 0 && ftruncate(fd, (off_t) size) < 0) /* a sparse tail */
                r = hull_err(h->e, negative_errno(), "workspace: hydrate: cannot write '%s'", shows(h->norm, q));
        if (r < 0) {
                (void) unlinkat(dfd, name, 0);
                return r;
        }
        if (fchmod(fd, (archive_entry_perm(en) & 0777) | 0600) < 0) {
                /* best effort */
        }
        give_fd(&h->owner, fd);
        if (archive_entry_mtime_is_set(en)) {
                struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
                                         {.tv_sec = archive_entry_mtime(en), .tv_nsec = archive_entry_mtime_nsec(en)}};
                if (futimens(fd, ts) < 0) {
                        /* best effort */
                }
        }
        h->stats.files++;
        return 0;
}

static int hydrate_symlink(hydrate_ctx *h, struct archive_entry *en) {
        char q[SHOWN_SIZE];
        hull_error inner = {0};
        const char *name, *target = archive_entry_symlink(en);
        if (!target || !*target)
                return ws_fail(h->e, -EINVAL, NULL, "workspace: hydrate: link '%s' has no target", shows(h->norm, q));
        if (strlen(target) > WS_PATH_MAX)
                return ws_fail(h->e, -ENAMETOOLONG, NULL, "workspace: hydrate: link '%s' has a target over %u bytes",
                               shows(h->norm, q), WS_PATH_MAX);
        _cleanup_close_ int dfd = open_parent(h->root_fd, h->norm, true, &h->owner, &name, &inner);
        if (dfd < 0)
                return entry_refused(h, dfd, &inner);
        if (symlinkat(target, dfd, name) < 0) {
                if (errno == EEXIST)
                        return hydrate_exists(h);
                return hull_err(h->e, negative_errno(), "workspace: hydrate: cannot create link '%s'",
                                shows(h->norm, q));
        }
        if (h->owner.give && fchownat(dfd, name, h->owner.uid, h->owner.gid, AT_SYMLINK_NOFOLLOW) < 0) {
                /* best effort */
        }
        h->stats.symlinks++;
        return 0;
}

/* A hard link names a regular file already extracted; its data, if any, is ignored (it would
 * only overwrite that file). */
static int hydrate_hardlink(hydrate_ctx *h, const char *link_target) {
        char q[SHOWN_SIZE], q2[SHOWN_SIZE];
        hull_error inner = {0};
        const char *name, *tname;
        struct stat tst, st;
        int r = ws_path_normalize(link_target, strlen(link_target), h->target, sizeof(h->target), &inner);
        if (r < 0)
                return ws_fail(h->e, r, NULL, "workspace: hydrate refused hard link '%s': %s", shows(h->norm, q),
                               strncmp(inner.msg, "workspace: ", 11) == 0 ? inner.msg + 11 : inner.msg);
        if (strcmp(h->target, ".") == 0)
                return ws_fail(h->e, -EPERM, NULL, "workspace: hydrate refused hard link '%s' to the root",
                               shows(h->norm, q));
        _cleanup_close_ int tdfd = open_parent(h->root_fd, h->target, false, NULL, &tname, &inner);
        if (tdfd < 0)
                return entry_refused(h, tdfd, &inner);
        if (fstatat(tdfd, tname, &tst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(tst.st_mode))
                return ws_fail(h->e, -EPERM, "a hard link must follow the regular file it names",
                               "workspace: hydrate refused hard link '%s': '%s' is not a regular file in the workspace",
                               shows(h->norm, q), shows(h->target, q2));
        _cleanup_close_ int dfd = open_parent(h->root_fd, h->norm, true, &h->owner, &name, &inner);
        if (dfd < 0)
                return entry_refused(h, dfd, &inner);
        if (linkat(tdfd, tname, dfd, name, 0) < 0) {
                if (errno == EEXIST)
                        return hydrate_exists(h);
                return hull_err(h->e, negative_errno(), "workspace: hydrate: cannot link '%s'", shows(h->norm, q));
        }
        /* The name could have been swapped between the check and the link: verify what we linked. */
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) || st.st_ino != tst.st_ino ||
            st.st_dev != tst.st_dev) {
                (void) unlinkat(dfd, name, 0);
                return ws_fail(h->e, -EPERM, NULL, "workspace: hydrate: '%s' changed while it was linked",
                               shows(h->target, q));
        }
        h->stats.hardlinks++;
        return 0;
}

static const char *entry_type_name(unsigned type) {
        switch (type) {
        case AE_IFCHR:
                return "character device";
        case AE_IFBLK:
                return "block device";
        case AE_IFIFO:
                return "FIFO";
        case AE_IFSOCK:
                return "socket";
        default:
                return "entry of unknown type";
        }
}

static int hydrate_entry(hydrate_ctx *h, struct archive_entry *en) {
        char q[SHOWN_SIZE];
        hull_error inner = {0};
        const char *path = archive_entry_pathname(en);
        if (!path)
                return ws_fail(h->e, -EINVAL, "pass a tar made by persist",
                               "workspace: hydrate: entry %llu has no usable name",
                               (unsigned long long) h->stats.files + h->stats.dirs + h->stats.symlinks + 1);
        int r = ws_path_normalize(path, strlen(path), h->norm, sizeof(h->norm), &inner);
        if (r < 0)
                return entry_refused(h, r, &inner);
        unsigned type = archive_entry_filetype(en);
        const char *hl = archive_entry_hardlink(en);
        if (strcmp(h->norm, ".") == 0) {
                if (type == AE_IFDIR && !hl)
                        return 0; /* "./": the root itself */
                return ws_fail(h->e, -EPERM, NULL, "workspace: hydrate refused an entry naming the root as a %s",
                               hl ? "hard link" : type_name(type));
        }
        if (hl)
                return hydrate_hardlink(h, hl);
        switch (type) {
        case AE_IFREG:
                return hydrate_file(h, en);
        case AE_IFDIR:
                return hydrate_dir(h, en);
        case AE_IFLNK:
                return hydrate_symlink(h, en);
        default:
                return ws_fail(h->e, -EPERM, "workspace archives may hold only files, directories and links",
                               "workspace: hydrate refused '%s': a %s", shows(h->norm, q), entry_type_name(type));
        }
}

static int hydrate(int root_fd, struct archive *a, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e) {
        static const ws_tar_limits defaults = {0};
        if (!lim)
                lim = &defaults;
        if (lim->bytes_max > WS_TAR_BYTES_MAX || lim->file_bytes_max > WS_TAR_BYTES_MAX ||
            lim->entries_max > WS_TAR_ENTRIES_MAX)
                return ws_fail(e, -EINVAL, "use smaller limits", "workspace: a hydrate limit is over its maximum");
        _cleanup_free_ hydrate_ctx *h = calloc(1, sizeof(*h));
        if (!h)
                return hull_err(e, -ENOMEM, "workspace: hydrate");
        h->a = a;
        h->root_fd = root_fd;
        h->e = e;
        h->bytes_max = lim->bytes_max ? lim->bytes_max : WS_TAR_BYTES_DEFAULT;
        h->file_bytes_max = lim->file_bytes_max ? lim->file_bytes_max : WS_TAR_FILE_BYTES_DEFAULT;
        h->entries_max = lim->entries_max ? lim->entries_max : WS_TAR_ENTRIES_DEFAULT;
        owner_of(root_fd, &h->owner);
        for (uint64_t n = 0;;) {
                struct archive_entry *en;
                int ar = archive_read_next_header(a, &en);
                if (ar == ARCHIVE_EOF)
                        break;
                if (ar < ARCHIVE_WARN)
                        return ws_fail(e, -EINVAL, "pass a tar made by persist",
                                       "workspace: hydrate: the archive is damaged after %llu entries (%s)",
                                       (unsigned long long) n,
                                       archive_error_string(a) ? archive_error_string(a) : "libarchive error");
                if (++n > h->entries_max)
                        return ws_fail(e, -E2BIG, "archive fewer files",
                                       "workspace: hydrate: the archive has more than %llu entries",
                                       (unsigned long long) h->entries_max);
                int r = hydrate_entry(h, en);
                if (r < 0)
                        return r;
        }
        if (ret_stats)
                *ret_stats = h->stats;
        return 0;
}

static int hydrate_reader(struct archive **ret, hull_error *e) {
        if (!ws_archive_load(e))
                return -ENOSYS;
        struct archive *a = archive_read_new();
        if (!a)
                return hull_err(e, -ENOMEM, "workspace: hydrate");
        if (archive_read_support_format_tar(a) != ARCHIVE_OK) {
                int r = hull_err(e, -EIO, "workspace: hydrate: no tar support in libarchive (%s)",
                                 archive_error_string(a) ? archive_error_string(a) : "unknown");
                archive_read_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

static int hydrate_open_failed(struct archive *a, hull_error *e) {
        return ws_fail(e, -EINVAL, "pass a tar made by persist", "workspace: hydrate: not a tar archive (%s)",
                       archive_error_string(a) ? archive_error_string(a) : "libarchive error");
}

int ws_hydrate_fd(int root_fd, int in_fd, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e) {
        _cleanup_(archive_read_freep) struct archive *a = NULL;
        int r = hydrate_reader(&a, e);
        if (r < 0)
                return r;
        if (archive_read_open_fd(a, in_fd, WS_IO_CHUNK) != ARCHIVE_OK)
                return hydrate_open_failed(a, e);
        return hydrate(root_fd, a, lim, ret_stats, e);
}

int ws_hydrate_mem(int root_fd, const void *buf, size_t len, const ws_tar_limits *lim, ws_tar_stats *ret_stats,
                   hull_error *e) {
        _cleanup_(archive_read_freep) struct archive *a = NULL;
        int r = hydrate_reader(&a, e);
        if (r < 0)
                return r;
        if (archive_read_open_memory(a, buf, len) != ARCHIVE_OK)
                return hydrate_open_failed(a, e);
        return hydrate(root_fd, a, lim, ret_stats, e);
}
