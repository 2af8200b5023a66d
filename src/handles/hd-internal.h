/* hd-internal.h: file access below a store's directory (hd-dir.c), used by hd-store.c and the
 * table code; not part of the public API. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* openat2() below dir_fd, never through a link (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), O_CLOEXEC added. Returns the fd or a negative errno. */
int hd_openat(int dir_fd, const char *name, int flags, mode_t mode);

/* The path SQLite opens for name below dir_fd ("/proc/self/fd/N/name"). */
int hd_sqlite_path(int dir_fd, const char *name, char *buf, size_t size);
