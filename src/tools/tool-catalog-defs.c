/* tool-catalog-defs.c: the definitions of the built-in tools' table (tool-catalog.h; the table is
 * tool-catalog-table.h): each name's definition, hull run's list, hull mcp's offer. */
#include <string.h>

#include "macro.h"
#include "tool-catalog-table.h"
#include "tool-catalog.h"
#include "tools-sandbox.h"

typedef struct def_entry {
        const char *name;
        tool_toolset toolset;
        const tool_def *def;
        unsigned mcp_place;
} def_entry;

#define DEFS(name, toolset, def, read_only, mcp_place) {#name, toolset, def, mcp_place},

static const def_entry defs[] = {TOOL_CATALOG_TABLE(DEFS)};

static const def_entry *find(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(defs); i++)
                if (strcmp(defs[i].name, name) == 0)
                        return &defs[i];
        return NULL;
}

const tool_def *tool_catalog_def(const char *name) {
        const def_entry *t = find(name);
        return t ? t->def : NULL;
}

size_t tool_catalog_sandbox_defs(const tool_def *ret[TOOL_CATALOG_MAX]) {
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(defs); i++)
                if (defs[i].toolset != TOOL_TOOLSET_NONE && defs[i].def)
                        ret[n++] = defs[i].def;
        return n;
}

size_t tool_catalog_mcp_offer(bool javascript, const tool_def *ret[MCP_OFFER_MAX]) {
        size_t n = 0;
        /* place by place: the offer's order is its own (run_python first) */
        for (unsigned place = 1; place <= ELEMENTSOF(defs) && n < MCP_OFFER_MAX; place++)
                for (size_t i = 0; i < ELEMENTSOF(defs); i++) {
                        const def_entry *t = &defs[i];
                        if (t->mcp_place == place && t->def && (javascript || t->def != &tool_run_javascript))
                                ret[n++] = t->def;
                }
        return n;
}

/* tools-sandbox.h's lookup, kept for src/daemon/v1-run.c until it asks tool_catalog_def: a tool of
 * the two toolsets that has a definition. */
const tool_def *tools_sandbox_find(const char *name) {
        const def_entry *t = find(name);
        return t && t->toolset != TOOL_TOOLSET_NONE ? t->def : NULL;
}
