/* probe-net.c: the probe's modes for the network, the controlling terminal, leaked fds and the cgroup. */
#include "probe.h"

/* ---- network --------------------------------------------------------------------------------- */

/* argv: ADDR PORT [ADDR PORT...]; every connection must fail. */
int mode_connect_tcp(int argc, char **argv) {
        outcome o = {0};

        if (argc < 2 || argc % 2 != 0)
                refuse("usage: connect-tcp ADDR PORT...");
        for (int i = 0; i + 1 < argc; i += 2) {
                struct sockaddr_in sin = {.sin_family = AF_INET};
                uint64_t port;
                char what[96];
                int fd;

                if (inet_pton(AF_INET, argv[i], &sin.sin_addr) != 1 || !parse_u64(argv[i + 1], &port) || port == 0 ||
                    port > 65535)
                        refuse("bad address");
                sin.sin_port = htons((uint16_t) port);
                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        note(&o, "socket", errno);
                        continue;
                }
                snprintf(what, sizeof(what), "%s:%s", argv[i], argv[i + 1]);
                TRY(&o, what, 0, connect(fd, (struct sockaddr *) &sin, sizeof(sin)));
                close(fd);
        }
        return finish(&o);
}

/* argv: NAME... ; "@x" is the abstract socket x, anything else a path. */
int mode_connect_unix(int argc, char **argv) {
        outcome o = {0};

        if (argc < 1)
                refuse("usage: connect-unix NAME...");
        for (int i = 0; i < argc; i++) {
                struct sockaddr_un sun = {.sun_family = AF_UNIX};
                size_t len = strlen(argv[i]);
                socklen_t alen;
                int fd;

                if (len == 0 || len >= sizeof(sun.sun_path))
                        refuse("bad socket name");
                memcpy(sun.sun_path, argv[i], len);
                if (argv[i][0] == '@')
                        sun.sun_path[0] = '\0';
                alen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len);
                fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        note(&o, "socket", errno);
                        continue;
                }
                TRY(&o, argv[i], 0, connect(fd, (struct sockaddr *) &sun, alen));
                close(fd);
        }
        return finish(&o);
}

/* Only lo exists: /proc/net/dev and /sys/class/net (when mounted). argv: host interfaces. */
int mode_netifs(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        outcome o = {0};
        bool escaped = false;
        const char *line;
        DIR *d;

        if (read_small("/proc/net/dev", buf, sizeof(buf)) < 0)
                refuse("cannot read /proc/net/dev");
        for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                char name[64];
                const char *colon = strchr(line, ':'), *nl = strchr(line, '\n');
                size_t n;

                if (!colon || (nl && colon > nl))
                        continue;
                while (*line == ' ')
                        line++;
                n = (size_t) (colon - line);
                if (n == 0 || n >= sizeof(name))
                        continue;
                memcpy(name, line, n);
                name[n] = '\0';
                add(&o, "proc:%s", name);
                if (strcmp(name, "lo") != 0)
                        escaped = true;
                for (int i = 0; i < argc; i++)
                        if (strcmp(name, argv[i]) == 0 && strcmp(name, "lo") != 0)
                                add(&o, "host-interface-%s-visible", name);
        }
        d = opendir("/sys/class/net");
        if (d) {
                struct dirent *de;
                while ((de = readdir(d))) {
                        if (de->d_name[0] == '.')
                                continue;
                        add(&o, "sys:%s", de->d_name);
                        if (strcmp(de->d_name, "lo") != 0)
                                escaped = true;
                }
                closedir(d);
        } else
                add(&o, "sys=%s", errname(errno));
        return report(escaped, &o);
}

/* The command has no controlling terminal: the terminal hull was started from (if any) must
 * not be reachable through /dev/tty, and stdio are not terminals. */
int mode_ctty(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        close_if_open(TRY(&o, "/dev/tty", 0, open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)));
        for (int fd = 0; fd <= 2; fd++) {
                char what[16];
                snprintf(what, sizeof(what), "isatty%d", fd);
                errno = 0;
                int tty = isatty(fd);
                expect_fail(&o, what, tty ? 0 : -1, errno, 0);
        }
        return finish(&o);
}

/* ---- leaks and cgroups ----------------------------------------------------------------------- */

/* No file descriptor beyond stdio leaks in; a leaked directory fd is a way out (runc
 * CVE-2024-21626). argv (optional): NAME SECRET, a file to open through a leaked directory fd. */
int mode_leaked_fds(int argc, char **argv) {
        outcome o = {0};
        bool escaped = false;
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;

        if (!d)
                refuse("cannot open /proc/self/fd");
        while ((de = readdir(d))) {
                uint64_t fd;
                char path[64], target[PATH_MAX];
                struct stat st;
                ssize_t n;

                if (!parse_u64(de->d_name, &fd) || fd <= 2 || (int) fd == dirfd(d))
                        continue;
                snprintf(path, sizeof(path), "/proc/self/fd/%" PRIu64, fd);
                n = readlink(path, target, sizeof(target) - 1);
                target[n < 0 ? 0 : n] = '\0';
                if (fstat((int) fd, &st) == 0 && S_ISDIR(st.st_mode)) {
                        escaped = true;
                        add(&o, "fd%s=DIR:%s", de->d_name, target);
                        if (argc >= 2) {
                                /* walk through it to a host file */
                                static char buf[SMALL_FILE_MAX];
                                int f = openat((int) fd, argv[0], O_RDONLY | O_CLOEXEC);
                                ssize_t got = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);
                                buf[got < 0 ? 0 : got] = '\0';
                                close_if_open(f);
                                add(&o, "openat(fd%s,%s)=%s", de->d_name, argv[0],
                                    f < 0                  ? errname(errno)
                                    : strstr(buf, argv[1]) ? "READ-SECRET"
                                                           : "opened");
                        }
                } else {
                        add(&o, "fd%s=%s", de->d_name, target);
                        o.off_spec = true;
                }
        }
        closedir(d);
        if (escaped)
                return report(true, &o);
        return finish(&o);
}

/* Move ourselves out of the sandbox's cgroup (and its limits), or make a cgroup. */
int mode_cgroup_escape(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        static const char *const procs[] = {
                "/sys/fs/cgroup/cgroup.procs",      "/sys/fs/cgroup/unified/cgroup.procs",
                "/sys/fs/cgroup/pids/cgroup.procs", "/sys/fs/cgroup/memory/cgroup.procs",
                "/sys/fs/cgroup/../cgroup.procs",
        };
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
                close_if_open(TRY(&o, procs[i], 0, open(procs[i], O_WRONLY | O_CLOEXEC)));
        if (TRY(&o, "mkdir-cgroup", 0, mkdir("/sys/fs/cgroup/hull-probe", 0755)) == 0)
                rmdir("/sys/fs/cgroup/hull-probe");
        if (read_small("/proc/self/cgroup", buf, sizeof(buf)) > 0) {
                for (char *p = buf; *p; p++)
                        if (*p == '\n')
                                *p = ';';
                add(&o, "cgroup=%s", buf);
        }
        return finish(&o);
}
