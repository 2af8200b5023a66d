/* env-spec.h: an environment's spec (issue 13): the packages to install (apt, npm, pip, each
 * "name" or with a version: "jq=1.6-2.1", "left-pad@1.3.0", "requests==2.31.0") and the
 * networking of its sandboxes (none, limited with allowed_hosts / allow_package_managers /
 * allow_mcp_servers, unrestricted). Pure: JSON text in, a checked structure out, no I/O; every
 * refusal names the field ("packages.apt[2]: ..."). Fuzzed by fuzz/fuzz-env-spec.c.
 *
 * The JSON form is the /v1 environment's config (Claude Managed Agents): {"packages": {"apt":
 * [...], "npm": [...], "pip": [...]}, "networking": {"type": ...}}; "type" keys ("cloud",
 * "packages") are accepted and ignored; "cargo", "gem" and "go" lists must be empty.
 *
 * The layer of a spec is keyed by the SHA-256 of its canonical package spec
 * (env_spec_packages_canonical): the networking is not part of it, and the packages of each
 * manager are sorted and deduplicated, so "b a" and "a b a" make one layer. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "limits.h"

typedef enum env_pm {
        ENV_PM_APT,
        ENV_PM_NPM,
        ENV_PM_PIP,
        _ENV_PM_MAX,
} env_pm;

typedef enum env_net {
        ENV_NET_NONE,
        ENV_NET_LIMITED,
        ENV_NET_UNRESTRICTED,
        _ENV_NET_MAX,
} env_net;

typedef struct env_pkg {
        char *spec;    /* as given and checked: "jq=1.6-2.1" */
        char *name;    /* "jq", "@scope/name", "requests" */
        char *version; /* the part after the separator ("1.6-2.1", "1.3.0", "==2.31.0" for pip,
                        * operator included), or NULL */
} env_pkg;

typedef struct env_spec {
        env_pkg *pkgs[_ENV_PM_MAX]; /* sorted by spec, no duplicates */
        size_t n_pkgs[_ENV_PM_MAX];
        env_net net;
        char **allowed_hosts; /* limited only; "name" or "*.suffix", lowercase */
        size_t n_allowed_hosts;
        bool allow_package_managers;
        bool allow_mcp_servers;
        bool kernel; /* a /v1 environment's config.hull.tier "kernel": its sessions are one gVisor
                      * sandbox each (not part of the layer's spec or digest) */
} env_spec;

const char *env_pm_to_string(env_pm pm);
int env_pm_from_string(const char *s, env_pm *ret);
const char *env_net_to_string(env_net n);
int env_net_from_string(const char *s, env_net *ret);

/* The environment as a run record names it (RunRecord.environment, RunResponse.environment):
 * "hull-env:NAME[@VERSION] layer=sha256:DIGEST net=MODE", "layer=none" without a layer (digest
 * NULL or ""); version NULL or "" leaves "@VERSION" out. Pure. Returns 0, or -EINVAL (a part
 * holds a space or a control character, or is empty where needed) or -ENAMETOOLONG. */
int env_describe(const char *name, const char *version, const char *digest, const char *net, char ret[ENV_DESC_MAX]);

/* An environment's name: 1 to ENV_NAME_MAX - 1 bytes of [a-z0-9._-], starting with a letter or
 * digit. */
bool env_name_is_valid(const char *s);

/* Check one package spec of manager pm and split it. Returns 0 with *ret (free with
 * env_pkg_done), or -EINVAL / -ENOMEM with *e naming field (e.g. "packages.apt[0]"). */
int env_pkg_parse(env_pm pm, const char *s, const char *field, env_pkg *ret, hull_error *e);
void env_pkg_done(env_pkg *p);

/* Add a package (sorted in, a duplicate spec dropped). Returns 0 or -EINVAL (too many, with *e)
 * or -ENOMEM. */
int env_spec_add_pkg(env_spec *s, env_pm pm, const char *pkg, hull_error *e);
/* Add an allowed host (checked, lowercased). */
int env_spec_add_host(env_spec *s, const char *host, hull_error *e);
/* The rules across fields: allowed_hosts and allow_* only with limited networking. */
int env_spec_check(const env_spec *s, hull_error *e);

/* Parse a spec from JSON text (at most ENV_SPEC_TEXT_MAX bytes) or an object. Returns 0 with
 * *ret (free with env_spec_done), or -EINVAL with *e naming the field. */
int env_spec_parse(const char *text, size_t len, env_spec *ret, hull_error *e);
int env_spec_from_json(const json_t *obj, env_spec *ret, hull_error *e);

/* The spec as JSON: {"packages": {"apt": [...], "npm": [...], "pip": [...]}, "networking":
 * {...}} (a new reference, or NULL when out of memory). */
json_t *env_spec_to_json(const env_spec *s);

bool env_spec_has_packages(const env_spec *s);

/* The canonical package spec: compact JSON {"apt":[...],"npm":[...],"pip":[...]} of the sorted
 * specs (malloc'd). Returns 0 or -ENOMEM. */
int env_spec_packages_canonical(const env_spec *s, char **ret);

void env_spec_done(env_spec *s);
