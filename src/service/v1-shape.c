/* v1-shape.c: the /v1 request bodies checked and shaped into agents, environments, sessions and
 * client events (see v1-shape.h; the wire is ../shared/reference/cma-api.md §2-5). Pure: jansson
 * only. Every refusal names the field's path. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "macro.h"
#include "v1-shape.h"

typedef char v1_path[V1_FIELD_PATH_MAX];

static inline bool eq(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

/* A field's path; a path too long for the buffer is cut short (it only ever names the field). */
static void path_key(v1_path p, const char *base, const char *key) {
        int k = !base || !*base ? snprintf(p, V1_FIELD_PATH_MAX, "%.100s", key)
                                : snprintf(p, V1_FIELD_PATH_MAX, "%s.%.64s", base, key);
        if (k < 0)
                p[0] = '\0';
}

static void path_idx(v1_path p, const char *base, size_t i) {
        if (snprintf(p, V1_FIELD_PATH_MAX, "%s[%zu]", base, i) < 0)
                p[0] = '\0';
}

int v1_fail(v1_err *e, unsigned status, const char *code, const char *fmt, ...) {
        const char *type;
        int r;
        switch (status) {
        case 400:
        case 422:
                type = "invalid_request_error", r = -EINVAL;
                break;
        case 401:
                type = "authentication_error", r = -EACCES;
                break;
        case 403:
                type = "permission_error", r = -EPERM;
                break;
        case 404:
                type = "not_found_error", r = -ENOENT;
                break;
        case 409:
                type = "conflict_error", r = eq(code, "version_conflict") ? -ESTALE : -EBUSY;
                break;
        case 413:
                type = "request_too_large", r = -E2BIG;
                break;
        case 429:
                type = "rate_limit_error", r = -EAGAIN;
                break;
        case 529:
                type = "overloaded_error", r = -EAGAIN;
                break;
        default:
                type = "api_error", r = -EIO;
                break;
        }
        if (!e)
                return r;
        e->status = status;
        snprintf(e->type, sizeof(e->type), "%s", type);
        snprintf(e->code, sizeof(e->code), "%s", code ? code : "");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
        return r;
}

/* "a, b, c" from a NULL-ended list. */
static const char *join(const char *const *v, char *buf, size_t n) {
        size_t off = 0;
        buf[0] = '\0';
        for (size_t i = 0; v[i] && off < n; i++) {
                int k = snprintf(buf + off, n - off, "%s%s", i ? ", " : "", v[i]);
                if (k < 0)
                        break;
                off += (size_t) k;
        }
        return buf;
}

static bool in_list(const char *s, const char *const *v) {
        for (size_t i = 0; v[i]; i++)
                if (eq(s, v[i]))
                        return true;
        return false;
}

static const char *json_kind(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        case JSON_NULL:
        default:
                return "null";
        }
}

static int want(const json_t *v, json_type t, const char *path, const char *what, v1_err *e) {
        if (v && json_typeof(v) == t)
                return 0;
        return v1_fail(e, 400, NULL, "%s: must be %s, not %s", path, what, v ? json_kind(v) : "missing");
}

static int check_object(const json_t *o, const char *path, const char *const *known, v1_err *e) {
        if (!json_is_object(o))
                return v1_fail(e, 400, NULL, "%s: must be an object, not %s", *path ? path : "body",
                               o ? json_kind(o) : "missing");
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) o, k, v) {
                if (!in_list(k, known)) {
                        char list[384];
                        v1_path p;
                        path_key(p, path, k);
                        return v1_fail(e, 400, NULL, "%s: unknown field (known: %s)", p,
                                       join(known, list, sizeof(list)));
                }
        }
        return 0;
}

enum {
        F_REQUIRED = 1 << 0, /* absent refused */
        F_NULLABLE = 1 << 1, /* null accepted (*ret NULL) */
        F_NONEMPTY = 1 << 2, /* "" refused */
};

/* o[key] as a string of at most max bytes; *ret NULL when absent (or null with F_NULLABLE). */
static int get_str(const json_t *o, const char *key, const char *path, size_t max, unsigned flags, const char **ret,
                   v1_err *e) {
        v1_path p;
        path_key(p, path, key);
        const json_t *v = json_object_get(o, key);
        *ret = NULL;
        if (!v) {
                if (flags & F_REQUIRED)
                        return v1_fail(e, 400, NULL, "%s: required", p);
                return 0;
        }
        if (json_is_null(v) && (flags & F_NULLABLE))
                return 0;
        if (!json_is_string(v))
                return v1_fail(e, 400, NULL, "%s: must be a string, not %s", p, json_kind(v));
        size_t n = json_string_length(v);
        if (n > max)
                return v1_fail(e, 400, NULL, "%s: too long (%zu bytes, at most %zu)", p, n, max);
        if (n == 0 && (flags & F_NONEMPTY))
                return v1_fail(e, 400, NULL, "%s: must not be empty", p);
        if (strlen(json_string_value(v)) != n)
                return v1_fail(e, 400, NULL, "%s: must not contain NUL characters", p);
        *ret = json_string_value(v);
        return 0;
}

/* o[key] as one of the strings in v (required unless def is given). */
static int get_enum(const json_t *o, const char *key, const char *path, const char *const *v, const char *def,
                    const char **ret, v1_err *e) {
        const char *s;
        int r = get_str(o, key, path, V1_NAME_MAX, def ? 0 : F_REQUIRED, &s, e);
        if (r < 0)
                return r;
        if (!s) {
                *ret = def;
                return 0;
        }
        if (!in_list(s, v)) {
                char list[256];
                v1_path p;
                path_key(p, path, key);
                return v1_fail(e, 400, NULL, "%s: unknown value '%.64s' (one of %s)", p, s,
                               join(v, list, sizeof(list)));
        }
        *ret = s;
        return 0;
}

static int get_bool(const json_t *o, const char *key, const char *path, int *ret, v1_err *e) {
        const json_t *v = json_object_get(o, key);
        if (!v) {
                *ret = -1;
                return 0;
        }
        v1_path p;
        path_key(p, path, key);
        int r = want(v, json_is_true(v) ? JSON_TRUE : JSON_FALSE, p, "a boolean", e);
        if (r < 0)
                return r;
        *ret = json_is_true(v);
        return 0;
}

static json_t *str_or_null(const char *s) {
        return s && *s ? json_string(s) : json_null();
}

/* ---- metadata ---- */

int v1_metadata_check(const json_t *m, const char *field, v1_err *e) {
        if (!json_is_object(m))
                return v1_fail(e, 400, NULL, "%s: must be an object of string values, not %s", field,
                               m ? json_kind(m) : "missing");
        if (json_object_size(m) > V1_METADATA_KEYS_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu keys, at most %u", field, json_object_size(m),
                               V1_METADATA_KEYS_MAX);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) m, k, v) {
                v1_path p;
                path_key(p, field, k);
                size_t kn = strlen(k);
                if (kn == 0 || kn > V1_METADATA_KEY_MAX)
                        return v1_fail(e, 400, NULL, "%s: a key must have 1 to %u bytes", p, V1_METADATA_KEY_MAX);
                if (!json_is_string(v))
                        return v1_fail(e, 400, NULL, "%s: must be a string, not %s", p, json_kind(v));
                if (json_string_length(v) > V1_METADATA_VALUE_MAX)
                        return v1_fail(e, 400, NULL, "%s: too long (%zu bytes, at most %u)", p, json_string_length(v),
                                       V1_METADATA_VALUE_MAX);
        }
        return 0;
}

int v1_metadata_patch(const json_t *cur, const json_t *patch, const char *field, json_t **ret, v1_err *e) {
        if (!json_is_object(patch))
                return v1_fail(e, 400, NULL, "%s: must be an object, not %s", field,
                               patch ? json_kind(patch) : "missing");
        json_auto_t *m = json_is_object(cur) ? json_deep_copy(cur) : json_object();
        if (!m)
                return -ENOMEM;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) patch, k, v) {
                v1_path p;
                path_key(p, field, k);
                if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0)) {
                        json_object_del(m, k);
                        continue;
                }
                if (!json_is_string(v))
                        return v1_fail(e, 400, NULL, "%s: must be a string (or null to delete the key), not %s", p,
                                       json_kind(v));
                if (json_object_set(m, k, v) < 0)
                        return -ENOMEM;
        }
        int r = v1_metadata_check(m, field, e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* ---- agents: tools ---- */

static const char *const AGENT_TOOLS[] = {"bash", "edit",      "read",       "write", "glob",
                                          "grep", "web_fetch", "web_search", NULL};
static const char *const HULL_TOOLS[] = {"run_python",  "inspect_handle", "query_handle",
                                         "read_handle", "publish_file",   NULL};
static const char *const POLICIES[] = {"always_allow", "always_ask", "auto", NULL};
static const char *const TOOLSET_TYPES[] = {"agent_toolset_20260401", "hull_toolset_20261201", "mcp_toolset", "custom",
                                            NULL};

static int parse_policy(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", NULL};
        const char *t;
        int r = check_object(v, path, keys, e);
        if (r < 0)
                return r;
        r = get_enum(v, "type", path, POLICIES, NULL, &t, e);
        if (r < 0)
                return r;
        *ret = json_pack("{s:s}", "type", t);
        return *ret ? 0 : -ENOMEM;
}

/* A {enabled?, permission_policy?} (plus "name" and "type" for a config): *ret_enabled -1 when
 * not given, *ret_policy NULL when not given. */
static int parse_tool_config(const json_t *v, const char *path, bool is_config, int *ret_enabled, json_t **ret_policy,
                             v1_err *e) {
        static const char *const dkeys[] = {"enabled", "permission_policy", NULL};
        static const char *const ckeys[] = {"name", "type", "enabled", "permission_policy", NULL};
        int r = check_object(v, path, is_config ? ckeys : dkeys, e);
        if (r < 0)
                return r;
        r = get_bool(v, "enabled", path, ret_enabled, e);
        if (r < 0)
                return r;
        *ret_policy = NULL;
        const json_t *pp = json_object_get(v, "permission_policy");
        if (pp) {
                v1_path p;
                path_key(p, path, "permission_policy");
                return parse_policy(pp, p, ret_policy, e);
        }
        return 0;
}

static json_t *resolved_config(const char *name, int enabled, json_t *policy) {
        return json_pack("{s:s, s:s, s:b, s:O}", "type", name, "name", name, "enabled", enabled, "permission_policy",
                         policy);
}

/* A toolset whose tools are named in names (NULL: an mcp_toolset, whose configs name the tools). */
static int parse_toolset(const json_t *ts, const char *path, const char *type, const char *const *names,
                         json_t *tool_names, json_t **ret, size_t *n_tools, v1_err *e) {
        static const char *const bkeys[] = {"type", "default_config", "configs", NULL};
        static const char *const mkeys[] = {"type", "mcp_server_name", "default_config", "configs", NULL};
        const char *server = NULL;
        int r = check_object(ts, path, names ? bkeys : mkeys, e);
        if (r < 0)
                return r;
        if (!names) {
                r = get_str(ts, "mcp_server_name", path, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &server, e);
                if (r < 0)
                        return r;
        }

        int def_enabled = -1;
        json_auto_t *def_policy = NULL;
        const json_t *dc = json_object_get(ts, "default_config");
        if (dc && !json_is_null(dc)) {
                v1_path p;
                path_key(p, path, "default_config");
                r = parse_tool_config(dc, p, false, &def_enabled, &def_policy, e);
                if (r < 0)
                        return r;
        }
        if (def_enabled < 0)
                def_enabled = 1;
        if (!def_policy)
                def_policy = json_pack("{s:s}", "type", names ? "always_allow" : "always_ask");
        if (!def_policy)
                return -ENOMEM;

        v1_path cpath;
        path_key(cpath, path, "configs");
        const json_t *configs = json_object_get(ts, "configs");
        if (configs && json_is_null(configs))
                configs = NULL;
        if (configs && (r = want(configs, JSON_ARRAY, cpath, "an array", e)) < 0)
                return r;
        if (json_array_size(configs) > V1_TOOLS_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu tools, at most %u in all", cpath, json_array_size(configs),
                               V1_TOOLS_MAX);

        /* Each config checked; seen maps a tool's name to its resolved config. */
        json_auto_t *seen = json_object(), *order = json_array();
        if (!seen || !order)
                return -ENOMEM;
        size_t i;
        json_t *c;
        json_array_foreach(configs, i, c) {
                v1_path p, np;
                path_idx(p, cpath, i);
                path_key(np, p, "name");
                int en;
                json_auto_t *pol = NULL;
                const char *name, *ctype;
                r = parse_tool_config(c, p, true, &en, &pol, e);
                if (r < 0)
                        return r;
                r = get_str(c, "name", p, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &name, e);
                if (r < 0)
                        return r;
                if (names && !in_list(name, names)) {
                        char list[256];
                        return v1_fail(e, 400, NULL, "%s: unknown tool '%.64s' (one of %s)", np, name,
                                       join(names, list, sizeof(list)));
                }
                r = get_str(c, "type", p, V1_NAME_MAX, 0, &ctype, e);
                if (r < 0)
                        return r;
                if (ctype && !eq(ctype, name)) {
                        v1_path tp;
                        path_key(tp, p, "type");
                        return v1_fail(e, 400, NULL, "%s: must equal the name '%.64s' when given", tp, name);
                }
                if (json_object_get(seen, name))
                        return v1_fail(e, 400, NULL, "%s: tool '%.64s' configured twice", np, name);
                json_t *rc = resolved_config(name, en < 0 ? def_enabled : en, pol ? pol : def_policy);
                if (!rc || json_object_set_new(seen, name, rc) < 0 ||
                    json_array_append_new(order, json_string(name)) < 0)
                        return -ENOMEM;
        }

        json_auto_t *out = json_pack("{s:s}", "type", type);
        json_auto_t *list = json_array();
        if (!out || !list)
                return -ENOMEM;
        if (server && json_object_set_new(out, "mcp_server_name", json_string(server)) < 0)
                return -ENOMEM;
        if (json_object_set_new(out, "default_config",
                                json_pack("{s:b, s:O}", "enabled", def_enabled, "permission_policy", def_policy)) < 0)
                return -ENOMEM;
        if (names) {
                for (size_t k = 0; names[k]; k++) {
                        json_t *rc = json_object_get(seen, names[k]);
                        if (json_array_append_new(list, rc ? json_incref(rc)
                                                           : resolved_config(names[k], def_enabled, def_policy)) < 0)
                                return -ENOMEM;
                        if (json_object_set_new(tool_names, names[k], json_true()) < 0)
                                return -ENOMEM;
                        (*n_tools)++;
                }
        } else {
                json_t *n;
                json_array_foreach(order, i, n) {
                        if (json_array_append(list, json_object_get(seen, json_string_value(n))) < 0)
                                return -ENOMEM;
                        (*n_tools)++;
                }
        }
        if (json_object_set(out, "configs", list) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

static bool tool_name_ok(const char *s) {
        size_t n = strlen(s);
        if (n < 1 || n > 64)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-'))
                        return false;
        }
        return true;
}

static int parse_custom_tool(const json_t *t, const char *path, json_t *tool_names, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", "name", "description", "input_schema", NULL};
        const char *name, *desc;
        int r = check_object(t, path, keys, e);
        if (r < 0)
                return r;
        r = get_str(t, "name", path, 64, F_REQUIRED | F_NONEMPTY, &name, e);
        if (r < 0)
                return r;
        v1_path p;
        path_key(p, path, "name");
        if (!tool_name_ok(name))
                return v1_fail(e, 400, NULL, "%s: '%.64s' is not a tool name (1 to 64 of a-z A-Z 0-9 _ -)", p, name);
        if (json_object_get(tool_names, name))
                return v1_fail(e, 400, NULL, "%s: a tool named '%s' already exists (tool names are unique)", p, name);
        r = get_str(t, "description", path, V1_TEXT_MAX, F_REQUIRED, &desc, e);
        if (r < 0)
                return r;
        path_key(p, path, "input_schema");
        const json_t *s = json_object_get(t, "input_schema");
        if ((r = want(s, JSON_OBJECT, p, "a JSON Schema object", e)) < 0)
                return r;
        const json_t *st = json_object_get(s, "type");
        if (!json_is_string(st) || !eq(json_string_value(st), "object"))
                return v1_fail(e, 400, NULL, "%s.type: must be \"object\"", p);
        const json_t *props = json_object_get(s, "properties");
        if (props && !json_is_object(props))
                return v1_fail(e, 400, NULL, "%s.properties: must be an object, not %s", p, json_kind(props));
        if (json_object_set_new(tool_names, name, json_true()) < 0)
                return -ENOMEM;
        *ret = json_pack("{s:s, s:s, s:s, s:O}", "type", "custom", "name", name, "description", desc, "input_schema",
                         s);
        return *ret ? 0 : -ENOMEM;
}

/* tools (an array of toolsets) → resolved. Built-in toolsets first claim their names so a custom
 * tool cannot shadow one wherever it stands. */
static int parse_tools(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        int r = want(v, JSON_ARRAY, path, "an array of toolsets", e);
        if (r < 0)
                return r;
        json_auto_t *out = json_array(), *names = json_object(), *types = json_object(), *servers = json_object();
        if (!out || !names || !types || !servers)
                return -ENOMEM;
        size_t n_tools = 0, i;
        json_t *ts;
        if (json_array_size(v) > V1_TOOLS_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu toolsets, at most %u tools in all", path, json_array_size(v),
                               V1_TOOLS_MAX);
        json_array_foreach(v, i, ts) {
                const json_t *t = json_object_get(ts, "type");
                if (json_is_string(t) && (eq(json_string_value(t), "agent_toolset_20260401") ||
                                          eq(json_string_value(t), "hull_toolset_20261201"))) {
                        const char *const *set =
                                eq(json_string_value(t), "agent_toolset_20260401") ? AGENT_TOOLS : HULL_TOOLS;
                        for (size_t k = 0; set[k]; k++)
                                if (json_object_set_new(names, set[k], json_true()) < 0)
                                        return -ENOMEM;
                }
        }
        json_array_foreach(v, i, ts) {
                v1_path p;
                path_idx(p, path, i);
                const char *type;
                if ((r = want(ts, JSON_OBJECT, p, "an object", e)) < 0)
                        return r;
                r = get_enum(ts, "type", p, TOOLSET_TYPES, NULL, &type, e);
                if (r < 0)
                        return r;
                json_t *one = NULL;
                json_auto_t *scratch = json_object();
                if (!scratch)
                        return -ENOMEM;
                if (eq(type, "custom")) {
                        r = parse_custom_tool(ts, p, names, &one, e);
                        n_tools++;
                } else if (eq(type, "mcp_toolset")) {
                        r = parse_toolset(ts, p, type, NULL, scratch, &one, &n_tools, e);
                        if (r >= 0) {
                                const char *srv = json_string_value(json_object_get(one, "mcp_server_name"));
                                if (json_object_get(servers, srv)) {
                                        json_decref(one);
                                        return v1_fail(
                                                e, 400, NULL,
                                                "%s.mcp_server_name: a second mcp_toolset for server '%.64s' (one "
                                                "per server)",
                                                p, srv);
                                }
                                json_object_set_new(servers, srv, json_true());
                        }
                } else {
                        if (json_object_get(types, type))
                                return v1_fail(e, 400, NULL, "%s.type: a second %s (one per agent)", p, type);
                        if (json_object_set_new(types, type, json_true()) < 0)
                                return -ENOMEM;
                        r = parse_toolset(ts, p, type, eq(type, "agent_toolset_20260401") ? AGENT_TOOLS : HULL_TOOLS,
                                          scratch, &one, &n_tools, e);
                }
                if (r < 0)
                        return r;
                if (json_array_append_new(out, one) < 0)
                        return -ENOMEM;
                if (n_tools > V1_TOOLS_MAX)
                        return v1_fail(e, 400, NULL, "%s: more than %u tools in all", path, V1_TOOLS_MAX);
        }
        *ret = TAKE_PTR(out);
        return 0;
}

static int parse_mcp_servers(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", "name", "url", NULL};
        static const char *const types[] = {"url", NULL};
        int r = want(v, JSON_ARRAY, path, "an array", e);
        if (r < 0)
                return r;
        if (json_array_size(v) > V1_MCP_SERVERS_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu servers, at most %u", path, json_array_size(v),
                               V1_MCP_SERVERS_MAX);
        json_auto_t *out = json_array(), *seen = json_object();
        if (!out || !seen)
                return -ENOMEM;
        size_t i;
        json_t *s;
        json_array_foreach(v, i, s) {
                v1_path p;
                path_idx(p, path, i);
                const char *type, *name, *url;
                if ((r = check_object(s, p, keys, e)) < 0 || (r = get_enum(s, "type", p, types, NULL, &type, e)) < 0 ||
                    (r = get_str(s, "name", p, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &name, e)) < 0 ||
                    (r = get_str(s, "url", p, V1_TEXT_MAX, F_REQUIRED | F_NONEMPTY, &url, e)) < 0)
                        return r;
                /* the name prefixes the server's tool names (SERVER__TOOL), which the providers limit */
                if (strlen(name) > MCP_SERVER_NAME_MAX || !tool_name_ok(name))
                        return v1_fail(e, 400, NULL,
                                       "%s.name: '%.64s' is not a server name hull takes (1 to %u letters, digits, "
                                       "'_' and '-': it prefixes the server's tool names)",
                                       p, name, MCP_SERVER_NAME_MAX);
                if (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0)
                        return v1_fail(e, 400, NULL, "%s.url: must be an http:// or https:// URL", p);
                if (json_object_get(seen, name))
                        return v1_fail(e, 400, NULL, "%s.name: a second server named '%.64s'", p, name);
                if (json_object_set_new(seen, name, json_true()) < 0 ||
                    json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "type", type, "name", name, "url", url)) <
                            0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* Every mcp_toolset names a server of mcp_servers, and every server is used by one. */
static int check_mcp(const json_t *tools, const json_t *servers, const char *path, v1_err *e) {
        size_t i, j;
        json_t *t, *s;
        v1_path p;
        json_array_foreach(tools, i, t) {
                if (!eq(json_string_value(json_object_get(t, "type")), "mcp_toolset"))
                        continue;
                const char *name = json_string_value(json_object_get(t, "mcp_server_name"));
                bool found = false;
                json_array_foreach(servers, j, s) found =
                        found || eq(json_string_value(json_object_get(s, "name")), name);
                if (!found) {
                        path_key(p, path, "tools");
                        return v1_fail(e, 400, NULL,
                                       "%s[%zu].mcp_server_name: no server named '%.64s' in mcp_servers (add it there)",
                                       p, i, name);
                }
        }
        json_array_foreach(servers, j, s) {
                const char *name = json_string_value(json_object_get(s, "name"));
                bool found = false;
                json_array_foreach(tools, i, t) found =
                        found || (eq(json_string_value(json_object_get(t, "type")), "mcp_toolset") &&
                                  eq(json_string_value(json_object_get(t, "mcp_server_name")), name));
                if (!found) {
                        path_key(p, path, "mcp_servers");
                        return v1_fail(e, 400, NULL,
                                       "%s[%zu]: server '%.64s' is not used by any tool (add an mcp_toolset with "
                                       "mcp_server_name '%.64s' to tools, or remove it)",
                                       p, j, name, name);
                }
        }
        return 0;
}

static int parse_skills(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", "skill_id", "version", NULL};
        static const char *const types[] = {"anthropic", "custom", NULL};
        int r = want(v, JSON_ARRAY, path, "an array", e);
        if (r < 0)
                return r;
        if (json_array_size(v) > V1_SKILLS_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu skills, at most %u", path, json_array_size(v), V1_SKILLS_MAX);
        json_auto_t *out = json_array();
        if (!out)
                return -ENOMEM;
        size_t i;
        json_t *s;
        json_array_foreach(v, i, s) {
                v1_path p;
                path_idx(p, path, i);
                const char *type, *id;
                if ((r = check_object(s, p, keys, e)) < 0 || (r = get_enum(s, "type", p, types, NULL, &type, e)) < 0 ||
                    (r = get_str(s, "skill_id", p, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &id, e)) < 0)
                        return r;
                json_t *ver = json_object_get(s, "version");
                if (ver && !json_is_null(ver) && !json_is_string(ver) && !json_is_integer(ver))
                        return v1_fail(e, 400, NULL, "%s.version: must be a string or an integer, not %s", p,
                                       json_kind(ver));
                if (json_is_string(ver) && json_string_length(ver) > V1_NAME_MAX)
                        return v1_fail(e, 400, NULL, "%s.version: too long", p);
                json_t *o = json_pack("{s:s, s:s}", "type", type, "skill_id", id);
                if (!o || (ver && json_object_set(o, "version", ver) < 0) || json_array_append_new(out, o) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

static int parse_model(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"id", "effort", "speed", "inference_geo", NULL};
        static const char *const efforts[] = {"low", "medium", "high", "xhigh", "max", NULL};
        static const char *const speeds[] = {"standard", "fast", NULL};
        static const char *const ekeys[] = {"type", NULL};
        if (json_is_string(v)) {
                size_t n = json_string_length(v);
                if (n == 0 || n > V1_NAME_MAX || strlen(json_string_value(v)) != n)
                        return v1_fail(e, 400, NULL, "%s: a model id of 1 to %u bytes", path, V1_NAME_MAX);
                *ret = json_pack("{s:O, s:s}", "id", v, "speed", "standard");
                return *ret ? 0 : -ENOMEM;
        }
        const char *id, *speed, *geo, *effort = NULL;
        int r = check_object(v, path, keys, e);
        if (r < 0)
                return r;
        if ((r = get_str(v, "id", path, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &id, e)) < 0 ||
            (r = get_enum(v, "speed", path, speeds, "standard", &speed, e)) < 0 ||
            (r = get_str(v, "inference_geo", path, V1_NAME_MAX, F_NULLABLE, &geo, e)) < 0)
                return r;
        const json_t *ev = json_object_get(v, "effort");
        v1_path p;
        path_key(p, path, "effort");
        if (json_is_string(ev)) {
                effort = json_string_value(ev);
                if (!in_list(effort, efforts))
                        return v1_fail(e, 400, NULL,
                                       "%s: unknown effort '%.32s' (one of low, medium, high, xhigh, max)", p, effort);
        } else if (ev && !json_is_null(ev)) {
                if ((r = check_object(ev, p, ekeys, e)) < 0 ||
                    (r = get_enum(ev, "type", p, efforts, NULL, &effort, e)) < 0)
                        return r;
        }
        json_auto_t *m = json_pack("{s:s}", "id", id);
        if (!m || (effort && json_object_set_new(m, "effort", json_pack("{s:s}", "type", effort)) < 0) ||
            json_object_set_new(m, "speed", json_string(speed)) < 0 ||
            (geo && json_object_set_new(m, "inference_geo", json_string(geo)) < 0))
                return -ENOMEM;
        *ret = TAKE_PTR(m);
        return 0;
}

static int parse_execution_identity(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", "role_arn", NULL};
        static const char *const types[] = {"service_account", "aws_role", NULL};
        if (json_is_null(v)) {
                *ret = json_pack("{s:s}", "type", "service_account");
                return *ret ? 0 : -ENOMEM;
        }
        const char *type, *arn;
        int r;
        if ((r = check_object(v, path, keys, e)) < 0 || (r = get_enum(v, "type", path, types, NULL, &type, e)) < 0 ||
            (r = get_str(v, "role_arn", path, V1_NAME_MAX, eq(type, "aws_role") ? F_REQUIRED | F_NONEMPTY : 0, &arn,
                         e)) < 0)
                return r;
        if (arn && !eq(type, "aws_role"))
                return v1_fail(e, 400, NULL, "%s.role_arn: only with \"type\":\"aws_role\"", path);
        *ret = arn ? json_pack("{s:s, s:s}", "type", type, "role_arn", arn) : json_pack("{s:s}", "type", type);
        return *ret ? 0 : -ENOMEM;
}

static int parse_multiagent(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const types[] = {"coordinator", "multiagent_20261001", NULL};
        if (json_is_null(v)) {
                *ret = json_null();
                return 0;
        }
        const char *type;
        int r;
        if ((r = want(v, JSON_OBJECT, path, "an object or null", e)) < 0 ||
            (r = get_enum(v, "type", path, types, NULL, &type, e)) < 0)
                return r;
        *ret = json_deep_copy(v);
        return *ret ? 0 : -ENOMEM;
}

static const char *const AGENT_FIELDS[] = {"name",        "model",  "system",   "description", "tools",
                                           "mcp_servers", "skills", "metadata", "multiagent",  "execution_identity",
                                           NULL};
static const char *const AGENT_UPDATE_FIELDS[] = {
        "name",   "model",    "system",     "description",        "tools",   "mcp_servers",
        "skills", "metadata", "multiagent", "execution_identity", "version", NULL};

/* Set a's field key from the body's value v (an update: null clears what can be cleared). */
static int agent_set(json_t *a, const char *key, const json_t *v, const char *path, v1_err *e) {
        v1_path p;
        path_key(p, path, key);
        json_t *nv = NULL;
        int r = 0;
        if (eq(key, "name")) {
                if (json_is_null(v))
                        return v1_fail(e, 400, NULL, "%s: cannot be cleared", p);
                if ((r = want(v, JSON_STRING, p, "a string", e)) < 0)
                        return r;
                if (json_string_length(v) == 0 || json_string_length(v) > V1_NAME_MAX ||
                    strlen(json_string_value(v)) != json_string_length(v))
                        return v1_fail(e, 400, NULL, "%s: a name of 1 to %u bytes", p, V1_NAME_MAX);
                nv = json_incref((json_t *) v);
        } else if (eq(key, "model")) {
                if (json_is_null(v))
                        return v1_fail(e, 400, NULL, "%s: cannot be cleared", p);
                r = parse_model(v, p, &nv, e);
        } else if (eq(key, "system") || eq(key, "description")) {
                if (!json_is_null(v) && (r = want(v, JSON_STRING, p, "a string or null", e)) < 0)
                        return r;
                if (json_string_length(v) > V1_TEXT_MAX)
                        return v1_fail(e, 400, NULL, "%s: too long (%zu bytes, at most %u)", p, json_string_length(v),
                                       V1_TEXT_MAX);
                nv = str_or_null(json_string_value(v));
        } else if (eq(key, "tools") || eq(key, "mcp_servers") || eq(key, "skills")) {
                if (json_is_null(v))
                        nv = json_array();
                else if (eq(key, "tools"))
                        r = parse_tools(v, p, &nv, e);
                else if (eq(key, "mcp_servers"))
                        r = parse_mcp_servers(v, p, &nv, e);
                else
                        r = parse_skills(v, p, &nv, e);
        } else if (eq(key, "metadata")) {
                if (json_is_null(v))
                        nv = json_object();
                else /* as a patch on nothing: a null or "" value is no key */
                        r = v1_metadata_patch(NULL, v, p, &nv, e);
        } else if (eq(key, "multiagent")) {
                r = parse_multiagent(v, p, &nv, e);
        } else if (eq(key, "execution_identity")) {
                r = parse_execution_identity(v, p, &nv, e);
        } else
                return 0;
        if (r < 0)
                return r;
        if (!nv || json_object_set_new(a, key, nv) < 0)
                return -ENOMEM;
        return 0;
}

int v1_agent_create(const json_t *body, const char *id, const char *now, json_t **ret, v1_err *e) {
        int r = check_object(body, "", AGENT_FIELDS, e);
        if (r < 0)
                return r;
        if (!json_object_get(body, "name"))
                return v1_fail(e, 400, NULL, "name: required");
        if (!json_object_get(body, "model"))
                return v1_fail(e, 400, NULL, "model: required (a model id, or {\"id\": ...})");
        json_auto_t *a =
                json_pack("{s:s, s:s, s:n, s:n, s:n, s:n, s:[], s:[], s:[], s:{}, s:n, s:{s:s}, s:i, s:s, s:s, "
                          "s:n}",
                          "id", id, "type", "agent", "name", "description", "system", "model", "tools", "mcp_servers",
                          "skills", "metadata", "multiagent", "execution_identity", "type", "service_account",
                          "version", 1, "created_at", now, "updated_at", now, "archived_at");
        if (!a)
                return -ENOMEM;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) body, k, v) if ((r = agent_set(a, k, v, "", e)) < 0) return r;
        r = check_mcp(json_object_get(a, "tools"), json_object_get(a, "mcp_servers"), "", e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

int v1_agent_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, v1_err *e) {
        int r = check_object(body, "", AGENT_UPDATE_FIELDS, e);
        if (r < 0)
                return r;
        json_int_t version = json_integer_value(json_object_get(cur, "version"));
        const json_t *bv = json_object_get(body, "version");
        if (bv && !json_is_null(bv)) {
                if (!json_is_integer(bv))
                        return v1_fail(e, 400, NULL, "version: must be an integer, not %s", json_kind(bv));
                if (json_integer_value(bv) != version)
                        return v1_fail(e, 409, "version_conflict",
                                       "version: the agent is at version %" JSON_INTEGER_FORMAT
                                       ", not %" JSON_INTEGER_FORMAT " (fetch it again and retry)",
                                       version, json_integer_value(bv));
        }
        const json_t *arch = json_object_get(cur, "archived_at");
        if (arch && !json_is_null(arch))
                return v1_fail(e, 400, "agent_archived",
                               "the agent is archived and cannot be updated (create a new one)");
        json_auto_t *a = json_deep_copy(cur);
        if (!a)
                return -ENOMEM;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) body, k, v) {
                if (eq(k, "version"))
                        continue;
                if (eq(k, "metadata")) {
                        json_t *m;
                        if (json_is_null(v))
                                continue;
                        if ((r = v1_metadata_patch(json_object_get(a, "metadata"), v, "metadata", &m, e)) < 0)
                                return r;
                        if (json_object_set_new(a, "metadata", m) < 0)
                                return -ENOMEM;
                        continue;
                }
                if ((r = agent_set(a, k, v, "", e)) < 0)
                        return r;
        }
        r = check_mcp(json_object_get(a, "tools"), json_object_get(a, "mcp_servers"), "", e);
        if (r < 0)
                return r;
        if (json_equal(a, (json_t *) cur)) {
                *ret = NULL;
                return 0;
        }
        if (json_object_set_new(a, "version", json_integer(version + 1)) < 0 ||
            json_object_set_new(a, "updated_at", json_string(now)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

/* ---- environments ---- */

static const char *const PACKAGE_LISTS[] = {"apt", "cargo", "gem", "go", "npm", "pip", NULL};

static int parse_string_list(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        int r = want(v, JSON_ARRAY, path, "an array of strings", e);
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
        int r = want(v, JSON_OBJECT, path, "an object", e);
        if (r < 0 || (r = get_enum(v, "type", path, types, NULL, &type, e)) < 0)
                return r;
        if (eq(type, "unrestricted")) {
                if ((r = check_object(v, path, ukeys, e)) < 0)
                        return r;
                *ret = json_pack("{s:s}", "type", type);
                return *ret ? 0 : -ENOMEM;
        }
        int mcp, pm;
        if ((r = check_object(v, path, lkeys, e)) < 0 || (r = get_bool(v, "allow_mcp_servers", path, &mcp, e)) < 0 ||
            (r = get_bool(v, "allow_package_managers", path, &pm, e)) < 0)
                return r;
        json_auto_t *hosts = NULL;
        const json_t *h = json_object_get(v, "allowed_hosts");
        if (h && !json_is_null(h)) {
                v1_path p;
                path_key(p, path, "allowed_hosts");
                if ((r = parse_string_list(h, p, &hosts, e)) < 0)
                        return r;
        } else if (!(hosts = json_array()))
                return -ENOMEM;
        *ret = json_pack("{s:s, s:O, s:b, s:b}", "type", type, "allowed_hosts", hosts, "allow_mcp_servers", mcp > 0,
                         "allow_package_managers", pm > 0);
        return *ret ? 0 : -ENOMEM;
}

static int parse_env_config(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const ckeys[] = {"type", "networking", "packages", NULL};
        static const char *const skeys[] = {"type", NULL};
        static const char *const pkeys[] = {"type", "apt", "cargo", "gem", "go", "npm", "pip", NULL};
        static const char *const types[] = {"cloud", "self_hosted", NULL};
        static const char *const ptypes[] = {"packages", NULL};
        const char *type;
        int r = want(v, JSON_OBJECT, path, "an object", e);
        if (r < 0 || (r = get_enum(v, "type", path, types, NULL, &type, e)) < 0)
                return r;
        if (eq(type, "self_hosted")) {
                if ((r = check_object(v, path, skeys, e)) < 0)
                        return r;
                *ret = json_pack("{s:s}", "type", type);
                return *ret ? 0 : -ENOMEM;
        }
        if ((r = check_object(v, path, ckeys, e)) < 0)
                return r;
        json_auto_t *net = NULL, *pk = json_pack("{s:s}", "type", "packages");
        if (!pk)
                return -ENOMEM;
        v1_path p;
        const json_t *n = json_object_get(v, "networking");
        path_key(p, path, "networking");
        if (n && !json_is_null(n)) {
                if ((r = parse_networking(n, p, &net, e)) < 0)
                        return r;
        } else if (!(net = json_pack("{s:s}", "type", "unrestricted")))
                return -ENOMEM;
        const json_t *pv = json_object_get(v, "packages");
        path_key(p, path, "packages");
        if (pv && !json_is_null(pv)) {
                const char *pt;
                if ((r = check_object(pv, p, pkeys, e)) < 0 ||
                    (r = get_enum(pv, "type", p, ptypes, "packages", &pt, e)) < 0)
                        return r;
        }
        for (size_t i = 0; PACKAGE_LISTS[i]; i++) {
                const json_t *l = json_object_get(pv, PACKAGE_LISTS[i]);
                json_t *out;
                if (l && !json_is_null(l)) {
                        v1_path lp;
                        path_key(lp, p, PACKAGE_LISTS[i]);
                        if ((r = parse_string_list(l, lp, &out, e)) < 0)
                                return r;
                } else
                        out = json_array();
                if (!out || json_object_set_new(pk, PACKAGE_LISTS[i], out) < 0)
                        return -ENOMEM;
        }
        *ret = json_pack("{s:s, s:O, s:O}", "type", type, "networking", net, "packages", pk);
        return *ret ? 0 : -ENOMEM;
}

static const char *const SCOPES[] = {"organization", "workspace", NULL};
static const char *const ENV_FIELDS[] = {"name", "config", "description", "metadata", "scope", NULL};

static int env_set(json_t *env, const char *key, const json_t *v, bool update, v1_err *e) {
        json_t *nv = NULL;
        int r = 0;
        if (eq(key, "name")) {
                if (json_is_null(v))
                        return v1_fail(e, 400, NULL, "name: cannot be cleared");
                if ((r = want(v, JSON_STRING, "name", "a string", e)) < 0)
                        return r;
                if (json_string_length(v) == 0 || json_string_length(v) > V1_NAME_MAX ||
                    strlen(json_string_value(v)) != json_string_length(v))
                        return v1_fail(e, 400, NULL, "name: a name of 1 to %u bytes", V1_NAME_MAX);
                nv = json_incref((json_t *) v);
        } else if (eq(key, "description")) {
                if (!json_is_null(v) && (r = want(v, JSON_STRING, "description", "a string or null", e)) < 0)
                        return r;
                if (json_string_length(v) > V1_TEXT_MAX)
                        return v1_fail(e, 400, NULL, "description: too long (at most %u bytes)", V1_TEXT_MAX);
                nv = str_or_null(json_string_value(v));
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
                if ((r = get_enum(w, "scope", "", SCOPES, NULL, &s, e)) < 0)
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
        int r = check_object(body, "", ENV_FIELDS, e);
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
        int r = check_object(body, "", ENV_FIELDS, e);
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

/* ---- client events ---- */

static const char *const EVENT_TYPES[] = {
        "user.message", "user.interrupt", "user.tool_confirmation", "user.custom_tool_result", "system.message", NULL};

/* One content block: text (checked and copied), image, document, search_result (when allowed)
 * and redacted, kept as given once their shape is plausible. */
static int parse_block(const json_t *b, const char *path, const char *const *types, json_t **ret, v1_err *e) {
        static const char *const tkeys[] = {"type", "text", NULL};
        static const char *const rkeys[] = {"type", NULL};
        static const char *const image_src[] = {"base64", "url", "file", NULL};
        static const char *const doc_src[] = {"base64", "text", "url", "file", NULL};
        const char *type, *text;
        int r = want(b, JSON_OBJECT, path, "a content block object", e);
        if (r < 0 || (r = get_enum(b, "type", path, types, NULL, &type, e)) < 0)
                return r;
        if (eq(type, "text")) {
                if ((r = check_object(b, path, tkeys, e)) < 0 ||
                    (r = get_str(b, "text", path, V1_TEXT_MAX, F_REQUIRED, &text, e)) < 0)
                        return r;
                *ret = json_pack("{s:s, s:s}", "type", "text", "text", text);
                return *ret ? 0 : -ENOMEM;
        }
        if (eq(type, "redacted")) {
                if ((r = check_object(b, path, rkeys, e)) < 0)
                        return r;
        } else if (eq(type, "image") || eq(type, "document")) {
                v1_path p;
                const char *st;
                path_key(p, path, "source");
                const json_t *src = json_object_get(b, "source");
                if ((r = want(src, JSON_OBJECT, p, "an object", e)) < 0 ||
                    (r = get_enum(src, "type", p, eq(type, "image") ? image_src : doc_src, NULL, &st, e)) < 0)
                        return r;
        }
        *ret = json_deep_copy(b);
        return *ret ? 0 : -ENOMEM;
}

static int parse_content(const json_t *ev, const char *path, bool required, const char *const *types, json_t **ret,
                         v1_err *e) {
        v1_path p;
        path_key(p, path, "content");
        const json_t *c = json_object_get(ev, "content");
        *ret = NULL;
        if (!c && !required)
                return 0;
        int r = want(c, JSON_ARRAY, p, "an array of content blocks", e);
        if (r < 0)
                return r;
        if (required && json_array_size(c) == 0)
                return v1_fail(e, 400, NULL, "%s: must not be empty (at least one block, e.g. {\"type\":\"text\",...})",
                               p);
        if (json_array_size(c) > V1_CONTENT_BLOCKS_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu blocks, at most %u", p, json_array_size(c),
                               V1_CONTENT_BLOCKS_MAX);
        json_auto_t *out = json_array();
        if (!out)
                return -ENOMEM;
        size_t i;
        json_t *b;
        json_array_foreach(c, i, b) {
                v1_path bp;
                json_t *nb;
                path_idx(bp, p, i);
                if ((r = parse_block(b, bp, types, &nb, e)) < 0)
                        return r;
                if (json_array_append_new(out, nb) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

static int parse_event(const json_t *ev, const char *path, json_t **ret, v1_err *e) {
        static const char *const mkeys[] = {"type", "content", NULL};
        static const char *const ikeys[] = {"type", "session_thread_id", NULL};
        static const char *const ckeys[] = {"type", "tool_use_id", "result", "deny_message", NULL};
        static const char *const rkeys[] = {"type", "custom_tool_use_id", "content", "is_error", NULL};
        static const char *const msg_blocks[] = {"text", "image", "document", "redacted", NULL};
        static const char *const res_blocks[] = {"text", "image", "document", "search_result", NULL};
        static const char *const sys_blocks[] = {"text", NULL};
        static const char *const results[] = {"allow", "deny", NULL};
        const char *type;
        int r = want(ev, JSON_OBJECT, path, "an event object", e);
        if (r < 0)
                return r;
        r = get_str(ev, "type", path, V1_NAME_MAX, F_REQUIRED, &type, e);
        if (r < 0)
                return r;
        if (eq(type, "user.tool_result"))
                return v1_fail(e, 400, NULL,
                               "%s.type: not supported by hull: user.tool_result is for self_hosted environments, "
                               "where the client runs the built-in tools; hull runs them itself",
                               path);
        if (eq(type, "user.define_outcome"))
                return v1_fail(e, 400, NULL,
                               "%s.type: not supported by hull: outcomes (user.define_outcome) are not implemented; "
                               "state the goal in a user.message",
                               path);
        if (!in_list(type, EVENT_TYPES)) {
                char list[256];
                return v1_fail(e, 400, NULL, "%s.type: unknown event type '%.64s' (one of %s)", path, type,
                               join(EVENT_TYPES, list, sizeof(list)));
        }
        json_auto_t *out = json_pack("{s:s}", "type", type);
        json_t *content = NULL;
        if (!out)
                return -ENOMEM;
        if (eq(type, "user.message") || eq(type, "system.message")) {
                if ((r = check_object(ev, path, mkeys, e)) < 0 ||
                    (r = parse_content(ev, path, true, eq(type, "user.message") ? msg_blocks : sys_blocks, &content,
                                       e)) < 0)
                        return r;
                if (json_object_set_new(out, "content", content) < 0)
                        return -ENOMEM;
        } else if (eq(type, "user.interrupt")) {
                const char *tid;
                if ((r = check_object(ev, path, ikeys, e)) < 0 ||
                    (r = get_str(ev, "session_thread_id", path, V1_NAME_MAX, F_NULLABLE, &tid, e)) < 0)
                        return r;
                if (tid && json_object_set_new(out, "session_thread_id", json_string(tid)) < 0)
                        return -ENOMEM;
        } else if (eq(type, "user.tool_confirmation")) {
                const char *id, *res, *dm;
                if ((r = check_object(ev, path, ckeys, e)) < 0 ||
                    (r = get_str(ev, "tool_use_id", path, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &id, e)) < 0 ||
                    (r = get_enum(ev, "result", path, results, NULL, &res, e)) < 0 ||
                    (r = get_str(ev, "deny_message", path, V1_TEXT_MAX, F_NULLABLE, &dm, e)) < 0)
                        return r;
                if (dm && !eq(res, "deny"))
                        return v1_fail(e, 400, NULL, "%s.deny_message: only with \"result\":\"deny\"", path);
                if (json_object_set_new(out, "tool_use_id", json_string(id)) < 0 ||
                    json_object_set_new(out, "result", json_string(res)) < 0 ||
                    (dm && json_object_set_new(out, "deny_message", json_string(dm)) < 0))
                        return -ENOMEM;
        } else if (eq(type, "user.custom_tool_result")) {
                const char *id;
                int is_error;
                if ((r = check_object(ev, path, rkeys, e)) < 0 ||
                    (r = get_str(ev, "custom_tool_use_id", path, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &id, e)) < 0 ||
                    (r = get_bool(ev, "is_error", path, &is_error, e)) < 0 ||
                    (r = parse_content(ev, path, false, res_blocks, &content, e)) < 0)
                        return r;
                if (json_object_set_new(out, "custom_tool_use_id", json_string(id)) < 0 ||
                    (content && json_object_set_new(out, "content", content) < 0) ||
                    (is_error >= 0 && json_object_set_new(out, "is_error", json_boolean(is_error)) < 0))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* An array of events (path names it) checked; only_messages for initial_events. */
static int parse_events(const json_t *v, const char *path, bool only_messages, json_t **ret, v1_err *e) {
        int r = want(v, JSON_ARRAY, path, "an array of events", e);
        if (r < 0)
                return r;
        size_t n = json_array_size(v);
        if ((!only_messages && n == 0) || n > V1_EVENTS_PER_SEND_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu events, %s %u", path, n, n ? "at most" : "at least 1 and at most",
                               V1_EVENTS_PER_SEND_MAX);
        json_auto_t *out = json_array();
        if (!out)
                return -ENOMEM;
        size_t i;
        json_t *ev;
        json_array_foreach(v, i, ev) {
                v1_path p;
                json_t *one = NULL;
                path_idx(p, path, i);
                if ((r = parse_event(ev, p, &one, e)) < 0)
                        return r;
                const char *type = json_string_value(json_object_get(one, "type"));
                if (json_array_append_new(out, one) < 0)
                        return -ENOMEM;
                if (only_messages && !eq(type, "user.message"))
                        return v1_fail(e, 400, NULL, "%s.type: only user.message events can be initial events", p);
                if (eq(type, "system.message")) {
                        const char *prev =
                                i ? json_string_value(json_object_get(json_array_get(v, i - 1), "type")) : NULL;
                        if (i + 1 != n)
                                return v1_fail(e, 400, NULL, "%s: a system.message must be the last event of the batch",
                                               p);
                        if (!eq(prev, "user.message") && !eq(prev, "user.custom_tool_result"))
                                return v1_fail(e, 400, NULL,
                                               "%s: a system.message must directly follow the user.message or "
                                               "user.custom_tool_result it goes with",
                                               p);
                }
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int v1_events_parse(const json_t *body, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"events", NULL};
        int r = check_object(body, "", keys, e);
        if (r < 0)
                return r;
        const json_t *ev = json_object_get(body, "events");
        if (!ev)
                return v1_fail(e, 400, NULL, "events: required (an array of 1 to %u events)", V1_EVENTS_PER_SEND_MAX);
        return parse_events(ev, "events", false, ret, e);
}

char *v1_user_message_text(const json_t *event) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, V1_BODY_MAX);
        size_t i;
        json_t *blk;
        json_array_foreach(json_object_get(event, "content"), i, blk) {
                const char *type = json_string_value(json_object_get(blk, "type"));
                const json_t *src = json_object_get(blk, "source");
                const char *st = json_string_value(json_object_get(src, "type"));
                int r;
                if (b.len > 0 && dynbuf_add_str(&b, "\n\n") < 0)
                        return NULL;
                if (eq(type, "text"))
                        r = dynbuf_add_str(&b, json_string_value(json_object_get(blk, "text")) ?: "");
                else if (eq(type, "image") || eq(type, "document")) {
                        const char *where = eq(st, "url")    ? json_string_value(json_object_get(src, "url"))
                                            : eq(st, "file") ? json_string_value(json_object_get(src, "file_id"))
                                                             : NULL;
                        const char *title = json_string_value(json_object_get(blk, "title"));
                        r = dynbuf_addf(&b, "[%s%s%s (%s)%s%.200s]", type, title ? ": " : "", title ? title : "",
                                        st ? st : "unknown source", where ? " " : "", where ? where : "");
                } else
                        r = dynbuf_addf(&b, "[%s block]", type ? type : "unknown");
                if (r < 0)
                        return NULL;
        }
        return dynbuf_take(&b, NULL);
}

/* ---- sessions ---- */

static const char *const SESSION_FIELDS[] = {"agent",     "environment_id", "title",          "metadata", "resources",
                                             "vault_ids", "budget",         "initial_events", NULL};
static const char *const OVERRIDE_FIELDS[] = {"type",  "id",          "version", "model", "system",
                                              "tools", "mcp_servers", "skills",  NULL};

static int parse_budget(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", "max_list_cost", NULL};
        static const char *const ckeys[] = {"amount", "currency", NULL};
        static const char *const types[] = {"limit", NULL};
        static const char *const currencies[] = {"USD", NULL};
        if (json_is_null(v)) {
                *ret = json_null();
                return 0;
        }
        const char *type, *amount, *cur;
        v1_path p;
        path_key(p, path, "max_list_cost");
        int r;
        if ((r = check_object(v, path, keys, e)) < 0 || (r = get_enum(v, "type", path, types, NULL, &type, e)) < 0 ||
            (r = check_object(json_object_get(v, "max_list_cost"), p, ckeys, e)) < 0 ||
            (r = get_str(json_object_get(v, "max_list_cost"), "amount", p, 32, F_REQUIRED | F_NONEMPTY, &amount, e)) <
                    0 ||
            (r = get_enum(json_object_get(v, "max_list_cost"), "currency", p, currencies, NULL, &cur, e)) < 0)
                return r;
        size_t dots = 0;
        for (const char *c = amount; *c; c++) {
                if (*c == '.')
                        dots++;
                else if (*c < '0' || *c > '9')
                        dots = 2;
        }
        if (dots > 1 || amount[0] == '.')
                return v1_fail(e, 400, NULL, "%s.amount: must be a decimal number in a string, e.g. \"25.00\"", p);
        *ret = json_pack("{s:s, s:{s:s, s:s}}", "type", type, "max_list_cost", "amount", amount, "currency", cur);
        return *ret ? 0 : -ENOMEM;
}

static int parse_resources(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", "file_id", "mount_path", NULL};
        int r = want(v, JSON_ARRAY, path, "an array", e);
        if (r < 0)
                return r;
        if (json_array_size(v) > V1_RESOURCES_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu resources, at most %u", path, json_array_size(v),
                               V1_RESOURCES_MAX);
        size_t i;
        json_t *res;
        json_array_foreach(v, i, res) {
                v1_path p;
                const char *type, *fid, *mp;
                path_idx(p, path, i);
                if ((r = want(res, JSON_OBJECT, p, "an object", e)) < 0 ||
                    (r = get_str(res, "type", p, V1_NAME_MAX, F_REQUIRED, &type, e)) < 0)
                        return r;
                if (eq(type, "github_repository") || eq(type, "memory_store"))
                        return v1_fail(e, 400, NULL,
                                       "%s.type: not supported by hull: %s resources (use file resources, or fetch "
                                       "from the session's tools)",
                                       p, type);
                if (!eq(type, "file"))
                        return v1_fail(e, 400, NULL, "%s.type: unknown resource type '%.64s' (one of file)", p, type);
                if ((r = check_object(res, p, keys, e)) < 0 ||
                    (r = get_str(res, "file_id", p, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &fid, e)) < 0 ||
                    (r = get_str(res, "mount_path", p, V1_NAME_MAX, F_NULLABLE | F_NONEMPTY, &mp, e)) < 0)
                        return r;
        }
        *ret = json_deep_copy(v);
        return *ret ? 0 : -ENOMEM;
}

static int parse_vault_ids(const json_t *v, const char *path, v1_err *e) {
        int r = json_is_null(v) ? 0 : want(v, JSON_ARRAY, path, "an array", e);
        if (r < 0)
                return r;
        if (json_array_size(v) > 0)
                return v1_fail(e, 400, NULL, "%s: not supported by hull: vaults (pass credentials another way)", path);
        return 0;
}

static int parse_title(const json_t *v, json_t **ret, v1_err *e) {
        if (!json_is_null(v)) {
                int r = want(v, JSON_STRING, "title", "a string or null", e);
                if (r < 0)
                        return r;
                if (json_string_length(v) > V1_NAME_MAX)
                        return v1_fail(e, 400, NULL, "title: too long (%zu bytes, at most %u)", json_string_length(v),
                                       V1_NAME_MAX);
        }
        *ret = str_or_null(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

int v1_session_parse(const json_t *body, v1_session_req *ret, v1_err *e) {
        static const char *const ref_fields[] = {"type", "id", "version", NULL};
        static const char *const agent_types[] = {"agent", "agent_with_overrides", NULL};
        int r = check_object(body, "", SESSION_FIELDS, e);
        if (r < 0)
                return r;
        v1_session_req req = {0};
        const json_t *a = json_object_get(body, "agent");
        if (!a)
                return v1_fail(e, 400, NULL, "agent: required (an agent id, or {\"type\":\"agent\",\"id\":...})");
        if (json_is_string(a)) {
                if (json_string_length(a) == 0 || json_string_length(a) > V1_NAME_MAX ||
                    strlen(json_string_value(a)) != json_string_length(a))
                        return v1_fail(e, 400, NULL, "agent: an agent id of 1 to %u bytes", V1_NAME_MAX);
                req.agent_id = json_string_value(a);
        } else {
                const char *type;
                if ((r = want(a, JSON_OBJECT, "agent", "an agent id or an object", e)) < 0 ||
                    (r = get_enum(a, "type", "agent", agent_types, NULL, &type, e)) < 0 ||
                    (r = check_object(a, "agent", eq(type, "agent") ? ref_fields : OVERRIDE_FIELDS, e)) < 0 ||
                    (r = get_str(a, "id", "agent", V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &req.agent_id, e)) < 0)
                        return r;
                const json_t *ver = json_object_get(a, "version");
                if (ver && !json_is_null(ver)) {
                        if (!json_is_integer(ver) || json_integer_value(ver) < 1)
                                return v1_fail(e, 400, NULL, "agent.version: must be an integer >= 1");
                        req.agent_version = json_integer_value(ver);
                }
                if (eq(type, "agent_with_overrides")) {
                        /* Check the overrides now, on a scratch agent. */
                        json_auto_t *scratch = json_pack("{s:[], s:[]}", "tools", "mcp_servers");
                        const char *k;
                        json_t *v;
                        if (!scratch)
                                return -ENOMEM;
                        json_object_foreach((json_t *) a, k,
                                            v) if (!eq(k, "type") && !eq(k, "id") && !eq(k, "version") &&
                                                   (r = agent_set(scratch, k, v, "agent", e)) < 0) return r;
                        req.overrides = a;
                }
        }
        if ((r = get_str(body, "environment_id", "", V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &req.environment_id, e)) < 0)
                return r;
        const json_t *v;
        json_auto_t *scratch = NULL;
        if ((v = json_object_get(body, "title")) && (r = parse_title(v, &scratch, e)) < 0)
                return r;
        json_decref(TAKE_PTR(scratch));
        if ((v = json_object_get(body, "metadata")) && !json_is_null(v) &&
            (r = v1_metadata_patch(NULL, v, "metadata", &scratch, e)) < 0)
                return r;
        json_decref(TAKE_PTR(scratch));
        if ((v = json_object_get(body, "resources")) && !json_is_null(v) &&
            (r = parse_resources(v, "resources", &scratch, e)) < 0)
                return r;
        json_decref(TAKE_PTR(scratch));
        if ((v = json_object_get(body, "vault_ids")) && (r = parse_vault_ids(v, "vault_ids", e)) < 0)
                return r;
        if ((v = json_object_get(body, "budget")) && (r = parse_budget(v, "budget", &scratch, e)) < 0)
                return r;
        json_decref(TAKE_PTR(scratch));
        if ((v = json_object_get(body, "initial_events")) && !json_is_null(v)) {
                if ((r = parse_events(v, "initial_events", true, &scratch, e)) < 0)
                        return r;
                if (json_array_size(v) > 0)
                        req.initial_events = v;
        }
        *ret = req;
        return 0;
}

/* The agent snapshot of a session: the agent less its times and metadata, with overrides applied. */
static int session_agent(const json_t *agent, const json_t *overrides, json_t **ret, v1_err *e) {
        json_auto_t *s = json_deep_copy(agent);
        if (!s)
                return -ENOMEM;
        json_object_del(s, "created_at");
        json_object_del(s, "updated_at");
        json_object_del(s, "archived_at");
        json_object_del(s, "metadata");
        if (json_object_set_new(s, "type", json_string("agent")) < 0)
                return -ENOMEM;
        const char *k;
        json_t *v;
        int r;
        json_object_foreach((json_t *) overrides, k, v) if (!eq(k, "type") && !eq(k, "id") && !eq(k, "version") &&
                                                            (r = agent_set(s, k, v, "agent", e)) < 0) return r;
        r = check_mcp(json_object_get(s, "tools"), json_object_get(s, "mcp_servers"), "agent", e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int v1_session_create(const json_t *body, const v1_session_req *req, const json_t *agent, const char *id,
                      const char *now, json_t **ret, v1_err *e) {
        json_auto_t *snap = NULL, *title = NULL, *budget = NULL, *resources = NULL, *metadata = NULL;
        int r = session_agent(agent, req->overrides, &snap, e);
        if (r < 0)
                return r;
        const json_t *v;
        if ((v = json_object_get(body, "title")) && (r = parse_title(v, &title, e)) < 0)
                return r;
        if ((v = json_object_get(body, "budget")) && (r = parse_budget(v, "budget", &budget, e)) < 0)
                return r;
        if ((v = json_object_get(body, "resources")) && !json_is_null(v) &&
            (r = parse_resources(v, "resources", &resources, e)) < 0)
                return r;
        if ((v = json_object_get(body, "metadata")) && !json_is_null(v) &&
            (r = v1_metadata_patch(NULL, v, "metadata", &metadata, e)) < 0)
                return r;
        json_auto_t *s = json_pack(
                "{s:s, s:s, s:s, s:O?, s:s, s:O, s:o?, s:[], s:o?, s:O?, s:[], "
                "s:{s:i, s:i}, s:{s:i, s:i, s:i, s:{s:i, s:i}}, s:s, s:s, s:n}",
                "id", id, "type", "session", "status", "idle", "title", title, "environment_id", req->environment_id,
                "agent", snap, "resources", resources ? json_incref(resources) : json_array(), "vault_ids", "metadata",
                metadata ? json_incref(metadata) : json_object(), "budget", budget, "outcome_evaluations", "stats",
                "active_seconds", 0, "duration_seconds", 0, "usage", "input_tokens", 0, "output_tokens", 0,
                "cache_read_input_tokens", 0, "cache_creation", "ephemeral_5m_input_tokens", 0,
                "ephemeral_1h_input_tokens", 0, "created_at", now, "updated_at", now, "archived_at");
        if (!s)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

int v1_session_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, json_t **ret_changed,
                      v1_err *e) {
        static const char *const keys[] = {"title", "metadata", "budget", "agent", "vault_ids", NULL};
        static const char *const akeys[] = {"tools", "mcp_servers", NULL};
        int r = check_object(body, "", keys, e);
        if (r < 0)
                return r;
        json_auto_t *s = json_deep_copy(cur), *changed = json_object();
        if (!s || !changed)
                return -ENOMEM;
        const json_t *v;
        if ((v = json_object_get(body, "vault_ids")) && (r = parse_vault_ids(v, "vault_ids", e)) < 0)
                return r;
        if ((v = json_object_get(body, "title"))) {
                json_t *t;
                if ((r = parse_title(v, &t, e)) < 0)
                        return r;
                json_object_set_new(s, "title", t);
        }
        if ((v = json_object_get(body, "metadata")) && !json_is_null(v)) {
                json_t *m;
                if ((r = v1_metadata_patch(json_object_get(s, "metadata"), v, "metadata", &m, e)) < 0)
                        return r;
                json_object_set_new(s, "metadata", m);
        }
        if ((v = json_object_get(body, "budget"))) {
                json_t *b;
                if ((r = parse_budget(v, "budget", &b, e)) < 0)
                        return r;
                json_object_set_new(s, "budget", b);
        }
        if ((v = json_object_get(body, "agent")) && !json_is_null(v)) {
                if ((r = check_object(v, "agent", akeys, e)) < 0)
                        return r;
                if (eq(json_string_value(json_object_get(cur, "status")), "running"))
                        return v1_fail(e, 409, "session_running",
                                       "agent: the session is running; change its tools once it is idle (or send "
                                       "user.interrupt first)");
                json_auto_t *a = json_deep_copy(json_object_get(s, "agent"));
                if (!a)
                        return -ENOMEM;
                const char *k;
                json_t *av;
                json_object_foreach((json_t *) v, k, av) if ((r = agent_set(a, k, av, "agent", e)) < 0) return r;
                if ((r = check_mcp(json_object_get(a, "tools"), json_object_get(a, "mcp_servers"), "agent", e)) < 0)
                        return r;
                json_object_set(s, "agent", a);
        }
        static const char *const fields[] = {"title", "metadata", "budget", "agent", NULL};
        for (size_t i = 0; fields[i]; i++) {
                json_t *nv = json_object_get(s, fields[i]);
                if (!json_equal(nv, json_object_get(cur, fields[i])) && json_object_set(changed, fields[i], nv) < 0)
                        return -ENOMEM;
        }
        if (json_object_size(changed) == 0) {
                *ret = NULL;
                *ret_changed = NULL;
                return 0;
        }
        if (json_object_set_new(s, "updated_at", json_string(now)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        *ret_changed = TAKE_PTR(changed);
        return 0;
}
