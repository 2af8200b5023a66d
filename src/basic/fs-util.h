/* fs-util.h: directory helpers that never follow symbolic links. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read up to len bytes, retrying short reads and EINTR, stopping early only at end of file.
 * Async-signal-safe. Returns the count or a negative errno. */
ssize_t loop_read(int fd, void *buf, size_t len);

/* loop_read at offset off (pread: the file offset does not move). */
ssize_t loop_pread(int fd, void *buf, size_t len, uint64_t off);

/* Write all len bytes, retrying short writes and EINTR. Returns 0 or a negative errno. */
int loop_write(int fd, const void *buf, size_t len);

/* Write value (no newline added) to an existing file, e.g. a cgroup or /proc control file.
 * Returns 0 or a negative errno (-EIO on a short write). */
int write_string_file(const char *path, const char *value);

/* Remove the directory tree `name` under dirfd (AT_FDCWD for the cwd), never following a
 * symbolic link and never leaving the tree: links are unlinked, not traversed. Directories the
 * owner locked (mode 000) are opened up first. Returns 0 or the first negative errno. */
int rm_rf_at(int dirfd, const char *name);

/* DIR/NAME into buf (size bytes). Returns 0, or -ENAMETOOLONG when it does not fit (buf then
 * holds a cut string that must not be used). */
int path_join(char *buf, size_t size, const char *dir, const char *name);
