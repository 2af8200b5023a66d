/* runsc-launch.c: start a command (runsc) the way hull's kernel tier does, without hull: a
 * vfork-style child in its own process group, with a clean environment (PATH only), stdout and
 * stderr on pipes the parent reads to EOF, in a fresh cgroup v1 memory (512 MiB, swap included)
 * and pids (6656) cgroup it joins before execve; the parent waits, kills what is left in the
 * cgroup (runsc's ptrace stubs can outlive `runsc run` by a moment, as hull's teardown also
 * finds), then removes the cgroups.
 * Without cgroup v1 (memory and pids hierarchies) it runs without and says so on stderr.
 * Used by bench/kernel-tier-phases.sh as the row that separates what starting runsc this way
 * costs from what hull's own code costs.
 *
 *   runsc-launch PATH ARG...
 * Build: cc -O2 -Wall -Wextra -o build/runsc-launch bench/runsc-launch.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_file(const char *path, const char *value) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        int ok = write(fd, value, strlen(value)) == (ssize_t) strlen(value);
        close(fd);
        return ok ? 0 : -1;
}

/* The memory hierarchy's path of this process (v1: "N:memory:/PATH"), into buf. */
static int own_memory_cgroup(char *buf, size_t size) {
        char line[1024];
        FILE *f = fopen("/proc/self/cgroup", "re");
        int r = -1;
        while (f && fgets(line, sizeof(line), f))
                if (strstr(line, ":memory:/")) {
                        line[strcspn(line, "\n")] = '\0';
                        snprintf(buf, size, "%s", strstr(line, ":memory:/") + strlen(":memory:"));
                        r = 0;
                }
        if (f)
                fclose(f);
        return r;
}

/* SIGKILL what is left in the pids cgroup and remove both cgroups, retrying for ~2 s. */
static int remove_cgroups(const char *pids, const char *mem) {
        char procs[1100], buf[4096];
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", pids);
        for (int round = 0; round < 200; round++) {
                FILE *f = fopen(procs, "re");
                size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
                if (f)
                        fclose(f);
                buf[n] = '\0';
                for (char *p = buf, *end; *p; p = end) {
                        long pid = strtol(p, &end, 10);
                        if (end == p)
                                break;
                        if (pid > 0)
                                kill((pid_t) pid, SIGKILL);
                }
                if (rmdir(pids) == 0 || errno == ENOENT)
                        return rmdir(mem) == 0 || errno == ENOENT ? 0 : -1;
                usleep(round < 8 ? 1000 : 10000); /* as hull's teardown */
        }
        return -1;
}

int main(int argc, char **argv) {
        static char *const env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        char own[512], mem[1024] = "", pids[1024] = "", mem_tasks[1100], pids_tasks[1100], path[1100];
        int outp[2], errp[2], status = 0;
        if (argc < 2) {
                fprintf(stderr, "usage: runsc-launch PATH ARG...\n");
                return 2;
        }
        if (own_memory_cgroup(own, sizeof(own)) == 0 && access("/sys/fs/cgroup/pids", F_OK) == 0) {
                snprintf(mem, sizeof(mem), "/sys/fs/cgroup/memory%s/runsc-launch-%d", strcmp(own, "/") ? own : "",
                         (int) getpid());
                snprintf(pids, sizeof(pids), "/sys/fs/cgroup/pids/runsc-launch-%d", (int) getpid());
                snprintf(mem_tasks, sizeof(mem_tasks), "%s/tasks", mem);
                snprintf(pids_tasks, sizeof(pids_tasks), "%s/tasks", pids);
                if (mkdir(mem, 0755) < 0 || mkdir(pids, 0755) < 0) {
                        perror("runsc-launch: mkdir cgroup");
                        return 1;
                }
                snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", mem);
                int r = write_file(path, "536870912");
                snprintf(path, sizeof(path), "%s/memory.memsw.limit_in_bytes", mem);
                r |= write_file(path, "536870912");
                snprintf(path, sizeof(path), "%s/pids.max", pids);
                if ((r | write_file(path, "6656")) < 0)
                        fprintf(stderr, "runsc-launch: a cgroup limit could not be set\n");
        } else
                fprintf(stderr, "runsc-launch: no cgroup v1 memory and pids: running without cgroups\n");
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
                return 1;
        pid_t pid = vfork();
        if (pid == 0) {
                if (mem[0] && (write_file(mem_tasks, "0") < 0 || write_file(pids_tasks, "0") < 0))
                        _exit(126);
                if (dup2(outp[1], 1) < 0 || dup2(errp[1], 2) < 0)
                        _exit(126);
                setpgid(0, 0);
                execve(argv[1], argv + 1, env);
                _exit(127);
        }
        close(outp[1]);
        close(errp[1]);
        struct pollfd p[2] = {{.fd = outp[0], .events = POLLIN}, {.fd = errp[0], .events = POLLIN}};
        for (int open_fds = 2; pid > 0 && open_fds > 0;) {
                char sink[4096];
                if (poll(p, 2, -1) < 0)
                        continue;
                for (int i = 0; i < 2; i++)
                        if (p[i].fd >= 0 && p[i].revents && read(p[i].fd, sink, sizeof(sink)) <= 0) {
                                close(p[i].fd);
                                p[i].fd = -1;
                                open_fds--;
                        }
        }
        if (pid > 0)
                waitpid(pid, &status, 0);
        if (mem[0] && remove_cgroups(pids, mem) < 0) {
                perror("runsc-launch: cannot remove its cgroups");
                return 1;
        }
        return pid < 0 ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
