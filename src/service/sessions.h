/* sessions.h: hull serve's sessions: the table (id → session, per caller), their lifetimes
 * (idle, lifetime, per-owner least-recently-used eviction, the sandbox ending by itself), the
 * calls (one at a time, one waiter), the chain of run records and the audit log of each session,
 * and the procedures that act on one: OpenSession, SessionRun, CloseSession and hull's
 * /hull.v1.Workspace and /hull.v1.Sessions routes.
 *
 * Each procedure runs on a thread of its own (it blocks for the whole call); any number at once. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "broker.h"
#include "dlog.h"
#include "hullapi.h"
#include "serve-metrics.h"
#include "plimsoll.h"
#include "ss.h"
#include "tier-gate.h"

typedef struct hs_config {
        uint64_t handle_bytes_max; /* one handle; 0: the core's default (--handle-max) */
        uint64_t store_bytes_max;  /* a session's handles together; 0: the default (--session-handles-max) */
        brk_broker *broker;
        tg_gate *tier; /* the evidence (the kernel tier once its check passed) */
        const dlog *log;
        metrics *metrics;
        int zygote_fd;         /* hull serve's zygote, or -1 */
        int zygote_lift_fd;    /* borrowed: its warm-up priority's lift (sbx_zygote_lift), or -1 */
        unsigned max_sessions; /* 0: sessions are off */
        unsigned max_per_owner;
        unsigned max_per_caller; /* sessions of one caller (token), whatever the owners; 0: no cap */
        uint64_t lifetime_ms, idle_ms;
        uint64_t memory_bytes, pids, tmp_bytes;
        const char *audit_dir;   /* where session-<fingerprint>.jsonl files go; NULL: no logs */
        const char *handles_dir; /* each session's handle store is a directory below; NULL: none */
        /* OpenSession's hullEnvironment: the environment NAME's layer (ret_layer, "" when it has
         * no packages; built first when missing) and network (*ret_net, and *ret_policy, whose
         * strings live until env_done(env_ctx, ret_policy)), and how its run records name it
         * (ret_desc, env_describe's form). NULL: OpenSession refuses a
         * hullEnvironment. Returns 0 or a negative errno with *e (-ENOENT: no such environment). */
        int (*env_resolve)(void *ctx, const char *name, char ret_layer[SBX_PATH_MAX], sbx_net_mode *ret_net,
                           sbx_net_policy *ret_policy, char ret_desc[ENV_DESC_MAX], hull_error *e);
        void (*env_done)(void *ctx, sbx_net_policy *policy);
        void *env_ctx;
        /* An upload with format "document" (a PDF, Office, OpenDocument, HTML or Markdown file):
         * after it is kept as a binary input, read fd's bytes into handles of the session (inside
         * the call) and return {"summary": text, "handles": [summaries]} in *ret. NULL: such an
         * upload is refused. (src/tools/tool-document.h: doc_read_fd.) */
        int (*read_document)(ss_manager *m, ss_session *s, const char *name, int fd, json_t **ret, hull_error *e);
} hs_config;

typedef struct hs_manager hs_manager;

/* Start the manager and its reaper thread. Returns 0 with *ret or a negative errno with *e. */
int hs_new(const hs_config *cfg, hs_manager **ret, hull_error *e);

/* End every session (SHUTDOWN) and wait (at most wait_ms) for calls in flight to finish. */
void hs_shutdown(hs_manager *m, uint64_t wait_ms);

/* Stop the reaper and free everything. Only after hs_shutdown and once no thread is in hs_rpc. */
void hs_free(hs_manager *m);

/* Sessions open now. */
unsigned hs_open_count(hs_manager *m);

/* The session core under the table (the /v1 API's sessions open their sandboxes in it). */
ss_manager *hs_core(hs_manager *m);

/* What a procedure answered: 200 with body (JSON, the caller frees), or an error in f. */
typedef struct hs_answer {
        bool ok;
        char *body;
        size_t len;
        plim_error f;
        char note[SERVE_SHORT_STR_MAX]; /* for the request's log line */
} hs_answer;

/* watch_fd (or -1): the caller's connection; when it hangs up, a command the call runs (Exec, a
 * javascript or project payload) is stopped; a cell goes on. */
/* One procedure: proc for a plimsoll procedure (OPEN_SESSION, SESSION_RUN, CLOSE_SESSION), or
 * hproc for one of hull's. principal names the caller (its token, or "local"): a session is only
 * found by the caller that opened it. */
void hs_rpc(hs_manager *m, plim_procedure proc, hull_api_procedure hproc, const char *principal, const char *body,
            size_t len, uint64_t received_unix_ms, int watch_fd, hs_answer *ret);

/* ---- a streamed upload: /hull.v1.Handles/Upload ----
 * The body goes to an anonymous file next to the session's store as it arrives (the sink, on a
 * polling thread: a write and a hash per piece, never a wait for the session), then one call of
 * the session adds it as an input (ss_handles_add_input_fd). */
typedef struct hs_upload hs_upload;

/* Before any byte of the body: the session (the caller's), the input's id, display name and
 * format (binary, csv, tsv, json, jsonl; query arguments of the route). Returns 0 with *ret, or
 * -1 with *f (a bad argument, no such session, no store). */
int hs_upload_begin(hs_manager *m, const char *principal, const char *session_id, const char *input_id,
                    const char *name, const char *format, hs_upload **ret, plim_error *f);
/* A piece of the body. Returns 0, -EFBIG (over the largest handle) or an I/O error. */
int hs_upload_write(hs_upload *u, const void *data, size_t n);
/* The body is in: add it (one call of the session; watch_fd as hs_rpc's). The answer is the
 * input's summary with its "record", or an error. */
void hs_upload_finish(hs_manager *m, hs_upload *u, int watch_fd, hs_answer *ret);
void hs_upload_free(hs_upload *u);

/* Append a single run's record to the audit log (DIR/runs.jsonl): the request as received and
 * the answer as sent. Failures are logged, never fatal. Any thread. */
void hs_audit_run(hs_manager *m, const json_t *request, const char *answer, size_t len);
