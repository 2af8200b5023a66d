# test-mcp-http.sh: hull serve's /mcp (MCP's Streamable HTTP transport) at the level of its
# headers and errors, with curl: auth (no token 401, a token without code:run 403), GET 405,
# Content-Type 415, MCP-Protocol-Version 400, Origin 403, a body that is not JSON 400, a body
# over the bound 413, no session id 400, an unknown one 404; initialize's Mcp-Session-Id, a
# notification 202, a second initialize 400, JSON or event-stream answers by Accept and
# progressToken, a call cancelled by notifications/cancelled (-32800) with the session serving on,
# DELETE then 404, a session ended by the core's idle timeout, and hull serve
# stopping with a session open. (The SDK's client: tests/conformance/test-hull-mcp-http.sh.)
source "$(dirname "$0")/../lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 711 "$HULL_HOME"
TOKENS=$TEST_TMP/tokens
(umask 077; : >"$TOKENS")
good=$("$HULL" token new --tokens "$TOKENS" --name mcp 2>/dev/null)
other=$("$HULL" token new --tokens "$TOKENS" --scope other:thing 2>/dev/null)
if ! start_server "$TEST_TMP/serve.log" --tokens "$TOKENS" --session-idle 5s; then
        fail "hull serve starts" "$(tail -5 "$TEST_TMP/serve.log" | tr '\n' ' ')"
        exit 0
fi
M=$URL/mcp
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
LIST='{"jsonrpc":"2.0","id":2,"method":"tools/list"}'

# post NAME [CURL ARGS...]: POST to /mcp with the good token; head in $TEST_TMP/NAME.h, body in NAME.b;
# prints the status.
post() {
        local n=$1
        shift
        curl -s -o "$TEST_TMP/$n.b" -D "$TEST_TMP/$n.h" -w '%{http_code}' -H "Authorization: Bearer $good" "$@" "$M"
}
J=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
code() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["code"])' "$1"; }

s=$(curl -s -o /dev/null -w '%{http_code}' "${J[@]}" -d "$INIT" "$M")
check "no token: 401" test "$s" = 401
s=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $other" "${J[@]}" -d "$INIT" "$M")
check "a token without code:run: 403" test "$s" = 403
s=$(post get -X GET)
check "GET: 405 with Allow: POST, DELETE" sh -c "[ $s = 405 ] && grep -qi '^Allow: POST, DELETE' '$TEST_TMP/get.h'"
s=$(post ct -H 'Content-Type: text/plain' -d "$INIT")
check "Content-Type text/plain: 415" sh -c "[ $s = 415 ] && grep -q Content-Type '$TEST_TMP/ct.b'"
s=$(post ver "${J[@]}" -H 'MCP-Protocol-Version: 1999-01-01' -d "$INIT")
check "an unsupported MCP-Protocol-Version: 400 naming the supported ones" sh -c "[ $s = 400 ] && grep -q 2025-06-18 '$TEST_TMP/ver.b'"
s=$(post origin "${J[@]}" -H 'Origin: http://evil.example' -d "$INIT")
check "a foreign Origin: 403" test "$s" = 403
s=$(post nojson "${J[@]}" -d '{"jsonrpc":')
check "a body that is not JSON: 400 with -32700" sh -c "[ $s = 400 ] && [ "$(code "$TEST_TMP/nojson.b")" = -32700 ]"
head -c $((9 << 20)) /dev/zero | tr '\0' ' ' >"$TEST_TMP/big"
s=$(post big "${J[@]}" --data-binary @"$TEST_TMP/big")
check "a body over 8 MiB: 413" test "$s" = 413
s=$(post nosid "${J[@]}" -d "$LIST")
check "no Mcp-Session-Id: 400 saying to initialize" sh -c "[ $s = 400 ] && grep -q initialize '$TEST_TMP/nosid.b'"
s=$(post unknown "${J[@]}" -H 'Mcp-Session-Id: 0123456789abcdef0123456789abcdef' -d "$LIST")
check "an unknown session: 404 with -32001" sh -c "[ $s = 404 ] && [ "$(code "$TEST_TMP/unknown.b")" = -32001 ]"

s=$(post init "${J[@]}" -d "$INIT")
sid=$(grep -i '^Mcp-Session-Id:' "$TEST_TMP/init.h" | cut -d' ' -f2 | tr -d '\r')
check "initialize: 200, application/json, an Mcp-Session-Id" sh -c "[ $s = 200 ] && grep -qi '^Content-Type: application/json' '$TEST_TMP/init.h' && [ -n '$sid' ] && grep -q '\"protocolVersion\":\"2025-11-25\"' '$TEST_TMP/init.b'"
S=(-H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-11-25')
s=$(post notif "${J[@]}" "${S[@]}" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}')
check "a notification: 202, no body" sh -c "[ $s = 202 ] && [ ! -s '$TEST_TMP/notif.b' ]"
s=$(post reinit "${J[@]}" "${S[@]}" -d "$INIT")
check "initialize inside a session: 400 with -32600" sh -c "[ $s = 400 ] && [ "$(code "$TEST_TMP/reinit.b")" = -32600 ]"
s=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $other" "${J[@]}" "${S[@]}" -d "$LIST" "$M")
check "the session with a token without the scope: 403" test "$s" = 403
s=$(post list "${J[@]}" "${S[@]}" -d "$LIST")
check "tools/list: 200 with run_python" sh -c "[ $s = 200 ] && grep -q run_python '$TEST_TMP/list.b'"
CALL='{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"import time\ntime.sleep(1.5)\nprint(6*7)"},"_meta":{"progressToken":"t1"}}}'
s=$(post sse "${J[@]}" "${S[@]}" -d "$CALL")
check "a call with a progressToken, event-stream accepted: text/event-stream with progress, then the result" sh -c "[ $s = 200 ] && grep -qi '^Content-Type: text/event-stream' '$TEST_TMP/sse.h' && grep -q 'notifications/progress' '$TEST_TMP/sse.b' && grep -q '\"id\":3,\"result\"' '$TEST_TMP/sse.b' && grep -q '42' '$TEST_TMP/sse.b'"
s=$(post json -H 'Content-Type: application/json' -H 'Accept: application/json' "${S[@]}" -d "$CALL")
check "the same call accepting JSON only: application/json, the result alone" sh -c "[ $s = 200 ] && grep -qi '^Content-Type: application/json' '$TEST_TMP/json.h' && grep -q '\"id\":3' '$TEST_TMP/json.b' && ! grep -q progress '$TEST_TMP/json.b'"
s=$(post bad "${J[@]}" "${S[@]}" -d '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}')
check "an unknown tool: 200 with a -32602 error" sh -c "[ $s = 200 ] && grep -q -- '-32602' '$TEST_TMP/bad.b'"
s=$(post meth "${J[@]}" "${S[@]}" -d '{"jsonrpc":"2.0","id":5,"method":"resources/list"}')
check "an unknown method: 200 with a -32601 error" sh -c "[ $s = 200 ] && grep -q -- '-32601' '$TEST_TMP/meth.b'"
LONG='{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"import time\ntime.sleep(60)"}}}'
t0=$(date +%s)
post long "${J[@]}" "${S[@]}" -d "$LONG" >"$TEST_TMP/long.s" &
cpid=$!
# the cancellation is sent until the call's POST ends (one sent before the call starts is ignored)
s=
for i in $(seq 1 80); do
        sleep 0.5
        s=$(post cancel "${J[@]}" "${S[@]}" -d '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}')
        kill -0 $cpid 2>/dev/null || break
done
wait $cpid
t1=$(date +%s)
check "notifications/cancelled: 202; the call stops and its POST gets -32800 at once" sh -c "[ $s = 202 ] && [ \$(cat '$TEST_TMP/long.s') = 200 ] && grep -q -- '-32800' '$TEST_TMP/long.b' && [ $((t1 - t0)) -lt 50 ]"
s=$(post after_cancel "${J[@]}" "${S[@]}" -d '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(5*5)"}}}')
check "the session serves on after a cancelled call" sh -c "[ $s = 200 ] && grep -q '25' '$TEST_TMP/after_cancel.b'"
s=$(post glob "${J[@]}" "${S[@]}" -d '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"glob","arguments":{"pattern":"*"}}}')
check "a read-only call (glob): 200 with its answer" sh -c "[ $s = 200 ] && grep -q '\"id\":9,\"result\"' '$TEST_TMP/glob.b'"
s=$(post del -X DELETE "${S[@]}")
check "DELETE: 200" test "$s" = 200
# every call that ran is on the record, the read-only one too (the log the instructions name)
alog=$(/usr/bin/python3 -c 'import json,re,sys; print(re.search(r"audit log on the host: (\S+\.jsonl)", json.load(open(sys.argv[1]))["result"]["instructions"]).group(1))' "$TEST_TMP/init.b")
check "the /mcp session's audit log holds the glob call's record and verifies" \
        sh -c "/usr/bin/python3 -c 'import json,sys; sys.exit(not any(e.get(\"operation\") == \"glob\" and e[\"request\"] == {\"pattern\": \"*\"} for e in map(json.loads, open(sys.argv[1]))))' '$alog' && '$HULL' verify '$alog' >/dev/null"
s=$(post after "${J[@]}" "${S[@]}" -d "$LIST")
check "the deleted session: 404" test "$s" = 404
s=$(post del2 -X DELETE "${S[@]}")
check "DELETE again: 404" test "$s" = 404

# the session core's idle timeout (--session-idle 5s: a busy machine may take seconds between two
# requests of this test) ends an MCP session
post init2 "${J[@]}" -d "$INIT" >/dev/null
sid2=$(grep -i '^Mcp-Session-Id:' "$TEST_TMP/init2.h" | cut -d' ' -f2 | tr -d '\r')
s=$(post live "${J[@]}" -H "Mcp-Session-Id: $sid2" -d "$LIST")
sleep 7
s2=$(post idle "${J[@]}" -H "Mcp-Session-Id: $sid2" -d "$LIST")
check "a session idle past --session-idle: 404 (it was 200 before)" sh -c "[ $s = 200 ] && [ $s2 = 404 ]"

# hull serve stopping with a session open ends it
post init3 "${J[@]}" -d "$INIT" >/dev/null
stop_server TERM 60; rc=$?
check "hull serve stops cleanly with an MCP session open, and ends it" sh -c "[ $rc -eq 0 ] && grep -q 'event=mcp_session_close.*reason=shutdown' '$TEST_TMP/serve.log' && grep -q event=stopped '$TEST_TMP/serve.log'"
check "the daemon logged no error" sh -c "! grep -q 'level=error' '$TEST_TMP/serve.log'"
