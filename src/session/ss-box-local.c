/* ss-box-local.c: the sandbox provider for a process that may fork (`hull run`, tests): each
 * session's init is this process's child (sbx_session_start), with cgroups where the process
 * may make them. hull serve's threads never fork: it uses the broker's keepers instead
 * (src/daemon). */
#include <errno.h>
#include <stdint.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "env-layer.h"
#include "sbx-cgroup.h"
#include "ss.h"

static int local_open(void *ctx, const ss_box_spec *spec, ss_box *ret, hull_error *e) {
        sbx_session_box *b = calloc(1, sizeof(*b));
        if (!b)
                return hull_err(e, -ENOMEM, "session: out of memory");
        sbx_session_spec ss = {.memory_bytes = spec->memory_bytes,
                               .pids = spec->pids,
                               .tmp_bytes = spec->tmp_bytes,
                               .handles_dir = spec->handles_dir,
                               .layer_dir = spec->layer_dir,
                               .skills_dir = spec->skills_dir,
                               .mnt_dir = spec->mnt_dir,
                               .env = spec->layer_dir ? env_layer_sandbox_env() : NULL,
                               .use_cgroups = ctx != NULL,
                               .net = spec->net,
                               .net_policy = spec->net_policy,
                               .tier = spec->tier};
        int r = sbx_session_start(&ss, b, e);
        if (r < 0) {
                free(b);
                return r;
        }
        *ret = (ss_box){.end_fd = b->pidfd,
                        .ctl_fd = b->ctl_fd,
                        .ws_fd = b->ws_fd,
                        .pidfd = b->pidfd,
                        .bpf_fd = b->bpf_fd,
                        .n_cg_fds = b->n_cg_fds,
                        .cg_dir_fd = b->cg_dir_fd,
                        .host_uid = b->host_uid,
                        .host_gid = b->host_gid,
                        .priv = b};
        for (size_t i = 0; i < b->n_cg_fds && i < ELEMENTSOF(ret->cg_fds); i++)
                ret->cg_fds[i] = b->cg_fds[i];
        return 0;
}

static int local_ended(void *ctx, ss_box *box, bool *ret_oom) {
        sbx_session_box *b = box->priv;
        sbx_cgroup_stats st = {0};
        if (b->have_cg)
                sbx_cgroup_read_stats(&b->cg, &st);
        *ret_oom = st.oom_killed;
        return 1; /* the pidfd is readable: the init has exited */
}

static void local_kill(void *ctx, ss_box *box) {
        sbx_session_box *b = box->priv;
        /* the kernel tier's shim ends its gVisor sandbox on SIGTERM (SIGKILL would leave it) */
        if (b->pidfd >= 0)
                (void) syscall(SYS_pidfd_send_signal, b->pidfd, b->kernel ? SIGTERM : SIGKILL, NULL, 0);
}

static void local_close(void *ctx, ss_box *box) {
        sbx_session_box *b = box->priv;
        sbx_session_end_info info;
        if (!b)
                return;
        (void) sbx_session_box_end(b, &info, NULL);
        free(b);
        box->priv = NULL;
}

ss_box_ops ss_box_local(bool use_cgroups) {
        /* ctx is only a flag: non-NULL when the sandboxes get cgroups */
        return (ss_box_ops){.open = local_open,
                            .ended = local_ended,
                            .kill = local_kill,
                            .close = local_close,
                            .ctx = use_cgroups ? (void *) &ss_box_local : NULL};
}

int ss_new_local(int zygote_fd, bool cgroups, const char *audit_dir, const char *handles_dir, ss_manager **ret,
                 hull_error *e) {
        ss_config cfg = {
                .box = ss_box_local(cgroups && geteuid() == 0),
                .zygote_fd = zygote_fd,
                .max_sessions = 1,
                .max_per_owner = 1,
                .lifetime_ms = SERVE_SESSION_LIFETIME_MS_MAX,
                .idle_ms = SERVE_SESSION_LIFETIME_MS_MAX,
                .memory_bytes = SERVE_SESSION_MEMORY_BYTES,
                .pids = SERVE_SESSION_PIDS,
                .tmp_bytes = SBX_DEFAULT_TMP_BYTES,
                .audit_dir = audit_dir,
                .handles_dir = handles_dir,
                .provider = "hull",
                .isolation = "container",
                .no_reaper = true,
        };
        return ss_new(&cfg, ret, e);
}
