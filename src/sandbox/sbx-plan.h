/* sbx-plan.h: a plan — files to write, steps to run in order, artifacts to read back, with
 * limits — and its result: what a single run (hull serve's broker workers, each step in a fresh
 * sandbox) and a session call (javascript and project payloads in a session's sandbox) carry
 * out. The broker's wire format for plans is src/daemon/broker-msg. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"

typedef struct sbx_plan_file {
        char *path; /* relative, clean (sbx_plan_path_is_clean), NUL-terminated */
        char *data; /* bytes, may contain NULs; NUL-terminated for convenience */
        size_t len;
} sbx_plan_file;

typedef struct sbx_plan_step {
        char **argv;   /* NULL-terminated; no argument contains a NUL */
        uint32_t argc; /* >= 1 */
} sbx_plan_step;

enum {
        SBX_PLAN_STOP_ON_FAILURE = 1U << 0, /* a step that does not exit 0 ends the run */
        SBX_PLAN_JAVASCRIPT = 1U << 1,      /* one node step running sbx_plan_js_code(): a warm node
                                             * given that code may run it instead */
        SBX_PLAN_FLAGS_ALL = SBX_PLAN_STOP_ON_FAILURE | SBX_PLAN_JAVASCRIPT,
};

typedef struct sbx_plan {
        uint64_t timeout_ms;   /* the whole run, every step included; > 0 */
        uint64_t memory_bytes; /* per sandbox; 0: the engine's default cgroup-less run */
        uint64_t pids;
        uint64_t tmp_bytes;
        uint64_t output_bytes;   /* per stream of each step */
        uint64_t artifact_bytes; /* all artifacts together */
        uint32_t flags;          /* SBX_PLAN_STOP_ON_FAILURE */
        sbx_plan_file *files;
        uint32_t n_files;
        sbx_plan_step *steps;
        uint32_t n_steps; /* >= 1 */
        char **artifacts; /* relative, clean paths */
        uint32_t n_artifacts;
        /* An environment's (hull's extension hullEnvironment on Run): every step's sandbox gets
         * the layer read-only at /env with its variables, and the network (sbx_net_mode: none,
         * limited through a proxy the running process starts) */
        char *layer_dir; /* NULL: none */
        uint32_t net;    /* sbx_net_mode */
        bool net_allow_package_managers;
        char **net_hosts; /* limited: the allowed hosts, NULL-terminated (NULL: none) */
        uint32_t n_net_hosts;
        uint32_t tier; /* sbx_tier of every step's sandbox: container (0) or kernel */
        /* kernel: runsc's --platform as hull serve's check chose it ("": runsc's default) */
        char kernel_platform[SBX_OCI_PLATFORM_MAX];
} sbx_plan;

typedef enum sbx_plan_outcome {
        SBX_PLAN_COMPLETED = 1,    /* the plan ran (a failing step included) */
        SBX_PLAN_SETUP_FAILED = 2, /* the files could not be written; no step ran */
        SBX_PLAN_TIMED_OUT = 3,    /* the run's deadline ended it */
        SBX_PLAN_CANCELLED = 4,    /* the broker stopped it (hull serve is shutting down) */
        SBX_PLAN_ERROR = 5,        /* a sandbox could not be set up; detail says why */
        SBX_PLAN_NOT_STARTED = 6,  /* the broker refused or dropped the run: nothing ran */
} sbx_plan_outcome;

enum {
        SBX_STEP_EXITED = 1U << 0, /* exit_code is valid */
        SBX_STEP_TIMED_OUT = 1U << 1,
        SBX_STEP_OOM = 1U << 2,
        SBX_STEP_OUT_TRUNCATED = 1U << 3,
        SBX_STEP_ERR_TRUNCATED = 1U << 4,
        SBX_STEP_INTERRUPTED = 1U << 5, /* stopped by the broker */
        SBX_STEP_FLAGS_ALL = (1U << 6) - 1,
};

typedef struct sbx_step_result {
        int32_t status; /* exit code; 124 timeout; 128+N killed by signal N */
        int32_t term_signal;
        uint32_t flags; /* SBX_STEP_* */
        uint64_t wall_us;
        char *out, *err; /* NUL-terminated, may contain NULs */
        size_t out_len, err_len;
} sbx_step_result;

typedef struct sbx_plan_result {
        uint32_t outcome; /* sbx_plan_outcome */
        char *detail;     /* "" when completed; NUL-terminated, no NULs */
        uint64_t started_unix_ms, ended_unix_ms;
        bool artifacts_truncated; /* the artifact budget dropped one or more that existed */
        sbx_step_result *steps;   /* the steps that ran, in order */
        uint32_t n_steps;
        sbx_plan_file *artifacts; /* those that existed and fit, in request order */
        uint32_t n_artifacts;
        /* A limited network's connection log (sbx-net.h's lines, whole lines only, at most
         * SERVE_NET_LOG_ANSWER_MAX bytes); NULL when the plan had no limited network. */
        char *net_log;
        size_t net_log_len;
} sbx_plan_result;

/* A path a request may name: at most PLIM_PATH_MAX bytes, relative, no empty, "." or ".."
 * segment, no backslash and no control character. */
bool sbx_plan_path_is_clean(const char *p, size_t len);

/* Free what a plan or a result holds (decoded, or built by the caller with malloc'ed parts);
 * the struct is zeroed. */
void sbx_plan_done(sbx_plan *r);
void sbx_plan_result_done(sbx_plan_result *r);

/* Free n files and the array. */
void sbx_plan_files_free(sbx_plan_file *f, uint32_t n);

struct sbx_result;
struct sbx_session;
struct sbx_held;
struct sbx_cgroup;

/* A step's result from what the sandbox reported (takes its output buffers). */
void sbx_step_from_result(sbx_step_result *s, struct sbx_result *sr);

/* Set res->detail to a formatted line of at most BRK_DETAIL_MAX bytes (best effort). */
void sbx_plan_set_detail(sbx_plan_result *res, const char *fmt, ...) _printf_(2, 3);

/* Run a plan (files, steps in order, artifacts) in a session's sandbox: the files are written
 * and the artifacts read through its workspace jail with the file-system ids fs_uid/fs_gid (the
 * sandbox user on the host; they become this thread's own for the while), each step is a call
 * of its init (what a step leaves is swept before the next), cancel_fd (or -1) readable stops
 * it, cg (or NULL) tells OOM kills. Returns 0 with *res an answer (completed, timed out, set-up
 * failed, cancelled), or a negative errno with *e when a step could not be run (the session
 * broke; *res holds SBX_PLAN_ERROR and what ran before). */
int sbx_plan_run_in_session(struct sbx_session *sx, uid_t fs_uid, gid_t fs_gid, const struct sbx_cgroup *cg,
                            int cancel_fd, const sbx_plan *req, sbx_plan_result *res, hull_error *e);
/* The code of a SBX_PLAN_JAVASCRIPT plan (its file, or node's -e argument); false: not one. */
bool sbx_plan_js_code(const sbx_plan *req, const char **ret, size_t *ret_len);
/* The same run of a SBX_PLAN_JAVASCRIPT plan, its step given to held (a node started in sx ahead
 * of it, waiting for code on its stdin: sbx_session_hold) where that node is still there; the
 * held node is used or killed either way. */
int sbx_plan_run_held(struct sbx_session *sx, struct sbx_held *held, uid_t fs_uid, gid_t fs_gid,
                      const struct sbx_cgroup *cg, int cancel_fd, const sbx_plan *req, sbx_plan_result *res,
                      hull_error *e);
