/* cli-tools.h: the tools `hull run` and `hull chat` offer, as their agent recipe (svc-agent.h)
 * built them, and what the CLI does with the session around them: the MCP servers of --mcp and
 * config.json as recipe entries, warm its interpreter while the first model request is in
 * flight, save its workspace into the run's directory and restore it for a resumed chat. */
#pragma once

#include <stddef.h>
#include <wordexp.h>

#include "error.h"
#include "mcp-client.h"
#include "settings.h"
#include "ss.h"
#include "svc-agent.h"
#include "tool.h"

typedef struct cli_tools cli_tools;

/* The tools of a built recipe (svc-agent.h; taken: freed with t, also on error) as hull run and
 * hull chat offer them: each of hull's tools waits for the session's warm-up first (an MCP
 * server's tools do not use the session). Returns 0 with *ret, or -ENOMEM with *e. */
int cli_tools_new(svc_agent *built, cli_tools **ret, hull_error *e);
void cli_tools_free(cli_tools *t);
static inline void cli_tools_freep(cli_tools **t) {
        cli_tools_free(*t);
}

/* The MCP servers of config.json's "mcp" and of --mcp, as recipe entries (the strings borrow st
 * and the specs; the commands' words are the list's). */
typedef struct cli_mcp_list {
        svc_agent_mcp mcp[MCP_SERVERS_MAX];
        size_t n;
        char names[MCP_SERVERS_MAX][MCP_SERVER_NAME_MAX + 1];
        wordexp_t words[MCP_SERVERS_MAX];
        bool have_words[MCP_SERVERS_MAX];
        mcp_sandbox sandboxes[MCP_SERVERS_MAX];
} cli_mcp_list;

/* The servers of config.json's "mcp" (st->mcp, in the file's order; one that a spec names is left
 * to the spec) and of specs (n of them, each "NAME=COMMAND ARGS...": the command line split as a
 * shell would, without command substitution; or NAME=http(s)://...: a Streamable HTTP server),
 * into *ret (free with cli_mcp_list_done). Their tools are offered named NAME__TOOL with their
 * policies from the settings (default always_allow). A stdio server named in sandboxed
 * (n_sandboxed names, --mcp-sandbox) or whose config.json entry has "sandbox" runs inside a
 * sandbox (mcp-client.h's mcp_sandbox; the entry's sandbox settings, else no network). Returns
 * 0, or -EINVAL with *e (a malformed spec, a sandboxed name that is no stdio server, too many). */
int cli_mcp_list_make(const settings *st, const char *const *specs, size_t n, const char *const *sandboxed,
                      size_t n_sandboxed, cli_mcp_list *ret, hull_error *e);
void cli_mcp_list_done(cli_mcp_list *l);

const tool_def *const *cli_tools_defs(const cli_tools *t);
const tool_policy *cli_tools_policies(const cli_tools *t);
size_t cli_tools_count(const cli_tools *t);

/* Start the session's python in a thread of its own, so that it warms up while the first model
 * request is in flight; every tool of t, and cli_tools_warm_wait, wait for it to be over. Failures
 * only make the first cell slower. Call it once the session is open (the thread that opened it
 * stays: the session's init dies with it). */
void cli_tools_warm_start(cli_tools *t, ss_manager *m, ss_session *s);
/* Wait for the warm-up (if any) to end: before any other use of the session. */
void cli_tools_warm_wait(cli_tools *t);

/* Copy the session's workspace into DIR/workspace (an existing one is replaced) and its handles
 * into DIR/handles (ss_handles_export), where cli-agent.c starts a resumed session from. */
int cli_tools_save(ss_manager *m, ss_session *s, const char *dir, hull_error *e);

/* Put DIR/workspace (when there is one) back into the session's workspace. */
int cli_tools_restore(ss_manager *m, ss_session *s, const char *dir, hull_error *e);
