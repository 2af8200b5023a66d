/* sbx.h: the sandbox engine. One call runs one command in a fresh sandbox of the requested tier
 * and reports how it ended. The container tier isolates with namespaces, a private root,
 * seccomp, dropped capabilities and cgroups; the process tier only scrubs and limits. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "sbx-net.h"

typedef enum sbx_tier {
        SBX_TIER_CONTAINER,
        SBX_TIER_PROCESS,
        SBX_TIER_KERNEL, /* gVisor's runsc: a second kernel (sbx-oci.h) */
} sbx_tier;

/* Exit statuses of `hull exec` besides the command's own. */
enum {
        SBX_EXIT_TIMEOUT = 124,
        SBX_EXIT_SETUP = 125,
        SBX_EXIT_SIGNAL_BASE = 128,
};

typedef struct sbx_spec {
        sbx_tier tier;
        char *const *argv;       /* command and arguments, NULL-terminated; borrowed */
        char *const *env;        /* extra K=V entries, NULL-terminated; borrowed */
        const char *workdir;     /* host directory bound at /workspace (container) or cwd */
        const char *rootfs;      /* container: prepared root instead of the host's /usr; NULL */
        const char *handles_dir; /* container: host directory bound read-only at /handles; NULL */
        const char *layer_dir;   /* container: an environment's layer (env-layer.h), bound read-only at /env; NULL */
        const char *stdin_path;  /* NULL: stdin is empty (/dev/null) */
        uint64_t timeout_ms;     /* 0: none */
        uint64_t memory_bytes;   /* 0: no memory cgroup */
        uint64_t pids;           /* 0: no pids cgroup */
        uint64_t millicpus;      /* 0: no CPU quota */
        uint64_t tmp_bytes;      /* container: size of /tmp (and /dev/shm) */
        uint64_t output_bytes;   /* per stream, head + tail */
        bool use_cgroups;        /* false only when the caller said --no-cgroup */
        bool stream_output;      /* also write the head of stdout/stderr to our own fds 1
                                  * and 2 as it arrives (see out_head_len) */
        int cancel_fd;           /* a signalfd (or -1): a signal on it stops the run like a
                                  * timeout and is reported in interrupted_signal */
        sbx_net_mode net;        /* container: SBX_NET_NONE (loopback only) or
                                  * SBX_NET_LIMITED (see sbx-net.h); the process tier
                                  * refuses anything but none */
        const sbx_net_policy *net_policy; /* limited: what the proxy lets through; borrowed */
        bool stdio;                       /* container: the command's stdin, stdout and stderr are our own
                                           * fds 0, 1 and 2, live (nothing captured or buffered:
                                           * stdin_path, stream_output and output_bytes do not apply;
                                           * out/err of the result stay empty). Each must be a pipe, a
                                           * socket, a terminal or /dev/null (a file could be reopened
                                           * for writing through /proc/self/fd): else -EINVAL */
        /* kernel: runsc as probed (sbx-oci.h); NULL: found at each run (sbx_oci_runtime_find) */
        const struct sbx_oci_runtime *kernel_runtime;
} sbx_spec;

typedef struct sbx_result {
        bool exited; /* exit_code is valid */
        int exit_code;
        int term_signal; /* signal that ended the command, 0 if none */
        bool timed_out;
        int interrupted_signal; /* the signal that made the caller stop the run, or 0 */
        bool oom_killed;
        char *out, *err; /* captured bytes (NUL-terminated, may contain NULs) */
        size_t out_len, err_len;
        size_t out_head_len, err_head_len; /* the first bytes of out/err: already streamed when
                                            * stream_output was set */
        uint64_t out_total, err_total;
        uint64_t out_dropped, err_dropped;
        uint64_t wall_us, cpu_user_us, cpu_sys_us;
        uint64_t peak_memory_bytes;       /* cgroup peak when known, else max RSS */
        sbx_net_proxy_stats net;          /* limited: the proxy's totals; zero otherwise */
        const char *tier;                 /* "container" or "process" */
        char warning[HULL_ERROR_MSG_MAX]; /* something went wrong after the command ran (e.g. a
                                           * cgroup left behind); "" when all went well */
} sbx_result;

/* Run spec->argv to completion. Returns 0 when the command was started and ended (how it ended
 * is in *ret, and ret->warning says what went wrong after, if anything); a negative errno with
 * *e naming the layer and reason when the sandbox could not be set up — then nothing ran — or,
 * rarely, when collecting the result failed (out of memory). *ret owns out/err: free with
 * sbx_result_done(). */
int sbx_run(const sbx_spec *spec, sbx_result *ret, hull_error *e);

void sbx_result_done(sbx_result *r);

/* The exit status `hull exec` reports for a result: exit code, 124, or 128+signal. */
int sbx_result_exit_status(const sbx_result *r);

const char *sbx_tier_to_string(sbx_tier t);
int sbx_tier_from_string(const char *s, sbx_tier *ret);
