# test-nodes-forward.sh: two hull serve --node-id on one PostgreSQL (a throwaway cluster,
# tests/lib-pg.sh): requests about a sandbox that reach the other node are forwarded to the node
# that holds it. /mcp: an MCP session opened on node 1 (its Mcp-Session-Id names n1) is used
# through node 2: a notification, a plain call, a call answered as an event stream (streamed
# through as it comes, not kept whole; its transfer stopped when the client goes), DELETE; a
# request with the hop header is not forwarded again, a bad one is refused, a wrong key is refused
# on node 2. AG-UI: a thread's second run sent to node 2 runs where the thread's sandbox is (node
# 1): the file its first run wrote is there; the same for a /v1 session's second turn. Node 1 killed: its MCP session through node 2 gets
# 503 + retry-after at once; an id naming a node that left (or was taken for dead) gets 404
# (initialize again). Prints the time it took.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"
source "$(dirname "$0")/../lib-pg.sh"

T0=$(date +%s.%N)
why=$(pg_missing)
if [ -n "$why" ]; then
        skip "nodes-forward" "$why"
        exit 77
fi
if ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "nodes-forward: the cluster starts" "$(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        exit 1
fi
DB=$(pg_createdb hull) || { fail "nodes-forward: createdb" "failed"; exit 1; }
export TMPDIR=$TEST_TMP/tmp
mkdir -m 0711 "$TMPDIR"
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
KEY=sk-nodes-forward-0123456789abcdefghijklmnop
export HULL_SERVE_KEY=$KEY V1_KEY=$KEY

SCRIPT='{"then": "repeat", "steps": [{"tool_calls": [{"name": "bash", "input": {"command": "echo from-run-one > /workspace/agui.txt"}}]}, {"text": "written"},
        {"tool_calls": [{"name": "bash", "input": {"command": "cat /workspace/agui.txt || echo no-such-file"}}]}, {"text": "read"},
        {"tool_calls": [{"name": "bash", "input": {"command": "echo from-turn-one > /workspace/v1.txt"}}]}, {"text": "written"},
        {"tool_calls": [{"name": "bash", "input": {"command": "cat /workspace/v1.txt || echo no-such-file"}}]}, {"text": "read"}]}'
if ! mock_start "$SCRIPT" --log-level error; then
        fail "nodes-forward: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
serve_v1 "$TEST_TMP/node1.log" --db "$DB" --node-id n1 || { fail "nodes-forward: node 1 starts" "$(tail -3 "$TEST_TMP/node1.log")"; exit 1; }
N1_PID=$SERVER_PID N1=$URL
serve_v1 "$TEST_TMP/node2.log" --db "$DB" --node-id n2 || { fail "nodes-forward: node 2 starts" "$(tail -3 "$TEST_TMP/node2.log")"; exit 1; }
N2=$URL

lap() { printf '# %s s: %s\n' "$(echo "$(date +%s.%N) - $T0" | bc)" "$1"; }
lap "two nodes up"
# ---- /mcp ----
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
# mcp NAME BASE [CURL ARGS...]: POST (or -X DELETE) to BASE/mcp with the key; head NAME.h, body NAME.b; prints the status
mcp() {
        local n=$1 base=$2
        shift 2
        curl -s -m 30 -o "$TEST_TMP/$n.b" -D "$TEST_TMP/$n.h" -w '%{http_code}' -H "x-api-key: $KEY" \
                -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' "$@" "$base/mcp"
}
hdr() { tr -d '\r' <"$TEST_TMP/$1.h" | sed -n "s/^$2: //Ip" | head -1; }
s=$(mcp init "$N1" -d "$INIT")
SID=$(hdr init mcp-session-id)
check "nodes-forward: initialize on node 1 opens an MCP session ($s, $SID)" test "$s" = 200 -a -n "$SID"
S=(-H "mcp-session-id: $SID" -H 'mcp-protocol-version: 2025-11-25')
s=$(mcp note "$N2" "${S[@]}" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}')
check "nodes-forward: a notification for node 1's MCP session sent to node 2: 202, forwarded" sh -c \
        "[ $s = 202 ] && grep -qi '^x-hull-node: n1' '$TEST_TMP/note.h'"
WRITE='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"open(\"/workspace/m.txt\",\"w\").write(\"kept\")"}}}'
s=$(mcp write "$N1" "${S[@]}" -d "$WRITE")
READ='{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(open(\"/workspace/m.txt\").read()*2)"}}}'
s=$(mcp read "$N2" "${S[@]}" -d "$READ")
check "nodes-forward: a tools/call on node 2 runs in node 1's sandbox (the file written there: keptkept; x-hull-node n1)" sh -c \
        "[ $s = 200 ] && grep -q 'keptkept' '$TEST_TMP/read.b' && grep -qi '^x-hull-node: n1' '$TEST_TMP/read.h'"
# a streamed answer through node 2: progress comes while the call runs, before its result
"$PY" - "$N2/mcp" "$KEY" "$SID" >"$TEST_TMP/stream.out" 2>&1 <<'PYEOF'
import json, sys, time, urllib.request
url, key, sid = sys.argv[1:4]
body = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "run_python",
        "arguments": {"code": "import time\ntime.sleep(1.8)\nprint(6*7)"}, "_meta": {"progressToken": "p"}}}
req = urllib.request.Request(url, json.dumps(body).encode(), method="POST", headers={
    "x-api-key": key, "mcp-session-id": sid, "content-type": "application/json",
    "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"})
t0 = time.time()
seen = []
with urllib.request.urlopen(req, timeout=30) as r:
    ctype, node = r.headers.get("content-type"), r.headers.get("x-hull-node")
    for line in r:
        line = line.decode().strip()
        if line.startswith("data:"):
            m = json.loads(line[5:])
            seen.append((round(time.time() - t0, 2), "progress" if m.get("method") == "notifications/progress" else
                         ("result" if "42" in json.dumps(m.get("result")) else json.dumps(m)[:200])))
prog = [t for t, k in seen if k == "progress"]
res = [t for t, k in seen if k == "result"]
ok = ctype.startswith("text/event-stream") and node == "n1" and prog and res and res[0] - prog[0] >= 0.5
print(ctype, node, seen)
sys.exit(0 if ok else 1)
PYEOF
rc=$?
check "nodes-forward: a call answered as an event stream through node 2 is streamed as it comes: $(tail -1 "$TEST_TMP/stream.out" | head -c 300)" \
        test "$rc" -eq 0
# the client goes mid-stream: node 2 stops its transfer, so node 1 sees its stream's client gone
# (the call itself runs on until DELETE below cancels it)
"$PY" - "$N2/mcp" "$KEY" "$SID" >"$TEST_TMP/hangup.out" 2>&1 <<'PYEOF'
import json, sys, urllib.request
url, key, sid = sys.argv[1:4]
body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "run_python",
        "arguments": {"code": "import time\ntime.sleep(60)"}, "_meta": {"progressToken": "q"}}}
req = urllib.request.Request(url, json.dumps(body).encode(), method="POST", headers={
    "x-api-key": key, "mcp-session-id": sid, "content-type": "application/json",
    "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"})
r = urllib.request.urlopen(req, timeout=30)
for line in r:
    if b"notifications/progress" in line:
        break
r.close()
PYEOF
for _ in $(seq 1 60); do
        grep -q 'aborted=yes.*method=tools/call' "$TEST_TMP/node1.log" && break
        sleep 0.1
done
check "nodes-forward: a client that goes mid-stream on node 2: node 2 stops the relayed transfer (node 1 logs its stream aborted)" \
        grep -q 'aborted=yes.*method=tools/call' "$TEST_TMP/node1.log"
s=$(mcp hop "$N2" "${S[@]}" -H 'hull-forwarded-from: n1' -d "$READ")
check "nodes-forward: with the hop header node 2 answers itself (404: not its session), never forwards again" sh -c \
        "[ $s = 404 ] && ! grep -qi '^x-hull-node' '$TEST_TMP/hop.h'"
s=$(mcp badhop "$N2" "${S[@]}" -H 'hull-forwarded-from: not a node' -d "$READ")
check "nodes-forward: a hop header that names no node: 400 saying what it is" sh -c \
        "[ $s = 400 ] && grep -q 'a client never sends it' '$TEST_TMP/badhop.b'"
s=$(mcp nokey "$N2" "${S[@]}" -H 'x-api-key: sk-wrong-0123456789abcdefghijklmnop' -d "$READ")
check "nodes-forward: a wrong key on node 2 is refused there (401), nothing forwarded" sh -c \
        "[ $s = 401 ] && ! grep -qi '^x-hull-node' '$TEST_TMP/nokey.h'"
s=$(mcp del "$N2" "${S[@]}" -X DELETE)
check "nodes-forward: DELETE through node 2 ends node 1's MCP session ($s)" test "$s" = 200
s=$(mcp gone "$N1" "${S[@]}" -d "$READ")
check "nodes-forward: ... node 1 no longer knows it (404)" test "$s" = 404

lap "mcp done"
# ---- AG-UI: the thread's second run on node 2 runs on node 1, where its sandbox is ----
URL=$N1
v1 POST /v1/agents "{\"name\": \"t\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"agent_toolset_20260401\", \"default_config\": {\"enabled\": false}, \"configs\": [{\"name\": \"bash\", \"enabled\": true, \"permission_policy\": {\"type\": \"always_allow\"}}]}]}"
AGENT=$(field id)
v1 POST /v1/environments '{"name": "t", "config": {"type": "cloud", "networking": {"type": "limited"}}}'
ENV=$(field id)
# agui BASE RUN: a run of thread t1 (stream in RUN.sse, head in RUN.h); prints the status
agui() {
        curl -s -N -m 60 -o "$TEST_TMP/$2.sse" -D "$TEST_TMP/$2.h" -w '%{http_code}' -H 'content-type: application/json' \
                -H "x-api-key: $KEY" -H 'accept: text/event-stream' "$1/agui" -d "{\"threadId\": \"t1\", \"runId\": \"$2\", \"state\": {},
                \"messages\": [{\"id\": \"m-$2\", \"role\": \"user\", \"content\": \"go\"}], \"tools\": [], \"context\": [],
                \"forwardedProps\": {\"agent_id\": \"$AGENT\", \"environment_id\": \"$ENV\"}}"
}
s=$(agui "$N1" r1)
check "nodes-forward: AG-UI run 1 of a thread on node 1 finishes ($s)" sh -c "[ $s = 200 ] && grep -q RUN_FINISHED '$TEST_TMP/r1.sse'"
s=$(agui "$N2" r2)
check "nodes-forward: AG-UI run 2 of the thread on node 2 runs in node 1's sandbox (reads run 1's file; x-hull-node n1)" sh -c \
        "[ $s = 200 ] && grep -q RUN_FINISHED '$TEST_TMP/r2.sse' && grep -q 'from-run-one' '$TEST_TMP/r2.sse' && grep -qi '^x-hull-node: n1' '$TEST_TMP/r2.h'"

s=$(curl -s -o "$TEST_TMP/agbad.b" -w '%{http_code}' -H 'content-type: application/json' -H "x-api-key: $KEY" \
        -H 'hull-forwarded-from: not a node' "$N2/agui" -d '{"threadId": "t1", "runId": "r3", "state": {}, "messages": [{"id": "m-r3", "role": "user", "content": "go"}], "tools": [], "context": [], "forwardedProps": {}}')
check "nodes-forward: AG-UI with a hop header that names no node: 400 bad_forward_header" sh -c \
        "[ $s = 400 ] && grep -q bad_forward_header '$TEST_TMP/agbad.b'"
lap "agui done"
# ---- /v1: a session's second turn sent to node 2 runs on node 1, where its sandbox is ----
URL=$N1
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
S1=$(field id)
v1 POST "/v1/sessions/$S1/events" "$(user_message write)"
wait_idle "$S1" 60
URL=$N2
v1 POST "/v1/sessions/$S1/events" "$(user_message read)"
s=$(head -1 "$O")
wait_idle "$S1" 60
events_json "$S1" >"$TEST_TMP/v1-ev.json"
check "nodes-forward: /v1 turn 2 of a session sent to node 2 runs in node 1's sandbox (its tool reads turn 1's file) ($s)" \
        "$PY" -c 'import json,sys; ev=json.load(open(sys.argv[1])); r=[e for e in ev if e["type"]=="agent.tool_result"]
c=[x.get("text","") for x in r[-1]["content"]] if r else []
sys.exit(0 if len(r)==2 and any("from-turn-one" in t for t in c) else 1)' "$TEST_TMP/v1-ev.json"
s=$(curl -s -o "$TEST_TMP/evbad.b" -w '%{http_code}' -H 'content-type: application/json' -H "x-api-key: $KEY" \
        -H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: managed-agents-2026-04-01' -H 'hull-forwarded-from: not a node' \
        "$N2/v1/sessions/$S1/events" -d "$(user_message bad)")
check "nodes-forward: a session's events with a hop header that names no node: 400 bad_forward_header ($s)" sh -c \
        "[ $s = 400 ] && grep -q bad_forward_header '$TEST_TMP/evbad.b'"
# ---- node 1 killed: its MCP session through node 2 ----
SID2=${SID%%.*}f.n1 # any session id naming node 1: the request goes there
kill -9 "$N1_PID"
t=$(date +%s.%N)
s=$(mcp dead "$N2" -H "mcp-session-id: $SID2" -d "$READ")
dt=$(echo "$(date +%s.%N) - $t" | bc)
check "nodes-forward: node 1 killed: its MCP session through node 2 gets 503 + retry-after naming n1 at once (${dt}s)" sh -c \
        "[ $s = 503 ] && grep -qi '^retry-after' '$TEST_TMP/dead.h' && grep -q 'n1' '$TEST_TMP/dead.b' && [ \$(echo '$dt < 5' | bc) = 1 ]"
s=$(mcp left "$N2" -H "mcp-session-id: ${SID2%%.*}.n9" -d "$READ")
check "nodes-forward: a session id naming a node that is not there (left, or taken for dead): 404 (initialize again), naming it" sh -c \
        "[ $s = 404 ] && grep -q 'node n9, which stopped' '$TEST_TMP/left.b'"
printf '# nodes-forward took %s s\n' "$(echo "$(date +%s.%N) - $T0" | bc)"
