# test-worker.sh: `hull worker` against a real `hull serve` (its Work API) with `hull mock-model`:
# a self_hosted session's bash call runs in the worker's own sandbox (its output in the turn's
# answer, the item force-stopped after the turn); then a worker killed with -9 mid-tool (a long
# sleep) loses its lease after the TTL and a second worker reclaims the item and answers the call.
source "$(dirname "$0")/../lib.sh"

start=$(date +%s.%N)
PY=/usr/bin/python3
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER HULL_ENVIRONMENT_KEY 2>/dev/null
cd "$TEST_TMP" || exit 1
V1H=(-H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: managed-agents-2026-04-01' -H 'content-type: application/json')

mock_start '{"steps":[
 {"tool_calls":[{"name":"bash","input":{"command":"echo in-sandbox-$((6*7)); cat /proc/1/comm"},"id":"toolu_a"}]},
 {"text":"worker said {{last_tool_result|line:1}}"},
 {"tool_calls":[{"name":"bash","input":{"command":"sleep 2; echo reclaimed-ran"},"id":"toolu_b"}]},
 {"text":"second: {{last_tool_result|line:1}}"}]}' --log-level error ||
        { fail "hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"; exit 0; }
if ! start_server "$TEST_TMP/serve.log" --provider anthropic --base-url "$MURL" --api-key k --model mock-model; then
        fail "hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 0
fi
KEY=$("$HULL" key create 2>/dev/null)
AUTH=(-H "x-api-key: $KEY")
post() { curl -s "${V1H[@]}" "${AUTH[@]}" -X POST "$URL$1" -d "$2"; }
get() { curl -s "${V1H[@]}" "${AUTH[@]}" "$URL$1"; }
jid() { "$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
AG=$(post /v1/agents '{"name":"w","model":"mock-model","tools":[{"type":"agent_toolset_20260401","default_config":{"enabled":false},"configs":[{"name":"bash","enabled":true}]}]}' | jid)
ENV=$(post /v1/environments '{"name":"sh","config":{"type":"self_hosted"}}' | jid)
"$HULL" key create --environment "$ENV" 2>/dev/null | tail -1 >"$TEST_TMP/env.key"
chmod 600 "$TEST_TMP/env.key"
check "hull key create --environment prints an environment key" grep -Eq '^hull_env_[0-9a-f]{64}$' "$TEST_TMP/env.key"
S=$(post /v1/sessions "{\"agent\":\"$AG\",\"environment_id\":\"$ENV\"}" | jid)
post "/v1/sessions/$S/events" '{"events":[{"type":"user.message","content":[{"type":"text","text":"go"}]}]}' >/dev/null

# the turn's tool runs in the worker's sandbox (its own pid namespace: pid 1 is hull's init)
timeout 120 "$HULL" worker --server "$URL" --environment "$ENV" --key-file "$TEST_TMP/env.key" --no-cgroup \
        --max-idle 300 --once >"$TEST_TMP/w1.out" 2>"$TEST_TMP/w1.err"
rc=$?
get "/v1/sessions/$S/events?limit=1000" >"$TEST_TMP/events1.json"
check "hull worker served the item and exited (--once)" test "$rc" = 0
if "$PY" - "$TEST_TMP/events1.json" <<'PYEOF'; then pass "the tool ran in the worker's sandbox and the turn ended on its result"; else fail "the tool ran in the worker's sandbox and the turn ended on its result" "$(tail -c 600 "$TEST_TMP/events1.json") | $(tail -5 "$TEST_TMP/w1.err")"; fi
import json, sys
ev = json.load(open(sys.argv[1]))["data"]
tr = [e for e in ev if e["type"] == "user.tool_result"]
msg = [e for e in ev if e["type"] == "agent.message"]
text = json.dumps(tr[0]["content"]) if tr else ""
sys.exit(0 if tr and "in-sandbox-42" in text and msg and "worker said in-sandbox-42" in msg[-1]["content"][0]["text"] else 1)
PYEOF
W1=$(get "/v1/environments/$ENV/work" | "$PY" -c 'import json,sys; d=json.load(sys.stdin)["data"]; print(d[0]["state"], d[0]["latest_heartbeat_at"] is not None)')
check "the item was heartbeated and force-stopped" test "$W1" = "stopped True"

# kill -9 mid-tool (its 2 s sleep): the lease lapses (TTL 2 s), a second worker reclaims the item
post "/v1/sessions/$S/events" '{"events":[{"type":"user.message","content":[{"type":"text","text":"again"}]}]}' >/dev/null
"$HULL" worker --server "$URL" --environment "$ENV" --key-file "$TEST_TMP/env.key" --no-cgroup --ttl 2 \
        --max-idle 300 --once >"$TEST_TMP/w2.out" 2>"$TEST_TMP/w2.err" &
W2=$!
pids+=("$W2")
for i in $(seq 1 200); do grep -q "runs bash" "$TEST_TMP/w2.err" && break; sleep 0.05; done
sleep 0.3
kill -KILL "$W2"
wait "$W2" 2>/dev/null
timeout 120 "$HULL" worker --server "$URL" --environment "$ENV" --key-file "$TEST_TMP/env.key" --no-cgroup --ttl 2 \
        --max-idle 300 --once >"$TEST_TMP/w3.out" 2>"$TEST_TMP/w3.err"
rc=$?
check "the second worker exited after its item (--once)" test "$rc" = 0
get "/v1/sessions/$S/events?limit=1000" >"$TEST_TMP/events2.json"
if "$PY" - "$TEST_TMP/events2.json" <<'PYEOF'; then pass "a worker killed mid-tool: a second worker reclaimed the item and answered the call once"; else fail "a worker killed mid-tool: a second worker reclaimed the item and answered the call once" "rc=$rc $(tail -c 600 "$TEST_TMP/events2.json") | $(tail -5 "$TEST_TMP/w3.err")"; fi
import json, sys
ev = json.load(open(sys.argv[1]))["data"]
tr = [e for e in ev if e["type"] == "user.tool_result" and e["tool_use_id"].startswith("toolu_b") or (e["type"] == "user.tool_result" and "reclaimed-ran" in json.dumps(e["content"]))]
msg = [e for e in ev if e["type"] == "agent.message"]
sys.exit(0 if len(tr) == 1 and "reclaimed-ran" in json.dumps(tr[0]["content"]) and "second: reclaimed-ran" in msg[-1]["content"][0]["text"] else 1)
PYEOF
check "the second worker served the reclaimed item" grep -q "serving" "$TEST_TMP/w3.err"

# SIGTERM while polling an empty queue (a --server with a trailing slash): the worker closes its
# sandbox and exits 0 at once
"$HULL" worker --server "$URL/" --environment "$ENV" --key-file "$TEST_TMP/env.key" --no-cgroup \
        >"$TEST_TMP/w4.out" 2>"$TEST_TMP/w4.err" &
W4=$!
pids+=("$W4")
# SIGTERM once it polls: its handler is set after its sandbox starts (a SIGTERM before that ends
# it by the signal, 143, and leaves its sandbox directory), which a busy machine may take long for
for i in $(seq 1 1200); do grep -q "polling" "$TEST_TMP/w4.err" && break; sleep 0.05; done
check "SIGTERM: the worker polls before it is sent" grep -q "polling" "$TEST_TMP/w4.err"
kill -TERM "$W4"
for i in $(seq 1 60); do kill -0 "$W4" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$W4" 2>/dev/null; then
        fail "SIGTERM: the worker exits within 6 s" "$(cat "$TEST_TMP/w4.err")"
        kill -KILL "$W4"
fi
wait "$W4"
check "SIGTERM: the polling worker exited 0" test "$?" = 0

# bad input: one clear line and exit 2, before any sandbox starts
bad() { # NAME WANT-IN-LINE ARGS...
        local name=$1 want=$2
        shift 2
        timeout 15 "$HULL" worker --no-cgroup "$@" >"$TEST_TMP/bad.out" 2>"$TEST_TMP/bad.err"
        local rc=$? lines
        lines=$(wc -l <"$TEST_TMP/bad.err")
        if [ "$rc" = 2 ] && [ "$lines" = 1 ] && grep -q -- "$want" "$TEST_TMP/bad.err"; then pass "$name"; else fail "$name" "rc=$rc $(cat "$TEST_TMP/bad.err")"; fi
}
echo hull_env_0000000000000000000000000000000000000000000000000000000000000000 >"$TEST_TMP/wrong.key"
bad "an unreachable server: one line, exit 2" "cannot reach" --server http://127.0.0.1:1/ --environment "$ENV" --key-file "$TEST_TMP/env.key"
bad "a wrong environment key: one line, exit 2" "refused the environment key" --server "$URL" --environment "$ENV" --key-file "$TEST_TMP/wrong.key"
bad "an environment that does not exist: one line, exit 2" "refused environment" --server "$URL" --environment env_nosuchenvironment --key-file "$TEST_TMP/env.key"
bad "--environment that is not an environment id: exit 2" "environment" --server "$URL" --environment sesn_x --key-file "$TEST_TMP/env.key"
bad "no key at all: exit 2" "no environment key" --server "$URL" --environment "$ENV"
check "no sandbox directory left behind (the killed worker's swept by the next)" test -z "$(ls -A "$HULL_HOME/worker")"
check "no credential in hull serve's log" sh -c "! grep -qF '$(cat "$TEST_TMP/env.key")' '$TEST_TMP/serve.log'"
stop_server >/dev/null
mock_stop >/dev/null
printf '# test-worker.sh took %.1f s\n' "$(echo "$(date +%s.%N) - $start" | bc)"
