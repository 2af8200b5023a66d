# test-nodes-chaos.sh: hull serve --node-id on one PostgreSQL (a throwaway cluster, tests/lib-pg.sh,
# stopped and removed at exit) when things go wrong: kill -9 of the node running a turn mid-tool
# (a bash call that sleeps): after the lease TTL (NODE_LEASE_TTL_MS) the other node ends the turn
# with session.error and session.status_idle, the model's record shows no second call for it and
# the tool never answered (it was not run again), and the session takes its next turn; a node at its
# --capacity refuses a new turn (503) naming the node with room; the killed
# node's id can start again; a second live node with one --node-id is refused (exit 2, one line);
# --node-id on SQLite and a bad --db are refused at start (exit 2, one line).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"
source "$(dirname "$0")/../lib-pg.sh"

why=$(pg_missing)
if [ -n "$why" ]; then
        skip "nodes-chaos" "$why"
        exit 77
fi
if ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "nodes-chaos: the cluster starts" "$(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        exit 1
fi
PSQL() { "$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atqc "$1"; }
DB=$(pg_createdb hull) || { fail "nodes-chaos: createdb" "failed"; exit 1; }
# the servers' temporary files (a kill -9 leaves its work root behind): under TEST_TMP, searchable
export TMPDIR=$TEST_TMP/tmp
mkdir -m 0711 "$TMPDIR"
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
# a key (in the shared database): every node checks it, a forwarded request carries it
export HULL_SERVE_KEY=sk-nodes-chaos-0123456789abcdefghijklmnop V1_KEY=sk-nodes-chaos-0123456789abcdefghijklmnop

# refused LOG NAME ARGS...: hull serve ARGS exits 2 with one line (on stderr and stdout together)
refused() {
        local out=$TEST_TMP/$1 name=$2 rc
        shift 2
        "$HULL" serve --listen 127.0.0.1:0 --no-kernel-tier "$@" >"$out" 2>&1 &
        local p=$!
        pids+=("$p")
        for _ in $(seq 1 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        wait "$p"
        rc=$?
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$out")" -eq 1 ]; then
                pass "nodes-chaos: $name: exit 2, one line"
        else
                fail "nodes-chaos: $name: exit 2, one line" "rc=$rc: $(head -c 400 "$out")"
        fi
}

SCRIPT='{"then": "repeat", "steps": [{"tool_calls": [{"name": "bash", "input": {"command": "sleep 60; echo ran"}}]}, {"text": "a new turn"}]}'
if ! mock_start "$SCRIPT" --log-level error --record "$TEST_TMP/record.jsonl"; then
        fail "nodes-chaos: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
serve_v1 "$TEST_TMP/node1.log" --db "$DB" --node-id n1 --capacity 1 || { fail "nodes-chaos: node 1 starts" "$(tail -3 "$TEST_TMP/node1.log")"; exit 1; }
N1_PID=$SERVER_PID N1=$URL
serve_v1 "$TEST_TMP/node2.log" --db "$DB" --node-id n2 || { fail "nodes-chaos: node 2 starts" "$(tail -3 "$TEST_TMP/node2.log")"; exit 1; }
N2_PID=$SERVER_PID N2=$URL

# ---- refused at start ----
refused dup.out "a second live node with one --node-id" --db "$DB" --node-id n2
grep -q "node 'n2' is already running.*own --node-id" "$TEST_TMP/dup.out"
check "nodes-chaos: ... the line names the node and says what to do ($(head -c 300 "$TEST_TMP/dup.out"))" test $? -eq 0
refused sqlite.out "--node-id on SQLite" --db "$TEST_TMP/one.db" --node-id n9
check "nodes-chaos: ... saying it needs PostgreSQL" grep -q "needs a PostgreSQL --db" "$TEST_TMP/sqlite.out"
refused bad.out "--node-id with an unreachable --db" --db "postgresql:///hull?host=$TEST_TMP/nowhere&user=postgres" --node-id n9
refused adv.out "--advertise without --node-id" --db "$DB" --advertise http://127.0.0.1:1
check "nodes-chaos: the refused starts left no node row" test "$(PSQL "SELECT string_agg(id, ',' ORDER BY id) FROM nodes")" = "n1,n2"

# ---- kill -9 of the node running a turn, mid-tool ----
URL=$N1
v1 POST /v1/agents "{\"name\": \"t\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"agent_toolset_20260401\", \"default_config\": {\"enabled\": false}, \"configs\": [{\"name\": \"bash\", \"enabled\": true, \"permission_policy\": {\"type\": \"always_allow\"}}]}]}"
AGENT=$(field id)
v1 POST /v1/environments '{"name": "t", "config": {"type": "cloud", "networking": {"type": "limited"}}}'
ENV=$(field id)
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
SESSION=$(field id)
v1 POST "/v1/sessions/$SESSION/events" "$(user_message 'run it')"
expect "nodes-chaos: the message is sent on node 1" "s == 200"
for _ in $(seq 1 300); do
        events_json "$SESSION" >"$TEST_TMP/ev.json" 2>/dev/null
        grep -q '"agent.tool_use"' "$TEST_TMP/ev.json" && break
        sleep 0.1
done
# the call runs in the sandbox (sleep 60), which node 1 has opened and recorded as its own before
# it: awaited (30 s at most), not a second assumed enough for a sandbox's start on a busy machine
t_use=$(date +%s%N)
for _ in $(seq 1 300); do
        pgrep -f 'sleep 6[0]; echo ran' >/dev/null && break
        sleep 0.1
done
echo "# the sandboxed call ran $((($(date +%s%N) - t_use) / 1000000)) ms after its agent.tool_use was seen"
check "nodes-chaos: node 1 runs the tool (agent.tool_use logged, no result)" sh -c \
        "grep -q '\"agent.tool_use\"' '$TEST_TMP/ev.json' && ! grep -q '\"agent.tool_result\"' '$TEST_TMP/ev.json'"
check "nodes-chaos: node 1 holds the session's lease" test "$(PSQL "SELECT node_id FROM session_leases WHERE session_id = '$SESSION'")" = n1
# ---- a request about the sandbox (on node 1) sent to node 2: forwarded to node 1 ----
check "nodes-chaos: node 1 is recorded as the holder of the session's sandbox" test \
        "$(PSQL "SELECT node_id FROM sandbox_owners WHERE session_id = '$SESSION'")" = n1
v1 GET "/v1/sessions/$SESSION/handles"
cp "$O" "$TEST_TMP/handles1.out"
URL=$N2
v1 GET "/v1/sessions/$SESSION/handles"
pycheck "nodes-chaos: GET .../handles on node 2 is forwarded to node 1 (x-hull-node: n1): the same answer, the sandbox open" '
import json, sys
def read(f):
    first, _, rest = open(f).read().partition("\n")
    d = json.loads(rest)
    return int(first), d["headers"], json.loads(d["body"])
s1, h1, b1 = read(sys.argv[1])
s2, h2, b2 = read(sys.argv[2])
ok = s1 == s2 == 200 and h2.get("x-hull-node") == "n1" and b1 == b2 and b1["sandbox"] is not None
ok or print(s1, b1, s2, h2, b2)
sys.exit(0 if ok else 1)' "$TEST_TMP/handles1.out" "$O"
v1 GET "/v1/sessions/$SESSION/records"
cp "$O" "$TEST_TMP/audit2.out"
URL=$N1
v1 GET "/v1/sessions/$SESSION/records"
pycheck "nodes-chaos: ... the session's run records read through node 2 are node 1's, byte for byte" '
import json, sys
a = [open(f).read().partition("\n") for f in sys.argv[1:]]
d = [json.loads(x[2]) for x in a]
ok = a[0][0] == a[1][0] == "200" and d[0]["body"] == d[1]["body"] and d[0]["headers"].get("x-hull-node") == "n1"
ok or print([x[0] for x in a], [x[2][:300] for x in a])
sys.exit(0 if ok else 1)' "$TEST_TMP/audit2.out" "$O"
URL=$N2
V1_KEY="" v1 GET "/v1/sessions/$SESSION/handles"
expect "nodes-chaos: ... without the caller's key node 2 refuses it (401), nothing forwarded" "s == 401 and 'x-hull-node' not in h"
v1 GET "/v1/sessions/$SESSION/handles" - "hull-forwarded-from: n1"
pycheck "nodes-chaos: a request with the hop header is answered where it lands (node 2: no sandbox), never forwarded again" '
import json, sys
def read(f):
    first, _, rest = open(f).read().partition("\n")
    d = json.loads(rest)
    return int(first), d["headers"], json.loads(d["body"])
s1, h1, b1 = read(sys.argv[1])
s2, h2, b2 = read(sys.argv[2])
ok = s2 == 200 and "x-hull-node" not in h2 and b2["sandbox"] != b1["sandbox"]
ok or print(s2, h2, b2, b1)
sys.exit(0 if ok else 1)' "$TEST_TMP/handles1.out" "$O"
v1 GET "/v1/sessions/$SESSION/handles" - "hull-forwarded-from: not a node; rm -rf"
expect "nodes-chaos: a hop header that names no node: 400 saying what it is" \
        "s == 400 and b['error']['details']['error_code'] == 'bad_forward_header' and 'x-hull-node' not in h"
URL=$N1
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
expect "nodes-chaos: node 1 at its --capacity takes no new session: 503, retry-after, naming node n2 and its URL" \
        "s == 503 and h.get('retry-after') and 'node n2 ($N2), which has room' in b['error']['message']"
URL=$N2
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
OTHER=$(field id)
URL=$N1
v1 POST "/v1/sessions/$OTHER/events" "$(user_message 'no room')"
expect "nodes-chaos: node 1 at its --capacity (1 turn) takes no new turn: 503 naming node n2 and its URL" \
        "s == 503 and 'node n2 ($N2), which has room' in b['error']['message']"
check "nodes-chaos: ... and the refused message is not in the log" test "$(PSQL "SELECT count(*) FROM events WHERE session_id = '$OTHER'")" = 0
kill -9 "$N1_PID"
t0=$(date +%s)
URL=$N2
v1 GET "/v1/sessions/$SESSION/handles"
expect "nodes-chaos: node 1 killed: a request about its sandbox on node 2 gets 503 + retry-after naming node 1, no hang" \
        "s == 503 and h.get('retry-after') and b['error']['details']['error_code'] == 'sandbox_node_unreachable' and 'node n1' in b['error']['message']"
wait_idle "$SESSION" 40
expect "nodes-chaos: after the lease TTL node 2 has ended the turn: idle" "s == 200 and b['status'] == 'idle'"
dt=$(($(date +%s) - t0))
check "nodes-chaos: ... within the TTL and two heartbeats ($dt s)" test "$dt" -le 15
events_json "$SESSION" >"$TEST_TMP/ev.json" 2>"$TEST_TMP/v1.err"
pycheck "nodes-chaos: the cut turn ends with session.error naming node n1, then session.status_idle; no tool result" '
import json, sys
ev = json.load(open(sys.argv[1]))
types = [e["type"] for e in ev]
err = [e for e in ev if e["type"] == "session.error"]
ok = types[-1] == "session.status_idle" and types[-2] == "session.error" and "n1" in err[-1]["error"]["message"] \
     and "agent.tool_result" not in types
ok or print(types, err)
sys.exit(0 if ok else 1)' "$TEST_TMP/ev.json"
check "nodes-chaos: node 1's lease is gone" test "$(PSQL "SELECT count(*) FROM session_leases WHERE node_id = 'n1'")" = 0
v1 POST "/v1/sessions/$SESSION/events" "$(user_message 'again')"
expect "nodes-chaos: the session takes a new message on node 2" "s == 200"
wait_idle "$SESSION" 40
events_json "$SESSION" >"$TEST_TMP/ev.json" 2>"$TEST_TMP/v1.err"
pycheck "nodes-chaos: the model got two requests in all, and the cut call never came back as a result (run once)" '
import json, sys
rec = [l for l in open(sys.argv[1]) if l.strip()]
ev = json.load(open(sys.argv[2]))
ok = len(rec) == 2 and "tool_result" not in rec[1] and any(e["type"] == "agent.message" and "a new turn" in json.dumps(e) for e in ev)
ok or print(len(rec), [e["type"] for e in ev])
sys.exit(0 if ok else 1)' "$TEST_TMP/record.jsonl" "$TEST_TMP/ev.json"
serve_v1 "$TEST_TMP/node1b.log" --db "$DB" --node-id n1
check "nodes-chaos: the killed node's id starts again once its heartbeat is stale" test -n "$URL"
check "nodes-chaos: the dead node's sandboxes are forgotten" test "$(PSQL "SELECT count(*) FROM sandbox_owners WHERE node_id = 'n1'")" = 0
stop_server TERM 30
check "nodes-chaos: ... and leaves cleanly (its row removed)" test "$(PSQL "SELECT count(*) FROM nodes WHERE id = 'n1'")" = 0
SERVER_PID=$N2_PID
stop_server TERM 30
check "nodes-chaos: node 2 stops cleanly" test $? -eq 0
check "nodes-chaos: no sandboxed 'sleep 60' is left" sh -c "! pgrep -f 'sleep 6[0]; echo ran' >/dev/null"
