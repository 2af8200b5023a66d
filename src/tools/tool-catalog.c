/* tool-catalog.c: the table of hull's built-in tools (tool-catalog.h) and its questions. */
#include "tool-catalog.h"

#include <errno.h>
#include <string.h>

#include "macro.h"
#include "tools-sandbox.h"

static const tool_catalog_entry catalog[] = {
        {"bash", TOOL_TOOLSET_AGENT, &tool_bash, false, 2},
        {"edit", TOOL_TOOLSET_AGENT, &tool_edit, false, 5},
        {"read", TOOL_TOOLSET_AGENT, &tool_read, true, 3},
        {"write", TOOL_TOOLSET_AGENT, &tool_write, false, 4},
        {"glob", TOOL_TOOLSET_AGENT, &tool_glob, true, 6},
        {"grep", TOOL_TOOLSET_AGENT, &tool_grep, true, 7},
        {"web_fetch", TOOL_TOOLSET_AGENT, NULL, false, 0},
        {"web_search", TOOL_TOOLSET_AGENT, NULL, true, 0},
        {"run_python", TOOL_TOOLSET_HULL, &tool_run_python, false, 1},
        {"inspect_handle", TOOL_TOOLSET_HULL, &tool_inspect_handle, true, 8},
        {"query_handle", TOOL_TOOLSET_HULL, &tool_query_handle, true, 9},
        {"read_handle", TOOL_TOOLSET_HULL, &tool_read_handle, true, 0},
        {"publish_file", TOOL_TOOLSET_HULL, &tool_publish_file, false, 0},
        {"run_javascript", TOOL_TOOLSET_NONE, &tool_run_javascript, false, 10},
};

_Static_assert(ELEMENTSOF(catalog) <= TOOL_CATALOG_MAX, "TOOL_CATALOG_MAX holds the catalog");

static const char *const toolset_names[_TOOL_TOOLSET_MAX] = {
        [TOOL_TOOLSET_AGENT] = "agent_toolset_20260401",
        [TOOL_TOOLSET_HULL] = "hull_toolset_20261201",
        [TOOL_TOOLSET_NONE] = NULL,
};

const char *tool_toolset_to_string(tool_toolset t) {
        return t < _TOOL_TOOLSET_MAX ? toolset_names[t] : NULL;
}

int tool_toolset_from_string(const char *s) {
        for (int t = 0; s && t < _TOOL_TOOLSET_MAX; t++)
                if (toolset_names[t] && strcmp(s, toolset_names[t]) == 0)
                        return t;
        return -EINVAL;
}

size_t tool_catalog_count(void) {
        return ELEMENTSOF(catalog);
}

const tool_catalog_entry *tool_catalog_at(size_t i) {
        return i < ELEMENTSOF(catalog) ? &catalog[i] : NULL;
}

const tool_catalog_entry *tool_catalog_find(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(catalog); i++)
                if (strcmp(catalog[i].name, name) == 0)
                        return &catalog[i];
        return NULL;
}

const tool_def *tool_catalog_def(const char *name) {
        const tool_catalog_entry *t = tool_catalog_find(name);
        return t ? t->def : NULL;
}

bool tool_catalog_is_read_only(const char *name) {
        const tool_catalog_entry *t = tool_catalog_find(name);
        return t && t->read_only;
}

size_t tool_catalog_toolset_names(tool_toolset t, const char *ret[TOOL_CATALOG_MAX + 1]) {
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(catalog); i++)
                if (catalog[i].toolset == t)
                        ret[n++] = catalog[i].name;
        ret[n] = NULL;
        return n;
}

size_t tool_catalog_sandbox_defs(const tool_def *ret[TOOL_CATALOG_MAX]) {
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(catalog); i++)
                if (catalog[i].toolset != TOOL_TOOLSET_NONE && catalog[i].def)
                        ret[n++] = catalog[i].def;
        return n;
}

size_t tool_catalog_mcp_offer(bool javascript, const tool_def *ret[MCP_OFFER_MAX]) {
        size_t n = 0;
        /* place by place: the offer's order is its own (run_python first) */
        for (unsigned place = 1; place <= ELEMENTSOF(catalog) && n < MCP_OFFER_MAX; place++)
                for (size_t i = 0; i < ELEMENTSOF(catalog); i++) {
                        const tool_catalog_entry *t = &catalog[i];
                        if (t->mcp_place == place && t->def && (javascript || t->def != &tool_run_javascript))
                                ret[n++] = t->def;
                }
        return n;
}

/* tools-sandbox.h's lookup, kept for src/daemon/v1-run.c until it asks tool_catalog_def: a tool of
 * the two toolsets that has a definition. */
const tool_def *tools_sandbox_find(const char *name) {
        const tool_catalog_entry *t = tool_catalog_find(name);
        return t && t->toolset != TOOL_TOOLSET_NONE ? t->def : NULL;
}
