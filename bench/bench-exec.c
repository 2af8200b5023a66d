/* bench-exec.c: start-up benchmark driver for `hull exec` and its reference launchers.
 *
 * Timing mode (default): run several commands INTERLEAVED, round by round (the order shuffled
 * every round), after a few warm-up rounds. Each run is timed with CLOCK_MONOTONIC around
 * posix_spawn() + wait4(), with stdin, stdout and stderr on /dev/null and no other fd (the ones the
 * driver inherited, say a shell's stray fd 10, are made close-on-exec first: a command such as
 * runsc passes them on to its own children, so a timed command that closes them, as hull does,
 * would not be compared on equal terms); every run must exit 0.
 * --gap MS sleeps (untimed) before every run, to time lone starts from an idle machine.
 * Prints per command n, min, median, p95 (nearest rank), max in ms, the median user, system and
 * total CPU of the whole process tree (the driver is a subreaper, so descendants a launcher leaves
 * behind, such as bwrap's pid 1, are reaped and counted), and the ratios of the medians (and of
 * the minimums) of wall time and of CPU to a baseline row.
 *
 * Memory mode (--mem): start each command (e.g. one that runs `sleep 2`), wait --settle
 * seconds, then read Pss/Rss from /proc/PID/smaps_rollup of the spawned launcher and of each of
 * its descendants (found through /proc/PID/task/PID/children). Descendants whose comm is the
 * payload's (--payload, default "sleep") are reported apart; every other one is a helper of
 * the launcher (hull's sandbox init, bwrap's pid 1, unshare's forked child before it execs).
 *
 *   bench-exec [OPTIONS] -- LABEL [--fd=N:PATH]... ARGV... [:: LABEL ... ]...
 *
 * Each command is a shell-free argv after its label; commands are separated by a "::" token.
 * --fd=N:PATH opens PATH read-only on fd N in the child at every spawn (a fresh offset each
 * time), e.g. for `bwrap --seccomp N`. A bare argv[0] is looked up in PATH once, up front.
 *
 * Build: cc -O2 -Wall -o build/bench-exec bench/bench-exec.c -lm (bench/run.sh does it). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_CMDS 32
#define MAX_FDS 8
#define MAX_PROCS 64

typedef struct fd_open {
        int fd;
        const char *path;
} fd_open;

typedef struct cmd {
        const char *label;
        char **argv;
        char *path; /* argv[0] resolved */
        fd_open fds[MAX_FDS];
        size_t n_fds;
        int64_t *wall_ns, *user_ns, *sys_ns, *cpu_ns;
        size_t n;
} cmd;

static cmd cmds[MAX_CMDS];
static size_t n_cmds;

_Noreturn static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...) {
        va_list ap;
        fflush(stdout);
        fputs("bench-exec: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(2);
}

static void *xcalloc(size_t n, size_t size) {
        void *p = calloc(n ? n : 1, size);
        if (!p)
                die("out of memory");
        return p;
}

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t tv_ns(struct timeval tv) {
        return (int64_t) tv.tv_sec * 1000000000LL + (int64_t) tv.tv_usec * 1000LL;
}

/* xorshift64*: a small seeded generator, so an order can be reproduced with -s. */
static uint64_t rng_state;
static uint64_t rng_next(void) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 2685821657736338717ULL;
}

static char *resolve(const char *file) {
        if (strchr(file, '/')) {
                if (access(file, X_OK) < 0)
                        die("cannot execute %s: %s", file, strerror(errno));
                return strdup(file);
        }
        const char *path = getenv("PATH");
        if (!path)
                path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *p = path;;) {
                const char *end = strchrnul(p, ':');
                char buf[4096];
                int len = snprintf(buf, sizeof(buf), "%.*s/%s", (int) (end - p), end == p ? "." : p, file);
                if (len > 0 && (size_t) len < sizeof(buf) && access(buf, X_OK) == 0)
                        return strdup(buf);
                if (!*end)
                        break;
                p = end + 1;
        }
        die("%s: not found in PATH", file);
}

/* Parse "LABEL [--fd=N:PATH]... ARGV... [:: ...]" from argv[i..argc). */
static void parse_cmds(int argc, char **argv, int i, size_t rounds) {
        while (i < argc) {
                if (n_cmds >= MAX_CMDS)
                        die("too many commands (at most %d)", MAX_CMDS);
                cmd *c = &cmds[n_cmds++];
                if (strcmp(argv[i], "::") == 0)
                        die("empty command before '::'");
                c->label = argv[i++];
                while (i < argc && strncmp(argv[i], "--fd=", 5) == 0) {
                        if (c->n_fds >= MAX_FDS)
                                die("%s: too many --fd", c->label);
                        char *colon = strchr(argv[i] + 5, ':');
                        char *end;
                        long fd = strtol(argv[i] + 5, &end, 10);
                        if (!colon || end != colon || fd < 3 || fd > 1000)
                                die("%s: --fd wants N:PATH with N >= 3, got '%s'", c->label, argv[i]);
                        c->fds[c->n_fds++] = (fd_open){(int) fd, colon + 1};
                        i++;
                }
                int start = i;
                while (i < argc && strcmp(argv[i], "::") != 0)
                        i++;
                if (i == start)
                        die("%s: no command after the label", c->label);
                c->argv = xcalloc((size_t) (i - start) + 1, sizeof(char *));
                for (int k = start; k < i; k++)
                        c->argv[k - start] = argv[k];
                c->path = resolve(c->argv[0]);
                c->wall_ns = xcalloc(rounds, sizeof(int64_t));
                c->user_ns = xcalloc(rounds, sizeof(int64_t));
                c->sys_ns = xcalloc(rounds, sizeof(int64_t));
                c->cpu_ns = xcalloc(rounds, sizeof(int64_t));
                if (i < argc)
                        i++; /* "::" */
        }
        if (n_cmds == 0)
                die("no commands given (see the comment at the top of bench/bench-exec.c)");
}

static pid_t spawn(const cmd *c, bool quiet) {
        posix_spawn_file_actions_t fa;
        pid_t pid;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        if (quiet) {
                posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
                posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        }
        for (size_t k = 0; k < c->n_fds; k++)
                posix_spawn_file_actions_addopen(&fa, c->fds[k].fd, c->fds[k].path, O_RDONLY, 0);
        int r = posix_spawn(&pid, c->path, &fa, NULL, c->argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                die("%s: posix_spawn %s: %s", c->label, c->path, strerror(r));
        return pid;
}

static void describe_status(int st, char *buf, size_t size) {
        if (WIFEXITED(st))
                snprintf(buf, size, "exit status %d", WEXITSTATUS(st));
        else if (WIFSIGNALED(st))
                snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
        else
                snprintf(buf, size, "wait status 0x%x", st);
}

static int wait_child(pid_t pid, struct rusage *ru) {
        int st;
        while (wait4(pid, &st, 0, ru) < 0)
                if (errno != EINTR)
                        die("wait4: %s", strerror(errno));
        return st;
}

/* A failed run aborts the benchmark; rerun it once with stderr visible, to show why. */
_Noreturn static void fail_run(const cmd *c, int st, size_t round, bool warmup) {
        char what[96];
        describe_status(st, what, sizeof(what));
        fprintf(stderr, "bench-exec: %s: %s in %s round %zu; rerunning once with stderr shown:\n", c->label, what,
                warmup ? "warm-up" : "timed", round + 1);
        struct rusage ru;
        int st2 = wait_child(spawn(c, false), &ru);
        describe_status(st2, what, sizeof(what));
        die("%s: aborted (the rerun ended with %s)", c->label, what);
}

/* Reap what the run left to us (we are a subreaper in timing mode): bwrap's outer process exits
 * without reaping its pid 1, which then comes to us. Their CPU is the run's too. Untimed: the
 * run's wall time ended when the spawned process did. */
static void reap_orphans(int64_t *user_ns, int64_t *sys_ns) {
        struct rusage ru;
        int st;
        for (;;) {
                pid_t p = wait4(-1, &st, 0, &ru);
                if (p < 0 && errno == EINTR)
                        continue;
                if (p < 0)
                        return; /* ECHILD: nothing left */
                *user_ns += tv_ns(ru.ru_utime);
                *sys_ns += tv_ns(ru.ru_stime);
        }
}

static void run_once(cmd *c, size_t round, bool record) {
        struct rusage ru;
        int64_t t0 = now_ns();
        pid_t pid = spawn(c, true);
        int st = wait_child(pid, &ru);
        int64_t t1 = now_ns();
        int64_t user = tv_ns(ru.ru_utime), sys = tv_ns(ru.ru_stime);
        reap_orphans(&user, &sys);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fail_run(c, st, round, !record);
        if (record) {
                c->wall_ns[c->n] = t1 - t0;
                c->user_ns[c->n] = user;
                c->sys_ns[c->n] = sys;
                c->cpu_ns[c->n] = user + sys;
                c->n++;
        }
}

static int cmp_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return x < y ? -1 : x > y;
}

typedef struct stats {
        double min, median, p95, max, mean;
} stats;

static stats compute(int64_t *v, size_t n) {
        stats s = {0};
        if (n == 0)
                return s;
        int64_t *t = xcalloc(n, sizeof(int64_t));
        memcpy(t, v, n * sizeof(int64_t));
        qsort(t, n, sizeof(int64_t), cmp_i64);
        double sum = 0;
        for (size_t i = 0; i < n; i++)
                sum += (double) t[i];
        size_t rank = (size_t) ceil(0.95 * (double) n); /* nearest rank, 1-based */
        s.min = (double) t[0] / 1e6;
        s.median = (n % 2 ? (double) t[n / 2] : ((double) t[n / 2 - 1] + (double) t[n / 2]) / 2.0) / 1e6;
        s.p95 = (double) t[(rank ? rank : 1) - 1] / 1e6;
        s.max = (double) t[n - 1] / 1e6;
        s.mean = sum / (double) n / 1e6;
        free(t);
        return s;
}

static void print_loadavg(const char *when) {
        char buf[128] = "";
        FILE *f = fopen("/proc/loadavg", "re");
        if (f) {
                if (!fgets(buf, sizeof(buf), f))
                        buf[0] = '\0';
                fclose(f);
        }
        buf[strcspn(buf, "\n")] = '\0';
        printf("# loadavg %s: %s\n", when, buf);
}

static void print_cmdline(const cmd *c) {
        printf("#   %s:", c->label);
        for (size_t k = 0; k < c->n_fds; k++)
                printf(" [fd %d < %s]", c->fds[k].fd, c->fds[k].path);
        for (char **a = c->argv; *a; a++)
                printf(" %s", *a);
        putchar('\n');
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

/* The rounds are interleaved, so round k of every row ran within moments of each other: the
 * ratio of each round's pair cancels the load's drift between rounds. Prints, per row, the
 * median of the per-round ratios of wall time and of CPU to the baseline, with a 95 %
 * interval of that median (order statistics, n/2 -+ 0.98 sqrt(n)). */
static void paired(const cmd *base, int w) {
        printf("\n# paired by round (the median of the per-round ratios to %s, its 95 %% interval):\n", base->label);
        for (size_t i = 0; i < n_cmds; i++) {
                const cmd *c = &cmds[i];
                size_t n = c->n < base->n ? c->n : base->n;
                if (c == base || n == 0)
                        continue;
                double *rw = xcalloc(n, sizeof(double)), *rc = xcalloc(n, sizeof(double));
                for (size_t k = 0; k < n; k++) {
                        rw[k] = base->wall_ns[k] > 0 ? (double) c->wall_ns[k] / (double) base->wall_ns[k] : 0.0;
                        rc[k] = base->cpu_ns[k] > 0 ? (double) c->cpu_ns[k] / (double) base->cpu_ns[k] : 0.0;
                }
                qsort(rw, n, sizeof(double), cmp_double);
                qsort(rc, n, sizeof(double), cmp_double);
                double half = 0.98 * sqrt((double) n), mid = (double) n / 2.0;
                size_t lo = mid - half > 0 ? (size_t) floor(mid - half) : 0;
                size_t hi = (size_t) ceil(mid + half);
                if (hi >= n)
                        hi = n - 1;
                printf("#   %-*s wall %.3f [%.3f, %.3f]  cpu %.3f [%.3f, %.3f]\n", w, c->label, rw[n / 2], rw[lo],
                       rw[hi], rc[n / 2], rc[lo], rc[hi]);
                free(rw);
                free(rc);
        }
}

static size_t label_width(void) {
        size_t w = 7;
        for (size_t i = 0; i < n_cmds; i++)
                if (strlen(cmds[i].label) > w)
                        w = strlen(cmds[i].label);
        return w;
}

static void timing(size_t rounds, size_t warmup, bool shuffle, const char *baseline, const char *raw_path,
                   long gap_ms) {
        struct timespec gap = {gap_ms / 1000, (gap_ms % 1000) * 1000000L};
        size_t order[MAX_CMDS];
        const cmd *base = NULL;
        if (baseline) {
                for (size_t i = 0; i < n_cmds; i++)
                        if (strcmp(cmds[i].label, baseline) == 0)
                                base = &cmds[i];
                if (!base)
                        die("baseline '%s' is not one of the labels", baseline);
        }
        for (size_t i = 0; i < n_cmds; i++)
                order[i] = i;

        print_loadavg("before");
        for (size_t r = 0; r < warmup + rounds; r++) {
                if (shuffle)
                        for (size_t i = n_cmds - 1; i > 0; i--) {
                                size_t j = (size_t) (rng_next() % (i + 1));
                                size_t t = order[i];
                                order[i] = order[j];
                                order[j] = t;
                        }
                for (size_t i = 0; i < n_cmds; i++) {
                        if (gap_ms > 0)
                                nanosleep(&gap, NULL);
                        run_once(&cmds[order[i]], r < warmup ? r : r - warmup, r >= warmup);
                }
        }
        print_loadavg("after");

        if (raw_path) {
                FILE *f = fopen(raw_path, "we");
                if (!f)
                        die("cannot write %s: %s", raw_path, strerror(errno));
                fprintf(f, "label,run,wall_ns,user_ns,sys_ns\n");
                for (size_t i = 0; i < n_cmds; i++)
                        for (size_t k = 0; k < cmds[i].n; k++)
                                fprintf(f, "\"%s\",%zu,%" PRId64 ",%" PRId64 ",%" PRId64 "\n", cmds[i].label, k,
                                        cmds[i].wall_ns[k], cmds[i].user_ns[k], cmds[i].sys_ns[k]);
                fclose(f);
        }

        stats bs = base ? compute(base->wall_ns, base->n) : (stats){0};
        stats bc = base ? compute(base->cpu_ns, base->n) : (stats){0};
        int w = (int) label_width();
        printf("\n| %-*s | %4s | %7s | %7s | %7s | %7s | %8s | %8s | %8s | %8s | %8s | %8s |\n", w, "command", "n",
               "min", "median", "p95", "max", "cpu usr", "cpu sys", "cpu", base ? "med/base" : "",
               base ? "min/base" : "", base ? "cpu/base" : "");
        printf("|-");
        for (int k = 0; k < w; k++)
                putchar('-');
        printf("-|-----:|--------:|--------:|--------:|--------:|---------:|---------:|---------:|---------:|---------:"
               "|"
               "---------:|\n");
        for (size_t i = 0; i < n_cmds; i++) {
                cmd *c = &cmds[i];
                stats s = compute(c->wall_ns, c->n);
                stats u = compute(c->user_ns, c->n), y = compute(c->sys_ns, c->n), t = compute(c->cpu_ns, c->n);
                printf("| %-*s | %4zu | %7.2f | %7.2f | %7.2f | %7.2f | %8.2f | %8.2f | %8.2f |", w, c->label, c->n,
                       s.min, s.median, s.p95, s.max, u.median, y.median, t.median);
                if (base)
                        printf(" %8.2f | %8.2f | %8.2f |\n", s.median / bs.median, s.min / bs.min,
                               bc.median > 0 ? t.median / bc.median : 0.0);
                else
                        printf(" %8s | %8s | %8s |\n", "", "", "");
        }
        if (base)
                paired(base, w);
        printf("\n# times in ms; min/median/p95 (nearest rank)/max of wall time from posix_spawn to wait4;\n"
               "# cpu usr/sys/cpu: median user, system and total CPU of the spawned process and every\n"
               "#   descendant (the driver is a subreaper: orphans such as bwrap's pid 1 are reaped and counted);\n"
               "# med/base, min/base, cpu/base: ratio of this row's median (minimum) wall time, and median CPU,\n"
               "#   to the baseline row's%s%s.\n",
               base ? ": " : "", base ? base->label : " (none given)");
}

/* ---- memory mode ---- */

typedef struct proc_mem {
        pid_t pid;
        char comm[32];
        long pss_kb, rss_kb;
        int depth;
} proc_mem;

static bool read_rollup(pid_t pid, long *pss_kb, long *rss_kb) {
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int) pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return false;
        *pss_kb = *rss_kb = -1;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "Pss:", 4) == 0)
                        *pss_kb = strtol(line + 4, NULL, 10);
                else if (strncmp(line, "Rss:", 4) == 0)
                        *rss_kb = strtol(line + 4, NULL, 10);
        }
        fclose(f);
        return *pss_kb >= 0 && *rss_kb >= 0;
}

static void read_comm(pid_t pid, char *buf, size_t size) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
        FILE *f = fopen(path, "re");
        buf[0] = '\0';
        if (f) {
                if (!fgets(buf, (int) size, f))
                        buf[0] = '\0';
                fclose(f);
        }
        buf[strcspn(buf, "\n")] = '\0';
}

/* The process tree under pid, depth first; each thread's children file is read (hull and the
 * launchers are single-threaded, so this is the main thread's). */
static void walk(pid_t pid, int depth, proc_mem *out, size_t *n) {
        if (*n >= MAX_PROCS)
                return;
        proc_mem *m = &out[(*n)++];
        m->pid = pid;
        m->depth = depth;
        read_comm(pid, m->comm, sizeof(m->comm));
        if (!read_rollup(pid, &m->pss_kb, &m->rss_kb))
                m->pss_kb = m->rss_kb = -1;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) pid, (int) pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return;
        int child;
        while (fscanf(f, "%d", &child) == 1)
                walk((pid_t) child, depth + 1, out, n);
        fclose(f);
}

static int cmp_long(const void *a, const void *b) {
        long x = *(const long *) a, y = *(const long *) b;
        return x < y ? -1 : x > y;
}

static double median_mib(long *v, size_t n) {
        qsort(v, n, sizeof(long), cmp_long);
        double m = n % 2 ? (double) v[n / 2] : ((double) v[n / 2 - 1] + (double) v[n / 2]) / 2.0;
        return m / 1024.0;
}

static void memory(size_t reps, double settle, const char *payload) {
        int w = (int) label_width();
        struct timespec ts = {(time_t) settle, (long) ((settle - (double) (time_t) settle) * 1e9)};
        long *l_pss = xcalloc(reps, sizeof(long)), *l_rss = xcalloc(reps, sizeof(long));
        long *h_pss = xcalloc(reps, sizeof(long)), *h_rss = xcalloc(reps, sizeof(long));
        long *p_pss = xcalloc(reps, sizeof(long));

        print_loadavg("before");
        printf("\n# process trees (last repetition of each command; PSS / RSS in MiB):\n");
        char rows[MAX_CMDS][256];
        for (size_t i = 0; i < n_cmds; i++) {
                cmd *c = &cmds[i];
                size_t helpers = 0;
                proc_mem procs[MAX_PROCS];
                size_t n = 0;
                for (size_t r = 0; r < reps; r++) {
                        pid_t pid = spawn(c, true);
                        nanosleep(&ts, NULL);
                        n = 0;
                        walk(pid, 0, procs, &n);
                        l_pss[r] = procs[0].pss_kb;
                        l_rss[r] = procs[0].rss_kb;
                        h_pss[r] = h_rss[r] = p_pss[r] = 0;
                        helpers = 0;
                        bool saw_payload = false;
                        for (size_t k = 1; k < n; k++) {
                                if (procs[k].pss_kb < 0)
                                        continue;
                                if (strcmp(procs[k].comm, payload) == 0) {
                                        p_pss[r] += procs[k].pss_kb;
                                        saw_payload = true;
                                } else {
                                        h_pss[r] += procs[k].pss_kb;
                                        h_rss[r] += procs[k].rss_kb;
                                        helpers++;
                                }
                        }
                        if (procs[0].pss_kb < 0 || !saw_payload)
                                die("%s: after %.1f s the tree under pid %d has no readable launcher or no '%s' "
                                    "payload "
                                    "(raise --settle, or check the command)",
                                    c->label, settle, (int) pid, payload);
                        struct rusage ru;
                        int st = wait_child(pid, &ru);
                        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                                fail_run(c, st, r, false);
                }
                printf("#   %s:", c->label);
                for (size_t k = 0; k < n; k++)
                        printf("%s %*s%s[%d] %.2f/%.2f", k ? "," : "", procs[k].depth, "", procs[k].comm,
                               (int) procs[k].pid, (double) procs[k].pss_kb / 1024.0,
                               (double) procs[k].rss_kb / 1024.0);
                putchar('\n');
                long *tot_pss = xcalloc(reps, sizeof(long)), *tot_rss = xcalloc(reps, sizeof(long));
                for (size_t r = 0; r < reps; r++) {
                        tot_pss[r] = l_pss[r] + h_pss[r];
                        tot_rss[r] = l_rss[r] + h_rss[r];
                }
                snprintf(rows[i], sizeof(rows[i]),
                         "| %-*s | %4zu | %8.2f | %8.2f | %7zu | %8.2f | %8.2f | %8.2f | %8.2f |", w, c->label, reps,
                         median_mib(l_pss, reps), median_mib(l_rss, reps), helpers, median_mib(h_pss, reps),
                         median_mib(tot_pss, reps), median_mib(tot_rss, reps), median_mib(p_pss, reps));
                free(tot_pss);
                free(tot_rss);
        }
        print_loadavg("after");
        printf("\n| %-*s | %4s | %8s | %8s | %7s | %8s | %8s | %8s | %8s |\n", w, "command", "n", "lnch PSS",
               "lnch RSS", "helpers", "help PSS", "sum PSS", "sum RSS", "payl PSS");
        printf("|-");
        for (int k = 0; k < w; k++)
                putchar('-');
        printf("-|-----:|---------:|---------:|--------:|---------:|---------:|---------:|---------:|\n");
        for (size_t i = 0; i < n_cmds; i++)
                printf("%s\n", rows[i]);
        printf("\n# MiB, median over n starts, read %.1f s after each start. lnch: the spawned launcher process;\n"
               "# helpers: its descendants other than the payload ('%s'), e.g. the sandbox's init; sum: lnch + "
               "helpers.\n",
               settle, payload);
}

static void usage(void) {
        printf("Usage: bench-exec [OPTIONS] -- LABEL [--fd=N:PATH]... ARGV... [:: LABEL ...]...\n\n"
               "  -r, --rounds N      timed rounds (default 100); with --mem, starts per command (default 3)\n"
               "  -w, --warmup N      untimed warm-up rounds (default 10)\n"
               "  -b, --baseline L    label of the row the ratios are against\n"
               "  -s, --seed N        seed of the per-round shuffle (default: from the clock)\n"
               "      --no-shuffle    keep the given order in every round\n"
               "      --raw FILE      write every sample as CSV\n"
               "      --gap MS        sleep MS milliseconds (untimed) before every run\n"
               "      --mem           memory mode: PSS of the launcher and its helpers\n"
               "      --settle SEC    memory mode: wait before reading (default 1.0)\n"
               "      --payload COMM  memory mode: comm of the payload process (default sleep)\n");
}

int main(int argc, char **argv) {
        /* CLOSE_RANGE_CLOEXEC (Linux 5.11); where it fails, the fds stay as they were */
        (void) syscall(SYS_close_range, 3U, ~0U, 1U << 2);
        static const struct option opts[] = {
                {"rounds", required_argument, NULL, 'r'},
                {"warmup", required_argument, NULL, 'w'},
                {"baseline", required_argument, NULL, 'b'},
                {"seed", required_argument, NULL, 's'},
                {"no-shuffle", no_argument, NULL, 'S'},
                {"raw", required_argument, NULL, 'R'},
                {"mem", no_argument, NULL, 'm'},
                {"settle", required_argument, NULL, 't'},
                {"payload", required_argument, NULL, 'p'},
                {"gap", required_argument, NULL, 'g'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        long rounds = -1, warmup = 10, gap_ms = 0;
        const char *baseline = NULL, *raw = NULL, *payload = "sleep";
        bool shuffle = true, mem = false;
        double settle = 1.0;
        uint64_t seed = (uint64_t) now_ns() ^ ((uint64_t) getpid() << 32);
        int c;
        while ((c = getopt_long(argc, argv, "+r:w:b:s:h", opts, NULL)) != -1) {
                switch (c) {
                case 'r':
                        rounds = strtol(optarg, NULL, 10);
                        if (rounds < 1 || rounds > 1000000)
                                die("--rounds wants 1..1000000");
                        break;
                case 'w':
                        warmup = strtol(optarg, NULL, 10);
                        if (warmup < 0 || warmup > 100000)
                                die("--warmup wants 0..100000");
                        break;
                case 'b':
                        baseline = optarg;
                        break;
                case 's':
                        seed = strtoull(optarg, NULL, 10);
                        break;
                case 'S':
                        shuffle = false;
                        break;
                case 'R':
                        raw = optarg;
                        break;
                case 'm':
                        mem = true;
                        break;
                case 't':
                        settle = strtod(optarg, NULL);
                        if (!(settle > 0 && settle < 60))
                                die("--settle wants seconds in (0, 60)");
                        break;
                case 'p':
                        payload = optarg;
                        break;
                case 'g':
                        gap_ms = strtol(optarg, NULL, 10);
                        if (gap_ms < 0 || gap_ms > 10000)
                                die("--gap wants 0..10000 ms");
                        break;
                case 'h':
                        usage();
                        return 0;
                default:
                        usage();
                        return 2;
                }
        }
        if (rounds < 0)
                rounds = mem ? 3 : 100;
        rng_state = seed ? seed : 1;
        parse_cmds(argc, argv, optind, (size_t) rounds);

        if (mem)
                printf("# bench-exec --mem: %ld start(s) per command, settle %.1f s, payload '%s'\n", rounds, settle,
                       payload);
        else
                printf("# bench-exec: %ld timed rounds after %ld warm-up rounds, %zu commands interleaved, %s (seed "
                       "%" PRIu64 ")%s\n",
                       rounds, warmup, n_cmds, shuffle ? "order shuffled every round" : "fixed order", seed,
                       gap_ms ? ", with a pause before every run" : "");
        if (gap_ms)
                printf("# pause: %ld ms (untimed) before every run\n", gap_ms);
        for (size_t i = 0; i < n_cmds; i++)
                print_cmdline(&cmds[i]);
        fflush(stdout);
        if (mem)
                memory((size_t) rounds, settle, payload);
        else if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                die("cannot become a subreaper: %s", strerror(errno));
        else
                timing((size_t) rounds, (size_t) warmup, shuffle, baseline, raw, gap_ms);
        return 0;
}
