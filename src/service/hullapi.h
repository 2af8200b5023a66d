/* hullapi.h: hull's own API on an open plimsoll session (Connect, unary, JSON, the conventions
 * of plimsoll.h: errors are plim_error, unknown fields refused, bytes as base64, 64-bit integers
 * as strings): /hull.v1.Workspace/{Exec,Read,Write,Edit,Glob,Grep,Persist,Hydrate} and
 * /hull.v1.Sessions/List. Pure: bytes in, structures and bytes out, no I/O. The daemon looks the
 * session up by sessionId (plim_fail_session_not_found() when it has none), calls the workspace
 * (sbx-workspace.h) or the sandbox, and answers with the builders below. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker-msg.h"
#include "limits.h"
#include "plimsoll.h"
#include "sbx-workspace.h"
#include "ss.h"

#define HULL_API_WORKSPACE_PATH "/hull.v1.Workspace/"
#define HULL_API_SESSIONS_PATH "/hull.v1.Sessions/"
#define HULL_API_HANDLES_PATH "/hull.v1.Handles/"

typedef enum hull_api_procedure {
        HULL_API_NONE,    /* not under either service path */
        HULL_API_UNKNOWN, /* under one, but not a method of it */
        HULL_API_EXEC,
        HULL_API_READ,
        HULL_API_WRITE,
        HULL_API_EDIT,
        HULL_API_GLOB,
        HULL_API_GREP,
        HULL_API_PERSIST,
        HULL_API_HYDRATE,
        HULL_API_SESSIONS_LIST,
        HULL_API_HANDLES_LIST, /* /hull.v1.Handles/List */
        HULL_API_HANDLES_INSPECT,
        HULL_API_HANDLES_QUERY,
        HULL_API_HANDLES_READ,
        HULL_API_HANDLES_ADD_INPUT,
        _HULL_API_PROCEDURE_MAX,
} hull_api_procedure;

/* "{prefix}/hull.v1.Workspace/{Method}" or "{prefix}/hull.v1.Sessions/List", exactly, with the
 * prefix rules of plim_procedure_from_path(). */
hull_api_procedure hull_api_procedure_from_path(const char *path);
const char *hull_api_procedure_to_string(hull_api_procedure p); /* "Exec", ..., "List" */

/* name: [A-Za-z_][A-Za-z0-9_]{0,127}; value: no NUL */
typedef ss_env hull_api_env;

/* A parsed request. Strings point into root, which the request owns; decoded bytes (write's
 * content, hydrate's archive) and env are its own. Only the procedure's part is filled. */
typedef struct hull_api_request {
        json_t *root;
        hull_api_procedure procedure;
        const char *session_id; /* validated as plim_session_run_parse() does; NULL for List */
        struct {
                const char *command; /* 1 to HULL_API_COMMAND_MAX bytes, no NUL: /bin/sh -c */
                uint32_t timeout_ms; /* defaulted (PLIM_DEFAULT_TIMEOUT_MS) and clamped (PLIM_TIMEOUT_MS_MAX) */
                hull_api_env *env;
                size_t n_env;
        } exec;
        struct {
                const char *path;
                uint64_t offset;
                size_t limit; /* defaulted (WS_READ_DEFAULT_BYTES) and clamped (WS_READ_MAX_BYTES) */
        } read;
        struct {
                const char *path;
                void *content; /* decoded; NUL-terminated, not counted */
                size_t content_len;
                bool append;
        } write;
        struct {
                const char *path;
                const char *old_text, *new_text; /* may hold NULs */
                size_t old_len, new_len;         /* old_len >= 1 */
        } edit;
        struct {
                const char *pattern;
                bool hidden;
        } glob;
        struct {
                const char *pattern;
                const char *path, *glob; /* NULL when absent */
                bool ignore_case;
                uint32_t max_matches; /* 0: WS_GREP_MATCHES_DEFAULT; at most WS_GREP_MATCHES_MAX */
        } grep;
        struct {
                void *archive; /* decoded tar */
                size_t archive_len;
        } hydrate;
        struct {
                const char *id;      /* Inspect, Read */
                uint32_t head, tail; /* Inspect: rows from each end (0: the store's default) */
                bool stats;          /* Inspect */
                const char *sql;     /* Query */
                const char **ids;    /* Query: the handles attached (borrowed strings) */
                size_t n_ids;
                uint64_t max_rows;      /* Query: 0: the store's default */
                uint64_t offset, limit; /* Read */
                const char *input_id;   /* AddInput: the handle id, [A-Za-z0-9][A-Za-z0-9_.-]{0,63} */
                const char *name;       /* AddInput: a display name (cleaned by the daemon) */
                void *content;          /* AddInput: decoded bytes */
                size_t content_len;
                hd_format format; /* AddInput: binary (default), or a table's csv, tsv, json, jsonl */
        } handles;
} hull_api_request;

/* Parse the body of procedure p. Every request is a strict JSON object within the bounds of
 * plim_body_parse() with no unknown field; every Workspace request names its sessionId (a
 * missing one is invalid_argument + request, a malformed one plim_fail_session_not_found()).
 * Paths are strings of 1 to WS_PATH_MAX bytes without NUL (the workspace checks them further).
 * Errors are invalid_argument + request. Returns 0 with *ret (free with hull_api_request_done)
 * or -1 with *f. */
int hull_api_parse(hull_api_procedure p, const char *body, size_t len, hull_api_request *ret, plim_error *f);
void hull_api_request_done(hull_api_request *r);

/* The same, one per procedure. */
int hull_api_exec_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f);
int hull_api_read_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f);
int hull_api_write_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f);
int hull_api_edit_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f);
int hull_api_glob_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f);
int hull_api_grep_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f);
int hull_api_persist_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f);
int hull_api_hydrate_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f);
int hull_api_list_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f);
/* /hull.v1.Handles/{List,Inspect,Query,Read,AddInput}: {sessionId, ...} (see docs/API.md). */
int hull_api_handles_parse(hull_api_procedure p, const char *body, size_t len, hull_api_request *ret, plim_error *f);

/* An input's format by name: "binary", "csv", "tsv", "json" (an array of objects), "jsonl".
 * Returns 0 or -EINVAL. */
int hull_api_input_format(const char *s, hd_format *ret);

/* The ws_grep_opts of a parsed Grep (budgets left at the workspace's defaults). */
void hull_api_grep_opts(const hull_api_request *r, ws_grep_opts *ret);

/* ---- answers: each returns 0 with a new JSON buffer (the caller frees) or -ENOMEM ---- */

/* Exec: {exitCode, timedOut, stdout, stderr, stdoutTruncated, stderrTruncated, durationMs, record}
 * (record: the exec's run record, when it has one). */
int hull_api_exec_answer(const ss_output *o, char **ret, size_t *ret_len);
/* Read: {content, size (string), eof}. */
int hull_api_read_answer(const ws_read_result *r, char **ret, size_t *ret_len);
/* Write: {bytes (string), record}. record (may be NULL): the run record of the change. */
int hull_api_write_answer(uint64_t bytes, const json_t *record, char **ret, size_t *ret_len);
/* Edit: {replaced: 1, record}. */
int hull_api_edit_answer(const json_t *record, char **ret, size_t *ret_len);
/* Glob: {paths, truncated} (truncated: the walk stopped early for any reason). Paths that are
 * not UTF-8 are repaired (U+FFFD). */
int hull_api_glob_answer(const ws_glob_result *r, char **ret, size_t *ret_len);
/* Grep: {matches: [{path, line, text}], truncated (matches_max reached), budgetExceeded (a
 * budget or limit stopped the search)}; text repaired to UTF-8. */
int hull_api_grep_answer(const ws_grep_result *r, char **ret, size_t *ret_len);
/* Persist: {archive, bytes (string), sha256}. -E2BIG when len > HULL_API_PERSIST_BYTES_MAX. */
int hull_api_persist_answer(const void *archive, size_t len, char **ret, size_t *ret_len);
/* Hydrate: {files, bytes} (strings) from the extraction's statistics, and its record. */
int hull_api_hydrate_answer(const ws_tar_stats *s, const json_t *record, char **ret, size_t *ret_len);

typedef struct hull_api_session_info {
        const char *session_id;  /* the caller's own sessions only: the ID is a capability */
        const char *fingerprint; /* SHA-256 hex of the ID */
        const char *owner;       /* "" when none was given */
        uint64_t opened_unix_ms, expires_unix_ms;
        uint32_t idle_timeout_ms;
        uint64_t calls;
} hull_api_session_info;

/* Sessions/List: {sessions: [{sessionId, session, openedUnixMs, expiresUnixMs, idleTimeoutMs,
 * calls, owner}]} (64-bit values as strings). */
int hull_api_list_answer(const hull_api_session_info *s, size_t n, char **ret, size_t *ret_len);
