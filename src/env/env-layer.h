/* env-layer.h: layers (issue 13). The packages of a spec are installed once into a directory
 * $HULL_HOME/layers/DIGEST/, DIGEST the SHA-256 of the canonical package spec
 * (env_spec_packages_canonical), and that directory is bound read-only at /env in every sandbox
 * of the environment (sbx_spec.layer_dir / sbx_session_spec.layer_dir), with PATH,
 * LD_LIBRARY_PATH, NODE_PATH and PYTHONPATH pointing into it (env_layer_sandbox_env):
 *
 *   root/         apt: each downloaded .deb unpacked with dpkg-deb -x (root/usr/bin/jq ...)
 *   npm/          npm install --prefix: npm/node_modules
 *   pip/          pip install --target
 *   meta/         spec.json (the canonical package spec), apt-PACKAGE.list (the files of each
 *                 .deb, for the preflight), build.log
 *
 * apt resolves against the host's configured sources and package lists: what the host already
 * has installed is not downloaded again (the sandbox sees the host's /usr under the layer).
 *
 * A build runs in a temporary directory $HULL_HOME/layers/.build-DIGEST-PID that is renamed into
 * place only when every step succeeded, under an exclusive flock of $HULL_HOME/layers/
 * .lock-DIGEST: a failed build leaves nothing, two builds of one spec make one layer. apt
 * resolves on the host (the URI and SHA-256 of each .deb the host lacks, from its signed lists);
 * the downloads (checked against those hashes), dpkg-deb -x, npm install and pip install run in
 * a container sandbox whose network is limited to the package registries (env_layer_build_run);
 * meta/net.log keeps the proxy's line for each connection. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "env-spec.h"
#include "error.h"
#include "limits.h"
#include "sbx.h"

#define ENV_LAYER_MOUNT "/env" /* where a layer is in the sandbox */
#define ENV_DIGEST_HEX 65U     /* 64 lowercase hex digits and a NUL */

/* The layer's key. Returns 0, or a negative errno with *e (libcrypto missing). */
int env_layer_digest(const env_spec *s, char ret[ENV_DIGEST_HEX], hull_error *e);

/* HOME/layers/DIGEST into ret. */
int env_layer_path(const char *home, const char *digest, char ret[SBX_PATH_MAX], hull_error *e);

/* Is the layer of this digest built? */
bool env_layer_exists(const char *home, const char *digest);

typedef struct env_build_info {
        bool built;     /* false: it was there already (or another build made it meanwhile) */
        char log[4096]; /* the tail of the failed step's output, "" when it went well */
} env_build_info;

/* Build the layer of s when it does not exist yet. Returns 0 with *ret, or a negative errno with
 * *e ("env: apt: ..." naming the step that failed and why) and the failed step's output in
 * ret->log; then no layer directory exists. */
int env_layer_build(const char *home, const env_spec *s, env_build_info *ret, hull_error *e);

/* Run script (sh -c) in the build's sandbox: the container tier with dir bound writable at
 * /workspace (as root, dir must belong to SBX_ROOT_HOST_UID), the rest as in any sandbox, and
 * networking limited to the host's package registries, pinned to the addresses their names
 * resolve to now (sbx_net_policy.pin_package_hosts); log_fd (or -1) gets the proxy's lines.
 * Never falls back to the process tier: -errno with *e when the container tier cannot run. */
int env_layer_build_run(const char *dir, const char *script, char *const *env, int log_fd, sbx_result *ret,
                        hull_error *e);

/* The preflight: in a sandbox with the layer of s, every apt package's programs on PATH (or,
 * without programs, its python module importable), every npm package require()-able, every pip
 * package importable. Returns 0 with *ret_report (malloc'd: one line per package, "ok apt jq"
 * or "FAILED npm x: why") and *ret_ok, or a negative errno with *e when it could not run. */
int env_layer_check(const char *home, const env_spec *s, char **ret_report, bool *ret_ok, hull_error *e);

/* Remove every layer of HOME/layers whose digest is not in keep, and the leftovers of failed or
 * killed builds (.build-DIGEST-PID directories, .lock-DIGEST files without a layer) that no
 * running build holds (each under its digest's lock, taken with LOCK_NB).
 * *ret_removed (may be NULL): how many layers went. Returns 0 or a negative errno with *e. */
int env_layer_gc(const char *home, const char *const *keep, size_t n_keep, size_t *ret_removed, hull_error *e);

/* The variables of a sandbox with a layer (PATH, LD_LIBRARY_PATH, NODE_PATH, PYTHONPATH),
 * static strings, NULL-terminated. */
char *const *env_layer_sandbox_env(void);
