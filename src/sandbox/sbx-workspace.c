/* sbx-workspace.c: the path jail (a pure validator, then openat2 below the work directory, never
 * through a link) and the file operations on it: read, atomic write and edit (see
 * sbx-workspace.h); with the helpers the walks (sbx-workspace-search.c) and the tar archives
 * (sbx-workspace-tar.c) share, declared in sbx-workspace-internal.h. */
#include "sbx-workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "sbx-workspace-internal.h"

/* ---- messages ---- */

/* A refusal whose reason the message states itself: no strerror() appended. */
int ws_fail(hull_error *e, int err, const char *hint, const char *fmt, ...) {
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

const char *ws_shows(const char *p, char buf[SHOWN_SIZE]) {
        return show(p, strnlen(p, WS_PATH_SHOWN_MAX + 1), buf);
}

const char *ws_type_name(mode_t m) {
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

/* The one refusal of a path outside the workspace: it names only what was given, so it reads the
 * same whether or not anything is at that path on the host. */
static int outside(hull_error *e, const char *path, size_t len) {
        char q[SHOWN_SIZE];
        return ws_fail(e, -EPERM,
                       "use a path relative to /workspace, e.g. 'data.csv', or an absolute one under /workspace",
                       "workspace: path '%s' is outside /workspace", show(path, len, q));
}

int ws_path_resolve(const char *path, size_t len, char *ret, size_t size, hull_error *e) {
        static const char prefix[] = "/workspace";
        const size_t plen = sizeof(prefix) - 1;
        char q[SHOWN_SIZE];
        if (!path || len == 0)
                return ws_fail(e, -EINVAL, "use '.' for the workspace root", "workspace: empty path");
        if (memchr(path, '\0', len))
                return ws_fail(e, -EINVAL, "remove it", "workspace: path '%s' contains a NUL byte",
                               show(path, strnlen(path, len), q));
        if (len > WS_PATH_MAX + plen + 1)
                return ws_fail(e, -ENAMETOOLONG, "use a shorter path",
                               "workspace: path of %zu bytes is too long (at most %u)", len, WS_PATH_MAX);
        size_t blank = 0;
        while (blank < len && (path[blank] == ' ' || path[blank] == '\t' || path[blank] == '\n' || path[blank] == '\r'))
                blank++;
        if (blank == len)
                return ws_fail(e, -EINVAL, "use '.' for the workspace root", "workspace: blank path");
        /* /mnt/memory is a link to /workspace/.memory in every sandbox (a /v1 session's memory
         * stores): its paths are .memory's, and a ".." never leaves it (it would be /mnt there) */
        static const char memory[] = "/mnt/memory", memory_dir[] = ".memory";
        const size_t mlen = sizeof(memory) - 1;
        size_t i = 0, o = 0, floor = 0;
        if (size < sizeof(memory_dir))
                return ws_fail(e, -ENOBUFS, NULL, "workspace: no room to resolve a path");
        if (path[0] == '/' && len >= mlen && memcmp(path, memory, mlen) == 0 && (len == mlen || path[mlen] == '/')) {
                memcpy(ret, memory_dir, sizeof(memory_dir) - 1);
                o = floor = sizeof(memory_dir) - 1;
                i = mlen;
        } else if (path[0] == '/') {
                if (len < plen || memcmp(path, prefix, plen) != 0 || (len > plen && path[plen] != '/'))
                        return outside(e, path, len);
                i = plen;
        }
        /* Components onto a stack in ret, ".." popping one: lexical, as the jail never follows a
         * link (a link on the way is refused when the path is opened). */
        while (i < len) {
                size_t j = i;
                while (j < len && path[j] != '/')
                        j++;
                size_t n = j - i;
                if (n == 2 && path[i] == '.' && path[i + 1] == '.') {
                        if (o <= floor)
                                return outside(e, path, len);
                        while (o > 0 && ret[o - 1] != '/')
                                o--;
                        if (o > 0)
                                o--; /* the slash before the popped name */
                } else if (n > 0 && !(n == 1 && path[i] == '.')) {
                        if (o + (o > 0) + n + 1 > size)
                                return ws_fail(e, -ENOBUFS, NULL, "workspace: no room to resolve a path");
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
        /* what is left is what the jail's checker accepts (length, depth, names) */
        int r = ws_path_check(ret, o, e);
        return r < 0 ? r : 0;
}

/* openat2 below dir_fd, never through a link; retried when a concurrent rename made the kernel
 * give up (EAGAIN). Returns the fd or a negative errno. */
int ws_open_beneath(int dir_fd, const char *path, int flags, mode_t mode) {
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

int ws_open_error(hull_error *e, int r, const char *path) {
        char q[SHOWN_SIZE];
        ws_shows(path, q);
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
        int fd = ws_open_beneath(root_fd, path, flags, mode);
        if (fd < 0)
                return ws_open_error(e, fd, path);
        return fd;
}

/* ---- helpers for the operations ---- */

void ws_owner_of(int fd, ws_owner *o) {
        struct stat st;
        o->give = false;
        if (fstat(fd, &st) == 0) {
                o->uid = st.st_uid;
                o->gid = st.st_gid;
                o->give = st.st_uid != geteuid() || st.st_gid != getegid();
        }
}

void ws_give_fd(const ws_owner *o, int fd) {
        if (o && o->give && fchown(fd, o->uid, o->gid) < 0) {
                /* best effort: an unprivileged hull cannot give files away, and need not */
        }
}

uint64_t ws_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

int ws_write_all(int fd, const void *buf, size_t len) {
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

int ws_pwrite_all(int fd, const void *buf, size_t len, off_t off) {
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
ssize_t ws_pread_full(int fd, void *buf, size_t len, uint64_t off) {
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
int ws_make_dirs(int root_fd, const char *rel, const ws_owner *o, hull_error *e) {
        char buf[WS_PATH_MAX + 1], q[SHOWN_SIZE];
        _cleanup_close_ int cur = ws_open_beneath(root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
        if (cur < 0)
                return ws_open_error(e, cur, ".");
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
                        return hull_err(e, negative_errno(), "workspace: cannot create directory '%s'",
                                        ws_shows(buf, q));
                int next = ws_open_beneath(cur, p, O_RDONLY | O_DIRECTORY, 0);
                if (next < 0)
                        return ws_open_error(e, next, buf);
                if (made) {
                        if (fchmod(next, 0755) < 0) {
                                /* best effort: only the umask's narrowing is undone */
                        }
                        ws_give_fd(o, next);
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
int ws_open_parent(int root_fd, char *norm, bool mkdirs, const ws_owner *o, const char **ret_name, hull_error *e) {
        char *slash = strrchr(norm, '/');
        int fd;
        if (!slash) {
                fd = ws_open_beneath(root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
                if (fd < 0)
                        return ws_open_error(e, fd, ".");
                *ret_name = norm;
                return fd;
        }
        *slash = '\0';
        fd = mkdirs ? ws_make_dirs(root_fd, norm, o, e) : ws_open(root_fd, norm, O_RDONLY | O_DIRECTORY, 0, e);
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
                return hull_err(e, negative_errno(), "workspace: cannot stat '%s'", ws_shows(path, q));
        if (S_ISDIR(ret_st->st_mode))
                return ws_fail(e, -EISDIR, "list it with glob, e.g. 'dir/*'", "workspace: '%s' is a directory",
                               ws_shows(path, q));
        if (!S_ISREG(ret_st->st_mode))
                return ws_fail(e, -EINVAL, "only regular files can be read or edited",
                               "workspace: '%s' is a %s, not a regular file", ws_shows(path, q),
                               ws_type_name(ret_st->st_mode));
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
                return hull_err(e, negative_errno(), "workspace: cannot read '%s'", ws_shows(path, q));
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
                return hull_err(e, -ENOMEM, "workspace: cannot read '%s'", ws_shows(path, q));
        ssize_t n = want ? ws_pread_full(fd, buf, want, offset) : 0;
        if (n < 0)
                return hull_err(e, (int) n, "workspace: cannot read '%s'", ws_shows(path, q));
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

        ws_owner_of(root_fd, &o);
        if (own) {
                o.uid = own->st_uid;
                o.gid = own->st_gid;
                o.give = own->st_uid != geteuid() || own->st_gid != getegid();
        }
        _cleanup_close_ int dfd = ws_open_parent(root_fd, norm, flags & WS_WRITE_MKDIRS, &o, &name, e);
        if (dfd < 0)
                return dfd;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                return ws_fail(e, -EISDIR, "write to a file path", "workspace: '%s' is a directory", ws_shows(norm, q));
        r = temp_name(tmp);
        if (r < 0)
                return hull_err(e, r, "workspace: cannot make a temporary name for '%s'", ws_shows(norm, q));
        _cleanup_close_ int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return hull_err(e, negative_errno(), "workspace: cannot create a temporary file next to '%s'",
                                ws_shows(norm, q));
        r = ws_write_all(fd, data, len);
        if (r == 0 && fchmod(fd, mode) < 0)
                r = negative_errno();
        ws_give_fd(&o, fd);
        if (r == 0 && (flags & WS_WRITE_FSYNC) && fsync(fd) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(dfd, tmp, 0);
                return hull_err(e, r, "workspace: cannot write '%s'", ws_shows(norm, q));
        }
        if (renameat(dfd, tmp, dfd, name) < 0) {
                r = negative_errno();
                (void) unlinkat(dfd, tmp, 0);
                if (r == -EISDIR)
                        return ws_fail(e, r, "write to a file path", "workspace: '%s' is a directory",
                                       ws_shows(norm, q));
                return hull_err(e, r, "workspace: cannot replace '%s'", ws_shows(norm, q));
        }
        if ((flags & WS_WRITE_FSYNC) && fsync(dfd) < 0)
                return hull_err(e, negative_errno(), "workspace: cannot sync the directory of '%s'", ws_shows(norm, q));
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
                               "workspace: '%s' is %llu bytes, over the edit limit of %llu", ws_shows(norm, q),
                               (unsigned long long) size, (unsigned long long) WS_EDIT_MAX_BYTES);
        _cleanup_free_ char *buf = malloc(size + 1);
        if (!buf)
                return hull_err(e, -ENOMEM, "workspace: cannot edit '%s'", ws_shows(norm, q));
        ssize_t n = ws_pread_full(fd, buf, size, 0);
        if (n < 0)
                return hull_err(e, (int) n, "workspace: cannot read '%s'", ws_shows(norm, q));
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
                               "workspace: edit of '%s': the text to replace was not found", ws_shows(norm, q));
        if (count > 1)
                return ws_fail(e, -ENOTUNIQ, "include more surrounding lines so that it occurs exactly once",
                               "workspace: edit of '%s': the text to replace occurs %zu times, not once",
                               ws_shows(norm, q), count);

        size_t pre = (size_t) (first - buf), post = len - pre - old_len;
        if (new_len > WS_WRITE_MAX_BYTES || pre + post > WS_WRITE_MAX_BYTES - new_len)
                return ws_fail(e, -EFBIG, "edit it with exec instead",
                               "workspace: edit of '%s' would exceed %llu bytes", ws_shows(norm, q),
                               (unsigned long long) WS_WRITE_MAX_BYTES);
        size_t out_len = pre + new_len + post;
        _cleanup_free_ char *out = malloc(out_len + 1);
        if (!out)
                return hull_err(e, -ENOMEM, "workspace: cannot edit '%s'", ws_shows(norm, q));
        memcpy(out, buf, pre);
        if (new_len)
                memcpy(out + pre, new_text, new_len);
        memcpy(out + pre + new_len, first + old_len, post);
        return write_atomic(root_fd, norm, out, out_len, st.st_mode & 0777, &st, flags & WS_WRITE_FSYNC, e);
}
