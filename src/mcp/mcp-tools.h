/* mcp-tools.h: the tools of MCP servers as agent tools (tool.h). Each tool of a connected
 * mcp_client becomes a tool_def named SERVER__TOOL (characters outside [a-zA-Z0-9_-] as '_', cut
 * to 64 with a hash of the whole name to keep it unique), described for the model with the
 * server's name, and with the server's input schema (the top-level "$schema" dropped; a schema
 * the loop's validator does not understand is replaced by {"type":"object"}, the original quoted
 * in the description, and the server validates).
 *
 * A server that declares the resources capability also gets two tools of hull's: SERVER__list_resources
 * ({cursor?}: resources/list, its {resources, nextCursor?} as a value) and SERVER__read_resource
 * ({uri}: resources/read, its contents shaped like a result's embedded resources: text as text, a
 * blob kept as a handle), unless the server has tools of those names. Their tool_def.mcp_tool is
 * "list_resources" / "read_resource".
 *
 * A call goes to the server with the loop's deadline and cancel fd; notifications/progress
 * becomes the call's progress note ("mcp:SERVER: 2/4 ..."). The CallToolResult becomes the
 * tool's output, so that a big one spills into a handle like any tool's:
 *   - text blocks, joined with "\n" (text; a text handle past AGENT_TOOL_TEXT_MAX);
 *   - structuredContent, when there is no text or the text is only its JSON: the value;
 *   - the first image, audio or embedded blob: kept as a binary handle whatever its size (the
 *     model sees its summary and the text); further ones are named in the text, not kept;
 *   - embedded text resources: their text, after a line naming the URI; resource links: a line
 *     naming them;
 *   - isError: the output is an error the model sees.
 * A JSON-RPC error answer is an error result too; a broken connection fails every later call of
 * that server with its reason. */
#pragma once

#include <stddef.h>

#include "error.h"
#include "mcp-client.h"
#include "tool.h"

typedef struct mcp_toolset mcp_toolset;

/* The tools of the n clients (borrowed: they must outlive the set). Lists each server's tools
 * (with the deadline of MCP_REQUEST_TIMEOUT_MS; cancel, when not NULL, set by another thread or
 * a signal handler, ends the wait: -ECANCELED). Returns 0 with *ret, or a negative errno with *e
 * (a server's list failed; two tools with the same name; more than AGENT_TOOLS_MAX tools). */
int mcp_toolset_new(mcp_client *const *clients, size_t n, const atomic_bool *cancel, mcp_toolset **ret, hull_error *e);
void mcp_toolset_free(mcp_toolset *s);
static inline void mcp_toolset_freep(mcp_toolset **s) {
        mcp_toolset_free(*s);
}

size_t mcp_toolset_count(const mcp_toolset *s);
/* The i-th tool (i < count); valid as long as s. */
const tool_def *mcp_toolset_def(const mcp_toolset *s, size_t i);

/* The tool name hull gives the server's tool: SERVER__TOOL sanitised (see above) into ret. */
void mcp_tool_name(const char *server, const char *tool, char ret[65]);

/* A CallToolResult as a tool's output (the rules above); source names the call for a handle
 * ("mcp:SERVER/TOOL"). Returns 0 with *ret, or -ENOMEM. Pure: used by the tools and the tests. */
int mcp_result_to_output(const json_t *result, const char *source, tool_output *ret);
