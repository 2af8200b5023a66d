/* test-sbx-session.c: the session engine end to end, as root (it makes real sandboxes): calls,
 * persistence of files but not of processes, deadlines, the shell's directory and variables,
 * python and javascript cells (state, last expression, errors, deadline and restart), and the
 * zygote path, and the sweep a clean cell does without (sbx-session-cgroup.c). Skips (and says so) when not root or
 * without user namespaces. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sbx-internal.h"
#include "sbx-session.h"
#include "test.h"
#include "time-util.h"

static bool contains(const char *hay, size_t len, const char *needle) {
        return hay && memmem(hay, len, needle, strlen(needle)) != NULL;
}

static int shell(sbx_session *s, const char *cmd, uint64_t timeout_ms, sbx_result *r) {
        hull_error e = {0};
        int rc = sbx_session_shell(s, cmd, NULL, timeout_ms, 1 << 20, -1, r, &e);
        if (rc < 0)
                printf("# shell %s: %s\n", cmd, e.msg);
        return rc;
}

static int cell(sbx_session *s, sbx_lang l, const char *code, uint64_t timeout_ms, sbx_cell_result *r) {
        hull_error e = {0};
        int rc = sbx_session_cell(s, l, code, strlen(code), timeout_ms, 1 << 20, -1, r, &e);
        if (rc < 0)
                printf("# cell %s: %s\n", code, e.msg);
        return rc;
}

static void test_calls(sbx_session *s) {
        sbx_result r;
        CHECK_EQ_INT(shell(s, "echo hello; echo oops >&2; exit 3", 10000, &r), 0);
        CHECK(r.exited && r.exit_code == 3);
        CHECK(contains(r.out, r.out_len, "hello\n"));
        CHECK(contains(r.err, r.err_len, "oops\n"));
        sbx_result_done(&r);

        /* Files persist; the shell's directory and exported variables too. */
        CHECK_EQ_INT(shell(s, "mkdir -p sub && echo data > sub/f.txt && cd sub && export HULL_X=42", 10000, &r), 0);
        CHECK(r.exited && r.exit_code == 0);
        sbx_result_done(&r);
        CHECK_EQ_INT(shell(s, "pwd; cat f.txt; echo x=$HULL_X", 10000, &r), 0);
        CHECK(contains(r.out, r.out_len, "/workspace/sub\n"));
        CHECK(contains(r.out, r.out_len, "data\n"));
        CHECK(contains(r.out, r.out_len, "x=42\n"));
        sbx_result_done(&r);
        CHECK_EQ_INT(shell(s, "cd /workspace", 10000, &r), 0);
        sbx_result_done(&r);

        /* A background process does not survive its call. */
        CHECK_EQ_INT(shell(s, "(sleep 300 &) ; nohup sleep 301 >/dev/null 2>&1 & echo started", 10000, &r), 0);
        CHECK(contains(r.out, r.out_len, "started"));
        sbx_result_done(&r);
        CHECK_EQ_INT(shell(s, "ps -eo pid=,comm= | grep -c sleep || true", 10000, &r), 0);
        CHECK(contains(r.out, r.out_len, "0\n"));
        sbx_result_done(&r);

        /* The deadline ends the call and everything it started; the session goes on. */
        uint64_t t0 = sbx_now_us();
        CHECK_EQ_INT(shell(s, "trap '' TERM; sleep 100 & sleep 100", 300, &r), 0);
        CHECK(r.timed_out);
        CHECK((sbx_now_us() - t0) < 5000000);
        sbx_result_done(&r);
        CHECK_EQ_INT(shell(s, "echo alive; ls /proc | grep -c '^[0-9]'", 10000, &r), 0);
        CHECK(contains(r.out, r.out_len, "alive\n"));
        sbx_result_done(&r);

        /* The handle store is there, read-only. */
        CHECK_EQ_INT(shell(s, "cat /handles/h1.txt; touch /handles/x 2>/dev/null && echo WROTE; echo done", 10000, &r),
                     0);
        CHECK(contains(r.out, r.out_len, "stored\n") && !contains(r.out, r.out_len, "WROTE") &&
              contains(r.out, r.out_len, "done\n"));
        sbx_result_done(&r);

        /* The host sees the workspace through the fd the init handed over. */
        int fd = openat(s->ws_fd, "sub/f.txt", O_RDONLY | O_CLOEXEC);
        char buf[16] = {0};
        CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) == 5 && strcmp(buf, "data\n") == 0);
        if (fd >= 0)
                close(fd);
}

/* A command started ahead of its input (sbx_session_hold): given its input it runs as a call
 * does, its deadline counted from then; one not used is killed and the session goes on; one that
 * ended by itself is reported (-ECHILD, nothing sent) and dropped. */
static void test_held(sbx_session *s) {
        hull_error e = {0};
        sbx_held h;
        sbx_result r;
        char *cat_argv[] = {(char *) "/bin/sh", (char *) "-c",
                            (char *) "read -r x; echo \"got $x\"; echo e >&2; exit 4", NULL};
        sbx_session_call c = {.timeout_ms = 10000, .output_bytes = 1 << 20, .cancel_fd = -1};
        CHECK_EQ_INT(sbx_session_hold(s, cat_argv, &h, &e), 0);
        /* it waits: nothing counts until its input. The wait is a second and so is the bound: the
         * run's own time is milliseconds, but a busy machine can stall it for a fifth of one */
        usleep(1000 * 1000);
        CHECK_EQ_INT(sbx_session_held_run(s, &h, "hello\n", 6, &c, &r, &e), 0);
        CHECK(r.exited && r.exit_code == 4 && r.wall_us < 1000 * 1000);
        CHECK(contains(r.out, r.out_len, "got hello\n") && contains(r.err, r.err_len, "e\n"));
        CHECK(h.in_fd < 0 && h.out_fd < 0 && h.err_fd < 0);
        sbx_result_done(&r);

        /* one that writes much before it reads its input: its output is read while the input is
         * written (neither side waits on the other until the deadline) */
        char *chatty_argv[] = {(char *) "/bin/sh", (char *) "-c",
                               (char *) "head -c 300000 /dev/zero | tr '\\0' x; cat >/dev/null; echo done", NULL};
        size_t big = 4U << 20;
        char *input = malloc(big);
        CHECK(input != NULL);
        if (input) {
                memset(input, 'i', big);
                CHECK_EQ_INT(sbx_session_hold(s, chatty_argv, &h, &e), 0);
                CHECK_EQ_INT(sbx_session_held_run(s, &h, input, big, &c, &r, &e), 0);
                CHECK(r.exited && r.exit_code == 0 && !r.timed_out && r.out_total == 300000 + 5);
                CHECK(contains(r.out, r.out_len, "done\n"));
                sbx_result_done(&r);
                free(input);
        }

        /* its deadline: a held command that never ends */
        char *spin_argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) "cat >/dev/null; sleep 100", NULL};
        c.timeout_ms = 300;
        CHECK_EQ_INT(sbx_session_hold(s, spin_argv, &h, &e), 0);
        CHECK_EQ_INT(sbx_session_held_run(s, &h, "x", 1, &c, &r, &e), 0);
        CHECK(r.timed_out);
        sbx_result_done(&r);

        /* not used: killed, and the next call runs */
        CHECK_EQ_INT(sbx_session_hold(s, spin_argv, &h, &e), 0);
        CHECK_EQ_INT(sbx_session_held_drop(s, &h, &e), 0);
        CHECK_EQ_INT(shell(s, "ps -eo comm= | grep -c sleep || true; echo next", 10000, &r), 0);
        CHECK(contains(r.out, r.out_len, "0\nnext\n"));
        sbx_result_done(&r);

        /* ended before its input: -ECHILD, dropped, the session goes on */
        char *gone_argv[] = {(char *) "/bin/true", NULL};
        CHECK_EQ_INT(sbx_session_hold(s, gone_argv, &h, &e), 0);
        /* until the init's report of its end is there (10 s at most), not a fixed 0.3 s: before
         * it, the command counts as running and takes its input */
        struct pollfd ended = {.fd = s->ctl_fd, .events = POLLIN};
        CHECK(poll(&ended, 1, 10000) == 1);
        CHECK_EQ_INT(sbx_session_held_run(s, &h, "x", 1, &c, &r, &e), -ECHILD);
        CHECK_EQ_INT(sbx_session_held_drop(s, &h, &e), 0);
        c.timeout_ms = 10000;
        CHECK_EQ_INT(shell(s, "echo after", 10000, &r), 0);
        CHECK(contains(r.out, r.out_len, "after\n"));
        sbx_result_done(&r);
}

static void test_cells(sbx_session *s, const char *label, bool fresh) {
        sbx_cell_result c;
        printf("# cells: %s\n", label);
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "x = 20\nx + 22", 20000, &c), 0);
        CHECK_EQ_INT(c.exit_code, 0);
        CHECK(c.interpreter_started == fresh);
        CHECK(contains(c.out, c.out_len, "42\n"));
        sbx_cell_result_done(&c);
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "print('x is', x)\nNone", 20000, &c), 0);
        CHECK(!c.interpreter_started);
        CHECK(contains(c.out, c.out_len, "x is 20\n"));
        sbx_cell_result_done(&c);
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "1/0", 20000, &c), 0);
        CHECK_EQ_INT(c.exit_code, 1);
        CHECK(contains(c.err, c.err_len, "ZeroDivisionError"));
        sbx_cell_result_done(&c);
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "import os, subprocess\nsubprocess.Popen(['sleep', '200'])\nos.getuid()",
                          20000, &c),
                     0);
        CHECK(contains(c.out, c.out_len, "1000\n"));
        sbx_cell_result_done(&c);
        sbx_result r;
        CHECK_EQ_INT(shell(s, "ps -eo stat=,comm= | grep -v '^Z' | grep -c 'sleep' || true", 10000, &r), 0);
        CHECK(contains(r.out, r.out_len, "0\n"));
        sbx_result_done(&r);

        /* A deadline kills the interpreter; the next cell starts a fresh one. */
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "import time\ntime.sleep(60)", 500, &c), 0);
        CHECK_EQ_INT(c.exit_code, 124);
        CHECK(c.timed_out && c.interpreter_ended);
        sbx_cell_result_done(&c);
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "'x' in globals()", 20000, &c), 0);
        CHECK(c.interpreter_started);
        CHECK(contains(c.out, c.out_len, "False\n"));
        sbx_cell_result_done(&c);

        /* The interpreter is inside: no capabilities, seccomp on, the sandbox's pid 1. */
        CHECK_EQ_INT(
                cell(s, SBX_LANG_PYTHON,
                     "st = open('/proc/self/status').read()\n"
                     "ok = 'CapEff:\\t0000000000000000' in st and 'Seccomp:\\t2' in st and 'NoNewPrivs:\\t1' in st\n"
                     "(ok, open('/proc/1/comm').read().strip() != '', __import__('socket').gethostname())",
                     20000, &c),
                0);
        CHECK(contains(c.out, c.out_len, "(True, True, 'hull')"));
        sbx_cell_result_done(&c);
        /* ps names it, no source is on its command line, and the memfd its sources came in is
         * gone from fd 0. */
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON,
                          "import os\n(open('/proc/self/cmdline', 'rb').read().rstrip(b'\\0'), "
                          "open('/proc/self/comm').read().strip(), os.readlink('/proc/self/fd/0'))",
                          20000, &c),
                     0);
        CHECK(contains(c.out, c.out_len, "(b'hull-python', 'hull-python', '/dev/null')\n"));
        sbx_cell_result_done(&c);
        /* A session of its own: no controlling terminal of hull's to open through /dev/tty. */
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "import os\nos.getsid(0) == os.getpid()", 20000, &c), 0);
        CHECK(contains(c.out, c.out_len, "True\n"));
        sbx_cell_result_done(&c);

        /* Sandboxed code forges the end of its cell and stops reading its socket: the next cell's
         * deadline still holds (the write of its code waits against it), and a fresh interpreter
         * follows. */
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON,
                          "import os, struct, json, threading, time\n"
                          "m = json.dumps({'done': {'status': 0}}).encode()\n"
                          "os.write(3, struct.pack('<I', len(m)) + m)\n"
                          "time.sleep(1000)",
                          20000, &c),
                     0);
        sbx_cell_result_done(&c);
        {
                size_t n = 600000;
                char *big = malloc(n + 1);
                if (big) {
                        big[0] = '#';
                        memset(big + 1, 'x', n - 1);
                        big[n] = '\0';
                        uint64_t t0 = sbx_now_us();
                        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, big, 1500, &c), 0);
                        CHECK_EQ_INT(c.exit_code, 124);
                        CHECK((sbx_now_us() - t0) < 10000000);
                        sbx_cell_result_done(&c);
                        free(big);
                }
        }
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "1 + 1", 20000, &c), 0);
        CHECK(c.interpreter_started && contains(c.out, c.out_len, "2\n"));
        sbx_cell_result_done(&c);

        CHECK_EQ_INT(cell(s, SBX_LANG_JAVASCRIPT, "let y = 6; y * 7", 20000, &c), 0);
        CHECK_EQ_INT(c.exit_code, 0);
        CHECK(contains(c.out, c.out_len, "42"));
        sbx_cell_result_done(&c);
        CHECK_EQ_INT(cell(s, SBX_LANG_JAVASCRIPT, "console.log('y=' + y)", 20000, &c), 0);
        CHECK(contains(c.out, c.out_len, "y=6\n"));
        sbx_cell_result_done(&c);
        CHECK_EQ_INT(
                cell(s, SBX_LANG_JAVASCRIPT,
                     "const fs = require('fs');\n[fs.readFileSync('/proc/self/cmdline', 'latin1').replace(/\\0+$/, "
                     "''), "
                     "fs.readFileSync('/proc/self/comm', 'utf8').trim(), fs.readlinkSync('/proc/self/fd/0')].join(' ')",
                     20000, &c),
                0);
        CHECK(contains(c.out, c.out_len, "'hull-node hull-node /dev/null'\n"));
        sbx_cell_result_done(&c);
        CHECK_EQ_INT(cell(s, SBX_LANG_JAVASCRIPT, "throw new Error('boom')", 20000, &c), 0);
        CHECK_EQ_INT(c.exit_code, 1);
        CHECK(contains(c.err, c.err_len, "boom"));
        sbx_cell_result_done(&c);
}

static char handles_dir[64];

/* A python cell 1+1 answers 2. */
static void cell_two(sbx_session *s) {
        sbx_cell_result c;
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "1+1", 20000, &c), 0);
        CHECK(c.exit_code == 0 && contains(c.out, c.out_len, "2\n"));
        sbx_cell_result_done(&c);
}

/* After a cell the init sweeps only when the cgroup may hold something but the init and the
 * interpreters: clean cells need no round trip to it; a process or a thread the cell left, or an
 * interpreter whose pidfd says it ended, still get the sweep. Python alone must be running. */
static void test_quiet(sbx_session *s, const sbx_session_box *box) {
        sbx_cell_result c;
        printf("# quiet cells\n");
        cell_two(s);
        if (box->cg_dir_fd < 0) {
                printf("# no cgroup counts the session's tasks here: every cell is swept\n");
                return;
        }
        CHECK(s->interp[SBX_LANG_PYTHON].pidfd >= 0);
        uint64_t before = s->sweeps;
        for (int i = 0; i < 5; i++)
                cell_two(s);
        CHECK_EQ_INT((int) (s->sweeps - before), 0); /* main's code: 5 */

        before = s->sweeps;
        CHECK_EQ_INT(
                cell(s, SBX_LANG_PYTHON, "import subprocess\np = subprocess.Popen(['sleep', '201.5'])\n1", 20000, &c),
                0);
        sbx_cell_result_done(&c);
        CHECK_EQ_INT((int) (s->sweeps - before), 1);
        /* the sleep was killed with its cell (its zombie, reaped now, kept the count up) */
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "p.poll()", 20000, &c), 0);
        CHECK(contains(c.out, c.out_len, "-9\n"));
        sbx_cell_result_done(&c);

        before = s->sweeps;
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON,
                          "import threading, time\nt = threading.Thread(target=time.sleep, args=(0.3,))\nt.start()\n1",
                          20000, &c),
                     0);
        sbx_cell_result_done(&c);
        CHECK_EQ_INT((int) (s->sweeps - before), 1); /* a thread of the interpreter is above the floor */
        /* the thread ended (joined), not 0.4 s assumed enough: the last count below needs it gone */
        CHECK_EQ_INT(cell(s, SBX_LANG_PYTHON, "t.join()", 20000, &c), 0);
        sbx_cell_result_done(&c);

        /* The count alone is not enough: an interpreter that ended (its pidfd readable) is swept. */
        pid_t k = fork();
        if (k == 0)
                _exit(0);
        int dead = (int) syscall(SYS_pidfd_open, k, 0);
        CHECK(dead >= 0 && waitpid(k, NULL, 0) == k);
        int live = s->interp[SBX_LANG_PYTHON].pidfd;
        s->interp[SBX_LANG_PYTHON].pidfd = dead;
        before = s->sweeps;
        cell_two(s);
        CHECK_EQ_INT((int) (s->sweeps - before), 1);
        s->interp[SBX_LANG_PYTHON].pidfd = live;
        safe_close(dead);
        before = s->sweeps;
        cell_two(s);
        CHECK_EQ_INT((int) (s->sweeps - before), 0);
}

static int open_session(sbx_session_box *box, sbx_session *s, int zygote_fd) {
        hull_error e = {0};
        sbx_session_spec spec = {.memory_bytes = 512ULL << 20,
                                 .pids = 256,
                                 .tmp_bytes = 64ULL << 20,
                                 .use_cgroups = true,
                                 .handles_dir = handles_dir};
        int r = sbx_session_start(&spec, box, &e);
        if (r < 0) {
                printf("# start: %s\n", e.msg);
                return r;
        }
        sbx_session_init(s, box->ctl_fd, box->ws_fd, box->pidfd, box->bpf_fd, box->cg_fds, box->n_cg_fds, zygote_fd);
        s->cg_dir_fd = box->cg_dir_fd; /* as hull serve's sessions have it */
        return 0;
}

#define ZYGOTE_LOW_WAIT_MS 3000U /* how long the test lets the zygote warm up at low priority */

/* The nice value of pid's autogroup (/proc/PID/autogroup: "/autogroup-N nice V"), or -1000. */
static int autogroup_nice(pid_t pid) {
        char path[64], buf[128];
        snprintf(path, sizeof(path), "/proc/%d/autogroup", (int) pid);
        FILE *f = fopen(path, "re");
        int nice = -1000;
        if (f) {
                if (fgets(buf, sizeof(buf), f) && strstr(buf, " nice "))
                        nice = (int) strtol(strstr(buf, " nice ") + 6, NULL, 10);
                fclose(f);
        }
        return nice;
}

/* Its nice value once it is want (the child sets it between its setsid and its exec), or the
 * last seen after a bounded number of looks. */
static int autogroup_nice_becomes(pid_t pid, int want) {
        int nice = autogroup_nice(pid);
        for (unsigned i = 0; i < 5000 && nice != want; i++) {
                usleep(1000);
                nice = autogroup_nice(pid);
        }
        return nice;
}

/* hull serve's zygote warms up at low priority; sbx_zygote_lift gives it the default at once
 * (a session needs it before it is ready), and hull serve's teardown ends it with SIGTERM
 * whatever it is doing. Counted by what /proc says, not by how long anything takes. */
static void test_zygote_lift(void) {
        hull_error e = {0};
        pid_t zpid = -1;
        int lift = -1;
        uint64_t started = now_mono_ms();
        int zfd = sbx_zygote_start_reaped(&zpid, false, &lift, &e);
        CHECK(zfd >= 0);
        if (zfd < 0)
                return;
        /* it waits for a first request (or SBX_ZYGOTE_WARMUP_DELAY_MS) before python starts: the
         * start and a one-off script's first turn do not share the CPUs with its imports */
        char exe[256] = "", link[64];
        snprintf(link, sizeof(link), "/proc/%d/exe", (int) zpid);
        ssize_t n = readlink(link, exe, sizeof(exe) - 1);
        if (n > 0)
                exe[n] = '\0';
        if (now_mono_ms() - started < SBX_ZYGOTE_WARMUP_DELAY_MS / 2)
                TEST_RESULT(n > 0 && !strstr(exe, "python"), "the zygote is not python yet (%s)", exe);
        else
                printf("# the machine is busy: the zygote's delay is not checked\n");
        if (lift < 0)
                printf("# no /proc/PID/autogroup here: the zygote's warm-up priority is not checked\n");
        else {
                CHECK_EQ_INT(autogroup_nice_becomes(zpid, 19), 19);
                sbx_zygote_lift(lift);
                CHECK_EQ_INT(autogroup_nice(zpid), 0);
        }
        safe_close(lift);
        close(zfd);
        CHECK_EQ_INT(kill(zpid, SIGTERM), 0);
        int st;
        /* ended by the signal, or, still waiting to start python, by the EOF just before it */
        CHECK(waitpid(zpid, &st, 0) == zpid &&
              ((WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM) || (WIFEXITED(st) && WEXITSTATUS(st) == 0)));
}

int main(void) {
        if (geteuid() != 0 || access("/usr/bin/python3", X_OK) < 0 || access("/usr/bin/node", X_OK) < 0) {
                printf("skip - sessions need root, /usr/bin/python3 and /usr/bin/node\n");
                test_done();
                return 77;
        }
        signal(SIGPIPE, SIG_IGN);
        snprintf(handles_dir, sizeof(handles_dir), "/tmp/hull-test-handles.XXXXXX");
        if (!mkdtemp(handles_dir) || chmod(handles_dir, 0755) < 0) {
                printf("not ok - cannot make a temporary directory\n");
                return 1;
        }
        {
                char f[128];
                snprintf(f, sizeof(f), "%s/h1.txt", handles_dir);
                FILE *fp = fopen(f, "w");
                if (fp) {
                        fputs("stored\n", fp);
                        fclose(fp);
                }
        }
        sbx_session_box box;
        sbx_session s;
        hull_error e = {0};

        CHECK_EQ_INT(open_session(&box, &s, -1), 0);
        if (box.pid > 0) {
                test_calls(&s);
                test_held(&s);
                test_cells(&s, "cold interpreters", true);
                pid_t init = box.pid;
                sbx_session_done(&s);
                sbx_session_end_info info;
                CHECK_EQ_INT(sbx_session_box_end(&box, &info, &e), 0);
                CHECK(kill(init, 0) < 0 && errno == ESRCH);
        }

        test_zygote_lift();
        pid_t zpid = -1;
        int lift = -1;
        int zfd = sbx_zygote_start_reaped(&zpid, false, &lift, &e);
        CHECK(zfd >= 0);
        if (zfd >= 0) {
                /* It warms up at the lowest priority of its group and lifts itself before it says
                 * it is ready. On a machine too busy for a low-priority warm-up to end soon, it is
                 * lifted here instead (as a session's first call does) and the self-lift is not
                 * checked: a verdict that does not depend on the load. */
                bool selfed = false;
                if (lift >= 0) {
                        CHECK_EQ_INT(autogroup_nice_becomes(zpid, 19), 19);
                        selfed = sbx_zygote_wait_ready(zfd, ZYGOTE_LOW_WAIT_MS, &e) == 0;
                        if (selfed)
                                CHECK_EQ_INT(autogroup_nice(zpid), 0);
                        else
                                printf("# the machine is busy: the zygote's priority lifted by the test\n");
                        sbx_zygote_lift(lift);
                }
                if (!selfed)
                        CHECK_EQ_INT(sbx_zygote_wait_ready(zfd, SBX_ZYGOTE_READY_MS, &e), 0);
                safe_close(lift);
                {
                        /* ps shows hull-zygote: its command line holds no source. */
                        char path[64], buf[4096];
                        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) zpid);
                        FILE *f = fopen(path, "re");
                        size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
                        if (f)
                                fclose(f);
                        while (n > 0 && buf[n - 1] == '\0')
                                n--;
                        CHECK(n == strlen("hull-zygote") && memcmp(buf, "hull-zygote", n) == 0);
                }
                CHECK_EQ_INT(open_session(&box, &s, zfd), 0);
                if (box.pid > 0) {
                        uint64_t t0 = sbx_now_us();
                        sbx_cell_result c;
                        CHECK_EQ_INT(cell(&s, SBX_LANG_PYTHON, "import pandas\npandas.__version__", 20000, &c), 0);
                        printf("# zygote: new interpreter + import pandas in %.1f ms\n",
                               (double) (sbx_now_us() - t0) / 1000.0);
                        CHECK(c.exit_code == 0 && c.out_len > 2);
                        CHECK_EQ_STR(s.warning, "");
                        sbx_cell_result_done(&c);
                        test_quiet(&s, &box);
                        test_cells(&s, "zygote", false);
                        sbx_session_done(&s);
                        CHECK_EQ_INT(sbx_session_box_end(&box, NULL, &e), 0);
                }
                close(zfd);
                int st;
                CHECK(waitpid(zpid, &st, 0) == zpid);
        }
        {
                char cmd[160];
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", handles_dir);
                if (system(cmd) != 0)
                        printf("# cannot remove %s\n", handles_dir);
        }
        return test_done();
}
