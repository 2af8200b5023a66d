/* api-mcp.h: hull serve's /mcp, the Model Context Protocol's Streamable HTTP transport
 * (../shared/reference/mcp.md §5) over the same connections as `hull mcp` (mcp-server.h).
 *
 * POST /mcp carries one JSON-RPC message. initialize (without Mcp-Session-Id) opens an MCP
 * session: one sandbox session in the daemon's session core (ss_open: the broker's box), its
 * id answered in the Mcp-Session-Id header and required on every later request (400 without it,
 * 404 once it is unknown, deleted or ended: the core's idle timeout or lifetime ended it, or
 * hull serve stopped). A request is answered with application/json, or with text/event-stream
 * when the client accepts it and a tools/call carries _meta.progressToken (its progress
 * notifications, then its answer); a notification or a response is answered 202 (a
 * notifications/cancelled stops the call it names; its POST, which needs an answer,
 * gets error -32800 as JSON, or its stream ends without one). DELETE /mcp ends the session (200); GET is
 * 405 (no server-initiated stream). MCP-Protocol-Version, when sent, must be one the server
 * speaks (400); Content-Type must be application/json (415); an Origin header must name a
 * loopback host (403: DNS rebinding). The route needs the code:run scope when the server has
 * tokens or keys; a session is found only by the caller that opened it. With several nodes
 * (node_id) a session's id names its node, and a request that reaches another node is forwarded
 * to it with the caller's authority (404 once that node stopped; 503 + retry-after while it
 * cannot be reached). Refusals are bodies
 * {"jsonrpc":"2.0","error":{"code","message"},"id":null}. */
#pragma once

#include <stdbool.h>

#include "dlog.h"
#include "http-server.h"
#include "ss.h"
#include "store.h"

typedef struct api_mcp_config {
        ss_manager *ss;        /* the daemon's session core; NULL: sessions are off (initialize is refused) */
        bool javascript;       /* offer run_javascript (the session core has a javascript cell) */
        const char *audit_dir; /* where the sessions' audit logs go (named in initialize's instructions) */
        const char *version;   /* serverInfo.version */
        const dlog *log;
        /* hull serve --node-id (docs/DEPLOY.md, Nodes): this node's id, named in the MCP sessions'
         * ids ("<id>.<node>"), and the shared store that says where another node is; a request for
         * a session of another node is forwarded there (http_forward_stream). NULL: one node. */
        const char *node_id;
        store *store;
} api_mcp_config;

typedef struct api_mcp api_mcp;

/* Returns 0 with *ret, or a negative errno with *e. */
int api_mcp_new(const api_mcp_config *cfg, api_mcp **ret, hull_error *e);
/* Add the route to s (before http_start). Returns 0 or -E2BIG. */
int api_mcp_register(api_mcp *a, http_server *s);
/* End every MCP session (their sandbox sessions closed, calls in flight cancelled), refuse new
 * ones, and wait (at most wait_ms) for the event-stream answers still being written. */
void api_mcp_shutdown(api_mcp *a, uint64_t wait_ms);
/* MCP sessions open now. */
unsigned api_mcp_open_count(api_mcp *a);
/* Free it (shutting it down first); only once the server's threads have ended. NULL: nothing. */
void api_mcp_free(api_mcp *a);
