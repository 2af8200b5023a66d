# test-env-v1.sh: a /v1 session whose environment's config lists packages (issue 13): the first
# turn builds the environment's layer (an npm package) and the bash tool requires it; a second
# session of the same environment reuses the layer; an environment whose package does not exist
# ends the turn with a session.error naming the environment, and the daemon goes on. Reaches only
# the npm registry.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
chmod 0711 "$TEST_TMP"
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
        skip "env-v1" "needs npm and node"
        exit 0
fi

SCRIPT='{"steps": [
  {"tool_calls": [{"name": "run_python", "input": {"code": "import os, sys\nprint(\"isnum\", os.path.isfile(\"/env/npm/node_modules/is-number/index.js\"), os.environ.get(\"NODE_PATH\"), \"/env/pip\" in sys.path)"}, "id": "toolu_p1"}]},
  {"text": "python said: {{last_tool_result}}"},
  {"tool_calls": [{"name": "run_python", "input": {"code": "import os, sys\nprint(\"isnum\", os.path.isfile(\"/env/npm/node_modules/is-number/index.js\"), os.environ.get(\"NODE_PATH\"), \"/env/pip\" in sys.path)"}, "id": "toolu_p2"}]},
  {"text": "python said: {{last_tool_result}}"}
]}'
if ! mock_start "$SCRIPT" --log-level error; then
        fail "env-v1: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log"; then
        fail "env-v1: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
v1 POST /v1/agents "{\"name\": \"sh\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"hull_toolset_20261201\"}]}"
AGENT=$(field id)
v1 POST /v1/environments '{"name": "npm", "config": {"type": "cloud", "networking": {"type": "unrestricted"}, "packages": {"npm": ["is-number@7.0.0"]}}}'
expect "env-v1: an environment with packages" "s == 200"
ENV=$(field id)

turn() { # ENV NAME: a session of ENV, one turn; its events in $TEST_TMP/events.json
        v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$1\"}"
        local session
        session=$(field id)
        v1 POST "/v1/sessions/$session/events" "$(user_message "go")"
        local i
        for i in $(seq 1 1500); do # the turn is over when session.status_idle follows the message
                events_json "$session" >"$TEST_TMP/events.json"
                "$PY" -c 'import json,sys; t=[e["type"] for e in json.load(open(sys.argv[1]))]; sys.exit(0 if "user.message" in t and "session.status_idle" in t[t.index("user.message"):] else 1)' "$TEST_TMP/events.json" && return 0
                sleep 0.4
        done
        fail "$2: the turn ends" "still running"
}
check_events() { # NAME EXPR over types and ev
        pycheck "$1" '
import json, sys
ev = json.load(open(sys.argv[1]))
types = [e["type"] for e in ev]
ok = eval(sys.argv[2])
if not ok:
    print("types:", types, "events:", json.dumps(ev)[:1500])
sys.exit(0 if ok else 1)' "$TEST_TMP/events.json" "$2"
}

turn "$ENV" "env-v1: first session"
check_events "env-v1: the first turn builds the layer and the session sees it at /env (NODE_PATH, and PYTHONPATH on the python cell's sys.path)" \
        'any(e["type"] == "agent.tool_result" and "isnum True /env/npm/node_modules True" in json.dumps(e["content"]) for e in ev)'
layers=$(ls "$HULL_HOME/layers" | grep -c '^[0-9a-f]\{64\}$')
stamp=$(stat -c %Y.%i "$HULL_HOME"/layers/*/meta/spec.json 2>/dev/null)
turn "$ENV" "env-v1: second session"
check_events "env-v1: a second session of the environment uses the layer" \
        'any(e["type"] == "agent.tool_result" and "isnum True /env/npm/node_modules True" in json.dumps(e["content"]) for e in ev)'
if [ "$layers" = 1 ] && [ "$(stat -c %Y.%i "$HULL_HOME"/layers/*/meta/spec.json)" = "$stamp" ]; then
        pass "env-v1: one layer, not rebuilt"
else
        fail "env-v1: one layer" "layers=$layers $(ls -la "$HULL_HOME/layers")"
fi

v1 POST /v1/environments '{"name": "bad", "config": {"type": "cloud", "packages": {"npm": ["hull-no-such-package-x1@1.0.0"]}}}'
BAD=$(field id)
turn "$BAD" "env-v1: broken environment"
check_events "env-v1: a package that does not exist ends the turn with a session.error naming the environment" \
        '"session.error" in types and any(e["type"] == "session.error" and "'"$BAD"'" in json.dumps(e) and "could not be installed" in json.dumps(e) for e in ev) and types[-1] == "session.status_idle"'
n=$(ls -a "$HULL_HOME/layers" | grep -c '^\.build-')
if [ "$n" = 0 ] && [ "$(ls "$HULL_HOME/layers" | grep -c '^[0-9a-f]\{64\}$')" = 1 ]; then pass "env-v1: the failed build left nothing"; else fail "env-v1: failed build" "$(ls -a "$HULL_HOME/layers")"; fi
v1 GET /v1/agents
expect "env-v1: hull serve goes on" "s == 200"
