/* tool-catalog.c: the facts of the built-in tools' table (tool-catalog.h; the table is
 * tool-catalog-table.h) and the questions about them. It names no tool's definition: it links
 * alone. */
#include "tool-catalog.h"

#include <errno.h>
#include <string.h>

#include "macro.h"
#include "tool-catalog-table.h"

#define FACTS(name, toolset, def, read_only, mcp_place) {#name, toolset, read_only, mcp_place},

static const tool_catalog_entry catalog[] = {TOOL_CATALOG_TABLE(FACTS)};

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
