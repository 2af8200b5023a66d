/* tool-catalog-table.h: THE table of hull's built-in tools (tool-catalog.h), one X(...) per tool,
 * in the toolsets' order: X(name, toolset, definition or NULL, read-only, hull mcp's place or 0).
 * Expanded twice: by tool-catalog.c for the facts (which needs none of the tools, so a parser such
 * as src/daemon/v1-shape.c links it alone) and by tool-catalog-defs.c for the definitions. Not a
 * public interface. */
#pragma once

#define TOOL_CATALOG_TABLE(X)                                                                                          \
        X(bash, TOOL_TOOLSET_AGENT, &tool_bash, false, 2)                                                              \
        X(edit, TOOL_TOOLSET_AGENT, &tool_edit, false, 5)                                                              \
        X(read, TOOL_TOOLSET_AGENT, &tool_read, true, 3)                                                               \
        X(write, TOOL_TOOLSET_AGENT, &tool_write, false, 4)                                                            \
        X(glob, TOOL_TOOLSET_AGENT, &tool_glob, true, 6)                                                               \
        X(grep, TOOL_TOOLSET_AGENT, &tool_grep, true, 7)                                                               \
        X(web_fetch, TOOL_TOOLSET_AGENT, NULL, false, 0)                                                               \
        X(web_search, TOOL_TOOLSET_AGENT, NULL, true, 0)                                                               \
        X(run_python, TOOL_TOOLSET_HULL, &tool_run_python, false, 1)                                                   \
        X(inspect_handle, TOOL_TOOLSET_HULL, &tool_inspect_handle, true, 8)                                            \
        X(query_handle, TOOL_TOOLSET_HULL, &tool_query_handle, true, 9)                                                \
        X(read_handle, TOOL_TOOLSET_HULL, &tool_read_handle, true, 0)                                                  \
        X(publish_file, TOOL_TOOLSET_HULL, &tool_publish_file, false, 0)                                               \
        X(read_document, TOOL_TOOLSET_HULL, &tool_read_document, false, 10)                                            \
        X(run_javascript, TOOL_TOOLSET_NONE, &tool_run_javascript, false, 11)
