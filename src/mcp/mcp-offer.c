/* mcp-offer.c: see mcp-offer.h. The list is the catalog's (tool-catalog.h). */
#include "mcp-offer.h"

#include <errno.h>
#include <string.h>

#include "tool-catalog.h"

int mcp_offer_tools(const tool_def *(*find)(const char *name), const tool_def *javascript,
                    const tool_def *ret[MCP_OFFER_MAX], size_t *ret_n, hull_error *e) {
        const tool_def *offer[MCP_OFFER_MAX], *tools[MCP_OFFER_MAX];
        size_t n = tool_catalog_mcp_offer(javascript != NULL, offer);
        for (size_t i = 0; i < n; i++) {
                const char *name = offer[i]->name;
                tools[i] = javascript && strcmp(name, javascript->name) == 0 ? javascript : find(name);
                if (!tools[i])
                        return hull_fail(e, -ENOENT, "mcp: the tool %s is missing from this build", name);
        }
        for (size_t i = 0; i < n; i++)
                ret[i] = tools[i];
        *ret_n = n;
        return 0;
}
