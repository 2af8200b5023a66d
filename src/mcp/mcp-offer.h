/* mcp-offer.h: what hull's MCP server offers, for hull serve's /mcp (src/daemon/api-mcp.c): the
 * catalog's offer (tool-catalog.h: tool_catalog_mcp_offer, which `hull mcp` calls directly):
 * run_python, bash, read, write, edit, glob, grep, inspect_handle, query_handle, in this order,
 * then run_javascript when the caller has it. Kept until api-mcp.c asks the catalog itself. */
#pragma once

#include <stddef.h>

#include "error.h"
#include "limits.h"
#include "tool.h"

/* The offered tools into ret (*ret_n of them), each found by find; javascript (NULL: not offered)
 * last. Returns 0, or -ENOENT with *e naming a tool find does not know (missing from the build). */
int mcp_offer_tools(const tool_def *(*find)(const char *name), const tool_def *javascript,
                    const tool_def *ret[MCP_OFFER_MAX], size_t *ret_n, hull_error *e);
