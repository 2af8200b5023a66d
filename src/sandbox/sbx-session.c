/* sbx-session.c: the host side of sandbox sessions (see sbx-session.h): starting and ending a
 * session's box, calls over the init's control socket, interpreters for cells (cold inside the
 * sandbox, or forked from the zygote), and the zygote itself. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "fs-util.h"
#include "macro.h"
#include "runtime-embed.h"
#include "sbx-container.h"
#include "sbx-internal.h"
#include "sbx-kernel.h"
#include "sbx-session.h"
#include "sock-util.h"

#define NODE_BIN "/usr/bin/node"

static const char *const lang_names[_SBX_LANG_MAX] = {
        [SBX_LANG_PYTHON] = "python",
        [SBX_LANG_JAVASCRIPT] = "javascript",
};

const char *sbx_lang_to_string(sbx_lang l) {
        return l >= 0 && l < _SBX_LANG_MAX ? lang_names[l] : "";
}

int sbx_lang_from_string(const char *s, sbx_lang *ret) {
        for (int i = 0; i < _SBX_LANG_MAX; i++)
                if (s && strcmp(s, lang_names[i]) == 0) {
                        *ret = (sbx_lang) i;
                        return 0;
                }
        return -EINVAL;
}

static int64_t ms_left(uint64_t deadline_us) {
        uint64_t now = sbx_now_us();
        if (deadline_us == 0)
                return -1;
        return now >= deadline_us ? 0 : (int64_t) ((deadline_us - now + 999) / 1000);
}

/* ---- fd passing ---- */

static int send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds) {
        return sock_send_fds(sock, buf, len, fds, nfds, 0);
}

/* One report from the init, with at most one fd (HELLO). -EPIPE on EOF. */
static int recv_report(int sock, sbx_report *rep, int *ret_fd) {
        int fds[1] = {-1}, truncated = 0;
        size_t nfds = 0;
        ssize_t n = sock_recv_fds(sock, rep, sizeof(*rep), 0, fds, ret_fd ? 1 : 0, &nfds, &truncated);
        if (ret_fd)
                *ret_fd = nfds ? fds[0] : -1;
        if (n < 0)
                return (int) n;
        if (n == 0)
                return -EPIPE;
        if ((size_t) n != sizeof(*rep) || truncated) {
                if (ret_fd)
                        *ret_fd = safe_close(*ret_fd);
                return -EBADMSG;
        }
        rep->what[sizeof(rep->what) - 1] = '\0';
        return 0;
}

/* ---- the interpreters' sources ---- */

int sbx_sources_memfd(const char *const *src, size_t n, hull_error *e) {
        _cleanup_close_ int fd = memfd_create("hull-runtime", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return hull_err(e, negative_errno(), "cell: cannot create a memfd for the runtime's sources");
        for (size_t i = 0; i < n; i++)
                if ((i > 0 && loop_write(fd, "", 1) < 0) || loop_write(fd, src[i], strlen(src[i])) < 0)
                        return hull_err(e, -EIO, "cell: cannot write the runtime's sources");
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0 ||
            lseek(fd, 0, SEEK_SET) < 0)
                return hull_err(e, negative_errno(), "cell: cannot seal the runtime's sources");
        return TAKE_FD(fd);
}

/* ---- the box ---- */

static int make_bpf_memfd(hull_error *e) {
        _cleanup_close_ int fd = memfd_create("hull-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return hull_err(e, negative_errno(), "session: cannot create a memfd for the seccomp programs");
        const struct sock_fprog *progs[] = {&sbx_seccomp_filter};
        for (size_t i = 0; i < ELEMENTSOF(progs); i++) {
                uint32_t n = progs[i]->len;
                if (write(fd, &n, sizeof(n)) != (ssize_t) sizeof(n) ||
                    write(fd, progs[i]->filter, n * sizeof(struct sock_filter)) !=
                            (ssize_t) (n * sizeof(struct sock_filter)))
                        return hull_err(e, -EIO, "session: cannot write the seccomp programs");
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
                return hull_err(e, negative_errno(), "session: cannot seal the seccomp programs");
        return TAKE_FD(fd);
}

int sbx_session_start(const sbx_session_spec *spec, sbx_session_box *ret, hull_error *e) {
        _cleanup_close_pair_ int ctlp[2] = {-1, -1};
        sbx_launch L = {.rep_fd = -1, .net_fd = -1};
        sbx_session_box b = {.pid = -1, .pidfd = -1, .ctl_fd = -1, .ws_fd = -1, .bpf_fd = -1, .cg_dir_fd = -1};
        hull_error ignore;
        int r;

        if (spec->tier == SBX_TIER_KERNEL)
                return sbx_kernel_session_start(spec, ret, e);
        if (spec->tier != SBX_TIER_CONTAINER)
                return hull_err(e, -EINVAL, "session: sessions run in the container or the kernel tier");
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctlp) < 0)
                return hull_err(e, negative_errno(), "session: cannot create the control socket");
        sbx_spec sp = {
                .tier = SBX_TIER_CONTAINER,
                .memory_bytes = spec->memory_bytes,
                .pids = spec->pids,
                .millicpus = spec->millicpus,
                .tmp_bytes = spec->tmp_bytes ? spec->tmp_bytes : SBX_DEFAULT_TMP_BYTES,
                .use_cgroups = spec->use_cgroups,
                .cancel_fd = -1,
                .handles_dir = spec->handles_dir,
                .layer_dir = spec->layer_dir,
                .skills_dir = spec->skills_dir,
                .mnt_dir = spec->mnt_dir,
                .env = spec->env,
                .net = spec->net,
                .net_policy = spec->net_policy,
        };
        /* The container plan sizes the /workspace tmpfs by memory_bytes, which is also the
         * memory cgroup's limit (tmpfs pages are charged to it). */
        r = sbx_container_launch(&sp, NULL, -1, -1, -1, ctlp[1], &L, e);
        if (r < 0)
                return r;
        ctlp[1] = safe_close(ctlp[1]);
        b.pid = L.pid;
        b.cg = L.cg;
        b.have_cg = spec->use_cgroups;
        b.host_uid = L.host_uid;
        b.host_gid = L.host_gid;
        b.ctl_fd = TAKE_FD(ctlp[0]);

        /* HELLO on the control socket, or an error on the report pipe. */
        uint64_t deadline = sbx_now_us() + SBX_START_TIMEOUT_MS * 1000ULL;
        for (;;) {
                struct pollfd pfd[2] = {{.fd = b.ctl_fd, .events = POLLIN}, {.fd = L.rep_fd, .events = POLLIN}};
                int n = poll(pfd, 2, (int) ms_left(deadline));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = hull_err(e, n == 0 ? -ETIMEDOUT : negative_errno(), "session: the sandbox did not start");
                        goto fail;
                }
                if (pfd[0].revents) {
                        sbx_report rep;
                        r = recv_report(b.ctl_fd, &rep, &b.ws_fd);
                        if (r < 0 || rep.kind != SBX_REPORT_HELLO || b.ws_fd < 0) {
                                r = hull_err(e, r < 0 ? r : -EPROTO, "session: the sandbox's init did not say hello");
                                goto fail;
                        }
                        break;
                }
                if (pfd[1].revents) {
                        r = hull_err(e, -EPROTO, "session: the sandbox's init ended during set-up");
                        sbx_launch_child_error(L.rep_fd, e);
                        goto fail;
                }
        }
        b.pidfd = (int) syscall(SYS_pidfd_open, b.pid, 0);
        if (b.pidfd < 0) {
                r = hull_err(e, negative_errno(), "session: pidfd_open of the init");
                goto fail;
        }
        r = make_bpf_memfd(e);
        if (r < 0)
                goto fail;
        b.bpf_fd = r;
        r = sbx_session_open_cgroup(&b, e);
        if (r < 0)
                goto fail;
        if (L.net_fd >= 0) {
                sbx_net_policy none = {.log_fd = -1};
                r = sbx_net_proxy_start(TAKE_FD(L.net_fd), spec->net_policy ? spec->net_policy : &none, &b.proxy, e);
                if (r < 0)
                        goto fail;
        }
        b.pasta_pid = L.pasta_pid; /* the box's now: sbx_session_box_end stops it */
        L.pasta_pid = 0;
        sbx_launch_done(&L);
        *ret = b;
        return 0;
fail:
        sbx_launch_done(&L);
        (void) sbx_session_box_end(&b, NULL, &ignore);
        return r;
}

int sbx_session_box_end(sbx_session_box *b, sbx_session_end_info *ret, hull_error *e) {
        sbx_session_end_info info = {0};
        int r = 0;
        b->ctl_fd = safe_close(b->ctl_fd);
        b->ws_fd = safe_close(b->ws_fd);
        b->bpf_fd = safe_close(b->bpf_fd);
        for (size_t i = 0; i < b->n_cg_fds; i++)
                safe_close(b->cg_fds[i]);
        b->n_cg_fds = 0;
        b->cg_dir_fd = safe_close(b->cg_dir_fd);
        if (b->pid > 0) {
                int st = 0;
                pid_t w = waitpid(b->pid, &st, WNOHANG);
                if (w != b->pid && b->kernel && b->pidfd >= 0) {
                        /* The shim saw EOF (the control socket is closed): let it end the sandbox */
                        struct pollfd p = {.fd = b->pidfd, .events = POLLIN};
                        (void) kill(b->pid, SIGTERM);
                        while (poll(&p, 1, SBX_KERNEL_STOP_MS) < 0 && errno == EINTR)
                                ;
                        w = waitpid(b->pid, &st, WNOHANG);
                        if (w == b->pid && WIFEXITED(st) && WEXITSTATUS(st) == 3)
                                info.init_died = true; /* the sandbox had ended by itself */
                        if (w == b->pid)
                                info.init_status = st;
                }
                if (w == b->pid) {
                        info.init_died = info.init_died || !b->kernel;
                        info.init_status = st;
                } else {
                        kill(b->pid, SIGKILL);
                        while (waitpid(b->pid, &st, 0) < 0 && errno == EINTR)
                                ;
                }
                b->pid = -1;
        }
        b->pidfd = safe_close(b->pidfd);
        sbx_net_pasta_stop(b->pasta_pid);
        b->pasta_pid = 0;
        if (b->proxy) {
                sbx_net_proxy_stop(b->proxy, &info.net);
                b->proxy = NULL;
        }
        if (b->have_cg) {
                sbx_cgroup_stats st;
                sbx_cgroup_read_stats(&b->cg, &st);
                info.oom_killed = st.oom_killed;
                info.peak_memory_bytes = st.peak_memory_bytes;
                r = sbx_cgroup_destroy(&b->cg, e);
                b->have_cg = false;
        }
        if (ret)
                *ret = info;
        return r;
}

void sbx_session_fs_enter(uid_t uid, gid_t gid) {
        if (geteuid() == 0) {
                (void) setfsgid(gid);
                (void) setfsuid(uid);
        }
}

void sbx_session_fs_leave(void) {
        if (geteuid() == 0) {
                (void) setfsuid(0);
                (void) setfsgid(getegid());
        }
}

/* ---- the handle ---- */

void sbx_session_init(sbx_session *s, int ctl_fd, int ws_fd, int pidfd, int bpf_fd, const int *cg_fds, size_t n_cg_fds,
                      int zygote_fd) {
        *s = (sbx_session){.ctl_fd = ctl_fd,
                           .ws_fd = ws_fd,
                           .pidfd = pidfd,
                           .bpf_fd = bpf_fd,
                           .zygote_fd = zygote_fd,
                           .cg_dir_fd = -1,
                           .pids_fd = -1,
                           .hangup_fd = -1};
        for (size_t i = 0; i < n_cg_fds && i < ELEMENTSOF(s->cg_fds); i++)
                s->cg_fds[s->n_cg_fds++] = cg_fds[i];
        for (int i = 0; i < _SBX_LANG_MAX; i++)
                s->interp[i] = (sbx_interp){.sock = -1, .out_fd = -1, .err_fd = -1, .pidfd = -1};
}

static void interp_close(sbx_interp *in) {
        in->sock = safe_close(in->sock);
        in->out_fd = safe_close(in->out_fd);
        in->err_fd = safe_close(in->err_fd);
        in->pidfd = safe_close(in->pidfd);
        in->running = false;
        in->hello_pending = false;
        in->pid = 0;
}

void sbx_session_done(sbx_session *s) {
        for (int i = 0; i < _SBX_LANG_MAX; i++)
                interp_close(&s->interp[i]);
        s->pids_fd = safe_close(s->pids_fd);
}

/* Send one message to the init; the running interpreters (but skip, if >= 0) are exempt. */
static int ctl_send(sbx_session *s, sbx_ctl_type type, int arg, char *const *argv, char *const *env, const int *fds,
                    size_t nfds, int skip) {
        sbx_ctl_head h = {.type = (uint32_t) type, .arg = arg};
        for (int i = 0; i < _SBX_LANG_MAX; i++)
                if (s->interp[i].running && i != skip && s->interp[i].pid > 0)
                        h.exempt[h.n_exempt++] = s->interp[i].pid;
        size_t len = sizeof(h);
        for (char *const *a = argv; a && *a; a++, h.argc++)
                len += strlen(*a) + 1;
        for (char *const *a = env; a && *a; a++, h.envc++)
                len += strlen(*a) + 1;
        if (len > SBX_CTL_MSG_MAX || h.argc > SBX_SESSION_ARGS_MAX || h.envc > SBX_SESSION_ENV_MAX)
                return -E2BIG;
        h.payload_len = (uint32_t) (len - sizeof(h));
        _cleanup_free_ char *buf = malloc(len);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, &h, sizeof(h));
        size_t off = sizeof(h);
        for (int k = 0; k < 2; k++)
                for (char *const *a = k == 0 ? argv : env; a && *a; a++) {
                        size_t l = strlen(*a) + 1;
                        memcpy(buf + off, *a, l);
                        off += l;
                }
        int r = send_with_fds(s->ctl_fd, buf, len, fds, nfds);
        if (r == -EPIPE || r == -ECONNRESET)
                s->dead = true;
        return r;
}

/* Wait for a report of kind want (skipping none: the protocol is in order). */
static int ctl_wait(sbx_session *s, int want, uint64_t timeout_ms, sbx_report *ret, hull_error *e) {
        struct pollfd pfd = {.fd = s->ctl_fd, .events = POLLIN};
        int n;
        do
                n = poll(&pfd, 1, (int) timeout_ms);
        while (n < 0 && errno == EINTR);
        if (n == 0)
                return hull_err(e, -ETIMEDOUT, "session: the sandbox's init did not answer");
        int r = recv_report(s->ctl_fd, ret, NULL);
        if (r == -EPIPE) {
                s->dead = true;
                return hull_err(e, r, "session: the sandbox ended");
        }
        if (r < 0)
                return hull_err(e, r, "session: cannot read the init's answer");
        if (ret->kind == SBX_REPORT_ERROR)
                return hull_err(e, ret->err, "session: %s", ret->what);
        if (ret->kind != want)
                return hull_err(e, -EPROTO, "session: unexpected answer %d from the init", ret->kind);
        return 0;
}

static int sweep(sbx_session *s, int skip, hull_error *e) {
        sbx_report rep;
        s->sweeps++;
        int r = ctl_send(s, SBX_CTL_SWEEP, 0, NULL, NULL, NULL, 0, skip);
        if (r < 0)
                return hull_err(e, r, "session: cannot reach the sandbox's init");
        return ctl_wait(s, SBX_REPORT_SWEPT, SBX_START_TIMEOUT_MS, &rep, e);
}

static void read_into(int *fd, capture *c, bool *eof) {
        char buf[SBX_READ_CHUNK];
        for (;;) {
                ssize_t n = read(*fd, buf, sizeof(buf));
                if (n > 0) {
                        capture_append(c, buf, (size_t) n);
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0 || (n < 0 && errno != EAGAIN)) {
                        *fd = safe_close(*fd);
                        if (eof)
                                *eof = true;
                }
                return;
        }
}

/* Send all of p on the stream socket fd by deadline_us (0: none), reading the command's stdout and
 * stderr meanwhile (a command that writes while it is given its input never waits on us).
 * Returns 0, -ETIMEDOUT, or a negative errno (-EPIPE: the reader is gone). */
static int send_until(int fd, const char *p, size_t len, uint64_t deadline_us, int *out_fd, int *err_fd, capture *out,
                      capture *err) {
        while (len > 0) {
                ssize_t w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w > 0) {
                        p += w;
                        len -= (size_t) w;
                        continue;
                }
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno != EAGAIN)
                        return negative_errno();
                struct pollfd pfd[3] = {{.fd = fd, .events = POLLOUT},
                                        {.fd = *out_fd, .events = POLLIN},
                                        {.fd = *err_fd, .events = POLLIN}};
                int k = poll(pfd, 3, deadline_us ? (int) ms_left(deadline_us) : -1);
                if (k == 0)
                        return -ETIMEDOUT;
                if (k < 0 && errno != EINTR)
                        return negative_errno();
                if (k > 0 && pfd[1].revents && *out_fd >= 0)
                        read_into(out_fd, out, NULL);
                if (k > 0 && pfd[2].revents && *err_fd >= 0)
                        read_into(err_fd, err, NULL);
        }
        return 0;
}

static bool cancel_ready(int cancel_fd) {
        if (cancel_fd < 0)
                return false;
        struct pollfd p = {.fd = cancel_fd, .events = POLLIN};
        return poll(&p, 1, 0) > 0;
}

/* What sbx_session_run waits for: the call's end, its set-up error, and why it was stopped. */
typedef struct run_wait {
        sbx_report exit_rep, err_rep;
        bool have_exit, have_error, timed_out;
        int interrupted;
} run_wait;

/* Read the call's output into out and err until the init reports its end and the pipes are
 * drained (*out_fd and *err_fd are closed at EOF), enforcing c's deadline and cancellation.
 * Returns 0 and *w, or a negative errno with *e (-EPIPE: the sandbox ended; s->dead set). */
static int run_wait_loop(sbx_session *s, const sbx_session_call *c, uint64_t start, int *out_fd, int *err_fd,
                         capture *out, capture *err, run_wait *w, hull_error *e) {
        uint64_t deadline = c->timeout_ms ? start + c->timeout_ms * 1000ULL : 0, kill_at = 0, drain_until = 0;
        for (;;) {
                if (w->have_exit && *out_fd < 0 && *err_fd < 0)
                        break;
                struct pollfd pfd[5];
                int np = 0, i_out = -1, i_err = -1, i_ctl = -1, i_cancel = -1;
                if (*out_fd >= 0) {
                        i_out = np;
                        pfd[np++] = (struct pollfd){.fd = *out_fd, .events = POLLIN};
                }
                if (*err_fd >= 0) {
                        i_err = np;
                        pfd[np++] = (struct pollfd){.fd = *err_fd, .events = POLLIN};
                }
                if (!w->have_exit) {
                        i_ctl = np;
                        pfd[np++] = (struct pollfd){.fd = s->ctl_fd, .events = POLLIN};
                }
                if (!w->have_exit && c->cancel_fd >= 0 && !w->interrupted) {
                        i_cancel = np;
                        pfd[np++] = (struct pollfd){.fd = c->cancel_fd, .events = POLLIN};
                }
                int i_hangup = -1;
                if (!w->have_exit && s->hangup_fd >= 0 && !w->interrupted) {
                        i_hangup = np;
                        pfd[np++] = (struct pollfd){.fd = s->hangup_fd, .events = SOCK_HANGUP_EVENTS};
                }
                uint64_t next = w->have_exit ? drain_until : (kill_at ? kill_at : deadline);
                int n = poll(pfd, (nfds_t) np, next ? (int) ms_left(next) : -1);
                if (n < 0 && errno != EINTR)
                        return hull_err(e, negative_errno(), "session: poll");
                if (n > 0) {
                        if (i_out >= 0 && pfd[i_out].revents)
                                read_into(out_fd, out, NULL);
                        if (i_err >= 0 && pfd[i_err].revents)
                                read_into(err_fd, err, NULL);
                        if (i_ctl >= 0 && pfd[i_ctl].revents) {
                                sbx_report rep;
                                int rr = recv_report(s->ctl_fd, &rep, NULL);
                                if (rr == -EPIPE) {
                                        s->dead = true;
                                        return hull_err(e, -EPIPE, "session: the sandbox ended during the call");
                                }
                                if (rr < 0)
                                        return hull_err(e, rr, "session: cannot read the init's answer");
                                if (rep.kind == SBX_REPORT_EXIT) {
                                        w->exit_rep = rep;
                                        w->have_exit = true;
                                        drain_until = sbx_now_us() + SBX_DRAIN_GRACE_MS * 1000ULL;
                                } else if (rep.kind == SBX_REPORT_ERROR && !w->have_error) {
                                        w->err_rep = rep;
                                        w->have_error = true;
                                }
                        }
                        bool hung_up = i_hangup >= 0 && sock_hung_up(pfd[i_hangup].revents);
                        if (hung_up || (i_cancel >= 0 && pfd[i_cancel].revents && cancel_ready(c->cancel_fd))) {
                                w->interrupted = SIGTERM;
                                if (!kill_at) {
                                        (void) ctl_send(s, SBX_CTL_SIGNAL, SIGTERM, NULL, NULL, NULL, 0, -1);
                                        kill_at = sbx_now_us() + SBX_KILL_GRACE_MS * 1000ULL;
                                }
                        }
                        continue;
                }
                uint64_t now = sbx_now_us();
                if (w->have_exit && drain_until && now >= drain_until)
                        break; /* something the sweep could not reach holds the pipe: stop reading */
                if (!w->have_exit && kill_at && now >= kill_at) {
                        (void) ctl_send(s, SBX_CTL_SIGNAL, SIGKILL, NULL, NULL, NULL, 0, -1);
                        kill_at = now + SBX_START_TIMEOUT_MS * 1000ULL; /* the init answers with EXIT */
                } else if (!w->have_exit && deadline && now >= deadline && !kill_at) {
                        w->timed_out = true;
                        (void) ctl_send(s, SBX_CTL_SIGNAL, SIGTERM, NULL, NULL, NULL, 0, -1);
                        kill_at = now + SBX_KILL_GRACE_MS * 1000ULL;
                }
        }
        return 0;
}

/* Collect a started call: its input (in_fd: NULL or -1 for none; written, then closed), its output
 * from *out_fd and *err_fd (closed here) until it ends, bounded by c; start is when its clock
 * began. */
static int run_collect(sbx_session *s, const sbx_session_call *c, uint64_t start, int *in_fd, const char *input,
                       size_t input_len, int *out_fd, int *err_fd, sbx_result *ret, hull_error *e) {
        capture out = {0}, err = {0};
        run_wait w = {0};
        int r;
        if (capture_init(&out, c->output_bytes ? c->output_bytes : SBX_DEFAULT_OUTPUT_BYTES) < 0 ||
            capture_init(&err, c->output_bytes ? c->output_bytes : SBX_DEFAULT_OUTPUT_BYTES) < 0) {
                r = hull_err(e, -ENOMEM, "session: cannot allocate output buffers");
                goto out;
        }
        if (in_fd && *in_fd >= 0) {
                /* its failure (the deadline, the command gone) is the wait's to tell */
                (void) send_until(*in_fd, input, input_len, c->timeout_ms ? start + c->timeout_ms * 1000ULL : 0, out_fd,
                                  err_fd, &out, &err);
                *in_fd = safe_close(*in_fd); /* EOF: the input is all there */
        }
        r = run_wait_loop(s, c, start, out_fd, err_fd, &out, &err, &w, e);
        if (r < 0)
                goto out;
        if (w.have_error && !w.have_exit) {
                r = hull_err(e, w.err_rep.err, "session: %s", w.err_rep.what);
                goto out;
        }
        if (w.have_error && strcmp(w.err_rep.what, SBX_STEP_EXEC) == 0) {
                r = hull_err_hint(e, w.err_rep.err,
                                  "the sandbox sees the host's /usr and the work directory at /workspace", "%s '%s'",
                                  w.err_rep.what, c->argv ? c->argv[0] : "");
                goto out;
        }
        ret->exited = w.exit_rep.exited;
        ret->exit_code = w.exit_rep.exit_code;
        ret->term_signal = w.exit_rep.term_signal;
        ret->timed_out = w.timed_out;
        ret->interrupted_signal = w.interrupted;
        ret->wall_us = sbx_now_us() - start;
        ret->out_total = out.total;
        ret->err_total = err.total;
        ret->out_head_len = out.head_len;
        ret->err_head_len = err.head_len;
        ret->out_dropped = capture_dropped(&out);
        ret->err_dropped = capture_dropped(&err);
        if (capture_contents(&out, &ret->out, &ret->out_len) < 0 ||
            capture_contents(&err, &ret->err, &ret->err_len) < 0) {
                sbx_result_done(ret);
                r = hull_err(e, -ENOMEM, "session: out of memory while collecting output");
                goto out;
        }
        r = 0;
out:
        *out_fd = safe_close(*out_fd);
        *err_fd = safe_close(*err_fd);
        capture_done(&out);
        capture_done(&err);
        return r;
}

/* Start argv in the session with in_fd as its stdin; *out_fd and *err_fd become the read ends of
 * its output (non-blocking). */
static int run_start(sbx_session *s, char *const *argv, char *const *extra_env, int in_fd, int *out_fd, int *err_fd,
                     hull_error *e) {
        _cleanup_close_pair_ int outp[2] = {-1, -1}, errp[2] = {-1, -1};
        char **env = NULL;
        int r = sbx_env_build(extra_env, "/workspace", s->net_proxy_env, &env);
        if (r < 0)
                return hull_err(e, r, "session: cannot build the environment");
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || fcntl(outp[0], F_SETFL, O_NONBLOCK) < 0 ||
            fcntl(errp[0], F_SETFL, O_NONBLOCK) < 0) {
                sbx_env_free(env);
                return hull_err(e, negative_errno(), "session: cannot create pipes");
        }
        int fds[3] = {in_fd, outp[1], errp[1]};
        r = ctl_send(s, SBX_CTL_RUN, 0, argv, env, fds, 3, -1);
        sbx_env_free(env);
        if (r < 0)
                return hull_err(e, r,
                                r == -E2BIG ? "session: the command and its environment are too large"
                                            : "session: cannot reach the sandbox's init");
        *out_fd = TAKE_FD(outp[0]);
        *err_fd = TAKE_FD(errp[0]);
        return 0;
}

int sbx_session_run(sbx_session *s, const sbx_session_call *c, sbx_result *ret, hull_error *e) {
        _cleanup_close_ int null_fd = -1;
        int out_fd = -1, err_fd = -1;

        *ret = (sbx_result){.tier = s->kernel ? "kernel" : "container"};
        if (s->dead)
                return hull_err(e, -EPIPE, "session: the sandbox has ended");
        if ((null_fd = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
                return hull_err(e, negative_errno(), "session: cannot open /dev/null");
        uint64_t start = sbx_now_us();
        int r = run_start(s, c->argv, c->env, null_fd, &out_fd, &err_fd, e);
        if (r < 0)
                return r;
        return run_collect(s, c, start, NULL, NULL, 0, &out_fd, &err_fd, ret, e);
}

int sbx_session_hold(sbx_session *s, char *const *argv, sbx_held *ret, hull_error *e) {
        _cleanup_close_pair_ int in[2] = {-1, -1};
        *ret = (sbx_held){.in_fd = -1, .out_fd = -1, .err_fd = -1};
        if (s->dead)
                return hull_err(e, -EPIPE, "session: the sandbox has ended");
        /* a socket, not a pipe: writing to it after the command died is EPIPE, never SIGPIPE */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 || fcntl(in[0], F_SETFL, O_NONBLOCK) < 0)
                return hull_err(e, negative_errno(), "session: cannot create the input socket");
        int r = run_start(s, argv, NULL, in[1], &ret->out_fd, &ret->err_fd, e);
        if (r < 0)
                return r;
        ret->in_fd = TAKE_FD(in[0]);
        return 0;
}

/* Whether the held command already ended (the init's report of it waits on the control socket). */
static bool held_ended(sbx_session *s) {
        struct pollfd p = {.fd = s->ctl_fd, .events = POLLIN};
        return poll(&p, 1, 0) != 0;
}

int sbx_session_held_run(sbx_session *s, sbx_held *h, const char *input, size_t len, const sbx_session_call *c,
                         sbx_result *ret, hull_error *e) {
        *ret = (sbx_result){.tier = s->kernel ? "kernel" : "container"};
        if (h->in_fd < 0 || s->dead || held_ended(s))
                return -ECHILD; /* nothing ran: the caller runs the command its own way */
        return run_collect(s, c, sbx_now_us(), &h->in_fd, input, len, &h->out_fd, &h->err_fd, ret, e);
}

int sbx_session_held_drop(sbx_session *s, sbx_held *h, hull_error *e) {
        sbx_report rep;
        int r = 0;
        if (h->in_fd >= 0 || h->out_fd >= 0) {
                r = ctl_send(s, SBX_CTL_SIGNAL, SIGKILL, NULL, NULL, NULL, 0, -1);
                r = r < 0 ? hull_err(e, r, "session: cannot reach the sandbox's init")
                          : ctl_wait(s, SBX_REPORT_EXIT, SBX_START_TIMEOUT_MS, &rep, e);
        }
        h->in_fd = safe_close(h->in_fd);
        h->out_fd = safe_close(h->out_fd);
        h->err_fd = safe_close(h->err_fd);
        return r;
}

/* The directory and exported variables persist in the sandbox's /tmp, like a terminal's. The
 * command is $1, evaluated by the shell itself, so `cd` and `export` in it last; $2... are the
 * call's own K=V variables, exported for this call only (after the saved ones, so they win, and
 * left out of what is saved). */
static const char shell_wrapper[] =
        "__hull_d=/tmp/.hull-shell\n"
        "if [ -r \"$__hull_d/env\" ]; then . \"$__hull_d/env\"; fi\n"
        "cd \"$(cat \"$__hull_d/cwd\" 2>/dev/null || echo /workspace)\" 2>/dev/null || cd /workspace\n"
        "__hull_c=$1\n"
        "shift\n"
        "__hull_call=\n"
        "for __hull_kv in \"$@\"; do export \"$__hull_kv\"; __hull_call=\"$__hull_call ${__hull_kv%%=*}\"; done\n"
        "__hull_save() { __hull_rc=$?; for __hull_n in $__hull_call; do unset \"$__hull_n\"; done; "
        "mkdir -p \"$__hull_d\" 2>/dev/null; export -p > \"$__hull_d/env\" 2>/dev/null; "
        "pwd > \"$__hull_d/cwd\" 2>/dev/null; exit $__hull_rc; }\n"
        "trap __hull_save EXIT\n"
        "set --\n"
        "eval \"$__hull_c\"\n";

int sbx_session_shell(sbx_session *s, const char *command, char *const *env, uint64_t timeout_ms, uint64_t output_bytes,
                      int cancel_fd, sbx_result *ret, hull_error *e) {
        char *argv[SBX_SESSION_ARGS_MAX + 1] = {(char *) "/bin/sh", (char *) "-c", (char *) shell_wrapper,
                                                (char *) "hull-shell", (char *) command};
        size_t n = 5;
        if (strlen(command) > SBX_SESSION_CMD_MAX)
                return hull_err(e, -E2BIG, "session: the command is longer than %u bytes", SBX_SESSION_CMD_MAX);
        for (char *const *p = env; p && *p; p++) {
                const char *eq = strchr(*p, '=');
                if (!eq || eq == *p)
                        return hull_err(e, -EINVAL, "session: '%.64s' is not NAME=VALUE", *p);
                for (const char *c = *p; c < eq; c++)
                        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || *c == '_' ||
                              (c > *p && *c >= '0' && *c <= '9')))
                                return hull_err(e, -EINVAL, "session: '%.*s' is not a variable name", (int) (eq - *p),
                                                *p);
                if (n >= SBX_SESSION_ARGS_MAX)
                        return hull_err(e, -E2BIG, "session: more than %u variables", SBX_SESSION_ARGS_MAX - 5);
                argv[n++] = *p;
        }
        argv[n] = NULL;
        sbx_session_call c = {
                .argv = argv, .timeout_ms = timeout_ms, .output_bytes = output_bytes, .cancel_fd = cancel_fd};
        return sbx_session_run(s, &c, ret, e);
}

/* ---- interpreters ---- */

/* Write one frame (u32 LE length, then the bytes) on a non-blocking socket, waiting for room until deadline_us (0:
 * none) while draining the interpreter's output pipes (it may be blocked writing them). Returns 0, -ETIMEDOUT, or a
 * negative errno (-EPIPE: it is gone). */
static int frame_write_until(int fd, const char *buf, size_t len, uint64_t deadline_us, int *out_fd, int *err_fd,
                             capture *out, capture *err) {
        uint32_t n = (uint32_t) len;
        unsigned char head[4] = {n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >> 24) & 0xff};
        char one[SBX_CELL_FRAME_ONE_SEND];
        if (len <= sizeof(one) - sizeof(head)) { /* one send: the reader wakes once, for all of it */
                memcpy(one, head, sizeof(head));
                memcpy(one + sizeof(head), buf, len);
                return send_until(fd, one, sizeof(head) + len, deadline_us, out_fd, err_fd, out, err);
        }
        int r = send_until(fd, (const char *) head, sizeof(head), deadline_us, out_fd, err_fd, out, err);
        return r < 0 ? r : send_until(fd, buf, len, deadline_us, out_fd, err_fd, out, err);
}

/* A frame reader over a stream socket: bytes arrive in pieces. */
typedef struct frame_reader {
        unsigned char head[4];
        size_t head_len;
        char *body;
        size_t body_len, want;
} frame_reader;

/* Read what is available (MSG_DONTWAIT: the socket itself stays blocking, no fcntl per cell).
 * Returns 1 with a complete frame in fr->body (fr->want bytes, NUL added), 0 when more is
 * needed, -EPIPE on EOF, -EBADMSG on a bad length. */
static int frame_read(int fd, frame_reader *fr) {
        for (;;) {
                ssize_t n;
                if (fr->head_len < 4) {
                        n = recv(fd, fr->head + fr->head_len, 4 - fr->head_len, MSG_DONTWAIT);
                        if (n > 0) {
                                fr->head_len += (size_t) n;
                                if (fr->head_len == 4) {
                                        fr->want = (size_t) fr->head[0] | ((size_t) fr->head[1] << 8) |
                                                   ((size_t) fr->head[2] << 16) | ((size_t) fr->head[3] << 24);
                                        if (fr->want == 0 || fr->want > SBX_CELL_FRAME_MAX)
                                                return -EBADMSG;
                                        fr->body = malloc(fr->want + 1);
                                        if (!fr->body)
                                                return -ENOMEM;
                                        fr->body_len = 0;
                                }
                                continue;
                        }
                } else {
                        n = recv(fd, fr->body + fr->body_len, fr->want - fr->body_len, MSG_DONTWAIT);
                        if (n > 0) {
                                fr->body_len += (size_t) n;
                                if (fr->body_len == fr->want) {
                                        fr->body[fr->want] = '\0';
                                        return 1;
                                }
                                continue;
                        }
                }
                if (n == 0)
                        return -EPIPE;
                if (errno == EINTR)
                        continue;
                return errno == EAGAIN ? 0 : negative_errno();
        }
}

static void frame_reset(frame_reader *fr) {
        free(fr->body);
        *fr = (frame_reader){0};
}

/* Wait for one whole frame (blocking up to timeout_ms) and parse it as a JSON object. */
static int frame_wait_json(int fd, uint64_t timeout_ms, json_t **ret) {
        frame_reader fr = {0};
        uint64_t deadline = sbx_now_us() + timeout_ms * 1000ULL;
        int r;
        for (;;) {
                r = frame_read(fd, &fr);
                if (r != 0)
                        break;
                struct pollfd p = {.fd = fd, .events = POLLIN};
                int n = poll(&p, 1, (int) ms_left(deadline));
                if (n == 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                if (n < 0 && errno != EINTR) {
                        r = negative_errno();
                        break;
                }
        }
        if (r == 1) {
                json_t *j = json_loadb(fr.body, fr.want, JSON_REJECT_DUPLICATES, NULL);
                r = j && json_is_object(j) ? 0 : -EBADMSG;
                if (r == 0)
                        *ret = j;
                else
                        json_decref(j);
        }
        frame_reset(&fr);
        return r;
}

/* The first frame of a new interpreter: hello with its pid, or an error from the zygote. */
static int interp_hello(sbx_interp *in, hull_error *e) {
        json_t *j = NULL;
        int r = frame_wait_json(in->sock, SBX_INTERP_START_MS, &j);
        if (r < 0)
                return hull_err(e, r, "cell: the interpreter did not start (%s)",
                                r == -EPIPE       ? "it ended"
                                : r == -ETIMEDOUT ? "no answer"
                                                  : "bad first message");
        json_t *hello = json_object_get(j, "hello"), *err = json_object_get(j, "error");
        json_int_t pid = json_integer_value(json_object_get(hello, "pid"));
        if (err) {
                const char *step = json_string_value(json_object_get(err, "step"));
                const char *msg = json_string_value(json_object_get(err, "message"));
                json_int_t en = json_integer_value(json_object_get(err, "errno"));
                r = hull_err(e, en > 0 && en < 4096 ? -(int) en : -EPROTO,
                             "cell: the zygote could not enter the session: %.60s: %.120s", step ? step : "?",
                             msg ? msg : "");
        } else if (!json_is_object(hello) || pid < 2 || pid > 4194304)
                r = hull_err(e, -EPROTO, "cell: the interpreter's hello is malformed");
        else
                in->pid = (pid_t) pid;
        json_decref(j);
        return r;
}

static int zygote_spawn(sbx_session *s, int cell_fd, int out_w, int err_w, hull_error *e) {
        char **env = NULL;
        int r = sbx_env_build(s->env, "/workspace", s->net_proxy_env, &env);
        if (r < 0)
                return hull_err(e, r, "cell: cannot build the environment");
        json_t *envj = json_array();
        for (char **p = env; p && *p; p++)
                json_array_append_new(envj, json_string(*p));
        sbx_env_free(env);
        json_t *req = json_pack("{s:{s:i,s:i,s:o,s:s,s:I,s:I,s:i}}", "spawn", "uid", (int) SBX_SANDBOX_UID, "gid",
                                (int) SBX_SANDBOX_UID, "env", envj, "cwd", "/workspace", "nofile",
                                (json_int_t) SBX_DEFAULT_NOFILE, "fsize", (json_int_t) SBX_DEFAULT_FSIZE_BYTES,
                                "cgroups", (int) s->n_cg_fds);
        if (!req)
                return hull_err(e, -ENOMEM, "cell: out of memory");
        char *buf = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        if (!buf)
                return hull_err(e, -ENOMEM, "cell: out of memory");
        int fds[8] = {s->pidfd, cell_fd, out_w, err_w, s->bpf_fd};
        size_t nfds = 5;
        for (size_t i = 0; i < s->n_cg_fds; i++)
                fds[nfds++] = s->cg_fds[i];
        r = strlen(buf) > SBX_ZYGOTE_MSG_MAX ? -E2BIG : send_with_fds(s->zygote_fd, buf, strlen(buf), fds, nfds);
        free(buf);
        return r < 0 ? hull_err(e, r, "cell: cannot reach the zygote") : 0;
}

/* Start a cold interpreter in the sandbox (the init starts it). wait: until its hello; otherwise
 * it is running with its hello pending (its pid from the init's report, so sweeps spare it), and
 * the next cell waits for what is left of its start. */
static int interp_cold(sbx_session *s, sbx_lang lang, bool wait, hull_error *e) {
        sbx_interp *in = &s->interp[lang];
        _cleanup_close_pair_ int cs[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
        int r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cs) < 0 || pipe2(outp, O_CLOEXEC) < 0 ||
            pipe2(errp, O_CLOEXEC) < 0)
                return hull_err(e, negative_errno(), "cell: cannot create the interpreter's pipes");
        if (fcntl(outp[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(errp[0], F_SETFL, O_NONBLOCK) < 0)
                return hull_err(e, negative_errno(), "cell: cannot set up pipes");
        /* The driver's sources reach it on fd 0 (boot.py or boot.js replaces that with /dev/null
         * before the driver runs). */
        const char *py_src[] = {hull_runtime_cell_py, hull_runtime_hull_py};
        const char *js_src[] = {hull_runtime_cell_js};
        _cleanup_close_ int src_fd =
                lang == SBX_LANG_PYTHON ? sbx_sources_memfd(py_src, 2, e) : sbx_sources_memfd(js_src, 1, e);
        if (src_fd < 0)
                return src_fd;
        char **env = NULL;
        r = sbx_env_build(NULL, "/workspace", s->net_proxy_env, &env);
        if (r < 0)
                return hull_err(e, r, "cell: cannot build the environment");
        char *py[] = {(char *) SBX_PYTHON_BIN, (char *) "-c", (char *) hull_runtime_boot_py, NULL};
        char *js[] = {(char *) NODE_BIN, (char *) "-e", (char *) hull_runtime_boot_js, NULL};
        int fds[4] = {src_fd, outp[1], errp[1], cs[1]};
        r = ctl_send(s, SBX_CTL_START, 0, lang == SBX_LANG_PYTHON ? py : js, env, fds, 4, -1);
        sbx_env_free(env);
        if (r < 0)
                return hull_err(e, r, "cell: cannot reach the sandbox's init");
        cs[1] = safe_close(cs[1]);
        sbx_report rep;
        r = ctl_wait(s, SBX_REPORT_STARTED, SBX_START_TIMEOUT_MS, &rep, e);
        if (r < 0)
                return r;
        if (wait) {
                in->sock = cs[0];
                r = interp_hello(in, e);
                in->sock = -1;
                if (r < 0) {
                        /* It may still run: make sure it does not. */
                        hull_error ignore;
                        (void) sweep(s, -1, &ignore);
                        return r;
                }
        } else {
                if (rep.exit_code < 2 || rep.exit_code > 4194304) {
                        hull_error ignore;
                        (void) sweep(s, -1, &ignore);
                        return hull_err(e, -EPROTO, "cell: the init's report of the interpreter is malformed");
                }
                in->pid = (pid_t) rep.exit_code;
                in->hello_pending = true;
        }
        in->from_zygote = false;
        in->sock = TAKE_FD(cs[0]);
        in->out_fd = TAKE_FD(outp[0]);
        in->err_fd = TAKE_FD(errp[0]);
        in->running = true;
        if (!in->hello_pending)
                sbx_interp_find(s, in);
        return 0;
}

static int interp_start(sbx_session *s, sbx_lang lang, hull_error *e) {
        sbx_interp *in = &s->interp[lang];
        int r;

        interp_close(in);
        bool zygote = lang == SBX_LANG_PYTHON && s->zygote_fd >= 0 && s->pidfd >= 0 && s->bpf_fd >= 0;
        if (zygote) {
                _cleanup_close_pair_ int cs[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cs) < 0 || pipe2(outp, O_CLOEXEC) < 0 ||
                    pipe2(errp, O_CLOEXEC) < 0)
                        return hull_err(e, negative_errno(), "cell: cannot create the interpreter's pipes");
                if (fcntl(outp[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(errp[0], F_SETFL, O_NONBLOCK) < 0)
                        return hull_err(e, negative_errno(), "cell: cannot set up pipes");
                hull_error ze = {0};
                r = zygote_spawn(s, cs[1], outp[1], errp[1], &ze);
                if (r >= 0) {
                        cs[1] = safe_close(cs[1]);
                        in->sock = cs[0];
                        r = interp_hello(in, &ze);
                        in->sock = -1;
                }
                if (r >= 0) {
                        in->from_zygote = true;
                        in->sock = TAKE_FD(cs[0]);
                        in->out_fd = TAKE_FD(outp[0]);
                        in->err_fd = TAKE_FD(errp[0]);
                        in->running = true;
                        sbx_interp_find(s, in);
                        return 0;
                }
                /* Isolation does not depend on the zygote: start a cold interpreter in the
                 * sandbox instead, and say so. */
                snprintf(s->warning, sizeof(s->warning), "%.400s; started a new interpreter instead", ze.msg);
        }
        return interp_cold(s, lang, true, e);
}

int sbx_session_warm(sbx_session *s, sbx_lang lang, hull_error *e) {
        if (lang < 0 || lang >= _SBX_LANG_MAX)
                return hull_err(e, -EINVAL, "cell: unknown language");
        if (s->dead)
                return hull_err(e, -EPIPE, "session: the sandbox has ended");
        if (s->interp[lang].running)
                return 0;
        interp_close(&s->interp[lang]);
        /* The zygote's fork is quick and its pid comes only with the hello: start it whole. */
        if (lang == SBX_LANG_PYTHON && s->zygote_fd >= 0 && s->pidfd >= 0 && s->bpf_fd >= 0)
                return interp_start(s, lang, e);
        return interp_cold(s, lang, false, e);
}

void sbx_cell_result_done(sbx_cell_result *r) {
        free(r->out);
        free(r->err);
        r->out = r->err = NULL;
}

static const char interp_ended_note[] =
        "\n[hull] the interpreter ended during this cell; the next cell starts a new one\n";

int sbx_session_cell(sbx_session *s, sbx_lang lang, const char *code, size_t len, uint64_t timeout_ms,
                     uint64_t output_bytes, int cancel_fd, sbx_cell_result *ret, hull_error *e) {
        return sbx_session_cell_x(s, lang, code, len, NULL, timeout_ms, output_bytes, cancel_fd, ret, e);
}

/* After a cell: the interpreter killed (timed out or cancelled), found dead, or the cell done
 * with status; in each case nothing it started outlives it and what reached the pipes is taken.
 * Returns 0 or a negative errno with *e. */
static int cell_end(sbx_session *s, sbx_lang lang, bool timed_out, bool ended, int status, capture *out, capture *err,
                    sbx_cell_result *ret, hull_error *e) {
        sbx_interp *in = &s->interp[lang];
        int r;
        if (timed_out) {
                /* Kill the interpreter with everything else: the next cell starts a fresh one. */
                r = sweep(s, lang, e);
                if (in->out_fd >= 0)
                        read_into(&in->out_fd, out, NULL);
                if (in->err_fd >= 0)
                        read_into(&in->err_fd, err, NULL);
                interp_close(in);
                if (r < 0)
                        return r;
                ret->exit_code = SBX_EXIT_TIMEOUT;
                ret->timed_out = true;
                ret->interpreter_ended = true;
        } else if (ended) {
                r = sweep(s, lang, e);
                if (in->out_fd >= 0)
                        read_into(&in->out_fd, out, NULL);
                if (in->err_fd >= 0)
                        read_into(&in->err_fd, err, NULL);
                capture_append(err, interp_ended_note, sizeof(interp_ended_note) - 1);
                interp_close(in);
                if (r < 0)
                        return r;
                ret->exit_code = 1;
                ret->interpreter_ended = true;
        } else {
                /* Nothing the cell started outlives it (the kernel's count says none exists,
                 * or the init sweeps); then take what reached the pipes. */
                r = sbx_session_quiet(s) ? 0 : sweep(s, -1, e);
                if (in->out_fd >= 0)
                        read_into(&in->out_fd, out, NULL);
                if (in->err_fd >= 0)
                        read_into(&in->err_fd, err, NULL);
                if (r < 0)
                        return r;
                ret->exit_code = status;
        }
        return 0;
}

int sbx_session_cell_x(sbx_session *s, sbx_lang lang, const char *code, size_t len, const char *exchange,
                       uint64_t timeout_ms, uint64_t output_bytes, int cancel_fd, sbx_cell_result *ret, hull_error *e) {
        capture out = {0}, err = {0};
        frame_reader fr = {0};
        int r;

        *ret = (sbx_cell_result){0};
        if (lang < 0 || lang >= _SBX_LANG_MAX)
                return hull_err(e, -EINVAL, "cell: unknown language");
        if (s->dead)
                return hull_err(e, -EPIPE, "session: the sandbox has ended");
        if (len > SBX_CELL_CODE_MAX)
                return hull_err(e, -E2BIG, "cell: the code is longer than %u bytes", SBX_CELL_CODE_MAX);
        uint64_t start = sbx_now_us();
        sbx_interp *in = &s->interp[lang];
        if (!in->running) {
                r = interp_start(s, lang, e);
                if (r < 0)
                        return r;
                ret->interpreter_started = true;
        } else if (in->hello_pending) { /* warmed (sbx_session_warm): what is left of its start */
                in->hello_pending = false;
                r = interp_hello(in, e);
                if (r < 0) {
                        hull_error ignore;
                        (void) sweep(s, -1, &ignore);
                        r = interp_start(s, lang, e);
                        if (r < 0)
                                return r;
                } else
                        sbx_interp_find(s, in);
                ret->interpreter_started = true;
        }
        if (capture_init(&out, output_bytes ? output_bytes : SBX_DEFAULT_OUTPUT_BYTES) < 0 ||
            capture_init(&err, output_bytes ? output_bytes : SBX_DEFAULT_OUTPUT_BYTES) < 0) {
                r = hull_err(e, -ENOMEM, "cell: cannot allocate output buffers");
                goto out;
        }
        /* Output an earlier cell's leftovers wrote after its end is not this cell's. */
        {
                capture junk = {0};
                if (capture_init(&junk, 64) == 0) {
                        read_into(&in->out_fd, &junk, NULL);
                        read_into(&in->err_fd, &junk, NULL);
                        capture_done(&junk);
                }
        }
        {
                json_t *msg = json_pack("{s:{s:s%}}", "cell", "code", code, len);
                if (msg && exchange)
                        json_object_set_new(json_object_get(msg, "cell"), "exchange", json_string(exchange));
                char *buf = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
                json_decref(msg);
                if (!buf) {
                        r = hull_err(e, -EINVAL, "cell: the code is not valid UTF-8");
                        goto out;
                }
                /* Non-blocking (MSG_DONTWAIT), against the cell's deadline: an interpreter that
                 * does not read its socket (sandboxed code can make it so) must not hold the call
                 * past it. */
                r = frame_write_until(in->sock, buf, strlen(buf), timeout_ms ? start + timeout_ms * 1000ULL : 0,
                                      &in->out_fd, &in->err_fd, &out, &err);
                free(buf);
        }
        bool ended = false, done = false, timed_out = false;
        int status = 1;
        if (r == -ETIMEDOUT)
                timed_out = true;
        else if (r < 0)
                ended = true; /* it died since the last cell */
        uint64_t deadline = timeout_ms ? start + timeout_ms * 1000ULL : 0;
        while (!done && !ended && !timed_out) {
                struct pollfd pfd[4] = {
                        {.fd = in->sock, .events = POLLIN},
                        {.fd = in->out_fd, .events = POLLIN},
                        {.fd = in->err_fd, .events = POLLIN},
                        {.fd = cancel_fd, .events = POLLIN},
                };
                int n = poll(pfd, cancel_fd >= 0 ? 4 : 3, deadline ? (int) ms_left(deadline) : -1);
                if (n < 0 && errno != EINTR) {
                        r = hull_err(e, negative_errno(), "cell: poll");
                        goto out;
                }
                if (n == 0 || (cancel_fd >= 0 && pfd[3].revents && cancel_ready(cancel_fd))) {
                        timed_out = true;
                        break;
                }
                if (pfd[1].revents && in->out_fd >= 0)
                        read_into(&in->out_fd, &out, NULL);
                if (pfd[2].revents && in->err_fd >= 0)
                        read_into(&in->err_fd, &err, NULL);
                if (pfd[0].revents) {
                        int fr_r = frame_read(in->sock, &fr);
                        if (fr_r == 1) {
                                json_t *j = json_loadb(fr.body, fr.want, JSON_REJECT_DUPLICATES, NULL);
                                json_t *d = json_object_get(j, "done");
                                json_int_t st = json_integer_value(json_object_get(d, "status"));
                                if (json_is_object(d)) {
                                        done = true;
                                        status = st == 0 ? 0 : 1;
                                }
                                json_decref(j);
                                frame_reset(&fr);
                        } else if (fr_r < 0)
                                ended = true;
                }
        }
        r = cell_end(s, lang, timed_out, ended, status, &out, &err, ret, e);
        if (r < 0)
                goto out;
        ret->wall_us = sbx_now_us() - start;
        ret->out_truncated = capture_dropped(&out) > 0;
        ret->err_truncated = capture_dropped(&err) > 0;
        if (capture_contents(&out, &ret->out, &ret->out_len) < 0 ||
            capture_contents(&err, &ret->err, &ret->err_len) < 0) {
                sbx_cell_result_done(ret);
                r = hull_err(e, -ENOMEM, "cell: out of memory while collecting output");
                goto out;
        }
        r = 0;
out:
        frame_reset(&fr);
        capture_done(&out);
        capture_done(&err);
        return r;
}
