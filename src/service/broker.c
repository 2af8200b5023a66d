/* broker.c: the sandbox broker process, its workers, and the daemon's side of a run.
 *
 * daemon thread                      broker (single-threaded)            worker (one per run)
 * socketpair(a, b)
 * ctl: "run" + SCM_RIGHTS(b) ──────► start a worker (or queue b) ──fork──► PDEATHSIG; signalfd
 *                                                                          (SIGTERM = cancel)
 * wait for "ready" on a ◄──────────────────────────────────────────────── empty frame on b
 * request frame ─────────────────────────────────────────────────────────► files, steps
 *                                                                          (sbx_run), artifacts
 * result frame ◄───────────────────────────────────────────────────────── result; exit
 *
 * The daemon sends the request only once a worker asked for it, so a refused or dropped run
 * provably ran nothing: the broker answers it with a SBX_PLAN_NOT_STARTED result instead. */
#include "broker.h"

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
#include "sbx-session.h"
#include "sock-util.h"
#include "sbx-workspace.h"
#include "time-util.h"

enum {
        CTL_RUN = 1,     /* carries one fd: the broker's end of a run's socketpair */
        CTL_CANCEL = 2,  /* stop every run, refuse new ones */
        CTL_SESSION = 3, /* carries one fd: the broker's end of a session's socketpair */
};

/* daemon ↔ keeper, SOCK_SEQPACKET messages */
#define KEEPER_MAGIC 0x686b7031U /* "hkp1" */
typedef struct keeper_req {
        uint32_t magic;
        uint64_t memory_bytes, pids, millicpus, tmp_bytes;
        char handles_dir[SBX_PATH_MAX]; /* "" for none */
        char layer_dir[SBX_PATH_MAX];   /* "" for none */
        uint32_t net;                   /* sbx_net_mode */
        uint32_t allow_package_managers, allow_loopback;
        uint32_t n_hosts, n_cidrs;
        uint32_t has_log; /* the log's fd rides along */
        char hosts[SBX_NET_ALLOW_MAX][EGRESS_HOST_MAX + 1];
        char cidrs[BRK_NET_CIDRS_MAX][BRK_NET_CIDR_TEXT];
} keeper_req;

typedef struct keeper_reply {
        uint32_t magic;
        int32_t err; /* 0: started; the fds ride along */
        uint32_t n_cg_fds;
        uint32_t host_uid, host_gid;
        char msg[HULL_ERROR_MSG_MAX];
} keeper_reply;

typedef struct keeper_end {
        uint32_t magic;
        uint32_t oom;
        int32_t status;
} keeper_end;

struct brk_broker {
        pid_t pid;
        int ctl; /* SOCK_SEQPACKET to the broker */
        int pidfd;
        pthread_mutex_t lock; /* one sendmsg on ctl at a time */
        bool reaped;
};

/* ---- frames: a u64 little-endian length, then the bytes ---- */

static int wait_fd(int fd, short events, uint64_t deadline_ms) {
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

static int send_all(int fd, const void *buf, size_t len, uint64_t deadline_ms) {
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
                int r = wait_fd(fd, POLLOUT, deadline_ms);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Returns 0, -EPIPE at end of stream before len bytes, -ETIMEDOUT or -errno. */
static int recv_all(int fd, void *buf, size_t len, uint64_t deadline_ms) {
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
                int r = wait_fd(fd, POLLIN, deadline_ms);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int frame_send(int fd, const char *buf, size_t len, uint64_t deadline_ms) {
        unsigned char h[8];
        for (size_t i = 0; i < 8; i++)
                h[i] = (unsigned char) ((uint64_t) len >> (8 * i));
        int r = send_all(fd, h, sizeof(h), deadline_ms);
        return r < 0 ? r : send_all(fd, buf, len, deadline_ms);
}

/* Read one frame of at most max bytes into a new buffer (NULL for an empty frame). */
static int frame_recv(int fd, size_t max, uint64_t deadline_ms, char **ret, size_t *ret_len) {
        unsigned char h[8];
        int r = recv_all(fd, h, sizeof(h), deadline_ms);
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
                r = recv_all(fd, buf, len, deadline_ms);
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
        return r < 0 ? r : frame_send(fd, buf, len, deadline_ms);
}

/* Tell a run's socket that it will not start. Never blocks: the socket is fresh and empty. */
static void refuse_run(int fd, const char *why) {
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
                        .tier = SBX_TIER_CONTAINER,
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

static void run_in_box(worker *w, sbx_session_box *box, const sbx_plan *req, sbx_plan_result *res) {
        sbx_session sx;
        hull_error e = {0};
        sbx_session_init(&sx, box->ctl_fd, box->ws_fd, -1, -1, NULL, 0, -1);
        (void) sbx_plan_run_in_session(&sx, box->host_uid, box->host_gid, box->have_cg ? &box->cg : NULL, w->cancel_fd,
                                       req, res, &e);
        sbx_session_done(&sx);
}

static bool box_fits(const brk_config *cfg, const sbx_plan *req) {
        /* the spare sandbox has no layer and no network: an environment's run gets its own */
        return !req->layer_dir && req->net == SBX_NET_NONE && req->memory_bytes == cfg->spare_memory_bytes &&
               req->pids == cfg->spare_pids &&
               (req->tmp_bytes ? req->tmp_bytes : SBX_DEFAULT_TMP_BYTES) == cfg->spare_tmp_bytes;
}

static void worker_run(const brk_config *cfg, int fd, int cancel_fd, sbx_session_box *box) {
        worker w = {.cfg = cfg, .cancel_fd = cancel_fd, .dir_fd = -1};
        sbx_plan req = {0};
        sbx_plan_result res = {0};
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        hull_error e = {0};

        /* Ask for the request: until now nothing of it has been sent. */
        if (frame_send(fd, NULL, 0, now_mono_ms() + BRK_IO_TIMEOUT_MS) < 0 ||
            frame_recv(fd, BRK_REQUEST_MAX, now_mono_ms() + BRK_IO_TIMEOUT_MS, &buf, &len) < 0)
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
                run_in_box(&w, box, &req, &res);
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

static void keeper_run(const brk_config *cfg, int fd, int term_fd) {
        _cleanup_free_ keeper_req *req = calloc(1, sizeof(*req));
        keeper_reply rep = {.magic = KEEPER_MAGIC};
        sbx_session_box box = {.pid = -1, .pidfd = -1, .ctl_fd = -1, .ws_fd = -1, .bpf_fd = -1};
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
            req->n_cidrs > BRK_NET_CIDRS_MAX)
                return;
        req->handles_dir[sizeof(req->handles_dir) - 1] = '\0';
        req->layer_dir[sizeof(req->layer_dir) - 1] = '\0';
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
                                 .env = req->layer_dir[0] ? env_layer_sandbox_env() : NULL,
                                 .net = (sbx_net_mode) req->net,
                                 .net_policy = req->net == SBX_NET_LIMITED ? &policy : NULL};
        int r = sbx_session_start(&spec, &box, &e);
        if (r < 0) {
                rep.err = r;
                snprintf(rep.msg, sizeof(rep.msg), "%s", e.msg);
                (void) sock_send_fds(fd, &rep, sizeof(rep), NULL, 0, 0);
                return;
        }
        int fds[8] = {box.ctl_fd, box.ws_fd, box.pidfd, box.bpf_fd};
        size_t nfds = 4;
        for (size_t i = 0; i < box.n_cg_fds; i++)
                fds[nfds++] = box.cg_fds[i];
        rep.n_cg_fds = (uint32_t) box.n_cg_fds;
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

/* ---- the broker's loop ---- */

typedef struct broker_state {
        const brk_config *cfg;
        int ctl, sfd;
        pid_t workers[SERVE_RUNS_MAX];
        int run_fds[SERVE_RUNS_MAX]; /* each worker's run socket, watched for the daemon's
                                      * hang-up (its caller went away); -1 once seen */
        unsigned n_workers;
        int queue[SERVE_RUN_QUEUE_MAX]; /* fds of runs waiting for a worker, oldest first */
        unsigned n_queued;
        pid_t keepers[SERVE_SESSIONS_MAX]; /* one per open session */
        unsigned n_keepers;
        pid_t spare;    /* the spare worker (its sandbox set up in advance), 0: none */
        int spare_sock; /* to it: "R" when ready, then the run's fd */
        bool spare_ready;
        unsigned spare_failures; /* spares that died unused in a row; at the cap, no more */
        bool refusing;           /* CTL_CANCEL, SIGTERM or EOF: no new runs */
        uint64_t kill_at;        /* when workers still running get SIGKILL; 0: not yet */
} broker_state;

/* Fork a child of the broker (a worker, a keeper, the spare): in the child, close what is the
 * broker's alone, die with the broker, take name, and get SIGTERM as *ret_term_fd (a signalfd;
 * the broker's mask already blocks it). Returns the pid in the parent, 0 in the child, or -1. */
static pid_t fork_child(broker_state *s, const char *name, int *ret_term_fd) {
        pid_t broker = getpid();
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        sigset_t term;
        safe_close(s->ctl);
        safe_close(s->sfd);
        for (unsigned i = 0; i < s->n_queued; i++)
                safe_close(s->queue[i]);
        for (unsigned i = 0; i < s->n_workers; i++)
                safe_close(s->run_fds[i]);
        safe_close(s->spare_sock); /* the broker's end to its spare: not the child's */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != broker)
                _exit(1);
        (void) prctl(PR_SET_NAME, name);
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        *ret_term_fd = signalfd(-1, &term, SFD_CLOEXEC | SFD_NONBLOCK);
        if (*ret_term_fd < 0)
                _exit(1);
        return 0;
}

static void spawn_worker(broker_state *s, int fd) {
        int cancel_fd;
        pid_t pid = fork_child(s, "hull-worker", &cancel_fd);
        if (pid < 0) {
                refuse_run(fd, "the broker cannot fork a worker");
                return;
        }
        if (pid == 0) {
                worker_run(s->cfg, fd, cancel_fd, NULL);
                _exit(0);
        }
        s->run_fds[s->n_workers] = fd;
        s->workers[s->n_workers++] = pid;
}

static void spawn_keeper(broker_state *s, int fd) {
        if (s->n_keepers >= ELEMENTSOF(s->keepers)) {
                safe_close(fd);
                return;
        }
        int term_fd;
        pid_t pid = fork_child(s, "hull-keeper", &term_fd);
        if (pid < 0) {
                safe_close(fd);
                return;
        }
        if (pid == 0) {
                keeper_run(s->cfg, fd, term_fd);
                _exit(0);
        }
        safe_close(fd);
        s->keepers[s->n_keepers++] = pid;
}

/* The spare worker: sets a sandbox up, says "R", waits for a run's fd, runs it like a worker
 * (or ends the sandbox on SIGTERM or EOF). */
static _noreturn_ void spare_main(const brk_config *cfg, int sock, int cancel_fd) {
        sbx_session_box box = {.pid = -1, .pidfd = -1, .ctl_fd = -1, .ws_fd = -1, .bpf_fd = -1};
        sbx_session_spec spec = {.memory_bytes = cfg->spare_memory_bytes,
                                 .pids = cfg->spare_pids,
                                 .tmp_bytes = cfg->spare_tmp_bytes,
                                 .use_cgroups = cfg->use_cgroups};
        hull_error e = {0};
        if (sbx_session_start(&spec, &box, &e) < 0) {
                (void) send(sock, "F", 1, MSG_NOSIGNAL);
                _exit(1);
        }
        /* Only the workspace and control fds are used here. */
        box.bpf_fd = safe_close(box.bpf_fd);
        for (size_t i = 0; i < box.n_cg_fds; i++)
                safe_close(box.cg_fds[i]);
        box.n_cg_fds = 0;
        int fd = -1;
        if (send(sock, "R", 1, MSG_NOSIGNAL) == 1) {
                struct pollfd p[3] = {{.fd = sock, .events = POLLIN},
                                      {.fd = cancel_fd, .events = POLLIN},
                                      {.fd = box.pidfd, .events = POLLIN}};
                while (poll(p, 3, -1) < 0 && errno == EINTR)
                        ;
                if (p[0].revents & POLLIN) {
                        char c;
                        size_t nfds = 0;
                        if (sock_recv_fds(sock, &c, 1, 0, &fd, 1, &nfds, NULL) != 1 || nfds != 1)
                                fd = safe_close(fd);
                }
        }
        if (fd >= 0)
                worker_run(cfg, fd, cancel_fd, &box);
        (void) sbx_session_box_end(&box, NULL, &e);
        _exit(0);
}

static void spawn_spare(broker_state *s) {
        int sv[2];
        if (s->spare || s->refusing || !s->cfg->spare_memory_bytes || s->spare_failures >= BRK_SPARE_FAILURES_MAX)
                return;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return;
        int cancel_fd;
        pid_t pid = fork_child(s, "hull-spare", &cancel_fd);
        if (pid < 0) {
                safe_close(sv[0]);
                safe_close(sv[1]);
                return;
        }
        if (pid == 0) {
                safe_close(sv[0]);
                spare_main(s->cfg, sv[1], cancel_fd);
        }
        safe_close(sv[1]);
        s->spare = pid;
        s->spare_sock = sv[0];
        s->spare_ready = false;
}

/* Hand the run's fd to the spare, which becomes a worker. False: no spare was ready. */
static bool use_spare(broker_state *s, int fd) {
        if (!s->spare || !s->spare_ready)
                return false;
        if (sock_send_fds(s->spare_sock, "r", 1, &fd, 1, MSG_DONTWAIT) < 0)
                return false;
        s->run_fds[s->n_workers] = fd;
        s->workers[s->n_workers++] = s->spare;
        s->spare = 0;
        s->spare_sock = safe_close(s->spare_sock);
        s->spare_ready = false;
        s->spare_failures = 0;
        spawn_spare(s);
        return true;
}

static void on_spare(broker_state *s) {
        char c;
        ssize_t n = recv(s->spare_sock, &c, 1, MSG_DONTWAIT);
        if (n == 1 && c == 'R') {
                s->spare_ready = true;
                return;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        /* "F" or EOF: this spare is of no use; reap() counts it when it exits. */
        s->spare_sock = safe_close(s->spare_sock);
        s->spare_ready = false;
}

static void stop_everything(broker_state *s) {
        if (!s->refusing) {
                s->refusing = true;
                s->kill_at = now_mono_ms() + BRK_STOP_GRACE_MS;
        }
        for (unsigned i = 0; i < s->n_queued; i++)
                refuse_run(s->queue[i], "dropped: hull serve is shutting down");
        s->n_queued = 0;
        for (unsigned i = 0; i < s->n_workers; i++)
                kill(s->workers[i], SIGTERM);
        for (unsigned i = 0; i < s->n_keepers; i++)
                kill(s->keepers[i], SIGTERM);
        if (s->spare)
                kill(s->spare, SIGTERM);
}

static void on_ctl(broker_state *s) {
        uint32_t type = 0;
        char cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = {.iov_base = &type, .iov_len = sizeof(type)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        ssize_t n = recvmsg(s->ctl, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0) { /* the daemon is gone */
                s->ctl = safe_close(s->ctl);
                stop_everything(s);
                return;
        }
        int fd = -1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (n != (ssize_t) sizeof(type) || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
                safe_close(fd);
                return;
        }
        if (type == CTL_CANCEL) {
                safe_close(fd);
                stop_everything(s);
                return;
        }
        if (type == CTL_SESSION && fd >= 0) {
                if (s->refusing)
                        safe_close(fd); /* the daemon reads EOF: not started */
                else
                        spawn_keeper(s, fd);
                return;
        }
        if (type != CTL_RUN || fd < 0) {
                safe_close(fd);
                return;
        }
        if (s->refusing)
                refuse_run(fd, "refused: hull serve is shutting down");
        else if (s->n_workers < s->cfg->max_runs) {
                if (!use_spare(s, fd))
                        spawn_worker(s, fd);
        } else if (s->n_queued < s->cfg->queue_max)
                s->queue[s->n_queued++] = fd;
        else
                refuse_run(fd, "refused: every run slot and the queue are full");
}

static void reap(broker_state *s) {
        for (;;) {
                pid_t pid = waitpid(-1, NULL, WNOHANG);
                if (pid <= 0)
                        break;
                for (unsigned i = 0; i < s->n_workers; i++)
                        if (s->workers[i] == pid) {
                                safe_close(s->run_fds[i]);
                                s->n_workers--;
                                s->workers[i] = s->workers[s->n_workers];
                                s->run_fds[i] = s->run_fds[s->n_workers];
                                break;
                        }
                for (unsigned i = 0; i < s->n_keepers; i++)
                        if (s->keepers[i] == pid) {
                                s->keepers[i] = s->keepers[--s->n_keepers];
                                break;
                        }
                if (s->spare && pid == s->spare) {
                        s->spare = 0;
                        s->spare_sock = safe_close(s->spare_sock);
                        s->spare_ready = false;
                        s->spare_failures++;
                        spawn_spare(s);
                }
        }
        while (!s->refusing && s->n_queued > 0 && s->n_workers < s->cfg->max_runs) {
                int fd = s->queue[0];
                memmove(s->queue, s->queue + 1, (s->n_queued - 1) * sizeof(int));
                s->n_queued--;
                if (!use_spare(s, fd))
                        spawn_worker(s, fd);
        }
}

static _noreturn_ void broker_main(const brk_config *cfg, int ctl, pid_t daemon) {
        broker_state s = {.cfg = cfg, .ctl = ctl, .sfd = -1, .spare_sock = -1};
        sigset_t mask;

        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != daemon)
                _exit(1);
        (void) prctl(PR_SET_NAME, "hull-broker");
        /* A terminal's Ctrl-C reaches the whole process group; the daemon decides what it means. */
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 || (s.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
                _exit(1);
        /* Nothing else the daemon had open belongs here. */
        int keep_lo = MIN(ctl, s.sfd), keep_hi = MAX(ctl, s.sfd);
        (void) syscall(SYS_close_range, 3U, (unsigned) keep_lo - 1, 0U);
        if (keep_hi > keep_lo + 1)
                (void) syscall(SYS_close_range, (unsigned) keep_lo + 1, (unsigned) keep_hi - 1, 0U);
        (void) syscall(SYS_close_range, (unsigned) keep_hi + 1, ~0U, 0U);

        spawn_spare(&s);
        for (;;) {
                if (s.refusing && s.n_workers == 0 && s.n_keepers == 0 && s.spare == 0)
                        _exit(0);
                int timeout = -1;
                if (s.kill_at) {
                        uint64_t now = now_mono_ms();
                        if (now >= s.kill_at) {
                                for (unsigned i = 0; i < s.n_workers; i++)
                                        kill(s.workers[i], SIGKILL);
                                for (unsigned i = 0; i < s.n_keepers; i++)
                                        kill(s.keepers[i], SIGKILL);
                                if (s.spare)
                                        kill(s.spare, SIGKILL);
                                s.kill_at = 0;
                        } else
                                timeout = (int) (s.kill_at - now);
                }
                /* The daemon hangs up a run's socket when it stops waiting (its caller went
                 * away, or the queue took too long): a queued run leaves the queue, a running
                 * one is stopped as at shutdown. The daemon's end never hangs up otherwise
                 * before the worker has sent its result. */
                struct pollfd p[3 + SERVE_RUN_QUEUE_MAX + SERVE_RUNS_MAX] = {{.fd = s.ctl, .events = POLLIN},
                                                                             {.fd = s.sfd, .events = POLLIN}};
                unsigned n_queued = s.n_queued, n_workers = s.n_workers;
                for (unsigned i = 0; i < n_queued; i++)
                        p[2 + i] = (struct pollfd){.fd = s.queue[i], .events = POLLRDHUP};
                for (unsigned i = 0; i < n_workers; i++)
                        p[2 + n_queued + i] = (struct pollfd){.fd = s.run_fds[i], .events = POLLRDHUP};
                unsigned i_spare = 2 + n_queued + n_workers;
                p[i_spare] = (struct pollfd){.fd = s.spare_sock, .events = POLLIN};
                int n = poll(p, i_spare + 1, timeout);
                if (n < 0 && errno != EINTR)
                        _exit(1);
                if (n <= 0)
                        continue;
                for (unsigned i = 0; i < n_workers; i++)
                        if (p[2 + n_queued + i].revents) {
                                kill(s.workers[i], SIGTERM);
                                s.run_fds[i] = safe_close(s.run_fds[i]);
                        }
                for (unsigned i = n_queued; i-- > 0;)
                        if (p[2 + i].revents) {
                                safe_close(s.queue[i]);
                                memmove(s.queue + i, s.queue + i + 1, (s.n_queued - i - 1) * sizeof(int));
                                s.n_queued--;
                        }
                if (p[1].revents) {
                        struct signalfd_siginfo si;
                        bool term = false;
                        while (read(s.sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                if (si.ssi_signo == SIGTERM)
                                        term = true;
                        if (term)
                                stop_everything(&s);
                        reap(&s);
                }
                if (p[i_spare].revents && s.spare_sock >= 0 && s.spare_sock == p[i_spare].fd)
                        on_spare(&s);
                if (p[0].revents)
                        on_ctl(&s);
        }
}

/* ---- the daemon's side ---- */

int brk_start(const brk_config *cfg, brk_broker **ret, hull_error *e) {
        _cleanup_close_pair_ int sv[2] = {-1, -1};
        if (cfg->max_runs == 0 || cfg->max_runs > SERVE_RUNS_MAX || cfg->queue_max > SERVE_RUN_QUEUE_MAX)
                return hull_err(e, -EINVAL, "broker: max runs must be 1 to %u and the queue at most %u", SERVE_RUNS_MAX,
                                SERVE_RUN_QUEUE_MAX);
        brk_broker *b = calloc(1, sizeof(*b));
        if (!b)
                return hull_err(e, -ENOMEM, "broker: out of memory");
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                free(b);
                return hull_err(e, negative_errno(), "broker: cannot create the control socket");
        }
        pid_t daemon = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                free(b);
                return hull_err(e, negative_errno(), "broker: cannot fork");
        }
        if (pid == 0) {
                sv[0] = safe_close(sv[0]);
                broker_main(cfg, sv[1], daemon);
        }
        b->pid = pid;
        b->ctl = TAKE_FD(sv[0]);
        b->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        pthread_mutex_init(&b->lock, NULL);
        if (b->pidfd < 0) {
                int r = negative_errno();
                brk_stop(b);
                return hull_err(e, r, "broker: cannot open a pidfd for the broker");
        }
        *ret = b;
        return 0;
}

static int ctl_send(brk_broker *b, uint32_t type, int fd) {
        char cbuf[CMSG_SPACE(sizeof(int))] = {0};
        struct iovec iov = {.iov_base = &type, .iov_len = sizeof(type)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (fd >= 0) {
                mh.msg_control = cbuf;
                mh.msg_controllen = sizeof(cbuf);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        pthread_mutex_lock(&b->lock);
        ssize_t n;
        do
                n = b->ctl >= 0 ? sendmsg(b->ctl, &mh, MSG_NOSIGNAL) : (errno = EPIPE, -1);
        while (n < 0 && errno == EINTR);
        int r = n < 0 ? negative_errno() : 0;
        pthread_mutex_unlock(&b->lock);
        return r;
}

/* Wait until fd is readable (0), watch_fd's peer has hung up (-ECANCELED; sock_hung_up: a
 * half-close is not a hang-up) or the deadline passes (-ETIMEDOUT). watch_fd -1: fd alone. */
static int wait_watched(int fd, int watch_fd, uint64_t deadline_ms) {
        for (;;) {
                uint64_t now = now_mono_ms();
                if (now >= deadline_ms)
                        return -ETIMEDOUT;
                struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = watch_fd, .events = SOCK_HANGUP_EVENTS}};
                uint64_t left = deadline_ms - now;
                int n = poll(p, 2, left > INT32_MAX ? INT32_MAX : (int) left);
                if (n > 0 && sock_hung_up(p[1].revents))
                        return -ECANCELED;
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return negative_errno();
        }
}

static int not_started(sbx_plan_result *ret, const char *why) {
        *ret = (sbx_plan_result){.outcome = SBX_PLAN_NOT_STARTED, .detail = strdup(why)};
        return ret->detail ? 0 : -ENOMEM;
}

int brk_call(brk_broker *b, const sbx_plan *req, uint64_t wait_ms, int watch_fd, sbx_plan_result *ret, hull_error *e) {
        _cleanup_close_pair_ int sv[2] = {-1, -1};
        _cleanup_free_ char *buf = NULL, *ans = NULL;
        size_t len = 0, ans_len = 0;
        uint64_t deadline = now_mono_ms() + BRK_QUEUE_WAIT_MS;
        int r;

        r = brk_plan_encode(req, &buf, &len);
        if (r < 0)
                return hull_err(e, r, "broker: cannot encode the run request");
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return hull_err(e, negative_errno(), "broker: cannot create a socket for the run");
        if (ctl_send(b, CTL_RUN, sv[1]) < 0)
                return not_started(ret, "the sandbox broker is not running");
        sv[1] = safe_close(sv[1]);

        /* The first frame: "ready" (empty) from a worker, or the broker's refusal. */
        r = wait_watched(sv[0], watch_fd, deadline);
        if (r == -ECANCELED) /* closing our end takes the run out of the broker's queue */
                return hull_err(e, -ECANCELED, "broker: the caller hung up before the run started; nothing ran");
        if (r == 0)
                r = frame_recv(sv[0], BRK_RESULT_MAX, deadline, &ans, &ans_len);
        if (r == -ETIMEDOUT) /* closing our end (cleanup) takes the run out of the broker's queue */
                return not_started(ret, "no run slot became free in time");
        if (r < 0)
                return not_started(ret, "the sandbox broker ended before the run started");
        if (ans_len > 0) { /* nothing was sent, so nothing ran, whatever this says */
                sbx_plan_result res = {0};
                if (brk_plan_result_decode(ans, ans_len, &res) < 0 || res.outcome != SBX_PLAN_NOT_STARTED) {
                        sbx_plan_result_done(&res);
                        return not_started(ret, "the sandbox broker answered out of turn");
                }
                *ret = res;
                return 0;
        }

        /* A worker asked: the run's own time starts now, however long it queued. */
        deadline = now_mono_ms() + wait_ms;
        r = frame_send(sv[0], buf, len, deadline);
        if (r < 0)
                return hull_err(e, r == -EPIPE ? -EPROTO : r, "broker: cannot hand the run to its worker");
        free(TAKE_PTR(ans));
        r = wait_watched(sv[0], watch_fd, deadline);
        if (r == -ECANCELED) /* closing our end tells the worker to stop the run */
                return hull_err(e, -ECANCELED, "broker: the caller hung up; the run was stopped");
        if (r == 0)
                r = frame_recv(sv[0], BRK_RESULT_MAX, deadline, &ans, &ans_len);
        if (r == -EPIPE)
                return hull_err(e, -EPROTO, "broker: the worker ended without a result");
        if (r < 0)
                return hull_err(e, r, "broker: no result from the worker");
        r = brk_plan_result_decode(ans, ans_len, ret);
        if (r < 0)
                return hull_err(e, r, "broker: the worker's result is malformed");
        return 0;
}

void brk_cancel_all(brk_broker *b) {
        (void) ctl_send(b, CTL_CANCEL, -1);
}

int brk_pidfd(const brk_broker *b) {
        return b->pidfd;
}

bool brk_alive(brk_broker *b) {
        struct pollfd p = {.fd = b->pidfd, .events = POLLIN};
        return b->pidfd >= 0 && poll(&p, 1, 0) == 0;
}

void brk_stop(brk_broker *b) {
        if (!b)
                return;
        pthread_mutex_lock(&b->lock);
        b->ctl = safe_close(b->ctl);
        pthread_mutex_unlock(&b->lock);
        /* Its workers get SIGTERM, then SIGKILL after BRK_STOP_GRACE_MS; allow for their reaping. */
        if (b->pidfd >= 0 && wait_fd(b->pidfd, POLLIN, now_mono_ms() + BRK_STOP_GRACE_MS + BRK_STOP_SLACK_MS) < 0)
                kill(b->pid, SIGKILL);
        else if (b->pidfd < 0)
                kill(b->pid, SIGKILL);
        while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        safe_close(b->pidfd);
        pthread_mutex_destroy(&b->lock);
        free(b);
}

/* ---- sessions, the daemon's side ---- */

int brk_session_open(brk_broker *b, const brk_session_spec *spec, brk_session *ret, hull_error *e) {
        _cleanup_close_pair_ int sv[2] = {-1, -1};
        _cleanup_free_ keeper_req *rq = calloc(1, sizeof(*rq));
        keeper_reply rep;
        int r, log_fd = -1;

        if (!rq)
                return hull_err(e, -ENOMEM, "session: out of memory");
        *rq = (keeper_req){.magic = KEEPER_MAGIC,
                           .memory_bytes = spec->memory_bytes,
                           .pids = spec->pids,
                           .millicpus = spec->millicpus,
                           .tmp_bytes = spec->tmp_bytes,
                           .net = (uint32_t) spec->net};
        if (spec->handles_dir && (size_t) snprintf(rq->handles_dir, sizeof(rq->handles_dir), "%s", spec->handles_dir) >=
                                         sizeof(rq->handles_dir))
                return hull_err(e, -ENAMETOOLONG, "session: the handle store path is too long");
        if (spec->layer_dir &&
            (size_t) snprintf(rq->layer_dir, sizeof(rq->layer_dir), "%s", spec->layer_dir) >= sizeof(rq->layer_dir))
                return hull_err(e, -ENAMETOOLONG, "session: the layer path is too long");
        if (spec->net >= _SBX_NET_MODE_MAX)
                return hull_err(e, -EINVAL, "session: no such network mode");
        if (spec->net == SBX_NET_LIMITED) {
                const sbx_net_policy *pol = spec->net_policy;
                if (!pol)
                        return hull_err(e, -EINVAL, "session: a limited network needs a policy");
                for (char *const *h = pol->allowed_hosts; h && *h; h++) {
                        if (rq->n_hosts >= SBX_NET_ALLOW_MAX || strlen(*h) > EGRESS_HOST_MAX)
                                return hull_err(e, -E2BIG, "session: more than %u allowed hosts, or one too long",
                                                SBX_NET_ALLOW_MAX);
                        memcpy(rq->hosts[rq->n_hosts++], *h, strlen(*h) + 1);
                }
                for (char *const *c = pol->allow_cidrs; c && *c; c++) {
                        if (rq->n_cidrs >= BRK_NET_CIDRS_MAX || strlen(*c) >= BRK_NET_CIDR_TEXT)
                                return hull_err(e, -E2BIG, "session: more than %u allowed CIDRs, or one too long",
                                                BRK_NET_CIDRS_MAX);
                        memcpy(rq->cidrs[rq->n_cidrs++], *c, strlen(*c) + 1);
                }
                rq->allow_package_managers = pol->allow_package_managers;
                rq->allow_loopback = pol->allow_loopback;
                log_fd = pol->log_fd;
                rq->has_log = log_fd >= 0;
        }

        *ret = (brk_session){.keeper_fd = -1, .ctl_fd = -1, .ws_fd = -1, .pidfd = -1, .bpf_fd = -1};
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return hull_err(e, negative_errno(), "session: cannot create a socket to the broker");
        r = ctl_send(b, CTL_SESSION, sv[1]);
        if (r < 0)
                return hull_err(e, r, "session: the sandbox broker is gone");
        sv[1] = safe_close(sv[1]);
        r = sock_send_fds(sv[0], rq, sizeof(*rq), &log_fd, log_fd >= 0 ? 1 : 0, MSG_NOSIGNAL);
        if (r < 0)
                return hull_err(e, r, "session: the sandbox broker refused the session");
        r = wait_watched(sv[0], -1, now_mono_ms() + SBX_START_TIMEOUT_MS + BRK_IO_TIMEOUT_MS);
        if (r < 0)
                return hull_err(e, r, "session: no answer from the sandbox broker");
        int fds[8], truncated = 0;
        size_t nfds = 0;
        ssize_t n = sock_recv_fds(sv[0], &rep, sizeof(rep), 0, fds, ELEMENTSOF(fds), &nfds, &truncated);
        if (n != (ssize_t) sizeof(rep) || rep.magic != KEEPER_MAGIC || truncated) {
                for (size_t i = 0; i < nfds; i++)
                        safe_close(fds[i]);
                return hull_err(e, n == 0 ? -EAGAIN : -EPROTO,
                                n == 0 ? "session: the sandbox broker refused the session (shutting down or full)"
                                       : "session: malformed answer from the sandbox broker");
        }
        if (rep.err < 0 || nfds != 4 + rep.n_cg_fds || rep.n_cg_fds > ELEMENTSOF(ret->cg_fds)) {
                for (size_t i = 0; i < nfds; i++)
                        safe_close(fds[i]);
                rep.msg[sizeof(rep.msg) - 1] = '\0';
                return hull_err(e, rep.err < 0 ? rep.err : -EPROTO, "%s",
                                rep.err < 0 ? rep.msg : "session: malformed answer from the sandbox broker");
        }
        ret->ctl_fd = fds[0];
        ret->ws_fd = fds[1];
        ret->pidfd = fds[2];
        ret->bpf_fd = fds[3];
        for (size_t i = 0; i < rep.n_cg_fds; i++)
                ret->cg_fds[ret->n_cg_fds++] = fds[4 + i];
        ret->host_uid = rep.host_uid;
        ret->host_gid = rep.host_gid;
        ret->keeper_fd = TAKE_FD(sv[0]);
        return 0;
}

int brk_session_ended(brk_session *s, bool *ret_oom) {
        keeper_end end;
        *ret_oom = false;
        if (s->keeper_fd < 0)
                return 1;
        ssize_t n = recv(s->keeper_fd, &end, sizeof(end), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n == (ssize_t) sizeof(end) && end.magic == KEEPER_MAGIC)
                *ret_oom = end.oom != 0;
        return 1;
}

void brk_session_close(brk_session *s) {
        s->keeper_fd = safe_close(s->keeper_fd);
        s->ctl_fd = safe_close(s->ctl_fd);
        s->ws_fd = safe_close(s->ws_fd);
        s->pidfd = safe_close(s->pidfd);
        s->bpf_fd = safe_close(s->bpf_fd);
        for (size_t i = 0; i < s->n_cg_fds; i++)
                safe_close(s->cg_fds[i]);
        s->n_cg_fds = 0;
}
