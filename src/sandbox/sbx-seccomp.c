/* sbx-seccomp.c: which system calls a sandboxed process may not make, and how that list becomes
 * BPF. The policy is a deny list over the native ABI (EPERM), with clone3 answering ENOSYS so
 * libc falls back to clone(), whose namespace flags are filtered by argument. Any syscall made
 * through another ABI (int 0x80 for i386, the x32 bit) kills the whole process. */
#include "sbx-seccomp.h"

#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "macro.h"

/* Calls with no legitimate use inside a sandbox; each fails with EPERM. */
static const char *const denied_syscalls[] = {
        /* mounts and roots */
        "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
        "fspick", "move_mount", "open_tree", "mount_setattr",
        /* namespaces */
        "unshare", "setns",
        /* other processes' memory */
        "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
        /* kernel and modules */
        "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
        "create_module", "query_module", "get_kernel_syms", "bpf", "perf_event_open",
        "userfaultfd", "lookup_dcookie", "syslog", "_sysctl", "sysfs", "uselib", "ustat",
        "nfsservctl", "io_uring_setup", "io_uring_enter", "io_uring_register",
        /* keys */
        "keyctl", "add_key", "request_key",
        /* host administration */
        "acct", "swapon", "swapoff", "reboot", "quotactl", "quotactl_fd", "iopl", "ioperm",
        "vhangup", "sethostname", "setdomainname", "settimeofday", "stime", "clock_settime",
        "adjtimex", "clock_adjtime", "fanotify_init",
        /* file handles bypass path checks */
        "open_by_handle_at", "name_to_handle_at",
};

/* Namespace creation through clone() is refused by flag. */
static const uint64_t clone_ns_flags[] = {
        CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
        CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP, 0x00000080 /* CLONE_NEWTIME */,
};

/* personality() flags that weaken memory protections. */
static const uint64_t personality_bad_flags[] = {
        ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ADDR_COMPAT_LAYOUT, MMAP_PAGE_ZERO,
        ADDR_LIMIT_32BIT, ADDR_LIMIT_3GB, SHORT_INODE, WHOLE_SECONDS, STICKY_TIMEOUTS,
};

static void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

static int add_rules(scmp_filter_ctx ctx, hull_error *e) {
        const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
        int r;

        for (size_t i = 0; i < ELEMENTSOF(denied_syscalls); i++) {
                int nr = seccomp_syscall_resolve_name(denied_syscalls[i]);
                if (nr < 0)
                        continue; /* not a call on this architecture */
                r = seccomp_rule_add(ctx, eperm, nr, 0);
                if (r < 0 && r != -EEXIST)
                        return hull_err(e, r, "seccomp: cannot deny %s", denied_syscalls[i]);
        }

        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        if (r < 0)
                return hull_err(e, r, "seccomp: cannot refuse clone3");

        for (size_t i = 0; i < ELEMENTSOF(clone_ns_flags); i++) {
                uint64_t f = clone_ns_flags[i];
                r = seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, f, f));
                if (r < 0)
                        return hull_err(e, r, "seccomp: cannot filter clone flags");
        }

        /* Injecting input into a terminal (TIOCSTI) or driving the console (TIOCLINUX). The
         * command number is 32 bits; compare it masked so high garbage cannot dodge the rule. */
        static const uint64_t bad_ioctls[] = { TIOCSTI, TIOCLINUX };
        for (size_t i = 0; i < ELEMENTSOF(bad_ioctls); i++) {
                r = seccomp_rule_add(ctx, eperm, SCMP_SYS(ioctl), 1,
                                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, bad_ioctls[i]));
                if (r < 0)
                        return hull_err(e, r, "seccomp: cannot filter ioctl");
        }

        for (size_t i = 0; i < ELEMENTSOF(personality_bad_flags); i++) {
                uint64_t f = personality_bad_flags[i];
                r = seccomp_rule_add(ctx, eperm, SCMP_SYS(personality), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, f, f));
                if (r < 0)
                        return hull_err(e, r, "seccomp: cannot filter personality");
        }
        return 0;
}

int sbx_seccomp_build(sbx_seccomp *ret, hull_error *e) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        _cleanup_close_ int fd = -1;
        int r;

        if (!ctx)
                return hull_err(e, -ENOMEM, "seccomp: cannot create filter");
        /* The filter holds only the native ABI; a syscall from any other ABI is "bad arch". */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return hull_err(e, r, "seccomp: cannot set the foreign-ABI action");
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); /* the child sets no_new_privs itself */
        if (r < 0)
                return hull_err(e, r, "seccomp: cannot configure the filter");
        r = add_rules(ctx, e);
        if (r < 0)
                return r;

        fd = memfd_create("hull-seccomp", MFD_CLOEXEC);
        if (fd < 0)
                return hull_err(e, negative_errno(), "seccomp: cannot create memfd");
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return hull_err(e, r, "seccomp: cannot export BPF");
        struct stat st;
        if (fstat(fd, &st) < 0)
                return hull_err(e, negative_errno(), "seccomp: cannot stat the exported BPF");
        size_t len = (size_t) st.st_size;
        if (len == 0 || len % sizeof(struct sock_filter) != 0 || len / sizeof(struct sock_filter) > BPF_MAXINSNS)
                return hull_err(e, -EINVAL, "seccomp: exported BPF has an invalid size %zu", len);
        _cleanup_free_ struct sock_filter *insns = malloc(len);
        if (!insns)
                return hull_err(e, -ENOMEM, "seccomp: out of memory");
        ssize_t n = pread(fd, insns, len, 0);
        if (n < 0 || (size_t) n != len)
                return hull_err(e, n < 0 ? negative_errno() : -EIO, "seccomp: cannot read the exported BPF");

        ret->prog.len = (unsigned short) (len / sizeof(struct sock_filter));
        ret->prog.filter = TAKE_PTR(insns);
        return 0;
}

void sbx_seccomp_done(sbx_seccomp *s) {
        free(s->prog.filter);
        s->prog.filter = NULL;
        s->prog.len = 0;
}
