/* broker-worker.c: the broker's children: a run's worker and a session's keeper, and the frames
 * they and the daemon speak. See broker.c for the picture. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/close_range.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "env-layer.h"
#include "fs-util.h"
#include "limits.h"
#include "macro.h"
#include "sbx.h"
#include "sbx-net.h"
#include "sbx-oci.h"
#include "sbx-session.h"
#include "sock-util.h"
#include "sbx-workspace.h"
#include "time-util.h"
#include "broker-internal.h"

/* ---- frames: a u64 little-endian length, then the bytes ---- */

int brk_wait_fd(int fd, short events, uint64_t deadline_ms) {
        for (;;) {
                uint64_t now = now_mono_ms();
                if (now >= deadline_ms)
                        return -ETIMEDOUT;
                struct pollfd p = {.fd = fd, .events = events};
                uint64_t left = deadline_ms - now;
                int n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int) left);
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return negative_errno();
        }
}

int brk_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ms) {
        const char *p = buf;
        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n > 0) {
                        p += n;
                        len -= (size_t) n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EAGAIN)
                        return negative_errno();
                int r = brk_wait_fd(fd, POLLOUT, deadline_ms);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Returns 0, -EPIPE at end of stream before len bytes, -ETIMEDOUT or -errno. */
int brk_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ms) {
        char *p = buf;
        while (len > 0) {
                ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
                if (n > 0) {
                        p += n;
                        len -= (size_t) n;
                        continue;
                }
                if (n == 0)
                        return -EPIPE;
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return errno == ECONNRESET ? -EPIPE : negative_errno();
                int r = brk_wait_fd(fd, POLLIN, deadline_ms);
                if (r < 0)
                        return r;
        }
        return 0;
}

int brk_frame_send(int fd, const char *buf, size_t len, uint64_t deadline_ms) {
        unsigned char h[8];
        for (size_t i = 0; i < 8; i++)
                h[i] = (unsigned char) ((uint64_t) len >> (8 * i));
        int r = brk_send_all(fd, h, sizeof(h), deadline_ms);
        return r < 0 ? r : brk_send_all(fd, buf, len, deadline_ms);
}

/* Read one frame of at most max bytes into a new buffer (NULL for an empty frame). */
int brk_frame_recv(int fd, size_t max, uint64_t deadline_ms, char **ret, size_t *ret_len) {
        unsigned char h[8];
        int r = brk_recv_all(fd, h, sizeof(h), deadline_ms);
        if (r < 0)
                return r;
        uint64_t len = 0;
        for (size_t i = 0; i < 8; i++)
                len |= (uint64_t) h[i] << (8 * i);
        if (len > max)
                return -EMSGSIZE;
        _cleanup_free_ char *buf = NULL;
        if (len > 0) {
                buf = malloc(len);
                if (!buf)
                        return -ENOMEM;
                r = brk_recv_all(fd, buf, len, deadline_ms);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

static int result_send(int fd, const sbx_plan_result *res, uint64_t deadline_ms) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r = brk_plan_result_encode(res, &buf, &len);
        return r < 0 ? r : brk_frame_send(fd, buf, len, deadline_ms);
}

/* Tell a run's socket that it will not start. Never blocks: the socket is fresh and empty. */
void brk_refuse_run(int fd, const char *why) {
        sbx_plan_result res = {.outcome = SBX_PLAN_NOT_STARTED, .detail = (char *) why};
        (void) result_send(fd, &res, now_mono_ms() + BRK_REFUSE_SEND_MS);
        safe_close(fd);
}

/* ---- the worker: one run, in a process of its own ---- */

typedef struct worker {
        const brk_config *cfg;
        int cancel_fd;          /* signalfd for SIGTERM */
        int dir_fd;             /* the run's work directory */
        char dir[SBX_PATH_MAX]; /* its path */
        bool tmpfs;             /* a tmpfs is mounted on it (private to this worker) */
        uid_t owner;            /* who owns what is written there (the sandbox user outside) */
} worker;

static bool cancelled(const worker *w) {
        struct pollfd p = {.fd = w->cancel_fd, .events = POLLIN};
        return poll(&p, 1, 0) > 0;
}

/* Open the directory that holds path's last segment below dir_fd, creating missing
 * directories when create is set; never follows a symbolic link. On success *ret_leaf points
 * into buf (a copy of path). Returns the directory fd or a negative errno. */
static int open_parent(const worker *w, const char *path, bool create, char buf[static PLIM_PATH_MAX + 1],
                       const char **ret_leaf) {
        size_t n = strlen(path);
        if (n > PLIM_PATH_MAX)
                return -ENAMETOOLONG;
        memcpy(buf, path, n + 1);
        int cur = fcntl(w->dir_fd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return negative_errno();
        char *seg = buf;
        for (char *slash; (slash = strchr(seg, '/')); seg = slash + 1) {
                *slash = '\0';
                if (create) {
                        if (mkdirat(cur, seg, 0755) == 0) {
                                if (w->owner && fchownat(cur, seg, w->owner, w->owner, AT_SYMLINK_NOFOLLOW) < 0) {
                                        int r = negative_errno();
                                        safe_close(cur);
                                        return r;
                                }
                        } else if (errno != EEXIST) {
                                int r = negative_errno();
                                safe_close(cur);
                                return r;
                        }
                }
                int next = openat(cur, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int r = negative_errno();
                safe_close(cur);
                if (next < 0)
                        return r;
                cur = next;
        }
        *ret_leaf = seg;
        return cur;
}

static int write_file(const worker *w, const sbx_plan_file *f) {
        char buf[PLIM_PATH_MAX + 1];
        const char *leaf;
        _cleanup_close_ int dir = open_parent(w, f->path, true, buf, &leaf);
        if (dir < 0)
                return dir;
        _cleanup_close_ int fd = openat(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return negative_errno();
        for (size_t off = 0; off < f->len;) {
                ssize_t n = write(fd, f->data + off, f->len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? negative_errno() : -EIO;
                off += (size_t) n;
        }
        if (w->owner && fchown(fd, w->owner, w->owner) < 0)
                return negative_errno();
        return 0;
}

/* Read a regular file of at most max bytes. -ENOENT: not there (or not a regular file);
 * -EFBIG: larger than max. */
static int read_file(const worker *w, const char *path, size_t max, char **ret, size_t *ret_len) {
        char buf[PLIM_PATH_MAX + 1];
        const char *leaf;
        _cleanup_close_ int dir = open_parent(w, path, false, buf, &leaf);
        if (dir < 0)
                return dir == -ENOTDIR || dir == -ELOOP ? -ENOENT : dir;
        _cleanup_close_ int fd = openat(dir, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return errno == ELOOP ? -ENOENT : negative_errno();
        struct stat st;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -ENOENT;
        if ((uint64_t) st.st_size > max)
                return -EFBIG;
        _cleanup_free_ char *data = malloc(max + 1);
        size_t len = 0;
        if (!data)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(fd, data + len, max + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > max)
                        return -EFBIG;
        }
        data[len] = '\0';
        *ret = TAKE_PTR(data);
        *ret_len = len;
        return 0;
}

/* A fresh directory below the work root. As root, it is a tmpfs of the run's memory size in
 * this worker's own mount namespace (the sandbox's writes count against its memory cgroup and
 * never reach the host's disk), owned by the uid the sandbox user maps to. */
static int make_run_dir(worker *w, const sbx_plan *req, hull_error *e) {
        if ((size_t) snprintf(w->dir, sizeof(w->dir), "%s/run.XXXXXX", w->cfg->work_root) >= sizeof(w->dir)) {
                w->dir[0] = '\0';
                return hull_err(e, -ENAMETOOLONG, "broker: the work root path is too long");
        }
        if (!mkdtemp(w->dir)) {
                w->dir[0] = '\0';
                return hull_err(e, negative_errno(), "broker: cannot create a work directory in %s", w->cfg->work_root);
        }
        if (geteuid() == 0) {
                char opts[SBX_SHORT_STR_MAX];
                w->owner = SBX_ROOT_HOST_UID;
                uint64_t size = req->memory_bytes ? req->memory_bytes : SBX_DEFAULT_MEMORY_BYTES;
                snprintf(opts, sizeof(opts), "mode=0700,uid=%u,gid=%u,size=%" PRIu64, (unsigned) w->owner,
                         (unsigned) w->owner, size);
                if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                        return hull_err(e, negative_errno(), "broker: cannot make a private mount namespace");
                if (mount("hull-run", w->dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                        return hull_err(e, negative_errno(), "broker: cannot mount a tmpfs on %s", w->dir);
                w->tmpfs = true;
        }
        w->dir_fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (w->dir_fd < 0)
                return hull_err(e, negative_errno(), "broker: cannot open %s", w->dir);
        return 0;
}

static void remove_run_dir(worker *w) {
        w->dir_fd = safe_close(w->dir_fd);
        if (!w->dir[0])
                return;
        if (w->tmpfs)
                (void) umount2(w->dir, MNT_DETACH);
        (void) rm_rf_at(AT_FDCWD, w->dir);
}

static void run_steps_logged(worker *w, const sbx_plan *req, sbx_plan_result *res, int log_fd) {
        uint64_t deadline = now_mono_ms() + req->timeout_ms;
        /* An environment's network: limited runs through a proxy that sbx_run starts in this
         * process (the worker), never in the daemon; its connections go to log_fd. */
        sbx_net_policy policy = {.allowed_hosts = req->net_hosts,
                                 .allow_package_managers = req->net_allow_package_managers,
                                 .log_fd = log_fd};
        res->outcome = SBX_PLAN_COMPLETED;
        /* the kernel tier: runsc as hull serve's self-check chose its platform (the check ran
         * after this broker was forked: the plan carries its choice) */
        sbx_oci_runtime rt;
        const sbx_oci_runtime *kernel_rt = w->cfg->kernel_runtime;
        if (!kernel_rt && req->tier == SBX_TIER_KERNEL && req->kernel_platform[0]) {
                hull_error fe = {0};
                if (sbx_oci_runtime_find(&rt, &fe) == 0) {
                        snprintf(rt.platform, sizeof(rt.platform), "%s", req->kernel_platform);
                        kernel_rt = &rt;
                }
        }
        for (uint32_t i = 0; i < req->n_steps; i++) {
                uint64_t now = now_mono_ms();
                if (cancelled(w)) {
                        res->outcome = SBX_PLAN_CANCELLED;
                        sbx_plan_set_detail(res, "stopped before step %u: hull serve is shutting down", i + 1);
                        return;
                }
                if (now >= deadline) {
                        res->outcome = SBX_PLAN_TIMED_OUT;
                        sbx_plan_set_detail(res, "the run's %" PRIu64 " ms ran out before step %u", req->timeout_ms,
                                            i + 1);
                        return;
                }
                sbx_spec spec = {
                        .tier = req->tier == SBX_TIER_KERNEL ? SBX_TIER_KERNEL : SBX_TIER_CONTAINER,
                        .kernel_runtime = kernel_rt,
                        .argv = req->steps[i].argv,
                        .env = req->layer_dir ? env_layer_sandbox_env() : (char *const[]){NULL},
                        .workdir = w->dir,
                        .layer_dir = req->layer_dir,
                        .net = (sbx_net_mode) req->net,
                        .net_policy = req->net == SBX_NET_LIMITED ? &policy : NULL,
                        .timeout_ms = deadline - now,
                        .memory_bytes = req->memory_bytes,
                        .pids = req->pids,
                        .tmp_bytes = req->tmp_bytes ? req->tmp_bytes : SBX_DEFAULT_TMP_BYTES,
                        .output_bytes = req->output_bytes,
                        .use_cgroups = w->cfg->use_cgroups,
                        .cancel_fd = w->cancel_fd,
                };
                sbx_result sr;
                hull_error e = {0};
                if (sbx_run(&spec, &sr, &e) < 0) {
                        res->outcome = SBX_PLAN_ERROR;
                        sbx_plan_set_detail(res, "step %u: %s", i + 1, e.msg);
                        return;
                }
                sbx_step_result *s = &res->steps[res->n_steps++];
                sbx_step_from_result(s, &sr);
                sbx_result_done(&sr);
                if (s->flags & SBX_STEP_INTERRUPTED) {
                        res->outcome = SBX_PLAN_CANCELLED;
                        sbx_plan_set_detail(res, "step %u was stopped: hull serve is shutting down", i + 1);
                        return;
                }
                if (s->flags & SBX_STEP_TIMED_OUT) {
                        res->outcome = SBX_PLAN_TIMED_OUT;
                        sbx_plan_set_detail(res, "step %u used up the run's %" PRIu64 " ms", i + 1, req->timeout_ms);
                        return;
                }
                if ((req->flags & SBX_PLAN_STOP_ON_FAILURE) && s->status != 0)
                        return;
        }
}

/* The steps; with a limited network, its connection log (a memfd each step's proxy appends to,
 * complete once the step's proxy stopped) goes into the result, whole lines, bounded. */
static void run_steps(worker *w, const sbx_plan *req, sbx_plan_result *res) {
        if (req->net != SBX_NET_LIMITED) {
                run_steps_logged(w, req, res, -1);
                return;
        }
        _cleanup_close_ int log_fd = memfd_create("hull-net-log", MFD_CLOEXEC);
        run_steps_logged(w, req, res, log_fd);
        static const char cut[] = "- net log-cut: later connections of this run are not in its answer\n";
        uint64_t off = 0;
        bool more = false;
        if (log_fd < 0 || sbx_net_log_read(log_fd, &off, SERVE_NET_LOG_ANSWER_MAX - sizeof(cut), &res->net_log,
                                           &res->net_log_len, &more) < 0) {
                res->net_log = strdup("- net log-lost: this run's connection log could not be kept\n");
                res->net_log_len = res->net_log ? strlen(res->net_log) : 0;
        } else if (more) { /* read at most max - sizeof(cut): the line fits the bound */
                char *grown = realloc(res->net_log, res->net_log_len + sizeof(cut));
                if (grown) {
                        memcpy(grown + res->net_log_len, cut, sizeof(cut));
                        res->net_log = grown;
                        res->net_log_len += sizeof(cut) - 1;
                }
        }
}

static void collect_artifacts(worker *w, const sbx_plan *req, sbx_plan_result *res) {
        size_t budget = req->artifact_bytes;
        for (uint32_t i = 0; i < req->n_artifacts; i++) {
                char *data = NULL;
                size_t len = 0;
                int r = read_file(w, req->artifacts[i], budget, &data, &len);
                if (r == -EFBIG) {
                        res->artifacts_truncated = true;
                        continue;
                }
                if (r < 0)
                        continue; /* only those that exist are returned */
                sbx_plan_file *a = &res->artifacts[res->n_artifacts++];
                a->path = strdup(req->artifacts[i]);
                a->data = data;
                a->len = len;
                budget -= len;
                if (!a->path) {
                        res->n_artifacts--;
                        free(data);
                }
        }
}

static void run_in_box(worker *w, sbx_session_box *box, sbx_held *held, const sbx_plan *req, sbx_plan_result *res) {
        sbx_session sx;
        hull_error e = {0};
        sbx_session_init(&sx, box->ctl_fd, box->ws_fd, -1, -1, NULL, 0, -1);
        (void) sbx_plan_run_held(&sx, held && held->in_fd >= 0 ? held : NULL, box->host_uid, box->host_gid,
                                 box->have_cg ? &box->cg : NULL, w->cancel_fd, req, res, &e);
        sbx_session_done(&sx);
}

static bool box_fits(const brk_config *cfg, const sbx_plan *req) {
        /* the spare sandbox has no layer and no network: an environment's run gets its own */
        return req->tier == SBX_TIER_CONTAINER && !req->layer_dir && req->net == SBX_NET_NONE &&
               req->memory_bytes == cfg->spare_memory_bytes && req->pids == cfg->spare_pids &&
               (req->tmp_bytes ? req->tmp_bytes : SBX_DEFAULT_TMP_BYTES) == cfg->spare_tmp_bytes;
}

void brk_worker_run(const brk_config *cfg, int fd, int cancel_fd, sbx_session_box *box, sbx_held *held) {
        worker w = {.cfg = cfg, .cancel_fd = cancel_fd, .dir_fd = -1};
        sbx_plan req = {0};
        sbx_plan_result res = {0};
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        hull_error e = {0};

        /* Ask for the request: until now nothing of it has been sent. */
        if (brk_frame_send(fd, NULL, 0, now_mono_ms() + BRK_IO_TIMEOUT_MS) < 0 ||
            brk_frame_recv(fd, BRK_REQUEST_MAX, now_mono_ms() + BRK_IO_TIMEOUT_MS, &buf, &len) < 0)
                return;
        res.started_unix_ms = now_unix_ms();
        if (brk_plan_decode(buf, len, &req) < 0) {
                res.outcome = SBX_PLAN_ERROR;
                sbx_plan_set_detail(&res, "broker: malformed run request");
                goto answer;
        }
        free(TAKE_PTR(buf));
        res.steps = calloc(req.n_steps, sizeof(sbx_step_result));
        res.artifacts = req.n_artifacts ? calloc(req.n_artifacts, sizeof(sbx_plan_file)) : NULL;
        if (!res.steps || (req.n_artifacts && !res.artifacts)) {
                res.outcome = SBX_PLAN_ERROR;
                sbx_plan_set_detail(&res, "broker: out of memory");
                goto answer;
        }
        if (box && box_fits(cfg, &req)) {
                run_in_box(&w, box, held, &req, &res);
                goto answer;
        }
        if (make_run_dir(&w, &req, &e) < 0) {
                res.outcome = SBX_PLAN_ERROR;
                sbx_plan_set_detail(&res, "%s", e.msg);
                goto answer;
        }
        for (uint32_t i = 0; i < req.n_files; i++) {
                int r = write_file(&w, &req.files[i]);
                if (r < 0) {
                        res.outcome = SBX_PLAN_SETUP_FAILED;
                        sbx_plan_set_detail(&res, "cannot write %s: %s", req.files[i].path, strerror(-r));
                        goto answer;
                }
        }
        run_steps(&w, &req, &res);
        if (res.outcome == SBX_PLAN_COMPLETED || res.outcome == SBX_PLAN_TIMED_OUT)
                collect_artifacts(&w, &req, &res);
answer:
        remove_run_dir(&w);
        /* The sandbox goes before the answer, as a classic run's does: the run's slot must be free
         * (this process gone) by the time its caller can send the next run. */
        if (box) {
                hull_error be = {0};
                (void) sbx_session_box_end(box, NULL, &be);
        }
        res.ended_unix_ms = now_unix_ms();
        if (!res.detail)
                res.detail = strdup("");
        if (res.detail)
                (void) result_send(fd, &res, now_mono_ms() + BRK_IO_TIMEOUT_MS);
        sbx_plan_done(&req);
        sbx_plan_result_done(&res);
}

/* ---- a session's keeper ---- */

void brk_keeper_run(const brk_config *cfg, int fd, int term_fd) {
        _cleanup_free_ keeper_req *req = calloc(1, sizeof(*req));
        keeper_reply rep = {.magic = KEEPER_MAGIC};
        sbx_session_box box = {.pid = -1, .pidfd = -1, .ctl_fd = -1, .ws_fd = -1, .bpf_fd = -1, .cg_dir_fd = -1};
        hull_error e = {0};
        int fds_in[SOCK_FDS_MAX], truncated = 0;
        size_t n_in = 0;

        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (!req || poll(&p, 1, BRK_IO_TIMEOUT_MS) <= 0)
                return;
        ssize_t got = sock_recv_fds(fd, req, sizeof(*req), 0, fds_in, ELEMENTSOF(fds_in), &n_in, &truncated);
        _cleanup_close_ int log_fd = n_in > 0 ? fds_in[0] : -1;
        for (size_t i = 1; i < n_in; i++)
                safe_close(fds_in[i]);
        if (got != (ssize_t) sizeof(*req) || truncated || req->magic != KEEPER_MAGIC ||
            n_in != (req->has_log ? 1U : 0U) || req->net >= _SBX_NET_MODE_MAX || req->n_hosts > SBX_NET_ALLOW_MAX ||
            req->n_cidrs > BRK_NET_CIDRS_MAX || (req->tier != SBX_TIER_CONTAINER && req->tier != SBX_TIER_KERNEL))
                return;
        req->handles_dir[sizeof(req->handles_dir) - 1] = '\0';
        req->layer_dir[sizeof(req->layer_dir) - 1] = '\0';
        req->skills_dir[sizeof(req->skills_dir) - 1] = '\0';
        req->mnt_dir[sizeof(req->mnt_dir) - 1] = '\0';
        /* the policy: pointers into req, NULL-terminated lists */
        char *hosts[SBX_NET_ALLOW_MAX + 1] = {0}, *cidrs[BRK_NET_CIDRS_MAX + 1] = {0};
        for (uint32_t i = 0; i < req->n_hosts; i++) {
                req->hosts[i][EGRESS_HOST_MAX] = '\0';
                hosts[i] = req->hosts[i];
        }
        for (uint32_t i = 0; i < req->n_cidrs; i++) {
                req->cidrs[i][BRK_NET_CIDR_TEXT - 1] = '\0';
                cidrs[i] = req->cidrs[i];
        }
        sbx_net_policy policy = {.allowed_hosts = hosts,
                                 .allow_package_managers = req->allow_package_managers != 0,
                                 .allow_loopback = req->allow_loopback != 0,
                                 .allow_cidrs = cidrs,
                                 .log_fd = log_fd};
        sbx_session_spec spec = {.memory_bytes = req->memory_bytes,
                                 .pids = req->pids,
                                 .millicpus = req->millicpus,
                                 .tmp_bytes = req->tmp_bytes,
                                 .use_cgroups = cfg->use_cgroups,
                                 .handles_dir = req->handles_dir[0] ? req->handles_dir : NULL,
                                 .layer_dir = req->layer_dir[0] ? req->layer_dir : NULL,
                                 .skills_dir = req->skills_dir[0] ? req->skills_dir : NULL,
                                 .mnt_dir = req->mnt_dir[0] ? req->mnt_dir : NULL,
                                 .env = req->layer_dir[0] ? env_layer_sandbox_env() : NULL,
                                 .net = (sbx_net_mode) req->net,
                                 .net_policy = req->net == SBX_NET_LIMITED ? &policy : NULL,
                                 .tier = (sbx_tier) req->tier,
                                 /* the kernel tier's warm templates live as long as hull serve's work root */
                                 .template_dir = cfg->work_root};
        int r = sbx_session_start(&spec, &box, &e);
        if (r < 0) {
                rep.err = r;
                snprintf(rep.msg, sizeof(rep.msg), "%s", e.msg);
                (void) sock_send_fds(fd, &rep, sizeof(rep), NULL, 0, 0);
                return;
        }
        int fds[8] = {box.ctl_fd, box.ws_fd, box.pidfd, box.bpf_fd};
        size_t nfds = box.kernel ? 3 : 4;
        rep.kernel = box.kernel;
        for (size_t i = 0; i < box.n_cg_fds; i++)
                fds[nfds++] = box.cg_fds[i];
        rep.n_cg_fds = (uint32_t) box.n_cg_fds;
        if (box.cg_dir_fd >= 0) {
                fds[nfds++] = box.cg_dir_fd;
                rep.has_cg_dir = 1;
        }
        rep.host_uid = (uint32_t) box.host_uid;
        rep.host_gid = (uint32_t) box.host_gid;
        r = sock_send_fds(fd, &rep, sizeof(rep), fds, nfds, 0);
        /* The daemon holds the session's fds now; ours would keep the control socket open after
         * the daemon hangs up. The pidfd stays: it tells when the sandbox ends. */
        box.ctl_fd = safe_close(box.ctl_fd);
        box.ws_fd = safe_close(box.ws_fd);
        box.bpf_fd = safe_close(box.bpf_fd);
        for (size_t i = 0; i < box.n_cg_fds; i++)
                safe_close(box.cg_fds[i]);
        box.n_cg_fds = 0;
        box.cg_dir_fd = safe_close(box.cg_dir_fd);
        bool by_itself = false;
        while (r >= 0) {
                struct pollfd pf[3] = {{.fd = fd, .events = POLLIN | POLLRDHUP},
                                       {.fd = box.pidfd, .events = POLLIN},
                                       {.fd = term_fd, .events = POLLIN}};
                int n = poll(pf, 3, -1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 || pf[0].revents || pf[2].revents)
                        break;
                if (pf[1].revents) {
                        by_itself = true;
                        break;
                }
        }
        sbx_session_end_info info = {0};
        (void) sbx_session_box_end(&box, &info, &e);
        if (by_itself) {
                keeper_end end = {.magic = KEEPER_MAGIC, .oom = info.oom_killed, .status = info.init_status};
                (void) send(fd, &end, sizeof(end), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
}
