# test-agui-default-env.sh: POST /agui for a new thread when no environment exists (a CopilotKit
# user who made only an agent): hull serve makes one environment named "default" (/v1's defaults:
# a cloud config, no packages, /v1's default networking) on first need, once however many new
# threads start at the same time, and finds it again for later threads; each thread's session is
# in it.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

if ! mock_start '{"then": "repeat", "steps": [{"text": "ok"}]}' --log-level error; then
        fail "agui default env: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log"; then
        fail "agui default env: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
v1 POST /v1/agents "{\"name\": \"only-an-agent\", \"model\": \"$MODEL\"}"
AGENT=$(field id 2>/dev/null)
v1 GET /v1/environments
expect "an agent and no environment" "s == 200 and len(b['data']) == 0 and '$AGENT'.startswith('agent_')"

# agui_run THREAD: one run of a new thread (its first user message), the stream in $TEST_TMP/THREAD.sse
agui_run() {
        curl -s -N -m 120 -o "$TEST_TMP/$1.sse" -w '%{http_code}' -H 'content-type: application/json' \
                -H 'accept: text/event-stream' "$URL/agui" -d "{\"threadId\": \"$1\", \"runId\": \"r-$1\", \"state\": {},
                \"messages\": [{\"id\": \"m1\", \"role\": \"user\", \"content\": \"hi\"}], \"tools\": [], \"context\": [],
                \"forwardedProps\": {\"agent_id\": \"$AGENT\"}}" >"$TEST_TMP/$1.code"
}
# the run's stream: 200, RUN_STARTED first, RUN_FINISHED last
run_ok() {
        "$PY" - "$TEST_TMP/$1.code" "$TEST_TMP/$1.sse" <<'PYEOF'
import json, sys
code = open(sys.argv[1]).read().strip()
ev = [json.loads(l[5:]) for l in open(sys.argv[2]) if l.startswith("data:")]
types = [e.get("type") for e in ev]
ok = code == "200" and types[:1] == ["RUN_STARTED"] and types[-1:] == ["RUN_FINISHED"]
ok or print(code, types, open(sys.argv[2]).read()[:400])
sys.exit(0 if ok else 1)
PYEOF
}

# eight new threads at once, none naming an environment
runs=()
for i in 1 2 3 4 5 6 7 8; do
        agui_run "thread-$i" &
        runs+=($!)
done
wait "${runs[@]}"
for i in 1 2 3 4 5 6 7 8; do
        if out=$(run_ok "thread-$i"); then pass "new thread $i without an environment: the run streams and finishes"
        else fail "new thread $i without an environment: the run streams and finishes" "$out"; fi
done
v1 GET /v1/environments
expect "eight threads at once: one environment made, named default" "s == 200 and len(b['data']) == 1 and b['data'][0]['name'] == 'default'"
DEFAULT=$(field data | "$PY" -c 'import ast,sys; print(ast.literal_eval(sys.stdin.read())[0]["id"])' 2>/dev/null)
check "its making is logged once" test "$(grep -c 'event=agui-default-environment' "$TEST_TMP/serve.log")" -eq 1

# a later thread finds it again
agui_run thread-later
if out=$(run_ok thread-later); then pass "a later new thread: the run streams and finishes"; else fail "a later new thread: the run streams and finishes" "$out"; fi
v1 GET /v1/environments
expect "a later thread: still the one environment" "s == 200 and len(b['data']) == 1 and b['data'][0]['id'] == '$DEFAULT'"
v1 GET "/v1/sessions?limit=100"
expect "every thread's session is in the default environment" "s == 200 and len(b['data']) == 9 and all(x['environment_id'] == '$DEFAULT' for x in b['data'])"

# /v1's defaults: what POST /v1/environments with only a name makes
v1 GET "/v1/environments/$DEFAULT"
cp "$O" "$TEST_TMP/default.json"
v1 POST /v1/environments '{"name": "probe"}'
pycheck "the default environment has /v1's defaults (cloud, no packages, the default networking)" '
import json, sys
def body(p):
    f = open(p); f.readline(); return json.loads(json.load(f)["body"])
d, p = body(sys.argv[1]), body(sys.argv[2])
ok = d["config"] == p["config"] and d["config"]["type"] == "cloud" and d["name"] == "default"
ok and all(v == [] for k, v in d["config"]["packages"].items() if k != "type") or print(d, p)
sys.exit(0 if ok else 1)' "$TEST_TMP/default.json" "$O"

check "hull serve is still running" kill -0 "$SERVER_PID"
check "no error was logged" sh -c "! grep -q 'level=error' '$TEST_TMP/serve.log'"
check "no sanitizer report in hull serve's log" sh -c "! grep -Eq 'AddressSanitizer|runtime error:' '$TEST_TMP/serve.log'"
