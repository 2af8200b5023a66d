/* sbx-container.c: the container tier. The parent prepares everything (fds, paths, /etc files,
 * capability sets; the seccomp program is compiled into hull); the child made by clone() only
 * executes the plan with system calls: no allocation, no logging, any failure reported over a
 * pipe, then _exit.
 *
 * The child becomes pid 1 of new user, pid, mount, net, ipc, uts and cgroup namespaces. It
 * builds a tmpfs root on a staging mount, binds the host's /usr (or a --rootfs) read-only,
 * pivots into it, drops every capability, sets no_new_privs, installs the seccomp filter and
 * forks the command. It stays as a tiny init that reaps and forwards the parent's SIGTERM; when
 * the command ends it reports the status and exits, and the kernel kills whatever is left. */
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
#include "sbx-internal.h"
#include "sbx-seccomp.h"

/* The child mounts a small tmpfs on STAGE and pivots into it, so the host's root stays reachable
 * at /oldroot (even what STAGE covered) while the sandbox's root is built at /newroot. */
#define STAGE "/tmp"
#define OLDROOT "/oldroot"

typedef enum entry_kind {
        ENTRY_MKDIR, /* an empty directory in the new root, for entries below it */
        ENTRY_SYMLINK,
        ENTRY_DIR,
        ENTRY_FILE,
} entry_kind;

/* One top-level entry of the new root (or of /etc) copied from the host or the rootfs. Its
 * strings live in the plan's arena (plan_strdup): packed there, the dozen entries of a host root
 * touch one page instead of one each, and every page of the plan the parent writes is a page
 * fault, 10-20 us in a VM. The child has the plan at the same address, so the pointers hold. */
typedef struct root_entry {
        entry_kind kind;
        const char *name;   /* relative to the new root, e.g. "lib64" or "etc/ld.so.cache" */
        const char *source; /* bind source, or the link target; NULL for ENTRY_MKDIR */
        dev_t dev;          /* what the parent saw at source (binds), checked after */
        ino_t ino;
} root_entry;

#define ROOT_ENTRIES_MAX (SBX_ROOTFS_ENTRIES_MAX + 16)

typedef struct etc_file {
        const char *name;
        char content[SBX_ETC_FILE_MAX];
} etc_file;

typedef struct child_plan {
        int sync_fd, report_fd;
        int in_fd, out_fd, err_fd;
        char workdir_src[SBX_PATH_MAX];         /* OLDROOT + the work directory's real path, or "" */
        char workspace_opts[SBX_SHORT_STR_MAX]; /* tmpfs options when there is no work directory */
        dev_t workdir_dev;
        ino_t workdir_ino;
        char handles_src[SBX_PATH_MAX]; /* OLDROOT + the handle store's real path, or "" */
        dev_t handles_dev;
        ino_t handles_ino;
        root_entry entries[ROOT_ENTRIES_MAX];
        size_t n_entries;
        char strings[ROOT_ENTRIES_MAX * (SBX_NAME_MAX + SBX_PATH_MAX)]; /* the entries' names and sources */
        size_t strings_len;
        bool host_etc;   /* generate /etc files (host mode) */
        etc_file etc[5]; /* [4]: resolv.conf, only in unrestricted networking (name NULL else) */
        char tmp_opts[SBX_SHORT_STR_MAX], shm_opts[SBX_SHORT_STR_MAX];
        uid_t uid;
        gid_t gid;
        char cgroup_tasks[3][SBX_CGROUP_TASKS_PATH_MAX]; /* v1: OLDROOT + files the child writes "0" to */
        size_t n_cgroup_tasks;
        bool set_groups;
        bool net_proxy; /* limited network: make the proxy's listening socket and hand it over */
        bool net_pasta; /* unrestricted: unreachable routes for the metadata addresses (pasta
                         * gives the namespace its interface) */
        /* capset(2) data, built in the parent: libcap's cap_set_proc() is not async-signal-safe
         * by contract, the raw call with ready data is. */
        struct __user_cap_data_struct caps_full[_LINUX_CAPABILITY_U32S_3], caps_none[_LINUX_CAPABILITY_U32S_3];
        int last_cap;
        char *const *argv;
        char *const *envp;
        struct rlimit nofile, fsize;
        _Alignas(16) char cmd_stack[SBX_EXEC_STACK_BYTES]; /* the command's stack until execve */
        /* A session init: the control socket and the state of its loop. */
        bool session;
        int ctl_fd;
        pid_t cmd;                          /* the running RUN call, 0 when none */
        int exempt[SBX_SESSION_INTERP_MAX]; /* interpreters: spared by sweeps */
        size_t n_exempt;
        char *cargv[SBX_SESSION_ARGS_MAX + 1], *cenvp[SBX_SESSION_ENV_MAX + 1];
        char *const *senv; /* K=V of the session (an environment's layer): over every call's own */
        size_t n_senv;
        int c_fds[4]; /* stdin, stdout, stderr, interpreter socket */
        int c_nfds;
        _Alignas(16) char msg[SBX_CTL_MSG_MAX];
} child_plan;

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

/* Build the sandbox's root at /newroot while the host's stays reachable at /oldroot. */
static void child_build_root(const child_plan *p) {
        TRY("mount: make / private", mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
        TRY("mount: staging tmpfs",
            mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16k,nr_inodes=16"));
        TRY("mount: enter the staging tmpfs", chdir(STAGE));
        TRY("mount: staging directories", mkdir("newroot", 0755));
        TRY("mount: staging directories", mkdir("oldroot", 0755));
        TRY("pivot_root: into the staging tmpfs", syscall(SYS_pivot_root, ".", "oldroot"));
        TRY("mount: tmpfs root",
            mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"));
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

/* Exactly len bytes, or -EPIPE when the parent closed the socket before sending them. */
static int read_full(int fd, void *buf, size_t len) {
        ssize_t n = loop_read(fd, buf, len);
        if (n < 0)
                return (int) n;
        return (size_t) n == len ? 0 : -EPIPE;
}

/* The parent's second message, once the cgroups exist: "c". */
static void child_receive_go(child_plan *p) {
        char c;
        if (read_full(p->sync_fd, &c, 1) < 0 || c != 'c')
                _exit(SBX_EXIT_SETUP); /* the parent gave up and reports why */
        close(p->sync_fd);
}

/* v1: move ourselves into each cgroup (see sbx_cgroup_make); v2: the parent already did. */
static void child_join_cgroups(const child_plan *p) {
        for (size_t i = 0; i < p->n_cgroup_tasks; i++) {
                int fd = open(p->cgroup_tasks[i], O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "0", 1) != 1)
                        sbx_child_fail(p->report_fd, "cgroup: join the sandbox's cgroup", -errno);
                close(fd);
        }
        if (p->n_cgroup_tasks > 0) {
                sbx_report rep = {.kind = SBX_REPORT_JOINED};
                if (write(p->report_fd, &rep, sizeof(rep)) != (ssize_t) sizeof(rep))
                        _exit(SBX_EXIT_SETUP);
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

static void child_block_metadata(const child_plan *p) {
        static const unsigned char v4[4] = {169, 254, 0, 0};
        static const unsigned char v6[16] = {0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54};
        int r = child_unreachable_route(AF_INET, v4, 16);
        if (r < 0)
                sbx_child_fail(p->report_fd, "net: route 169.254.0.0/16 to nowhere", r);
        r = child_unreachable_route(AF_INET6, v6, 128);
        if (r < 0 && r != -EAFNOSUPPORT) /* no IPv6 at all: nothing to block */
                sbx_child_fail(p->report_fd, "net: route fd00:ec2::254 to nowhere", r);
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

_noreturn_ static void child_main(child_plan *p) {
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
        if (p->set_groups)
                TRY("user: clear supplementary groups", setgroups(0, NULL));
        TRY("user: setresgid", setresgid(p->gid, p->gid, p->gid));
        TRY("user: setresuid", setresuid(p->uid, p->uid, p->uid));
        TRY("user: raise capabilities for setup", capset_raw(p->caps_full));
        TRY("user: stop keeping capabilities", prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0));
        child_setup_net(p);
        if (p->net_proxy)
                child_hand_over_proxy(p);
        if (p->net_pasta)
                child_block_metadata(p);

        /* The parent makes the cgroups while we build the root. */
        child_build_root(p);
        child_receive_go(p);
        child_join_cgroups(p);
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

/* ---- parent side ---- */

/* Wait for the child's SBX_REPORT_JOINED (the first record it sends unless it fails). */
static int wait_joined(int rep_fd, hull_error *e) {
        struct pollfd pfd = {.fd = rep_fd, .events = POLLIN};
        int n = poll(&pfd, 1, SBX_START_TIMEOUT_MS);
        if (n == 0)
                return hull_err(e, -ETIMEDOUT, "cgroup: the sandbox did not join its cgroups");
        if (n < 0)
                return hull_err(e, negative_errno(), "cgroup: waiting for the sandbox");
        sbx_report rep;
        if (read(rep_fd, &rep, sizeof(rep)) != (ssize_t) sizeof(rep))
                return hull_err(e, -EPROTO, "cgroup: the sandbox ended before joining its cgroups");
        rep.what[sizeof(rep.what) - 1] = '\0';
        if (rep.kind == SBX_REPORT_ERROR)
                return hull_err(e, rep.err, "%s", rep.what);
        if (rep.kind != SBX_REPORT_JOINED)
                return hull_err(e, -EPROTO, "cgroup: unexpected report from the sandbox");
        return 0;
}

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

/* Limited network: the proxy's listening socket from child_hand_over_proxy(). Returns the fd or
 * a negative errno with *e. */
static int receive_proxy_fd(int sync_fd, hull_error *e) {
        struct pollfd pfd = {.fd = sync_fd, .events = POLLIN};
        int n = poll(&pfd, 1, SBX_START_TIMEOUT_MS);
        if (n <= 0)
                return hull_err(e, n == 0 ? -ETIMEDOUT : negative_errno(),
                                "net: the sandbox did not hand over the proxy's socket");
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
                return hull_err(e, -EPROTO, "net: the sandbox did not hand over the proxy's socket");
        }
        return fd;
}

/* The message child_receive_go() waits for. */
static int send_go(int fd) {
        return send(fd, "c", 1, MSG_NOSIGNAL) == 1 ? 0 : -EPIPE;
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

int sbx_container_launch(const sbx_spec *spec, const char *workdir, int in_fd, int out_fd, int err_fd, int ctl_fd,
                         sbx_launch *ret, hull_error *e) {
        _cleanup_(plan_freep) child_plan *p = calloc(1, sizeof(child_plan));
        _cleanup_close_pair_ int syncp[2] = {-1, -1}, repp[2] = {-1, -1};
        _cleanup_close_ int wd_fd = -1, net_fd = -1;
        pid_t pasta_pid = 0;
        char **env = NULL;
        sbx_cgroup cg = {0};
        char map[SBX_SHORT_STR_MAX];
        int r;

        if (!p)
                return hull_err(e, -ENOMEM, "exec: out of memory");

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

        if (spec->use_cgroups) {
                char name[SBX_SHORT_STR_MAX];
                snprintf(name, sizeof(name), "hull-%d-%" PRIu64, (int) getpid(), sbx_now_us());
                sbx_cgroup_limits lim = {
                        .memory_bytes = spec->memory_bytes, .pids = spec->pids, .millicpus = spec->millicpus};
                r = sbx_cgroup_plan(&cg, name, &lim, e);
                if (r < 0)
                        goto out;
                r = sbx_cgroup_tasks_paths(&cg, OLDROOT, p->cgroup_tasks, ELEMENTSOF(p->cgroup_tasks), e);
                if (r < 0)
                        goto out;
                p->n_cgroup_tasks = (size_t) r;
        }

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
                child_main(p);

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
                r = sbx_cgroup_make(&cg, host_uid, host_gid, e);
                if (r >= 0 && p->n_cgroup_tasks == 0)
                        r = sbx_cgroup_attach(&cg, pid, e);
        }
        if (r >= 0 && p->net_proxy && (r = receive_proxy_fd(syncp[1], e)) >= 0)
                net_fd = r;
        if (r >= 0 && p->net_pasta)
                r = sbx_net_pasta_start(pid, &pasta_pid, e);
        if (r >= 0 && (r = send_go(syncp[1])) < 0)
                hull_err(e, r, "exec: cannot start the sandbox");
        syncp[1] = safe_close(syncp[1]);
        /* Once the child is in its v1 cgroups, take the `tasks` files back from the sandbox
         * user, so no other process of that host uid can join them. */
        if (r >= 0 && p->n_cgroup_tasks > 0 && (r = wait_joined(repp[0], e)) >= 0)
                r = sbx_cgroup_reclaim(&cg, e);
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
