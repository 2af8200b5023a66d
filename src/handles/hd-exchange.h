/* hd-exchange.h: the host side of a call's exchange directory, where sandboxed code (runtime/
 * hull.py) leaves new handles, the call's emitted result and publish requests.
 *
 * Per call the host picks a fresh name, /workspace/.hull/x-<16 random hex>/ (hd_exchange_name), and
 * tells the interpreter its path, but does not create it: runtime/hull.py makes it (0700, and
 * .hull when missing) the first time save, emit or publish needs it, so a call that uses none of
 * them costs no directory. After the call the host reads it back (hd_exchange_read: one openat2
 * that finds nothing, in the common case) and removes it when it was there (hd_exchange_remove).
 * Sandboxed code owns that directory and may have replaced anything in it, or the directory or
 * .hull itself, with a link, a FIFO, a directory or a huge file, and may still be changing it. A
 * directory removed by the code before the call ended cannot be told from one never made: both
 * are "nothing saved, emitted or published", without a note. So:
 *
 * - Every file is opened through ws_open() (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 *   RESOLVE_NO_MAGICLINKS) with O_NOFOLLOW | O_NONBLOCK, and used only when fstat() says it is a
 *   regular file with one link, of a size within its cap, checked before any byte is read.
 * - A control file that is not a regular file, or is too large, is one clear error line
 *   ("control file ... was replaced", "... too large"), never a hang and never a partial parse.
 * - Each JSONL line is validated on its own; a bad line is an error line and never stops the
 *   others. Nothing a line says is believed beyond its syntax: ids, kinds and file names are
 *   checked here, and the store derives everything else from the bytes (hd_adopt_fd).
 *
 * Files of an exchange directory (written by runtime/hull.py):
 *   new_handles.jsonl  one line per save: {"id": ID, "kind": "json"|"text"|"table"|"binary",
 *                      "file": NAME, "source": SOURCE}, exactly these keys, all strings; ID matches
 *                      [A-Za-z0-9][A-Za-z0-9_.-]{0,63}; NAME is a plain file name in the directory
 *                      (no "/", not "." or "..", not a control file); SOURCE 1..HD_EXCHANGE_
 *                      SOURCE_MAX bytes without control characters
 *   <n>.sqlite|.json|.txt|.bin  the payloads those lines name
 *   emit.json          the call's result: any JSON value
 *   publish.jsonl      one line per request: {"path": "outputs/...", "description": TEXT},
 *                      exactly these keys, both strings; the path relative to /workspace
 *
 * Errors are negative errno; the one-line message in *e when e is not NULL. Outputs are written
 * only on success. No state between calls; thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

/* A new handle sandboxed code asks the host to adopt. */
typedef struct hd_exchange_handle {
        char id[HD_EXCHANGE_ID_MAX + 1];
        const char *kind;           /* "json", "text", "table" or "binary" (static storage) */
        char file[WS_NAME_MAX + 1]; /* the payload's name in the exchange directory */
        char *source;               /* validated UTF-8, no control characters */
        int fd;                     /* the payload, read-only, O_CLOEXEC; -1 from the pure parser */
        uint64_t size;              /* its size when opened (the store copies at most its own cap) */
} hd_exchange_handle;

/* A file sandboxed code asks the host to deliver. Check it again at delivery (through the jail):
 * sandboxed code may replace it after this read. */
typedef struct hd_exchange_publish {
        char *path;        /* normalized, relative to the workspace: "outputs/..." */
        char *description; /* validated UTF-8, possibly empty */
} hd_exchange_publish;

typedef struct hd_exchange {
        hd_exchange_handle *handles; /* in file order; ids unique within the call */
        size_t n_handles;

        bool emitted; /* emit.json was there and usable: emit (inline) or emit_fd */
        char *emit;   /* the emitted JSON text, validated, NUL-terminated; NULL when not inline */
        size_t emit_len;
        bool emit_too_large; /* over the inline cap: not parsed; store it as a json handle from emit_fd */
        int emit_fd;         /* -1 unless emit_too_large; read-only, O_CLOEXEC */
        uint64_t emit_size;

        hd_exchange_publish *publish;
        size_t n_publish;

        bool absent; /* the directory did not exist: nothing to read, nothing to remove */

        char **errors;         /* one line each, for the caller (and the model) to read */
        size_t n_errors;       /* at most HD_EXCHANGE_ERRORS_MAX */
        size_t errors_dropped; /* further errors, only counted */
} hd_exchange;

/* Per-call bounds; 0 in a field means its default. */
typedef struct hd_exchange_limits {
        uint64_t new_handles_bytes_max; /* HD_EXCHANGE_NEW_HANDLES_BYTES_MAX */
        size_t adopt_max;               /* HD_EXCHANGE_ADOPT_MAX */
        uint64_t emit_inline_max;       /* HD_EXCHANGE_EMIT_INLINE_MAX */
        uint64_t payload_bytes_max;     /* HD_EXCHANGE_PAYLOAD_MAX: pass the store's max_spill_bytes */
        uint64_t publish_bytes_max;     /* HD_EXCHANGE_PUBLISH_BYTES_MAX */
        size_t publish_max;             /* HD_EXCHANGE_PUBLISH_MAX */
} hd_exchange_limits;

/* An empty result (fds -1). hd_exchange_done() closes its fds, frees it and empties it again; a
 * caller that keeps an fd sets the field to -1 first (TAKE_FD). */
void hd_exchange_init(hd_exchange *x);
void hd_exchange_done(hd_exchange *x);

/* ---- pure: bytes in, structure out ---- */

/* Parse the len bytes of new_handles.jsonl: each valid line becomes a handle (fd -1, size 0)
 * appended to x, up to adopt_max (0: the default) handles in x in all; every bad line, a second
 * line for an id or a file already named, and the lines beyond the cap ("too many new handles")
 * become error lines. Returns 0, or -ENOMEM (x then holds what was parsed before). */
int hd_exchange_parse_new_handles(const char *data, size_t len, size_t adopt_max, hd_exchange *x);

/* Parse the len bytes of publish.jsonl likewise: a path must pass ws_path_check, be under
 * "outputs/" (not outputs itself) and hold no control character; at most publish_max (0: the
 * default) requests are kept ("too many publish requests"). Returns 0 or -ENOMEM. */
int hd_exchange_parse_publish(const char *data, size_t len, size_t publish_max, hd_exchange *x);

/* Is data (len bytes) one JSON value of any type, strict (UTF-8, no NUL, no duplicate keys, no
 * NaN)? Returns 0, or -EBADMSG with the reason in *e. */
int hd_exchange_check_emit(const char *data, size_t len, hull_error *e);

/* Is rel the relative path of an exchange directory, ".hull/x-" and 16 lowercase hex digits? */
bool hd_exchange_rel_is_valid(const char *rel);

/* ---- the directory ---- */

/* Pick the relative path of a new exchange directory, ".hull/x-" and 16 hex digits from
 * getrandom (unguessable, so no other call's code can prepare it), into ret_rel_path (the sandbox
 * sees it as "/workspace/" + that). Nothing is created. Returns 0 or the errno of getrandom. */
int hd_exchange_name(char ret_rel_path[HD_EXCHANGE_REL_SIZE], hull_error *e);

/* Is the exchange directory rel (valid per hd_exchange_rel_is_valid) below ws_fd surely absent?
 * Asked with the caller's own credentials and without following any link: ".hull" opened O_PATH
 * and O_NOFOLLOW, then the name looked up in it with AT_SYMLINK_NOFOLLOW. True only when one of
 * them is ENOENT (nothing to read, nothing to remove); anything else (a link, no permission, an
 * error) is false, and the caller reads it as hd_exchange_read does, safely. The common call that
 * saved nothing costs one or two syscalls instead of a switch of credentials. */
bool hd_exchange_surely_absent(int ws_fd, const char *rel);

/* Read the exchange directory rel (a path from hd_exchange_name) below ws_fd into *ret (fill
 * with hd_exchange_init first; free with hd_exchange_done). A missing directory (or .hull) is
 * nothing to read: ret->absent, no error line, nothing to remove. Everything sandboxed code got
 * wrong is an error line in ret->errors, not a failure: a replaced exchange directory or .hull, a
 * replaced or oversize control file (the file is then ignored as a whole), a bad line, a payload
 * that is missing, not a regular file, a link, hard-linked or over payload_bytes_max (that handle
 * is dropped), a malformed emit (ret->emitted stays false), an emit over emit_inline_max
 * (ret->emit_too_large and emit_fd; over payload_bytes_max it is an error). lim may be NULL.
 * Returns 0, -EINVAL (rel is not an exchange path), or -ENOMEM; on failure *ret is emptied. */
int hd_exchange_read(int ws_fd, const char *rel, const hd_exchange_limits *lim, hd_exchange *ret, hull_error *e);

/* Remove the exchange directory rel below ws_fd and everything in it, never following a link
 * (rm_rf_at below the ".hull" directory, opened through the jail). A missing directory is not an
 * error. Returns 0, or -EINVAL (rel is not an exchange path), -ELOOP (".hull" is a link: nothing
 * removed), or the first errno of the removal. */
int hd_exchange_remove(int ws_fd, const char *rel, hull_error *e);
