/* settings.h: where an agent's configuration comes from, for `hull run`, `hull chat` and (later)
 * `hull serve`: command-line flags first, then the environment (the process's, then a `.env` in
 * the working directory, read for lookups only, never exported), then the configuration file
 * $HULL_HOME/config.json. Each value is taken from the first place that has it.
 *
 * Environment: HULL_PROVIDER (openai | anthropic), HULL_MODEL, HULL_BASE_URL (also the SDKs'
 * OPENAI_BASE_URL / ANTHROPIC_BASE_URL), OPENAI_API_KEY, ANTHROPIC_API_KEY, HULL_API_KEY (either
 * provider), TAVILY_API_KEY (web_search), HULL_SEARCH_BASE_URL.
 *
 * config.json (every key optional; an unknown key is an error naming it; a top-level key that starts
 * with "//" is a comment and ignored, as `hull init` writes them):
 *   {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": "https://...",
 *    "api_key": "...", "headers": {"Name": "value"}, "stream": true, "max_output_tokens": 8192,
 *    "max_turns": 50, "max_tool_calls": 200, "context_tokens": 128000,
 *    "tools": {"bash": "always_ask", "web_fetch": "deny"},
 *    "web": {"allow_hosts": ["intranet.corp"], "allow_cidrs": ["10.1.0.0/16"], "max_bytes": 10000000},
 *    "search": {"api_key": "...", "base_url": "https://api.tavily.com"},
 *    "mcp": {"files": {"command": "npx", "args": ["-y", "..."], "env": {"K": "V"}, "cwd": "/srv"},
 *            "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ..."}},
 *            "boxed": {"command": "node", "args": ["server.js"], "sandbox": {"allow_hosts": ["api.example.com"],
 *                      "allow_package_managers": false, "workdir": "/srv/boxed"}}}}
 * "mcp" is the MCP servers of hull run and hull chat (the shape of Claude Desktop's and VS Code's
 * configurations; an optional "type", "stdio" or "http", must agree with the entry); a --mcp flag
 * of the same name takes the place of an entry. An entry's name and every member are checked here:
 * a bad one is an error naming "mcp.NAME.KEY". A stdio entry's "sandbox" (true, or an object of
 * allow_hosts, allow_package_managers, workdir and the testing-only net_allow_loopback) runs it
 * inside a hull sandbox (mcp-client.h's mcp_sandbox); false or absent: outside, as configured.
 *
 * The provider, when nothing names it, follows the key that is set (an error when both are);
 * with only a base URL (a local server) it is openai. The model, when nothing names it, is the
 * provider's default for its official endpoint, and must be named for any other. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "dotenv.h"
#include "error.h"
#include "model.h"
#include "tool.h"

typedef struct settings_flags {
        const char *provider, *model, *base_url, *api_key; /* NULL: not given */
        const char *const *headers;                        /* "Name: value" lines */
        size_t n_headers;
        int stream;                 /* -1: not given */
        uint64_t max_output_tokens; /* 0: not given */
} settings_flags;

typedef struct settings_policy {
        char *tool;
        tool_policy policy;
} settings_policy;

/* One MCP server of the file's "mcp". Strings point into settings.file or are owned (env,
 * headers). */
typedef struct settings_mcp {
        const char *name;
        const char *url; /* Streamable HTTP; NULL: stdio */
        char **argv;     /* stdio: the command and its arguments, NULL-terminated */
        char **env;      /* stdio: "K=V", NULL-terminated */
        const char *cwd; /* stdio: NULL: hull's */
        char **headers;  /* HTTP: "Name: value", NULL-terminated */
        /* stdio, "sandbox": true or {...}: run inside a hull sandbox (mcp-client.h's mcp_sandbox) */
        bool sandbox;
        char **allow_hosts;          /* "sandbox.allow_hosts", NULL-terminated; strings are the file's */
        bool allow_package_managers; /* "sandbox.allow_package_managers" */
        bool net_allow_loopback;     /* "sandbox.net_allow_loopback": TESTING ONLY */
        const char *workdir;         /* "sandbox.workdir": the server's directory (else cwd) */
} settings_mcp;

typedef struct settings {
        model_config model;     /* points into the strings below */
        const char *key_source; /* where the API key came from ("OPENAI_API_KEY", "--api-key", ...) */
        unsigned max_turns, max_tool_calls;
        uint64_t context_tokens;
        settings_policy *policies; /* per tool, from the file's "tools" */
        size_t n_policies;
        char **allow_hosts, **allow_cidrs; /* web_fetch's allowlist */
        size_t n_allow_hosts, n_allow_cidrs;
        uint64_t web_max_bytes;                 /* 0: the tool's default */
        char *search_api_key, *search_base_url; /* web_search: offered only with a key */
        settings_mcp *mcp;                      /* the file's MCP servers, in its order */
        size_t n_mcp;

        /* owned */
        char *s_base_url, *s_api_key, *s_model, **s_headers;
        size_t n_s_headers;
        json_t *file;
} settings;

void settings_done(settings *s);

/* Resolve the settings. config_path: the configuration file (a missing file is no file), NULL:
 * none. env: the .env's assignments (NULL: none). Returns 0 with *ret, or -EINVAL with *e saying
 * what is missing or wrong and where it came from. */
int settings_load(const settings_flags *f, const char *config_path, const dotenv *env, settings *ret, hull_error *e);

/* The policy the settings give tool (or def when they give none). */
tool_policy settings_policy_for(const settings *s, const char *tool, tool_policy def);
