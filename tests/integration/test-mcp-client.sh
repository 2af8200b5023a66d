#!/usr/bin/env bash
# test-mcp-client.sh: hull's MCP stdio client (src/mcp/mcp-client, mcp-tools) against the reference
# server @modelcontextprotocol/server-everything (tests/conformance's lockfile, installed by
# npm-deps.sh): the unit test binary test-mcp-client, run with MCP_EVERYTHING set (list, echo,
# get-sum, progress, an image, cancellation, a deadline, a big result).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../conformance/npm-deps.sh"
npm_ready "MCP client against server-everything" || exit 0
ev=$NODE_PATH/.bin/mcp-server-everything
if [ ! -x "$ev" ]; then
        fail "MCP client against server-everything" "$ev is missing after npm ci"
        exit 0
fi
if [ ! -x "$BUILD/test-mcp-client" ]; then
        fail "MCP client against server-everything" "$BUILD/test-mcp-client is not built"
        exit 0
fi
MCP_EVERYTHING=$ev "$BUILD/test-mcp-client" 2>&1
