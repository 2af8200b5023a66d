/* sbx-workspace.h: the host side of an agent's file tools (read, write, edit, glob, grep) and of
 * workspace snapshots (persist to a tar, hydrate from one), all relative to a directory fd of a
 * sandbox session's work directory.
 *
 * The work directory belongs to sandboxed code, which may change it while these functions run
 * and may fill it with symbolic links to anywhere, FIFOs, huge files and deep trees. So:
 *
 * - Every path a caller gives goes through ws_path_check() (pure: relative, no "..", no NUL,
 *   bounded length and depth) and is then opened by ws_open(), the one chokepoint: openat2()
 *   with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS.
 * - Symbolic links are never followed, in any component, not even links that point inside the
 *   workspace. RESOLVE_IN_ROOT was rejected: a link's meaning inside the sandbox (where "/" is
 *   the sandbox root and /workspace is this directory) differs from its meaning re-rooted at the
 *   workspace, so following it on the host would show the model a different file than its own
 *   code sees, and every "safe" re-rooting rule is one more thing to get wrong. A refusal is
 *   explicit (ELOOP, "goes through a symbolic link") and the model can use the target's path.
 *   Walks (glob, grep, persist) list or store links but never descend through them.
 * - Files are read only when fstat() says regular, after an O_NONBLOCK open (a FIFO never
 *   blocks). Walks never cross into another filesystem (a mount point inside the workspace).
 * - Writes go to a fresh temporary name in the target's directory (O_EXCL) and are renamed over
 *   the target, so a planted link at the target is replaced, never written through.
 * - Files and directories these functions create get the owner of the workspace root (when the
 *   process may chown), so the sandbox user can change them.
 * - Every bound is in limits.h; walks and grep stop at a budget and say so (ws_stop flags)
 *   instead of running long.
 *
 * Every function returns 0 (or a documented count) or a negative errno, and fills *e (when not
 * NULL) with one line saying what was wrong and what to do. Outputs are written only on success.
 * Nothing here keeps state between calls; all functions are thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"

/* ---- the path jail ---- */

/* Check a caller's path of len bytes (not necessarily NUL-terminated) against the workspace
 * rules: not empty ("." is the root), not absolute, no ".." component, no NUL byte, at most
 * WS_PATH_MAX bytes, WS_PATH_DEPTH_MAX components and WS_NAME_MAX bytes per component. "."
 * components, repeated and trailing slashes are allowed. Pure. Returns 0, -EINVAL (empty, NUL),
 * -EPERM (absolute, ".."), or -ENAMETOOLONG (length, depth, component). */
int ws_path_check(const char *path, size_t len, hull_error *e);

/* Write the canonical form of a checked path to ret (size bytes, NUL included): components
 * joined by single slashes, without "." components; "." for the root. Pure. Returns 0, an error
 * of ws_path_check(), or -ENOBUFS when ret is too small (WS_PATH_MAX + 1 always suffices). */
int ws_path_normalize(const char *path, size_t len, char *ret, size_t size, hull_error *e);

/* Resolve a path as a model or a user writes it (the sandbox's view) to a checked path relative
 * to the workspace: relative to /workspace, or absolute under /workspace (a model echoes the paths
 * it was shown), or under /mnt/memory (a link to /workspace/.memory in every sandbox: a /v1
 * session's memory stores; a ".." never leaves it); "." components, repeated slashes and a ".." that stays inside are
 * resolved lexically ("sub/../a.csv" is "a.csv": the jail never follows a link, so ".." is the parent by name).
 * Everything else is refused: an absolute path elsewhere ("/etc/passwd") and a ".." that leaves ("../x", "a/../../x")
 * with one message, "workspace: path 'P' is outside /workspace", that depends on nothing on disk; an empty or blank
 * path; a NUL. The result (ws_path_ normalize's canonical form, "." for the root) goes to ret (size bytes; WS_PATH_MAX
 * + 1 suffices). Every face takes a caller's path through this, then ws_open(). Pure. Returns 0, -EPERM (outside),
 * -EINVAL (empty, blank, NUL), -ENAMETOOLONG, or -ENOBUFS. */
int ws_path_resolve(const char *path, size_t len, char *ret, size_t size, hull_error *e);

/* Open path below root_fd with openat2(flags | O_CLOEXEC, mode) and RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, after ws_path_check(). mode is used only with
 * O_CREAT or O_TMPFILE. Returns the new fd (caller closes) or a negative errno: the checker's,
 * -ELOOP (a symbolic link in any component), -EXDEV (resolution left the root), -ENOSYS (no
 * openat2: Linux older than 5.6; there is no weaker fallback), or openat2's own errno. */
int ws_open(int root_fd, const char *path, int flags, mode_t mode, hull_error *e);

/* ---- read, write, edit ---- */

typedef struct ws_read_result {
        char *data;    /* len bytes plus a NUL not counted in len; free with ws_read_result_done */
        size_t len;    /* bytes returned */
        uint64_t size; /* size of the file when it was opened */
        bool eof;      /* the returned bytes reach the end of the file */
} ws_read_result;

/* Read up to limit bytes (0: WS_READ_DEFAULT_BYTES; at most WS_READ_MAX_BYTES) at byte offset
 * from a regular file. Binary-safe. An offset at or past the end returns 0 bytes and eof. Returns
 * 0 with *ret filled, or a negative errno: ws_open()'s, -EISDIR, -EINVAL (not a regular file:
 * FIFO, socket, device; or limit too large), or read()'s. */
int ws_read(int root_fd, const char *path, uint64_t offset, size_t limit, ws_read_result *ret, hull_error *e);
void ws_read_result_done(ws_read_result *r);

enum {
        WS_WRITE_MKDIRS = 1U << 0, /* create missing parent directories (mode 0755) */
        WS_WRITE_FSYNC = 1U << 1,  /* fsync the file and its directory before returning */
};

/* Create or atomically replace path with len bytes of data (at most WS_WRITE_MAX_BYTES), mode
 * 0644: written to a temporary name in the same directory, then renamed over path. A symbolic
 * link at path is replaced, not followed. Returns 0 or a negative errno: ws_open()'s (for the
 * parent), -EISDIR (path is a directory or the root), -EFBIG (too large), -ENOENT (missing
 * parent without WS_WRITE_MKDIRS), or the write's. On failure path is unchanged. */
int ws_write(int root_fd, const char *path, const void *data, size_t len, unsigned flags, hull_error *e);

/* Replace the one occurrence of old_text (old_len > 0 bytes) in the regular file path with
 * new_text, atomically as ws_write() does, keeping the file's permission bits. Occurrences are
 * counted as they may overlap, so the replaced span is never ambiguous. The file may be at most
 * WS_EDIT_MAX_BYTES, the result at most WS_WRITE_MAX_BYTES. Returns 0, or a negative errno:
 * -ENODATA (no occurrence), -ENOTUNIQ (more than one; the message gives the count), -EINVAL
 * (empty old_text, not a regular file), -EFBIG, or ws_read()/ws_write()'s. */
int ws_edit(int root_fd, const char *path, const void *old_text, size_t old_len, const void *new_text, size_t new_len,
            unsigned flags, hull_error *e);

/* ---- glob and grep ---- */

/* Why a walk or search stopped early or is incomplete (bits of ws_*_result.stopped). */
enum {
        WS_STOP_RESULTS = 1U << 0,     /* results_max / matches_max reached */
        WS_STOP_ENTRIES = 1U << 1,     /* entries_max directory entries examined */
        WS_STOP_TIME = 1U << 2,        /* the wall-clock budget ran out */
        WS_STOP_BYTES = 1U << 3,       /* grep: bytes_max bytes read */
        WS_STOP_DEPTH = 1U << 4,       /* some directories were deeper than WS_PATH_DEPTH_MAX */
        WS_STOP_MATCH_LIMIT = 1U << 5, /* grep: the regex hit its match/depth/heap limit on a line */
};

/* A short phrase for the most important bit of stopped ("the time budget ran out"), or NULL when
 * stopped is 0. Static storage. */
const char *ws_stop_reason(unsigned stopped);

/* Does the relative path match the glob pattern? Components are matched one by one: "*", "?"
 * (one UTF-8 character), "[...]" classes ("!" or "^" negates, ranges), "\" escapes; a "**"
 * component matches any number of directories. A name beginning with "." is matched only by a
 * component beginning with "." (or by anything when hidden is true), as in the shell. Linear
 * time per component (no backtracking blow-up). Pure. A pattern or path with more than
 * WS_GLOB_COMPONENTS_MAX components never matches. */
bool ws_glob_match(const char *pattern, const char *path, bool hidden);

typedef struct ws_glob_opts {
        size_t results_max;   /* 0: WS_GLOB_RESULTS_DEFAULT; at most WS_GLOB_RESULTS_MAX */
        uint64_t entries_max; /* directory entries examined; 0: WS_WALK_ENTRIES_DEFAULT */
        uint64_t time_ms;     /* 0: WS_GLOB_TIME_MS_DEFAULT; at most WS_WALK_TIME_MS_MAX */
        bool hidden;          /* let wildcards match names beginning with "." */
} ws_glob_opts;

typedef struct ws_glob_result {
        char **paths; /* sorted (bytewise); directories end in "/"; links are listed, never followed */
        size_t count;
        unsigned stopped; /* WS_STOP_* bits; 0 when the walk was complete */
} ws_glob_result;

/* List the entries of the workspace whose path matches pattern (see ws_glob_match; a pattern is
 * checked like a path: relative, no ".."). opts may be NULL for the defaults. Returns 0 with *ret
 * filled (possibly partial, with ret->stopped saying why), or a negative errno: -EINVAL (bad
 * pattern or option), -ENOMEM, or the root's open error. Free with ws_glob_result_done. */
int ws_glob(int root_fd, const char *pattern, const ws_glob_opts *opts, ws_glob_result *ret, hull_error *e);
void ws_glob_result_done(ws_glob_result *r);

typedef struct ws_grep_opts {
        const char *path; /* file or directory to search; NULL or "." for the whole workspace */
        const char *glob; /* only files matching it (no "/": matched against the file name) */
        bool ignore_case;
        bool hidden;          /* also search names beginning with "." */
        size_t matches_max;   /* 0: WS_GREP_MATCHES_DEFAULT; at most WS_GREP_MATCHES_MAX */
        uint64_t bytes_max;   /* bytes read in total; 0: WS_GREP_BYTES_DEFAULT; at most WS_GREP_BYTES_MAX */
        uint64_t time_ms;     /* wall clock; 0: WS_GREP_TIME_MS_DEFAULT; at most WS_WALK_TIME_MS_MAX */
        uint64_t entries_max; /* directory entries examined; 0: WS_WALK_ENTRIES_DEFAULT */
} ws_grep_opts;

typedef struct ws_grep_match {
        char *path;    /* relative to the root */
        uint64_t line; /* 1-based */
        size_t column; /* 1-based byte offset of the match in the line */
        char *text;    /* the line, or a WS_GREP_TEXT_MAX-byte window around the match; raw bytes + NUL */
        size_t text_len;
        bool text_cut; /* text is a window of a longer line */
} ws_grep_match;

typedef struct ws_grep_result {
        ws_grep_match *matches; /* in walk order: files sorted by path, lines ascending */
        size_t count;
        uint64_t files_searched;
        uint64_t files_binary; /* skipped: a NUL byte in the first WS_GREP_BINARY_PROBE bytes */
        uint64_t bytes_read;
        uint64_t lines_limited; /* lines where the regex hit a limit (treated as no match) */
        uint64_t lines_long;    /* lines longer than WS_GREP_LINE_MAX (only their head searched) */
        unsigned stopped;       /* WS_STOP_* bits; 0 when the search was complete */
} ws_grep_result;

/* Search regular files for a PCRE2 pattern (UTF-8, invalid UTF-8 tolerated; JIT when
 * available), one match per line, lines split on "\n" (a trailing "\r" is dropped). Bounded by
 * the pattern's length and nesting, per-start-position match/depth/heap limits, the line length,
 * and total bytes, entries and wall-clock time for the whole search; the clock is checked every
 * WS_GREP_START_CHUNK start positions, so a catastrophic pattern ends within about the time
 * budget. Binary files are skipped; links are not followed. opts may be NULL. Returns 0 with
 * *ret filled (possibly partial, ret->stopped saying why), or a negative errno: -EINVAL (the
 * pattern does not compile: the message gives PCRE2's reason and offset; bad option), -ENOMEM, or
 * ws_open()'s for opts->path. Free with ws_grep_result_done. */
int ws_grep(int root_fd, const char *pattern, const ws_grep_opts *opts, ws_grep_result *ret, hull_error *e);
void ws_grep_result_done(ws_grep_result *r);

/* ---- persist and hydrate ---- */

typedef struct ws_tar_limits {
        uint64_t bytes_max;      /* persist: archive bytes; hydrate: file bytes in total. 0: WS_TAR_BYTES_DEFAULT */
        uint64_t file_bytes_max; /* hydrate: bytes of one file. 0: WS_TAR_FILE_BYTES_DEFAULT */
        uint64_t entries_max;    /* entries. 0: WS_TAR_ENTRIES_DEFAULT; at most WS_TAR_ENTRIES_MAX */
} ws_tar_limits;

typedef struct ws_tar_stats {
        uint64_t files, dirs, symlinks, hardlinks;
        uint64_t skipped; /* persist: sockets, FIFOs, devices and mount points left out */
        uint64_t bytes;   /* file content bytes */
} ws_tar_stats;

/* Write the whole workspace as a pax (restricted) tar to out_fd. Regular files, directories and
 * symbolic links (stored as links, never followed) are stored with their permission bits and
 * mtime, owner 0; several hard links to one file are stored as separate copies. Sockets, FIFOs,
 * devices and mount points are skipped (counted). Fails rather than writing a partial snapshot:
 * returns 0 with *ret_stats (may be NULL), or a negative errno: -EFBIG (more than bytes_max),
 * -E2BIG (more than entries_max entries), -ENAMETOOLONG (a path longer or deeper than the path
 * rules allow), write errors. After a failure out_fd holds garbage. lim may be NULL. */
int ws_persist_fd(int root_fd, int out_fd, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e);

/* The same into a malloc'd buffer (*ret_buf, *ret_len; caller frees). */
int ws_persist_mem(int root_fd, const ws_tar_limits *lim, void **ret_buf, size_t *ret_len, ws_tar_stats *ret_stats,
                   hull_error *e);

/* Extract a tar (ustar, pax or GNU; uncompressed) into the workspace, validating every entry
 * itself and creating it through the jail (libarchive only parses; write_disk is not used: its
 * SECURE_* checks are lstat-then-open, racy against sandboxed code changing the tree, and work
 * relative to the process-wide cwd). The checks are a superset of ARCHIVE_EXTRACT_SECURE_NODOTDOT,
 * _SECURE_NOABSOLUTEPATHS, _SECURE_SYMLINKS and _NO_OVERWRITE:
 * - paths pass ws_path_check ("./" prefixes are fine; "." itself is the root and is skipped);
 * - no entry is created through a symbolic link, one in the archive or one planted beforehand;
 * - overwrite semantics: nothing that exists is replaced. An existing file, link or other
 *   non-directory at an entry's path is an error (-EEXIST); an existing directory is reused
 *   (merged into). So hydrate is for a fresh or disjoint workspace;
 * - only regular files, directories, symbolic links and hard links are accepted; device nodes,
 *   FIFOs, sockets and unknown types are refused (-EPERM);
 * - a symbolic link may point anywhere (a venv's "python -> /usr/bin/python3" must survive a
 *   round trip; the host never follows links, only the sandbox does, in its own namespace);
 * - a hard link must name a regular file already in the workspace, by a checked relative path;
 *   data it carries is ignored (it could only overwrite that file);
 * - declared sizes are checked before any data is read: one file over file_bytes_max or the
 *   total over bytes_max is -EFBIG; more than entries_max entries is -E2BIG;
 * - setuid, setgid and sticky bits are dropped; owners in the archive are ignored (entries get
 *   the root's owner); files get at least u+rw and directories u+rwx.
 * Stops at the first refused entry: entries extracted before it stay (inside the workspace);
 * callers discard the workspace on failure. Returns 0 with *ret_stats (may be NULL) or a negative
 * errno with *e naming the entry. lim may be NULL. */
int ws_hydrate_fd(int root_fd, int in_fd, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e);
int ws_hydrate_mem(int root_fd, const void *buf, size_t len, const ws_tar_limits *lim, ws_tar_stats *ret_stats,
                   hull_error *e);
