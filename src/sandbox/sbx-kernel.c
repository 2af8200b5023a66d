/* sbx-kernel.c: the kernel tier's single run: a bundle (sbx-oci.c), `runsc run` with the
 * command's stdio, the shared supervisor (output bounds, deadline, cancel), then the teardown
 * (sbx_oci_bundle_destroy), whatever happened. runsc's own errors go to a log file in the bundle
 * (--log), so a sandbox that could not start is told apart from a command that failed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "macro.h"
#include "sbx-internal.h"
#include "sbx-oci.h"

/* runsc exits 128 when it failed itself; its reason is an "error" line of the --log file. */
#define RUNSC_OWN_FAILURE 128

/* The last error runsc logged, or "" (JSON lines: {"msg": ..., "level": "error"}). */
static void runsc_logged_error(const char *log_path, char *buf, size_t size) {
        char text[SBX_ETC_FILE_MAX * 4];
        buf[0] = '\0';
        _cleanup_close_ int fd = open(log_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return;
        ssize_t n = read(fd, text, sizeof(text) - 1);
        if (n <= 0)
                return;
        text[n] = '\0';
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                json_t *j = json_loads(line, 0, NULL);
                const char *level = json_string_value(json_object_get(j, "level"));
                const char *msg = json_string_value(json_object_get(j, "msg"));
                if (level && msg && (strcmp(level, "error") == 0 || strcmp(level, "fatal") == 0))
                        snprintf(buf, size, "%s", msg);
                json_decref(j);
        }
}

/* The command's fds: our own (stdio) or pipes and a sealed stdin. */
static int open_stdio(const sbx_spec *spec, int *in_fd, int outp[2], int errp[2], hull_error *e) {
        if (spec->stdio) {
                for (int fd = 0; fd < 3; fd++) {
                        int r = sbx_stdio_fd_ok(fd, e);
                        if (r < 0)
                                return r;
                }
                *in_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
                outp[1] = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
                errp[1] = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
                if (*in_fd < 0 || outp[1] < 0 || errp[1] < 0)
                        return hull_err(e, negative_errno(), "exec: cannot duplicate stdin, stdout and stderr");
                return 0;
        }
        *in_fd = sbx_open_stdin(spec->stdin_path, e);
        if (*in_fd < 0)
                return *in_fd;
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
                return hull_err(e, negative_errno(), "exec: cannot create pipes");
        return 0;
}

int sbx_run_kernel(const sbx_spec *spec, const char *workdir, sbx_result *ret, hull_error *e) {
        _cleanup_close_pair_ int outp[2] = {-1, -1}, errp[2] = {-1, -1};
        _cleanup_close_ int in_fd = -1;
        sbx_oci_runtime rt;
        sbx_oci_bundle b = {0};
        capture out = {0}, err = {0};
        sbx_net_proxy *proxy = NULL;
        char log_flag[SBX_PATH_MAX + 16];
        int r;

        if (geteuid() != 0)
                return hull_err_hint(e, -EPERM, "run hull as root, or use --tier container",
                                     "kernel: runsc needs root to start its sandbox (its sentry and gofer)");
        if (spec->kernel_runtime)
                rt = *spec->kernel_runtime;
        else if ((r = sbx_oci_runtime_find(&rt, e)) < 0)
                return r;
        r = open_stdio(spec, &in_fd, outp, errp, e);
        if (r < 0)
                return r;
        size_t keep = spec->stdio ? SBX_OUTPUT_BYTES_MIN : spec->output_bytes;
        if (capture_init(&out, keep) < 0 || capture_init(&err, keep) < 0) {
                capture_done(&out);
                return hull_err(e, -ENOMEM, "exec: cannot allocate output buffers");
        }
        if (spec->stream_output && !spec->stdio) {
                capture_set_tee(&out, STDOUT_FILENO);
                capture_set_tee(&err, STDERR_FILENO);
        }
        r = sbx_oci_bundle_make_root(&rt, spec, workdir, true, &b, e);
        if (r < 0)
                goto out;
        snprintf(log_flag, sizeof(log_flag), "%s/runsc.log", b.dir);
        const char *args[] = {"--log-format=json", NULL, "run", "--bundle", b.dir, b.id, NULL};
        char log_arg[SBX_PATH_MAX + 32];
        snprintf(log_arg, sizeof(log_arg), "--log=%s", log_flag);
        args[1] = log_arg;

        uint64_t start = sbx_now_us();
        pid_t pid;
        r = sbx_oci_spawn(&b, args, in_fd, outp[1], errp[1], &pid, e);
        if (r < 0)
                goto out;
        outp[1] = safe_close(outp[1]);
        errp[1] = safe_close(errp[1]);
        in_fd = safe_close(in_fd);
        if (b.net_fd >= 0) {
                /* limited: hull's proxy and egress guard on the namespace's 127.0.0.1:3128 */
                sbx_net_policy none = {.log_fd = -1};
                int fd = b.net_fd;
                b.net_fd = -1;
                r = sbx_net_proxy_start(fd, spec->net_policy ? spec->net_policy : &none, &proxy, e);
                if (r < 0) {
                        kill(-pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                        goto out;
                }
        }

        sbx_supervise_args a = {
                .pid = pid,
                .kill_target = -pid,
                .out_fd = TAKE_FD(outp[0]),
                .err_fd = TAKE_FD(errp[0]),
                .report_fd = -1,
                .timeout_ms = spec->timeout_ms,
                .start_us = start,
                .cancel_fd = spec->cancel_fd,
        };
        if (spec->stdio)
                a.out_fd = a.err_fd = -1;
        sbx_supervise_out so;
        r = sbx_supervise(&a, &out, &err, &so, e);
        if (r < 0)
                goto out;
        if (!so.timed_out && !so.interrupted_signal && WIFEXITED(so.wait_status) &&
            WEXITSTATUS(so.wait_status) == RUNSC_OWN_FAILURE) {
                char why[HULL_ERROR_MSG_MAX];
                runsc_logged_error(log_flag, why, sizeof(why));
                if (why[0]) {
                        if (strstr(why, "failed to load") || strstr(why, "executable file not found"))
                                r = hull_err_hint(
                                        e, -ENOENT,
                                        "the sandbox sees the host's /usr and the work directory at /workspace",
                                        "cannot execute '%s': %s", spec->argv[0], why);
                        else
                                r = hull_fail(e, -EIO, "kernel: runsc: %s", why);
                        goto out;
                }
        }
        ret->wall_us = so.end_us - start;
        r = sbx_result_fill(ret, &so, &out, &err, e);
        if (r < 0)
                goto out;
        /* runsc reports a command killed by signal N as 128+N, like a shell. */
        if (ret->exited && ret->exit_code > 128 && ret->exit_code < 128 + 65 && !so.timed_out) {
                ret->exited = false;
                ret->term_signal = ret->exit_code - 128;
        }
        if (b.cg.made) {
                sbx_cgroup_stats st;
                sbx_cgroup_read_stats(&b.cg, &st);
                ret->oom_killed = st.oom_killed;
                if (st.peak_memory_bytes)
                        ret->peak_memory_bytes = st.peak_memory_bytes;
        }
out:
        if (proxy) {
                sbx_net_proxy_stats ns;
                sbx_net_proxy_stop(proxy, &ns);
                if (r >= 0)
                        ret->net = ns;
        }
        if (b.dir[0]) {
                hull_error w = {0};
                if (sbx_oci_bundle_destroy(&b, &w) < 0 && r >= 0)
                        memcpy(ret->warning, w.msg, sizeof(ret->warning));
        }
        capture_done(&out);
        capture_done(&err);
        return r;
}
