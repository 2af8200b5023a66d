/* probe.h: what the parts of the containment probe share: the result line of an attempt, the
 * small helpers, and every mode (main() in probe.c proves it is inside a sandbox before it runs
 * any of them). Tests only. */
#pragma once

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/quota.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define EXIT_CONTAINED 0
#define EXIT_ESCAPED 1
#define EXIT_REFUSED 2

#define SANDBOX_ID 1000U        /* uid and gid inside the sandbox */
#define DETAIL_MAX 4096U        /* bytes of one result line's detail */
#define SMALL_FILE_MAX 65536U   /* bytes read from one /proc file */
#define FORK_BOMB_MAX 4096U     /* children the fork bomb will ever start */
#define MEMORY_CHUNK (4U << 20) /* bytes the memory bomb touches per step */
#define MEMORY_BOMB_FACTOR 4U   /* give up (escaped) at this multiple of the limit */
#define FILL_CHUNK (1U << 20)   /* bytes per write() when filling a tmpfs */
#define FLOOD_CHUNK 65536U      /* bytes per write() when flooding stdout */
#define OBSERVE_TRIES 4000U     /* polls of a child's /proc status, 500 us apart */
#define X32_SYSCALL_BIT 0x40000000L
#define I386_NR_GETPID 20L
#define X86_64_NR_GETPID 39L

/* ---- result lines -------------------------------------------------------------------------- */

typedef struct outcome {
        char detail[DETAIL_MAX];
        size_t len;
        bool escaped;  /* an attempt succeeded */
        bool off_spec; /* an attempt failed, but not with the errno the policy names */
} outcome;

/* Append one " word" to the detail of o (cut at DETAIL_MAX). */
__attribute__((format(printf, 2, 3))) void add(outcome *o, const char *fmt, ...);
/* The name of an errno ("EPERM"), "E?" if unknown. */
const char *errname(int err);
/* Record one attempt that must fail. want: the errno the policy names, 0 for any failure. */
void expect_fail(outcome *o, const char *what, long ret, int err, int want);

/* Evaluate EXPR (returning -1/errno on failure), record it, yield its value. */
#define TRY(o, what, want, expr)                                                                                       \
        ({                                                                                                             \
                errno = 0;                                                                                             \
                long try_ret_ = (long) (expr);                                                                         \
                int try_err_ = errno;                                                                                  \
                expect_fail((o), (what), try_ret_, try_err_, (want));                                                  \
                try_ret_;                                                                                              \
        })

/* Record a failure that says nothing about containment (an attempt we could not even set up). */
void note(outcome *o, const char *what, int err);
/* Print the DENIED/BLOCKED/ESCAPED line; returns the exit status. */
int finish(const outcome *o);
/* Print the CONTAINED/ESCAPED line of an inspection; returns the exit status. */
int report(bool escaped, const outcome *o);
void close_if_open(long fd);

/* ---- the safety gate (probe.c) ---- */

/* Print "REFUSED not in sandbox: why" and exit EXIT_REFUSED. */
__attribute__((noreturn)) void refuse(const char *why);

/* ---- small helpers (probe-util.c) ---- */

/* Read up to size-1 bytes of a file, NUL-terminate. Returns bytes read or -errno. */
ssize_t read_small(const char *path, char *buf, size_t size);
bool parse_u64(const char *s, uint64_t *ret);
/* "64M", "8K", "1G", "4096" */
bool parse_size(const char *s, uint64_t *ret);
/* Value of "Key:" in a /proc/PID/status text, or NULL. */
const char *status_field(const char *status, const char *key, char *out, size_t out_size);
bool status_hex(const char *status, const char *key, uint64_t *ret);
bool status_u64(const char *status, const char *key, uint64_t *ret);
bool ns_inode(const char *path, uint64_t *ret);
uint64_t env_u64_or_zero(const char *name);
/* fork a child that waits to be killed; the caller kills and reaps it. */
pid_t spawn_sleeper(void);
void kill_and_reap(pid_t pid);
/* Run fn in a forked child; the child's errno result travels back as its exit status:
 * 0 = the call succeeded, else the errno. Returns the errno, 0 for success, -1 if unknown. */
int in_child(int (*fn)(void *), void *arg);

/* ---- the modes: each runs one attempt and returns its exit status ---- */

/* probe-host.c */
int mode_read_host_files(int argc, char **argv);
int mode_host_canary(int argc, char **argv);
int mode_proc_root(int argc, char **argv);
int mode_workdir_links(int argc, char **argv);
int mode_proc1(int argc, char **argv);
int mode_pid1_hijack(int argc, char **argv);
int mode_environ_scan(int argc, char **argv);
int mode_write_usr(int argc, char **argv);
int mode_write_root_etc(int argc, char **argv);
int mode_proc_sys(int argc, char **argv);
int mode_mknod(int argc, char **argv);
int mode_dev_nodes(int argc, char **argv);

/* probe-ns.c */
int mode_mount(int argc, char **argv);
int mode_new_mount_api(int argc, char **argv);
int mode_chroot(int argc, char **argv);
int mode_pivot_root(int argc, char **argv);
int mode_unshare(int argc, char **argv);
int mode_clone_ns(int argc, char **argv);
int mode_clone3(int argc, char **argv);
int mode_setns(int argc, char **argv);
int mode_ptrace(int argc, char **argv);
int mode_process_vm(int argc, char **argv);
int mode_signal_host(int argc, char **argv);
int mode_proc_pids(int argc, char **argv);
int mode_fork_bomb(int argc, char **argv);
int mode_memory_bomb(int argc, char **argv);
int mode_fill_tmp(int argc, char **argv);
int mode_flood(int argc, char **argv);
int mode_orphan(int argc, char **argv);

/* probe-privs.c */
int mode_creds(int argc, char **argv);
int mode_nnp(int argc, char **argv);
int mode_suid_exec(int argc, char **argv);
int mode_personality(int argc, char **argv);
int mode_modules(int argc, char **argv);
int mode_hostname(int argc, char **argv);
int mode_clock(int argc, char **argv);
int mode_tiocsti(int argc, char **argv);
int mode_keyctl(int argc, char **argv);
int mode_bpf(int argc, char **argv);
int mode_perf(int argc, char **argv);
int mode_userfaultfd(int argc, char **argv);
int mode_io_uring(int argc, char **argv);
int mode_open_by_handle(int argc, char **argv);
int mode_kexec(int argc, char **argv);
int mode_reboot(int argc, char **argv);
int mode_acct(int argc, char **argv);
int mode_swap(int argc, char **argv);
int mode_iopl(int argc, char **argv);
int mode_i386(int argc, char **argv);
int mode_x32(int argc, char **argv);

/* probe-net.c */
int mode_connect_tcp(int argc, char **argv);
int mode_connect_unix(int argc, char **argv);
int mode_netifs(int argc, char **argv);
int mode_ctty(int argc, char **argv);
int mode_leaked_fds(int argc, char **argv);
int mode_cgroup_escape(int argc, char **argv);
