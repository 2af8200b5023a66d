/* svc-agent.h: the one agent recipe (issue 20). A recipe describes a sandboxed agent: its model
 * settings and instructions, its built-in tools with their permission policies, its custom tools
 * (the client runs them), its MCP servers (by URL, with headers; or by command, in or out of a
 * sandbox) with which of their tools are offered and how, its resolved environment (svc-env.h)
 * and its limits. svc_agent_build() makes what the agent loop needs from it: the web tools, the
 * MCP clients (every URL first through the egress guard with the operator's allowlist:
 * config.json's web.allow_hosts / web.allow_cidrs; a cloud metadata endpoint never), their
 * toolset, the tool definitions, their schemas and policies. hull run and hull chat
 * (src/cli/cli-agent.c) and /v1 sessions (src/service/v1-agent.c) both build their agents here. */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent.h"
#include "egress.h"
#include "error.h"
#include "limits.h"
#include "mcp-client.h"
#include "mcp-tools.h"
#include "settings.h"
#include "ss.h"
#include "svc-env.h"
#include "tool-web.h"
#include "tool.h"

/* Whether a tool is offered and with which permission policy. */
typedef struct svc_agent_rule {
        const char *name;   /* a built-in's name; an MCP server's own name for one of its tools */
        bool enabled;       /* offered (a built-in listed in the recipe always is) */
        bool from_settings; /* the policy: the settings' for the tool's full name (config.json's
                             * "tools"), else the tool's default; false: policy */
        tool_policy policy;
} svc_agent_rule;

/* A tool of the recipe, in the order the model sees them: a built-in, or (input_schema set) a
 * custom tool that the client runs (always allowed: the client decides). */
typedef struct svc_agent_tool {
        svc_agent_rule rule;
        const char *description;    /* custom: for the model */
        const json_t *input_schema; /* custom: its JSON Schema; NULL: a built-in */
} svc_agent_tool;

typedef struct svc_agent_mcp {
        const char *name;            /* mcp_server_name_valid; prefixes its tools: NAME__TOOL */
        const char *url;             /* Streamable HTTP (through the egress guard); NULL: stdio */
        const char *const *headers;  /* HTTP: "Name: value", NULL-terminated, or NULL */
        const char *const *argv;     /* stdio: the command and its arguments, NULL-terminated */
        const char *const *env;      /* stdio: "K=V" added, NULL-terminated, or NULL */
        const char *cwd;             /* stdio: NULL: hull's */
        const mcp_sandbox *sandbox;  /* stdio: NULL: outside any sandbox, as hull's user */
        const svc_agent_rule *rules; /* per tool, by the server's own name for it */
        size_t n_rules;
        svc_agent_rule others; /* the tools no rule names */
} svc_agent_mcp;

typedef struct svc_agent_recipe {
        /* The model, the web tools' allowlist and search key, the egress guard's allowlist
         * (allow_hosts, allow_cidrs), the policies of from_settings rules. Borrowed; may be NULL
         * only without web tools and from_settings rules. */
        const settings *st;
        const model_config *model; /* the model settings (a caller may override its model id) */
        const char *instructions;  /* after hull's manual; NULL: none */
        /* Every built-in hull has (the sandbox tools, web_fetch, web_search with a search key), with
         * the rule all_rule (its name unused); else tools. */
        bool all_builtins;
        svc_agent_rule all_rule;
        /* The built-ins are run by the client (a /v1 session in a self_hosted environment): offered
         * to the model as usual, each call announced and awaited (tool.h: client_builtin). */
        bool client_builtins;
        const svc_agent_tool *tools;
        size_t n_tools;
        const svc_agent_mcp *mcp;
        size_t n_mcp;
        /* strict (hull run's --tool): an unknown or unavailable built-in, an MCP tool whose name is
         * taken or one over max_tools is -EINVAL naming it (the messages name --tool and --mcp), and
         * the settings' web allowlist is checked even when no web tool is offered; else such a tool is
         * left out (on_skip says why). */
        bool strict;
        size_t max_tools; /* 0 or over SVC_AGENT_TOOLS_MAX: SVC_AGENT_TOOLS_MAX */
        void (*on_skip)(void *ud, const char *tool, const char *why);
        void *on_skip_ud;
        const atomic_bool *cancel; /* ends the MCP servers' start and initialize (-ECANCELED) */
        mcp_message_fn on_message; /* the MCP servers' log messages; NULL: dropped */
        void *on_message_ud;
        const svc_env *env;                 /* the resolved environment of the agent's sandbox; NULL: none */
        unsigned max_turns, max_tool_calls; /* 0: the settings' */
        uint64_t context_tokens;            /* 0: the settings' */
        uint64_t wall_ms;                   /* per turn; 0: the default */
} svc_agent_recipe;

#define SVC_AGENT_TOOLS_MAX (V1_TOOLS_MAX + 8U)
#define SVC_AGENT_MCP_MAX V1_MCP_SERVERS_MAX

/* What the agent loop needs: read-only for callers. */
typedef struct svc_agent {
        tool_def *defs; /* n of them */
        const tool_def **def_ptrs;
        tool_policy *policies;
        size_t n;
        bool needs_session; /* a tool runs in the sandbox (an MCP tool's big result becomes a handle there) */
        tool_web *web;
        json_t *schemas; /* the custom tools' input schemas as text (defs point into them) */
        mcp_client *mcps[SVC_AGENT_MCP_MAX];
        size_t n_mcps;
        mcp_toolset *mcp_set;
} svc_agent;

/* Build the recipe's tools: start its web tools, connect to or spawn its MCP servers (in order)
 * and list their tools. Returns 0 with *ret (free with svc_agent_free), or a negative errno with
 * *e: a strict refusal (-EINVAL), a web allowlist entry that is not a host or CIDR, an MCP
 * server whose name is not one (-EINVAL), whose URL the egress guard refuses (-EACCES: "mcp:
 * NAME: URL refused: why (admit it with ...)"), that cannot be started, reached or listed (its
 * error), or -ECANCELED; then *ret_failed_mcp (may be NULL) is the failed server's name (the
 * recipe's string), else NULL. Nothing is left running on error. */
int svc_agent_build(const svc_agent_recipe *r, svc_agent **ret, const char **ret_failed_mcp, hull_error *e);
void svc_agent_free(svc_agent *a);
static inline void svc_agent_freep(svc_agent **a) {
        svc_agent_free(*a);
}

/* The agent loop's config of the recipe and its built tools: instructions, limits (the
 * recipe's, else the settings') and a's tools and policies (a NULL: left to the caller, who
 * offers wrapped copies). The caller adds the model client, the bus, the session and decide. */
void svc_agent_config(const svc_agent_recipe *r, const svc_agent *a, agent_config *ret);

/* The sandbox's part of the recipe's environment in *o: its layer, network and description
 * (borrowed from r->env). Nothing without an environment. */
void svc_agent_open_opts(const svc_agent_recipe *r, ss_open_opts *o);
/* url through the egress guard with st's allowlist (config.json's web.allow_hosts /
 * web.allow_cidrs; st may be NULL): no internal address unless admitted, never a cloud metadata
 * endpoint. What names the URL comes from an API caller, not the operator. *ret: the URL to use
 * and its checked addresses (the caller pins them; egress_target_done frees). Returns 0, or a
 * negative errno with *e saying "WHAT: URL refused: why" and how the operator admits it. */
int svc_egress_check(const settings *st, const char *what, const char *url, uint64_t budget_ms, egress_target *ret,
                     hull_error *e);
