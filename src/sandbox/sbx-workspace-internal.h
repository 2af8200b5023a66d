/* sbx-workspace-internal.h: what the workspace's three files share and the API (sbx-workspace.h)
 * does not show: messages, the jail's open, the write helpers (sbx-workspace.c), and the bounded
 * walk of a tree (sbx-workspace-search.c) that glob, grep and persist (sbx-workspace-tar.c) use.
 * The conventions are sbx-workspace.h's: negative errno, *e filled (may be NULL). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"
#include "macro.h"

#define SHOWN_SIZE (WS_PATH_SHOWN_MAX + 4)
#define TEMP_NAME_SIZE 32

/* ---- messages (sbx-workspace.c) ---- */

/* A refusal whose reason the message states itself: no strerror() appended; hint may be NULL.
 * Returns err. */
int ws_fail(hull_error *e, int err, const char *hint, const char *fmt, ...) _printf_(4, 5);

/* A printable, bounded copy of the path p for a message (control bytes become '?'), in buf. */
const char *ws_shows(const char *p, char buf[SHOWN_SIZE]);

/* "regular file", "directory", "symbolic link", ... */
const char *ws_type_name(mode_t m);

/* ---- the jail and files (sbx-workspace.c) ---- */

/* openat2 below dir_fd with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
 * O_CLOEXEC added, retried when a concurrent rename made the kernel give up. No message: the fd
 * or a negative errno (ws_open_error() words it). */
int ws_open_beneath(int dir_fd, const char *path, int flags, mode_t mode);

/* *e for ws_open_beneath()'s error r on path. Returns r. */
int ws_open_error(hull_error *e, int r, const char *path);

/* Who new files belong to: the workspace root's owner, so the sandbox user can change them. */
typedef struct ws_owner {
        uid_t uid;
        gid_t gid;
        bool give; /* the process is not that owner (chown is tried, EPERM ignored) */
} ws_owner;

void ws_owner_of(int fd, ws_owner *o);
/* chown fd to o when the process is not its owner; best effort. o may be NULL. */
void ws_give_fd(const ws_owner *o, int fd);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t ws_now_ns(void);

/* write, pwrite and pread in WS_IO_CHUNK pieces, through EINTR. ws_pread_full returns the count,
 * short only at the end of the file. */
int ws_write_all(int fd, const void *buf, size_t len);
int ws_pwrite_all(int fd, const void *buf, size_t len, off_t off);
ssize_t ws_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* Open (creating, mode 0755 and owner o) the directory rel, a normalized path, one component at a
 * time, none of them a link. Returns its fd. */
int ws_make_dirs(int root_fd, const char *rel, const ws_owner *o, hull_error *e);

/* Open the directory holding the normalized path norm (not "."; created when mkdirs) and point
 * *ret_name at the last component inside norm. Returns its fd. */
int ws_open_parent(int root_fd, char *norm, bool mkdirs, const ws_owner *o, const char **ret_name, hull_error *e);

/* ---- walking a tree (sbx-workspace-search.c) ---- */

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

/* Walk the tree below the directory open at fd (consumed), whose relative path is prefix: every
 * entry in sorted order, calling w->visit; never through a link, never into another filesystem
 * (counted in w->mounts); w->entries_max, WS_PATH_DEPTH_MAX, WS_PATH_MAX and w->deadline_ns
 * stop it (w->stopped), or fail it when w->strict. Returns 0 or a negative errno. */
int ws_walk_start(ws_walk *w, int fd, const char *prefix, uint64_t state);
