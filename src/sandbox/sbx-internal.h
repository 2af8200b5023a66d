/* sbx-internal.h: what the tiers share inside src/sandbox/ (sbx-exec.c): the child-to-parent
 * report, the async-signal-safe exec path, and the supervisor that captures output and enforces
 * deadlines. The container tier's own entry points are in sbx-container.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "capture.h"
#include "error.h"
#include "limits.h"
#include "sbx.h"
#include "sbx-cgroup.h"
#include "sbx-seccomp.h"

/* One fixed-size record on the report pipe; smaller than PIPE_BUF, so each write is atomic. */
typedef enum sbx_report_kind {
        SBX_REPORT_ERROR = 1, /* setup failed at step `what` with err (negative errno) */
        SBX_REPORT_EXIT = 2,  /* the command ended: exit_code or term_signal */
        /* 3 was SBX_REPORT_JOINED: the v1 cgroups are joined through fds now, nothing to wait for */
        /* A session's init, over its control socket: */
        SBX_REPORT_HELLO = 4,   /* set up; the workspace directory fd rides along */
        SBX_REPORT_STARTED = 5, /* an interpreter started: its pid (inside) in exit_code */
        SBX_REPORT_SWEPT = 6,   /* a SWEEP is done: nothing but init and the interpreters runs */
} sbx_report_kind;

/* Host → session init, one SOCK_SEQPACKET message: this head, then argc + envc NUL-terminated
 * strings (RUN and START). RUN carries the stdin, stdout and stderr fds, START also the
 * interpreter's control socket (its fd 3). Every message restates which pids (inside) are the
 * interpreters, which SWEEP and the end of a RUN spare. */
typedef enum sbx_ctl_type {
        SBX_CTL_RUN = 1,    /* run argv; EXIT when it ended and the rest was swept */
        SBX_CTL_START = 2,  /* start an interpreter; STARTED */
        SBX_CTL_SIGNAL = 3, /* send arg (a signal) once to every process but init and interpreters */
        SBX_CTL_SWEEP = 4,  /* SIGKILL every process but init and interpreters until none is left; SWEPT */
} sbx_ctl_type;

typedef struct sbx_ctl_head {
        uint32_t type;
        int32_t arg;
        uint32_t n_exempt;
        int32_t exempt[SBX_SESSION_INTERP_MAX];
        uint32_t argc, envc;
        uint32_t payload_len;
} sbx_ctl_head;

typedef struct sbx_report {
        int kind;
        int err;
        int exited;
        int exit_code;
        int term_signal;
        char what[SBX_CHILD_MSG_MAX];
} sbx_report;

/* The step name of a failed execve(): the command's fault, not the sandbox's. */
#define SBX_STEP_EXEC "cannot execute"

/* Child side, async-signal-safe: send an error report and _exit(SBX_EXIT_SETUP). */
_noreturn_ void sbx_child_fail(int report_fd, const char *what, int err);

/* The same, naming the path the step failed on ("what path", cut to fit). */
_noreturn_ void sbx_child_fail_path(int report_fd, const char *what, const char *path, int err);

/* Child side, async-signal-safe: set stdio (and fd 3 when fd3 >= 0), rlimits and signal state, then execve argv[0]
 * (searched in envp's PATH when it has no slash). Returns only on failure, with -errno. */
int sbx_child_exec(char *const *argv, char *const *envp, int in_fd, int out_fd, int err_fd, int fd3,
                   const struct rlimit *nofile, const struct rlimit *fsize);

/* The command's stdin: /dev/null, or a sealed in-memory copy of path (a regular file of at most
 * SBX_STDIN_BYTES_MAX bytes). Never the host file itself: through /proc/self/fd/0 the command
 * could reopen it for writing. Returns the fd (O_CLOEXEC) or a negative errno with *e set. */
int sbx_open_stdin(const char *path, hull_error *e);

/* Whether our fd (0, 1 or 2) may be handed to a sandbox as is (sbx_spec.stdio): a pipe, a socket,
 * a terminal or /dev/null; 0, or -EINVAL with *e naming the fd and what to do. */
int sbx_stdio_fd_ok(int fd, hull_error *e);

/* Build the scrubbed environment: fixed defaults (with net_proxy, HTTP_PROXY and the rest
 * pointing at a limited sandbox's proxy) overridden by extra (K=V), NULL-terminated.
 * Returns 0 or -ENOMEM; free the result with sbx_env_free(). */
int sbx_env_build(char *const *extra, const char *home, bool net_proxy, char ***ret);
void sbx_env_free(char **env);
void sbx_env_freep(char ***env); /* for _cleanup_ */

typedef struct sbx_supervise_args {
        pid_t pid;               /* the process to wait for (container: its init) */
        pid_t kill_target;       /* signal target on timeout: pid, or -pgid */
        int out_fd, err_fd;      /* read ends of the output pipes */
        int report_fd;           /* read end of the report pipe, -1 if none */
        uint64_t timeout_ms;     /* 0: none */
        uint64_t start_us;       /* monotonic start, for wall time */
        bool kill_group_at_exit; /* process tier: SIGKILL the group when the command exits */
        int cancel_fd;           /* signalfd or -1, see sbx_spec */
} sbx_supervise_args;

typedef struct sbx_supervise_out {
        int wait_status; /* from wait4 of pid */
        struct rusage rusage;
        bool timed_out;
        int interrupted_signal;
        bool have_exit;  /* an SBX_REPORT_EXIT arrived */
        bool have_error; /* an SBX_REPORT_ERROR arrived */
        sbx_report exit_report, error_report;
        uint64_t end_us;
} sbx_supervise_out;

/* Capture output into out/err, enforce the deadline (takes ownership of a->out_fd, a->err_fd
 * and a->report_fd, closed on every path) (SIGTERM, then SIGKILL after the grace
 * period), and reap pid. Returns 0 or a negative errno with *e set (the sandbox is killed). */
int sbx_supervise(const sbx_supervise_args *a, capture *out, capture *err, sbx_supervise_out *ret, hull_error *e);

uint64_t sbx_now_us(void);

/* Fill *ret from the supervisor's outcome and the captures (takes the captured bytes). */
int sbx_result_fill(sbx_result *ret, const sbx_supervise_out *so, capture *out, capture *err, hull_error *e);

/* An fd the sandbox's child hands over on sync_fd (SCM_RIGHTS with the byte 'n'; the limited
 * network's proxy socket), waited for SBX_START_TIMEOUT_MS. Returns the fd, or a negative errno
 * with *e saying what (what names what did not arrive). */
int sbx_receive_fd(int sync_fd, const char *what, hull_error *e);

/* Unrestricted network, in the sandbox's network namespace before pasta: unreachable routes for
 * 169.254.0.0/16 (cloud metadata, link-local) and fd00:ec2::254 (no IPv6: skipped). Over
 * rtnetlink, without allocating (a forked child may call it). Returns 0, or a negative errno with
 * *ret_what naming the route. */
int sbx_net_block_metadata(const char **ret_what);

/* ---- the interpreters' sources (sbx-session.c, sbx-zygote.c) ---- */

#define SBX_PYTHON_BIN "/usr/bin/python3"

/* A sealed memfd at offset 0 holding the n sources NUL-separated: what runtime/boot.py and
 * boot.js read from their fd 0, so no source is on a command line (ps, /proc/PID/cmdline).
 * Returns the fd or a negative errno with *e. */
int sbx_sources_memfd(const char *const *src, size_t n, hull_error *e);

/* ---- a session's cgroup from the host (sbx-session-cgroup.c) ---- */

/* Open b's cgroup membership files for writing (b->cg_fds) and the directory that counts its
 * tasks (b->cg_dir_fd, -1 when there is none). Returns 0 or a negative errno with *e. */
struct sbx_session_box;
int sbx_session_open_cgroup(struct sbx_session_box *b, hull_error *e);

/* Find in's pidfd (in->pidfd, else -1): the process of the session's cgroup whose pid, in the
 * session's pid namespace, is in->pid. Call right after its hello, before it runs any code. */
struct sbx_session;
struct sbx_interp;
void sbx_interp_find(struct sbx_session *s, struct sbx_interp *in);

/* True when nothing but the init and the running interpreters exists in the session now: the
 * cgroup's task count read first is exactly theirs, and each of them (pidfds) is alive after
 * it. False when that cannot be told (no cgroup, an interpreter without a pidfd): sweep then. */
bool sbx_session_quiet(struct sbx_session *s);
