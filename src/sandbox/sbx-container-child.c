/* sbx-container-child.c: the child side of the container tier, from clone() to execve: set-up
 * in the new namespaces (sbx_container_child_main), the tiny init that reaps and forwards
 * SIGTERM, and a session's init serving its control socket. Async-signal-safe calls only: no
 * allocation, no logging, any failure reported over a pipe, then _exit. The parent's half (the
 * plan, clone, id maps and cgroups) is sbx-container.c; child_plan is sbx-container-internal.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "sbx-internal.h"
#include "sbx-seccomp.h"
#include "sock-util.h"

/* ---- child side: async-signal-safe calls only ---- */

static void init_on_term(int sig, siginfo_t *si, void *uc) {
        (void) uc;
        /* Only the supervisor outside the namespace (si_pid 0 here) may stop the sandbox. */
        if (si->si_pid == 0 && si->si_code == SI_USER)
                kill(-1, sig);
}

/* Bind src on dst and set attrs (MOUNT_ATTR_*) on the new mount and, with rec, on every mount
 * below it: mount_setattr() applies them recursively, where a remount would change the top
 * mount only, and it keeps the flags the kernel locked on the source. */
static int mount_bind(const char *src, const char *dst, uint64_t attrs, bool rec) {
        struct mount_attr attr = {.attr_set = attrs};
        if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) < 0)
                return -errno;
        if (syscall(SYS_mount_setattr, AT_FDCWD, dst, rec ? AT_RECURSIVE : 0, &attr, sizeof(attr)) < 0)
                return -errno;
        return 0;
}

/* Create path (which must not exist) with content, never following a link. */
static int capset_raw(const struct __user_cap_data_struct *data) {
        struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        return (int) syscall(SYS_capset, &head, data);
}

static int write_new_file(const char *path, mode_t mode, const char *content) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        size_t len = 0;
        while (content[len])
                len++;
        ssize_t n = len ? write(fd, content, len) : 0;
        int r = n == (ssize_t) len ? 0 : (n < 0 ? -errno : -EIO);
        close(fd);
        return r;
}

#define TRY(step, expr)                                                                                                \
        do {                                                                                                           \
                if ((expr) < 0)                                                                                        \
                        sbx_child_fail(p->report_fd, step, -errno);                                                    \
        } while (0)
/* TRY for a step on a path of the new root: the error names it. */
#define TRY_PATH(step, path, expr)                                                                                     \
        do {                                                                                                           \
                if ((expr) < 0)                                                                                        \
                        sbx_child_fail_path(p->report_fd, step, path, -errno);                                         \
        } while (0)
#define TRY_R_PATH(step, path, expr)                                                                                   \
        do {                                                                                                           \
                int _r = (expr);                                                                                       \
                if (_r < 0)                                                                                            \
                        sbx_child_fail_path(p->report_fd, step, path, _r);                                             \
        } while (0)
#define TRY_R(step, expr)                                                                                              \
        do {                                                                                                           \
                int _r = (expr);                                                                                       \
                if (_r < 0)                                                                                            \
                        sbx_child_fail(p->report_fd, step, _r);                                                        \
        } while (0)

static void child_setup_dev(const child_plan *p) {
        static const char *const nodes[] = {OLDROOT "/dev/null",   OLDROOT "/dev/zero",    OLDROOT "/dev/full",
                                            OLDROOT "/dev/random", OLDROOT "/dev/urandom", OLDROOT "/dev/tty"};
        TRY("mount: /dev tmpfs",
            mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64"));
        for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
                const char *dst = nodes[i] + sizeof(OLDROOT); /* "dev/null": relative to the new root */
                TRY_R("mount: /dev node", write_new_file(dst, 0666, ""));
                /* A plain bind: a device node is never executed, and the host's /dev flags hold. */
                TRY("mount: bind /dev node", mount(nodes[i], dst, NULL, MS_BIND, NULL));
        }
        TRY("mount: /dev/pts", mkdir("dev/pts", 0755));
        TRY("mount: /dev/pts devpts",
            mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"));
        TRY("mount: /dev/ptmx", symlink("pts/ptmx", "dev/ptmx"));
        TRY("mount: /dev/shm", mkdir("dev/shm", 01777));
        TRY("mount: /dev/shm tmpfs", mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, p->shm_opts));
        TRY("mount: /dev/fd", symlink("/proc/self/fd", "dev/fd"));
        TRY("mount: /dev/stdin", symlink("/proc/self/fd/0", "dev/stdin"));
        TRY("mount: /dev/stdout", symlink("/proc/self/fd/1", "dev/stdout"));
        TRY("mount: /dev/stderr", symlink("/proc/self/fd/2", "dev/stderr"));
        TRY("mount: /dev read-only",
            mount(NULL, "dev", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL));
}

/* Build the sandbox's root at /newroot while the host's stays reachable at /oldroot. One tmpfs
 * holds both: the new root is a bind mount of its directory newroot (as bubblewrap does), not a
 * second tmpfs, whose superblock would cost its making and its teardown at exit. Nothing of the
 * staging directories is reachable from the new root, and the bind keeps nosuid and nodev. */
static void child_build_root(const child_plan *p) {
        TRY("mount: make / private", mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
        TRY("mount: staging tmpfs",
            mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"));
        TRY("mount: enter the staging tmpfs", chdir(STAGE));
        TRY("mount: staging directories", mkdir("newroot", 0755));
        TRY("mount: staging directories", mkdir("oldroot", 0755));
        TRY("pivot_root: into the staging tmpfs", syscall(SYS_pivot_root, ".", "oldroot"));
        TRY("mount: the new root", mount("/newroot", "/newroot", NULL, MS_BIND | MS_NOSUID | MS_NODEV, NULL));
        TRY("mount: enter the new root", chdir("/newroot"));

        if (p->host_etc)
                TRY("mount: /etc", mkdir("etc", 0755));
        for (size_t i = 0; i < p->n_entries; i++) {
                const root_entry *en = &p->entries[i];
                switch (en->kind) {
                case ENTRY_MKDIR:
                        TRY_PATH("mount: cannot make the directory", en->name, mkdir(en->name, 0755));
                        break;
                case ENTRY_SYMLINK:
                        TRY_PATH("mount: cannot make the link", en->name, symlink(en->source, en->name));
                        break;
                case ENTRY_DIR:
                        TRY_PATH("mount: cannot make the directory", en->name, mkdir(en->name, 0755));
                        TRY_R_PATH("mount: cannot bind read-only", en->source + sizeof(OLDROOT) - 1,
                                   mount_bind(en->source, en->name,
                                              MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true));
                        break;
                case ENTRY_FILE:
                        TRY_R_PATH("mount: cannot make the file", en->name, write_new_file(en->name, 0644, ""));
                        TRY_R_PATH("mount: cannot bind read-only", en->source + sizeof(OLDROOT) - 1,
                                   mount_bind(en->source, en->name,
                                              MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true));
                        break;
                }
                /* The source was resolved by path: it must still be what the parent planned. */
                struct stat st;
                if ((en->kind == ENTRY_DIR || en->kind == ENTRY_FILE) &&
                    (stat(en->name, &st) < 0 || st.st_dev != en->dev || st.st_ino != en->ino))
                        sbx_child_fail_path(p->report_fd, "mount: changed while the sandbox was built:",
                                            en->source + sizeof(OLDROOT) - 1, -ESTALE);
        }
        for (size_t i = 0; p->host_etc && i < ELEMENTSOF(p->etc); i++)
                if (p->etc[i].name)
                        TRY_R("mount: generated /etc file", write_new_file(p->etc[i].name, 0644, p->etc[i].content));

        /* procfs must be mounted while the host's /proc is still visible. */
        TRY("mount: /proc", mkdir("proc", 0555));
        TRY("mount: /proc", mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
        TRY_R("mount: /proc/sys read-only",
              mount_bind("proc/sys", "proc/sys",
                         MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, true));

        TRY("mount: /dev", mkdir("dev", 0755));
        child_setup_dev(p);

        TRY("mount: /tmp", mkdir("tmp", 01777));
        TRY("mount: /tmp tmpfs", mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, p->tmp_opts));

        if (p->handles_src[0]) {
                struct stat st;
                TRY("mount: /handles", mkdir("handles", 0755));
                TRY_R_PATH("mount: cannot bind the handle store", p->handles_src + sizeof(OLDROOT) - 1,
                           mount_bind(p->handles_src, "handles",
                                      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                                      false));
                if (stat("handles", &st) < 0 || st.st_dev != p->handles_dev || st.st_ino != p->handles_ino)
                        sbx_child_fail(p->report_fd, "mount: the handle store changed while the sandbox was built",
                                       -ESTALE);
        }
        TRY("mount: /workspace", mkdir("workspace", 0755));
        if (p->workdir_src[0]) {
                TRY_R_PATH("mount: cannot bind the work directory", p->workdir_src + sizeof(OLDROOT) - 1,
                           mount_bind(p->workdir_src, "workspace", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false));
                struct stat st;
                if (stat("workspace", &st) < 0 || st.st_dev != p->workdir_dev || st.st_ino != p->workdir_ino)
                        sbx_child_fail(p->report_fd, "mount: the work directory changed while the sandbox was built",
                                       -ESTALE);
        } else
                TRY("mount: /workspace tmpfs",
                    mount("tmpfs", "workspace", "tmpfs", MS_NOSUID | MS_NODEV, p->workspace_opts));
}

/* Make the built root the root: the host's is detached and gone for good. */
static void child_enter_root(const child_plan *p) {
        TRY("pivot_root", syscall(SYS_pivot_root, ".", "."));
        TRY("pivot_root: detach the old root", umount2(".", MNT_DETACH));
        TRY("pivot_root: chdir /", chdir("/"));
        TRY("mount: / read-only",
            mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL));
}

/* The parent's second message, once the cgroups exist: "c", with the v1 `tasks` files it opened
 * (p->n_cgroup_tasks of them, into fds). Anything else ends the child: it fails closed. */
static void child_receive_go(child_plan *p, int *fds) {
        char c = 0;
        size_t got = 0;
        int truncated = 0;
        if (p->n_cgroup_tasks > SBX_CGROUP_TASKS_MAX)
                _exit(SBX_EXIT_SETUP);
        ssize_t n = sock_recv_fds(p->sync_fd, &c, 1, 0, fds, p->n_cgroup_tasks, &got, &truncated);
        if (n != 1 || c != 'c' || got != p->n_cgroup_tasks || truncated)
                _exit(SBX_EXIT_SETUP); /* the parent gave up and reports why */
        close(p->sync_fd);
}

/* v1: move ourselves into each cgroup through the parent's fds (see send_go); v2: the parent
 * already moved us. */
static void child_join_cgroups(const child_plan *p, const int *fds) {
        for (size_t i = 0; i < p->n_cgroup_tasks; i++) {
                if (write(fds[i], "0", 1) != 1)
                        sbx_child_fail(p->report_fd, "cgroup: join the sandbox's cgroup", -errno);
                close(fds[i]);
        }
        TRY("cgroup: new cgroup namespace", unshare(CLONE_NEWCGROUP));
}

static void child_setup_net(const child_plan *p) {
        struct ifreq ifr = {0};
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                sbx_child_fail(p->report_fd, "net: socket for loopback", -errno);
        memcpy(ifr.ifr_name, "lo", 3);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                sbx_child_fail(p->report_fd, "net: read loopback flags", -errno);
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                sbx_child_fail(p->report_fd, "net: bring loopback up", -errno);
        close(fd);
}

/* Unrestricted network: an unreachable route for dst/bits (family AF_INET or AF_INET6) in the
 * sandbox's namespace, over rtnetlink without allocating. Returns 0 or a negative errno. */
static int child_unreachable_route(int family, const void *dst, unsigned bits) {
        struct {
                struct nlmsghdr nh;
                struct rtmsg rt;
                struct rtattr rta;
                unsigned char addr[16];
        } req;
        size_t alen = family == AF_INET ? 4 : 16;
        memset(&req, 0, sizeof(req));
        req.nh.nlmsg_len = (uint32_t) (NLMSG_LENGTH(sizeof(struct rtmsg)) + RTA_LENGTH(alen));
        req.nh.nlmsg_type = RTM_NEWROUTE;
        req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
        req.nh.nlmsg_seq = 1;
        req.rt.rtm_family = (unsigned char) family;
        req.rt.rtm_dst_len = (unsigned char) bits;
        req.rt.rtm_table = RT_TABLE_MAIN;
        req.rt.rtm_protocol = RTPROT_STATIC;
        req.rt.rtm_scope = RT_SCOPE_UNIVERSE;
        req.rt.rtm_type = RTN_UNREACHABLE;
        req.rta.rta_type = RTA_DST;
        req.rta.rta_len = (unsigned short) RTA_LENGTH(alen);
        memcpy(req.addr, dst, alen);
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (fd < 0)
                return -errno;
        struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
        int r = 0;
        if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                r = -errno;
        else {
                union {
                        struct nlmsghdr nh;
                        char buf[256];
                } ans;
                ssize_t n = recv(fd, &ans, sizeof(ans), 0);
                if (n < 0)
                        r = -errno;
                else if ((size_t) n < NLMSG_LENGTH(sizeof(struct nlmsgerr)) || ans.nh.nlmsg_type != NLMSG_ERROR)
                        r = -EPROTO;
                else
                        r = ((struct nlmsgerr *) NLMSG_DATA(&ans.nh))->error;
        }
        close(fd);
        return r;
}

int sbx_net_block_metadata(const char **ret_what) {
        static const unsigned char v4[4] = {169, 254, 0, 0};
        static const unsigned char v6[16] = {0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54};
        int r = child_unreachable_route(AF_INET, v4, 16);
        if (r < 0) {
                *ret_what = "net: route 169.254.0.0/16 to nowhere";
                return r;
        }
        r = child_unreachable_route(AF_INET6, v6, 128);
        if (r < 0 && r != -EAFNOSUPPORT) { /* no IPv6 at all: nothing to block */
                *ret_what = "net: route fd00:ec2::254 to nowhere";
                return r;
        }
        return 0;
}

static void child_block_metadata(const child_plan *p) {
        const char *what = NULL;
        int r = sbx_net_block_metadata(&what);
        if (r < 0)
                sbx_child_fail(p->report_fd, what, r);
}

/* Limited network: listen on 127.0.0.1:SBX_NET_PROXY_PORT in the sandbox's namespace and send
 * the socket to the parent over the set-up socket; the sandbox keeps no copy. */
static void child_hand_over_proxy(const child_plan *p) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(SBX_NET_PROXY_PORT)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                sbx_child_fail(p->report_fd, "net: socket for the proxy", -errno);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                sbx_child_fail(p->report_fd, "net: bind the proxy's socket", -errno);
        if (listen(fd, SBX_NET_BACKLOG) < 0)
                sbx_child_fail(p->report_fd, "net: listen on the proxy's socket", -errno);
        char cbuf[CMSG_SPACE(sizeof(int))];
        memset(cbuf, 0, sizeof(cbuf));
        char byte = 'n';
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        if (sendmsg(p->sync_fd, &mh, MSG_NOSIGNAL) != 1)
                sbx_child_fail(p->report_fd, "net: hand the proxy's socket over", -errno);
        close(fd);
}

static void child_drop_privileges(const child_plan *p) {
        for (int c = 0; c <= p->last_cap; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        sbx_child_fail(p->report_fd, "caps: drop the bounding set", -errno);
        TRY("caps: clear the ambient set", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
        TRY("caps: clear every capability", capset_raw(p->caps_none));
        TRY("no_new_privs", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
        /* compiled at build time; this copy of hull's memory holds it */
        TRY("seccomp: install the filter", prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sbx_seccomp_filter, 0, 0));
}

static int command_main(void *arg) {
        const child_plan *p = arg;
        if (setsid() < 0)
                sbx_child_fail(p->report_fd, "exec: setsid", -errno);
        int r = sbx_child_exec(p->argv, p->envp, p->in_fd, p->out_fd, p->err_fd, -1, &p->nofile, &p->fsize);
        sbx_child_fail(p->report_fd, SBX_STEP_EXEC, r);
}

/* ---- the session init: calls over the control socket (see sbx-session.h) ---- */

static void init_send(const child_plan *p, int kind, int exited, int code, int sig) {
        sbx_report rep = {.kind = kind, .exited = exited, .exit_code = code, .term_signal = sig};
        if (send(p->ctl_fd, &rep, sizeof(rep), MSG_NOSIGNAL) != (ssize_t) sizeof(rep))
                _exit(0); /* the host is gone: so is the session */
}

static void init_send_error(const child_plan *p, const char *what, int err) {
        sbx_report rep = {.kind = SBX_REPORT_ERROR, .err = err};
        for (size_t i = 0; what[i] && i + 1 < sizeof(rep.what); i++)
                rep.what[i] = what[i];
        if (send(p->ctl_fd, &rep, sizeof(rep), MSG_NOSIGNAL) != (ssize_t) sizeof(rep))
                _exit(0);
}

static bool init_is_exempt(const child_plan *p, pid_t pid) {
        if (pid == 1)
                return true;
        for (size_t i = 0; i < p->n_exempt; i++)
                if (p->exempt[i] == pid)
                        return true;
        return false;
}

/* Reap every child that ended; note the RUN call's status. */
static void init_reap(child_plan *p, bool *cmd_ended, int *cmd_status) {
        for (;;) {
                int st;
                pid_t w = waitpid(-1, &st, WNOHANG | __WALL);
                if (w <= 0)
                        return;
                if (p->cmd > 0 && w == p->cmd) {
                        *cmd_ended = true;
                        *cmd_status = st;
                        p->cmd = 0;
                }
        }
}

/* A zombie is already dead: read the state letter after the last ')' of /proc/PID/stat. */
static bool init_is_zombie(int proc_fd, const char *name) {
        char path[32], buf[256];
        size_t k = 0;
        for (; name[k] && k < 16; k++)
                path[k] = name[k];
        const char *tail = "/stat";
        for (size_t i = 0; tail[i]; i++)
                path[k++] = tail[i];
        path[k] = '\0';
        int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return true; /* gone already */
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return true;
        ssize_t close_paren = -1;
        for (ssize_t i = 0; i < n; i++)
                if (buf[i] == ')')
                        close_paren = i;
        return close_paren >= 0 && close_paren + 2 < n && (buf[close_paren + 2] == 'Z' || buf[close_paren + 2] == 'X');
}

/* Send sig to every process of the sandbox but init and the interpreters; with until_gone,
 * SIGKILL again and again (a fork racing the scan is caught by the next one) until only they
 * are left. */
static void init_sweep(child_plan *p, int sig, bool until_gone, bool *cmd_ended, int *cmd_status) {
        _Alignas(8) char buf[SBX_SWEEP_DIRENT_BUF];
        for (unsigned round = 0; round < SBX_SWEEP_ROUNDS_MAX; round++) {
                unsigned live = 0;
                int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        return;
                for (;;) {
                        long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
                        if (n <= 0)
                                break;
                        for (long off = 0; off < n;) {
                                struct linux_dirent64_ {
                                        uint64_t d_ino;
                                        int64_t d_off;
                                        unsigned short d_reclen;
                                        unsigned char d_type;
                                        char d_name[];
                                } *d = (void *) (buf + off);
                                off += d->d_reclen;
                                pid_t pid = 0;
                                bool num = d->d_name[0] != '\0';
                                for (const char *c = d->d_name; *c; c++) {
                                        if (*c < '0' || *c > '9' || pid > 100000000) {
                                                num = false;
                                                break;
                                        }
                                        pid = pid * 10 + (*c - '0');
                                }
                                if (!num || init_is_exempt(p, pid))
                                        continue;
                                if (until_gone && init_is_zombie(dfd, d->d_name))
                                        continue;
                                if (kill(pid, sig) == 0)
                                        live++;
                        }
                }
                close(dfd);
                init_reap(p, cmd_ended, cmd_status);
                if (!until_gone || live == 0)
                        return;
                struct timespec ts = {0, round < 20 ? 100000L : 1000000L};
                nanosleep(&ts, NULL);
        }
}

static int session_cmd_main(void *arg) {
        const child_plan *p = arg;
        if (setsid() < 0)
                sbx_child_fail(p->ctl_fd, "exec: setsid", -errno);
        int r = sbx_child_exec(p->cargv, p->cenvp, p->c_fds[0], p->c_fds[1], p->c_fds[2],
                               p->c_nfds > 3 ? p->c_fds[3] : -1, &p->nofile, &p->fsize);
        sbx_child_fail(p->ctl_fd, SBX_STEP_EXEC, r);
}

/* Split the payload into cargv and cenvp. Returns false when it is malformed. */
static bool init_parse_args(child_plan *p, const sbx_ctl_head *h, const char *payload, size_t len) {
        if (h->argc < 1 || h->argc > SBX_SESSION_ARGS_MAX || h->envc > SBX_SESSION_ENV_MAX || len == 0 ||
            payload[len - 1] != '\0')
                return false;
        size_t off = 0;
        for (uint32_t i = 0; i < h->argc + h->envc; i++) {
                if (off >= len)
                        return false;
                char *str = (char *) payload + off;
                if (i < h->argc)
                        p->cargv[i] = str;
                else
                        p->cenvp[i - h->argc] = str;
                while (off < len && payload[off])
                        off++;
                off++;
        }
        if (off != len)
                return false;
        p->cargv[h->argc] = NULL;
        size_t envc = h->envc;
        for (size_t i = 0; i < p->n_senv; i++) {
                const char *kv = p->senv[i];
                size_t k = 0;
                while (kv[k] && kv[k] != '=')
                        k++;
                size_t j = 0;
                for (; j < envc; j++)
                        if (strncmp(p->cenvp[j], kv, k + 1) == 0)
                                break;
                if (j == envc && envc >= SBX_SESSION_ENV_MAX)
                        return false;
                p->cenvp[j] = (char *) kv;
                if (j == envc)
                        envc++;
        }
        p->cenvp[envc] = NULL;
        return true;
}

static void init_close_fds(child_plan *p) {
        for (int i = 0; i < p->c_nfds; i++)
                close(p->c_fds[i]);
        p->c_nfds = 0;
}

/* One message from the host. */
static void init_on_ctl(child_plan *p, bool *cmd_ended, int *cmd_status) {
        char cbuf[CMSG_SPACE(sizeof(int) * 4)];
        struct iovec iov = {.iov_base = p->msg, .iov_len = sizeof(p->msg)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        ssize_t n = recvmsg(p->ctl_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0)
                _exit(0); /* EOF: the session ends, the kernel kills the rest */
        p->c_nfds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < k; i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                if (p->c_nfds < 4)
                                        p->c_fds[p->c_nfds++] = fd;
                                else
                                        close(fd);
                        }
                }
        sbx_ctl_head h;
        if ((size_t) n < sizeof(h) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                init_close_fds(p);
                init_send_error(p, "init: malformed message", -EBADMSG);
                return;
        }
        memcpy(&h, p->msg, sizeof(h));
        if (h.n_exempt > SBX_SESSION_INTERP_MAX || h.payload_len != (size_t) n - sizeof(h)) {
                init_close_fds(p);
                init_send_error(p, "init: malformed message", -EBADMSG);
                return;
        }
        p->n_exempt = h.n_exempt;
        for (size_t i = 0; i < h.n_exempt; i++)
                p->exempt[i] = h.exempt[i];

        switch ((sbx_ctl_type) h.type) {
        case SBX_CTL_RUN:
        case SBX_CTL_START: {
                int want = h.type == SBX_CTL_RUN ? 3 : 4;
                if (p->c_nfds != want || (h.type == SBX_CTL_RUN && p->cmd > 0) ||
                    !init_parse_args(p, &h, p->msg + sizeof(h), h.payload_len)) {
                        init_close_fds(p);
                        init_send_error(p, "init: malformed call", -EBADMSG);
                        return;
                }
                pid_t pid = clone(session_cmd_main, p->cmd_stack + sizeof(p->cmd_stack),
                                  CLONE_VM | CLONE_VFORK | SIGCHLD, p);
                int err = errno;
                init_close_fds(p);
                if (pid < 0) {
                        init_send_error(p, "init: start the command", -err);
                        return;
                }
                if (h.type == SBX_CTL_RUN)
                        p->cmd = pid;
                else
                        init_send(p, SBX_REPORT_STARTED, 0, pid, 0);
                return;
        }
        case SBX_CTL_SIGNAL:
                init_close_fds(p);
                if (h.arg == SIGKILL)
                        init_sweep(p, SIGKILL, true, cmd_ended, cmd_status);
                else if (h.arg == SIGTERM || h.arg == SIGINT || h.arg == SIGHUP)
                        init_sweep(p, h.arg, false, cmd_ended, cmd_status);
                return;
        case SBX_CTL_SWEEP:
                init_close_fds(p);
                init_sweep(p, SIGKILL, true, cmd_ended, cmd_status);
                init_send(p, SBX_REPORT_SWEPT, 0, 0, 0);
                return;
        }
        init_close_fds(p);
        init_send_error(p, "init: unknown message", -EBADMSG);
}

_noreturn_ static void session_init_main(child_plan *p) {
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        TRY("init: block SIGCHLD", sigprocmask(SIG_BLOCK, &chld, NULL));
        int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                sbx_child_fail(p->report_fd, "init: signalfd", -errno);
        int ws = open("/workspace", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ws < 0)
                sbx_child_fail(p->report_fd, "init: open /workspace", -errno);

        /* Set up: say so with the workspace fd; from now on errors go over the control socket. */
        sbx_report rep = {.kind = SBX_REPORT_HELLO};
        char cbuf[CMSG_SPACE(sizeof(int))];
        memset(cbuf, 0, sizeof(cbuf));
        struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &ws, sizeof(int));
        if (sendmsg(p->ctl_fd, &mh, MSG_NOSIGNAL) != (ssize_t) sizeof(rep))
                sbx_child_fail(p->report_fd, "init: say hello", -errno);
        close(ws);
        close(p->report_fd);

        for (;;) {
                struct pollfd pfd[2] = {{.fd = p->ctl_fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
                if (poll(pfd, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(SBX_EXIT_SETUP);
                }
                bool cmd_ended = false;
                int cmd_status = 0;
                if (pfd[1].revents) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                ;
                        init_reap(p, &cmd_ended, &cmd_status);
                }
                if (pfd[0].revents)
                        init_on_ctl(p, &cmd_ended, &cmd_status);
                if (cmd_ended) {
                        /* The call is over: nothing it started outlives it. */
                        init_sweep(p, SIGKILL, true, &cmd_ended, &cmd_status);
                        if (WIFEXITED(cmd_status))
                                init_send(p, SBX_REPORT_EXIT, 1, WEXITSTATUS(cmd_status), 0);
                        else
                                init_send(p, SBX_REPORT_EXIT, 0, 0, WIFSIGNALED(cmd_status) ? WTERMSIG(cmd_status) : 0);
                }
        }
}

_noreturn_ static void child_init_loop(const child_plan *p, pid_t cmd) {
        sbx_report rep = {.kind = SBX_REPORT_EXIT};
        for (;;) {
                int status;
                pid_t w = waitpid(-1, &status, __WALL);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(SBX_EXIT_SETUP); /* no children: cannot happen while cmd lives */
                }
                if (w != cmd)
                        continue;
                if (WIFEXITED(status)) {
                        rep.exited = 1;
                        rep.exit_code = WEXITSTATUS(status);
                } else if (WIFSIGNALED(status))
                        rep.term_signal = WTERMSIG(status);
                ssize_t n = write(p->report_fd, &rep, sizeof(rep));
                (void) n;
                _exit(0); /* the kernel now kills everything else in the pid namespace */
        }
}

/* Close every fd the child inherited except the plan's own: init outlives set-up and must not
 * hold what hull's caller left open. */
static void child_close_inherited(const child_plan *p) {
        unsigned keep[] = {(unsigned) p->sync_fd, (unsigned) p->report_fd, (unsigned) p->in_fd, (unsigned) p->out_fd,
                           (unsigned) p->err_fd};
        for (size_t i = 1; i < ELEMENTSOF(keep); i++) /* insertion sort, no allocation */
                for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
                        unsigned t = keep[j];
                        keep[j] = keep[j - 1];
                        keep[j - 1] = t;
                }
        unsigned from = 3;
        for (size_t i = 0; i < ELEMENTSOF(keep); i++) {
                if (keep[i] > from && syscall(SYS_close_range, from, keep[i] - 1, 0) < 0)
                        sbx_child_fail(p->report_fd, "init: close inherited fds", -errno);
                if (keep[i] + 1 > from)
                        from = keep[i] + 1;
        }
        if (syscall(SYS_close_range, from, ~0U, 0) < 0)
                sbx_child_fail(p->report_fd, "init: close inherited fds", -errno);
        /* Nor hull's stdin, stdout and stderr (a terminal, perhaps). */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
                sbx_child_fail(p->report_fd, "init: stdio to /dev/null", -errno);
        close(null);
}

_noreturn_ void sbx_container_child_main(child_plan *p) {
        char c;
        sigset_t none;
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0) /* the caller may block what init needs */
                sbx_child_fail(p->report_fd, "init: signal mask", -errno);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                sbx_child_fail(p->report_fd, "init: parent-death signal", -errno);
        child_close_inherited(p);
        /* Wait until the parent has written the id maps. */
        if (read(p->sync_fd, &c, 1) != 1)
                _exit(SBX_EXIT_SETUP);

        TRY("user: keep capabilities across setuid", prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
        /* raw system calls, not glibc's wrappers: those tell every other thread of the process to
         * change too (setxid), and this child of a raw clone() inherits glibc's list of the
         * parent's threads; one that was being created at the clone is waited for forever */
        if (p->set_groups)
                TRY("user: clear supplementary groups", syscall(SYS_setgroups, 0, NULL));
        TRY("user: setresgid", syscall(SYS_setresgid, p->gid, p->gid, p->gid));
        TRY("user: setresuid", syscall(SYS_setresuid, p->uid, p->uid, p->uid));
        TRY("user: raise capabilities for setup", capset_raw(p->caps_full));
        TRY("user: stop keeping capabilities", prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0));
        child_setup_net(p);
        if (p->net_proxy)
                child_hand_over_proxy(p);
        if (p->net_pasta)
                child_block_metadata(p);

        /* The parent makes the cgroups while we build the root. */
        child_build_root(p);
        int cg_fds[SBX_CGROUP_TASKS_MAX];
        child_receive_go(p, cg_fds);
        child_join_cgroups(p, cg_fds);
        child_enter_root(p);
        TRY("uts: set the hostname", sethostname("hull", 4));
        TRY("chdir /workspace", chdir("/workspace"));
        child_drop_privileges(p);

        /* Init is a copy of hull (its memory holds hull's environment and fds): the command, same
         * uid, must not read or write it through /proc/1. The command is dumpable again after
         * its execve. */
        TRY("init: not dumpable", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
        if (p->session)
                session_init_main(p);

        struct sigaction sa = {.sa_sigaction = init_on_term, .sa_flags = SA_SIGINFO | SA_RESTART};
        sigemptyset(&sa.sa_mask);
        TRY("init: SIGTERM handler", sigaction(SIGTERM, &sa, NULL));

        /* vfork-style: the command shares init's memory until its execve, on a stack of its own,
         * so no page tables are copied. It has its own fd table and signal handlers. */
        pid_t cmd = clone(command_main, p->cmd_stack + sizeof(p->cmd_stack), CLONE_VM | CLONE_VFORK | SIGCHLD, p);
        if (cmd < 0)
                sbx_child_fail(p->report_fd, "init: start the command", -errno);
        close(p->in_fd);
        close(p->out_fd);
        close(p->err_fd);
        child_init_loop(p, cmd);
}
