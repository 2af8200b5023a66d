/* sbx-container.c: the container tier. The parent prepares everything (fds, paths, /etc files,
 * capability sets; the seccomp program is compiled into hull); the child made by clone() only
 * executes the plan with system calls: no allocation, no logging, any failure reported over a
 * pipe, then _exit.
 *
 * The child becomes pid 1 of new user, pid, mount, net, ipc, uts and cgroup namespaces. It
 * builds a tmpfs root on a staging mount, binds the host's /usr (or a --rootfs) read-only,
 * pivots into it, drops every capability, sets no_new_privs, installs the seccomp filter and
 * forks the command. It stays as a tiny init that reaps and forwards the parent's SIGTERM; when
 * the command ends it reports the status and exits, and the kernel kills whatever is left.
 *
 * This file is the parent's half; the child's is sbx-container-child.c, the plan they share
 * (child_plan) sbx-container-internal.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sbx-cgroup.h"
#include "sbx-container-internal.h"
#include "sbx-container.h"
#include "sbx-internal.h"
#include "sbx-seccomp.h"
#include "sock-util.h"

/* ---- parent side ---- */

/* After a failed start, with the child dead: replace *e by the child's own error, if it sent
 * one (it failed first, and its reason is the real one). */
static void child_error(int rep_fd, hull_error *e) {
        sbx_report rep;
        if (fcntl(rep_fd, F_SETFL, O_NONBLOCK) < 0)
                return;
        while (read(rep_fd, &rep, sizeof(rep)) == (ssize_t) sizeof(rep))
                if (rep.kind == SBX_REPORT_ERROR) {
                        rep.what[sizeof(rep.what) - 1] = '\0';
                        hull_err(e, rep.err, "%s", rep.what);
                        return;
                }
}

int sbx_receive_fd(int sync_fd, const char *what, hull_error *e) {
        struct pollfd pfd = {.fd = sync_fd, .events = POLLIN};
        int n = poll(&pfd, 1, SBX_START_TIMEOUT_MS);
        if (n <= 0)
                return hull_err(e, n == 0 ? -ETIMEDOUT : negative_errno(), "%s", what);
        char byte = 0;
        char cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        ssize_t k = recvmsg(sync_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        int fd = -1;
        for (struct cmsghdr *c = k == 1 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (fd < 0 || byte != 'n' || (mh.msg_flags & MSG_CTRUNC)) {
                safe_close(fd);
                return hull_err(e, -EPROTO, "%s", what);
        }
        return fd;
}

/* The message child_receive_go() waits for. */
/* "c": the cgroups exist. On v1 it carries the `tasks` files hull opened (n of them), which the
 * child writes "0" to: a thread moving itself skips the global threadgroup lock, and the files,
 * opened by hull, are never handed to the sandbox user's host uid (v1 checks who opened them). */
static int send_go(int fd, const int *cg_fds, size_t n) {
        if (n > SBX_CGROUP_TASKS_MAX)
                return -E2BIG;
        return sock_send_fds(fd, "c", 1, cg_fds, n, 0) < 0 ? -EPIPE : 0;
}

/* v1: open the `tasks` files of the planned cgroups (p->cgroup_tasks), for send_go(). */
static int open_cgroup_tasks(const child_plan *p, int *ret_fds, hull_error *e) {
        for (size_t i = 0; i < p->n_cgroup_tasks; i++) {
                ret_fds[i] = open(p->cgroup_tasks[i], O_WRONLY | O_CLOEXEC);
                if (ret_fds[i] < 0)
                        return hull_err(e, negative_errno(), "cgroup: cannot open %s", p->cgroup_tasks[i]);
        }
        return 0;
}

static int write_proc(pid_t pid, const char *file, const char *content) {
        char path[SBX_SHORT_STR_MAX];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);
        return write_string_file(path, content);
}

/* OLDROOT + the real path of host_path: where the child finds it after the first pivot. */
static int oldroot_path(const char *host_path, char *ret, size_t size, hull_error *e) {
        _cleanup_free_ char *real = realpath(host_path, NULL);
        if (!real)
                return hull_err(e, negative_errno(), "mount: cannot resolve %s", host_path);
        if ((size_t) snprintf(ret, size, OLDROOT "%s", real) >= size)
                return hull_err(e, -ENAMETOOLONG, "mount: path too long: %s", real);
        return 0;
}

/* Room for a string of at most max bytes (NUL included) at the end of the plan's arena; commit
 * it with plan_commit(). Each entry gets SBX_NAME_MAX + SBX_PATH_MAX, so it never runs out. */
static char *plan_room(child_plan *p, size_t max) {
        return p->strings_len + max <= sizeof(p->strings) ? p->strings + p->strings_len : NULL;
}

static const char *plan_commit(child_plan *p, const char *s) {
        p->strings_len += strlen(s) + 1;
        return s;
}

static const char *plan_strdup(child_plan *p, const char *s, size_t max) {
        char *room = plan_room(p, max);
        if (!room || (size_t) snprintf(room, max, "%s", s) >= max)
                return NULL;
        return plan_commit(p, room);
}

/* Describe a host (or rootfs) path as a root entry: links are recreated, dirs and files bound. */
static int plan_entry(child_plan *p, const char *name, const char *host_path, bool must_exist, hull_error *e) {
        struct stat st;
        int r;
        if (p->n_entries >= ELEMENTSOF(p->entries))
                return hull_err(e, -E2BIG, "mount: too many root entries (at most %zu)", ELEMENTSOF(p->entries));
        if (lstat(host_path, &st) < 0) {
                if (errno == ENOENT && !must_exist)
                        return 0;
                return hull_err(e, negative_errno(), "mount: cannot inspect %s", host_path);
        }
        if (!S_ISLNK(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return 0; /* sockets, devices and fifos are never bound */
        size_t mark = p->strings_len;
        root_entry en = {.name = plan_strdup(p, name, SBX_NAME_MAX)};
        if (!en.name)
                return hull_err(e, -ENAMETOOLONG, "mount: name too long: %s", name);
        char *src = plan_room(p, SBX_PATH_MAX);
        if (!src) { /* cannot happen: the arena holds a name and a path per entry */
                p->strings_len = mark;
                return hull_err(e, -E2BIG, "mount: too many root entries");
        }
        if (S_ISLNK(st.st_mode)) {
                ssize_t n = readlink(host_path, src, SBX_PATH_MAX - 1);
                if (n < 0) {
                        p->strings_len = mark;
                        return hull_err(e, negative_errno(), "mount: cannot read link %s", host_path);
                }
                src[n] = '\0';
                en.kind = ENTRY_SYMLINK;
        } else {
                r = oldroot_path(host_path, src, SBX_PATH_MAX, e);
                if (r < 0) {
                        p->strings_len = mark;
                        return r;
                }
                en.kind = S_ISDIR(st.st_mode) ? ENTRY_DIR : ENTRY_FILE;
                en.dev = st.st_dev;
                en.ino = st.st_ino;
        }
        en.source = plan_commit(p, src);
        p->entries[p->n_entries++] = en;
        return 0;
}

static int plan_host_root(child_plan *p, hull_error *e) {
        static const char *const top[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
        static const char *const etc[] = {"ld.so.cache", "alternatives", "localtime", "ssl/certs", "ssl/openssl.cnf"};
        char host[SBX_PATH_MAX], name[SBX_NAME_MAX];
        int r = plan_entry(p, "usr", "/usr", true, e);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(top); i++) {
                snprintf(host, sizeof(host), "/%s", top[i]);
                if ((r = plan_entry(p, top[i], host, false, e)) < 0)
                        return r;
        }
        struct stat st;
        if (stat("/etc/ssl", &st) == 0) {
                /* /etc/ssl/private stays out: only certificates and the OpenSSL configuration. */
                if (p->n_entries >= ELEMENTSOF(p->entries))
                        return hull_err(e, -E2BIG, "mount: too many root entries");
                p->entries[p->n_entries++] = (root_entry){.kind = ENTRY_MKDIR, .name = "etc/ssl"};
        }
        for (size_t i = 0; i < ELEMENTSOF(etc); i++) {
                snprintf(host, sizeof(host), "/etc/%s", etc[i]);
                snprintf(name, sizeof(name), "etc/%s", etc[i]);
                if ((r = plan_entry(p, name, host, false, e)) < 0)
                        return r;
        }
        p->host_etc = true;
        return 0;
}

/* /mnt: a session's resources bound read-only from mnt_dir (v1-resources.c puts the memory link
 * in it), or, without one, a directory holding only /mnt/memory, a link to a /v1 session's memory
 * stores written in its workspace (v1-memory-mount.c). */
static int plan_mnt(child_plan *p, const char *mnt_dir, hull_error *e) {
        if (mnt_dir) /* files added to it later show through the bind */
                return plan_entry(p, "mnt", mnt_dir, true, e);
        if (p->n_entries + 2 > ELEMENTSOF(p->entries))
                return hull_err(e, -E2BIG, "mount: too many root entries");
        p->entries[p->n_entries++] = (root_entry){.kind = ENTRY_MKDIR, .name = "mnt"};
        p->entries[p->n_entries++] =
                (root_entry){.kind = ENTRY_SYMLINK, .name = "mnt/memory", .source = "/workspace/.memory"};
        return 0;
}

static int plan_rootfs(child_plan *p, const char *rootfs, hull_error *e) {
        static const char *const ours[] = {".", "..", "proc", "dev", "tmp", "workspace", "sys"};
        char host[SBX_PATH_MAX];
        struct stat st;
        if (rootfs[0] != '/')
                return hull_err(e, -EINVAL, "exec: --rootfs must be an absolute path");
        if (stat(rootfs, &st) < 0)
                return hull_err(e, negative_errno(), "exec: --rootfs %s", rootfs);
        if (!S_ISDIR(st.st_mode))
                return hull_err(e, -ENOTDIR, "exec: --rootfs %s", rootfs);
        DIR *d = opendir(rootfs);
        if (!d)
                return hull_err(e, negative_errno(), "exec: cannot list --rootfs %s", rootfs);
        int r = 0;
        for (struct dirent *de; (de = readdir(d));) {
                bool skip = false;
                for (size_t i = 0; i < ELEMENTSOF(ours); i++)
                        if (strcmp(de->d_name, ours[i]) == 0)
                                skip = true;
                if (skip)
                        continue;
                if (p->n_entries >= SBX_ROOTFS_ENTRIES_MAX) {
                        r = hull_err(e, -E2BIG, "exec: --rootfs %s has more than %u top-level entries", rootfs,
                                     SBX_ROOTFS_ENTRIES_MAX);
                        break;
                }
                if ((size_t) snprintf(host, sizeof(host), "%s/%s", rootfs, de->d_name) >= sizeof(host)) {
                        r = hull_err(e, -ENAMETOOLONG, "exec: --rootfs path too long");
                        break;
                }
                if ((r = plan_entry(p, de->d_name, host, true, e)) < 0)
                        break;
        }
        closedir(d);
        return r;
}

/* dns: the sandbox has a real network (unrestricted): names resolve through the host's
 * nameservers that pasta can reach (sbx_net_resolv_conf), else from /etc/hosts only. */
static void plan_etc(child_plan *p, bool dns) {
        p->etc[0].name = "etc/passwd";
        snprintf(p->etc[0].content, sizeof(p->etc[0].content),
                 "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                 "sandbox:x:%u:%u:hull sandbox:/workspace:/bin/sh\n"
                 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                 SBX_SANDBOX_UID, SBX_SANDBOX_UID);
        p->etc[1].name = "etc/group";
        snprintf(p->etc[1].content, sizeof(p->etc[1].content), "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n",
                 SBX_SANDBOX_UID);
        p->etc[2].name = "etc/hosts";
        snprintf(p->etc[2].content, sizeof(p->etc[2].content),
                 "127.0.0.1\tlocalhost hull\n::1\tlocalhost ip6-localhost ip6-loopback\n");
        p->etc[3].name = "etc/nsswitch.conf";
        snprintf(p->etc[3].content, sizeof(p->etc[3].content),
                 "passwd: files\ngroup: files\nshadow: files\nhosts: files%s\n", dns ? " dns" : "");
        p->etc[4].name = NULL;
        if (dns) {
                char text[SBX_ETC_FILE_MAX];
                size_t len = 0;
                _cleanup_close_ int fd = open("/etc/resolv.conf", O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                        ssize_t k = read(fd, text, sizeof(text));
                        len = k > 0 ? (size_t) k : 0;
                }
                p->etc[4].name = "etc/resolv.conf";
                sbx_net_resolv_conf(text, len, p->etc[4].content, sizeof(p->etc[4].content));
        }
}

static void plan_freep(child_plan **p) {
        free(*p);
}

void sbx_launch_done(sbx_launch *l) {
        sbx_net_pasta_stop(l->pasta_pid);
        l->pasta_pid = 0;
        l->rep_fd = safe_close(l->rep_fd);
        l->net_fd = safe_close(l->net_fd);
        sbx_env_free(l->env);
        l->env = NULL;
}

void sbx_launch_child_error(int rep_fd, hull_error *e) {
        child_error(rep_fd, e);
}

/* The parts of the child's plan that come from the spec and the host: the identity (*ret_uid,
 * *ret_gid: who the sandbox user is outside), the work directory, the handle store, the root, the
 * layer, /tmp and the capabilities. Returns 0 or a negative errno with *e. */
static int plan_launch(child_plan *p, const sbx_spec *spec, const char *workdir, uid_t *ret_uid, gid_t *ret_gid,
                       hull_error *e) {
        _cleanup_close_ int wd_fd = -1;
        int r;

        /* Identity: the sandbox user is uid/gid 1000 inside; outside it is the caller, or, when
         * hull runs as root, the owner of the work directory unless that is root (then 65534). */
        uid_t host_uid = geteuid();
        gid_t host_gid = getegid();
        if (workdir) {
                struct stat wst;
                wd_fd = open(workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (wd_fd < 0)
                        return hull_err_hint(e, negative_errno(), "pass an existing directory to --workdir",
                                             "exec: cannot open the work directory %s", workdir);
                if (fstat(wd_fd, &wst) < 0)
                        return hull_err(e, negative_errno(), "exec: cannot stat the work directory %s", workdir);
                if (host_uid == 0 && wst.st_uid != 0) {
                        host_uid = wst.st_uid;
                        host_gid = wst.st_gid;
                }
                r = oldroot_path(workdir, p->workdir_src, sizeof(p->workdir_src), e);
                if (r < 0)
                        return r;
                p->workdir_dev = wst.st_dev;
                p->workdir_ino = wst.st_ino;
        } else {
                /* No host directory at all: a tmpfs, bounded like everything else in memory. */
                uint64_t size = spec->memory_bytes ? spec->memory_bytes : SBX_DEFAULT_MEMORY_BYTES;
                snprintf(p->workspace_opts, sizeof(p->workspace_opts), "mode=0755,size=%" PRIu64, size);
        }
        if (host_uid == 0) {
                host_uid = SBX_ROOT_HOST_UID;
                host_gid = SBX_ROOT_HOST_UID;
        }
        if (spec->handles_dir) {
                struct stat hst;
                _cleanup_close_ int hfd = open(spec->handles_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (hfd < 0 || fstat(hfd, &hst) < 0)
                        return hull_err(e, negative_errno(), "exec: cannot open the handle store %s",
                                        spec->handles_dir);
                r = oldroot_path(spec->handles_dir, p->handles_src, sizeof(p->handles_src), e);
                if (r < 0)
                        return r;
                p->handles_dev = hst.st_dev;
                p->handles_ino = hst.st_ino;
        }
        p->uid = SBX_SANDBOX_UID;
        p->gid = SBX_SANDBOX_UID;
        p->set_groups = geteuid() == 0;
        if (spec->net >= _SBX_NET_MODE_MAX)
                return hull_err(e, -EINVAL, "net: no such network mode");
        p->net_proxy = spec->net == SBX_NET_LIMITED;
        p->net_pasta = spec->net == SBX_NET_UNRESTRICTED;

        if (spec->rootfs)
                r = plan_rootfs(p, spec->rootfs, e);
        else {
                r = plan_host_root(p, e);
                plan_etc(p, spec->net == SBX_NET_UNRESTRICTED);
        }
        if (r >= 0 && spec->layer_dir) /* plan_entry() records dev/ino: checked after the bind */
                r = plan_entry(p, "env", spec->layer_dir, true, e);
        if (r >= 0 && spec->skills_dir)
                r = plan_entry(p, "skills", spec->skills_dir, true, e);
        if (r >= 0 && (spec->mnt_dir || !spec->rootfs))
                r = plan_mnt(p, spec->mnt_dir, e);
        if (r < 0)
                return r;
        snprintf(p->tmp_opts, sizeof(p->tmp_opts), "mode=1777,size=%" PRIu64 ",nr_inodes=%" PRIu64, spec->tmp_bytes,
                 spec->tmp_bytes / 4096 + 64);
        snprintf(p->shm_opts, sizeof(p->shm_opts), "mode=1777,size=%" PRIu64, spec->tmp_bytes);

        /* Inside its new user namespace the child holds every capability; it raises them again
         * after setresuid() and drops them all before the command runs. */
        p->last_cap = (int) cap_max_bits() - 1;
        if (p->last_cap < 0 || p->last_cap >= 32 * _LINUX_CAPABILITY_U32S_3)
                return hull_err(e, -EINVAL, "caps: the kernel reports %d capabilities", p->last_cap + 1);
        for (int c = 0; c <= p->last_cap; c++) {
                p->caps_full[c / 32].effective |= 1U << (c % 32);
                p->caps_full[c / 32].permitted |= 1U << (c % 32);
        }
        *ret_uid = host_uid;
        *ret_gid = host_gid;
        return 0;
}

int sbx_container_launch(const sbx_spec *spec, const char *workdir, int in_fd, int out_fd, int err_fd, int ctl_fd,
                         sbx_launch *ret, hull_error *e) {
        _cleanup_(plan_freep) child_plan *p = calloc(1, sizeof(child_plan));
        _cleanup_close_pair_ int syncp[2] = {-1, -1}, repp[2] = {-1, -1};
        _cleanup_close_ int net_fd = -1;
        int cg_fds[SBX_CGROUP_TASKS_MAX] = {-1, -1, -1};
        pid_t pasta_pid = 0;
        char **env = NULL;
        sbx_cgroup cg = {0};
        char map[SBX_SHORT_STR_MAX];
        int r;

        if (!p)
                return hull_err(e, -ENOMEM, "exec: out of memory");

        uid_t host_uid = 0;
        gid_t host_gid = 0;
        r = plan_launch(p, spec, workdir, &host_uid, &host_gid, e);
        if (r < 0)
                return r;

        r = sbx_env_build(spec->env, "/workspace", spec->net == SBX_NET_LIMITED, &env);
        if (r < 0)
                return hull_err(e, r, "exec: cannot build the environment");
        p->argv = spec->argv;
        p->envp = env;
        p->nofile = (struct rlimit){SBX_DEFAULT_NOFILE, SBX_DEFAULT_NOFILE};
        p->fsize = (struct rlimit){SBX_DEFAULT_FSIZE_BYTES, SBX_DEFAULT_FSIZE_BYTES};

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, syncp) < 0 || pipe2(repp, O_CLOEXEC) < 0) {
                r = hull_err(e, negative_errno(), "exec: cannot create pipes");
                goto out;
        }
        p->sync_fd = syncp[0];
        p->report_fd = repp[1];
        if (ctl_fd >= 0) {
                p->session = true;
                p->ctl_fd = p->in_fd = p->out_fd = p->err_fd = ctl_fd;
                /* The caller's strings: the child has them at the same address (no CLONE_VM). */
                p->senv = spec->env;
                for (p->n_senv = 0; spec->env && spec->env[p->n_senv]; p->n_senv++)
                        ;
        } else {
                p->in_fd = in_fd;
                p->out_fd = out_fd;
                p->err_fd = err_fd;
        }

        /* The child only needs to know how many v1 `tasks` fds to expect: the cgroups are
         * planned and made after clone(), while it builds its root. */
        sbx_cgroup_limits lim = {.memory_bytes = spec->memory_bytes, .pids = spec->pids, .millicpus = spec->millicpus};
        if (spec->use_cgroups)
                p->n_cgroup_tasks = sbx_cgroup_v1_hierarchies(&lim);

        uint64_t start = sbx_now_us();
        pid_t pid = (pid_t) syscall(SYS_clone,
                                    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
                                            CLONE_NEWUTS | SIGCHLD,
                                    NULL, NULL, NULL, 0);
        if (pid < 0) {
                r = hull_err_hint(e, negative_errno(),
                                  "user namespaces may be disabled: check /proc/sys/user/max_user_namespaces and "
                                  "kernel.unprivileged_userns_clone",
                                  "namespaces: cannot create the sandbox's namespaces");
                goto out;
        }
        if (pid == 0)
                sbx_container_child_main(p);

        syncp[0] = safe_close(syncp[0]);
        repp[1] = safe_close(repp[1]);

        /* Map the sandbox user and let the child build its root ("m"). Meanwhile make the cgroups,
         * then say so ("c"): on v1 the child joins its cgroups itself, on v2 it has been moved. The
         * seccomp filter needs no message: it is compiled into hull, so the child has it. */
        r = 0;
        if (!p->set_groups && (r = write_proc(pid, "setgroups", "deny")) < 0)
                hull_err(e, r, "user: cannot deny setgroups");
        if (r >= 0) {
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned) p->uid, (unsigned) host_uid);
                if ((r = write_proc(pid, "uid_map", map)) < 0)
                        hull_err(e, r, "user: cannot write uid_map");
        }
        if (r >= 0) {
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned) p->gid, (unsigned) host_gid);
                if ((r = write_proc(pid, "gid_map", map)) < 0)
                        hull_err(e, r, "user: cannot write gid_map");
        }
        if (r >= 0 && send(syncp[1], "m", 1, MSG_NOSIGNAL) != 1)
                r = hull_err(e, negative_errno(), "exec: cannot start the sandbox");
        if (r >= 0 && spec->use_cgroups) {
                char name[SBX_SHORT_STR_MAX];
                snprintf(name, sizeof(name), "hull-%d-%" PRIu64, (int) getpid(), sbx_now_us());
                r = sbx_cgroup_plan(&cg, name, &lim, e);
                int n = r >= 0 ? sbx_cgroup_tasks_paths(&cg, "", p->cgroup_tasks, ELEMENTSOF(p->cgroup_tasks), e) : r;
                if (n >= 0 && (size_t) n != p->n_cgroup_tasks)
                        n = hull_err(e, -EPROTO, "cgroup: the hierarchies changed while the sandbox started");
                r = n < 0 ? n : sbx_cgroup_make(&cg, e);
                if (r >= 0 && p->n_cgroup_tasks == 0)
                        r = sbx_cgroup_attach(&cg, pid, e);
                if (r >= 0)
                        r = open_cgroup_tasks(p, cg_fds, e);
        }
        if (r >= 0 && p->net_proxy &&
            (r = sbx_receive_fd(syncp[1], "net: the sandbox did not hand over the proxy's socket", e)) >= 0)
                net_fd = r;
        if (r >= 0 && p->net_pasta)
                r = sbx_net_pasta_start(pid, &pasta_pid, e);
        if (r >= 0 && (r = send_go(syncp[1], cg_fds, p->n_cgroup_tasks)) < 0)
                hull_err(e, r, "exec: cannot start the sandbox");
        syncp[1] = safe_close(syncp[1]);
        for (size_t i = 0; i < ELEMENTSOF(cg_fds); i++)
                cg_fds[i] = safe_close(cg_fds[i]);
        if (r < 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                sbx_net_pasta_stop(pasta_pid);
                child_error(repp[0], e); /* the child's own reason, when it failed first */
                goto out;
        }
        *ret = (sbx_launch){
                .pid = pid,
                .rep_fd = TAKE_FD(repp[0]),
                .start_us = start,
                .host_uid = host_uid,
                .host_gid = host_gid,
                .cg = cg,
                .env = env,
                .net_fd = TAKE_FD(net_fd),
                .pasta_pid = pasta_pid,
        };
        return 0;
out:
        (void) sbx_cgroup_destroy(&cg, NULL);
        sbx_env_free(env);
        return r;
}

int sbx_run_container(const sbx_spec *spec, const char *workdir, sbx_result *ret, hull_error *e) {
        _cleanup_close_pair_ int outp[2] = {-1, -1}, errp[2] = {-1, -1};
        _cleanup_close_ int in_fd = -1;
        sbx_launch L = {.rep_fd = -1, .net_fd = -1};
        sbx_net_proxy *proxy = NULL;
        bool launched = false;
        capture out = {0}, err = {0};
        int r;

        if (spec->stdio) {
                /* Our own fds, dup'ed: the launch closes nothing of ours, the supervisor reads
                 * nothing (out_fd, err_fd stay -1 on its side). */
                for (int fd = 0; fd < 3; fd++) {
                        r = sbx_stdio_fd_ok(fd, e);
                        if (r < 0)
                                return r;
                }
                in_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
                outp[1] = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
                errp[1] = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
                if (in_fd < 0 || outp[1] < 0 || errp[1] < 0)
                        return hull_err(e, negative_errno(), "exec: cannot duplicate stdin, stdout and stderr");
        } else {
                in_fd = sbx_open_stdin(spec->stdin_path, e);
                if (in_fd < 0)
                        return in_fd;
                if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
                        return hull_err(e, negative_errno(), "exec: cannot create pipes");
        }
        size_t keep = spec->stdio ? SBX_OUTPUT_BYTES_MIN : spec->output_bytes; /* stdio: nothing is kept */
        if (capture_init(&out, keep) < 0 || capture_init(&err, keep) < 0) {
                r = hull_err(e, -ENOMEM, "exec: cannot allocate output buffers");
                goto out;
        }
        if (spec->stream_output && !spec->stdio) {
                capture_set_tee(&out, STDOUT_FILENO);
                capture_set_tee(&err, STDERR_FILENO);
        }

        r = sbx_container_launch(spec, workdir, in_fd, outp[1], errp[1], -1, &L, e);
        if (r < 0)
                goto out;
        launched = true;
        outp[1] = safe_close(outp[1]);
        errp[1] = safe_close(errp[1]);
        in_fd = safe_close(in_fd);
        if (L.net_fd >= 0) {
                sbx_net_policy none = {.log_fd = -1};
                r = sbx_net_proxy_start(TAKE_FD(L.net_fd), spec->net_policy ? spec->net_policy : &none, &proxy, e);
                if (r < 0) {
                        kill(L.pid, SIGKILL);
                        waitpid(L.pid, NULL, 0);
                        goto out;
                }
        }

        sbx_supervise_args a = {
                .pid = L.pid,
                .kill_target = L.pid,
                .out_fd = TAKE_FD(outp[0]),
                .err_fd = TAKE_FD(errp[0]),
                .report_fd = TAKE_FD(L.rep_fd),
                .timeout_ms = spec->timeout_ms,
                .start_us = L.start_us,
                .cancel_fd = spec->cancel_fd,
        };
        sbx_supervise_out so;
        r = sbx_supervise(&a, &out, &err, &so, e);
        if (r < 0)
                goto out;
        if (so.have_error) {
                if (strcmp(so.error_report.what, SBX_STEP_EXEC) == 0)
                        r = hull_err_hint(e, so.error_report.err,
                                          "the sandbox sees the host's /usr and the work directory at /workspace",
                                          "%s '%s'", so.error_report.what, spec->argv[0]);
                else
                        r = hull_err(e, so.error_report.err, "%s", so.error_report.what);
                goto out;
        }
        if (!so.have_exit && !so.timed_out && WIFEXITED(so.wait_status)) {
                r = hull_err(e, -EPROTO, "init: the sandbox ended without reporting the command's status");
                goto out;
        }
        ret->wall_us = so.end_us - L.start_us;
        r = sbx_result_fill(ret, &so, &out, &err, e);
        if (r < 0)
                goto out;
        if (!so.have_exit && WIFSIGNALED(so.wait_status)) {
                ret->exited = false;
                ret->term_signal = WTERMSIG(so.wait_status);
        }
        if (spec->use_cgroups) {
                sbx_cgroup_stats st;
                sbx_cgroup_read_stats(&L.cg, &st);
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
        if (launched) {
                if (r >= 0) {
                        hull_error w = {0};
                        if (sbx_cgroup_destroy(&L.cg, &w) < 0)
                                memcpy(ret->warning, w.msg, sizeof(ret->warning));
                } else
                        (void) sbx_cgroup_destroy(&L.cg, NULL);
                sbx_launch_done(&L);
        }
        capture_done(&out);
        capture_done(&err);
        return r;
}
