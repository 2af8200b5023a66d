/* probe-host.c: the probe's modes for host files a sandbox must not see, and writes to the places it holds read-only.
 */
#include "probe.h"

/* ---- host files ------------------------------------------------------------------------------ */

/* Host files outside the binds: /root, /etc/shadow and friends. */
int mode_read_host_files(int argc, char **argv) {
        static const char *const files[] = {
                "/etc/shadow",
                "/etc/gshadow",
                "/etc/sudoers",
                "/etc/ssh/ssh_host_ed25519_key",
                "/root/.bashrc",
                "/root/.profile",
                "/root/.ssh/authorized_keys",
                "/var/log/syslog",
                "/home",
        };
        outcome o = {0};
        DIR *d;

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
                close_if_open(TRY(&o, files[i], 0, open(files[i], O_RDONLY | O_CLOEXEC)));

        d = opendir("/root");
        if (d) {
                struct dirent *de;
                unsigned n = 0;
                while ((de = readdir(d)))
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                n++;
                closedir(d);
                if (n > 0) {
                        o.escaped = true;
                        add(&o, "/root-listing=%u-entries", n);
                } else
                        add(&o, "/root-listing=empty");
        } else
                add(&o, "/root-listing=%s", errname(errno));
        return finish(&o);
}

/* A host canary file (path and secret from the harness), by every path trick we know. */
int mode_host_canary(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        static const char *const prefixes[] = {
                "",
                "/proc/1/root",
                "/proc/self/root",
                "/proc/self/cwd/../../../../../../../..",
                "../../../../../../../../../..",
                "/workspace/../../../..",
                "/proc/1/cwd/../../../..",
                "/proc/self/root/proc/1/root",
                "/dev/fd/../../../..",
                "/oldroot",
                "/proc/1/root/oldroot",
        };
        outcome o = {0};

        if (argc < 2)
                refuse("usage: host-canary PATH SECRET");
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
                char path[PATH_MAX];
                ssize_t n;

                snprintf(path, sizeof(path), "%s%s", prefixes[i], argv[0]);
                n = read_small(path, buf, sizeof(buf));
                if (n < 0) {
                        add(&o, "%s=%s", path, errname((int) -n));
                        continue;
                }
                if (strstr(buf, argv[1])) {
                        o.escaped = true;
                        add(&o, "%s=READ-SECRET", path);
                } else
                        add(&o, "%s=opened-no-secret", path);
        }
        return finish(&o);
}

/* /proc/self/root and /proc/1/root must be the sandbox root, not a door to the host's. */
int mode_proc_root(int argc, char **argv) {
        static const char *const links[] = {"/proc/self/root", "/proc/1/root", "/proc/self/cwd"};
        static const char *const host_only[] = {
                "/proc/1/root/etc/shadow",
                "/proc/self/root/etc/shadow",
                "/proc/1/root/root",
                "/proc/1/root/var/log",
                "/proc/1/root/boot",
                "/proc/self/root/../../etc/shadow",
                "/proc/1/root/../../../etc/shadow",
                "/proc/1/cwd/../../etc/shadow",
                "/oldroot/etc/shadow",
                "/oldroot/root",
                "/proc/1/root/oldroot/etc/shadow",
        };
        outcome o = {0};
        struct stat a, b;

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
                char target[PATH_MAX];
                ssize_t n = readlink(links[i], target, sizeof(target) - 1);
                if (n < 0) {
                        note(&o, links[i], errno);
                        continue;
                }
                target[n] = '\0';
                add(&o, "%s->%s", links[i], target);
                if (i < 2 && strcmp(target, "/") != 0)
                        o.escaped = true;
        }
        for (size_t i = 0; i < sizeof(host_only) / sizeof(host_only[0]); i++)
                close_if_open(TRY(&o, host_only[i], 0, open(host_only[i], O_RDONLY | O_CLOEXEC)));

        /* the root of pid 1 and our own root are the same directory */
        if (stat("/proc/1/root/usr", &a) == 0 && stat("/usr", &b) == 0 &&
            (a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
                o.escaped = true;
                add(&o, "/proc/1/root/usr=differs-from-/usr");
        }
        return finish(&o);
}

/* Read /workspace/NAME (a link the harness planted pointing at a host file); the host secret
 * must not come through. Then plant our own links and read and write through them. */
int mode_workdir_links(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        outcome o = {0};

        if (argc < 3)
                refuse("usage: workdir-links LINK HOST-FILE SECRET");
        const char *link = argv[0], *host_file = argv[1], *secret = argv[2];
        char ours[PATH_MAX];
        ssize_t n;

        n = read_small(link, buf, sizeof(buf));
        if (n >= 0 && strstr(buf, secret)) {
                o.escaped = true;
                add(&o, "%s=READ-SECRET", link);
        } else
                add(&o, "%s=%s", link, n < 0 ? errname((int) -n) : "opened-no-secret");

        snprintf(ours, sizeof(ours), "/workspace/probe-link-%d", getpid());
        if (symlink(host_file, ours) < 0)
                note(&o, "symlink", errno);
        n = read_small(ours, buf, sizeof(buf));
        if (n >= 0 && strstr(buf, secret)) {
                o.escaped = true;
                add(&o, "own-link=READ-SECRET");
        } else
                add(&o, "own-link=%s", n < 0 ? errname((int) -n) : "opened-no-secret");
        /* writing through the links must not reach the host file (the harness checks it) */
        close_if_open(TRY(&o, "write-through-planted", 0, open(link, O_WRONLY | O_APPEND | O_CLOEXEC)));
        close_if_open(TRY(&o, "write-through-own", 0, open(ours, O_WRONLY | O_APPEND | O_CLOEXEC)));
        unlink(ours);
        return finish(&o);
}

/* /proc/1 is the sandbox's first process, never the host's init; its environ is ours to read at
 * most. argv[0]: the host pid 1's command line (first word). */
int mode_proc1(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        outcome o = {0};
        uint64_t ino, host = env_u64_or_zero("HULL_HOST_PIDNS");
        bool escaped = false;
        ssize_t n;

        n = read_small("/proc/1/cmdline", buf, sizeof(buf));
        add(&o, "pid1=%s", n > 0 ? buf : "?");
        if (n > 0 && argc >= 1 && strcmp(buf, argv[0]) == 0) {
                escaped = true;
                add(&o, "is-host-init");
        }
        if (ns_inode("/proc/1/ns/pid", &ino) && ino == host) {
                escaped = true;
                add(&o, "pid1-in-host-pidns");
        }
        n = read_small("/proc/1/environ", buf, sizeof(buf));
        add(&o, "environ=%s", n < 0 ? errname((int) -n) : "readable(sandbox-own)");
        return report(escaped, &o);
}

/* Pid 1 (hull's init inside the sandbox) must be no softer target than we are: if its memory is
 * writable through /proc/1/mem, it must hold no capability and run under the same seccomp filter
 * and no_new_privs, or hijacking it would shed those layers. */
int mode_pid1_hijack(int argc, char **argv) {
        static char status[SMALL_FILE_MAX];
        char v[64];
        outcome o = {0};
        bool escaped = false, writable;
        uint64_t capeff = 1, capbnd = 1, nnp = 0, mode = 0;
        int fd;

        (void) argc, (void) argv;
        if (getpid() == 1) {
                add(&o, "probe-is-pid1");
                return report(false, &o);
        }
        fd = open("/proc/1/mem", O_RDWR | O_CLOEXEC);
        writable = fd >= 0;
        add(&o, "mem-rw=%s", writable ? "yes" : errname(errno));
        close_if_open(fd);
        if (read_small("/proc/1/status", status, sizeof(status)) < 0) {
                add(&o, "status=%s", errname(errno));
                return report(writable, &o);
        }
        status_field(status, "Name", v, sizeof(v));
        add(&o, "name=%s", v);
        if (!status_hex(status, "CapEff", &capeff) || !status_hex(status, "CapBnd", &capbnd) ||
            !status_u64(status, "NoNewPrivs", &nnp) || !status_u64(status, "Seccomp", &mode))
                add(&o, "status-unparsed");
        add(&o, "CapEff=%" PRIx64 " CapBnd=%" PRIx64 " NoNewPrivs=%" PRIu64 " Seccomp=%" PRIu64, capeff, capbnd, nnp,
            mode);
        if (writable && (capeff != 0 || capbnd != 0 || nnp != 1 || mode != 2))
                escaped = true;
        return report(escaped, &o);
}

/* No process we can see carries the host environment marker (host environ leaked or visible). */
int mode_environ_scan(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        outcome o = {0};
        bool escaped = false;
        unsigned scanned = 0;
        DIR *d;
        struct dirent *de;

        if (argc < 1)
                refuse("usage: environ-scan TOKEN");
        d = opendir("/proc");
        if (!d)
                refuse("cannot open /proc");
        while ((de = readdir(d))) {
                char path[PATH_MAX];
                ssize_t n;
                uint64_t pid;

                if (!parse_u64(de->d_name, &pid))
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/environ", de->d_name);
                n = read_small(path, buf, sizeof(buf));
                if (n < 0)
                        continue;
                scanned++;
                for (ssize_t i = 0; i < n; i++)
                        if (buf[i] == '\0')
                                buf[i] = '\n';
                if (strstr(buf, argv[0])) {
                        escaped = true;
                        add(&o, "token-in-pid-%s", de->d_name);
                }
        }
        closedir(d);
        add(&o, "scanned=%u", scanned);
        return report(escaped, &o);
}

/* ---- writes to read-only places -------------------------------------------------------------- */

int mode_write_usr(int argc, char **argv) {
        outcome o = {0};
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "/usr/%s", argc >= 1 ? argv[0] : "hull-probe-canary");
        if (TRY(&o, "create-in-usr", 0, open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644)) >= 0)
                unlink(path);
        close_if_open(TRY(&o, "open-usr-bin-true-rw", 0, open("/usr/bin/true", O_WRONLY | O_CLOEXEC)));
        if (TRY(&o, "mkdir-usr-lib", 0, mkdir("/usr/lib/hull-probe-dir", 0755)) >= 0)
                rmdir("/usr/lib/hull-probe-dir");
        /* chmod to the mode it already has: harmless if it ever went through */
        TRY(&o, "chmod-usr-bin-true", 0, chmod("/usr/bin/true", 0755));
        if (TRY(&o, "symlink-in-usr-bin", 0, symlink("/workspace/probe", "/usr/bin/hull-probe-link")) >= 0)
                unlink("/usr/bin/hull-probe-link");
        return finish(&o);
}

int mode_write_root_etc(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        if (TRY(&o, "create-/", 0, open("/hull-probe", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644)) >= 0)
                unlink("/hull-probe");
        if (TRY(&o, "create-/etc", 0, open("/etc/hull-probe", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644)) >= 0)
                unlink("/etc/hull-probe");
        close_if_open(TRY(&o, "open-/etc/passwd-rw", 0, open("/etc/passwd", O_WRONLY | O_APPEND | O_CLOEXEC)));
        close_if_open(TRY(&o, "open-/etc/hosts-rw", 0, open("/etc/hosts", O_WRONLY | O_APPEND | O_CLOEXEC)));
        if (TRY(&o, "mkdir-/", 0, mkdir("/hull-probe-dir", 0755)) >= 0)
                rmdir("/hull-probe-dir");
        if (TRY(&o, "rename-/etc/hosts", 0, rename("/etc/hosts", "/etc/hosts.probe")) >= 0)
                rename("/etc/hosts.probe", "/etc/hosts");
        return finish(&o);
}

/* /proc/sys and other kernel knobs: opened for writing, never written. */
int mode_proc_sys(int argc, char **argv) {
        static const char *const knobs[] = {
                "/proc/sys/kernel/hostname", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
                "/proc/sys/vm/drop_caches",  "/proc/sys/net/ipv4/ip_forward", "/proc/sysrq-trigger",
                "/sys/kernel/uevent_helper",
        };
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
                close_if_open(TRY(&o, knobs[i], 0, open(knobs[i], O_WRONLY | O_CLOEXEC)));
        return finish(&o);
}

int mode_mknod(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        if (TRY(&o, "chr-1:1-in-tmp", 0, mknod("/tmp/hull-mem", S_IFCHR | 0600, makedev(1, 1))) >= 0)
                unlink("/tmp/hull-mem");
        if (TRY(&o, "blk-8:0-in-workspace", 0, mknod("/workspace/hull-sda", S_IFBLK | 0600, makedev(8, 0))) >= 0)
                unlink("/workspace/hull-sda");
        if (TRY(&o, "chr-1:3-in-dev", 0, mknod("/dev/hull-null", S_IFCHR | 0666, makedev(1, 3))) >= 0)
                unlink("/dev/hull-null");
        return finish(&o);
}

/* Device nodes the sandbox must not have. */
int mode_dev_nodes(int argc, char **argv) {
        static const char *const nodes[] = {
                "/dev/mem", "/dev/kmem",        "/dev/port",         "/dev/kmsg", "/dev/sda",
                "/dev/vda", "/dev/nvme0n1",     "/dev/loop-control", "/dev/fuse", "/dev/net/tun",
                "/dev/kvm", "/dev/userfaultfd", "/dev/cpu/0/msr",
        };
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++)
                close_if_open(TRY(&o, nodes[i], 0, open(nodes[i], O_RDONLY | O_CLOEXEC)));
        return finish(&o);
}
