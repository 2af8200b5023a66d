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
#include "home.h"
#include "macro.h"
#include "model.h"
#include "svc-agent.h"
#include "tool-catalog.h"
#include "svc-env.h"
#include "v1-repo.h"
#include "v1-resources.h"
#include "v1-run-internal.h"
#include "v1-vault.h"
#include "vault-seal.h"
#include "v1-skill.h"

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
        v1_node_start_wait_locked(l); /* the last model request's start logged and streamed first */
        const char *status = json_string_value(json_object_get(l->obj, "status")) ?: "";
        const char *hull_stop = json_string_value(json_object_get(event, "hull_stop")) ?: "";
        if (persisted &&
            ((strcmp(type, "session.status_running") == 0 && strcmp(status, "running") == 0) ||
             (strcmp(type, "session.status_idle") == 0 && l->outcome && strcmp(hull_stop, "end_turn") == 0))) {
                /* a revision turn of an outcome goes on running; a turn that answers an outcome
                 * idles after its grading (v1-outcome.c) */
                pthread_mutex_unlock(&l->lock);
                return;
        }
        if (persisted) {
                json_t *copy = json_deep_copy(event);
                bool client_run = json_is_true(json_object_get(event, "hull_client_run"));
                if (copy)
                        json_object_del(copy, "hull_client_run");
                if (copy && strcmp(type, "session.usage") == 0) { /* the session's cost, and its budget */
                        json_t *lc = json_object_get(json_object_get(l->obj, "usage"), "list_cost");
                        if (lc)
                                json_object_set(json_object_get(copy, "usage"), "list_cost", lc);
                        if (json_is_object(json_object_get(l->obj, "budget")))
                                json_object_set(copy, "budget", json_object_get(l->obj, "budget"));
                }
                if (strcmp(type, "agent.custom_tool_use") == 0 || client_run ||
                    ((strcmp(type, "agent.tool_use") == 0 || strcmp(type, "agent.mcp_tool_use") == 0) &&
                     strcmp(json_string_value(json_object_get(event, "evaluated_permission")) ?: "", "ask") == 0)) {
                        snprintf(l->ask_id, sizeof(l->ask_id), "%s", json_string_value(json_object_get(event, "id")));
                        l->ask_client = type[6] == 'c' || client_run;
                        l->ask_builtin = client_run;
                }
                /* the SDK's readers of tool calls look at content[0] too (cma-api.md §9) */
                if (copy && (strcmp(type, "agent.tool_use") == 0 || strcmp(type, "agent.custom_tool_use") == 0))
                        json_object_set_new(copy, "content",
                                            json_pack("[{s:s, s:O, s:O, s:O}]", "type", "tool_use", "id",
                                                      json_object_get(event, "id"), "name",
                                                      json_object_get(event, "name"), "input",
                                                      json_object_get(event, "input")));
                /* a fresh turn's running is followed at once by its model request's start */
                bool first_running = l->hold_running && strcmp(type, "session.status_running") == 0;
                l->hold_running = false;
                /* a model request's end too, unless an outcome's grading reads the usage before the
                 * next append (the session's cost goes into session.usage at its append: append_now) */
                bool end = strcmp(type, "span.model_request_end") == 0 && !l->outcome;
                /* and the turn's idle: logged (with what it holds) once the worker kept the
                 * conversation (worker_main; in the idle's own commit), so a session seen idle has
                 * its turn in the store, on nodes too (a node that dies after it leaves both) */
                bool idle = strcmp(type, "session.status_idle") == 0;
                if (strcmp(type, "agent.message") == 0 || strcmp(type, "session.usage") == 0 || first_running || end ||
                    idle)
                        v1_log_hold_locked(l, copy); /* committed with what follows (one commit) */
                else if (strcmp(type, "span.model_request_start") == 0)
                        v1_node_log_start_locked(l, copy); /* on nodes: committed while the request goes out */
                else {
                        json_t *evs[1] = {copy};
                        v1_log_server_locked(l, evs, 1);
                }
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

/* Before each model request: has the session budget left? A model request's end still held
 * (v1_log_hold_locked: an answer continued without a call between) is logged first: its usage
 * counts here. */
static bool may_ask(void *ud) {
        live *l = ud;
        pthread_mutex_lock(&l->lock);
        size_t i;
        json_t *h;
        json_array_foreach(l->held, i, h) {
                if (strcmp(json_string_value(json_object_get(h, "type")) ?: "", "span.model_request_end") == 0) {
                        v1_log_flush_locked(l);
                        break;
                }
        }
        bool ok = !v1_budget_reached(&l->g->cfg, l->obj);
        pthread_mutex_unlock(&l->lock);
        return ok;
}

static tool_policy policy_of(const json_t *cfg, const char *name) {
        const char *p = json_string_value(json_object_get(json_object_get(cfg, "permission_policy"), "type"));
        if (p && strcmp(p, "always_ask") == 0)
                return TOOL_ALWAYS_ASK;
        if (p && strcmp(p, "auto") == 0) { /* hull's judgement: what only reads runs, the rest asks */
                return tool_catalog_is_read_only(name) ? TOOL_ALWAYS_ALLOW : TOOL_ALWAYS_ASK;
        }
        return TOOL_ALWAYS_ALLOW;
}

/* An MCP tool's config: what the agent's config says; "auto" asks (hull cannot tell what an MCP
 * tool does). */
static svc_agent_rule mcp_rule_of(const json_t *cfg) {
        const char *p = json_string_value(json_object_get(json_object_get(cfg, "permission_policy"), "type"));
        return (svc_agent_rule){.name = json_string_value(json_object_get(cfg, "name")),
                                .enabled = json_is_true(json_object_get(cfg, "enabled")),
                                .policy = p && strcmp(p, "always_allow") == 0 ? TOOL_ALWAYS_ALLOW : TOOL_ALWAYS_ASK};
}

static void tool_skipped(void *ud, const char *tool, const char *why) {
        live *l = ud;
        dlog_log(l->g->cfg.log, DLOG_WARN, "event=v1-tool-unavailable session=%s tool=%s msg=\"%s\"", l->id, tool, why);
}

/* The recipe's parts of an agent object (strings borrowed from it): its toolsets' enabled
 * built-ins and its custom tools, in order; its MCP servers, each with the rules of its
 * mcp_toolset (the configs by tool name, default_config for the others; no mcp_toolset: none of
 * its tools). */
typedef struct v1_recipe {
        svc_agent_tool tools[V1_TOOLS_MAX + 8];
        svc_agent_mcp mcp[V1_MCP_SERVERS_MAX];
        svc_agent_rule *rules[V1_MCP_SERVERS_MAX];
        /* each server's Authorization header from the session's vaults (v1-vault.h), or NULL */
        char *auth[V1_MCP_SERVERS_MAX];
        const char *headers[V1_MCP_SERVERS_MAX][2];
        char cred[V1_MCP_SERVERS_MAX][STORE_ID_MAX];
} v1_recipe;

static void v1_recipe_done(v1_recipe *v) {
        for (size_t i = 0; i < V1_MCP_SERVERS_MAX; i++) {
                free(v->rules[i]);
                vault_free_secret(v->auth[i]);
        }
}

static int mcp_of(const json_t *tools, size_t k, const char *name, v1_recipe *v, hull_error *e) {
        size_t i;
        json_t *ts;
        svc_agent_mcp *m = &v->mcp[k];
        json_array_foreach(tools, i, ts) {
                if (strcmp(json_string_value(json_object_get(ts, "type")) ?: "", "mcp_toolset") != 0 ||
                    strcmp(json_string_value(json_object_get(ts, "mcp_server_name")) ?: "", name) != 0)
                        continue;
                const json_t *configs = json_object_get(ts, "configs");
                const json_t *dflt = json_object_get(ts, "default_config");
                if (json_array_size(configs) > 0 &&
                    !(v->rules[k] = calloc(json_array_size(configs), sizeof(svc_agent_rule))))
                        return hull_err(e, -ENOMEM, "out of memory");
                size_t j;
                json_t *c;
                json_array_foreach(configs, j, c) {
                        svc_agent_rule rule = mcp_rule_of(c);
                        if (rule.name)
                                v->rules[k][m->n_rules++] = rule;
                }
                m->rules = v->rules[k];
                if (dflt)
                        m->others = mcp_rule_of(dflt);
                return 0;
        }
        return 0;
}

static int recipe_of(const json_t *agent_obj, svc_agent_recipe *r, v1_recipe *v, hull_error *e) {
        const json_t *tools = json_object_get(agent_obj, "tools");
        size_t i, cap = V1_TOOLS_MAX + 7;
        json_t *ts;
        json_array_foreach(tools, i, ts) {
                const char *type = json_string_value(json_object_get(ts, "type"));
                if (!type)
                        continue;
                if (strcmp(type, "agent_toolset_20260401") == 0 || strcmp(type, "hull_toolset_20261201") == 0) {
                        size_t j;
                        json_t *c;
                        json_array_foreach(json_object_get(ts, "configs"), j, c) {
                                const char *name = json_string_value(json_object_get(c, "name"));
                                if (r->n_tools >= cap)
                                        break;
                                if (name && json_is_true(json_object_get(c, "enabled")))
                                        v->tools[r->n_tools++] = (svc_agent_tool){
                                                .rule = {.name = name, .enabled = true, .policy = policy_of(c, name)}};
                        }
                } else if (strcmp(type, "custom") == 0 && r->n_tools < cap)
                        v->tools[r->n_tools++] = (svc_agent_tool){
                                .rule = {.name = json_string_value(json_object_get(ts, "name")), .enabled = true},
                                .description = json_string_value(json_object_get(ts, "description")),
                                .input_schema = json_object_get(ts, "input_schema") ?: json_null(),
                        };
                /* mcp_toolset: with its server */
        }
        json_t *srv;
        json_array_foreach(json_object_get(agent_obj, "mcp_servers"), i, srv) {
                const char *name = json_string_value(json_object_get(srv, "name"));
                const char *url = json_string_value(json_object_get(srv, "url"));
                if (!name || !url || r->n_mcp >= V1_MCP_SERVERS_MAX)
                        continue;
                v->mcp[r->n_mcp] = (svc_agent_mcp){.name = name, .url = url};
                if (mcp_of(tools, r->n_mcp, name, v, e) < 0)
                        return -ENOMEM;
                r->n_mcp++;
        }
        r->tools = v->tools;
        r->mcp = v->mcp;
        return 0;
}

/* Server i's header from the session's vaults into v (force: refresh an OAuth token first). A
 * credential that cannot be had ends the turn: -1 with *e naming the server. */
static int vault_header(live *l, v1_recipe *v, size_t i, bool force, const char **ret_type, hull_error *e) {
        pthread_mutex_lock(&l->lock);
        json_auto_t *ids = json_incref(json_object_get(l->obj, "vault_ids"));
        pthread_mutex_unlock(&l->lock);
        vault_free_secret(TAKE_PTR(v->auth[i]));
        v->mcp[i].headers = NULL;
        if (json_array_size(ids) == 0)
                return 0;
        hull_error ve = {0};
        if (v1_vault_auth_header(l->g->cfg.store, l->g->cfg.settings, ids, v->mcp[i].url, force, &v->auth[i],
                                 v->cred[i], &ve) < 0) {
                *ret_type = "mcp_authentication_failed_error";
                snprintf(l->mcp_failed, sizeof(l->mcp_failed), "%s", v->mcp[i].name);
                return hull_fail(e, -EACCES, "mcp: %s: its credential from the session's vaults cannot be used: %s",
                                 v->mcp[i].name, ve.msg);
        }
        v->headers[i][0] = v->auth[i];
        v->headers[i][1] = NULL;
        v->mcp[i].headers = v->auth[i] ? v->headers[i] : NULL;
        return 0;
}

/* Every token of v's headers in msg replaced by "***" (a server may echo what it was sent). */
static void redact_tokens(const v1_recipe *v, size_t n, char *msg) {
        static const char prefix[] = "Authorization: Bearer ";
        for (size_t i = 0; i < n; i++) {
                const char *tok = v->auth[i] ? v->auth[i] + sizeof(prefix) - 1 : NULL;
                size_t k = tok ? strlen(tok) : 0;
                for (char *p; k >= 4 && (p = strstr(msg, tok));) {
                        memmove(p + 3, p + k, strlen(p + k) + 1);
                        memcpy(p, "***", 3);
                }
        }
}

/* The agent's tools and MCP servers (svc-agent.h) into l->tools, each MCP server with its
 * credential from the session's vaults; a server that refuses it (401/403) is tried once more
 * with an OAuth token refreshed. Returns 0, or -1 with *e, *ret_type and l->mcp_failed (the
 * server that failed). */
static int tools_build(live *l, const json_t *agent_obj, const svc_agent_recipe *base, const char **ret_type,
                       hull_error *e) {
        _cleanup_(v1_recipe_done) v1_recipe v = {0};
        svc_agent_recipe r = *base;
        if (recipe_of(agent_obj, &r, &v, e) < 0)
                return -1;
        for (size_t i = 0; i < r.n_mcp; i++)
                if (vault_header(l, &v, i, false, ret_type, e) < 0)
                        return -1;
        for (int attempt = 0;; attempt++) {
                const char *failed = NULL;
                int k = svc_agent_build(&r, &l->tools, &failed, e);
                if (k >= 0)
                        break;
                redact_tokens(&v, r.n_mcp, e->msg);
                if (!failed)
                        return -1;
                size_t i = 0;
                while (i + 1 < r.n_mcp && strcmp(r.mcp[i].name, failed) != 0)
                        i++;
                /* the server's 401 or 403 (mcp-client.h), not the egress guard's refusal (-EACCES too) */
                bool refused = k == -EACCES && (strstr(e->msg, ": HTTP 401") || strstr(e->msg, ": HTTP 403"));
                *ret_type = refused ? "mcp_authentication_failed_error" : "mcp_connection_failed_error";
                snprintf(l->mcp_failed, sizeof(l->mcp_failed), "%s", failed);
                if (refused && attempt == 0 && v.cred[i][0]) {
                        if (vault_header(l, &v, i, true, ret_type, e) < 0)
                                return -1;
                        continue;
                }
                if (refused) {
                        size_t n = strlen(e->msg);
                        snprintf(e->msg + n, sizeof(e->msg) - n, "%s",
                                 v.cred[i][0] ? " (the credential from the session's vaults was refused)"
                                              : " (no credential in the session's vaults matches its URL)");
                }
                return -1;
        }
        l->mcp_failed[0] = '\0';
        l->needs_box = l->tools->needs_session;
        return 0;
}

/* The tools, built by tools_build, and the MCP connections with them. */
void v1_tools_drop(live *l) {
        svc_agent_free(TAKE_PTR(l->tools));
        l->needs_box = false;
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

/* Is the session's environment self_hosted (the client runs the built-in tools)? */
static bool self_hosted(live *l) {
        char eid[V1_NAME_MAX + 1];
        json_auto_t *env = NULL;
        hull_error e = {0};
        env_id_of(l, eid);
        if (!eid[0] || store_get(l->g->cfg.store, STORE_ENVIRONMENT, eid, 0, &env, &e) < 0)
                return false;
        const json_t *config = json_object_get(env, "config");
        return strcmp(json_string_value(json_object_get(config, "type")) ?: "", "self_hosted") == 0;
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

/* The proxy's log of the session's limited network: netlog_dir/network-<id>.log, appended to,
 * into *ret_fd (-1 without a netlog_dir). Returns 0 or a negative errno with *e. */
static int net_log_open(live *l, int *ret_fd, hull_error *e) {
        v1_engine *g = l->g;
        char path[SBX_PATH_MAX];
        *ret_fd = -1;
        if (!g->cfg.netlog_dir)
                return 0;
        if ((size_t) snprintf(path, sizeof(path), "%s/network-%s.log", g->cfg.netlog_dir, l->id) >= sizeof(path))
                return hull_err(e, -ENAMETOOLONG, "the network log's path is too long");
        /* read too: the session core follows it for the turn's hull.network events */
        int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return hull_err(e, negative_errno(), "cannot open the session's network log %s", path);
        *ret_fd = fd;
        return 0;
}

/* The agent, ready for a turn (the worker's, or under l->lock while no worker runs). Returns 0,
 * or -1 with *e and *ret_type (the session.error's type). */
/* The session's model client: the agent's model id (unless the operator forces one), and the
 * model object's effort and speed, to the providers that take them. */
static int model_of(live *l, const json_t *agent_obj, const model_config *base, hull_error *e) {
        model_config mc = *base;
        const json_t *mo = json_object_get(agent_obj, "model");
        const char *mid = json_string_value(json_object_get(mo, "id"));
        if (!l->g->cfg.force_model && mid && mid[0])
                mc.model = mid;
        mc.effort = json_string_value(json_object_get(json_object_get(mo, "effort"), "type")) ?: mc.effort;
        mc.fast = mc.fast || strcmp(json_string_value(json_object_get(mo, "speed")) ?: "", "fast") == 0;
        return model_client_new(&mc, &l->model, e);
}

/* l->tools and l->model keep pointers into agent_obj (names, schemas, the model id) while l->obj
 * may be replaced (a session update, another node's change): it stays referenced by l. */
static int agent_pin(live *l, json_t *agent_obj, hull_error *e) {
        if (!agent_obj)
                return 0;
        if (!l->agent_pins && !(l->agent_pins = json_array()))
                return hull_err(e, -ENOMEM, "out of memory");
        size_t n = json_array_size(l->agent_pins);
        if ((n == 0 || json_array_get(l->agent_pins, n - 1) != agent_obj) &&
            json_array_append(l->agent_pins, agent_obj) < 0)
                return hull_err(e, -ENOMEM, "out of memory");
        return 0;
}

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
        json_auto_t *session_obj = json_deep_copy(l->obj); /* its memory stores (v1-memory-mount.c) */
        pthread_mutex_unlock(&l->lock);
        _cleanup_free_ char *memory_prompt = v1_memory_prompt(session_obj);
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
        /* the agent's skills: their files for the sandbox's /skills, their names in the prompt */
        char skills_dir[SBX_PATH_MAX] = "", home[SBX_PATH_MAX];
        _cleanup_free_ char *skills_prompt = NULL, *instructions = NULL;
        const json_t *skills = json_object_get(agent_obj, "skills");
        if (json_array_size(skills) > 0) {
                if ((r = home_resolve(home, e)) < 0 ||
                    (r = v1_skills_prepare(g->cfg.store, skills, home, skills_dir, &skills_prompt, e)) < 0) {
                        *ret_type = "unknown_error";
                        return r;
                }
        }
        /* the system prompt: the agent's own, then its skills, then its memory stores */
        if (skills_prompt || memory_prompt) {
                const char *sk = skills_prompt ? (system ? skills_prompt : skills_prompt + 2) : "";
                const char *sep = memory_prompt && (system || skills_prompt) ? "\n\n" : "";
                if (asprintf(&instructions, "%s%s%s%s", system ? system : "", sk, sep, memory_prompt ?: "") < 0) {
                        instructions = NULL;
                        return hull_err(e, -ENOMEM, "out of memory");
                }
        }
        svc_agent_recipe rc = {
                .st = g->cfg.settings,
                .model = &g->cfg.settings->model,
                .instructions = instructions ? instructions : system,
                .max_tools = V1_TOOLS_MAX + 7,
                .on_skip = tool_skipped,
                .on_skip_ud = l,
                .cancel = &l->interrupt,
                .client_builtins = !l->tools && self_hosted(l),
        };
        if ((!l->tools || !l->model) && (r = agent_pin(l, agent_obj, e)) < 0)
                return r;
        if (!l->tools && tools_build(l, agent_obj, &rc, ret_type, e) < 0) {
                v1_tools_drop(l); /* the next turn tries again */
                return -1;
        }
        if (!l->model && (r = model_of(l, agent_obj, rc.model, e)) < 0) {
                *ret_type = "model_request_failed_error";
                return r;
        }
        if (!l->bus) {
                r = bus_new(make_id, l, &l->bus);
                if (r < 0 || bus_subscribe(l->bus, on_bus, l) < 0)
                        return hull_err(e, r < 0 ? r : -ENOMEM, "the session's status bus cannot start");
        }
        if (l->needs_box && g->cfg.ss && !l->box) {
                ss_open_opts o = {.principal = l->principal, .owner = ""}; /* no per-owner eviction */
                char mnt[SBX_PATH_MAX];
                if (g->cfg.files && g->cfg.mnt_root) { /* the session's resources, at /mnt: also in a remade box */
                        pthread_mutex_lock(&l->lock);
                        json_auto_t *res = json_incref(json_object_get(l->obj, "resources"));
                        pthread_mutex_unlock(&l->lock);
                        if ((r = v1_resources_materialize(g->cfg.files, g->cfg.mnt_root, l->id, res, mnt, sizeof(mnt),
                                                          e)) < 0)
                                return r;
                        o.mnt_dir = mnt;
                }
                _cleanup_(svc_env_done) svc_env env = {.policy.log_fd = -1};
                bool found;
                _cleanup_close_ int log_fd = -1;
                if ((r = env_of(l, &env, &found, e)) < 0)
                        return r;
                if (found) {
                        if (env.net == SBX_NET_LIMITED) {
                                if ((r = net_log_open(l, &log_fd, e)) < 0)
                                        return r;
                                env.policy.log_fd = log_fd; /* the keeper gets its own copy */
                        }
                        /* the sandbox's records name its environment: the /v1 environment's id,
                         * the layer's digest, the network */
                        rc.env = &env;
                        svc_agent_open_opts(&rc, &o);
                        rc.env = NULL; /* env goes with this block */
                }
                o.skills_dir = skills_dir[0] ? skills_dir : NULL;
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
                v1_node_own_sandbox(g, l->id); /* where other nodes forward requests about it */
                /* the session's memory stores, written into the new sandbox */
                v1_memory_mounts_free(TAKE_PTR(l->mem));
                if ((r = v1_memory_mount(g->cfg.store, g->cfg.ss, l->box, session_obj, &l->mem, e)) < 0)
                        return r;
                /* its repositories mounted below /workspace/, when not there (a remade box) */
                if (g->cfg.mnt_root && (r = v1_repo_workspace(g->cfg.mnt_root, g->cfg.ss, l->box,
                                                              json_object_get(session_obj, "resources"), e)) < 0)
                        return r;
        }
        agent_config ac = {
                .model = l->model,
                .bus = l->bus,
                .ss = l->box ? g->cfg.ss : NULL,
                .session = l->box,
                .after_call = l->mem ? v1_memory_after_call : NULL,
                .after_call_ud = l->mem,
                .may_ask = may_ask,
                .may_ask_ud = l,
                .session_states = true,
        };
        svc_agent_config(&rc, l->tools, &ac);
        return agent_new(&ac, conv, &l->agent, e);
}

/* ---- the conversation kept ---- */

/* A turn's conversation to the store (v1-run-internal.h says how). */
bool v1_conv_prepare(live *l, v1_conv_save *c) {
        *c = (v1_conv_save){.w.result = -ECANCELED};
        c->text = v1_conversation_text(l, &c->len);
        if (!c->text)
                return false;
        size_t len = c->len; /* (on nodes nothing is kept: v1_conv_finish) */
        if (l->kept && len == l->kept_len && memcmp(c->text, l->kept, len) == 0) {
                free(TAKE_PTR(c->text)); /* the same text as kept: nothing to write */
                return false;
        }
        c->w = (store_conv_write){.text = c->text, .len = len, .total_len = len, .result = -ECANCELED};
        if (l->kept && l->kept_parts < V1_CONVERSATION_PARTS_MAX && l->kept_len > 2 && len > l->kept_len &&
            memcmp(c->text, l->kept, l->kept_len - 1) == 0 && c->text[l->kept_len - 1] == ',') {
                c->text[len - 1] = '\0'; /* the tail: from the kept text's last ']' on, without this one's */
                c->w.text = c->text + l->kept_len - 1;
                c->w.len = len - l->kept_len;
                c->w.append = true;
        }
        return true;
}

void v1_conv_finish(live *l, v1_conv_save *c) {
        store *st = l->g->cfg.store;
        hull_error e = {0};
        int r = c->w.result;
        if (r != 0 && c->w.append)
                r = store_conversation_append_text(st, l->id, c->w.text, c->w.len, c->len, &e);
        if (c->w.append)
                c->text[c->len - 1] = ']';
        if (r == 0 && c->w.append)
                l->kept_parts++;
        if (r != 0) {
                e = (hull_error){0};
                r = store_conversation_put_text(st, l->id, c->text, c->len, &e);
                l->kept_parts = 0;
        } else if (!c->w.append)
                l->kept_parts = 0;
        free(l->kept);
        l->kept = NULL;
        if (r < 0)
                dlog_log(l->g->cfg.log, DLOG_WARN, "event=v1-conversation-not-saved session=%s error=\"%s\"", l->id,
                         e.msg);
        if (r >= 0 && !v1_node_mode(l->g)) {
                l->kept = TAKE_PTR(c->text);
                l->kept_len = c->len;
        } else
                free(TAKE_PTR(c->text));
}
