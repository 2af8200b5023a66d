/* probe-ns.c: the probe's modes for mounts, namespaces and processes: leaving the sandbox's namespaces, reaching host
 * processes, exhausting its limits. */
#include "probe.h"

/* ---- mounts and namespaces ----------------------------------------------------------------- */

int mode_mount(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        TRY(&o, "tmpfs", EPERM, mount("none", "/tmp", "tmpfs", 0, ""));
        TRY(&o, "remount-/-rw", EPERM, mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL));
        TRY(&o, "remount-usr-rw", EPERM, mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL));
        TRY(&o, "bind-workspace", EPERM, mount("/workspace", "/tmp", NULL, MS_BIND, NULL));
        TRY(&o, "proc", EPERM, mount("proc", "/tmp", "proc", 0, NULL));
        TRY(&o, "cgroup-v1", EPERM, mount("cgroup", "/tmp", "cgroup", 0, "rdma"));
        TRY(&o, "umount-proc", EPERM, umount2("/proc", MNT_DETACH));
        return finish(&o);
}

int mode_new_mount_api(int argc, char **argv) {
        outcome o = {0};
        char attr[32] = {0}; /* struct mount_attr, zeroed */

        (void) argc, (void) argv;
        close_if_open(TRY(&o, "fsopen", EPERM, syscall(SYS_fsopen, "tmpfs", 0)));
        close_if_open(TRY(&o, "fspick", EPERM, syscall(SYS_fspick, AT_FDCWD, "/", 0)));
        close_if_open(TRY(&o, "open_tree", EPERM,
                          syscall(SYS_open_tree, AT_FDCWD, "/usr", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
        TRY(&o, "move_mount", EPERM, syscall(SYS_move_mount, AT_FDCWD, "/workspace", AT_FDCWD, "/tmp", 0));
        close_if_open(TRY(&o, "fsmount", EPERM, syscall(SYS_fsmount, -1, 0, 0)));
        TRY(&o, "mount_setattr", EPERM, syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, attr, sizeof(attr)));
        return finish(&o);
}

int mode_chroot(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        /* the classic escape: chroot into a subdir, then walk up from the old cwd */
        if (TRY(&o, "chroot-tmp", EPERM, chroot("/tmp")) >= 0) {
                for (int i = 0; i < 64; i++)
                        if (chdir("..") < 0)
                                break;
                TRY(&o, "chroot-dot", EPERM, chroot("."));
        }
        return finish(&o);
}

int mode_pivot_root(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        TRY(&o, "pivot_root", EPERM, syscall(SYS_pivot_root, "/tmp", "/tmp"));
        TRY(&o, "pivot_root-dot", EPERM, syscall(SYS_pivot_root, ".", "."));
        return finish(&o);
}

static const struct {
        int flag;
        const char *name;
} ns_flags[] = {
        {CLONE_NEWUSER, "user"}, {CLONE_NEWNS, "mnt"},  {CLONE_NEWPID, "pid"},       {CLONE_NEWNET, "net"},
        {CLONE_NEWUTS, "uts"},   {CLONE_NEWIPC, "ipc"}, {CLONE_NEWCGROUP, "cgroup"}, {CLONE_NEWTIME, "time"},
};

int mode_unshare(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++) {
                char what[32];
                snprintf(what, sizeof(what), "unshare-%s", ns_flags[i].name);
                TRY(&o, what, EPERM, unshare(ns_flags[i].flag));
        }
        return finish(&o);
}

int mode_clone_ns(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++) {
                char what[32];
                long r;

                snprintf(what, sizeof(what), "clone-%s", ns_flags[i].name);
                errno = 0;
                r = syscall(SYS_clone, (unsigned long) ns_flags[i].flag | SIGCHLD, NULL, NULL, NULL, 0UL);
                if (r == 0)
                        syscall(SYS_exit_group, 0); /* the child of an escaped clone */
                if (r > 0)
                        waitpid((pid_t) r, NULL, 0);
                expect_fail(&o, what, r, errno, EPERM);
        }
        return finish(&o);
}

int mode_clone3(int argc, char **argv) {
        outcome o = {0};
        static const unsigned long long flags[] = {CLONE_NEWUSER, CLONE_NEWNS | CLONE_NEWPID, 0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
                struct clone_args args = {.flags = flags[i], .exit_signal = SIGCHLD};
                char what[40];
                long r;

                snprintf(what, sizeof(what), "clone3-flags-%#llx", flags[i]);
                errno = 0;
                r = syscall(SYS_clone3, &args, sizeof(args));
                if (r == 0)
                        syscall(SYS_exit_group, 0);
                if (r > 0)
                        waitpid((pid_t) r, NULL, 0);
                /* clone3 without namespace flags is no escape, but the policy says ENOSYS */
                if (r > 0 && flags[i] == 0) {
                        add(&o, "%s=ok(%ld)", what, r);
                        o.off_spec = true;
                        continue;
                }
                expect_fail(&o, what, r, errno, ENOSYS);
        }
        return finish(&o);
}

int mode_setns(int argc, char **argv) {
        static const char *const kinds[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time"};
        static const char *const owners[] = {"/proc/1/ns", "/proc/self/ns"};
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t w = 0; w < 2; w++)
                for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
                        char path[64];
                        int fd;

                        snprintf(path, sizeof(path), "%s/%s", owners[w], kinds[i]);
                        fd = open(path, O_RDONLY | O_CLOEXEC);
                        if (fd < 0) {
                                note(&o, path, errno);
                                continue;
                        }
                        TRY(&o, path, EPERM, setns(fd, 0));
                        close(fd);
                }
        return finish(&o);
}

/* ---- processes ------------------------------------------------------------------------------- */

static int traceme(void *arg) {
        (void) arg;
        return ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? 0 : errno;
}

int mode_ptrace(int argc, char **argv) {
        outcome o = {0};
        pid_t kid = spawn_sleeper();
        pid_t parent = getppid();
        int err;

        (void) argc, (void) argv;
        if (kid < 0)
                refuse("fork failed");
        if (TRY(&o, "attach-child", EPERM, ptrace(PTRACE_ATTACH, kid, NULL, NULL)) == 0)
                ptrace(PTRACE_DETACH, kid, NULL, NULL);
        if (TRY(&o, "seize-child", EPERM, ptrace(PTRACE_SEIZE, kid, NULL, NULL)) == 0)
                ptrace(PTRACE_DETACH, kid, NULL, NULL);
        if (parent > 0) {
                if (TRY(&o, "attach-parent", EPERM, ptrace(PTRACE_ATTACH, parent, NULL, NULL)) == 0)
                        ptrace(PTRACE_DETACH, parent, NULL, NULL);
        } else
                add(&o, "parent=outside-pidns");
        if (getpid() != 1)
                if (TRY(&o, "attach-pid1", EPERM, ptrace(PTRACE_ATTACH, 1, NULL, NULL)) == 0)
                        ptrace(PTRACE_DETACH, 1, NULL, NULL);
        err = in_child(traceme, NULL);
        expect_fail(&o, "traceme", err == 0 ? 0 : -1, err < 0 ? EIO : err, EPERM);
        kill_and_reap(kid);
        return finish(&o);
}

static volatile uint64_t secret_word = 0x68756c6cULL; /* something for a sibling to read */

int mode_process_vm(int argc, char **argv) {
        outcome o = {0};
        uint64_t word = 0;
        struct iovec local = {&word, sizeof(word)};
        struct iovec remote = {(void *) &secret_word, sizeof(secret_word)};
        pid_t kid = spawn_sleeper();

        (void) argc, (void) argv;
        if (kid < 0)
                refuse("fork failed");
        TRY(&o, "process_vm_readv", EPERM, syscall(SYS_process_vm_readv, kid, &local, 1UL, &remote, 1UL, 0UL));
        TRY(&o, "process_vm_writev", EPERM, syscall(SYS_process_vm_writev, kid, &local, 1UL, &remote, 1UL, 0UL));
        kill_and_reap(kid);
        return finish(&o);
}

/* The given host pids (the test shell, the host listener) are invisible and unsignalable. */
int mode_signal_host(int argc, char **argv) {
        outcome o = {0};
        uint64_t own_pidns, ino;

        if (argc < 1 || !ns_inode("/proc/self/ns/pid", &own_pidns))
                refuse("usage: signal-host PID...");
        for (int i = 0; i < argc; i++) {
                char path[64], what[64];
                uint64_t pid;

                if (!parse_u64(argv[i], &pid) || pid == 0 || pid > INT_MAX)
                        refuse("bad pid");
                snprintf(path, sizeof(path), "/proc/%" PRIu64 "/ns/pid", pid);
                if (ns_inode(path, &ino) && ino == own_pidns) {
                        /* the number happens to be a sandbox process: not a host process */
                        add(&o, "pid-%" PRIu64 "=sandbox-process", pid);
                        continue;
                }
                snprintf(what, sizeof(what), "visible-%" PRIu64, pid);
                snprintf(path, sizeof(path), "/proc/%" PRIu64, pid);
                TRY(&o, what, 0, access(path, F_OK));
                snprintf(what, sizeof(what), "kill0-%" PRIu64, pid);
                TRY(&o, what, ESRCH, kill((pid_t) pid, 0));
                snprintf(what, sizeof(what), "sigusr1-%" PRIu64, pid);
                if (i == 0)
                        TRY(&o, what, ESRCH, kill((pid_t) pid, SIGUSR1));
        }
        return finish(&o);
}

/* Every process we can see is in our pid namespace; lists them. */
int mode_proc_pids(int argc, char **argv) {
        outcome o = {0};
        uint64_t own, host = env_u64_or_zero("HULL_HOST_PIDNS"), ino;
        bool escaped = false;
        unsigned count = 0;
        char list[1024] = "";
        size_t used = 0;
        DIR *d;
        struct dirent *de;

        (void) argc, (void) argv;
        if (!ns_inode("/proc/self/ns/pid", &own))
                refuse("cannot stat own pid ns");
        d = opendir("/proc");
        if (!d)
                refuse("cannot open /proc");
        while ((de = readdir(d))) {
                char path[PATH_MAX];
                uint64_t pid;

                if (!parse_u64(de->d_name, &pid))
                        continue;
                count++;
                if (used + 24 < sizeof(list))
                        used += (size_t) snprintf(list + used, sizeof(list) - used, "%s%s", used ? "," : "",
                                                  de->d_name);
                snprintf(path, sizeof(path), "/proc/%s/ns/pid", de->d_name);
                if (!ns_inode(path, &ino))
                        continue;
                if (ino == host || ino != own) {
                        escaped = true;
                        add(&o, "pid-%s-in-foreign-pidns", de->d_name);
                }
        }
        closedir(d);
        add(&o, "count=%u pids=%s", count, list);
        return report(escaped, &o);
}

/* Fork until the pids limit stops us; hold the children for a while (so the harness can time
 * the host meanwhile), then kill them. argv: LIMIT [HOLD-SECONDS] */
int mode_fork_bomb(int argc, char **argv) {
        static pid_t kids[FORK_BOMB_MAX];
        uint64_t limit, hold = 0;
        unsigned n = 0;
        int err = 0;
        outcome o = {0};

        if (argc < 1 || !parse_u64(argv[0], &limit) || limit == 0 || limit > FORK_BOMB_MAX)
                refuse("usage: fork-bomb LIMIT [HOLD]");
        if (argc >= 2 && (!parse_u64(argv[1], &hold) || hold > 60))
                refuse("bad hold");
        for (;;) {
                pid_t pid;

                if (n >= limit) {
                        o.escaped = true;
                        break;
                }
                pid = fork();
                if (pid < 0) {
                        err = errno;
                        break;
                }
                if (pid == 0) {
                        for (;;)
                                pause();
                }
                kids[n++] = pid;
        }
        if (o.escaped)
                add(&o, "forks=%u reached-limit=%" PRIu64, n, limit);
        else {
                add(&o, "forks=%u fork=%s", n, errname(err));
                if (err != EAGAIN)
                        o.off_spec = true;
        }
        finish(&o);
        sleep((unsigned) hold);
        for (unsigned i = 0; i < n; i++)
                kill(kids[i], SIGKILL);
        for (unsigned i = 0; i < n; i++)
                waitpid(kids[i], NULL, 0);
        return o.escaped ? EXIT_ESCAPED : EXIT_CONTAINED;
}

/* Touch memory until the memory limit kills us. argv: LIMIT (e.g. 64M). */
int mode_memory_bomb(int argc, char **argv) {
        uint64_t limit, touched = 0;
        outcome o = {0};

        if (argc < 1 || !parse_size(argv[0], &limit) || limit == 0 || limit > (1ULL << 34))
                refuse("usage: memory-bomb LIMIT");
        while (touched < limit * MEMORY_BOMB_FACTOR) {
                void *p = mmap(NULL, MEMORY_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED) {
                        add(&o, "mmap=%s touched=%" PRIu64, errname(errno), touched);
                        o.off_spec = true;
                        return finish(&o);
                }
                memset(p, 0x5a, MEMORY_CHUNK);
                touched += MEMORY_CHUNK;
        }
        o.escaped = true;
        add(&o, "touched=%" PRIu64 " limit=%" PRIu64, touched, limit);
        return finish(&o);
}

/* Fill a tmpfs until it is full. argv: DIR LIMIT. ENOSPC at or below LIMIT is contained. */
int mode_fill_tmp(int argc, char **argv) {
        static char chunk[FILL_CHUNK];
        uint64_t limit, written = 0;
        outcome o = {0};
        char path[PATH_MAX];
        int fd, err = 0;

        if (argc < 2 || !parse_size(argv[1], &limit) || limit == 0 || limit > (1ULL << 34))
                refuse("usage: fill-tmp DIR LIMIT");
        snprintf(path, sizeof(path), "%s/hull-fill-%d", argv[0], getpid());
        fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0) {
                add(&o, "open=%s", errname(errno));
                o.off_spec = true;
                return finish(&o);
        }
        memset(chunk, 'x', sizeof(chunk));
        while (written <= limit + FILL_CHUNK) {
                ssize_t n = write(fd, chunk, sizeof(chunk));
                if (n < 0) {
                        err = errno;
                        break;
                }
                written += (uint64_t) n;
        }
        close(fd);
        unlink(path);
        if (err == 0 || written > limit) {
                o.escaped = true;
                add(&o, "written=%" PRIu64 " limit=%" PRIu64, written, limit);
                return finish(&o);
        }
        add(&o, "write=%s written=%" PRIu64, errname(err), written);
        if (err != ENOSPC)
                o.off_spec = true;
        return finish(&o);
}

/* Write BYTES of 'A' to stdout; the result line goes to stderr. */
int mode_flood(int argc, char **argv) {
        static char chunk[FLOOD_CHUNK];
        uint64_t total, done = 0;

        if (argc < 1 || !parse_size(argv[0], &total))
                refuse("usage: flood BYTES");
        memset(chunk, 'A', sizeof(chunk));
        while (done < total) {
                size_t n = total - done < sizeof(chunk) ? (size_t) (total - done) : sizeof(chunk);
                ssize_t w = write(STDOUT_FILENO, chunk, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                done += (uint64_t) w;
        }
        fprintf(stderr, "CONTAINED flooded=%" PRIu64 "\n", done);
        return EXIT_CONTAINED;
}

/* Leave a daemon behind: double fork, setsid, close stdio, sleep DELAY, then write
 * /workspace/orphan-marker-TOKEN. The harness checks that it never runs to the end. With HANG,
 * the command itself then sleeps HANG seconds (to be ended by the timeout instead). */
int mode_orphan(int argc, char **argv) {
        uint64_t delay, hang = 0;
        pid_t pid;

        if (argc < 2 || !parse_u64(argv[0], &delay) || delay > 60)
                refuse("usage: orphan DELAY TOKEN [HANG]");
        if (argc >= 3 && (!parse_u64(argv[2], &hang) || hang > 600))
                refuse("bad hang");
        pid = fork();
        if (pid < 0)
                refuse("fork failed");
        if (pid == 0) {
                setsid();
                if (fork() != 0)
                        _exit(0);
                /* the grandchild: detached, ignoring the polite signals */
                signal(SIGHUP, SIG_IGN);
                signal(SIGTERM, SIG_IGN);
                int devnull = open("/dev/null", O_RDWR);
                if (devnull >= 0) {
                        dup2(devnull, 0);
                        dup2(devnull, 1);
                        dup2(devnull, 2);
                }
                sleep((unsigned) delay);
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "/workspace/orphan-marker-%s", argv[1]);
                int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
                if (fd >= 0) {
                        (void) !write(fd, "survived\n", 9);
                        close(fd);
                }
                _exit(0);
        }
        waitpid(pid, NULL, 0);
        printf("CONTAINED orphan-started delay=%" PRIu64 "\n", delay);
        fflush(stdout);
        sleep((unsigned) hang);
        return EXIT_CONTAINED;
}
