#!/usr/bin/env bash
# test-hull-mcp.sh: `hull mcp`, the MCP server, driven by the official MCP SDK's client
# (@modelcontextprotocol/sdk over stdio: mcp-server.test.js; the SDK installed by npm-deps.sh).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "MCP SDK client against hull mcp" || exit 0
HULL=$HULL timeout 900 node "$conformance_dir/mcp-server.test.js" 2>&1
