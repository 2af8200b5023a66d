/* tools-sandbox.h: hull's built-in tools over the session core (src/session/ss.h), run in the
 * session's sandbox: the Claude Managed Agents toolset's bash, read, write, edit, glob and grep
 * (agent_toolset_20260401: Claude Code's input schemas), and hull's run_python, inspect_handle,
 * query_handle, read_handle and publish_file. Each takes every path a model gives through the
 * workspace jail (ws_path_resolve, then ws_open inside the core), needs the session (the loop
 * claims it around the call), honours the call's deadline and cancel fd, and answers the model
 * with short, shaped text; failures the model can act on are error results (is_error), with a
 * line saying what to do. */
#pragma once

#include <stddef.h>

#include "tool.h"

extern const tool_def tool_bash;
extern const tool_def tool_read;
extern const tool_def tool_write;
extern const tool_def tool_edit;
extern const tool_def tool_glob;
extern const tool_def tool_grep;
extern const tool_def tool_run_python;
extern const tool_def tool_inspect_handle;
extern const tool_def tool_query_handle;
extern const tool_def tool_read_handle;
extern const tool_def tool_publish_file;
/* Not among tools_sandbox (the agent's toolset): offered by hull mcp. */
extern const tool_def tool_run_javascript;

/* All of the above, in the order hull offers them; NULL-terminated. A CLI offers them as
 * agent_config.tools = tools_sandbox, .n_tools = tools_sandbox_n (or copies them into its own
 * array, with web_fetch and web_search, and sets a policy per tool). */
extern const tool_def *const tools_sandbox[];
extern const size_t tools_sandbox_n;

/* The built-in sandbox tool of that name, or NULL. */
const tool_def *tools_sandbox_find(const char *name);
