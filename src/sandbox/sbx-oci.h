/* sbx-oci.h: the kernel tier's runtime: gVisor's runsc, driven with OCI bundles hull writes
 * itself. A bundle is a private directory (0700) holding config.json, an empty read-only root
 * whose entries are bind mounts (the host's /usr and friends, or a --rootfs's top-level
 * entries, as in the container tier), hull's generated /etc files, and runsc's own state
 * directory (--root): no state is shared between two bundles, so each run or session has its own
 * container id, state and sandbox. A single run's root is a shared read-only skeleton of the same
 * content instead (sbx-oci-root.h), verified before each use. runsc is driven with `run` (one command) or `create`,
 * `start`, `exec` (a session: one sandbox, many processes), never `do`.
 *
 * Network: none (--network=none: the sentry's own loopback only), or limited: the runsc
 * process starts in a network namespace hull makes (loopback only, the proxy's listening socket
 * on 127.0.0.1:SBX_NET_PROXY_PORT handed to hull) and runs with --network=host, so the sandbox's
 * only way out is hull's proxy and egress guard, as in the container tier.
 *
 * Limits: memory, pids and CPU are hull's own cgroup (sbx-cgroup.h) around every runsc process
 * (runsc, its sentry and its gofer: runsc is told --ignore-cgroups, so they stay where they
 * start), which works the same on cgroup v2 and on a v1/v2 hybrid. Wall clock: the caller's
 * deadline, then sbx_oci_bundle_destroy() (runsc kill, runsc delete --force, SIGKILL to whatever
 * is left in the cgroup). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "error.h"
#include "limits.h"
#include "sbx-cgroup.h"
#include "sbx.h"

/* Where runsc is and how to run it. */
typedef struct sbx_oci_runtime {
        char path[SBX_PATH_MAX];                  /* the runsc binary */
        char platform[SBX_OCI_PLATFORM_MAX];      /* --platform value; "" leaves runsc's default */
        char version[SBX_OCI_VERSION_MAX];        /* "0.0~20221219.0"; "" until sbx_oci_runtime_probe() */
        char platform_seen[SBX_OCI_PLATFORM_MAX]; /* probe: the platform runs use (platform or runsc's default) */
        bool has_systrap;                         /* probe: this runsc knows --platform=systrap */
} sbx_oci_runtime;

/* Find runsc without running it: $HULL_RUNSC when set (an absolute path), else "runsc" in
 * $PATH, else /usr/bin/runsc; the platform is $HULL_RUNSC_PLATFORM when set, else runsc's own
 * default. Returns 0, or -ENOENT with *e saying how to install runsc. */
int sbx_oci_runtime_find(sbx_oci_runtime *ret, hull_error *e);

/* Ask runsc who it is (`runsc --version`, `runsc flags`): fills version, platform_seen and
 * has_systrap; when no platform was chosen and this runsc has systrap, chooses it. Then the
 * self-check: `true` in a minimal bundle must exit 0. Takes about a second (hull serve's start,
 * `hull exec --tier kernel --check`). Returns 0 or a negative errno with *e saying what failed. */
int sbx_oci_runtime_probe(sbx_oci_runtime *rt, hull_error *e);

/* The evidence line a record or Describe carries: "gVisor runsc VERSION, platform P". */
void sbx_oci_runtime_evidence(const sbx_oci_runtime *rt, char *buf, size_t size);

/* One bundle: a private directory, a container id, runsc's state directory, the cgroup. */
typedef struct sbx_oci_bundle {
        sbx_oci_runtime rt;
        char dir[SBX_PATH_MAX];   /* the bundle (config.json, rootfs/, etc/, state/) */
        char state[SBX_PATH_MAX]; /* runsc --root: dir/state, or dir itself with a shared root */
        char id[SBX_OCI_ID_MAX];  /* the container id: hull-PID-USEC, unique on this host */
        sbx_net_mode net;         /* none: --network=none; limited: runsc runs in a network
                                   * namespace of hull's (loopback only) with --network=host,
                                   * and net_fd is the proxy's listening socket there */
        sbx_cgroup cg;            /* hull's cgroup around runsc (cg.made when in use) */
        bool created;             /* runsc may hold state for id: destroy runs kill and delete */
        bool net_entered;         /* limited: the caller made the namespace (sbx_oci_net_enter) and
                                   * runs every runsc command in it (a session: runsc exec reaches
                                   * the sandbox's control socket, an abstract one, only there);
                                   * spawn makes none and leaves net_fd alone */
        pid_t pasta_pid;          /* unrestricted: pasta on the namespace runsc run starts in
                                   * (made by the spawn, metadata routes blocked first), stopped
                                   * by destroy; else 0 */
        int net_fd;               /* limited: set by the spawn of run/create (the caller starts
                                   * sbx_net_proxy on it and owns it); else -1 */
} sbx_oci_bundle;

/* config.json for spec (pure: builds JSON, touches nothing): process (argv, env = the
 * scrubbed environment of the container tier plus spec->env, cwd /workspace, uid/gid
 * SBX_SANDBOX_UID, no capabilities in any set, no_new_privs, RLIMIT_NOFILE and RLIMIT_FSIZE),
 * root = root_path read-only, the mounts (proc, /tmp and /dev/shm tmpfs of spec->tmp_bytes,
 * /workspace = the work directory read-write or a tmpfs, /handles and /env read-only, and each
 * entry of binds[] read-only), namespaces, hostname "hull", and, with seccomp, hull's deny list
 * (runsc applies it inside the sentry with --oci-seccomp). binds is NULL-terminated pairs
 * {destination, source}. Returns 0 or a negative errno with *e. */
int sbx_oci_config(const sbx_spec *spec, const char *workdir, const char *root_path, const char *const *binds,
                   char *const *env, json_t **ret, hull_error *e);

/* Make a bundle for spec in $TMPDIR (or /tmp): the directory, the root and its /etc files,
 * config.json, and the cgroup (when spec->use_cgroups and a limit is set; made, nothing inside
 * yet). workdir is the host directory bound at /workspace, or NULL for a tmpfs. rt is copied.
 * On failure nothing is left behind. Release with sbx_oci_bundle_destroy(). */
int sbx_oci_bundle_make(const sbx_oci_runtime *rt, const sbx_spec *spec, const char *workdir, sbx_oci_bundle *ret,
                        hull_error *e);

/* The same, and with shared_root the root is not the bundle's own but a shared skeleton of the
 * same content (sbx-oci-root.h: made once below SBX_KERNEL_DIR, verified before each use), so a
 * run creates only the bundle directory and config.json (runsc's --root is the bundle directory
 * itself). For single runs (runsc run) and the self-check; a session writes into its root and
 * keeps its own. */
int sbx_oci_bundle_make_root(const sbx_oci_runtime *rt, const sbx_spec *spec, const char *workdir, bool shared_root,
                             sbx_oci_bundle *ret, hull_error *e);

/* Start runsc with the bundle's global flags (--root, --network, --platform, --ignore-cgroups,
 * --oci-seccomp), then args (NULL-terminated: {"run", "--bundle", b->dir, b->id, NULL},
 * {"create", ...}, {"exec", ...}), with the given fds as stdin, stdout, stderr (-1: /dev/null),
 * in its own process group and in the bundle's cgroup. Sets b->created for run and create; with a
 * limited network, run and create start in a new network namespace and set b->net_fd.
 * Returns 0 with *ret_pid (the caller reaps it), or a negative errno with *e. */
int sbx_oci_spawn(sbx_oci_bundle *b, const char *const *args, int in_fd, int out_fd, int err_fd, pid_t *ret_pid,
                  hull_error *e);

/* Run runsc with args to completion (its output discarded), killed after timeout_ms. Returns
 * its exit status (>= 0) or a negative errno with *e. */
int sbx_oci_runsc(sbx_oci_bundle *b, const char *const *args, uint64_t timeout_ms, hull_error *e);

/* Limited network for a process that drives a sandbox with many runsc commands (a session's
 * shim): move the calling process into a new network namespace (loopback only) and return the
 * proxy's listening socket on 127.0.0.1:SBX_NET_PROXY_PORT there, or a negative errno with *e.
 * Then set the bundle's net_entered. */
int sbx_oci_net_enter(hull_error *e);

/* Tear everything down, whatever state it is in: `runsc kill --all ID KILL` and `runsc delete
 * --force ID` when created, SIGKILL to every process left in the cgroup, the cgroup removed,
 * the directory removed. Safe on a zeroed or half-made bundle and twice. Returns 0 or a
 * negative errno with *e (may be NULL) naming what stayed behind. */
int sbx_oci_bundle_destroy(sbx_oci_bundle *b, hull_error *e);

/* The kernel tier's single run (sbx_run's tier): a bundle, `runsc run`, the supervisor
 * (output bounds, deadline, cancel), then the teardown. */
int sbx_run_kernel(const sbx_spec *spec, const char *workdir, sbx_result *ret, hull_error *e);
