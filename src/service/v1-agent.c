/* v1-agent.c: a /v1 session's agent: its model, tools, MCP servers and sandbox, built for a turn. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "bus.h"
#include "dynbuf.h"
#include "egress.h"
#include "home.h"
#include "macro.h"
#include "mcp-client.h"
#include "mcp-tools.h"
#include "model.h"
#include "sbx-net.h"
#include "time-util.h"
#include "tool-web.h"
#include "tools-sandbox.h"
#include "svc-env.h"
#include "v1-run-internal.h"

/* ---- the agent ---- */

/* The bus names events: the agent.message being previewed keeps the id its preview showed. */
static void make_id(void *ud, const json_t *event, char ret[BUS_ID_MAX]) {
        live *l = ud;
        const char *type = json_string_value(json_object_get(event, "type"));
        char id[STORE_ID_MAX];
        pthread_mutex_lock(&l->lock);
        if (type && strcmp(type, "agent.message") == 0 && l->preview_id[0]) {
                snprintf(id, sizeof(id), "%s", l->preview_id);
                l->preview_id[0] = '\0';
        } else
                v1_id_new("sevt_", id);
        pthread_mutex_unlock(&l->lock);
        snprintf(ret, BUS_ID_MAX, "%.*s", BUS_ID_MAX - 1, id); /* "sevt_" and 26: it fits */
}

static void on_bus(void *ud, const json_t *event, bool persisted) {
        live *l = ud;
        const char *type = json_string_value(json_object_get(event, "type"));
        if (!type)
                return;
        pthread_mutex_lock(&l->lock);
        if (persisted) {
                json_t *copy = json_deep_copy(event);
                if (strcmp(type, "agent.custom_tool_use") == 0 ||
                    ((strcmp(type, "agent.tool_use") == 0 || strcmp(type, "agent.mcp_tool_use") == 0) &&
                     strcmp(json_string_value(json_object_get(event, "evaluated_permission")) ?: "", "ask") == 0)) {
                        snprintf(l->ask_id, sizeof(l->ask_id), "%s", json_string_value(json_object_get(event, "id")));
                        l->ask_client = type[6] == 'c';
                }
                /* the SDK's readers of tool calls look at content[0] too (cma-api.md §9) */
                if (copy && (strcmp(type, "agent.tool_use") == 0 || strcmp(type, "agent.custom_tool_use") == 0))
                        json_object_set_new(copy, "content",
                                            json_pack("[{s:s, s:O, s:O, s:O}]", "type", "tool_use", "id",
                                                      json_object_get(event, "id"), "name",
                                                      json_object_get(event, "name"), "input",
                                                      json_object_get(event, "input")));
                json_t *evs[1] = {copy};
                v1_log_server_locked(l, evs, 1);
        } else if (strcmp(type, "hull.text_delta") == 0) {
                const char *text = json_string_value(json_object_get(event, "text"));
                if (text) {
                        if (!l->preview_id[0]) {
                                v1_id_new("sevt_", l->preview_id);
                                json_auto_t *start = json_pack("{s:s, s:{s:s, s:s}}", "type", "event_start", "event",
                                                               "type", "agent.message", "id", l->preview_id);
                                if (start)
                                        v1_fanout(l, 0, start, true);
                        }
                        json_auto_t *d = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}}", "type", "event_delta",
                                                   "event_id", l->preview_id, "delta", "type", "content_delta",
                                                   "content", "type", "text", "text", text);
                        if (d)
                                v1_fanout(l, 0, d, true);
                }
        }
        pthread_mutex_unlock(&l->lock);
}

static const char *const readonly_tools[] = {"read",           "glob",         "grep",       "web_search",
                                             "inspect_handle", "query_handle", "read_handle"};

static tool_policy policy_of(const json_t *cfg, const char *name) {
        const char *p = json_string_value(json_object_get(json_object_get(cfg, "permission_policy"), "type"));
        if (p && strcmp(p, "always_ask") == 0)
                return TOOL_ALWAYS_ASK;
        if (p && strcmp(p, "auto") == 0) { /* hull's judgement: what only reads runs, the rest asks */
                for (size_t i = 0; i < ELEMENTSOF(readonly_tools); i++)
                        if (strcmp(name, readonly_tools[i]) == 0)
                                return TOOL_ALWAYS_ALLOW;
                return TOOL_ALWAYS_ASK;
        }
        return TOOL_ALWAYS_ALLOW;
}

/* One tool of a toolset, enabled in cfg. Returns 0, or -1 with *e. */
static int add_builtin(live *l, const char *name, const json_t *cfg, hull_error *e) {
        const settings *st = l->g->cfg.settings;
        const tool_def *d = NULL;
        if (strcmp(name, "web_fetch") == 0 || strcmp(name, "web_search") == 0) {
                if (!l->web) {
                        int r = tool_web_new((const char *const *) st->allow_hosts, st->n_allow_hosts,
                                             (const char *const *) st->allow_cidrs, st->n_allow_cidrs,
                                             st->web_max_bytes, st->search_api_key, st->search_base_url, &l->web, e);
                        if (r < 0)
                                return r;
                }
                tool_def w[2];
                size_t n = tool_web_defs(l->web, w);
                for (size_t i = 0; i < n; i++)
                        if (strcmp(w[i].name, name) == 0) {
                                l->defs[l->n_defs] = w[i];
                                d = &l->defs[l->n_defs];
                        }
                if (!d) {
                        dlog_log(l->g->cfg.log, DLOG_WARN,
                                 "event=v1-tool-unavailable session=%s tool=%s msg=\"no search key configured\"", l->id,
                                 name);
                        return 0;
                }
        } else {
                d = tools_sandbox_find(name);
                if (!d)
                        return 0; /* v1-shape admits only known names */
                l->defs[l->n_defs] = *d;
        }
        l->policies[l->n_defs] = policy_of(cfg, name);
        l->needs_box |= l->defs[l->n_defs].needs_session;
        l->n_defs++;
        return 0;
}

/* The toolset config of an MCP server's tool: its entry in the mcp_toolset's configs, else the
 * toolset's default_config; NULL when the agent has no mcp_toolset for the server. */
static const json_t *mcp_config(const json_t *tools, const char *server, const char *tool) {
        size_t i;
        json_t *ts;
        json_array_foreach(tools, i, ts) {
                if (strcmp(json_string_value(json_object_get(ts, "type")) ?: "", "mcp_toolset") != 0 ||
                    strcmp(json_string_value(json_object_get(ts, "mcp_server_name")) ?: "", server) != 0)
                        continue;
                size_t j;
                json_t *c;
                json_array_foreach(json_object_get(ts, "configs"), j,
                                   c) if (strcmp(json_string_value(json_object_get(c, "name")) ?: "", tool) ==
                                          0) return c;
                return json_object_get(ts, "default_config");
        }
        return NULL;
}

/* An agent's MCP server URL through the egress guard, as web_fetch's URLs are (an agent's author
 * names it, not the operator): no loopback, private, link-local or other internal address unless
 * the operator's allowlist (config.json's web.allow_hosts / web.allow_cidrs) admits it, never a
 * cloud metadata endpoint. *ret: the URL to use and the addresses checked (pinned by mcp_build). */
static int mcp_egress(const settings *st, const char *name, const char *url, egress_target *ret, hull_error *e) {
        const char *allow[EGRESS_ALLOW_MAX];
        size_t n = 0;
        for (size_t i = 0; st && i < st->n_allow_hosts && n < EGRESS_ALLOW_MAX; i++)
                allow[n++] = st->allow_hosts[i];
        for (size_t i = 0; st && i < st->n_allow_cidrs && n < EGRESS_ALLOW_MAX; i++)
                allow[n++] = st->allow_cidrs[i];
        _cleanup_egress_policy_ egress_policy *p = NULL;
        hull_error why = {0};
        int r = egress_policy_new(allow, n, NULL, NULL, &p, &why);
        if (r < 0)
                return hull_fail(e, r, "mcp: %s: cannot check the URL: %s", name, why.msg);
        r = egress_check_url(p, url, now_mono_ms() + MCP_INIT_TIMEOUT_MS, ret, &why);
        if (r < 0)
                return hull_fail(e, r, "mcp: %s: %.200s refused: %s%s", name, url, why.msg,
                                 r == -EACCES && !strstr(why.msg, "metadata")
                                         ? " (hull serve's operator may admit it with web.allow_cidrs or "
                                           "web.allow_hosts in $HULL_HOME/config.json)"
                                         : "");
        return 0;
}

/* Connect to the agent's MCP servers (Streamable HTTP) and add their enabled tools to l->defs.
 * Returns 0, or -1 with *e, *ret_type and l->mcp_failed (the server that failed). */
static int mcp_build(live *l, const json_t *agent_obj, size_t cap, const char **ret_type, hull_error *e) {
        const json_t *servers = json_object_get(agent_obj, "mcp_servers");
        const json_t *tools = json_object_get(agent_obj, "tools");
        size_t i;
        json_t *srv;
        json_array_foreach(servers, i, srv) {
                const char *name = json_string_value(json_object_get(srv, "name"));
                const char *url = json_string_value(json_object_get(srv, "url"));
                if (!name || !url || l->n_mcps >= V1_MCP_SERVERS_MAX)
                        continue;
                mcp_http_config hc = {.name = name, .url = url, .cancel = &l->interrupt};
                if (!mcp_server_name_valid(name)) {
                        *ret_type = "mcp_connection_failed_error";
                        snprintf(l->mcp_failed, sizeof(l->mcp_failed), "%s", name);
                        return hull_fail(e, -EINVAL,
                                         "mcp: the server name '%.64s' cannot prefix tool names (hull takes letters, "
                                         "digits, '_' and '-', at most %u bytes): rename it in the agent",
                                         name, MCP_SERVER_NAME_MAX);
                }
                egress_target t = {0};
                char pin[EGRESS_PIN_MAX];
                const char *pins[2] = {pin, NULL};
                int r = mcp_egress(l->g->cfg.settings, name, url, &t, e);
                if (r >= 0 && !t.literal && egress_target_pin(&t, pin) < 0)
                        r = hull_fail(e, -ENAMETOOLONG, "mcp: %s: the URL's host name is too long", name);
                if (r >= 0) {
                        hc.url = t.url;
                        hc.resolve = t.literal ? NULL : pins;
                        r = mcp_client_connect(&hc, &l->mcps[l->n_mcps], e);
                }
                egress_target_done(&t);
                if (r < 0) {
                        *ret_type = "mcp_connection_failed_error";
                        snprintf(l->mcp_failed, sizeof(l->mcp_failed), "%s", name);
                        return -1;
                }
                l->n_mcps++;
        }
        if (l->n_mcps == 0)
                return 0;
        if (mcp_toolset_new(l->mcps, l->n_mcps, &l->interrupt, &l->mcp_set, e) < 0) {
                *ret_type = "mcp_connection_failed_error";
                /* the server whose connection broke; else (an error answer) the message names it */
                size_t k = 0;
                while (k + 1 < l->n_mcps && mcp_client_alive(l->mcps[k], NULL))
                        k++;
                snprintf(l->mcp_failed, sizeof(l->mcp_failed), "%s", mcp_client_name(l->mcps[k]));
                return -1;
        }
        for (size_t k = 0; k < mcp_toolset_count(l->mcp_set) && l->n_defs < cap - 1; k++) {
                const tool_def *d = mcp_toolset_def(l->mcp_set, k);
                const json_t *cfg = mcp_config(tools, d->mcp_server, d->mcp_tool);
                if (!cfg || !json_is_true(json_object_get(cfg, "enabled")))
                        continue;
                l->defs[l->n_defs] = *d;
                /* what the agent's config says; "auto" asks (hull cannot tell what an MCP tool does) */
                const char *p = json_string_value(json_object_get(json_object_get(cfg, "permission_policy"), "type"));
                l->policies[l->n_defs++] = p && strcmp(p, "always_allow") == 0 ? TOOL_ALWAYS_ALLOW : TOOL_ALWAYS_ASK;
                l->needs_box = true; /* a big result becomes a handle, kept in the session's sandbox */
        }
        return 0;
}

static int tools_build(live *l, const json_t *agent_obj, const char **ret_type, hull_error *e) {
        const json_t *tools = json_object_get(agent_obj, "tools");
        size_t cap = V1_TOOLS_MAX + 8;
        l->defs = calloc(cap, sizeof(*l->defs));
        l->def_ptrs = calloc(cap, sizeof(*l->def_ptrs));
        l->policies = calloc(cap, sizeof(*l->policies));
        l->schemas = json_array();
        if (!l->defs || !l->def_ptrs || !l->policies || !l->schemas)
                return hull_err(e, -ENOMEM, "out of memory");
        size_t i;
        json_t *ts;
        json_array_foreach(tools, i, ts) {
                const char *type = json_string_value(json_object_get(ts, "type"));
                if (!type)
                        continue;
                if (strcmp(type, "agent_toolset_20260401") == 0 || strcmp(type, "hull_toolset_20261201") == 0) {
                        size_t j;
                        json_t *c;
                        json_array_foreach(json_object_get(ts, "configs"), j, c) {
                                if (l->n_defs >= cap - 1)
                                        break;
                                const char *name = json_string_value(json_object_get(c, "name"));
                                if (name && json_is_true(json_object_get(c, "enabled")) &&
                                    add_builtin(l, name, c, e) < 0)
                                        return -1;
                        }
                } else if (strcmp(type, "custom") == 0 && l->n_defs < cap - 1) {
                        char *schema = json_dumps(json_object_get(ts, "input_schema"), JSON_COMPACT);
                        if (!schema || json_array_append_new(l->schemas, json_string(schema)) < 0) {
                                free(schema);
                                return hull_err(e, -ENOMEM, "out of memory");
                        }
                        free(schema);
                        const json_t *kept = json_array_get(l->schemas, json_array_size(l->schemas) - 1);
                        l->defs[l->n_defs] = (tool_def){
                                .name = json_string_value(json_object_get(ts, "name")),
                                .description = json_string_value(json_object_get(ts, "description")) ?: "",
                                .input_schema = json_string_value(kept),
                                .default_policy = TOOL_ALWAYS_ALLOW,
                                .client = true,
                        };
                        l->policies[l->n_defs++] = TOOL_ALWAYS_ALLOW;
                }
                /* mcp_toolset: below, once its server is connected */
        }
        if (mcp_build(l, agent_obj, cap, ret_type, e) < 0)
                return -1;
        for (size_t k = 0; k < l->n_defs; k++)
                l->def_ptrs[k] = &l->defs[k];
        return 0;
}

/* Is the sandbox still there? (Its idle time or lifetime may have ended it.) */
bool v1_box_alive(live *l) {
        char detail[PLIM_END_DETAIL_MAX];
        return l->box && ss_end_state(l->g->cfg.ss, l->box, detail) == SS_END_NONE;
}

/* The session's environment_id into eid ("" when it has none). */
static void env_id_of(live *l, char eid[V1_NAME_MAX + 1]) {
        pthread_mutex_lock(&l->lock);
        snprintf(eid, V1_NAME_MAX + 1, "%s", json_string_value(json_object_get(l->obj, "environment_id")) ?: "");
        pthread_mutex_unlock(&l->lock);
}

/* The session's /v1 environment (svc-env.h): its layer, built first when missing (the flock of
 * env-layer makes it the only build of that spec; a failed step's output goes to hull serve's
 * log), its network (unrestricted only when the operator allows it, see docs/SECURITY.md; limited
 * with the operator's CIDRs and loopback rule) and its description. *ret_found: false without an
 * environment. Returns 0 or a negative errno with *e. */
static void env_building(void *ud, const char *name, const char *digest) {
        (void) name;
        (void) digest;
        *(bool *) ud = true;
}

static int env_of(live *l, svc_env *ret, bool *ret_found, hull_error *e) {
        v1_engine *g = l->g;
        char eid[V1_NAME_MAX + 1], home[SBX_PATH_MAX] = "";
        _cleanup_(env_spec_done) env_spec s = {0};
        env_build_info info = {0};
        bool building = false;
        int r;
        env_id_of(l, eid);
        if ((r = svc_env_v1(g->cfg.store, eid, &s, ret_found, e)) < 0 || !*ret_found)
                return r;
        if (env_spec_has_packages(&s) && (r = home_resolve(home, e)) < 0)
                return r;
        svc_env_opts o = {.home = home,
                          .name = eid,
                          .describe = true,
                          .build = true,
                          .rules = {.allow_cidrs = g->cfg.net_allow_cidrs,
                                    .allow_loopback = g->cfg.net_allow_loopback,
                                    .unrestricted = g->cfg.allow_unrestricted ? SVC_ENV_UNRESTRICTED_ALLOW
                                                                              : SVC_ENV_UNRESTRICTED_NONE},
                          .on_build = env_building,
                          .ud = &building,
                          .build_info = &info};
        r = svc_env_resolve(&s, &o, ret, e);
        if (r < 0 && building) {
                dlog_log(g->cfg.log, DLOG_WARN, "event=v1-env-build-failed session=%s environment=%s error=\"%s\"",
                         l->id, eid, e->msg);
                if (info.log[0])
                        fprintf(stderr, "%s\n", info.log);
                return hull_fail(e, -EIO,
                                 "environment %.64s: its packages could not be installed (hull serve's log has the "
                                 "build's output; try 'hull env build --spec' with the environment's packages)",
                                 eid);
        }
        return r;
}

/* The proxy's log of the session's limited network: netlog_dir/network-<id>.log, appended to
 * (-1 without a netlog_dir). Returns an fd, -1, or a negative errno with *e. */
static int net_log_open(live *l, hull_error *e) {
        v1_engine *g = l->g;
        char path[SBX_PATH_MAX];
        if (!g->cfg.netlog_dir)
                return -1;
        if ((size_t) snprintf(path, sizeof(path), "%s/network-%s.log", g->cfg.netlog_dir, l->id) >= sizeof(path))
                return hull_err(e, -ENAMETOOLONG, "the network log's path is too long");
        /* read too: the session core follows it for the turn's hull.network events */
        int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return hull_err(e, negative_errno(), "cannot open the session's network log %s", path);
        return fd;
}

/* The agent, ready for a turn (the worker's, or under l->lock while no worker runs). Returns 0,
 * or -1 with *e and *ret_type (the session.error's type). */
int v1_agent_ready(live *l, const char **ret_type, hull_error *e) {
        v1_engine *g = l->g;
        *ret_type = "unknown_error";
        if (l->agent && (!l->needs_box || v1_box_alive(l)))
                return 0;
        if (!g->cfg.settings) {
                *ret_type = "model_request_failed_error";
                return hull_fail(e, -EINVAL, "no model is configured for hull serve: %s",
                                 g->cfg.settings_error ? g->cfg.settings_error : "see hull serve --help");
        }
        pthread_mutex_lock(&l->lock);
        json_t *agent_obj = json_incref(json_object_get(l->obj, "agent"));
        const char *system = json_string_value(json_object_get(agent_obj, "system"));
        pthread_mutex_unlock(&l->lock);
        _cleanup_(json_decrefp) json_t *agent_ref = agent_obj;
        json_auto_t *conv = NULL;
        int r;

        if (l->agent) { /* the sandbox ended: a new one, the conversation goes on */
                conv = json_incref((json_t *) agent_conversation(l->agent));
                agent_free(TAKE_PTR(l->agent));
        } else if ((r = store_conversation_get(g->cfg.store, l->id, &conv, e)) < 0)
                return r;
        if (l->box && !v1_box_alive(l)) {
                pthread_mutex_lock(&l->lock);
                l->box_id[0] = '\0';
                pthread_mutex_unlock(&l->lock);
                ss_unref(g->cfg.ss, TAKE_PTR(l->box));
        }
        if (!l->defs && tools_build(l, agent_obj, ret_type, e) < 0) {
                v1_tools_drop(l); /* the next turn tries again */
                return -1;
        }
        if (!l->model) {
                model_config mc = g->cfg.settings->model;
                const char *mid = json_string_value(json_object_get(json_object_get(agent_obj, "model"), "id"));
                if (!g->cfg.force_model && mid && mid[0])
                        mc.model = mid;
                r = model_client_new(&mc, &l->model, e);
                if (r < 0) {
                        *ret_type = "model_request_failed_error";
                        return r;
                }
        }
        if (!l->bus) {
                r = bus_new(make_id, l, &l->bus);
                if (r < 0 || bus_subscribe(l->bus, on_bus, l) < 0)
                        return hull_err(e, r < 0 ? r : -ENOMEM, "the session's status bus cannot start");
        }
        if (l->needs_box && g->cfg.ss && !l->box) {
                ss_open_opts o = {.principal = l->principal, .owner = ""}; /* no per-owner eviction */
                _cleanup_(svc_env_done) svc_env env = {.policy.log_fd = -1};
                bool found;
                _cleanup_close_ int log_fd = -1;
                if ((r = env_of(l, &env, &found, e)) < 0)
                        return r;
                if (found) {
                        o.layer_dir = env.layer[0] ? env.layer : NULL;
                        o.net = env.net;
                        if (env.net == SBX_NET_LIMITED) {
                                if ((log_fd = net_log_open(l, e)) < -1)
                                        return log_fd;
                                env.policy.log_fd = log_fd; /* the keeper gets its own copy */
                                o.net_policy = &env.policy;
                        }
                        /* the sandbox's records name its environment: the /v1 environment's id,
                         * the layer's digest, the network */
                        o.environment = env.desc;
                }
                r = ss_open(g->cfg.ss, &o, &l->box, e);
                if (r < 0)
                        return r;
                ss_info info;
                ss_session_info(g->cfg.ss, l->box, &info);
                pthread_mutex_lock(&l->lock);
                snprintf(l->box_id, sizeof(l->box_id), "%s", info.id);
                pthread_mutex_unlock(&l->lock);
                /* its audit log is found again by this (GET .../records); not fatal */
                char now[STORE_TIME_MAX];
                hull_error se = {0};
                v1_now_time(now);
                if (store_sandbox_add(g->cfg.store, l->id, info.fingerprint, now, &se) < 0)
                        dlog_log(g->cfg.log, DLOG_WARN, "event=v1-sandbox-not-kept session=%s error=\"%s\"", l->id,
                                 se.msg);
        }
        agent_config ac = {
                .model = l->model,
                .bus = l->bus,
                .instructions = system && system[0] ? system : NULL,
                .tools = l->def_ptrs,
                .policies = l->policies,
                .n_tools = l->n_defs,
                .ss = l->box ? g->cfg.ss : NULL,
                .session = l->box,
                .max_turns = g->cfg.settings->max_turns,
                .max_tool_calls = g->cfg.settings->max_tool_calls,
                .context_tokens = g->cfg.settings->context_tokens,
        };
        return agent_new(&ac, conv, &l->agent, e);
}
