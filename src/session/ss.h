/* ss.h: the session core. One protocol-neutral layer over the sandbox engine that every face of
 * hull uses: plimsoll's session procedures and hull's /hull.v1 API in hull serve, and later the
 * agent's tools, the /v1 API and hull mcp, which are thin adapters over these calls; `hull run`
 * uses it in-process (ss_box_local).
 *
 * A manager holds the sessions: each is one long-lived sandbox (a box, made by a provider: the
 * broker's keeper in hull serve, this process otherwise), its workspace, its store of data
 * handles, its persistent interpreters, and its chain of run records with the audit log. The
 * manager ends sessions that are idle or past their lifetime, replaces an owner's least
 * recently used one at its cap, and bounds sessions per caller and in all.
 *
 * Calls: a caller takes a session with ss_lookup (or ss_open), claims it for one call with
 * ss_call_begin (one call at a time, one waiter), runs operations, and gives it back with
 * ss_call_end and ss_unref. Every operation that runs code or changes the workspace appends a
 * chained record to the session's audit log: exec, cell, write, edit, hydrate and add-input
 * record themselves (hull's record kinds, and plimsoll's cell kind for cells); a face with its
 * own record rules (plimsoll's SessionRun) asks ss_cell/ss_plan not to record and appends its
 * record with ss_record_append. Reads change nothing and record nothing themselves; a face that
 * puts its read-only calls on the record (hull mcp) appends one per call with
 * ss_record_read_only.
 *
 * Errors are negative errno values with a user-facing line in *e:
 *   -ENOENT      no such session for this caller (ss_lookup), or a file that is not there;
 *   -ESHUTDOWN   the session has ended (ss_end_state says why);
 *   -EBUSY       the session runs a call and has one waiting;
 *   -EUSERS      a cap on sessions (in all, per caller, per owner) leaves no room;
 *   -EAGAIN      the sandbox provider has no capacity now;
 *   -EINVAL, -E2BIG, -ENAMETOOLONG, -ELOOP, -EXDEV, -EFBIG, ... what was asked is wrong;
 *   -EPIPE       the session broke during the call (it has ended: ss_end_state).
 * Nothing here prints; decisions of its own (a session ended by the reaper) go to the log. */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlog.h"
#include "error.h"
#include "hd-store.h"
#include "limits.h"
#include "sbx-plan.h"
#include "sbx-record.h"
#include "sbx-session.h"
#include "sbx-workspace.h"

/* Whose fault an operation's error is: what was asked (a bad path, a file too large, an edit
 * whose text is not there once, ...), something not there, or the server's. */
typedef enum ss_fault {
        SS_FAULT_REQUEST,
        SS_FAULT_NOT_FOUND,
        SS_FAULT_SERVER,
} ss_fault;
ss_fault ss_fault_of(int err);

/* Why a session ended; the numbers are plimsoll's SessionEnd. */
typedef enum ss_end {
        SS_END_NONE = 0, /* open */
        SS_END_CLOSED = 1,
        SS_END_EXPIRED = 2,
        SS_END_DISK_EXCEEDED = 3,
        SS_END_MAIN_PROCESS_ENDED = 4,
        SS_END_BOUNDARY_FAILED = 5,
        SS_END_SANDBOX_CHANGED = 6,
        SS_END_SHUTDOWN = 7,
        SS_END_REPLACED = 8,
        SS_END_NOT_FOUND = 9,
        SS_END_UNCLAIMED = 10,
        _SS_END_MAX,
} ss_end;

/* ---- the sandbox provider ---- */

typedef struct ss_box_spec {
        uint64_t memory_bytes, pids, tmp_bytes;
        const char *handles_dir;          /* bound read-only at /handles; NULL: none */
        sbx_net_mode net;                 /* SBX_NET_NONE or SBX_NET_LIMITED (sbx-net.h) */
        const sbx_net_policy *net_policy; /* limited: borrowed for the call */
        const char *layer_dir;            /* an environment's layer, bound read-only at /env; NULL: none */
        const char *skills_dir;           /* an agent's skills, bound read-only at /skills; NULL: none */
        const char *mnt_dir;              /* a session's resources, bound read-only at /mnt; NULL: none */
        sbx_tier tier;                    /* SBX_TIER_CONTAINER, or SBX_TIER_KERNEL (gVisor) */
} ss_box_spec;

/* A session's sandbox as its provider hands it over. */
typedef struct ss_box {
        int end_fd; /* readable once the sandbox ended by itself (then ops.ended says how) */
        int ctl_fd, ws_fd, pidfd, bpf_fd;
        int cg_fds[3];
        size_t n_cg_fds;
        int cg_dir_fd;  /* the cgroup that counts the sandbox's tasks (borrowed), or -1 */
        uid_t host_uid; /* who the sandbox user is on the host */
        gid_t host_gid;
        void *priv; /* the provider's */
} ss_box;

typedef struct ss_box_ops {
        /* Start a sandbox. Returns 0 with *ret, -EAGAIN when there is no capacity now, or another
         * negative errno with *e. Any thread. */
        int (*open)(void *ctx, const ss_box_spec *spec, ss_box *ret, hull_error *e);
        /* After end_fd polled readable: 1 with *ret_oom when the sandbox ended by itself, else 0. */
        int (*ended)(void *ctx, ss_box *b, bool *ret_oom);
        /* End the sandbox now; its fds stay valid (calls on it fail). Any thread, any time. */
        void (*kill)(void *ctx, ss_box *b);
        /* Free it (after kill, or when it ended). */
        void (*close)(void *ctx, ss_box *b);
        void *ctx;
} ss_box_ops;

/* The provider for a process that may fork (`hull run`, tests): the session's init is a child
 * of the calling process (of the thread that calls ss_open, which must outlive the session: the
 * init dies with it), which clones only while single-threaded (use no_reaper); with cgroups
 * (limits, OOM reports) where the process may make them. */
ss_box_ops ss_box_local(bool use_cgroups);

/* ---- the manager ---- */

typedef struct ss_hooks {
        void (*opened)(void *ctx);
        void (*ended)(void *ctx, ss_end why);
        void (*call)(void *ctx);
        void *ctx;
} ss_hooks;

typedef struct ss_config {
        ss_box_ops box;
        const dlog *log;       /* NULL: no log lines */
        ss_hooks hooks;        /* all optional (metrics) */
        int zygote_fd;         /* a python zygote (sbx_zygote_start), or -1 */
        unsigned max_sessions; /* open at once */
        unsigned max_per_owner;
        unsigned max_per_caller; /* 0: no cap */
        uint64_t lifetime_ms, idle_ms;
        uint64_t memory_bytes, pids, tmp_bytes;
        const char *audit_dir;     /* session-<fingerprint>.jsonl files; NULL: no logs */
        const char *handles_dir;   /* each session's store below it; NULL: no handles */
        uint64_t handle_bytes_max; /* one handle (a table: its SQLite file); 0: HD_MAX_SPILL_DEFAULT */
        uint64_t store_bytes_max;  /* all handles of one session; 0: SS_STORE_BYTES_DEFAULT */
        const char *provider;      /* records' provider and isolation ("hull", "container") */
        const char *isolation;
        /* kernel-tier sessions' records' policy (runsc's version and platform): *kernel_evidence,
         * published by hull serve once runsc's check passed (tier-gate.h); NULL either: "" */
        const char *_Atomic const *kernel_evidence;
        /* non-NULL: asked before a kernel-tier session opens; a non-NULL answer refuses it, the
         * answer the reason (hull serve without a kernel tier); it may wait for runsc's check */
        const char *(*kernel_refused)(void *ud);
        void *kernel_refused_ud;
        /* No reaper thread: for a process that clones its sandboxes itself (ss_box_local) and so
         * stays single-threaded; expiry is then checked when a session is opened or claimed. */
        bool no_reaper;
} ss_config;

typedef struct ss_manager ss_manager;
typedef struct ss_session ss_session;

/* Start the manager and its reaper thread. Returns 0 with *ret or a negative errno with *e. */
int ss_new(const ss_config *cfg, ss_manager **ret, hull_error *e);

/* The session engine of one process (hull run, hull chat, hull mcp): one session, no reaper, no
 * idle or lifetime end, the local provider (ss_box_local, cgroups when asked and root), the
 * caller's zygote (or -1), its records in audit_dir and its handle stores below handles_dir.
 * Returns 0 with *ret or a negative errno with *e. */
int ss_new_local(int zygote_fd, bool cgroups, const char *audit_dir, const char *handles_dir, ss_manager **ret,
                 hull_error *e);
/* End every session (SHUTDOWN) and wait (at most wait_ms) for calls in flight to finish. */
void ss_shutdown(ss_manager *m, uint64_t wait_ms);
/* Stop the reaper and free everything; only once no thread uses m. */
void ss_free(ss_manager *m);
/* Sessions open now (those being opened included). */
unsigned ss_open_count(ss_manager *m);

typedef struct ss_open_opts {
        const char *principal; /* who opens it: only this caller finds it again */
        const char *owner;     /* groups sessions for the per-owner cap; "" none */
        const char *rule_id;   /* the software rule every record of the session carries; "" none */
        uint64_t lifetime_ms;  /* 0: the manager's; may only shorten it */
        uint64_t idle_ms;      /* 0: the manager's; may only shorten it (at least SERVE_SESSION_IDLE_MS_MIN) */
        /* A directory ss_handles_export wrote: the new session's store starts with its handles
         * (the same ids; each file is checked against the digest its manifest recorded when it
         * is used, so a changed file reads as tampered). NULL: an empty store. */
        const char *handles_from;
        /* The sandbox's network (sbx-net.h): SBX_NET_NONE (the default) or SBX_NET_LIMITED with
         * its policy (borrowed for the call; the provider's proxy copies it). Its connection log
         * is handed out call by call by ss_net_log_take: the policy's log_fd when that is a
         * regular file open for reading and writing (from where it ends at open), else, without
         * a log_fd, one the session keeps itself (a memfd; SBX_NET_LOG_MAX bounds both). */
        sbx_net_mode net;
        const sbx_net_policy *net_policy;
        /* An environment's layer (src/env/env-layer.h): bound read-only at /env, its variables
         * (env_layer_sandbox_env) in every call and interpreter (the zygote's forks put its
         * PYTHONPATH on sys.path). NULL: none. */
        const char *layer_dir;
        /* An agent's skills (a directory of skill directories, each with its SKILL.md): bound
         * read-only at /skills. NULL: none. */
        const char *skills_dir;
        /* A directory bound read-only at /mnt (a /v1 session's file resources, below it at their
         * mount paths: files put there later show through). NULL: none. */
        const char *mnt_dir;
        /* How the session's run records name its environment (RunRecord.environment, e.g.
         * env_describe's "hull-env:NAME@VERSION layer=sha256:DIGEST net=MODE"); NULL: "". */
        const char *environment;
        /* The session's tier: SBX_TIER_CONTAINER (0, the default) or SBX_TIER_KERNEL (one gVisor
         * sandbox per session, sbx-kernel-session.c; its records say isolation "kernel"). */
        sbx_tier tier;
} ss_open_opts;

/* Open a session. At the owner's cap, its least recently used session without a call in flight
 * is ended (REPLACED) once the new one is open. Returns 0 with *ret (a reference: ss_unref), or
 * -EUSERS, -EAGAIN or another negative errno with *e. */
int ss_open(ss_manager *m, const ss_open_opts *o, ss_session **ret, hull_error *e);

/* The session id names, if principal opened it; a reference (ss_unref). -ENOENT otherwise. */
int ss_lookup(ss_manager *m, const char *id, const char *principal, ss_session **ret);
void ss_unref(ss_manager *m, ss_session *s);

typedef struct ss_info {
        char id[PLIM_SESSION_ID_MAX + 1];
        char fingerprint[REC_DIGEST_HEX_SIZE];
        char owner[PLIM_OWNER_MAX + 1];
        uint64_t opened_unix_ms, expires_unix_ms;
        uint64_t idle_ms;
        uint64_t calls;
} ss_info;

/* What a session is (any time, any thread). */
void ss_session_info(ss_manager *m, ss_session *s, ss_info *ret);

/* The open sessions of principal. Returns 0 with *ret (free()) and *ret_n, or -ENOMEM. */
int ss_list(ss_manager *m, const char *principal, ss_info **ret, size_t *ret_n);

/* Why the session ended (SS_END_NONE while open) and its detail (PLIM_END_DETAIL_MAX bytes). */
ss_end ss_end_state(ss_manager *m, ss_session *s, char detail[PLIM_END_DETAIL_MAX]);

typedef struct ss_close_info {
        char fingerprint[REC_DIGEST_HEX_SIZE];
        uint64_t calls;
        char last_sha256[REC_DIGEST_HEX_SIZE];
        ss_end ended; /* CLOSED, or the earlier end */
} ss_close_info;

/* End the session (CLOSED, unless it ended before), wait for a call in flight to end with it,
 * and say where its chain stands. */
void ss_close(ss_manager *m, ss_session *s, ss_close_info *ret);

/* ---- calls ---- */

/* Claim s for one call: refused when it ended (-ESHUTDOWN) or when one call runs and another
 * waits (-EBUSY); otherwise waits for the running call. hangup_fd (or -1): the caller's
 * connection; when it hangs up, a command the call runs is stopped (cells go on). */
int ss_call_begin(ss_manager *m, ss_session *s, int hangup_fd, hull_error *e);
void ss_call_end(ss_manager *m, ss_session *s);

/* Inside a call: the chain's state (fingerprint, records so far, the last digest) and the
 * session's software rule. */
typedef struct ss_chain {
        char session[REC_DIGEST_HEX_SIZE];
        uint64_t calls;
        char last_sha256[REC_DIGEST_HEX_SIZE];
} ss_chain;
void ss_chain_get(ss_session *s, ss_chain *ret);
const char *ss_rule_id(ss_session *s);
/* The environment its records name (ss_open_opts.environment; "" none). */
const char *ss_environment(ss_session *s);
/* The session's tier (ss_open_opts.tier). */
sbx_tier ss_tier(ss_session *s);

/* Inside a call: append a record made by the caller (record, the request as received, the
 * result or NULL for a version 3 record; operation NULL for plimsoll's kinds, else hull's) to
 * the audit log, and advance the chain with its digest and sequence (which must be the chain's
 * next). A log that cannot be written is logged, not fatal. Returns 0 or -EINVAL. */
int ss_record_append(ss_manager *m, ss_session *s, const char *operation, const json_t *record, const json_t *request,
                     const json_t *result);

/* Inside a call: the record of a read-only tool call a face answered (hull's read-only kinds:
 * "read", "glob", "grep", "inspect_handle", "query_handle"; docs/API.md "hull's record kinds"):
 * request is the call's arguments as received, result what it answered ({"text", "isError",
 * "handles": [ids]}), or NULL with unanswered (a Connect code, e.g. "canceled") for a call that
 * ran and was not answered (version 3). started_unix_ms: when the call began. Appended like
 * every record; *ret_record (or NULL) gets it. Returns 0, or -EINVAL (not a read-only kind, a
 * malformed message) or -ENOMEM with *e. */
int ss_record_read_only(ss_manager *m, ss_session *s, const char *operation, const json_t *request,
                        const json_t *result, const char *unanswered, uint64_t started_unix_ms, json_t **ret_record,
                        hull_error *e);

/* Inside a call: the connection log lines the session's proxy wrote since the last take (whole
 * lines, at most max bytes; the rest stays for the next take). 0 with *ret (malloc'ed) or with
 * *ret NULL when there is no log to follow (not limited, or a log that is not a file); a negative
 * errno. A connection is logged when it ends: one that ends as the call answers may show in the
 * next call's take. */
int ss_net_log_take(ss_session *s, size_t max, char **ret, size_t *ret_len);

/* A connection log's text (ss_net_log_take's, or a plimsoll Run's) as a JSON array of strings,
 * one per non-empty line, at most SBX_NET_LOG_LINE_MAX bytes each, printable ASCII (any other
 * byte shows as '?'). NULL when out of memory. */
json_t *ss_net_log_json(const char *log, size_t len);

/* Inside a call: the last record appended during it (borrowed, valid until ss_call_end), NULL
 * when none was. A face answers it with a failed operation that may have run (version 3). */
const json_t *ss_call_record(ss_session *s);

/* ---- operations (each inside a call) ----
 * Results own their buffers; free with the matching *_done. A result's `record` is the run
 * record appended for the operation (a new reference), NULL when it made none. */

typedef struct ss_output {
        int exit_code; /* the exit status: 124 timeout, 128+N signal N */
        bool timed_out;
        char *out, *err; /* NUL-terminated, may hold NULs */
        size_t out_len, err_len;
        bool out_truncated, err_truncated;
        uint64_t wall_us;
        json_t *record;
        /* Summaries of the handles the call made through the hull module (saved, a large emit,
         * published), in order; NULL when it made none. */
        json_t *handles;
} ss_output;
void ss_output_done(ss_output *o);

typedef struct ss_env {
        const char *name, *value;
} ss_env;

typedef struct ss_exec_args {
        const char *command; /* /bin/sh -c, in the directory and with the variables the last exec left */
        const ss_env *env;
        size_t n_env;
        uint64_t timeout_ms;
        uint64_t output_bytes; /* per stream, head and tail */
        int cancel_fd;         /* readable: stop the command now (an agent's interrupt); 0 or -1: none */
} ss_exec_args;

/* Run a shell command (hull's record kind "exec"). With a handle store, `import hull` works and
 * the call's exchange is collected afterwards (notes on stderr, inline emits on stdout). */
int ss_exec(ss_manager *m, ss_session *s, const ss_exec_args *a, ss_output *ret, hull_error *e);

typedef struct ss_file {
        const char *path, *content; /* content may hold NULs */
        size_t len;
} ss_file;

typedef struct ss_cell_args {
        sbx_lang lang;
        const char *code;
        size_t code_len;
        const ss_file *files; /* written into the workspace first */
        size_t n_files;
        uint64_t timeout_ms;
        uint64_t output_bytes;
        bool no_record; /* the caller records the call itself (ss_record_append) */
        int cancel_fd;  /* readable: stop the cell now, killing its interpreter (an agent's interrupt);
                         * 0 or -1: none */
} ss_cell_args;

typedef struct ss_cell_output {
        ss_output o;
        bool interpreter_started, interpreter_ended;
        /* The emitted value (python's emit(), at most HD_EXCHANGE_EMIT_INLINE_MAX bytes of JSON)
         * as the cell appended it to o.out: emit_len bytes from emit_at, its JSON and a newline.
         * emit_len 0: none (a bigger one is a handle of o.handles). */
        size_t emit_at, emit_len;
} ss_cell_output;

/* Run code in the session's persistent interpreter of its language (a record of plimsoll's cell
 * kind unless no_record). -EINVAL with nothing run when a file cannot be written. */
int ss_cell(ss_manager *m, ss_session *s, const ss_cell_args *a, ss_cell_output *ret, hull_error *e);

/* Start the session's interpreter of lang, if none runs, without waiting for it to be ready:
 * the next cell of that language waits for what is left of its start (`hull run` warms python
 * while its first model request is in flight). Returns 0, or a negative errno with *e (the
 * interpreter is then started by the next cell as usual). */
int ss_warm(ss_manager *m, ss_session *s, sbx_lang lang, hull_error *e);

/* Carry out a plan (javascript or project payloads) in the session; the caller records it.
 * scratch (or NULL): a file the plan writes at the workspace's top, removed after it ran. */
int ss_plan(ss_manager *m, ss_session *s, const sbx_plan *plan, const char *scratch, sbx_plan_result *ret,
            hull_error *e);

/* Files (hull's record kinds "write", "edit", "hydrate" for what changes the workspace). */
int ss_read(ss_manager *m, ss_session *s, const char *path, uint64_t offset, size_t limit, ws_read_result *ret,
            hull_error *e);
int ss_write(ss_manager *m, ss_session *s, const char *path, const void *content, size_t len, bool append,
             json_t **ret_record, hull_error *e);
int ss_edit(ss_manager *m, ss_session *s, const char *path, const char *old_text, size_t old_len, const char *new_text,
            size_t new_len, json_t **ret_record, hull_error *e);
int ss_glob(ss_manager *m, ss_session *s, const char *pattern, const ws_glob_opts *o, ws_glob_result *ret,
            hull_error *e);
int ss_grep(ss_manager *m, ss_session *s, const char *pattern, const ws_grep_opts *o, ws_grep_result *ret,
            hull_error *e);
int ss_persist(ss_manager *m, ss_session *s, uint64_t bytes_max, void **ret, size_t *ret_len, hull_error *e);
int ss_hydrate(ss_manager *m, ss_session *s, const void *archive, size_t len, ws_tar_stats *ret_stats,
               json_t **ret_record, hull_error *e);

/* ---- data handles (each inside a call; -EOPNOTSUPP when the session has no store) ----
 * Summaries and answers are the store's JSON (hd-store.h), new references. */
int ss_handles_list(ss_manager *m, ss_session *s, json_t **ret, hull_error *e);
typedef struct ss_inspect_opts {
        uint32_t head, tail;
        bool stats;
} ss_inspect_opts;
int ss_handles_inspect(ss_manager *m, ss_session *s, const char *id, const ss_inspect_opts *o, json_t **ret,
                       hull_error *e);
/* ids NULL (n_ids 0): every table handle of the session (at most HULL_API_QUERY_HANDLES_MAX). */
int ss_handles_query(ss_manager *m, ss_session *s, const char *sql, const char *const *ids, size_t n_ids,
                     uint64_t max_rows, json_t **ret, hull_error *e);
/* A json or text handle's slice (the store's hd_read), or a binary handle's bytes: base64
 * content, and the whole file's sha256 when the slice is the whole file. */
int ss_handles_read(ss_manager *m, ss_session *s, const char *id, uint64_t offset, uint64_t limit, json_t **ret,
                    hull_error *e);
/* Any handle's file as it is stored (binary: its bytes; table: its SQLite database; json, text:
 * the text), limit bytes (0 or more: HULL_API_BINARY_READ_MAX) from offset, after the store
 * checked the file against its digest: *ret (malloc'd, *ret_len bytes), *ret_total the file's
 * size, *ret_summary the handle's summary. Returns 0, or hd_summary's errors, -EIO, -ENOMEM. */
int ss_handles_read_bytes(ss_manager *m, ss_session *s, const char *id, uint64_t offset, uint64_t limit, void **ret,
                          size_t *ret_len, uint64_t *ret_total, json_t **ret_summary, hull_error *e);
/* Add an upload as a handle named input_id: binary (HD_FORMAT_BINARY), or a table ingested from
 * CSV, TSV, a JSON array of objects or JSON lines (types inferred over every row), within the
 * session's bounds. Idempotent: the same name, format and bytes answer the same handle; other
 * bytes under that id are -EEXIST. The upload is also linked at
 * /workspace/inputs/<input_id>/<name> (hull's record kind "add_input"; the record states the
 * upload's size and SHA-256). */
int ss_handles_add_input(ss_manager *m, ss_session *s, const char *input_id, const char *name, hd_format format,
                         const void *content, size_t len, json_t **ret_summary, json_t **ret_record, hull_error *e);
/* The same from fd, a regular file of the caller's (an upload streamed to disk, e.g. into
 * ss_upload_file's); sha256 (hex, or NULL: computed here) is the file's. For a file only this
 * process can reach (ss_upload_file's: unlinked, ours, 0600) a sha256 given is taken as the
 * digest of what the caller wrote (hashed on the way in, so the file is not read twice) and a
 * table is parsed in place; any other file is hashed here (-EBADMSG if it differs) and copied
 * into the store before it is parsed. */
int ss_handles_add_input_fd(ss_manager *m, ss_session *s, const char *input_id, const char *name, hd_format format,
                            int fd, const char *sha256, json_t **ret_summary, json_t **ret_record, hull_error *e);
/* Keep len bytes of the host's (a tool's result) as a new handle "hN": format says what they are
 * (HD_FORMAT_JSON, _TEXT, _BINARY, or a table from _CSV, _TSV, _JSON_ARRAY, _JSON_LINES), source
 * where they came from (at most HD_SOURCE_MAX bytes). Within the session's bounds: one handle
 * (-EFBIG, ss_handle_bytes_max) and all of them (-EFBIG). Returns 0 with *ret_summary, or
 * hd_put's errors. Not recorded: the operation that produced the bytes is. */
int ss_handles_spill(ss_manager *m, ss_session *s, hd_format format, const char *source, const void *data, size_t len,
                     json_t **ret_summary, hull_error *e);
/* Like ss_handles_spill(HD_FORMAT_JSON) for a value: its JSON (json_dump_callback with flags)
 * streamed into the store (hd_put_value), never held whole in memory; within the same bounds
 * (-EFBIG once the text passes what one handle or the session's handles may hold). */
int ss_handles_spill_value(ss_manager *m, ss_session *s, const char *source, const json_t *value, size_t flags,
                           json_t **ret_summary, hull_error *e);
/* Like ss_handles_spill(HD_FORMAT_TEXT) for the NUL-terminated text, whose length the store finds
 * beside its hash (hd_put_text), within the same bounds (-EFBIG past them, -EILSEQ when the text
 * is not UTF-8). */
int ss_handles_spill_text(ss_manager *m, ss_session *s, const char *source, const char *text, json_t **ret_summary,
                          hull_error *e);

/* Copy the session's handles (their files and manifest) into dir, a directory that exists
 * (files of the same names are replaced), for a later ss_open_opts.handles_from. Inside a call.
 * Returns 0, -EOPNOTSUPP without a store, or another negative errno with *e. */
int ss_handles_export(ss_manager *m, ss_session *s, const char *dir, hull_error *e);

/* Publish a file of the workspace (the deliverable a user asked for): path relative to the
 * workspace and already resolved (ws_path_resolve), under outputs/; the file is opened through the
 * jail as the sandbox user (a regular file, no link anywhere on the way, at most the largest
 * handle) and its bytes, copied from that open file, become a binary handle whose source says
 * "published PATH as NAME: DESCRIPTION" (name: the display name, cleaned to its last segment
 * without control characters; NULL: the file's name; description may be NULL). The same path as
 * the hull module's publish(). A refusal reads the same whether or not the path exists outside
 * outputs/. Returns 0 with *ret_summary, or -EPERM (not under outputs/), -ENOENT, -EINVAL (not a
 * regular file), -ELOOP (a link), -EFBIG, with *e. */
int ss_publish(ss_manager *m, ss_session *s, const char *path, const char *name, const char *description,
               json_t **ret_summary, hull_error *e);

/* An anonymous file (O_TMPFILE) next to the session's store, for an upload to stream into before
 * ss_handles_add_input_fd: it takes no call slot and disappears when closed. Returns the fd,
 * -EOPNOTSUPP without a store, or another negative errno with *e. Any time. */
int ss_upload_file(ss_manager *m, ss_session *s, hull_error *e);
/* The bounds the session's handles live in. */
uint64_t ss_handle_bytes_max(const ss_manager *m);
