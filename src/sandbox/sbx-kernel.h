/* sbx-kernel.h: the kernel tier's session box (gVisor's runsc), shared by
 * sbx-kernel-session.c (the shim that drives runsc) and sbx-kernel-bundle.c (the session's
 * directory, what it adds to the OCI bundle sbx-oci.h makes, the process files). Not a public
 * interface: callers use sbx_session_start with the tier SBX_TIER_KERNEL (sbx-session.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"
#include "sbx-oci.h"
#include "sbx-session.h"

typedef struct sbx_kernel_dirs {
        char dir[SBX_PATH_MAX]; /* SBX_KERNEL_DIR/s-XXXXXX, a tmpfs of the shim's mount namespace */
        char ws[SBX_PATH_MAX];  /* dir/workspace: /workspace (the host's operations use it too) */
        char log[SBX_PATH_MAX]; /* the last runsc command's stderr */
        bool mounted;           /* the tmpfs is on dir */
        bool made;              /* dir exists */
} sbx_kernel_dirs;

/* runsc is there and may run (root). 0, or a negative errno with *e saying what to do. */
int sbx_kernel_available(hull_error *e);

/* Make the session's directory: a private mount namespace for the calling process, a tmpfs
 * (the workspace's cap: spec->memory_bytes) on a new directory below SBX_KERNEL_DIR. */
int sbx_kernel_dirs_make(sbx_kernel_dirs *d, const sbx_session_spec *spec, hull_error *e);
/* Unmount and remove it (no-op for what was not made). */
void sbx_kernel_dirs_remove(sbx_kernel_dirs *d);

/* Finish a session's bundle (made by sbx_oci_bundle_make with the agent as its command): the
 * runtime's sources and the agent at /.hull in the root, the agent root inside with CAP_KILL
 * only. */
int sbx_kernel_bundle_finish(const sbx_oci_bundle *b, hull_error *e);

/* The agent's argv (the bundle's command). */
extern char *const sbx_kernel_agent_argv[];

/* Write a process.json for `runsc exec --process`: argv (an interpreter when start: its sources
 * on fd 0 from /.hull, the control socket moved from fd 0 to fd 3) as the sandbox user in
 * /workspace, no capabilities, no new privileges, hull's rlimits and RLIMIT_NPROC nproc. */
int sbx_kernel_write_process(const char *path, char *const *argv, char *const *envp, bool start, uint64_t nproc,
                             hull_error *e);

/* SIGKILL every child of ppid until none is left (at most timeout_ms), reaping them. */
void sbx_kernel_kill_children(pid_t ppid, unsigned timeout_ms);

/* ---- the warm start (sbx-kernel-warm.c) ---- */

typedef struct sbx_kernel_warm {
        char dir[SBX_PATH_MAX];     /* spec->template_dir/kernel-warm-KEY, published whole (a rename) */
        char image[SBX_PATH_MAX];   /* dir/image: runsc checkpoint's image */
        char pidfile[SBX_PATH_MAX]; /* dir/warm.pid: the warm python's pid inside the sandbox */
        pid_t pid;                  /* read by sbx_kernel_warm_ready or set by _publish */
} sbx_kernel_warm;

/* The template's place for a session of spec: 0, or -ENOENT when warm starts are off for it (no
 * spec->template_dir, a network other than none, HULL_KERNEL_WARM=0), or another negative errno.
 * The key covers runsc, the limits inside, which mounts exist, the layer's path and identity
 * (device, inode, change times), the environment and the interpreter's sources. */
int sbx_kernel_warm_locate(const sbx_session_spec *spec, const sbx_oci_runtime *rt, sbx_kernel_warm *ret);
/* The pid in path (runsc's --internal-pid-file, or warm.pid), or 0. */
pid_t sbx_kernel_read_pid(const char *path);
/* The template is there (w->pid read). */
bool sbx_kernel_warm_ready(sbx_kernel_warm *w);
/* A fresh private directory beside w->dir (tmp) to checkpoint into. 0 or a negative errno. */
int sbx_kernel_warm_stage(sbx_kernel_warm *w, char *tmp, size_t size);
/* Write the warm python's pid in tmp and rename it to w->dir; removes tmp on failure (e.g.
 * another shim published the same template first). 0 or a negative errno. */
int sbx_kernel_warm_publish(sbx_kernel_warm *w, const char *tmp, pid_t pid);
/* The process file of the warm python (runtime/cell.py's warm(): the cold START's process with
 * HULL_WARM_SOCK added; it says "ready" on its stdout, then holds no host fd). */
int sbx_kernel_warm_write_python(const char *path, const sbx_session_spec *spec, uint64_t nproc, hull_error *e);
/* A START of argv may be served by the warm python (it is the python interpreter). */
bool sbx_kernel_warm_fits(char *const *argv);
/* The handover's message to the agent (sbx-kernel-bundle.c): "H", the warm python's socket and
 * the START's environment, NUL-separated; sent with the START's cell socket and output pipes, which
 * the agent passes on to the warm python. Its length, or -E2BIG. */
ssize_t sbx_kernel_warm_handover_msg(char *const *envp, char *buf, size_t size);

/* The shim: start the session's sandbox (sbx_session_start for SBX_TIER_KERNEL). */
int sbx_kernel_session_start(const sbx_session_spec *spec, sbx_session_box *ret, hull_error *e);
