/* sbx-cgroup.h: one cgroup per sandbox for memory, pids and CPU, on cgroup v2 or on a v1/v2
 * hybrid (controllers mounted as v1 hierarchies). Each cgroup is made below the caller's own
 * cgroup of that controller, so a delegated subtree works for unprivileged callers. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"

typedef struct sbx_cgroup_limits {
        uint64_t memory_bytes; /* 0: no memory limit */
        uint64_t pids;         /* 0: no pids limit */
        uint64_t millicpus;    /* 0: no CPU quota */
} sbx_cgroup_limits;

typedef struct sbx_cgroup {
        bool v2;                             /* one unified directory instead of per-controller ones */
        bool made;                           /* the directories exist (destroy removes them) */
        char memory[SBX_CGROUP_PATH_MAX];    /* v1 memory dir, or the v2 dir; "" when not used */
        char pids[SBX_CGROUP_PATH_MAX];      /* v1 only */
        char cpu[SBX_CGROUP_PATH_MAX];       /* v1 only */
        char v2_parent[SBX_CGROUP_PATH_MAX]; /* v2: our own cgroup, whose children get the controllers */
        sbx_cgroup_limits lim;
} sbx_cgroup;

typedef struct sbx_cgroup_stats {
        bool oom_killed;
        uint64_t peak_memory_bytes; /* 0 when the kernel does not report it */
} sbx_cgroup_stats;

/* Find, in the text of /proc/self/cgroup, the path of the hierarchy holding controller (or the
 * v2 hierarchy when controller is NULL) and copy it to ret (at most size bytes, NUL included).
 * Pure. Returns 0, -ENOENT (no such hierarchy), -EINVAL (malformed) or -ENAMETOOLONG. */
int sbx_cgroup_parse_self(const char *text, size_t len, const char *controller, char *ret, size_t size);

/* How many v1 hierarchies (memory, pids, cpu) sbx_cgroup_plan() will use for lim: 0 on cgroup v2,
 * else one per limit set. One statfs(); for a child that must know before the plan is made. */
size_t sbx_cgroup_v1_hierarchies(const sbx_cgroup_limits *lim);

/* Decide where the sandbox's cgroup(s) named name will be, below the caller's own cgroup of each
 * controller: reads /proc/self/cgroup, creates nothing. Returns 0 or a negative errno with *e
 * naming the controller and the reason. */
int sbx_cgroup_plan(sbx_cgroup *cg, const char *name, const sbx_cgroup_limits *lim, hull_error *e);

/* Create the planned cgroup(s) and set the limits. On v1 the sandbox's first process moves
 * itself in by writing "0" to each `tasks` file (sbx_cgroup_tasks_paths), because a thread moving
 * itself skips the global threadgroup lock whose writer waits for an RCU grace period (about 10 ms
 * on an idle host, against 0.03 ms); the files stay hull's: the caller opens them and passes the
 * fds (v1 checks the credentials of whoever opened the file), or the process that writes is hull's
 * own (runsc's). Returns 0 or a negative errno with *e set; on failure nothing is left behind. */
int sbx_cgroup_make(sbx_cgroup *cg, hull_error *e);

/* v1: fill ret[0..n) with prefix + the path of each planned `tasks` file and return n; 0 on v2,
 * where the parent moves the process with sbx_cgroup_attach(). A path that does not fit is an
 * error (never a silently missing limit). Returns n or a negative errno with *e set. */
int sbx_cgroup_tasks_paths(const sbx_cgroup *cg, const char *prefix, char ret[][SBX_CGROUP_TASKS_PATH_MAX], size_t max,
                           hull_error *e);

/* Move pid into the cgroup(s) from outside (v2). Returns 0 or a negative errno with *e set. */
int sbx_cgroup_attach(const sbx_cgroup *cg, pid_t pid, hull_error *e);

/* Read the OOM-kill count and peak memory. Best effort: missing files leave fields zero. */
void sbx_cgroup_read_stats(const sbx_cgroup *cg, sbx_cgroup_stats *ret);

/* Remove the cgroup(s) made by sbx_cgroup_make(), retrying while the kernel finishes tearing
 * down the last tasks. Safe to call on a zeroed, planned or partially made sbx_cgroup. Returns
 * 0, or a negative errno with *e (may be NULL) naming a cgroup that stayed. */
int sbx_cgroup_destroy(sbx_cgroup *cg, hull_error *e);

/* Remove the empty cgroups hull left behind (named hull-PID-..., next to where sbx_cgroup_plan()
 * puts new ones) whose PID no longer runs: a hull killed with SIGKILL cannot remove its own.
 * Best effort. Returns 0 with the count removed, or a negative errno with *e (no cgroups). */
int sbx_cgroup_sweep_stale(unsigned *ret_removed, hull_error *e);
