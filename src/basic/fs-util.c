/* fs-util.c: link-safe recursive removal. */
#include "fs-util.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "limits.h"
#include "macro.h"

static ssize_t loop_io(int fd, void *buf, size_t len, bool at, uint64_t off) {
        size_t done = 0;
        while (done < len) {
                ssize_t n = at ? pread(fd, (char *) buf + done, len - done, (off_t) (off + done))
                               : read(fd, (char *) buf + done, len - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                done += (size_t) n;
        }
        return (ssize_t) done;
}

ssize_t loop_read(int fd, void *buf, size_t len) {
        return loop_io(fd, buf, len, false, 0);
}

ssize_t loop_pread(int fd, void *buf, size_t len, uint64_t off) {
        return loop_io(fd, buf, len, true, off);
}

int write_string_file(const char *path, const char *value) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        size_t len = strlen(value);
        ssize_t n = write(fd, value, len);
        if (n < 0)
                return negative_errno();
        return (size_t) n == len ? 0 : -EIO;
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

/* Empty the directory open at fd (consumed). */
static int rm_contents(int fd, unsigned depth) {
        _cleanup_(closedirp) DIR *d = fdopendir(fd);
        int first = 0;
        if (!d) {
                int r = negative_errno();
                safe_close(fd);
                return r;
        }
        if (depth > FS_RM_DEPTH_MAX)
                return -ELOOP;
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno && !first)
                                first = negative_errno();
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                int dfd = dirfd(d);
                struct stat st;
                if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno != ENOENT && !first)
                                first = negative_errno();
                        continue;
                }
                if (S_ISDIR(st.st_mode)) {
                        int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0 && errno == EACCES && fchmodat(dfd, de->d_name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
                                sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0) {
                                if (!first)
                                        first = negative_errno();
                                continue;
                        }
                        if ((st.st_mode & 0700) != 0700)
                                (void) fchmod(sub, 0700);
                        int r = rm_contents(sub, depth + 1);
                        if (r < 0 && !first)
                                first = r;
                        if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) < 0 && !first)
                                first = negative_errno();
                } else if (unlinkat(dfd, de->d_name, 0) < 0 && errno != ENOENT && !first)
                        first = negative_errno();
        }
        return first;
}

int rm_rf_at(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOTDIR || errno == ELOOP)
                        return unlinkat(dirfd, name, 0) < 0 ? negative_errno() : 0;
                return negative_errno();
        }
        int r = rm_contents(fd, 0);
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && r == 0)
                r = negative_errno();
        return r;
}

int loop_write(int fd, const void *buf, size_t len) {
        const char *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

int path_join(char *buf, size_t size, const char *dir, const char *name) {
        int n = snprintf(buf, size, "%s/%s", dir, name);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}
