/* sbx-kernel-session.c: the kernel tier's session box (see sbx-session.h): one gVisor sandbox per
 * session. A shim, a child of the box's owner (single-threaded, like the container tier's init),
 * makes the bundle on a tmpfs of its own mount namespace (sbx-kernel-bundle.c), starts the sandbox
 * with `runsc create` + `runsc start` (its init: a small agent, runtime/kernel-agent.py, that
 * signals and reaps on request), and speaks the container init's control protocol
 * (sbx-internal.h) to the host, so the session handle (sbx-session.c) is the same for both tiers:
 * RUN and START become `runsc exec` with the call's fds as the process's stdio, SIGNAL and SWEEP
 * go to the agent. EOF on the control socket or SIGTERM ends it: `runsc kill`, `runsc delete
 * --force`, every process left below the shim (a subreaper: the sentry and the gofer) killed and
 * the directory removed. Never `runsc do`. A limited network: the shim moves into a network
 * namespace of hull's (sbx_oci_net_enter: every runsc command runs there, so `runsc exec` reaches
 * the sandbox's abstract control socket), and the proxy's listening socket there goes to the owner
 * with HELLO, which runs hull's proxy and egress guard on it as for the container tier. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "parse-util.h"
#include "sbx-internal.h"
#include "sbx-kernel.h"
#include "sbx-session.h"
#include "sock-util.h"

typedef struct kshim {
        sbx_kernel_dirs d;
        sbx_oci_bundle b;
        sbx_spec sp; /* what the bundle is made of */
        sbx_kernel_warm w;
        bool warm;      /* w is this session's template (made or restored) */
        pid_t warm_pid; /* its python inside, waiting for the first python START; 0 when claimed */
        const sbx_session_spec *spec;
        int ctl;       /* the init's end of the control socket */
        int agent_in;  /* the agent's stdin (we write) */
        int agent_out; /* its stdout (we read) */
        int sfd;       /* SIGCHLD and SIGTERM */
        pid_t call;    /* the `runsc exec` of the current RUN, 0 when none */
        int32_t exempt[SBX_SESSION_INTERP_MAX];
        uint32_t n_exempt;
        unsigned seq;
        char msg[SBX_CTL_MSG_MAX];
        char *argv[SBX_SESSION_ARGS_MAX + 1];
        char *envp[SBX_SESSION_ENV_MAX + 1];
} kshim;

static void ks_send(kshim *k, int kind, int err, int exited, int code, int sig, const char *what) {
        sbx_report rep = {.kind = kind, .err = err, .exited = exited, .exit_code = code, .term_signal = sig};
        if (what)
                snprintf(rep.what, sizeof(rep.what), "%.*s", (int) sizeof(rep.what) - 1, what);
        (void) send(k->ctl, &rep, sizeof(rep), MSG_NOSIGNAL);
}

/* Start runsc with the bundle's flags, then args, stdio in, out, err (-1: /dev/null). */
static pid_t ks_runsc(kshim *k, const char *const *args, int in, int out, int err) {
        pid_t pid;
        hull_error e;
        return sbx_oci_spawn(&k->b, args, in, out, err, &pid, &e) < 0 ? -1 : pid;
}

/* Wait for pid at most timeout_ms (then SIGKILL it). Returns its exit code, or -1. */
static int ks_wait(pid_t pid, uint64_t timeout_ms) {
        int pfd = (int) syscall(SYS_pidfd_open, pid, 0), st = 0;
        if (pfd >= 0) {
                struct pollfd p = {.fd = pfd, .events = POLLIN};
                int n;
                while ((n = poll(&p, 1, (int) timeout_ms)) < 0 && errno == EINTR)
                        ;
                if (n == 0)
                        (void) syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
                close(pfd);
        }
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Run a runsc command to its end, its stderr into the directory's log. 0 or -EIO. */
static int ks_runsc_sync(kshim *k, const char *const *args, int in, int out, uint64_t timeout_ms) {
        _cleanup_close_ int log = open(k->d.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        pid_t pid = ks_runsc(k, args, in, out, log);
        if (pid < 0)
                return -EIO;
        return ks_wait(pid, timeout_ms) == 0 ? 0 : -EIO;
}

/* The last line runsc wrote to its log, for an error message. */
static void ks_log_tail(kshim *k, char *buf, size_t size) {
        char text[SBX_CHILD_MSG_MAX * 4];
        _cleanup_close_ int fd = open(k->d.log, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        buf[0] = '\0';
        if (n <= 0)
                return;
        while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
                n--;
        text[n] = '\0';
        char *line = strrchr(text, '\n');
        snprintf(buf, size, "%.*s", (int) size - 1, line ? line + 1 : text);
}

/* The agent's one-line answer (its first byte in *ret_first): 0, or a negative errno (-EPIPE:
 * gone). */
static int ks_reply(kshim *k, char *ret_first) {
        uint64_t deadline = sbx_now_us() + SBX_KERNEL_START_TIMEOUT_MS * 1000ULL;
        bool first = true;
        for (;;) {
                struct pollfd p = {.fd = k->agent_out, .events = POLLIN};
                uint64_t now = sbx_now_us();
                if (now >= deadline)
                        return -ETIMEDOUT;
                int n = poll(&p, 1, (int) ((deadline - now) / 1000 + 1));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n == 0 ? -ETIMEDOUT : -errno;
                char c;
                ssize_t r = read(k->agent_out, &c, 1);
                if (r == 0)
                        return -EPIPE;
                if (r < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (r < 0)
                        return -errno;
                if (first && ret_first)
                        *ret_first = c;
                first = false;
                if (c == '\n')
                        return 0;
        }
}

/* One request to the agent (one message) and its one-line answer. 0, or a negative errno
 * (-EPIPE: gone). */
static int ks_agent(kshim *k, char op, int sig) {
        char line[256];
        size_t len = (size_t) snprintf(line, sizeof(line), "%c %d", op, sig);
        for (uint32_t i = 0; i < k->n_exempt; i++)
                len += (size_t) snprintf(line + len, sizeof(line) - len, " %d", (int) k->exempt[i]);
        if (k->warm_pid > 0) /* the warm python is spared until a START claims it */
                len += (size_t) snprintf(line + len, sizeof(line) - len, " %d", (int) k->warm_pid);
        len += (size_t) snprintf(line + len, sizeof(line) - len, "\n");
        if (sock_send_fds(k->agent_in, line, len, NULL, 0, MSG_NOSIGNAL) < 0)
                return -EPIPE;
        return ks_reply(k, NULL);
}

/* Split a RUN or START payload into k->argv and k->envp, the session's variables over the
 * call's defaults as the container init does. False when it is malformed. */
static bool ks_parse(kshim *k, const sbx_ctl_head *h, const char *payload, size_t len) {
        if (h->argc < 1 || h->argc > SBX_SESSION_ARGS_MAX || h->envc > SBX_SESSION_ENV_MAX || len == 0 ||
            payload[len - 1] != '\0')
                return false;
        size_t off = 0;
        for (uint32_t i = 0; i < h->argc + h->envc; i++) {
                if (off >= len)
                        return false;
                char *str = (char *) payload + off;
                if (i < h->argc)
                        k->argv[i] = str;
                else
                        k->envp[i - h->argc] = str;
                off += strlen(str) + 1;
        }
        if (off != len)
                return false;
        k->argv[h->argc] = NULL;
        size_t envc = h->envc;
        for (char *const *s = k->spec->env; s && *s; s++) {
                const char *eq = strchr(*s, '=');
                if (!eq)
                        continue;
                size_t j = 0;
                for (; j < envc; j++)
                        if (strncmp(k->envp[j], *s, (size_t) (eq - *s) + 1) == 0)
                                break;
                if (j == envc && envc >= SBX_SESSION_ENV_MAX)
                        return false;
                k->envp[j] = *s;
                if (j == envc)
                        envc++;
        }
        k->envp[envc] = NULL;
        return true;
}

/* A START of python in a restored sandbox: hand the call's fds to the warm python (pandas
 * imported) instead of starting one: the agent, already running inside, passes them on (no
 * `runsc exec`, no new process). True when it took them (STARTED sent); false: the caller
 * starts a cold one (the warm python, no longer spared, ends at the next sweep). */
static bool ks_claim(kshim *k, const int *fds) {
        pid_t wp = k->warm_pid;
        if (wp <= 0 || !sbx_kernel_warm_fits(k->argv))
                return false;
        k->warm_pid = 0;
        _cleanup_free_ char *msg = malloc(SBX_KERNEL_HANDOVER_MAX);
        ssize_t len = msg ? sbx_kernel_warm_handover_msg(k->envp, msg, SBX_KERNEL_HANDOVER_MAX) : -ENOMEM;
        const int pass[3] = {fds[3], fds[1], fds[2]}; /* the cell socket, stdout, stderr */
        char answer = 0;
        if (len < 0 || sock_send_fds(k->agent_in, msg, (size_t) len, pass, 3, MSG_NOSIGNAL) < 0 ||
            ks_reply(k, &answer) < 0 || answer != 'o') {
                fprintf(stderr, "hull-kernel: the warm interpreter did not take the cell; starting a cold one\n");
                return false;
        }
        ks_send(k, SBX_REPORT_STARTED, 0, 0, (int) wp, 0, NULL);
        return true;
}

/* RUN (3 fds: stdin, stdout, stderr) or START (4: sources, stdout, stderr, the cell socket: the
 * sources are in the sandbox's root already, the socket becomes the interpreter's fd 3). */
static void ks_exec(kshim *k, const sbx_ctl_head *h, int *fds, int nfds) {
        bool start = h->type == SBX_CTL_START;
        char pjson[SBX_PATH_MAX], pidfile[SBX_PATH_MAX], id[SBX_NAME_MAX];
        if (nfds != (start ? 4 : 3) || (!start && k->call > 0) ||
            !ks_parse(k, h, k->msg + sizeof(*h), h->payload_len)) {
                ks_send(k, SBX_REPORT_ERROR, -EBADMSG, 0, 0, 0, "init: malformed call");
                return;
        }
        unsigned seq = ++k->seq;
        if ((size_t) snprintf(pjson, sizeof(pjson), "%s/p-%u.json", k->d.dir, seq) >= sizeof(pjson) ||
            (size_t) snprintf(pidfile, sizeof(pidfile), "%s/p-%u.pid", k->d.dir, seq) >= sizeof(pidfile) ||
            (size_t) snprintf(id, sizeof(id), "%s", k->b.id) >= sizeof(id)) {
                ks_send(k, SBX_REPORT_ERROR, -ENAMETOOLONG, 0, 0, 0, "init: path too long");
                return;
        }
        if (start && ks_claim(k, fds))
                return;
        hull_error e = {0};
        uint64_t nproc = k->spec->pids ? k->spec->pids : SERVE_SESSION_PIDS;
        int r = sbx_kernel_write_process(pjson, k->argv, k->envp, start, nproc, &e);
        if (r < 0) {
                ks_send(k, SBX_REPORT_ERROR, r, 0, 0, 0, e.msg);
                return;
        }
        const char *args[] = {"exec", "--process", pjson, "--internal-pid-file", pidfile, id, NULL};
        /* Any other call first: the warm python is spared no more (the sandbox user's code could
         * reach its socket), so the next sweep ends it and a later python START is cold. */
        k->warm_pid = 0;
        pid_t pid = start ? ks_runsc(k, args, fds[3], fds[1], fds[2]) : ks_runsc(k, args, fds[0], fds[1], fds[2]);
        if (pid < 0) {
                ks_send(k, SBX_REPORT_ERROR, -errno, 0, 0, 0, "init: start the command");
                return;
        }
        if (!start) {
                k->call = pid;
                return;
        }
        /* The interpreter's pid inside: what runsc writes once the process runs. */
        uint64_t deadline = sbx_now_us() + SBX_KERNEL_START_TIMEOUT_MS * 1000ULL;
        for (;;) {
                char buf[32] = {0};
                _cleanup_close_ int fd = open(pidfile, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
                uint64_t ipid = 0;
                while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                        buf[--n] = '\0';
                if (n > 0 && parse_uint64(buf, 2, INT32_MAX, &ipid) == 0) {
                        (void) unlink(pidfile);
                        (void) unlink(pjson);
                        ks_send(k, SBX_REPORT_STARTED, 0, 0, (int) ipid, 0, NULL);
                        return;
                }
                int st;
                if (waitpid(pid, &st, WNOHANG) == pid || sbx_now_us() >= deadline) {
                        ks_send(k, SBX_REPORT_ERROR, -ECHILD, 0, 0, 0, "init: the interpreter did not start");
                        return;
                }
                usleep(2000);
        }
}

/* The current RUN ended with status st: nothing it left runs, then EXIT. */
static void ks_call_ended(kshim *k, int st) {
        (void) ks_agent(k, 'S', 9);
        k->call = 0;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        char pjson[SBX_PATH_MAX];
        if ((size_t) snprintf(pjson, sizeof(pjson), "%s/p-%u.json", k->d.dir, k->seq) < sizeof(pjson))
                (void) unlink(pjson);
        if ((size_t) snprintf(pjson, sizeof(pjson), "%s/p-%u.pid", k->d.dir, k->seq) < sizeof(pjson))
                (void) unlink(pjson);
        /* runsc exec exits 128+N when the process was killed by signal N */
        if (code > 128 && code < 128 + 65)
                ks_send(k, SBX_REPORT_EXIT, 0, 0, 0, code - 128, NULL);
        else
                ks_send(k, SBX_REPORT_EXIT, 0, 1, code, 0, NULL);
}

/* One message from the host; false at EOF. */
static bool ks_on_ctl(kshim *k) {
        int fds[4] = {-1, -1, -1, -1}, truncated = 0;
        size_t nfds = 0;
        ssize_t n = sock_recv_fds(k->ctl, k->msg, sizeof(k->msg), MSG_DONTWAIT, fds, 4, &nfds, &truncated);
        if (n == -EAGAIN || n == -EINTR)
                return true;
        if (n <= 0)
                return false;
        sbx_ctl_head h;
        if ((size_t) n < sizeof(h) || truncated) {
                ks_send(k, SBX_REPORT_ERROR, -EBADMSG, 0, 0, 0, "init: malformed message");
                goto out;
        }
        memcpy(&h, k->msg, sizeof(h));
        if (h.n_exempt > SBX_SESSION_INTERP_MAX || h.payload_len != (size_t) n - sizeof(h)) {
                ks_send(k, SBX_REPORT_ERROR, -EBADMSG, 0, 0, 0, "init: malformed message");
                goto out;
        }
        k->n_exempt = h.n_exempt;
        memcpy(k->exempt, h.exempt, sizeof(k->exempt));
        switch ((sbx_ctl_type) h.type) {
        case SBX_CTL_RUN:
        case SBX_CTL_START:
                ks_exec(k, &h, fds, (int) nfds);
                break;
        case SBX_CTL_SIGNAL:
                if (h.arg == SIGKILL)
                        (void) ks_agent(k, 'S', SIGKILL);
                else if (h.arg == SIGTERM || h.arg == SIGINT || h.arg == SIGHUP)
                        (void) ks_agent(k, 'K', h.arg);
                break;
        case SBX_CTL_SWEEP: {
                int r = ks_agent(k, 'S', SIGKILL);
                if (r < 0)
                        ks_send(k, SBX_REPORT_ERROR, r, 0, 0, 0, "init: the sandbox's agent did not answer");
                else
                        ks_send(k, SBX_REPORT_SWEPT, 0, 0, 0, 0, NULL);
                break;
        }
        default:
                ks_send(k, SBX_REPORT_ERROR, -EBADMSG, 0, 0, 0, "init: unknown message");
        }
out:
        for (size_t i = 0; i < nfds; i++)
                safe_close(fds[i]);
        return true;
}

/* Reap what ended; true when the current call did (*st its status). */
static bool ks_reap(kshim *k, int *st) {
        bool ended = false;
        for (;;) {
                struct signalfd_siginfo si;
                if (read(k->sfd, &si, sizeof(si)) != (ssize_t) sizeof(si))
                        break;
        }
        for (;;) {
                int s;
                pid_t p = waitpid(-1, &s, WNOHANG);
                if (p <= 0)
                        break;
                if (p == k->call) {
                        *st = s;
                        ended = true;
                }
        }
        return ended;
}

/* The end: the sandbox stopped and deleted, every process below the shim gone, the directory
 * removed. */
static void ks_teardown(kshim *k) {
        k->agent_in = safe_close(k->agent_in);
        (void) sbx_oci_bundle_destroy(&k->b, NULL);
        sbx_kernel_kill_children(getpid(), SBX_KERNEL_STOP_MS);
        sbx_kernel_dirs_remove(&k->d);
}

/* A new bundle for the session (k->sp) with the agent as its init. */
static int ks_bundle(kshim *k, const sbx_oci_runtime *rt, hull_error *e) {
        int r = sbx_oci_bundle_make(rt, &k->sp, k->d.ws, &k->b, e);
        return r < 0 ? r : sbx_kernel_bundle_finish(&k->b, e);
}

/* The sandbox started cold (runsc create + start), the agent on in and out. */
static int ks_create(kshim *k, int in, int out, hull_error *e) {
        const char *create[] = {"create", "--bundle", k->b.dir, k->b.id, NULL};
        const char *start[] = {"start", k->b.id, NULL};
        char tail[SBX_CHILD_MSG_MAX];
        if (ks_runsc_sync(k, create, in, out, SBX_KERNEL_START_TIMEOUT_MS) < 0) {
                ks_log_tail(k, tail, sizeof(tail));
                return hull_err(e, -EIO, "kernel: runsc create failed: %.150s", tail);
        }
        if (ks_runsc_sync(k, start, -1, -1, SBX_KERNEL_START_TIMEOUT_MS) < 0) {
                ks_log_tail(k, tail, sizeof(tail));
                return hull_err(e, -EIO, "kernel: runsc start failed: %.150s", tail);
        }
        return 0;
}

/* The sandbox restored from the template into this session's bundle (its id, mounts, cgroup). */
static int ks_restore(kshim *k, int in, int out, hull_error *e) {
        const char *restore[] = {"restore", "--image-path", k->w.image, "--bundle",
                                 k->b.dir,  "--detach",     k->b.id,    NULL};
        char tail[SBX_CHILD_MSG_MAX];
        if (ks_runsc_sync(k, restore, in, out, SBX_KERNEL_WARM_MS) < 0) {
                ks_log_tail(k, tail, sizeof(tail));
                return hull_err(e, -EIO, "kernel: runsc restore failed: %.150s", tail);
        }
        return 0;
}

/* Wait for the warm python's "ready" line on fd (at most SBX_KERNEL_WARM_MS). */
static int ks_wait_ready(int fd) {
        char buf[16];
        size_t got = 0;
        uint64_t deadline = sbx_now_us() + SBX_KERNEL_WARM_MS * 1000ULL;
        while (got < 6) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                uint64_t now = sbx_now_us();
                if (now >= deadline)
                        return -ETIMEDOUT;
                int n = poll(&p, 1, (int) ((deadline - now) / 1000 + 1));
                if (n < 0 && errno == EINTR)
                        continue;
                ssize_t r = n > 0 ? read(fd, buf + got, sizeof(buf) - got) : -1;
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return -EPIPE;
                got += (size_t) r;
        }
        return memcmp(buf, "ready\n", 6) == 0 ? 0 : -EPROTO;
}

/* A new socket for the agent's stdin (in[0] its end, in[1] ours): the one a sandbox had is shut
 * down when runsc ends that sandbox (a checkpoint's, or a failed start's). 0 or -errno. */
static int ks_agent_socket(int in[2]) {
        in[0] = safe_close(in[0]);
        in[1] = safe_close(in[1]);
        return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, in) < 0 ? -errno : 0;
}

/* Make the template from this session's sandbox, started and untouched: the warm python
 * (`runsc exec --detach` as the sandbox user, pandas imported), `runsc checkpoint` (the sandbox
 * stops), published for the next sessions; then this sandbox restored from it like theirs. */
static int ks_build(kshim *k, int in[2], int out, hull_error *e) {
        char tmp[SBX_PATH_MAX], pjson[SBX_PATH_MAX], pidfile[SBX_PATH_MAX], image[SBX_PATH_MAX],
                tail[SBX_CHILD_MSG_MAX];
        _cleanup_close_pair_ int rp[2] = {-1, -1};
        int r = sbx_kernel_warm_stage(&k->w, tmp, sizeof(tmp));
        if (r < 0)
                return hull_err(e, r, "kernel: cannot make a template directory in %s", k->spec->template_dir);
        if (path_join(pjson, sizeof(pjson), k->d.dir, "warm.json") < 0 ||
            path_join(pidfile, sizeof(pidfile), k->d.dir, "warm.pid") < 0 ||
            path_join(image, sizeof(image), tmp, "image") < 0) {
                r = hull_err(e, -ENAMETOOLONG, "kernel: path too long");
                goto fail;
        }
        r = sbx_kernel_warm_write_python(pjson, k->spec, k->sp.pids, e);
        if (r < 0)
                goto fail;
        if (pipe2(rp, O_CLOEXEC) < 0) {
                r = hull_err(e, -errno, "kernel: cannot create a pipe");
                goto fail;
        }
        /* Not --detach (this runsc loses the container id with --process): runsc exec runs
         * until the checkpoint stops the sandbox, then it is ended. */
        const char *exec[] = {"exec", "--process", pjson, "--internal-pid-file", pidfile, k->b.id, NULL};
        pid_t xpid = ks_runsc(k, exec, -1, rp[1], -1);
        if (xpid < 0) {
                r = hull_err(e, -EIO, "kernel: cannot start runsc exec for the warm python");
                goto fail;
        }
        rp[1] = safe_close(rp[1]);
        r = ks_wait_ready(rp[0]);
        pid_t wp = sbx_kernel_read_pid(pidfile);
        if (r < 0 || wp <= 0) {
                (void) kill(xpid, SIGKILL);
                (void) ks_wait(xpid, SBX_KERNEL_STOP_MS);
                r = hull_err(e, r < 0 ? r : -EPROTO, "kernel: the warm python did not get ready");
                goto fail;
        }
        const char *ckpt[] = {"checkpoint", "--image-path", image, k->b.id, NULL};
        const char *del[] = {"delete", "--force", k->b.id, NULL};
        r = ks_runsc_sync(k, ckpt, -1, -1, SBX_KERNEL_WARM_MS);
        (void) kill(xpid, SIGKILL); /* its process is in the image or gone with the sandbox */
        (void) ks_wait(xpid, SBX_KERNEL_STOP_MS);
        if (r < 0) {
                ks_log_tail(k, tail, sizeof(tail));
                r = hull_err(e, -EIO, "kernel: runsc checkpoint failed: %.150s", tail);
                goto fail;
        }
        /* The stopped sandbox and gofer are the shim's children (a subreaper): reaped, or runsc
         * delete waits for them in vain. */
        for (uint64_t end = sbx_now_us() + SBX_KERNEL_STOP_MS * 1000ULL; sbx_now_us() < end;) {
                int st;
                pid_t p = waitpid(-1, &st, WNOHANG);
                if (p < 0 && errno == ECHILD)
                        break;
                if (p <= 0)
                        usleep(10000);
        }
        if (ks_runsc_sync(k, del, -1, -1, SBX_KERNEL_STOP_MS) < 0) {
                ks_log_tail(k, tail, sizeof(tail));
                r = hull_err(e, -EIO, "kernel: runsc delete after the checkpoint failed: %.150s", tail);
                goto fail;
        }
        k->b.created = false;
        (void) unlink(pjson);
        (void) unlink(pidfile);
        r = sbx_kernel_warm_publish(&k->w, tmp, wp);
        if (r < 0 && !sbx_kernel_warm_ready(&k->w)) /* not ours, nor another's */
                return hull_err(e, r, "kernel: cannot keep the template in %s", k->w.dir);
        r = ks_agent_socket(in);
        if (r < 0)
                return hull_err(e, r, "kernel: cannot create the agent's socket");
        return ks_restore(k, in[0], out, e);
fail:
        (void) rm_rf_at(AT_FDCWD, tmp);
        return r;
}

static int ks_setup(kshim *k, hull_error *e) {
        _cleanup_close_pair_ int in[2] = {-1, -1}, out[2] = {-1, -1};
        const sbx_session_spec *spec = k->spec;
        sbx_oci_runtime rt;
        int r = sbx_oci_runtime_find(&rt, e);
        if (r < 0)
                return r;
        r = sbx_kernel_dirs_make(&k->d, spec, e);
        if (r < 0)
                return r;
        /* The sandbox's memory: the session's, with the workspace (the gofer's tmpfs pages),
         * plus the sentry's own */
        k->sp = (sbx_spec){
                .tier = SBX_TIER_KERNEL,
                .argv = sbx_kernel_agent_argv,
                .env = spec->env,
                .memory_bytes = (spec->memory_bytes ? spec->memory_bytes : SERVE_SESSION_MEMORY_BYTES) +
                                SBX_KERNEL_SENTRY_BYTES,
                /* RLIMIT_NPROC inside; sbx-oci sizes the host's pids backstop from it */
                .pids = spec->pids ? spec->pids : SERVE_SESSION_PIDS,
                .millicpus = spec->millicpus,
                .tmp_bytes = spec->tmp_bytes ? spec->tmp_bytes : SBX_DEFAULT_TMP_BYTES,
                .use_cgroups = spec->use_cgroups,
                .handles_dir = spec->handles_dir,
                .layer_dir = spec->layer_dir,
                .skills_dir = spec->skills_dir,
                .mnt_dir = spec->mnt_dir,
                .cancel_fd = -1,
                .net = spec->net, /* none or limited (sbx_kernel_session_start refuses the rest) */
        };
        r = ks_bundle(k, &rt, e);
        if (r < 0)
                return r;
        if (spec->net == SBX_NET_LIMITED) { /* the shim and every runsc it runs: hull's namespace */
                r = sbx_oci_net_enter(e);
                if (r < 0)
                        return r;
                k->b.net_fd = r;
                k->b.net_entered = true;
        }
        /* the agent's stdin: a socket, so a handover's fds can reach it (ks_claim) */
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, in) < 0 || pipe2(out, O_CLOEXEC) < 0)
                return hull_err(e, -errno, "kernel: cannot create the agent's socket and pipe");
        /* Warm: restored from the shape's template, or the first of its shape makes it. Any
         * failure there: this session starts cold, as without templates. */
        hull_error we = {0};
        k->warm = sbx_kernel_warm_locate(spec, &rt, &k->w) == 0;
        if (k->warm && sbx_kernel_warm_ready(&k->w))
                r = ks_restore(k, in[0], out[1], &we);
        else if (k->warm && (r = ks_create(k, in[0], out[1], e)) >= 0)
                r = ks_build(k, in, out[1], &we);
        else if (!k->warm)
                r = ks_create(k, in[0], out[1], e);
        if (r < 0 && k->warm && we.msg[0]) {
                fprintf(stderr, "hull-kernel: no warm start (%s): this session starts cold\n", we.msg);
                k->warm = false;
                (void) sbx_oci_bundle_destroy(&k->b, NULL);
                r = ks_bundle(k, &rt, e);
                if (r >= 0 && (r = ks_agent_socket(in)) < 0)
                        r = hull_err(e, r, "kernel: cannot create the agent's socket");
                if (r >= 0)
                        r = ks_create(k, in[0], out[1], e);
        }
        if (r < 0)
                return r;
        k->warm_pid = k->warm ? k->w.pid : 0;
        k->agent_in = TAKE_FD(in[1]);
        k->agent_out = TAKE_FD(out[0]);
        return 0;
}

_noreturn_ static void ks_main(kshim *k) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGPIPE);
        sigprocmask(SIG_BLOCK, &set, NULL);
        sigdelset(&set, SIGPIPE);
        k->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        (void) prctl(PR_SET_NAME, "hull-kernel", 0, 0, 0);
        hull_error e = {0};
        int r = k->sfd < 0 ? hull_err(&e, -errno, "kernel: signalfd") : ks_setup(k, &e);
        if (r < 0) {
                ks_send(k, SBX_REPORT_ERROR, r, 0, 0, 0, e.msg);
                ks_teardown(k);
                _exit(1);
        }
        /* HELLO carries /workspace and, limited, the proxy's listening socket in the sandbox's
         * network namespace (runsc create's: sbx_oci_spawn): the owner runs the proxy */
        int fds[2] = {open(k->d.ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC), TAKE_FD(k->b.net_fd)};
        sbx_report hello = {.kind = SBX_REPORT_HELLO};
        if (fds[0] < 0 || sock_send_fds(k->ctl, &hello, sizeof(hello), fds, fds[1] >= 0 ? 2 : 1, 0) < 0) {
                ks_teardown(k);
                _exit(1);
        }
        safe_close(fds[0]);
        safe_close(fds[1]);
        int status = 0;
        for (;;) {
                struct pollfd p[3] = {{.fd = k->ctl, .events = POLLIN},
                                      {.fd = k->sfd, .events = POLLIN},
                                      {.fd = k->agent_out, .events = POLLIN}};
                if (poll(p, 3, -1) < 0 && errno != EINTR)
                        break;
                if (p[1].revents) {
                        sigset_t pend;
                        sigpending(&pend);
                        struct signalfd_siginfo si;
                        bool term = false;
                        while (read(k->sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                if (si.ssi_signo == SIGTERM)
                                        term = true;
                        int st;
                        if (ks_reap(k, &st))
                                ks_call_ended(k, st);
                        if (term)
                                break;
                }
                if (p[2].revents) { /* the agent's pipe closed: the sandbox ended by itself */
                        status = 3;
                        break;
                }
                if (p[0].revents && !ks_on_ctl(k))
                        break;
        }
        ks_teardown(k);
        _exit(status);
}

int sbx_kernel_session_start(const sbx_session_spec *spec, sbx_session_box *ret, hull_error *e) {
        _cleanup_close_pair_ int ctlp[2] = {-1, -1};
        sbx_session_box b = {
                .pid = -1, .pidfd = -1, .ctl_fd = -1, .ws_fd = -1, .bpf_fd = -1, .cg_dir_fd = -1, .kernel = true};
        int r = sbx_kernel_available(e);
        if (r < 0)
                return r;
        if (spec->net != SBX_NET_NONE && spec->net != SBX_NET_LIMITED)
                return hull_err_hint(e, -EOPNOTSUPP,
                                     "open the session with the network 'none' or 'limited', or in the container tier",
                                     "kernel: the kernel tier has no network '%s'", sbx_net_mode_to_string(spec->net));
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctlp) < 0)
                return hull_err(e, -errno, "kernel: cannot create the control socket");
        pid_t pid = fork();
        if (pid < 0)
                return hull_err(e, -errno, "kernel: cannot fork the sandbox's shim");
        if (pid == 0) {
                /* Keep the control socket only: the owner's other fds are not the shim's. */
                int ctl = fcntl(ctlp[1], F_DUPFD_CLOEXEC, 3);
                if (ctl < 0 || dup2(ctl, 3) < 0)
                        _exit(1);
                (void) syscall(SYS_close_range, 4U, ~0U, 0U);
                kshim *k = calloc(1, sizeof(*k));
                if (!k)
                        _exit(1);
                *k = (kshim){.spec = spec, .ctl = 3, .agent_in = -1, .agent_out = -1, .sfd = -1};
                ks_main(k);
        }
        ctlp[1] = safe_close(ctlp[1]);
        b.pid = pid;
        b.pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        b.ctl_fd = TAKE_FD(ctlp[0]);
        b.host_uid = SBX_SANDBOX_UID; /* the gofer makes the sandbox user's files with its ids */
        b.host_gid = SBX_SANDBOX_UID;
        hull_error ignore;
        struct pollfd p = {.fd = b.ctl_fd, .events = POLLIN};
        int n;
        /* a first session of its shape also makes the warm template (sbx-kernel-warm.c) */
        while ((n = poll(&p, 1, (int) (SBX_KERNEL_START_TIMEOUT_MS + SBX_KERNEL_WARM_MS))) < 0 && errno == EINTR)
                ;
        sbx_report rep = {0};
        int fds[2] = {-1, -1}, truncated = 0;
        size_t nfds = 0, want = spec->net == SBX_NET_LIMITED ? 2 : 1;
        ssize_t got = n > 0 ? sock_recv_fds(b.ctl_fd, &rep, sizeof(rep), 0, fds, 2, &nfds, &truncated) : 0;
        rep.what[sizeof(rep.what) - 1] = '\0';
        if (got == (ssize_t) sizeof(rep) && rep.kind == SBX_REPORT_HELLO && nfds == want) {
                b.ws_fd = fds[0];
                if (want == 1) {
                        *ret = b;
                        return 0;
                }
                /* limited: hull's proxy and egress guard, in this process as for the container tier */
                sbx_net_policy none = {.log_fd = -1};
                r = sbx_net_proxy_start(fds[1], spec->net_policy ? spec->net_policy : &none, &b.proxy, e);
                if (r >= 0) {
                        *ret = b;
                        return 0;
                }
                (void) sbx_session_box_end(&b, NULL, &ignore);
                return r;
        }
        for (size_t i = 0; i < nfds; i++)
                safe_close(fds[i]);
        if (got == (ssize_t) sizeof(rep) && rep.kind == SBX_REPORT_ERROR)
                r = hull_err(e, rep.err < 0 ? rep.err : -EIO, "session: %s", rep.what);
        else
                r = hull_err(e, n == 0 ? -ETIMEDOUT : -EPROTO, "kernel: the gVisor sandbox did not start");
        (void) sbx_session_box_end(&b, NULL, &ignore);
        return r;
}

int sbx_session_kernel_available(hull_error *e) {
        return sbx_kernel_available(e);
}
