# test-mcp.sh: `hull mcp`, the MCP server, driven with raw JSON-RPC lines (mcp_driver.py): version
# negotiation, garbage and bad calls answered as errors with the server still serving, a ping
# answered while a call runs, a cancelled call stopped and not answered, stdout nothing but
# JSON-RPC, EOF ending it cleanly; then the audit log the calls left is verified. (The official
# SDK's client drives it in tests/conformance/test-hull-mcp.sh.)
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
DRIVER="$(cd "$(dirname "$0")" && pwd)/mcp_driver.py"
H=$TEST_TMP/home
mkdir -m 711 "$H"

check "--help lists mcp" sh -c "'$HULL' --help | grep -q '^  mcp'"
check "mcp --help shows the usage" sh -c "'$HULL' mcp --help | grep -q 'Usage: hull mcp'"
"$HULL" mcp --bogus 2>"$TEST_TMP/err" </dev/null; rc=$?
check "a usage error is exit 2" sh -c "[ $rc -eq 2 ] && grep -q '^hull: mcp: ' '$TEST_TMP/err'"

timeout 300 "$PY" "$DRIVER" "$HULL" "$H"
rc=$?
[ $rc -eq 0 ] || fail "driver" "mcp_driver.py exited $rc: $(tail -5 "$H/stderr.log" 2>/dev/null | tr '\n' ' ')"

log=$(ls "$H"/mcp/*/audit/session-*.jsonl 2>/dev/null | head -1)
if [ -n "$log" ]; then
        check "the audit log verifies" sh -c "'$HULL' verify '$log' >/dev/null"
        check "the audit log holds the calls' records" sh -c "[ \$(wc -l <'$log') -ge 3 ]"
else
        fail "the audit log verifies" "no audit log under $H/mcp"
fi
check "the live handle store is removed at the end" sh -c "! ls -d '$H'/mcp/*/.stores 2>/dev/null | grep -q ."
check "the log names the audit log" grep -q "audit log: $H/mcp/" "$H/stderr.log"
