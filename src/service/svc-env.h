/* svc-env.h: the one environment resolver (issue 20). An environment's spec (src/env/env-spec.h)
 * becomes what a sandbox of it needs: its layer (built when missing, by env_layer_build in this
 * process, in the sandbox `hull env build` uses), its network (the mode and the policy: the
 * spec's allowed hosts and package managers, the operator's allow CIDRs, loopback and
 * unrestricted rules) and how run records name it (env_describe). hull run, hull chat, hull
 * exec and hull env build (named environments of $HULL_HOME/hull.db), hull serve's plimsoll
 * sessions (hullEnvironment) and /v1 sessions (a /v1 environment's config) all resolve here. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "env-layer.h"
#include "env-spec.h"
#include "error.h"
#include "limits.h"
#include "sbx-net.h"
#include "store.h"

/* What unrestricted networking becomes. */
typedef enum svc_env_unrestricted {
        SVC_ENV_UNRESTRICTED_ALLOW,  /* pasta's network (hull run on the user's own machine; hull
                                      * serve with --allow-unrestricted-network) */
        SVC_ENV_UNRESTRICTED_REFUSE, /* -EOPNOTSUPP, naming the operator's switch */
        SVC_ENV_UNRESTRICTED_NONE,   /* no network (/v1: not offered, see docs/SECURITY.md) */
} svc_env_unrestricted;

/* The operator's part of a limited network, and what unrestricted becomes. */
typedef struct svc_env_rules {
        char *const *allow_cidrs; /* NULL-terminated, or NULL (sbx_net_policy.allow_cidrs) */
        bool allow_loopback;      /* TESTING ONLY (sbx_net_policy.allow_loopback) */
        svc_env_unrestricted unrestricted;
} svc_env_rules;

typedef struct svc_env_opts {
        const char *home;    /* $HULL_HOME: its layers/ */
        const char *name;    /* the environment in messages and in the description */
        const char *version; /* the description's "@VERSION"; NULL: none */
        bool describe;       /* fill ret->desc */
        bool build;          /* build a missing layer; else a missing one is -ENOENT */
        svc_env_rules rules;
        /* Called (may be NULL) just before a build starts, with the layer's digest. */
        void (*on_build)(void *ud, const char *name, const char *digest);
        void *ud;
        /* May be NULL: gets the build's info, also when it failed (the failed step's output). */
        env_build_info *build_info;
} svc_env_opts;

typedef struct svc_env {
        char layer[SBX_PATH_MAX]; /* the layer's directory, "" without packages */
        char digest[ENV_DIGEST_HEX];
        bool built; /* this call built the layer */
        sbx_net_mode net;
        sbx_net_policy policy;   /* limited: allowed_hosts (NULL-terminated, owned), package
                                  * managers, the rules' CIDRs and loopback; log_fd -1 */
        char desc[ENV_DESC_MAX]; /* "" unless opts.describe */
        bool kernel;             /* spec->kernel: the session's tier is the kernel tier */
} svc_env;

/* Resolve spec into *ret (free with svc_env_done). Returns 0, or a negative errno with *e: a
 * layer that is missing (!build: -ENOENT "the layer of NAME is not built") or whose build failed
 * (env_layer_build's error; opts.build_info has the step's output), unrestricted networking
 * refused (-EOPNOTSUPP), -ENOMEM. Nothing to free on error. */
int svc_env_resolve(const env_spec *spec, const svc_env_opts *opts, svc_env *ret, hull_error *e);
void svc_env_done(svc_env *env);

/* The newest version of the named environment NAME of HOME's hull.db: its spec into *ret_spec
 * (free with env_spec_done) and its version into *ret_version. Returns 0, or -EINVAL (not a
 * name), -ENOENT ("no environment NAME (make one with ...)") or another negative errno, with *e
 * (messages start with "env: "). */
int svc_env_named(const char *home, const char *name, env_spec *ret_spec, int64_t *ret_version, hull_error *e);

/* The spec of /v1 environment eid of db (a config of v1-shape's canonical form: its packages
 * and networking; allowed_hosts may name addresses). *ret_found: false when eid is "" or db
 * NULL (no environment; *ret_spec empty). Returns 0, or a negative errno with *e ("environment
 * EID no longer exists", a package or host that is not one). */
int svc_env_v1(store *db, const char *eid, env_spec *ret_spec, bool *ret_found, hull_error *e);
