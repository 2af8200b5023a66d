/* v1-shape-agent.c: an agent's create and update bodies checked and shaped (see v1-shape.h):
 * its model, tools (the built-in, hull, MCP and custom toolsets, with their configs and
 * permission policies), MCP servers, skills, multiagent and execution identity. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "tool-catalog.h"
#include "v1-shape-internal.h"

/* ---- agents: tools ---- */

/* The tools of a built-in toolset type (src/tools/tool-catalog.h), NULL-terminated, into buf. */
static const char *const *toolset_tools(const char *type, const char *buf[TOOL_CATALOG_MAX + 1]) {
        int t = tool_toolset_from_string(type);
        tool_catalog_toolset_names(t < 0 ? TOOL_TOOLSET_NONE : (tool_toolset) t, buf);
        return buf;
}
static const char *const POLICIES[] = {"always_allow", "always_ask", "auto", NULL};
static const char *const TOOLSET_TYPES[] = {"agent_toolset_20260401", "hull_toolset_20261201", "mcp_toolset", "custom",
                                            NULL};

static int parse_policy(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", NULL};
        const char *t;
        int r = v1_check_object(v, path, keys, e);
        if (r < 0)
                return r;
        r = v1_get_enum(v, "type", path, POLICIES, NULL, &t, e);
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
        int r = v1_check_object(v, path, is_config ? ckeys : dkeys, e);
        if (r < 0)
                return r;
        r = v1_get_bool(v, "enabled", path, ret_enabled, e);
        if (r < 0)
                return r;
        *ret_policy = NULL;
        const json_t *pp = json_object_get(v, "permission_policy");
        if (pp) {
                v1_path p;
                v1_path_key(p, path, "permission_policy");
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
        int r = v1_check_object(ts, path, names ? bkeys : mkeys, e);
        if (r < 0)
                return r;
        if (!names) {
                r = v1_get_str(ts, "mcp_server_name", path, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &server, e);
                if (r < 0)
                        return r;
        }

        int def_enabled = -1;
        json_auto_t *def_policy = NULL;
        const json_t *dc = json_object_get(ts, "default_config");
        if (dc && !json_is_null(dc)) {
                v1_path p;
                v1_path_key(p, path, "default_config");
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
        v1_path_key(cpath, path, "configs");
        const json_t *configs = json_object_get(ts, "configs");
        if (configs && json_is_null(configs))
                configs = NULL;
        if (configs && (r = v1_want(configs, JSON_ARRAY, cpath, "an array", e)) < 0)
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
                v1_path_idx(p, cpath, i);
                v1_path_key(np, p, "name");
                int en;
                json_auto_t *pol = NULL;
                const char *name, *ctype;
                r = parse_tool_config(c, p, true, &en, &pol, e);
                if (r < 0)
                        return r;
                r = v1_get_str(c, "name", p, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &name, e);
                if (r < 0)
                        return r;
                if (names && !v1_in_list(name, names)) {
                        char list[256];
                        return v1_fail(e, 400, NULL, "%s: unknown tool '%.64s' (one of %s)", np, name,
                                       v1_join(names, list, sizeof(list)));
                }
                r = v1_get_str(c, "type", p, V1_NAME_MAX, 0, &ctype, e);
                if (r < 0)
                        return r;
                if (ctype && !eq(ctype, name)) {
                        v1_path tp;
                        v1_path_key(tp, p, "type");
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
        int r = v1_check_object(t, path, keys, e);
        if (r < 0)
                return r;
        r = v1_get_str(t, "name", path, 64, F_REQUIRED | F_NONEMPTY, &name, e);
        if (r < 0)
                return r;
        v1_path p;
        v1_path_key(p, path, "name");
        if (!tool_name_ok(name))
                return v1_fail(e, 400, NULL, "%s: '%.64s' is not a tool name (1 to 64 of a-z A-Z 0-9 _ -)", p, name);
        if (json_object_get(tool_names, name))
                return v1_fail(e, 400, NULL, "%s: a tool named '%s' already exists (tool names are unique)", p, name);
        r = v1_get_str(t, "description", path, V1_TEXT_MAX, F_REQUIRED, &desc, e);
        if (r < 0)
                return r;
        v1_path_key(p, path, "input_schema");
        const json_t *s = json_object_get(t, "input_schema");
        if ((r = v1_want(s, JSON_OBJECT, p, "a JSON Schema object", e)) < 0)
                return r;
        const json_t *st = json_object_get(s, "type");
        if (!json_is_string(st) || !eq(json_string_value(st), "object"))
                return v1_fail(e, 400, NULL, "%s.type: must be \"object\"", p);
        const json_t *props = json_object_get(s, "properties");
        if (props && !json_is_object(props))
                return v1_fail(e, 400, NULL, "%s.properties: must be an object, not %s", p, v1_json_kind(props));
        if (json_object_set_new(tool_names, name, json_true()) < 0)
                return -ENOMEM;
        *ret = json_pack("{s:s, s:s, s:s, s:O}", "type", "custom", "name", name, "description", desc, "input_schema",
                         s);
        return *ret ? 0 : -ENOMEM;
}

/* tools (an array of toolsets) → resolved. Built-in toolsets first claim their names so a custom
 * tool cannot shadow one wherever it stands. */
static int parse_tools(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        int r = v1_want(v, JSON_ARRAY, path, "an array of toolsets", e);
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
                if (json_is_string(t) && tool_toolset_from_string(json_string_value(t)) >= 0) {
                        const char *buf[TOOL_CATALOG_MAX + 1];
                        const char *const *set = toolset_tools(json_string_value(t), buf);
                        for (size_t k = 0; set[k]; k++)
                                if (json_object_set_new(names, set[k], json_true()) < 0)
                                        return -ENOMEM;
                }
        }
        json_array_foreach(v, i, ts) {
                v1_path p;
                v1_path_idx(p, path, i);
                const char *type;
                if ((r = v1_want(ts, JSON_OBJECT, p, "an object", e)) < 0)
                        return r;
                r = v1_get_enum(ts, "type", p, TOOLSET_TYPES, NULL, &type, e);
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
                        const char *buf[TOOL_CATALOG_MAX + 1];
                        r = parse_toolset(ts, p, type, toolset_tools(type, buf), scratch, &one, &n_tools, e);
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
        int r = v1_want(v, JSON_ARRAY, path, "an array", e);
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
                v1_path_idx(p, path, i);
                const char *type, *name, *url;
                if ((r = v1_check_object(s, p, keys, e)) < 0 ||
                    (r = v1_get_enum(s, "type", p, types, NULL, &type, e)) < 0 ||
                    (r = v1_get_str(s, "name", p, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &name, e)) < 0 ||
                    (r = v1_get_str(s, "url", p, V1_TEXT_MAX, F_REQUIRED | F_NONEMPTY, &url, e)) < 0)
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
int v1_agent_check_mcp(const json_t *tools, const json_t *servers, const char *path, v1_err *e) {
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
                        v1_path_key(p, path, "tools");
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
                        v1_path_key(p, path, "mcp_servers");
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
        int r = v1_want(v, JSON_ARRAY, path, "an array", e);
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
                v1_path_idx(p, path, i);
                const char *type, *id;
                if ((r = v1_check_object(s, p, keys, e)) < 0 ||
                    (r = v1_get_enum(s, "type", p, types, NULL, &type, e)) < 0 ||
                    (r = v1_get_str(s, "skill_id", p, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &id, e)) < 0)
                        return r;
                json_t *ver = json_object_get(s, "version");
                if (ver && !json_is_null(ver) && !json_is_string(ver) && !json_is_integer(ver))
                        return v1_fail(e, 400, NULL, "%s.version: must be a string or an integer, not %s", p,
                                       v1_json_kind(ver));
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
        int r = v1_check_object(v, path, keys, e);
        if (r < 0)
                return r;
        if ((r = v1_get_str(v, "id", path, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &id, e)) < 0 ||
            (r = v1_get_enum(v, "speed", path, speeds, "standard", &speed, e)) < 0 ||
            (r = v1_get_str(v, "inference_geo", path, V1_NAME_MAX, F_NULLABLE, &geo, e)) < 0)
                return r;
        const json_t *ev = json_object_get(v, "effort");
        v1_path p;
        v1_path_key(p, path, "effort");
        if (json_is_string(ev)) {
                effort = json_string_value(ev);
                if (!v1_in_list(effort, efforts))
                        return v1_fail(e, 400, NULL,
                                       "%s: unknown effort '%.32s' (one of low, medium, high, xhigh, max)", p, effort);
        } else if (ev && !json_is_null(ev)) {
                if ((r = v1_check_object(ev, p, ekeys, e)) < 0 ||
                    (r = v1_get_enum(ev, "type", p, efforts, NULL, &effort, e)) < 0)
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
        if ((r = v1_check_object(v, path, keys, e)) < 0 ||
            (r = v1_get_enum(v, "type", path, types, NULL, &type, e)) < 0 ||
            (r = v1_get_str(v, "role_arn", path, V1_NAME_MAX, eq(type, "aws_role") ? F_REQUIRED | F_NONEMPTY : 0, &arn,
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
        if ((r = v1_want(v, JSON_OBJECT, path, "an object or null", e)) < 0 ||
            (r = v1_get_enum(v, "type", path, types, NULL, &type, e)) < 0)
                return r;
        /* kept, it would be echoed and never run: refused by name (GET /v1/capabilities) */
        return v1_fail(e, 400, "unsupported_capability",
                       "%s: a multiagent roster (%s) is not supported by hull: it runs one agent per session and "
                       "makes no threads; leave multiagent out or null (GET /v1/capabilities lists what hull supports)",
                       path, type);
}

static const char *const AGENT_FIELDS[] = {"name",        "model",  "system",   "description", "tools",
                                           "mcp_servers", "skills", "metadata", "multiagent",  "execution_identity",
                                           NULL};
static const char *const AGENT_UPDATE_FIELDS[] = {
        "name",   "model",    "system",     "description",        "tools",   "mcp_servers",
        "skills", "metadata", "multiagent", "execution_identity", "version", NULL};

/* Set a's field key from the body's value v (an update: null clears what can be cleared). */
int v1_agent_set(json_t *a, const char *key, const json_t *v, const char *path, v1_err *e) {
        v1_path p;
        v1_path_key(p, path, key);
        json_t *nv = NULL;
        int r = 0;
        if (eq(key, "name")) {
                if (json_is_null(v))
                        return v1_fail(e, 400, NULL, "%s: cannot be cleared", p);
                if ((r = v1_want(v, JSON_STRING, p, "a string", e)) < 0)
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
                if (!json_is_null(v) && (r = v1_want(v, JSON_STRING, p, "a string or null", e)) < 0)
                        return r;
                if (json_string_length(v) > V1_TEXT_MAX)
                        return v1_fail(e, 400, NULL, "%s: too long (%zu bytes, at most %u)", p, json_string_length(v),
                                       V1_TEXT_MAX);
                nv = v1_str_or_null(json_string_value(v));
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
        int r = v1_check_object(body, "", AGENT_FIELDS, e);
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
        json_object_foreach((json_t *) body, k, v) if ((r = v1_agent_set(a, k, v, "", e)) < 0) return r;
        r = v1_agent_check_mcp(json_object_get(a, "tools"), json_object_get(a, "mcp_servers"), "", e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

int v1_agent_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, v1_err *e) {
        int r = v1_check_object(body, "", AGENT_UPDATE_FIELDS, e);
        if (r < 0)
                return r;
        json_int_t version = json_integer_value(json_object_get(cur, "version"));
        const json_t *bv = json_object_get(body, "version");
        if (bv && !json_is_null(bv)) {
                if (!json_is_integer(bv))
                        return v1_fail(e, 400, NULL, "version: must be an integer, not %s", v1_json_kind(bv));
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
                if ((r = v1_agent_set(a, k, v, "", e)) < 0)
                        return r;
        }
        r = v1_agent_check_mcp(json_object_get(a, "tools"), json_object_get(a, "mcp_servers"), "", e);
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
