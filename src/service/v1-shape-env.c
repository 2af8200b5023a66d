/* v1-shape-env.c: an environment's create and update bodies checked and shaped (see
 * v1-shape.h): its config (cloud: networking and packages; self_hosted), scope and metadata. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "v1-shape-internal.h"

/* ---- environments ---- */

static const char *const PACKAGE_LISTS[] = {"apt", "cargo", "gem", "go", "npm", "pip", NULL};

static int parse_string_list(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        int r = v1_want(v, JSON_ARRAY, path, "an array of strings", e);
        if (r < 0)
                return r;
        if (json_array_size(v) > V1_PACKAGES_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu entries, at most %u", path, json_array_size(v), V1_PACKAGES_MAX);
        size_t i;
        json_t *s;
        json_array_foreach(v, i, s) {
                size_t n = json_string_length(s);
                if (!json_is_string(s) || n == 0 || n > V1_NAME_MAX || strlen(json_string_value(s)) != n)
                        return v1_fail(e, 400, NULL, "%s[%zu]: must be a string of 1 to %u bytes", path, i,
                                       V1_NAME_MAX);
        }
        *ret = json_deep_copy(v);
        return *ret ? 0 : -ENOMEM;
}

static int parse_networking(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const ukeys[] = {"type", NULL};
        static const char *const lkeys[] = {"type", "allowed_hosts", "allow_mcp_servers", "allow_package_managers",
                                            NULL};
        static const char *const types[] = {"unrestricted", "limited", NULL};
        const char *type;
        int r = v1_want(v, JSON_OBJECT, path, "an object", e);
        if (r < 0 || (r = v1_get_enum(v, "type", path, types, NULL, &type, e)) < 0)
                return r;
        if (eq(type, "unrestricted")) {
                if ((r = v1_check_object(v, path, ukeys, e)) < 0)
                        return r;
                *ret = json_pack("{s:s}", "type", type);
                return *ret ? 0 : -ENOMEM;
        }
        int mcp, pm;
        if ((r = v1_check_object(v, path, lkeys, e)) < 0 ||
            (r = v1_get_bool(v, "allow_mcp_servers", path, &mcp, e)) < 0 ||
            (r = v1_get_bool(v, "allow_package_managers", path, &pm, e)) < 0)
                return r;
        json_auto_t *hosts = NULL;
        const json_t *h = json_object_get(v, "allowed_hosts");
        if (h && !json_is_null(h)) {
                v1_path p;
                v1_path_key(p, path, "allowed_hosts");
                if ((r = parse_string_list(h, p, &hosts, e)) < 0)
                        return r;
        } else if (!(hosts = json_array()))
                return -ENOMEM;
        *ret = json_pack("{s:s, s:O, s:b, s:b}", "type", type, "allowed_hosts", hosts, "allow_mcp_servers", mcp > 0,
                         "allow_package_managers", pm > 0);
        return *ret ? 0 : -ENOMEM;
}

static int parse_env_config(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const ckeys[] = {"type", "networking", "packages", "hull", NULL};
        static const char *const hkeys[] = {"tier", NULL};
        static const char *const tiers[] = {"container", "kernel", NULL};
        static const char *const skeys[] = {"type", NULL};
        static const char *const pkeys[] = {"type", "apt", "cargo", "gem", "go", "npm", "pip", NULL};
        static const char *const types[] = {"cloud", "self_hosted", NULL};
        static const char *const ptypes[] = {"packages", NULL};
        const char *type;
        int r = v1_want(v, JSON_OBJECT, path, "an object", e);
        if (r < 0 || (r = v1_get_enum(v, "type", path, types, NULL, &type, e)) < 0)
                return r;
        if (eq(type, "self_hosted")) {
                if ((r = v1_check_object(v, path, skeys, e)) < 0)
                        return r;
                *ret = json_pack("{s:s}", "type", type);
                return *ret ? 0 : -ENOMEM;
        }
        if ((r = v1_check_object(v, path, ckeys, e)) < 0)
                return r;
        json_auto_t *net = NULL, *pk = json_pack("{s:s}", "type", "packages");
        if (!pk)
                return -ENOMEM;
        v1_path p;
        const json_t *n = json_object_get(v, "networking");
        v1_path_key(p, path, "networking");
        if (n && !json_is_null(n)) {
                if ((r = parse_networking(n, p, &net, e)) < 0)
                        return r;
        } else if (!(net = json_pack("{s:s}", "type", "unrestricted")))
                return -ENOMEM;
        const json_t *pv = json_object_get(v, "packages");
        v1_path_key(p, path, "packages");
        if (pv && !json_is_null(pv)) {
                const char *pt;
                if ((r = v1_check_object(pv, p, pkeys, e)) < 0 ||
                    (r = v1_get_enum(pv, "type", p, ptypes, "packages", &pt, e)) < 0)
                        return r;
        }
        for (size_t i = 0; PACKAGE_LISTS[i]; i++) {
                const json_t *l = json_object_get(pv, PACKAGE_LISTS[i]);
                json_t *out;
                if (l && !json_is_null(l)) {
                        v1_path lp;
                        v1_path_key(lp, p, PACKAGE_LISTS[i]);
                        if ((r = parse_string_list(l, lp, &out, e)) < 0)
                                return r;
                } else
                        out = json_array();
                if (!out || json_object_set_new(pk, PACKAGE_LISTS[i], out) < 0)
                        return -ENOMEM;
        }
        *ret = json_pack("{s:s, s:O, s:O}", "type", type, "networking", net, "packages", pk);
        if (!*ret)
                return -ENOMEM;
        /* hull's extension: "hull": {"tier": "container" | "kernel"} (docs/API.md) */
        const json_t *hv = json_object_get(v, "hull");
        if (hv && !json_is_null(hv)) {
                const char *tier;
                v1_path_key(p, path, "hull");
                if ((r = v1_want(hv, JSON_OBJECT, p, "an object", e)) < 0 ||
                    (r = v1_check_object(hv, p, hkeys, e)) < 0 ||
                    (r = v1_get_enum(hv, "tier", p, tiers, "container", &tier, e)) < 0) {
                        json_decref(*ret);
                        *ret = NULL;
                        return r;
                }
                if (json_object_set_new(*ret, "hull", json_pack("{s:s}", "tier", tier)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static const char *const SCOPES[] = {"organization", "workspace", NULL};
static const char *const ENV_FIELDS[] = {"name", "config", "description", "metadata", "scope", NULL};

static int env_set(json_t *env, const char *key, const json_t *v, bool update, v1_err *e) {
        json_t *nv = NULL;
        int r = 0;
        if (eq(key, "name")) {
                if (json_is_null(v))
                        return v1_fail(e, 400, NULL, "name: cannot be cleared");
                if ((r = v1_want(v, JSON_STRING, "name", "a string", e)) < 0)
                        return r;
                if (json_string_length(v) == 0 || json_string_length(v) > V1_NAME_MAX ||
                    strlen(json_string_value(v)) != json_string_length(v))
                        return v1_fail(e, 400, NULL, "name: a name of 1 to %u bytes", V1_NAME_MAX);
                nv = json_incref((json_t *) v);
        } else if (eq(key, "description")) {
                if (!json_is_null(v) && (r = v1_want(v, JSON_STRING, "description", "a string or null", e)) < 0)
                        return r;
                if (json_string_length(v) > V1_TEXT_MAX)
                        return v1_fail(e, 400, NULL, "description: too long (at most %u bytes)", V1_TEXT_MAX);
                nv = v1_str_or_null(json_string_value(v));
        } else if (eq(key, "config")) {
                if (json_is_null(v)) {
                        if (update)
                                return 0;
                        nv = json_pack("{s:s}", "type", "cloud");
                        if (!nv)
                                return -ENOMEM;
                        json_auto_t *def = nv;
                        r = parse_env_config(def, "config", &nv, e);
                } else
                        r = parse_env_config(v, "config", &nv, e);
                if (r < 0)
                        return r;
                const char *old = json_string_value(json_object_get(json_object_get(env, "config"), "type"));
                const char *new = json_string_value(json_object_get(nv, "type"));
                if (update && !eq(old, new)) {
                        r = v1_fail(e, 400, "invalid_config_type_change",
                                    "config.type: cannot change from '%s' to '%s' (create a new environment)", old,
                                    new);
                        json_decref(nv);
                        return r;
                }
        } else if (eq(key, "metadata")) {
                if (update) {
                        if (json_is_null(v))
                                return 0;
                        r = v1_metadata_patch(json_object_get(env, "metadata"), v, "metadata", &nv, e);
                } else if (json_is_null(v))
                        nv = json_object();
                else
                        r = v1_metadata_patch(NULL, v, "metadata", &nv, e);
        } else if (eq(key, "scope")) {
                json_auto_t *w = json_pack("{s:O}", "scope", v);
                const char *s;
                if (!w)
                        return -ENOMEM;
                if ((r = v1_get_enum(w, "scope", "", SCOPES, NULL, &s, e)) < 0)
                        return r;
                nv = json_string(s);
        }
        if (r < 0)
                return r;
        if (!nv || json_object_set_new(env, key, nv) < 0)
                return -ENOMEM;
        return 0;
}

int v1_environment_create(const json_t *body, const char *id, const char *now, json_t **ret, v1_err *e) {
        int r = v1_check_object(body, "", ENV_FIELDS, e);
        if (r < 0)
                return r;
        if (!json_object_get(body, "name"))
                return v1_fail(e, 400, NULL, "name: required");
        json_auto_t *env = json_pack("{s:s, s:s, s:n, s:n, s:{}, s:{s:s, s:{s:s}, s:{s:s, s:[], s:[], s:[], s:[], "
                                     "s:[], s:[]}}, s:s, s:s, s:s, s:n}",
                                     "id", id, "type", "environment", "name", "description", "metadata", "config",
                                     "type", "cloud", "networking", "type", "unrestricted", "packages", "type",
                                     "packages", "apt", "cargo", "gem", "go", "npm", "pip", "scope", "organization",
                                     "created_at", now, "updated_at", now, "archived_at");
        if (!env)
                return -ENOMEM;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) body, k, v) if ((r = env_set(env, k, v, false, e)) < 0) return r;
        *ret = TAKE_PTR(env);
        return 0;
}

int v1_environment_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, v1_err *e) {
        int r = v1_check_object(body, "", ENV_FIELDS, e);
        if (r < 0)
                return r;
        const json_t *arch = json_object_get(cur, "archived_at");
        if (arch && !json_is_null(arch))
                return v1_fail(e, 400, "environment_archived",
                               "the environment is archived and cannot be updated (create a new one)");
        json_auto_t *env = json_deep_copy(cur);
        if (!env)
                return -ENOMEM;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) body, k, v) if ((r = env_set(env, k, v, true, e)) < 0) return r;
        if (json_equal(env, (json_t *) cur)) {
                *ret = NULL;
                return 0;
        }
        if (json_object_set_new(env, "updated_at", json_string(now)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(env);
        return 0;
}
