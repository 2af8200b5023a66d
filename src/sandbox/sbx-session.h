/* sbx-session.h: sandbox sessions. A session is one long-lived container-tier sandbox whose
 * pid 1 is hull's own small init (see sbx-container.c): it waits for calls on a control socket,
 * runs each as its child, and when the call ends kills every process in the sandbox except the
 * session's interpreters. Files in /workspace persist between calls; processes do not.
 *
 * Two halves:
 * - the box (sbx_session_start / sbx_session_box_end): made and owned by one single-threaded
 *   process (hull serve's broker keeper, or a test), which is the parent of the init, holds its
 *   cgroups and removes them when the session ends;
 * - the handle (sbx_session): the control socket, the workspace directory and the interpreters,
 *   used by any thread of any process that received those fds; one call at a time.
 *
 * The host and the init speak over a SOCK_SEQPACKET socketpair: host → init an sbx_ctl_msg
 * (RUN a command with its stdio fds, START an interpreter, SIGNAL, SWEEP), init → host fixed-size
 * sbx_report records (HELLO with the workspace fd, EXIT, STARTED, SWEPT, ERROR). EOF on the
 * socket ends the session: the init exits and the kernel kills everything in its pid namespace.
 *
 * Interpreters (cells) speak a framed JSON protocol on their own socket: runtime/cell.py and
 * runtime/cell.js; python may be forked from hull serve's zygote (runtime/zygote.py), which
 * keeps numpy and pandas imported and enters the session's namespaces after the fork. Their
 * sources reach them on fd 0, a sealed memfd read by runtime/boot.py or boot.js, never on a
 * command line; in ps they are hull-zygote, hull-python and hull-node. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"
#include "sbx-cgroup.h"
#include "sbx.h"

typedef struct sbx_session_spec {
        uint64_t memory_bytes; /* memory cgroup limit, also the workspace tmpfs size cap */
        uint64_t pids;
        uint64_t millicpus;
        uint64_t tmp_bytes;      /* /tmp and /dev/shm */
        const char *handles_dir; /* host directory bound read-only at /handles, or NULL */
        const char *layer_dir;   /* an environment's layer, bound read-only at /env, or NULL */
        const char *skills_dir;  /* an agent's skills, bound read-only at /skills, or NULL */
        const char *mnt_dir;     /* a session's resources, bound read-only at /mnt, or NULL */
        char *const *env;        /* K=V for every call and interpreter (over the defaults, under a
                                  * call's own), NULL-terminated, or NULL; borrowed (the init
                                  * has its own copy from the clone) */
        bool use_cgroups;
        sbx_net_mode net;                 /* none, limited or unrestricted (sbx-net.h) */
        const sbx_net_policy *net_policy; /* limited: borrowed; its log_fd gets a line per
                                           * connection (e.g. a file in the session's directory) */
        sbx_tier tier;                    /* SBX_TIER_CONTAINER (0), or SBX_TIER_KERNEL: one gVisor sandbox, the same
                                           * control protocol spoken by a shim that drives runsc (sbx-kernel-session.c);
                                           * net none or limited; no zygote (bpf_fd -1), cgroups are runsc's */
        const char *template_dir;         /* kernel tier: where warm-start templates are kept (checkpoints of
                                           * a sandbox whose python imported numpy and pandas, restored per
                                           * session; sbx-kernel-warm.c), or NULL: every session starts cold */
} sbx_session_spec;

/* The session as its owner holds it. */
typedef struct sbx_session_box {
        pid_t pid; /* the init */
        int pidfd;
        int ctl_fd;    /* host end of the control socket */
        int ws_fd;     /* /workspace of the sandbox (O_DIRECTORY) */
        int bpf_fd;    /* sealed memfd: the seccomp programs, for the zygote */
        int cg_fds[3]; /* cgroup membership files opened for writing, for the zygote */
        size_t n_cg_fds;
        int cg_dir_fd;  /* O_PATH: the cgroup that counts the sandbox's tasks (v1 pids, or v2's),
                         * for sbx_session.cg_dir_fd; -1 without one */
        uid_t host_uid; /* who the sandbox user is on the host */
        gid_t host_gid;
        sbx_cgroup cg;
        bool have_cg;
        sbx_net_proxy *proxy; /* limited: the proxy's threads in the owner's process, stopped
                               * by sbx_session_box_end; NULL otherwise */
        pid_t pasta_pid;      /* unrestricted: pasta, a child of the owner, killed by
                               * sbx_session_box_end; 0 otherwise */
        bool kernel;          /* the kernel tier: pid is the shim, which ends the sandbox at EOF
                               * on the control socket or on SIGTERM (never SIGKILL it first) */
} sbx_session_box;

/* The kernel tier's sessions can start here (runsc is installed, hull runs as root): 0, or a
 * negative errno with *e saying what to do. */
int sbx_session_kernel_available(hull_error *e);

/* Start a session: the container set-up of `hull exec`, then the init waits for calls. Must be
 * called by a single-threaded process, which becomes the init's parent (the init dies with it).
 * Returns 0 with *ret filled, or a negative errno with *e naming the layer. */
int sbx_session_start(const sbx_session_spec *spec, sbx_session_box *ret, hull_error *e);

typedef struct sbx_session_end_info {
        bool oom_killed; /* the memory cgroup killed something */
        bool init_died;  /* the init ended on its own (not by sbx_session_box_end) */
        int init_status; /* its wait status */
        uint64_t peak_memory_bytes;
        sbx_net_proxy_stats net; /* limited: the proxy's totals */
} sbx_session_end_info;

/* End a session: SIGKILL the init (a no-op when it already ended), reap it, read the cgroup
 * stats, remove the cgroups and close every fd of the box. Returns 0 or a negative errno with *e
 * naming what stayed behind. */
int sbx_session_box_end(sbx_session_box *b, sbx_session_end_info *ret, hull_error *e);

/* Files the host makes in a session's workspace must be the sandbox user's: the workspace is a
 * tmpfs of the session's user namespace, where hull's own uid may not exist (EOVERFLOW), and the
 * sandbox user must be able to change them. As root, switch this thread's file-system ids to
 * uid/gid (the sandbox user on the host) and back; otherwise they are hull's uid already. */
void sbx_session_fs_enter(uid_t uid, gid_t gid);
void sbx_session_fs_leave(void);

/* ---- the handle ---- */

typedef enum sbx_lang {
        SBX_LANG_PYTHON,
        SBX_LANG_JAVASCRIPT,
        _SBX_LANG_MAX,
} sbx_lang;

const char *sbx_lang_to_string(sbx_lang l);
int sbx_lang_from_string(const char *s, sbx_lang *ret);

typedef struct sbx_interp {
        bool running;
        pid_t pid;          /* inside the session's pid namespace */
        int sock;           /* framed control socket */
        int out_fd, err_fd; /* read ends of its stdout and stderr (non-blocking) */
        bool from_zygote;
        bool hello_pending; /* started by sbx_session_warm; the next cell reads its hello */
        int pidfd;          /* a pidfd of it (on the host), found in the session's cgroup by its
                             * pid right after its hello, before it ran any code; or -1 */
} sbx_interp;

typedef struct sbx_session {
        int ctl_fd; /* borrowed: the caller closes them */
        int ws_fd;
        int pidfd; /* for zygote spawns; -1 when not available */
        int bpf_fd;
        int cg_fds[3];
        size_t n_cg_fds;
        int cg_dir_fd;      /* borrowed: the box's cg_dir_fd, or -1 (set after sbx_session_init):
                             * with it a clean cell needs no sweep (sbx-session-cgroup.c) */
        int pids_fd;        /* owned: its pids.current, opened on first use */
        uint64_t sweeps;    /* round trips to the init for a sweep (tests count them) */
        int zygote_fd;      /* SOCK_SEQPACKET to hull serve's zygote, or -1 */
        int hangup_fd;      /* the caller's connection during a call, or -1: when its peer hangs
                             * up (sock_hung_up(): a reset or a closed unix socket; a half-close
                             * is not one), sbx_session_run stops the command as cancel_fd would
                             * (cells go on: their interpreter's state is worth more) */
        bool dead;          /* the control socket broke: every call fails */
        char *const *env;   /* the session's own K=V (an environment's layer: sbx_session_spec.env),
                             * borrowed, or NULL: what interpreters forked from the zygote get (the
                             * init adds them to every RUN and START itself) */
        bool net_proxy_env; /* the box is SBX_NET_LIMITED: every call and interpreter gets
                             * HTTP_PROXY and the rest (set it after sbx_session_init) */
        sbx_interp interp[_SBX_LANG_MAX];
        bool kernel;                      /* the box is the kernel tier's: results say tier "kernel" (set it after
                                           * sbx_session_init) */
        char warning[HULL_ERROR_MSG_MAX]; /* the last fallback taken, "" when none */
} sbx_session;

/* A handle on the fds of a box (they stay owned by the box or the caller). */
void sbx_session_init(sbx_session *s, int ctl_fd, int ws_fd, int pidfd, int bpf_fd, const int *cg_fds, size_t n_cg_fds,
                      int zygote_fd);
/* Stop the interpreters (closing their sockets ends them) and close their fds. */
void sbx_session_done(sbx_session *s);

typedef struct sbx_session_call {
        char *const *argv;     /* NULL-terminated */
        char *const *env;      /* extra K=V over the defaults, NULL-terminated, or NULL */
        uint64_t timeout_ms;   /* 0: none */
        uint64_t output_bytes; /* per stream, head + tail */
        int cancel_fd;         /* signalfd/eventfd or -1: readable stops the call */
} sbx_session_call;

/* Run a command in the session and wait for it; when it ends, every process it left is killed.
 * Returns 0 with *ret (how it ended, output; free with sbx_result_done), or a negative errno with
 * *e when the call could not be made (-EPIPE: the session is gone). */
int sbx_session_run(sbx_session *s, const sbx_session_call *c, sbx_result *ret, hull_error *e);

/* A command started ahead of its input (a warm interpreter waiting for its code): it runs now,
 * its stdin held open by hull; sbx_session_held_run gives it its input, closes its stdin and
 * waits for it as sbx_session_run does, its clock starting there. */
typedef struct sbx_held {
        int in_fd;          /* hull's end of the command's stdin; -1: none held */
        int out_fd, err_fd; /* read ends of its stdout and stderr */
} sbx_held;

int sbx_session_hold(sbx_session *s, char *const *argv, sbx_held *ret, hull_error *e);
/* -ECHILD, nothing sent: the held command has ended already (drop it, then run another way). */
int sbx_session_held_run(sbx_session *s, sbx_held *h, const char *input, size_t len, const sbx_session_call *c,
                         sbx_result *ret, hull_error *e);
/* Kill a held command that was not used and wait for the init's report of its end. */
int sbx_session_held_drop(sbx_session *s, sbx_held *h, hull_error *e);

/* Run command with /bin/sh in the session, in the directory and with the exported variables
 * the previous sbx_session_shell left (kept in the sandbox's /tmp). env (NAME=VALUE entries) is
 * exported for this call only. */
int sbx_session_shell(sbx_session *s, const char *command, char *const *env, uint64_t timeout_ms, uint64_t output_bytes,
                      int cancel_fd, sbx_result *ret, hull_error *e);

typedef struct sbx_cell_result {
        int exit_code; /* 0 ran, 1 raised, 124 deadline */
        bool timed_out;
        bool interpreter_started; /* a fresh interpreter ran this cell */
        bool interpreter_ended;   /* it is gone after this cell (deadline, crash) */
        char *out, *err;          /* NUL-terminated, may contain NULs */
        size_t out_len, err_len;
        bool out_truncated, err_truncated;
        uint64_t wall_us;
} sbx_cell_result;

/* Run code in the session's persistent interpreter of lang, starting one when none runs. */
int sbx_session_cell(sbx_session *s, sbx_lang lang, const char *code, size_t len, uint64_t timeout_ms,
                     uint64_t output_bytes, int cancel_fd, sbx_cell_result *ret, hull_error *e);
/* The same, telling the interpreter the call's exchange directory (the path inside the sandbox,
 * e.g. /workspace/.hull/x-...; NULL: none), where the hull module's save/emit/publish write. */
int sbx_session_cell_x(sbx_session *s, sbx_lang lang, const char *code, size_t len, const char *exchange,
                       uint64_t timeout_ms, uint64_t output_bytes, int cancel_fd, sbx_cell_result *ret, hull_error *e);
void sbx_cell_result_done(sbx_cell_result *r);

/* Start the interpreter of lang when none runs, without waiting for it to be ready (a cold one:
 * the init's report is awaited, its hello is not); the next cell waits for what is left. One
 * started from the zygote is started whole (a fork: quick). Returns 0 or a negative errno. */
int sbx_session_warm(sbx_session *s, sbx_lang lang, hull_error *e);

/* ---- the zygote ---- */

/* Start runtime/zygote.py (numpy and pandas imported once) as a child of the calling process,
 * which must be single-threaded (hull serve calls it before its threads). Returns the host end
 * of its request socket, or a negative errno with *e. It dies with its parent. With hull_reaper
 * (only when the calling binary is hull, whose main() knows `__reap-children`), each
 * interpreter's waiting parent execs this binary as that reaper instead of staying a copy of the
 * zygote (about 1.2 MiB less per session). */
int sbx_zygote_start_reaped(pid_t *ret_pid, bool hull_reaper, int *ret_lift_fd, hull_error *e);
static inline int sbx_zygote_start(pid_t *ret_pid, hull_error *e) {
        return sbx_zygote_start_reaped(ret_pid, false, NULL, e);
}
/* With ret_lift_fd (hull serve), the zygote warms up (python's start, numpy's and pandas'
 * imports: a few hundred ms of CPU) at the lowest priority of its scheduling group (the
 * kernel's autogroup of its session, SBX_ZYGOTE_WARMUP_NICE), so on a busy machine it does not
 * compete with the caller's first requests; it lifts itself to the default once ready. Then
 * *ret_lift_fd is its /proc/PID/autogroup opened for writing, or -1 (no autogroup here): give it
 * to sbx_zygote_lift when a session first needs it before it is ready. */
void sbx_zygote_lift(int fd);

/* Wait (at most timeout_ms) for the zygote's ready message. Returns 0 or a negative errno. */
int sbx_zygote_wait_ready(int zygote_fd, uint64_t timeout_ms, hull_error *e);
