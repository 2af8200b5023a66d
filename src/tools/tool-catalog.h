/* tool-catalog.h: the one table of hull's built-in tools: each one's name, its toolset (the Claude
 * Managed Agents agent_toolset_20260401: bash, edit, read, write, glob, grep, web_fetch,
 * web_search; hull's hull_toolset_20261201: run_python, inspect_handle, query_handle, read_handle,
 * publish_file, read_document; run_javascript in none, offered by hull mcp only), its definition,
 * whether it only reads, and whether hull mcp (and hull serve's /mcp) offers it. Everything that lists, checks or
 * offers built-in tools by name asks here. The table's order is the toolsets' (the /v1 API shows
 * a toolset's tools in it).
 *
 * Two objects: the facts (tool-catalog.c, in libtoolcatalog: no dependency, for parsers such as
 * the /v1 shapes and their fuzz targets) and the definitions (tool-catalog-defs.c, in libtools:
 * they bring the tools with them). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "limits.h"
#include "tool.h"

typedef enum tool_toolset {
        TOOL_TOOLSET_AGENT, /* agent_toolset_20260401 */
        TOOL_TOOLSET_HULL,  /* hull_toolset_20261201 */
        TOOL_TOOLSET_NONE,  /* in no toolset: run_javascript */
        _TOOL_TOOLSET_MAX,
} tool_toolset;

/* "agent_toolset_20260401", "hull_toolset_20261201"; NULL for TOOL_TOOLSET_NONE. */
const char *tool_toolset_to_string(tool_toolset t);
/* The toolset of that type name (TOOL_TOOLSET_AGENT or TOOL_TOOLSET_HULL), or -EINVAL. */
int tool_toolset_from_string(const char *s);

typedef struct tool_catalog_entry {
        const char *name;
        tool_toolset toolset;
        bool read_only;     /* it only reads: the /v1 "auto" permission policy runs it without asking */
        unsigned mcp_place; /* hull mcp offers it, at this place in its list (1: first); 0: not offered */
} tool_catalog_entry;

/* ---- the facts (tool-catalog.c) ---- */

/* How many tools the catalog holds, and the i-th (NULL past the end), in the table's order. */
size_t tool_catalog_count(void);
const tool_catalog_entry *tool_catalog_at(size_t i);

/* The built-in tool called name, or NULL. */
const tool_catalog_entry *tool_catalog_find(const char *name);
/* Does the built-in tool called name only read? false for a name it does not know. */
bool tool_catalog_is_read_only(const char *name);

/* The names of toolset t's tools into ret, in the table's order, then NULL. Returns how many. */
size_t tool_catalog_toolset_names(tool_toolset t, const char *ret[TOOL_CATALOG_MAX + 1]);

/* ---- the definitions (tool-catalog-defs.c) ---- */

/* The definition of the built-in tool called name; NULL when unknown, and for web_fetch and
 * web_search, whose definitions carry the web configuration (tool-web.h: tool_web_defs). */
const tool_def *tool_catalog_def(const char *name);

/* The definitions of both toolsets' tools that have one (web_fetch and web_search not: tool-web.h
 * makes theirs), in the table's order: what hull run offers the model. Returns how many. */
size_t tool_catalog_sandbox_defs(const tool_def *ret[TOOL_CATALOG_MAX]);

/* What hull mcp and /mcp offer, in its order: run_python, bash, read, write, edit, glob, grep,
 * inspect_handle, query_handle, read_document, then run_javascript when javascript (the host has node: the
 * session's javascript cell runs it). Returns how many. */
size_t tool_catalog_mcp_offer(bool javascript, const tool_def *ret[MCP_OFFER_MAX]);
