/* env-spec.c: an environment's spec, parsed and checked (see env-spec.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env-spec.h"
#include "macro.h"

static const char *const pm_names[_ENV_PM_MAX] = {
        [ENV_PM_APT] = "apt",
        [ENV_PM_NPM] = "npm",
        [ENV_PM_PIP] = "pip",
};

static const char *const net_names[_ENV_NET_MAX] = {
        [ENV_NET_NONE] = "none",
        [ENV_NET_LIMITED] = "limited",
        [ENV_NET_UNRESTRICTED] = "unrestricted",
};

const char *env_pm_to_string(env_pm pm) {
        return pm >= 0 && pm < _ENV_PM_MAX ? pm_names[pm] : NULL;
}

int env_pm_from_string(const char *s, env_pm *ret) {
        for (int i = 0; s && i < _ENV_PM_MAX; i++)
                if (strcmp(s, pm_names[i]) == 0) {
                        *ret = (env_pm) i;
                        return 0;
                }
        return -EINVAL;
}

const char *env_net_to_string(env_net n) {
        return n >= 0 && n < _ENV_NET_MAX ? net_names[n] : NULL;
}

static bool desc_part_ok(const char *s, bool may_be_empty) {
        if (!s || !s[0])
                return may_be_empty;
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == 0x7f)
                        return false;
        return true;
}

int env_describe(const char *name, const char *version, const char *digest, const char *net, char ret[ENV_DESC_MAX]) {
        if (!desc_part_ok(name, false) || !desc_part_ok(version, true) || !desc_part_ok(digest, true) ||
            !desc_part_ok(net, false))
                return -EINVAL;
        bool v = version && version[0], d = digest && digest[0];
        int n = snprintf(ret, ENV_DESC_MAX, "hull-env:%s%s%s layer=%s%s net=%s", name, v ? "@" : "", v ? version : "",
                         d ? "sha256:" : "none", d ? digest : "", net);
        return n < 0 ? -EINVAL : (size_t) n >= ENV_DESC_MAX ? -ENAMETOOLONG : 0;
}

int env_net_from_string(const char *s, env_net *ret) {
        for (int i = 0; s && i < _ENV_NET_MAX; i++)
                if (strcmp(s, net_names[i]) == 0) {
                        *ret = (env_net) i;
                        return 0;
                }
        return -EINVAL;
}

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c) {
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool all_in(const char *s, size_t n, const char *extra, bool upper) {
        for (size_t i = 0; i < n; i++)
                if (!(upper ? is_alnum(s[i]) : is_lower_alnum(s[i])) && !strchr(extra, s[i]))
                        return false;
        return true;
}

bool env_name_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        return n > 0 && n < ENV_NAME_MAX && is_lower_alnum(s[0]) && all_in(s, n, "._-", false);
}

void env_pkg_done(env_pkg *p) {
        free(p->spec);
        free(p->name);
        free(p->version);
        *p = (env_pkg){0};
}

/* Debian: name [a-z0-9][a-z0-9+.-]+, "=version" of [A-Za-z0-9.+~:-] starting with a digit. */
static int split_apt(const char *s, size_t *ret_name, const char **ret_ver) {
        const char *eq = strchr(s, '=');
        size_t n = eq ? (size_t) (eq - s) : strlen(s);
        if (n < 2 || !is_lower_alnum(s[0]) || !all_in(s, n, "+.-", false))
                return -EINVAL;
        if (eq) {
                const char *v = eq + 1;
                if (!(v[0] >= '0' && v[0] <= '9') || !all_in(v, strlen(v), ".+~:-", true))
                        return -EINVAL;
        }
        *ret_name = n;
        *ret_ver = eq ? eq + 1 : NULL;
        return 0;
}

/* npm: [@scope/]name of [a-z0-9._~-] (not starting with . or _), "@version" of
 * [A-Za-z0-9.^~*+-] (a version or a range without spaces). */
static bool npm_part_ok(const char *s, size_t n) {
        return n > 0 && s[0] != '.' && s[0] != '_' && s[0] != '-' && all_in(s, n, "._~-", false);
}

static int split_npm(const char *s, size_t *ret_name, const char **ret_ver) {
        const char *at = strchr(s + (s[0] == '@'), '@');
        size_t n = at ? (size_t) (at - s) : strlen(s);
        if (s[0] == '@') {
                const char *slash = memchr(s, '/', n);
                if (!slash || !npm_part_ok(s + 1, (size_t) (slash - s - 1)) ||
                    !npm_part_ok(slash + 1, n - (size_t) (slash - s) - 1))
                        return -EINVAL;
        } else if (!npm_part_ok(s, n))
                return -EINVAL;
        if (at && (at[1] == '\0' || !all_in(at + 1, strlen(at + 1), ".^~*+-", true)))
                return -EINVAL;
        *ret_name = n;
        *ret_ver = at ? at + 1 : NULL;
        return 0;
}

/* PyPI: name of [A-Za-z0-9._-] starting with a letter or digit, then an operator (== >= <= ~=
 * != > <) and a version of [A-Za-z0-9.*+!-]. */
static int split_pip(const char *s, size_t *ret_name, const char **ret_ver) {
        size_t n = strcspn(s, "=<>~!");
        if (n == 0 || !is_alnum(s[0]) || !all_in(s, n, "._-", true))
                return -EINVAL;
        const char *v = s + n;
        if (*v) {
                static const char *const ops[] = {"==", ">=", "<=", "~=", "!=", ">", "<"};
                size_t k = 0;
                for (size_t i = 0; i < ELEMENTSOF(ops) && !k; i++)
                        if (strncmp(v, ops[i], strlen(ops[i])) == 0)
                                k = strlen(ops[i]);
                if (!k || v[k] == '\0' || !all_in(v + k, strlen(v + k), ".*+!-", true))
                        return -EINVAL;
        }
        *ret_name = n;
        *ret_ver = *v ? v : NULL;
        return 0;
}

int env_pkg_parse(env_pm pm, const char *s, const char *field, env_pkg *ret, hull_error *e) {
        static const char *const examples[_ENV_PM_MAX] = {
                [ENV_PM_APT] = "a Debian package name, optionally =VERSION: jq or jq=1.6-2.1",
                [ENV_PM_NPM] = "an npm package name, optionally @VERSION: left-pad or left-pad@1.3.0",
                [ENV_PM_PIP] = "a PyPI name, optionally ==VERSION: requests or requests==2.31.0",
        };
        size_t len = s ? strlen(s) : 0, n = 0;
        const char *ver = NULL;
        int r;
        if (pm < 0 || pm >= _ENV_PM_MAX)
                return hull_fail(e, -EINVAL, "env: %s: unknown package manager", field);
        if (len == 0 || len >= ENV_PACKAGE_MAX)
                return hull_fail(e, -EINVAL, "env: %s: a package is 1 to %u bytes (%s)", field, ENV_PACKAGE_MAX - 1,
                                 examples[pm]);
        switch (pm) {
        case ENV_PM_APT:
                r = split_apt(s, &n, &ver);
                break;
        case ENV_PM_NPM:
                r = split_npm(s, &n, &ver);
                break;
        case ENV_PM_PIP:
                r = split_pip(s, &n, &ver);
                break;
        case _ENV_PM_MAX:
        default:
                r = -EINVAL;
                break;
        }
        if (r < 0)
                return hull_fail(e, -EINVAL, "env: %s: '%.80s' is not a valid %s package (%s)", field, s, pm_names[pm],
                                 examples[pm]);
        env_pkg p = {.spec = strdup(s), .name = strndup(s, n), .version = ver ? strdup(ver) : NULL};
        if (!p.spec || !p.name || (ver && !p.version)) {
                env_pkg_done(&p);
                return hull_err(e, -ENOMEM, "env: out of memory");
        }
        *ret = p;
        return 0;
}

int env_spec_add_pkg(env_spec *s, env_pm pm, const char *pkg, hull_error *e) {
        char field[32];
        snprintf(field, sizeof(field), "packages.%s[%zu]", pm_names[pm], s->n_pkgs[pm]);
        env_pkg p;
        int r = env_pkg_parse(pm, pkg, field, &p, e);
        if (r < 0)
                return r;
        size_t i = 0;
        for (; i < s->n_pkgs[pm]; i++) {
                int c = strcmp(s->pkgs[pm][i].spec, p.spec);
                if (c == 0) {
                        env_pkg_done(&p);
                        return 0;
                }
                if (c > 0)
                        break;
        }
        for (size_t j = 0; j < s->n_pkgs[pm]; j++)
                if (strcmp(s->pkgs[pm][j].name, p.name) == 0) {
                        r = hull_fail(e, -EINVAL, "env: %s: %s is listed twice (%s and %s): name it once", field,
                                      p.name, s->pkgs[pm][j].spec, p.spec);
                        env_pkg_done(&p);
                        return r;
                }
        if (s->n_pkgs[pm] >= ENV_PACKAGES_MAX) {
                env_pkg_done(&p);
                return hull_fail(e, -EINVAL, "env: packages.%s: at most %u packages", pm_names[pm], ENV_PACKAGES_MAX);
        }
        env_pkg *v = realloc(s->pkgs[pm], (s->n_pkgs[pm] + 1) * sizeof(*v));
        if (!v) {
                env_pkg_done(&p);
                return hull_err(e, -ENOMEM, "env: out of memory");
        }
        memmove(v + i + 1, v + i, (s->n_pkgs[pm] - i) * sizeof(*v));
        v[i] = p;
        s->pkgs[pm] = v;
        s->n_pkgs[pm]++;
        return 0;
}

/* A host name ([a-z0-9-] labels joined by dots, at most 253 bytes) or "*." and one. */
static bool host_is_valid(const char *h) {
        size_t n = strlen(h);
        if (n >= ENV_HOST_MAX)
                return false;
        if (strncmp(h, "*.", 2) == 0) {
                h += 2;
                n -= 2;
        }
        if (n == 0 || h[0] == '.' || h[n - 1] == '.' || h[0] == '-')
                return false;
        size_t label = 0;
        for (size_t i = 0; i < n; i++) {
                if (h[i] == '.') {
                        if (label == 0)
                                return false;
                        label = 0;
                        continue;
                }
                if (!is_alnum(h[i]) && h[i] != '-')
                        return false;
                if (++label > 63)
                        return false;
        }
        return true;
}

int env_spec_add_host(env_spec *s, const char *host, hull_error *e) {
        if (!host_is_valid(host))
                return hull_fail(e, -EINVAL,
                                 "env: networking.allowed_hosts[%zu]: '%.80s' is not a host name (a name such as "
                                 "example.com, or *.example.com for every name below it)",
                                 s->n_allowed_hosts, host);
        for (size_t i = 0; i < s->n_allowed_hosts; i++)
                if (strcasecmp(s->allowed_hosts[i], host) == 0)
                        return 0;
        if (s->n_allowed_hosts >= ENV_HOSTS_MAX)
                return hull_fail(e, -EINVAL, "env: networking.allowed_hosts: at most %u hosts", ENV_HOSTS_MAX);
        char *c = strdup(host);
        char **v = c ? realloc(s->allowed_hosts, (s->n_allowed_hosts + 1) * sizeof(*v)) : NULL;
        if (!v) {
                free(c);
                return hull_err(e, -ENOMEM, "env: out of memory");
        }
        for (char *p = c; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char) (*p - 'A' + 'a');
        v[s->n_allowed_hosts++] = c;
        s->allowed_hosts = v;
        return 0;
}

int env_spec_check(const env_spec *s, hull_error *e) {
        if (s->net != ENV_NET_LIMITED && (s->n_allowed_hosts > 0 || s->allow_package_managers || s->allow_mcp_servers))
                return hull_fail(e, -EINVAL,
                                 "env: networking: allowed_hosts, allow_package_managers and allow_mcp_servers "
                                 "apply to limited networking only (networking.type is %s)",
                                 net_names[s->net]);
        return 0;
}

void env_spec_done(env_spec *s) {
        for (int pm = 0; pm < _ENV_PM_MAX; pm++) {
                for (size_t i = 0; i < s->n_pkgs[pm]; i++)
                        env_pkg_done(&s->pkgs[pm][i]);
                free(s->pkgs[pm]);
        }
        for (size_t i = 0; i < s->n_allowed_hosts; i++)
                free(s->allowed_hosts[i]);
        free(s->allowed_hosts);
        *s = (env_spec){0};
}

static int bool_field(const json_t *o, const char *key, bool *ret, hull_error *e) {
        const json_t *v = json_object_get(o, key);
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_boolean(v))
                return hull_fail(e, -EINVAL, "env: networking.%s: want true or false", key);
        *ret = json_is_true(v);
        return 0;
}

static int parse_networking(env_spec *s, const json_t *n, hull_error *e) {
        const char *key;
        const json_t *v;
        int r;
        if (!json_is_object(n))
                return hull_fail(e, -EINVAL, "env: networking: want an object such as {\"type\": \"none\"}");
        json_object_foreach(
                (json_t *) n, key,
                v) if (strcmp(key, "type") != 0 && strcmp(key, "allowed_hosts") != 0 &&
                       strcmp(key, "allow_package_managers") != 0 &&
                       strcmp(key, "allow_mcp_servers") !=
                               0) return hull_fail(e, -EINVAL,
                                                   "env: networking.%.64s: unknown field (type, allowed_hosts, "
                                                   "allow_package_managers, allow_mcp_servers)",
                                                   key);
        const json_t *t = json_object_get(n, "type");
        if (!json_is_string(t) || env_net_from_string(json_string_value(t), &s->net) < 0)
                return hull_fail(e, -EINVAL, "env: networking.type: want none, limited or unrestricted");
        const json_t *hosts = json_object_get(n, "allowed_hosts");
        if (hosts && !json_is_null(hosts)) {
                if (!json_is_array(hosts))
                        return hull_fail(e, -EINVAL, "env: networking.allowed_hosts: want an array of host names");
                size_t i;
                json_array_foreach(hosts, i, v) {
                        if (!json_is_string(v))
                                return hull_fail(e, -EINVAL, "env: networking.allowed_hosts[%zu]: want a string", i);
                        if ((r = env_spec_add_host(s, json_string_value(v), e)) < 0)
                                return r;
                }
        }
        if ((r = bool_field(n, "allow_package_managers", &s->allow_package_managers, e)) < 0 ||
            (r = bool_field(n, "allow_mcp_servers", &s->allow_mcp_servers, e)) < 0)
                return r;
        return 0;
}

static int parse_packages(env_spec *s, const json_t *p, hull_error *e) {
        const char *key;
        const json_t *v;
        int r;
        if (!json_is_object(p))
                return hull_fail(e, -EINVAL, "env: packages: want an object such as {\"apt\": [\"jq\"]}");
        json_object_foreach((json_t *) p, key, v) {
                env_pm pm;
                if (strcmp(key, "type") == 0)
                        continue; /* /v1's "packages" tag */
                if (env_pm_from_string(key, &pm) < 0) {
                        if ((strcmp(key, "cargo") == 0 || strcmp(key, "gem") == 0 || strcmp(key, "go") == 0) &&
                            (json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0)))
                                continue;
                        return hull_fail(e, -EINVAL,
                                         "env: packages.%.64s: hull installs apt, npm and pip packages only", key);
                }
                if (json_is_null(v))
                        continue;
                if (!json_is_array(v))
                        return hull_fail(e, -EINVAL, "env: packages.%s: want an array of package names", key);
                size_t i;
                const json_t *item;
                json_array_foreach(v, i, item) {
                        if (!json_is_string(item) || strlen(json_string_value(item)) != json_string_length(item))
                                return hull_fail(e, -EINVAL, "env: packages.%s[%zu]: want a string", key, i);
                        if ((r = env_spec_add_pkg(s, pm, json_string_value(item), e)) < 0)
                                return r;
                }
        }
        return 0;
}

int env_spec_from_json(const json_t *obj, env_spec *ret, hull_error *e) {
        _cleanup_(env_spec_done) env_spec s = {0};
        const char *key;
        const json_t *v;
        int r;
        if (!json_is_object(obj))
                return hull_fail(e, -EINVAL, "env: the spec must be a JSON object with packages and networking");
        json_object_foreach((json_t *) obj, key, v) {
                if (strcmp(key, "packages") == 0)
                        r = json_is_null(v) ? 0 : parse_packages(&s, v, e);
                else if (strcmp(key, "networking") == 0)
                        r = json_is_null(v) ? 0 : parse_networking(&s, v, e);
                else if (strcmp(key, "type") == 0)
                        r = json_is_string(v) && strcmp(json_string_value(v), "cloud") == 0
                                    ? 0
                                    : hull_fail(e, -EINVAL, "env: type: only \"cloud\" (or no type) is a spec");
                else
                        r = hull_fail(e, -EINVAL, "env: %.64s: unknown field (packages, networking)", key);
                if (r < 0)
                        return r;
        }
        if ((r = env_spec_check(&s, e)) < 0)
                return r;
        *ret = s;
        s = (env_spec){0};
        return 0;
}

int env_spec_parse(const char *text, size_t len, env_spec *ret, hull_error *e) {
        json_error_t je;
        if (len > ENV_SPEC_TEXT_MAX)
                return hull_fail(e, -EINVAL, "env: the spec is over %u bytes", ENV_SPEC_TEXT_MAX);
        _cleanup_(json_decrefp) json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!o)
                return hull_fail(e, -EINVAL, "env: the spec is not JSON: %.200s (line %d)", je.text, je.line);
        return env_spec_from_json(o, ret, e);
}

bool env_spec_has_packages(const env_spec *s) {
        for (int pm = 0; pm < _ENV_PM_MAX; pm++)
                if (s->n_pkgs[pm] > 0)
                        return true;
        return false;
}

static json_t *pkgs_json(const env_spec *s) {
        json_t *o = json_object();
        for (int pm = 0; o && pm < _ENV_PM_MAX; pm++) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < s->n_pkgs[pm]; i++)
                        if (json_array_append_new(a, json_string(s->pkgs[pm][i].spec)) < 0) {
                                json_decref(a);
                                a = NULL;
                        }
                if (!a || json_object_set_new(o, pm_names[pm], a) < 0) {
                        json_decref(o);
                        return NULL;
                }
        }
        return o;
}

json_t *env_spec_to_json(const env_spec *s) {
        _cleanup_(json_decrefp) json_t *net = json_pack("{s:s}", "type", net_names[s->net]);
        if (!net)
                return NULL;
        if (s->net == ENV_NET_LIMITED) {
                json_t *h = json_array();
                for (size_t i = 0; h && i < s->n_allowed_hosts; i++)
                        if (json_array_append_new(h, json_string(s->allowed_hosts[i])) < 0) {
                                json_decref(h);
                                h = NULL;
                        }
                if (!h || json_object_set_new(net, "allowed_hosts", h) < 0 ||
                    json_object_set_new(net, "allow_package_managers", json_boolean(s->allow_package_managers)) < 0 ||
                    json_object_set_new(net, "allow_mcp_servers", json_boolean(s->allow_mcp_servers)) < 0)
                        return NULL;
        }
        json_t *p = pkgs_json(s);
        if (!p)
                return NULL;
        return json_pack("{s:o,s:O}", "packages", p, "networking", net);
}

int env_spec_packages_canonical(const env_spec *s, char **ret) {
        _cleanup_(json_decrefp) json_t *p = pkgs_json(s);
        char *t = p ? json_dumps(p, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}
