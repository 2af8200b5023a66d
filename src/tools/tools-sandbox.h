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
extern const tool_def tool_read_document; /* tool-document.c */
/* In no toolset: offered by hull mcp. */
extern const tool_def tool_run_javascript;

/* The list of these, their toolsets and which hull mcp offers: tool-catalog.h. */

/* The built-in tool of either toolset called name that has a definition (web_fetch, web_search
 * and run_javascript not), or NULL. Kept for src/daemon/v1-run.c: tool_catalog_def is the same
 * question. (tool-catalog.c) */
const tool_def *tools_sandbox_find(const char *name);
