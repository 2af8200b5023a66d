/* hd-dir.c: file access below a store's directory, shared by the store and the table code
 * (hd-internal.h): openat2 beneath it, and the path SQLite opens. */
#include "hd-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int hd_openat(int dir_fd, const char *name, int flags, mode_t mode) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC),
                .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        for (unsigned i = 0; i < 16; i++) {
                long fd = syscall(SYS_openat2, dir_fd, name, &how, sizeof(how));
                if (fd >= 0)
                        return (int) fd;
                if (errno != EAGAIN && errno != EINTR)
                        return -errno;
        }
        return -EAGAIN;
}

int hd_sqlite_path(int dir_fd, const char *name, char *buf, size_t size) {
        int n = snprintf(buf, size, "/proc/self/fd/%d/%s", dir_fd, name);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}
