/* probe.c: escape attempts against the hull container tier, one per mode.
 *
 *   probe MODE [ARG...]
 *
 * Each mode tries to break out of (or past the limits of) the sandbox it runs in and prints one
 * result line on stdout (the flood mode prints it on stderr):
 *   DENIED ...    every attempt failed, each with the errno the policy names (EPERM for the
 *                 seccomp deny-list, ENOSYS for clone3, ENOSPC for a full /tmp, ...)
 *   BLOCKED ...   every attempt failed, some with another errno (contained, but not as specified)
 *   CONTAINED ... an inspection found nothing wrong
 *   ESCAPED ...   an attempt succeeded or an invariant did not hold
 * and exits 0 when contained, 1 when it escaped, 2 when it refuses to run.
 *
 * This program runs as root on a real machine when something is wrong, so main() first proves
 * that it is inside a sandbox (sandbox_guard()) and refuses otherwise. Every attempt is chosen so
 * that even its success harms nothing: bogus module images, invalid reboot commands, the clock
 * set to the time it already has, files opened for writing but never written, no unlink or
 * truncate outside the sandbox's own /tmp and /workspace.
 *
 * This file holds that safety gate and the dispatch; the modes live in probe-host.c, probe-ns.c,
 * probe-privs.c and probe-net.c, the helpers they share in probe-util.c (all declared in
 * probe.h). */
#include "probe.h"

/* ---- the safety gate ----------------------------------------------------------------------- */

__attribute__((noreturn)) void refuse(const char *why) {
        printf("REFUSED not in sandbox: %s\n", why);
        fflush(stdout);
        exit(EXIT_REFUSED);
}

/* Whether this kernel is not the host's: its uname release and version ("4.4.0 #1 SMP ...")
 * differ from HULL_HOST_KERNEL (given by the harness: `uname -r -v` on the host). Without that
 * variable, never. */
static bool another_kernel(void) {
        static char own[2 * sizeof(((struct utsname *) 0)->release) + 2];
        struct utsname u;
        const char *host = getenv("HULL_HOST_KERNEL");
        if (!host || !host[0] || uname(&u) < 0)
                return false;
        snprintf(own, sizeof(own), "%s %s", u.release, u.version);
        return strcmp(own, host) != 0;
}

/* Prove we are inside a hull sandbox before attempting anything: our pid and user namespaces
 * must differ from the host's (given by the harness), the uid map must not be the initial
 * namespace's identity map (unless this is another kernel: the kernel tier), and we must hold no
 * effective capability. */
static void sandbox_guard(void) {
        static char buf[SMALL_FILE_MAX];
        uint64_t host_pidns, host_userns, own, capeff;
        const char *line;

        if (!parse_u64(getenv("HULL_HOST_PIDNS"), &host_pidns) || host_pidns == 0)
                refuse("HULL_HOST_PIDNS missing or not a number");
        if (!parse_u64(getenv("HULL_HOST_USERNS"), &host_userns) || host_userns == 0)
                refuse("HULL_HOST_USERNS missing or not a number");

        if (!ns_inode("/proc/self/ns/pid", &own))
                refuse("cannot stat /proc/self/ns/pid");
        if (own == host_pidns)
                refuse("pid namespace is the host's");
        if (!ns_inode("/proc/self/ns/user", &own))
                refuse("cannot stat /proc/self/ns/user");
        if (own == host_userns)
                refuse("user namespace is the host's");

        /* The identity uid map is the host's own user namespace, unless this is another kernel
         * altogether (the kernel tier: gVisor's sentry, whose boot id is not the host's). */
        if (read_small("/proc/self/uid_map", buf, sizeof(buf)) < 0)
                refuse("cannot read /proc/self/uid_map");
        for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                unsigned long inside, outside, count;
                if (sscanf(line, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 && outside == 0 &&
                    count == 4294967295UL && !another_kernel())
                        refuse("uid_map is the identity map");
        }

        if (read_small("/proc/self/status", buf, sizeof(buf)) < 0)
                refuse("cannot read /proc/self/status");
        if (!status_hex(buf, "CapEff", &capeff))
                refuse("no CapEff in /proc/self/status");
        if (capeff != 0)
                refuse("effective capabilities are not empty");
}

/* ---- dispatch -------------------------------------------------------------------------------- */

typedef struct probe_mode {
        const char *name;
        int (*run)(int argc, char **argv);
} probe_mode;

static const probe_mode modes[] = {
        {"read-host-files", mode_read_host_files},
        {"host-canary", mode_host_canary},
        {"proc-root", mode_proc_root},
        {"workdir-links", mode_workdir_links},
        {"proc1", mode_proc1},
        {"environ-scan", mode_environ_scan},
        {"pid1-hijack", mode_pid1_hijack},
        {"write-usr", mode_write_usr},
        {"write-root-etc", mode_write_root_etc},
        {"proc-sys", mode_proc_sys},
        {"mknod", mode_mknod},
        {"dev-nodes", mode_dev_nodes},
        {"mount", mode_mount},
        {"new-mount-api", mode_new_mount_api},
        {"chroot", mode_chroot},
        {"pivot-root", mode_pivot_root},
        {"unshare", mode_unshare},
        {"clone-ns", mode_clone_ns},
        {"clone3", mode_clone3},
        {"setns", mode_setns},
        {"ptrace", mode_ptrace},
        {"process-vm", mode_process_vm},
        {"signal-host", mode_signal_host},
        {"proc-pids", mode_proc_pids},
        {"fork-bomb", mode_fork_bomb},
        {"memory-bomb", mode_memory_bomb},
        {"fill-tmp", mode_fill_tmp},
        {"flood", mode_flood},
        {"orphan", mode_orphan},
        {"creds", mode_creds},
        {"nnp", mode_nnp},
        {"suid-exec", mode_suid_exec},
        {"personality", mode_personality},
        {"modules", mode_modules},
        {"hostname", mode_hostname},
        {"clock", mode_clock},
        {"tiocsti", mode_tiocsti},
        {"keyctl", mode_keyctl},
        {"bpf", mode_bpf},
        {"perf", mode_perf},
        {"userfaultfd", mode_userfaultfd},
        {"io-uring", mode_io_uring},
        {"open-by-handle", mode_open_by_handle},
        {"kexec", mode_kexec},
        {"reboot", mode_reboot},
        {"acct", mode_acct},
        {"swap", mode_swap},
        {"iopl", mode_iopl},
        {"i386", mode_i386},
        {"x32", mode_x32},
        {"connect-tcp", mode_connect_tcp},
        {"connect-unix", mode_connect_unix},
        {"netifs", mode_netifs},
        {"ctty", mode_ctty},
        {"leaked-fds", mode_leaked_fds},
        {"cgroup-escape", mode_cgroup_escape},
};

int main(int argc, char **argv) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        sandbox_guard(); /* before anything else, for every mode */

        if (argc < 2) {
                printf("REFUSED usage: probe MODE [ARG...]\n");
                return EXIT_REFUSED;
        }
        for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
                if (strcmp(argv[1], modes[i].name) == 0)
                        return modes[i].run(argc - 2, argv + 2);
        printf("REFUSED unknown mode %s\n", argv[1]);
        return EXIT_REFUSED;
}
