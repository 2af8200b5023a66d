/* broker.h: the sandbox broker. hull serve forks it at start-up, before any thread exists; it is
 * single-threaded and owns every clone. For each run the daemon hands it one end of a fresh
 * socketpair (SCM_RIGHTS over the control socket); the broker forks a worker for it (at most
 * max_runs at once, a bounded queue behind), and the worker reads the request from that socket,
 * runs its steps with sbx_run() in a fresh work directory, and writes the result back. The
 * broker dies with the daemon (PR_SET_PDEATHSIG) and stops its workers' sandboxes when it goes. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker-msg.h"
#include "error.h"
#include "sbx-net.h"
#include "sbx.h"

typedef struct brk_config {
        unsigned max_runs;     /* workers at once, 1..SERVE_RUNS_MAX */
        unsigned queue_max;    /* runs waiting for a worker; more are refused */
        const char *work_root; /* existing directory, searchable by everyone (0711); each run
                                * gets a fresh directory below it */
        bool use_cgroups;      /* false: --no-cgroup */
        /* A spare worker keeps one sandbox set up in advance with these limits (runs asking for
         * them start at once, the set-up off their clock); 0 memory: no spare. */
        uint64_t spare_memory_bytes, spare_pids, spare_tmp_bytes;
        /* Node is there: after a javascript run, the spare also starts a node waiting for the
         * next one's code (plim_js_warm_argv), so that run skips node's own start. */
        bool warm_javascript;
        /* The kernel tier's runsc as hull serve probed it (the broker is a fork: it stays
         * valid); NULL: runs asking for the kernel tier find it themselves. */
        const struct sbx_oci_runtime *kernel_runtime;
} brk_config;

typedef struct brk_broker brk_broker;

/* Fork the broker. Must be called while the process is single-threaded. Returns 0 with *ret
 * (free with brk_stop()), or a negative errno with *e set. */
int brk_start(const brk_config *cfg, brk_broker **ret, hull_error *e);

/* Run one request: wait up to BRK_QUEUE_WAIT_MS for a worker to take it, then up to wait_ms for
 * its result (the run's own time counts from the moment a worker took it). Blocks: call it from a thread of
 * its own; any number of threads may call it at once. Returns 0 with *ret filled (free with
 * sbx_plan_result_done); outcome SBX_PLAN_NOT_STARTED (with a detail) when the request was never
 * sent: the broker refused or dropped the run, is gone, or no worker asked for it in time.
 * Returns a negative errno with *e set only when the run may have started: -EPROTO (the worker
 * ended without a result), -ETIMEDOUT, -EBADMSG (a malformed result), -ENOMEM, -EINVAL (req
 * out of the message's bounds), -ECANCELED (see watch_fd).
 * watch_fd (or -1): the caller's connection; when its peer hangs up (sock_hung_up(): a reset or a
 * closed unix socket, not a half-close), the run is dropped from the queue or, once started,
 * stopped, and brk_call returns -ECANCELED at once (e says which; never NOT_STARTED: a caller
 * that hung up is not told to retry). */
int brk_call(brk_broker *b, const sbx_plan *req, uint64_t wait_ms, int watch_fd, sbx_plan_result *ret, hull_error *e);

/* Stop every run now: the broker sends its workers SIGTERM, they stop their sandboxes and
 * answer with SBX_PLAN_CANCELLED; queued runs are dropped (their callers get -EPIPE). The
 * broker exits once its workers have. Thread-safe. */
void brk_cancel_all(brk_broker *b);

/* A pidfd of the broker (owned by b): it polls readable when the broker has exited. */
int brk_pidfd(const brk_broker *b);

/* True while the broker process runs. Thread-safe. */
bool brk_alive(brk_broker *b);

/* Close the control socket (the broker finishes its runs and exits), wait for the broker up to
 * BRK_STOP_GRACE_MS plus the slack of its workers, kill it if it is still there, and free b. */
void brk_stop(brk_broker *b);

/* ---- sessions ----
 * The broker forks a keeper per session: it starts the session's sandbox (sbx_session_start),
 * hands the daemon the fds to talk to it, and stays its parent until the daemon hangs up (or
 * the sandbox ends by itself), then kills it and removes its cgroups. */
typedef struct brk_session_spec {
        uint64_t memory_bytes;
        uint64_t pids;
        uint64_t millicpus;
        uint64_t tmp_bytes;
        const char *handles_dir; /* bound read-only at /handles; NULL: none */
        const char *layer_dir;   /* an environment's layer, bound read-only at /env; NULL: none */
        const char *skills_dir;  /* an agent's skills, bound read-only at /skills; NULL: none */
        const char *mnt_dir;     /* a session's resources, bound read-only at /mnt; NULL: none */
        sbx_net_mode net;        /* SBX_NET_NONE or SBX_NET_LIMITED */
        /* limited: the policy, borrowed for the call. The keeper gets a copy (at most
         * SBX_NET_ALLOW_MAX allowed_hosts and BRK_NET_CIDRS_MAX allow_cidrs; hosts_file is not
         * carried) and its log_fd over SCM_RIGHTS; it runs the proxy's threads itself (it never
         * forks after the sandbox started). */
        const sbx_net_policy *net_policy;
        sbx_tier tier; /* SBX_TIER_CONTAINER, or SBX_TIER_KERNEL (gVisor: network none) */
} brk_session_spec;

typedef struct brk_session {
        int keeper_fd; /* hang up to end the session; readable once it ended by itself */
        int ctl_fd, ws_fd, pidfd, bpf_fd;
        int cg_fds[3];
        size_t n_cg_fds;
        int cg_dir_fd; /* O_PATH: the cgroup that counts the sandbox's tasks, or -1 */
        uid_t host_uid;
        gid_t host_gid;
} brk_session;

/* Start a session. Blocks up to the sandbox's start time; any thread. Returns 0 with *ret
 * (free with brk_session_close) or a negative errno with *e set (nothing is left running). */
int brk_session_open(brk_broker *b, const brk_session_spec *spec, brk_session *ret, hull_error *e);

/* After keeper_fd became readable: did the sandbox end by itself, and why. Returns 1 when it
 * did (with *ret_oom), 0 when not (yet). */
int brk_session_ended(brk_session *s, bool *ret_oom);

/* Close every fd: the keeper kills the sandbox and removes its cgroups. */
void brk_session_close(brk_session *s);
