/* svc-agent.c: see svc-agent.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "macro.h"
#include "svc-agent.h"
#include "time-util.h"
#include "tool-catalog.h"

void svc_agent_free(svc_agent *a) {
        if (!a)
                return;
        mcp_toolset_free(a->mcp_set);
        for (size_t i = 0; i < a->n_mcps; i++)
                mcp_client_free(a->mcps[i]);
        tool_web_free(a->web);
        json_decref(a->schemas);
        free(a->defs);
        free(a->def_ptrs);
        free(a->policies);
        free(a);
}

static tool_policy policy_of(const svc_agent_recipe *r, const svc_agent_rule *rule, const tool_def *d) {
        return rule->from_settings ? settings_policy_for(r->st, d->name, d->default_policy) : rule->policy;
}

static bool taken(const svc_agent *a, const char *name) {
        for (size_t i = 0; i < a->n; i++)
                if (strcmp(a->defs[i].name, name) == 0)
                        return true;
        return false;
}

/* Offer d with rule. Returns 0, or -EINVAL / -E2BIG with *e (strict), or 0 having skipped it. */
static int offer(const svc_agent_recipe *r, svc_agent *a, const tool_def *d, const svc_agent_rule *rule,
                 hull_error *e) {
        bool mcp = d->mcp_server != NULL;
        if (!mcp && !d->client)
                for (size_t i = 0; i < a->n; i++)
                        if (a->defs[i].run == d->run && a->defs[i].env == d->env &&
                            strcmp(a->defs[i].name, d->name) == 0)
                                return 0; /* a built-in named twice */
        if (r->strict && mcp && taken(a, d->name))
                return hull_fail(e, -EINVAL, "--mcp: the tool %s is offered twice", d->name);
        if (a->n >= r->max_tools) {
                if (r->strict)
                        return hull_fail(e, -E2BIG, "--mcp: more than %zu tools in all", r->max_tools);
                return 0;
        }
        a->defs[a->n] = *d;
        if (r->client_builtins && !mcp && !d->client) { /* the client runs it, not a sandbox */
                a->defs[a->n].client = a->defs[a->n].client_builtin = true;
                a->defs[a->n].needs_session = false;
                a->defs[a->n].run = NULL;
                d = &a->defs[a->n];
        }
        a->policies[a->n] = d->client ? TOOL_ALWAYS_ALLOW : policy_of(r, rule, d);
        /* an MCP tool's big result becomes a handle, kept in the session's sandbox */
        a->needs_session |= d->needs_session || mcp;
        a->n++;
        return 0;
}

static int web_start(const svc_agent_recipe *r, svc_agent *a, hull_error *e) {
        const settings *st = r->st;
        if (a->web)
                return 0;
        if (!st)
                return hull_fail(e, -EINVAL, "web tools: no settings");
        return tool_web_new((const char *const *) st->allow_hosts, st->n_allow_hosts,
                            (const char *const *) st->allow_cidrs, st->n_allow_cidrs, st->web_max_bytes,
                            st->search_api_key, st->search_base_url, &a->web, e);
}

/* The built-in called name: a sandbox tool's, or web_fetch / web_search (in w, n_web of them). */
static const tool_def *builtin(const char *name, const tool_def *w, size_t n_web) {
        const tool_catalog_entry *c = tool_catalog_find(name);
        const tool_def *d = c && c->toolset != TOOL_TOOLSET_NONE ? tool_catalog_def(name) : NULL;
        for (size_t i = 0; !d && i < n_web; i++)
                if (strcmp(w[i].name, name) == 0)
                        d = &w[i];
        return d;
}

static bool is_web(const char *name) {
        return strcmp(name, "web_fetch") == 0 || strcmp(name, "web_search") == 0;
}

static int add_builtin(const svc_agent_recipe *r, svc_agent *a, const svc_agent_rule *rule, hull_error *e) {
        tool_def w[2];
        size_t n_web = 0;
        int k;
        if (is_web(rule->name) && (k = web_start(r, a, e)) < 0)
                return k;
        if (a->web)
                n_web = tool_web_defs(a->web, w);
        const tool_def *d = builtin(rule->name, w, n_web);
        if (d)
                return offer(r, a, d, rule, e);
        if (strcmp(rule->name, "web_search") == 0) {
                if (r->strict)
                        return hull_fail(e, -EINVAL,
                                         "--tool web_search: no search key is configured (set TAVILY_API_KEY, or "
                                         "search.api_key in $HULL_HOME/config.json; see docs/AGENT.md)");
                if (r->on_skip)
                        r->on_skip(r->on_skip_ud, rule->name, "no search key configured");
                return 0;
        }
        if (!r->strict)
                return 0; /* v1-shape admits only known names */
        char known[512];
        size_t o = 0;
        known[0] = '\0';
        for (size_t i = 0; i < tool_catalog_count() && o < sizeof(known); i++) {
                const tool_catalog_entry *c = tool_catalog_at(i);
                if (c->toolset != TOOL_TOOLSET_NONE)
                        o += (size_t) snprintf(known + o, sizeof(known) - o, "%s%s", o ? ", " : "", c->name);
        }
        return hull_fail(e, -EINVAL, "--tool %.64s: no such tool (hull's tools: %s)", rule->name, known);
}

static int add_custom(svc_agent *a, const svc_agent_recipe *r, const svc_agent_tool *t, hull_error *e) {
        _cleanup_free_ char *schema = json_dumps(t->input_schema, JSON_COMPACT);
        if (!schema || json_array_append_new(a->schemas, json_string(schema)) < 0)
                return hull_err(e, -ENOMEM, "out of memory");
        const json_t *kept = json_array_get(a->schemas, json_array_size(a->schemas) - 1);
        tool_def d = {
                .name = t->rule.name,
                .description = t->description ?: "",
                .input_schema = json_string_value(kept),
                .default_policy = TOOL_ALWAYS_ALLOW,
                .client = true,
        };
        return offer(r, a, &d, &t->rule, e);
}

/* An MCP server's URL through the egress guard, as web_fetch's URLs are (whoever names a server
 * is not the operator): no loopback, private, link-local or other internal address unless the
 * operator's allowlist (config.json's web.allow_hosts / web.allow_cidrs) admits it, never a cloud
 * metadata endpoint. *ret: the URL to use and the addresses checked (pinned by the caller). */
int svc_egress_check(const settings *st, const char *what, const char *url, uint64_t budget_ms, egress_target *ret,
                     hull_error *e) {
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
                return hull_fail(e, r, "%s: cannot check the URL: %s", what, why.msg);
        r = egress_check_url(p, url, now_mono_ms() + budget_ms, ret, &why);
        if (r < 0)
                return hull_fail(e, r, "%s: %.200s refused: %s%s", what, url, why.msg,
                                 r == -EACCES && !strstr(why.msg, "metadata")
                                         ? " (the operator may admit it with web.allow_cidrs or web.allow_hosts in "
                                           "$HULL_HOME/config.json)"
                                         : "");
        return 0;
}

static int mcp_egress(const settings *st, const char *name, const char *url, egress_target *ret, hull_error *e) {
        char what[128];
        snprintf(what, sizeof(what), "mcp: %s", name);
        return svc_egress_check(st, what, url, MCP_INIT_TIMEOUT_MS, ret, e);
}

static int mcp_start(const svc_agent_recipe *r, const svc_agent_mcp *m, mcp_client **ret, hull_error *e) {
        if (!mcp_server_name_valid(m->name))
                return hull_fail(e, -EINVAL,
                                 "mcp: the server name '%.64s' cannot prefix tool names (hull takes letters, digits, "
                                 "'_' and '-', at most %u bytes): rename it in the agent",
                                 m->name, MCP_SERVER_NAME_MAX);
        if (!m->url) {
                mcp_stdio_config cfg = {.name = m->name,
                                        .argv = m->argv,
                                        .env = m->env,
                                        .cwd = m->cwd,
                                        .sandbox = m->sandbox,
                                        .cancel = r->cancel,
                                        .on_message = r->on_message,
                                        .on_message_ud = r->on_message_ud};
                return mcp_client_spawn(&cfg, ret, e);
        }
        egress_target t = {0};
        char pin[EGRESS_PIN_MAX];
        const char *pins[2] = {pin, NULL};
        int k = mcp_egress(r->st, m->name, m->url, &t, e);
        if (k >= 0 && !t.literal && egress_target_pin(&t, pin) < 0)
                k = hull_fail(e, -ENAMETOOLONG, "mcp: %s: the URL's host name is too long", m->name);
        if (k >= 0) {
                mcp_http_config hc = {.name = m->name,
                                      .url = t.url,
                                      .headers = m->headers,
                                      .resolve = t.literal ? NULL : pins,
                                      .cancel = r->cancel,
                                      .on_message = r->on_message,
                                      .on_message_ud = r->on_message_ud};
                k = mcp_client_connect(&hc, ret, e);
        }
        egress_target_done(&t);
        return k;
}

static const svc_agent_rule *mcp_rule(const svc_agent_recipe *r, const tool_def *d) {
        for (size_t i = 0; i < r->n_mcp; i++) {
                const svc_agent_mcp *m = &r->mcp[i];
                if (strcmp(m->name, d->mcp_server) != 0)
                        continue;
                for (size_t j = 0; j < m->n_rules; j++)
                        if (strcmp(m->rules[j].name, d->mcp_tool) == 0)
                                return &m->rules[j];
                return &m->others;
        }
        return NULL;
}

/* Start the servers, list their tools, offer the enabled ones. */
static int mcp_build(const svc_agent_recipe *r, svc_agent *a, const char **ret_failed, hull_error *e) {
        int k;
        if (r->n_mcp > SVC_AGENT_MCP_MAX)
                return hull_fail(e, -E2BIG, "mcp: more than %u servers", SVC_AGENT_MCP_MAX);
        for (size_t i = 0; i < r->n_mcp; i++) {
                if ((k = mcp_start(r, &r->mcp[i], &a->mcps[a->n_mcps], e)) < 0) {
                        *ret_failed = r->mcp[i].name;
                        return k;
                }
                a->n_mcps++;
        }
        if (a->n_mcps == 0)
                return 0;
        if ((k = mcp_toolset_new(a->mcps, a->n_mcps, r->cancel, &a->mcp_set, e)) < 0) {
                /* the server whose connection broke; else (an error answer) the message names it */
                size_t j = 0;
                while (j + 1 < a->n_mcps && mcp_client_alive(a->mcps[j], NULL))
                        j++;
                *ret_failed = r->mcp[j].name;
                return k;
        }
        for (size_t i = 0; i < mcp_toolset_count(a->mcp_set); i++) {
                const tool_def *d = mcp_toolset_def(a->mcp_set, i);
                const svc_agent_rule *rule = mcp_rule(r, d);
                if (!rule || !rule->enabled)
                        continue;
                if ((k = offer(r, a, d, rule, e)) < 0)
                        return k;
        }
        return 0;
}

static int tools_build(const svc_agent_recipe *r, svc_agent *a, hull_error *e) {
        int k;
        if ((r->strict || r->all_builtins) && (k = web_start(r, a, e)) < 0)
                return k;
        if (r->all_builtins) {
                tool_def w[2];
                size_t n_web = tool_web_defs(a->web, w);
                const tool_def *builtins[TOOL_CATALOG_MAX];
                size_t n_builtins = tool_catalog_sandbox_defs(builtins);
                for (size_t i = 0; i < n_builtins; i++)
                        if ((k = offer(r, a, builtins[i], &r->all_rule, e)) < 0)
                                return k;
                /* the web tools' defs live in a->web: offered by name, as a listed built-in */
                for (size_t i = 0; i < n_web; i++) {
                        svc_agent_rule rule = r->all_rule;
                        rule.name = w[i].name;
                        if ((k = add_builtin(r, a, &rule, e)) < 0)
                                return k;
                }
        }
        for (size_t i = 0; i < r->n_tools; i++) {
                const svc_agent_tool *t = &r->tools[i];
                if (!t->rule.name)
                        continue;
                k = t->input_schema ? add_custom(a, r, t, e) : add_builtin(r, a, &t->rule, e);
                if (k < 0)
                        return k;
        }
        return 0;
}

int svc_agent_build(const svc_agent_recipe *r, svc_agent **ret, const char **ret_failed_mcp, hull_error *e) {
        _cleanup_(svc_agent_freep) svc_agent *a = calloc(1, sizeof(*a));
        const char *failed = NULL;
        size_t cap = r->max_tools && r->max_tools < SVC_AGENT_TOOLS_MAX ? r->max_tools : SVC_AGENT_TOOLS_MAX;
        svc_agent_recipe rr = *r;
        int k;
        if (ret_failed_mcp)
                *ret_failed_mcp = NULL;
        rr.max_tools = cap;
        if (!a || !(a->defs = calloc(cap + 1, sizeof(*a->defs))) ||
            !(a->def_ptrs = calloc(cap + 1, sizeof(*a->def_ptrs))) ||
            !(a->policies = calloc(cap + 1, sizeof(*a->policies))) || !(a->schemas = json_array()))
                return hull_err(e, -ENOMEM, "out of memory");
        if ((k = tools_build(&rr, a, e)) < 0)
                return k;
        if ((k = mcp_build(&rr, a, &failed, e)) < 0) {
                if (ret_failed_mcp)
                        *ret_failed_mcp = failed;
                return k;
        }
        for (size_t i = 0; i < a->n; i++)
                a->def_ptrs[i] = &a->defs[i];
        *ret = TAKE_PTR(a);
        return 0;
}

void svc_agent_config(const svc_agent_recipe *r, const svc_agent *a, agent_config *ret) {
        const settings *st = r->st;
        ret->instructions = r->instructions && r->instructions[0] ? r->instructions : NULL;
        if (a) {
                ret->tools = a->def_ptrs;
                ret->policies = a->policies;
                ret->n_tools = a->n;
        }
        ret->max_turns = r->max_turns ? r->max_turns : st ? st->max_turns : 0;
        ret->max_tool_calls = r->max_tool_calls ? r->max_tool_calls : st ? st->max_tool_calls : 0;
        ret->context_tokens = r->context_tokens ? r->context_tokens : st ? st->context_tokens : 0;
        ret->wall_ms = r->wall_ms;
}

void svc_agent_open_opts(const svc_agent_recipe *r, ss_open_opts *o) {
        const svc_env *env = r->env;
        if (!env)
                return;
        o->layer_dir = env->layer[0] ? env->layer : NULL;
        o->net = env->net;
        o->net_policy = env->net == SBX_NET_LIMITED ? &env->policy : NULL;
        o->environment = env->desc[0] ? env->desc : NULL;
        if (env->kernel) /* networks none and limited; another is refused when the session opens */
                o->tier = SBX_TIER_KERNEL;
}
