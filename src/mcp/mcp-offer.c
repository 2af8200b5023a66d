/* mcp-offer.c: see mcp-offer.h. */
#include "mcp-offer.h"

#include <errno.h>

#include "macro.h"

static const char *const offered[] = {
        "run_python", "bash", "read", "write", "edit", "glob", "grep", "inspect_handle", "query_handle",
};

int mcp_offer_tools(const tool_def *(*find)(const char *name), const tool_def *javascript,
                    const tool_def *ret[MCP_OFFER_MAX], size_t *ret_n, hull_error *e) {
        const tool_def *tools[MCP_OFFER_MAX];
        size_t n = 0;
        _Static_assert(ELEMENTSOF(offered) + 1 <= MCP_OFFER_MAX, "MCP_OFFER_MAX holds the list");
        for (size_t i = 0; i < ELEMENTSOF(offered); i++) {
                tools[n] = find(offered[i]);
                if (!tools[n])
                        return hull_fail(e, -ENOENT, "mcp: the tool %s is missing from this build", offered[i]);
                n++;
        }
        if (javascript)
                tools[n++] = javascript;
        for (size_t i = 0; i < n; i++)
                ret[i] = tools[i];
        *ret_n = n;
        return 0;
}
