/* sbx-kernel.h: the kernel tier's session box (gVisor's runsc), shared by
 * sbx-kernel-session.c (the shim that drives runsc) and sbx-kernel-bundle.c (the directory, the
 * OCI bundle and the process files it writes). Not a public interface: callers use
 * sbx_session_start with the tier SBX_TIER_KERNEL (sbx-session.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"
#include "sbx-session.h"

typedef struct sbx_kernel_dirs {
        char dir[SBX_PATH_MAX];    /* SBX_KERNEL_DIR/s-XXXXXX, a tmpfs of the shim's mount namespace */
        char bundle[SBX_PATH_MAX]; /* dir/bundle: config.json and rootfs/ */
        char rootfs[SBX_PATH_MAX];
        char state[SBX_PATH_MAX]; /* runsc --root */
        char ws[SBX_PATH_MAX];    /* /workspace */
        char log[SBX_PATH_MAX];   /* the last runsc command's stderr */
        char id[SBX_NAME_MAX];    /* the container's id: hull-s-XXXXXX */
        char runsc[SBX_PATH_MAX];
        char platform[SBX_KERNEL_FLAG_MAX];
        bool cgroups; /* runsc makes the sandbox's cgroups with the limits; else --ignore-cgroups */
        bool mounted; /* the tmpfs is on dir */
        bool made;    /* dir exists */
} sbx_kernel_dirs;

/* runsc is there and may run (root). 0, or a negative errno with *e saying what to do. */
int sbx_kernel_available(hull_error *e);

/* The runsc binary and platform hull uses: $HULL_RUNSC or /usr/bin/runsc, $HULL_RUNSC_PLATFORM or
 * ptrace (runsc's releases with systrap: set it to systrap). */
void sbx_kernel_runsc(char *path, size_t path_size, char *platform, size_t platform_size);

/* Make the session's directory: a private mount namespace for the calling process, a tmpfs
 * (the workspace's cap: spec->memory_bytes) on a new directory below SBX_KERNEL_DIR. */
int sbx_kernel_dirs_make(sbx_kernel_dirs *d, const sbx_session_spec *spec, hull_error *e);
/* Unmount and remove it (no-op for what was not made). */
void sbx_kernel_dirs_remove(sbx_kernel_dirs *d);

/* Write the bundle: the root (the host's /usr read-only, hull's /etc files, the runtime's
 * sources at /.hull), config.json (mounts, limits, no capabilities, the agent as its init). */
int sbx_kernel_write_bundle(sbx_kernel_dirs *d, const sbx_session_spec *spec, hull_error *e);

/* Write a process.json for `runsc exec --process`: argv (an interpreter when start: its sources
 * on fd 0 from /.hull, the control socket moved from fd 0 to fd 3) as the sandbox user in
 * /workspace, no capabilities, no new privileges, hull's rlimits. */
int sbx_kernel_write_process(const char *path, char *const *argv, char *const *envp, bool start, hull_error *e);

/* runsc's global arguments (argv[0] the binary) into argv (at most max); returns how many. */
size_t sbx_kernel_runsc_argv(const sbx_kernel_dirs *d, char **argv, size_t max);

/* SIGKILL every child of ppid until none is left (at most timeout_ms), reaping them. */
void sbx_kernel_kill_children(pid_t ppid, unsigned timeout_ms);

/* The shim: start the session's sandbox (sbx_session_start for SBX_TIER_KERNEL). */
int sbx_kernel_session_start(const sbx_session_spec *spec, sbx_session_box *ret, hull_error *e);
