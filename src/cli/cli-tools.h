/* cli-tools.h: the tools `hull run` and `hull chat` offer (the sandbox tools of src/tools/ and,
 * from the settings, web_fetch and web_search), with their permission policies, and what the CLI
 * does with the session around them: warm its interpreter while the first model request is in
 * flight, save its workspace into the run's directory and restore it for a resumed chat. */
#pragma once

#include <stddef.h>

#include "error.h"
#include "mcp-client.h"
#include "settings.h"
#include "ss.h"
#include "tool.h"

typedef struct cli_tools cli_tools;

/* The tools named (names: n of them, each a built-in's name; NULL: every built-in, web_search
 * only when a search key is configured), their policies from the settings. Returns 0 with *ret,
 * or -EINVAL with *e naming an unknown tool (and listing the known ones) or a tool that cannot be
 * offered (web_search without a key; an allowlist entry that is not a host or CIDR). */
int cli_tools_new(const settings *st, const char *const *names, size_t n, cli_tools **ret, hull_error *e);
void cli_tools_free(cli_tools *t);
static inline void cli_tools_freep(cli_tools **t) {
        cli_tools_free(*t);
}
/* Start the MCP servers of config.json's "mcp" (st->mcp, in the file's order; one that a spec names
 * is left to the spec) and of specs (n of them, each "NAME=COMMAND ARGS...": the command line split
 * as a shell would, without command substitution; or NAME=http(s)://...: a Streamable HTTP
 * server connected to), list their tools and offer them too, named NAME__TOOL, with their policies from the
 * settings (default always_allow). interrupt (may be NULL; set by a signal handler) ends the waits
 * for their initialize and tools/list: -ECANCELED. on_message (may be NULL) gets their log messages. The servers
 * run outside the sandbox, as hull's user, until cli_tools_free; but a stdio server named in
 * sandboxed (n_sandboxed names, --mcp-sandbox) or whose config.json entry has "sandbox" runs inside
 * one (mcp-client.h's mcp_sandbox; the entry's sandbox settings, else no network). Returns 0, or
 * a negative errno with *e (-EINVAL for a malformed spec, a sandboxed name that is no stdio
 * server; a server that does not start or answer). */
int cli_tools_add_mcp(cli_tools *t, const settings *st, const char *const *specs, size_t n,
                      const char *const *sandboxed, size_t n_sandboxed, const atomic_bool *interrupt,
                      mcp_message_fn on_message, void *ud, hull_error *e);

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
