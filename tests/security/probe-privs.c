/* probe-privs.c: the probe's modes for credentials, capabilities and the seccomp deny-list. */
#include "probe.h"

/* ---- credentials and capabilities ------------------------------------------------------------ */

/* uid/gid are the sandbox's, capabilities are empty in every set, and root is unreachable. */
int mode_creds(int argc, char **argv) {
        static char status[SMALL_FILE_MAX];
        static const char *const sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
        outcome o = {0};
        bool escaped = false;
        uid_t r, e, s;
        gid_t gr, ge, gs;
        gid_t groups[64];
        int ngroups;

        (void) argc, (void) argv;
        getresuid(&r, &e, &s);
        getresgid(&gr, &ge, &gs);
        add(&o, "uid=%u,%u,%u gid=%u,%u,%u", r, e, s, gr, ge, gs);
        if (r != SANDBOX_ID || e != SANDBOX_ID || s != SANDBOX_ID || gr != SANDBOX_ID || ge != SANDBOX_ID ||
            gs != SANDBOX_ID)
                escaped = true;
        ngroups = getgroups(64, groups);
        for (int i = 0; i < ngroups; i++)
                if (groups[i] == 0) {
                        escaped = true;
                        add(&o, "in-group-0");
                }
        if (read_small("/proc/self/status", status, sizeof(status)) < 0)
                refuse("cannot read /proc/self/status");
        for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
                uint64_t v;
                if (!status_hex(status, sets[i], &v)) {
                        escaped = true;
                        add(&o, "%s=missing", sets[i]);
                        continue;
                }
                add(&o, "%s=%016" PRIx64, sets[i], v);
                if (v != 0)
                        escaped = true;
        }
        if (setuid(0) == 0) {
                escaped = true;
                add(&o, "setuid0=ok");
        } else
                add(&o, "setuid0=%s", errname(errno));
        if (setgid(0) == 0) {
                escaped = true;
                add(&o, "setgid0=ok");
        } else
                add(&o, "setgid0=%s", errname(errno));
        return report(escaped, &o);
}

/* no_new_privs is set and a seccomp filter is installed. */
int mode_nnp(int argc, char **argv) {
        static char status[SMALL_FILE_MAX];
        outcome o = {0};
        bool escaped = false;
        uint64_t nnp = 2, mode = 9;
        int p;

        (void) argc, (void) argv;
        if (read_small("/proc/self/status", status, sizeof(status)) < 0)
                refuse("cannot read /proc/self/status");
        if (!status_u64(status, "NoNewPrivs", &nnp) || nnp != 1)
                escaped = true;
        if (!status_u64(status, "Seccomp", &mode) || mode != 2)
                escaped = true;
        p = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
        if (p != 1)
                escaped = true;
        add(&o, "NoNewPrivs=%" PRIu64 " Seccomp=%" PRIu64 " prctl=%d", nnp, mode, p);
        return report(escaped, &o);
}

/* Run a setuid-root binary from /usr (argv: PATH [ARG...]) with a stdin that never delivers,
 * watch its /proc status while it waits, and check it did not gain root or capabilities. */
int mode_suid_exec(int argc, char **argv) {
        static char status[SMALL_FILE_MAX];
        char path[64], name[64], uid[128] = "?", capeff[64] = "?", capprm[64] = "?";
        const char *base;
        outcome o = {0};
        bool seen = false, escaped = false;
        int in[2], st;
        pid_t pid;

        if (argc < 1)
                refuse("usage: suid-exec PATH [ARG...]");
        if (pipe2(in, O_CLOEXEC) < 0)
                refuse("pipe failed");
        pid = fork();
        if (pid < 0)
                refuse("fork failed");
        if (pid == 0) {
                int devnull = open("/dev/null", O_WRONLY);
                dup2(in[0], 0);
                if (devnull >= 0) {
                        dup2(devnull, 1);
                        dup2(devnull, 2);
                }
                execv(argv[0], argv);
                _exit(127);
        }
        close(in[0]);
        base = strrchr(argv[0], '/');
        base = base ? base + 1 : argv[0];
        snprintf(path, sizeof(path), "/proc/%d/status", pid);
        for (unsigned i = 0; i < OBSERVE_TRIES && !seen; i++) {
                if (read_small(path, status, sizeof(status)) > 0 && status_field(status, "Name", name, sizeof(name)) &&
                    strncmp(name, base, 15) == 0) {
                        status_field(status, "Uid", uid, sizeof(uid));
                        status_field(status, "CapEff", capeff, sizeof(capeff));
                        status_field(status, "CapPrm", capprm, sizeof(capprm));
                        seen = true;
                        break;
                }
                usleep(500);
        }
        if (seen) {
                unsigned ru, eu, su, fu;
                add(&o, "%s Uid=[%s] CapEff=%s CapPrm=%s", base, uid, capeff, capprm);
                if (sscanf(uid, "%u %u %u %u", &ru, &eu, &su, &fu) != 4 || ru != SANDBOX_ID || eu != SANDBOX_ID ||
                    su != SANDBOX_ID || fu != SANDBOX_ID)
                        escaped = true;
                if (strspn(capeff, "0") != strlen(capeff) || strspn(capprm, "0") != strlen(capprm))
                        escaped = true;
        } else {
                add(&o, "%s=not-observed", base);
                escaped = true; /* unverified is not contained */
        }
        kill(pid, SIGKILL);
        close(in[1]);
        waitpid(pid, &st, 0);
        return report(escaped, &o);
}

int mode_personality(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        if (TRY(&o, "READ_IMPLIES_EXEC", EPERM,
                syscall(SYS_personality, (unsigned long) (PER_LINUX | READ_IMPLIES_EXEC))) >= 0)
                syscall(SYS_personality, (unsigned long) PER_LINUX);
        /* the harmless query, for the record */
        errno = 0;
        long cur = syscall(SYS_personality, 0xffffffffUL);
        if (cur < 0)
                add(&o, "query=%s(info)", errname(errno));
        else
                add(&o, "current=%#lx", (unsigned long) cur);
        return finish(&o);
}

/* ---- the seccomp deny-list ----------------------------------------------------------------- */

int mode_modules(int argc, char **argv) {
        static char image[64]; /* not an ELF module: rejected even if the call went through */
        outcome o = {0};
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        (void) argc, (void) argv;
        TRY(&o, "init_module", EPERM, syscall(SYS_init_module, image, sizeof(image), ""));
        TRY(&o, "finit_module", EPERM, syscall(SYS_finit_module, fd, "", 0));
        TRY(&o, "delete_module", EPERM, syscall(SYS_delete_module, "hull_probe_no_such_module", O_NONBLOCK));
        close_if_open(fd);
        return finish(&o);
}

int mode_hostname(int argc, char **argv) {
        outcome o = {0};
        static const char name[] = "hull-probe-pwned";

        (void) argc, (void) argv;
        TRY(&o, "sethostname", EPERM, sethostname(name, sizeof(name) - 1));
        TRY(&o, "setdomainname", EPERM, setdomainname(name, sizeof(name) - 1));
        return finish(&o);
}

/* Set the clock to the time it already has: detectable, harmless. */
int mode_clock(int argc, char **argv) {
        outcome o = {0};
        struct timeval tv;
        struct timespec ts;
        struct timex tx = {.modes = 0};

        (void) argc, (void) argv;
        gettimeofday(&tv, NULL);
        TRY(&o, "settimeofday", EPERM, settimeofday(&tv, NULL));
        clock_gettime(CLOCK_REALTIME, &ts);
        TRY(&o, "clock_settime", EPERM, clock_settime(CLOCK_REALTIME, &ts));
        TRY(&o, "adjtimex", EPERM, syscall(SYS_adjtimex, &tx));
        memset(&tx, 0, sizeof(tx));
        TRY(&o, "clock_adjtime", EPERM, syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));
        return finish(&o);
}

struct sti_result {
        int plain, high_bits, linux_ioctl;
};

/* In a new session with the pty as controlling terminal, push a character into its input. */
static int try_tiocsti(void *arg) {
        int *which = arg;
        int master, slave;
        char c = '#';
        long r;

        if (setsid() < 0)
                return 250;
        master = posix_openpt(O_RDWR | O_NOCTTY);
        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
                return 251;
        slave = open(ptsname(master), O_RDWR); /* becomes our controlling terminal */
        if (slave < 0)
                return 252;
        if (*which == 0)
                r = ioctl(slave, TIOCSTI, &c);
        else if (*which == 1) /* the upper 32 bits of cmd are ignored by the kernel */
                r = syscall(SYS_ioctl, slave, (unsigned long) TIOCSTI | (1UL << 32), &c);
        else {
                char sub = 6; /* TIOCL_GETSHIFTSTATE: read-only */
                r = ioctl(slave, TIOCLINUX, &sub);
        }
        return r == 0 ? 0 : errno;
}

int mode_tiocsti(int argc, char **argv) {
        static const char *const what[] = {"TIOCSTI-pty", "TIOCSTI-highbits", "TIOCLINUX-pty"};
        outcome o = {0};
        char c = '#';

        (void) argc, (void) argv;
        for (int i = 0; i < 3; i++) {
                int err = in_child(try_tiocsti, &i);
                if (err >= 250 || err < 0) {
                        note(&o, what[i], err < 0 ? EIO : ENOTTY);
                        o.off_spec = true;
                        continue;
                }
                expect_fail(&o, what[i], err == 0 ? 0 : -1, err, EPERM);
        }
        for (int fd = 0; fd <= 2; fd++) {
                char w[32];
                snprintf(w, sizeof(w), "TIOCSTI-fd%d", fd);
                TRY(&o, w, EPERM, ioctl(fd, TIOCSTI, &c));
        }
        return finish(&o);
}

int mode_keyctl(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        TRY(&o, "add_key", EPERM,
            syscall(SYS_add_key, "user", "hull-probe", "x", 1UL, (long) KEY_SPEC_PROCESS_KEYRING));
        TRY(&o, "keyctl-get-user-keyring", EPERM,
            syscall(SYS_keyctl, (long) KEYCTL_GET_KEYRING_ID, (long) KEY_SPEC_USER_KEYRING, 0L));
        TRY(&o, "keyctl-join-session", EPERM, syscall(SYS_keyctl, (long) KEYCTL_JOIN_SESSION_KEYRING, NULL));
        TRY(&o, "request_key", EPERM, syscall(SYS_request_key, "user", "hull-probe-none", NULL, 0L));
        return finish(&o);
}

int mode_bpf(int argc, char **argv) {
        outcome o = {0};
        union bpf_attr map = {0}, prog = {0};
        struct bpf_insn insns[2] = {
                {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
                {.code = BPF_JMP | BPF_EXIT},
        };
        static const char license[] = "GPL";

        (void) argc, (void) argv;
        map.map_type = BPF_MAP_TYPE_ARRAY;
        map.key_size = 4;
        map.value_size = 4;
        map.max_entries = 1;
        close_if_open(TRY(&o, "BPF_MAP_CREATE", EPERM, syscall(SYS_bpf, BPF_MAP_CREATE, &map, sizeof(map))));
        prog.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
        prog.insn_cnt = 2;
        prog.insns = (uint64_t) (uintptr_t) insns;
        prog.license = (uint64_t) (uintptr_t) license;
        close_if_open(TRY(&o, "BPF_PROG_LOAD", EPERM, syscall(SYS_bpf, BPF_PROG_LOAD, &prog, sizeof(prog))));
        return finish(&o);
}

int mode_perf(int argc, char **argv) {
        outcome o = {0};
        struct perf_event_attr attr = {0};

        (void) argc, (void) argv;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.size = sizeof(attr);
        attr.config = PERF_COUNT_SW_TASK_CLOCK;
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        close_if_open(TRY(&o, "perf-self", EPERM, syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0UL)));
        attr.exclude_kernel = 0;
        attr.type = PERF_TYPE_HARDWARE;
        attr.config = PERF_COUNT_HW_CPU_CYCLES;
        close_if_open(TRY(&o, "perf-cpu-wide", EPERM, syscall(SYS_perf_event_open, &attr, -1, 0, -1, 0UL)));
        return finish(&o);
}

int mode_userfaultfd(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        close_if_open(
                TRY(&o, "userfaultfd-user-mode", EPERM, syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY)));
        close_if_open(TRY(&o, "userfaultfd", EPERM, syscall(SYS_userfaultfd, O_CLOEXEC)));
        return finish(&o);
}

int mode_io_uring(int argc, char **argv) {
        outcome o = {0};
        struct io_uring_params p = {0};

        (void) argc, (void) argv;
        close_if_open(TRY(&o, "io_uring_setup", EPERM, syscall(SYS_io_uring_setup, 4U, &p)));
        TRY(&o, "io_uring_register", EPERM, syscall(SYS_io_uring_register, -1, 0U, NULL, 0U));
        TRY(&o, "io_uring_enter", EPERM, syscall(SYS_io_uring_enter, -1, 0U, 0U, 0U, NULL, 0UL));
        return finish(&o);
}

/* The "shocker" attack: open a file by handle, bypassing the mount's view. */
int mode_open_by_handle(int argc, char **argv) {
        outcome o = {0};
        union {
                struct file_handle fh;
                char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
        } h;
        int mount_id, dirfd = open("/workspace", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        (void) argc, (void) argv;
        memset(&h, 0, sizeof(h));
        h.fh.handle_bytes = MAX_HANDLE_SZ;
        TRY(&o, "name_to_handle_at", EPERM,
            syscall(SYS_name_to_handle_at, AT_FDCWD, "/workspace", &h.fh, &mount_id, 0));
        /* a root-inode-style handle (ext4: inode 2, generation 0) */
        memset(&h, 0, sizeof(h));
        h.fh.handle_bytes = 8;
        h.fh.handle_type = 1;
        h.fh.f_handle[0] = 2;
        close_if_open(TRY(&o, "open_by_handle_at", EPERM,
                          syscall(SYS_open_by_handle_at, dirfd, &h.fh, O_RDONLY | O_CLOEXEC)));
        close_if_open(dirfd);
        return finish(&o);
}

int mode_kexec(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        TRY(&o, "kexec_load", EPERM, syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0UL));
        TRY(&o, "kexec_file_load", EPERM, syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0UL));
        return finish(&o);
}

int mode_reboot(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        /* an invalid command: EINVAL if it ever got past the permission checks, never a reboot */
        TRY(&o, "reboot", EPERM, syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, 0x0badc0deUL, NULL));
        return finish(&o);
}

int mode_acct(int argc, char **argv) {
        outcome o = {0};
        int fd = open("/tmp/hull-acct", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

        (void) argc, (void) argv;
        close_if_open(fd);
        if (TRY(&o, "acct-on", EPERM, acct("/tmp/hull-acct")) == 0)
                acct(NULL);
        TRY(&o, "acct-off", EPERM, acct(NULL));
        unlink("/tmp/hull-acct");
        return finish(&o);
}

int mode_swap(int argc, char **argv) {
        outcome o = {0};
        int fd = open("/tmp/hull-swap", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        static char quota_buf[256];

        (void) argc, (void) argv;
        close_if_open(fd);
        if (TRY(&o, "swapon", EPERM, swapon("/tmp/hull-swap", 0)) == 0)
                swapoff("/tmp/hull-swap");
        TRY(&o, "swapoff", EPERM, swapoff("/tmp/hull-swap-none"));
        TRY(&o, "quotactl", EPERM, quotactl(QCMD(Q_GETINFO, USRQUOTA), "/dev/null", 0, quota_buf));
        unlink("/tmp/hull-swap");
        return finish(&o);
}

int mode_iopl(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        if (TRY(&o, "iopl3", EPERM, syscall(SYS_iopl, 3)) == 0)
                syscall(SYS_iopl, 0);
        if (TRY(&o, "ioperm-0x80", EPERM, syscall(SYS_ioperm, 0x80UL, 1UL, 1)) == 0)
                syscall(SYS_ioperm, 0x80UL, 1UL, 0);
        return finish(&o);
}

/* i386 ABI: getpid through int 0x80. The seccomp filter must kill us with SIGSYS. */
int mode_i386(int argc, char **argv) {
        long r;

        (void) argc, (void) argv;
        fprintf(stderr, "ATTEMPT int 0x80 getpid\n");
        fflush(stderr);
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(I386_NR_GETPID) : "r8", "r9", "r10", "r11", "memory");
        if (r >= 0) {
                printf("ESCAPED i386 getpid returned %ld\n", r);
                fflush(stdout);
                return EXIT_ESCAPED;
        }
        printf("BLOCKED i386 returned %ld (not killed)\n", r);
        fflush(stdout);
        return EXIT_CONTAINED;
}

/* x32 ABI: getpid with the x32 bit. The seccomp filter must kill us with SIGSYS. */
int mode_x32(int argc, char **argv) {
        long r;

        (void) argc, (void) argv;
        fprintf(stderr, "ATTEMPT x32 getpid\n");
        fflush(stderr);
        __asm__ volatile("syscall" : "=a"(r) : "a"(X32_SYSCALL_BIT | X86_64_NR_GETPID) : "rcx", "r11", "memory");
        if (r >= 0) {
                printf("ESCAPED x32 getpid returned %ld\n", r);
                fflush(stdout);
                return EXIT_ESCAPED;
        }
        printf("BLOCKED x32 returned %ld (not killed)\n", r);
        fflush(stdout);
        return EXIT_CONTAINED;
}
