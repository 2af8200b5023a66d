/* sbx-seccomp.c: which system calls a sandboxed process may not make, and how that list becomes
 * BPF. The policy is a deny list over the native ABI (EPERM), with clone3 answering ENOSYS so
 * libc falls back to clone(), whose namespace flags are filtered by argument. Any syscall made
 * through another ABI (int 0x80 for i386, the x32 bit) kills the whole process.
 *
 * Compiled at build time (sbx-seccomp-gen.c, run by meson) into the program hull embeds; hull
 * itself does not link this file or libseccomp. */
#include "sbx-seccomp.h"

#include <errno.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/audit.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "limits.h"
#include "macro.h"
#include "sbx-seccomp-list.h"

/* denied_syscalls and denied_legacy_syscalls: sbx-seccomp-list.h (the kernel tier writes them
 * into its bundles too). */

/* Namespace creation through clone() is refused by flag. */
static const uint64_t clone_ns_flags[] = {
        CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
        CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP, 0x00000080 /* CLONE_NEWTIME */,
};

/* personality() flags that weaken memory protections. */
static const uint64_t personality_bad_flags[] = {
        ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ADDR_COMPAT_LAYOUT, MMAP_PAGE_ZERO,  ADDR_LIMIT_32BIT,
        ADDR_LIMIT_3GB,    SHORT_INODE,       WHOLE_SECONDS,      STICKY_TIMEOUTS,
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
                        return hull_err(e, -ENOSYS,
                                        "seccomp: libseccomp cannot name %s on this architecture (update libseccomp)",
                                        denied_syscalls[i]);
                if ((unsigned) nr >= SBX_SECCOMP_FIRST_UNVETTED)
                        return hull_err(e, -EINVAL,
                                        "seccomp: the guard answers %s (%d) before the policy does: raise "
                                        "SBX_SECCOMP_FIRST_UNVETTED",
                                        denied_syscalls[i], nr);
                r = seccomp_rule_add(ctx, eperm, nr, 0);
                if (r < 0 && r != -EEXIST)
                        return hull_err(e, r, "seccomp: cannot deny %s", denied_syscalls[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(denied_legacy_syscalls); i++) {
                int nr = seccomp_syscall_resolve_name(denied_legacy_syscalls[i]);
                if (nr < 0)
                        continue;
                if ((unsigned) nr >= SBX_SECCOMP_FIRST_UNVETTED)
                        return hull_err(e, -EINVAL, "seccomp: the guard answers %s (%d) before the policy does",
                                        denied_legacy_syscalls[i], nr);
                r = seccomp_rule_add(ctx, eperm, nr, 0);
                if (r < 0 && r != -EEXIST)
                        return hull_err(e, r, "seccomp: cannot deny %s", denied_legacy_syscalls[i]);
        }

        /* No set-user-ID or set-group-ID file may be made: the work directory outlives the
         * sandbox, and such a file would run on the host as its owner. Modes are checked where
         * a call sets them; open() and openat() only when they create (O_CREAT or O_TMPFILE),
         * since their mode argument is garbage otherwise. */
        static const uint64_t setid_bits[] = {S_ISUID, S_ISGID};
        static const uint64_t create_flags[] = {O_CREAT, __O_TMPFILE};
        for (size_t i = 0; i < ELEMENTSOF(setid_bits); i++) {
                uint64_t b = setid_bits[i];
                if ((r = seccomp_rule_add(ctx, eperm, SCMP_SYS(chmod), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, b, b))) < 0 ||
                    (r = seccomp_rule_add(ctx, eperm, SCMP_SYS(fchmod), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, b, b))) < 0 ||
                    (r = seccomp_rule_add(ctx, eperm, SCMP_SYS(fchmodat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, b, b))) < 0 ||
                    (r = seccomp_rule_add(ctx, eperm, SCMP_SYS(creat), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, b, b))) < 0 ||
                    (r = seccomp_rule_add(ctx, eperm, SCMP_SYS(mknod), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, b, b))) < 0 ||
                    (r = seccomp_rule_add(ctx, eperm, SCMP_SYS(mknodat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, b, b))) < 0)
                        return hull_err(e, r, "seccomp: cannot filter set-id modes");
                for (size_t j = 0; j < ELEMENTSOF(create_flags); j++) {
                        uint64_t f = create_flags[j];
                        if ((r = seccomp_rule_add(ctx, eperm, SCMP_SYS(open), 2, SCMP_A1(SCMP_CMP_MASKED_EQ, f, f),
                                                  SCMP_A2(SCMP_CMP_MASKED_EQ, b, b))) < 0 ||
                            (r = seccomp_rule_add(ctx, eperm, SCMP_SYS(openat), 2, SCMP_A2(SCMP_CMP_MASKED_EQ, f, f),
                                                  SCMP_A3(SCMP_CMP_MASKED_EQ, b, b))) < 0)
                                return hull_err(e, r, "seccomp: cannot filter set-id modes");
                }
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
        static const uint64_t bad_ioctls[] = {TIOCSTI, TIOCLINUX};
        for (size_t i = 0; i < ELEMENTSOF(bad_ioctls); i++) {
                r = seccomp_rule_add(ctx, eperm, SCMP_SYS(ioctl), 1,
                                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, bad_ioctls[i]));
                if (r < 0)
                        return hull_err(e, r, "seccomp: cannot filter ioctl");
        }

        for (size_t i = 0; i < ELEMENTSOF(personality_bad_flags); i++) {
                uint64_t f = personality_bad_flags[i];
                r = seccomp_rule_add(ctx, eperm, SCMP_SYS(personality), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, f, f));
                if (r < 0)
                        return hull_err(e, r, "seccomp: cannot filter personality");
        }
        return 0;
}

#if defined(__x86_64__)
#define GUARD_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define GUARD_ARCH AUDIT_ARCH_AARCH64
#else
#error "hull's seccomp guard needs this architecture's AUDIT_ARCH"
#endif

/* The guard, in front of libseccomp's program: system calls of the native ABI numbered from
 * SBX_SECCOMP_FIRST_UNVETTED up get ENOSYS. They are newer than this policy (and than the
 * libseccomp the filter is compiled with, which cannot name them), so none runs unvetted; libc
 * falls back from ENOSYS. libseccomp cannot express a range, hence these instructions. Every
 * other syscall (another arch, the x32 bit, a number below the line) jumps to the first
 * instruction of libseccomp's program, which loads what it needs again; BPF jumps only forward,
 * so that program is unchanged by what comes before it. One program, not two: each filter
 * costs the kernel a JIT compile and its action cache at install. */
static const struct sock_filter guard_insns[SBX_SECCOMP_GUARD_INSNS] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GUARD_ARCH, 0, 4), /* another arch: to the policy */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U /* __X32_SYSCALL_BIT */, 2, 0), /* to the policy */
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, SBX_SECCOMP_FIRST_UNVETTED, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
};

int sbx_seccomp_compile(sbx_seccomp *ret, hull_error *e) {
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
        /* A binary tree over the syscall numbers: the calls whose rule reads arguments (open,
         * openat, chmod, clone, ioctl...), which the kernel's action cache cannot answer, take
         * about log2(rules) comparisons instead of a walk down the whole list. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        if (r < 0)
                return hull_err(e, r, "seccomp: cannot ask for a binary tree");
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
        size_t len = (size_t) st.st_size, n = len / sizeof(struct sock_filter);
        if (len == 0 || len % sizeof(struct sock_filter) != 0 || n + SBX_SECCOMP_GUARD_INSNS > BPF_MAXINSNS)
                return hull_err(e, -EINVAL, "seccomp: exported BPF has an invalid size %zu", len);
        _cleanup_free_ struct sock_filter *insns = malloc((n + SBX_SECCOMP_GUARD_INSNS) * sizeof(*insns));
        if (!insns)
                return hull_err(e, -ENOMEM, "seccomp: out of memory");
        memcpy(insns, guard_insns, sizeof(guard_insns));
        ssize_t got = pread(fd, insns + SBX_SECCOMP_GUARD_INSNS, len, 0);
        if (got < 0 || (size_t) got != len)
                return hull_err(e, got < 0 ? negative_errno() : -EIO, "seccomp: cannot read the exported BPF");

        ret->prog.len = (unsigned short) (n + SBX_SECCOMP_GUARD_INSNS);
        ret->prog.filter = TAKE_PTR(insns);
        return 0;
}

void sbx_seccomp_done(sbx_seccomp *s) {
        free(s->prog.filter);
        s->prog.filter = NULL;
        s->prog.len = 0;
}
