/* svc-env.c: see svc-env.h. The layer is built here, in the calling process: env_layer_build
 * runs its steps in container sandboxes (clone, the child only makes system calls; the parent
 * watches them through pidfds), which a threaded hull serve may start too, and its flock makes
 * it the only build of a spec across processes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs-util.h"
#include "macro.h"
#include "svc-env.h"

static int layer_of(const env_spec *spec, const svc_env_opts *o, svc_env *env, hull_error *e) {
        int r;
        env_build_info info = {0};
        if (!env_spec_has_packages(spec))
                return 0;
        if ((r = env_layer_digest(spec, env->digest, e)) < 0 ||
            (r = env_layer_path(o->home, env->digest, env->layer, e)) < 0)
                return r;
        if (env_layer_exists(o->home, env->digest))
                return 0;
        if (!o->build)
                return hull_fail(e, -ENOENT, "env: the layer of %s is not built (run 'hull env build %s')", o->name,
                                 o->name);
        if (o->on_build)
                o->on_build(o->ud, o->name, env->digest);
        r = env_layer_build(o->home, spec, &info, e);
        if (o->build_info)
                *o->build_info = info;
        if (r < 0)
                return r;
        env->built = info.built;
        return 0;
}

static int net_of(const env_spec *spec, const svc_env_opts *o, svc_env *env, hull_error *e) {
        env->policy = (sbx_net_policy){.log_fd = -1};
        env->net = SBX_NET_NONE;
        if (spec->net == ENV_NET_UNRESTRICTED) {
                switch (o->rules.unrestricted) {
                case SVC_ENV_UNRESTRICTED_ALLOW:
                        env->net = SBX_NET_UNRESTRICTED; /* pasta (sbx-net.h) */
                        break;
                case SVC_ENV_UNRESTRICTED_REFUSE:
                        return hull_fail(e, -EOPNOTSUPP,
                                         "environment %s wants unrestricted networking, which this hull serve does "
                                         "not allow (start it with --allow-unrestricted-network, or use limited with "
                                         "allowed_hosts)",
                                         o->name);
                case SVC_ENV_UNRESTRICTED_NONE:
                        break;
                }
                return 0;
        }
        if (spec->net != ENV_NET_LIMITED)
                return 0;
        char **hosts = calloc(spec->n_allowed_hosts + 1, sizeof(char *));
        if (!hosts)
                return hull_err(e, -ENOMEM, "out of memory");
        for (size_t i = 0; i < spec->n_allowed_hosts; i++)
                if (!(hosts[i] = strdup(spec->allowed_hosts[i]))) {
                        sbx_net_hosts_free(hosts);
                        return hull_err(e, -ENOMEM, "out of memory");
                }
        env->policy = (sbx_net_policy){.allowed_hosts = hosts,
                                       .allow_package_managers = spec->allow_package_managers,
                                       .allow_loopback = o->rules.allow_loopback,
                                       .allow_cidrs = o->rules.allow_cidrs,
                                       .log_fd = -1};
        env->net = SBX_NET_LIMITED;
        return 0;
}

int svc_env_resolve(const env_spec *spec, const svc_env_opts *o, svc_env *ret, hull_error *e) {
        _cleanup_free_ svc_env *env = calloc(1, sizeof(*env));
        int r;
        if (!env)
                return hull_err(e, -ENOMEM, "out of memory");
        env->policy.log_fd = -1;
        if ((r = layer_of(spec, o, env, e)) < 0)
                return r;
        env->kernel = spec->kernel;
        if ((r = net_of(spec, o, env, e)) < 0)
                return r;
        if (o->describe &&
            (r = env_describe(o->name, o->version, env->digest, sbx_net_mode_to_string(env->net), env->desc)) < 0) {
                svc_env_done(env);
                return hull_fail(e, r, "env: %s cannot be named in a run record", o->name);
        }
        *ret = *env;
        return 0;
}

void svc_env_done(svc_env *env) {
        sbx_net_hosts_free((char **) env->policy.allowed_hosts);
        env->policy.allowed_hosts = NULL;
}

int svc_env_named(const char *home, const char *name, env_spec *ret_spec, int64_t *ret_version, hull_error *e) {
        _cleanup_store_ store *db = NULL;
        _cleanup_(json_decrefp) json_t *obj = NULL;
        char path[SBX_PATH_MAX];
        int r;
        if (!env_name_is_valid(name))
                return hull_fail(e, -EINVAL,
                                 "env: '%.80s' is not an environment name ([a-z0-9._-], see 'hull env list')", name);
        if (path_join(path, sizeof(path), home, "hull.db") < 0)
                return hull_fail(e, -ENAMETOOLONG, "%.256s/hull.db: the path is too long", home);
        if ((r = store_open(path, &db, e)) < 0)
                return r;
        r = store_env_get(db, name, 0, &obj, e);
        if (r == -ENOENT)
                return hull_fail(e, r, "env: no environment %s (make one with 'hull env create %s --apt PKG')", name,
                                 name);
        if (r < 0 || (r = env_spec_from_json(json_object_get(obj, "spec"), ret_spec, e)) < 0)
                return r;
        *ret_version = (int64_t) json_integer_value(json_object_get(obj, "version"));
        return 0;
}

/* networking of a /v1 config (v1-shape checked its form): allowed_hosts are the proxy's
 * patterns, addresses included, so they are checked as the proxy reads them. */
static int v1_networking(const json_t *net, const char *eid, env_spec *s, hull_error *e) {
        const char *type = json_string_value(json_object_get(net, "type"));
        if (type && strcmp(type, "unrestricted") == 0) {
                s->net = ENV_NET_UNRESTRICTED;
                return 0;
        }
        if (!type || strcmp(type, "limited") != 0)
                return 0;
        size_t i, n = 0;
        json_t *h;
        json_array_foreach(json_object_get(net, "allowed_hosts"), i, h) {
                const char *v = json_string_value(h);
                if (!v || !sbx_net_pattern_valid(v))
                        return hull_fail(e, -EINVAL,
                                         "environment %.64s: networking.allowed_hosts[%zu] '%.64s' is not a host name, "
                                         "'*.suffix' or an address",
                                         eid, i, v ?: "");
                if (n >= SBX_NET_ALLOW_MAX)
                        return hull_fail(e, -E2BIG, "environment %.64s: more than %u allowed_hosts", eid,
                                         SBX_NET_ALLOW_MAX);
                n++;
        }
        s->allowed_hosts = calloc(n + 1, sizeof(char *));
        if (!s->allowed_hosts)
                return hull_err(e, -ENOMEM, "out of memory");
        json_array_foreach(json_object_get(net, "allowed_hosts"), i, h) {
                if (!(s->allowed_hosts[s->n_allowed_hosts] = strdup(json_string_value(h))))
                        return hull_err(e, -ENOMEM, "out of memory");
                s->n_allowed_hosts++;
        }
        s->allow_package_managers = json_is_true(json_object_get(net, "allow_package_managers"));
        s->net = ENV_NET_LIMITED;
        return 0;
}

int svc_env_v1(store *db, const char *eid, env_spec *ret_spec, bool *ret_found, hull_error *e) {
        _cleanup_(json_decrefp) json_t *env = NULL, *pk = NULL;
        _cleanup_(env_spec_done) env_spec s = {0};
        int r;
        *ret_found = false;
        if (!eid[0] || !db)
                return 0;
        if ((r = store_get(db, STORE_ENVIRONMENT, eid, 0, &env, e)) < 0)
                return r == -ENOENT ? hull_fail(e, r, "environment %.64s no longer exists", eid) : r;
        const json_t *config = json_object_get(env, "config");
        json_t *packages = json_object_get(config, "packages");
        if (packages && !json_is_null(packages)) {
                hull_error pe = {0};
                if (!(pk = json_pack("{s:O}", "packages", packages)))
                        return hull_err(e, -ENOMEM, "out of memory");
                if ((r = env_spec_from_json(pk, &s, &pe)) < 0)
                        return hull_fail(e, r, "environment %.64s: %s", eid, pe.msg);
        }
        if ((r = v1_networking(json_object_get(config, "networking"), eid, &s, e)) < 0)
                return r;
        /* hull's extension: "hull": {"tier": "kernel"} (v1-shape-env.c checked it) */
        const char *tier = json_string_value(json_object_get(json_object_get(config, "hull"), "tier"));
        s.kernel = tier && strcmp(tier, "kernel") == 0;
        *ret_spec = s;
        s = (env_spec){0};
        *ret_found = true;
        return 0;
}
