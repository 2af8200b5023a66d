/* sbx-run.c: a run: the tier's name, the process tier, and sbx_run, which checks the spec, makes
 * a temporary work directory when one is needed and hands over to the tier. What the tiers share
 * is in sbx-exec.c, the container tier in sbx-container.c, the kernel tier in sbx-kernel.c. */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sbx-container.h"
#include "sbx-internal.h"
#include "sbx-oci.h"

const char *sbx_tier_to_string(sbx_tier t) {
        switch (t) {
        case SBX_TIER_CONTAINER:
                return "container";
        case SBX_TIER_PROCESS:
                return "process";
        case SBX_TIER_KERNEL:
                return "kernel";
        }
        return "unknown";
}

int sbx_tier_from_string(const char *s, sbx_tier *ret) {
        if (strcmp(s, "container") == 0)
                *ret = SBX_TIER_CONTAINER;
        else if (strcmp(s, "process") == 0)
                *ret = SBX_TIER_PROCESS;
        else if (strcmp(s, "kernel") == 0)
                *ret = SBX_TIER_KERNEL;
        else
                return -EINVAL;
        return 0;
}

void sbx_result_done(sbx_result *r) {
        free(r->out);
        free(r->err);
        r->out = r->err = NULL;
}

int sbx_result_exit_status(const sbx_result *r) {
        if (r->timed_out)
                return SBX_EXIT_TIMEOUT;
        if (r->interrupted_signal)
                return SBX_EXIT_SIGNAL_BASE + r->interrupted_signal;
        if (r->exited)
                return r->exit_code;
        if (r->term_signal)
                return SBX_EXIT_SIGNAL_BASE + r->term_signal;
        return SBX_EXIT_SETUP;
}

/* ---- the process tier: no isolation, only a scrubbed environment, rlimits and a group ---- */

static int sbx_run_process(const sbx_spec *spec, const char *workdir, sbx_result *ret, hull_error *e) {
        _cleanup_(sbx_env_freep) char **env = NULL;
        _cleanup_close_pair_ int outp[2] = {-1, -1}, errp[2] = {-1, -1}, repp[2] = {-1, -1};
        _cleanup_close_ int in_fd = -1;
        capture out = {0}, err = {0};
        int r;

        r = sbx_env_build(spec->env, workdir, false, &env);
        if (r < 0)
                return hull_err(e, r, "process: cannot build the environment");
        in_fd = sbx_open_stdin(spec->stdin_path, e);
        if (in_fd < 0)
                return in_fd;
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(repp, O_CLOEXEC) < 0)
                return hull_err(e, negative_errno(), "process: cannot create pipes");
        if (capture_init(&out, spec->output_bytes) < 0 || capture_init(&err, spec->output_bytes) < 0) {
                capture_done(&out);
                return hull_err(e, -ENOMEM, "process: cannot allocate output buffers");
        }
        if (spec->stream_output) {
                capture_set_tee(&out, STDOUT_FILENO);
                capture_set_tee(&err, STDERR_FILENO);
        }
        struct rlimit nofile = {SBX_DEFAULT_NOFILE, SBX_DEFAULT_NOFILE};
        struct rlimit fsize = {SBX_DEFAULT_FSIZE_BYTES, SBX_DEFAULT_FSIZE_BYTES};

        uint64_t start = sbx_now_us();
        pid_t pid = fork();
        if (pid < 0) {
                r = negative_errno();
                capture_done(&out);
                capture_done(&err);
                return hull_err(e, r, "process: cannot fork");
        }
        if (pid == 0) {
                if (setpgid(0, 0) < 0)
                        sbx_child_fail(repp[1], "process: setpgid", -errno);
                if (chdir(workdir) < 0)
                        sbx_child_fail(repp[1], "process: chdir to the work directory", -errno);
                /* RLIMIT_DATA (private writable memory), not RLIMIT_AS: runtimes such as V8
                 * reserve far more address space than they use. */
                if (spec->memory_bytes) {
                        struct rlimit data = {spec->memory_bytes, spec->memory_bytes};
                        if (setrlimit(RLIMIT_DATA, &data) < 0)
                                sbx_child_fail(repp[1], "process: RLIMIT_DATA", -errno);
                }
                r = sbx_child_exec(spec->argv, env, in_fd, outp[1], errp[1], -1, &nofile, &fsize);
                sbx_child_fail(repp[1], SBX_STEP_EXEC, r);
        }
        setpgid(pid, pid); /* also in the parent, so kill(-pid) works at once */
        outp[1] = safe_close(outp[1]);
        errp[1] = safe_close(errp[1]);
        repp[1] = safe_close(repp[1]);

        sbx_supervise_args a = {
                .pid = pid,
                .kill_target = -pid,
                .out_fd = TAKE_FD(outp[0]),
                .err_fd = TAKE_FD(errp[0]),
                .report_fd = TAKE_FD(repp[0]),
                .timeout_ms = spec->timeout_ms,
                .start_us = start,
                .kill_group_at_exit = true,
                .cancel_fd = spec->cancel_fd,
        };
        sbx_supervise_out so;
        r = sbx_supervise(&a, &out, &err, &so, e);
        if (r >= 0 && so.have_error)
                r = hull_err(e, so.error_report.err, "%s '%s'", so.error_report.what, spec->argv[0]);
        if (r >= 0) {
                ret->wall_us = so.end_us - start;
                r = sbx_result_fill(ret, &so, &out, &err, e);
        }
        capture_done(&out);
        capture_done(&err);
        return r;
}

/* ---- entry point ---- */

int sbx_run(const sbx_spec *spec, sbx_result *ret, hull_error *e) {
        char tmpl[SBX_PATH_MAX];
        const char *workdir = spec->workdir;
        bool made_tmp = false;
        int r;

        *ret = (sbx_result){.tier = sbx_tier_to_string(spec->tier)};
        if (!spec->argv || !spec->argv[0] || !spec->argv[0][0])
                return hull_err(e, -EINVAL, "exec: no command given");
        if (spec->output_bytes < SBX_OUTPUT_BYTES_MIN)
                return hull_err(e, -EINVAL, "exec: output limit below %llu bytes",
                                (unsigned long long) SBX_OUTPUT_BYTES_MIN);
        if (spec->stdio && spec->tier == SBX_TIER_PROCESS)
                return hull_err_hint(e, -EINVAL, "use --tier container", "exec: --stdio needs the container tier");
        if (spec->net != SBX_NET_NONE && spec->tier == SBX_TIER_PROCESS)
                return hull_err_hint(e, -EINVAL, "use --tier container",
                                     "exec: the process tier has the host's network: --net %s needs the container tier",
                                     sbx_net_mode_to_string(spec->net));

        /* The container tier without --workdir mounts a tmpfs at /workspace; the process tier
         * needs a real directory on the host. */
        if (!workdir && spec->tier == SBX_TIER_PROCESS) {
                const char *tmp = getenv("TMPDIR");
                if (!tmp || tmp[0] != '/')
                        tmp = "/tmp";
                if ((size_t) snprintf(tmpl, sizeof(tmpl), "%s/hull-exec.XXXXXX", tmp) >= sizeof(tmpl))
                        return hull_err(e, -ENAMETOOLONG, "exec: TMPDIR is too long");
                if (!mkdtemp(tmpl))
                        return hull_err_hint(e, negative_errno(),
                                             "set TMPDIR to a writable directory, or pass --workdir",
                                             "exec: cannot create a temporary work directory in %s", tmp);
                workdir = tmpl;
                made_tmp = true;
        }

        if (spec->tier == SBX_TIER_CONTAINER)
                r = sbx_run_container(spec, workdir, ret, e);
        else if (spec->tier == SBX_TIER_KERNEL)
                r = sbx_run_kernel(spec, workdir, ret, e);
        else
                r = sbx_run_process(spec, workdir, ret, e);

        if (made_tmp) {
                int q = rm_rf_at(AT_FDCWD, tmpl);
                if (q < 0 && r >= 0) {
                        hull_error w;
                        hull_err(&w, q, "cannot remove the temporary work directory %s", tmpl);
                        memcpy(ret->warning, w.msg, sizeof(ret->warning));
                }
        }
        if (r < 0)
                sbx_result_done(ret);
        return r;
}
