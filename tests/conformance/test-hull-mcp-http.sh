#!/usr/bin/env bash
# test-hull-mcp-http.sh: hull serve's /mcp driven by the official MCP SDK's client
# (@modelcontextprotocol/sdk's StreamableHTTPClientTransport: mcp-http.test.js), with a token;
# then hull serve stops cleanly with no MCP session left.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "MCP SDK client against hull serve's /mcp" || exit 0
export HULL_HOME=$TEST_TMP/home
mkdir -m 711 "$HULL_HOME"
TOKENS=$TEST_TMP/tokens
(umask 077; : >"$TOKENS")
token=$("$HULL" token new --tokens "$TOKENS" --name mcp 2>/dev/null)
if ! start_server "$TEST_TMP/serve.log" --tokens "$TOKENS"; then
        fail "hull serve starts" "$(tail -5 "$TEST_TMP/serve.log" | tr '\n' ' ')"
        exit 0
fi
MCP_URL=$URL/mcp MCP_TOKEN=$token HULL=$HULL timeout 900 node "$conformance_dir/mcp-http.test.js" 2>&1
stop_server TERM 60; rc=$?
check "hull serve stops cleanly after the MCP sessions" sh -c "[ $rc -eq 0 ] && grep -q event=stopped '$TEST_TMP/serve.log'"
check "every MCP session was closed" sh -c "[ \$(grep -c event=mcp_session_open '$TEST_TMP/serve.log') -eq \$(grep -c event=mcp_session_close '$TEST_TMP/serve.log') ]"
