#!/usr/bin/env bash
# test-v1-mcp.sh: an agent's mcp_servers and mcp_toolset on the /v1 API, against
# @modelcontextprotocol/server-everything over Streamable HTTP on loopback, with hull mock-model
# calling everything__echo: the call is announced as agent.mcp_tool_use (always_ask, the
# default), waits for user.tool_confirmation, runs, is answered as agent.mcp_tool_result and its
# result reaches the model; trigger-long-running-operation's progress reaches the session's events
# as hull.tool_progress, and a user.interrupt cancels it (the connection serves the next turn); a
# result over 100 KB (get-env, with a big variable in the server's environment) becomes a handle
# in the session's sandbox; an agent whose server is not there ends its turn with a session.error
# of type mcp_connection_failed_error naming the server, then idles, in a bounded time.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"
. "$(dirname "$0")/../conformance/npm-deps.sh"
npm_ready "v1 mcp" || exit 0
EV=$NODE_PATH/.bin/mcp-server-everything
if [ ! -x "$EV" ]; then
        fail "v1 mcp" "mcp-server-everything is missing after npm ci"
        exit 0
fi

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
# /v1 MCP URLs pass the egress guard: the operator admits loopback, where the test's server is
printf '{"web": {"allow_cidrs": ["127.0.0.0/8"]}}\n' >"$HULL_HOME/config.json"

# a port found free can be taken before the server binds it (by a connection of another suite: two
# run at once): the server says it listens on it and is reached there, or it exits (EADDRINUSE) or
# is not reached, and another port is tried, 3 at most
for _ in 1 2 3; do
        PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        # MCP_BIG: get-env's answer is over 100 KB
        MCP_BIG=$(head -c 100000 /dev/zero | tr '\0' b) HOST=127.0.0.1 PORT=$PORT "$EV" streamableHttp >"$TEST_TMP/evh.log" 2>&1 &
        EVH=$!
        pids+=("$EVH")
        for _ in $(seq 1 600); do
                if grep -q "listening on port $PORT\$" "$TEST_TMP/evh.log"; then
                        # listening, and reached there (a wildcard listen can be, and not on loopback)
                        "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
                                "$PORT" 2>/dev/null && break 2
                        kill "$EVH" 2>/dev/null
                        break
                fi
                kill -0 "$EVH" 2>/dev/null || break
                sleep 0.05
        done
done

: >"$TEST_TMP/requests.jsonl"
SCRIPT='{"steps": [
  {"tool_calls": [{"name": "everything__echo", "input": {"message": "hello over mcp"}, "id": "toolu_mcp1"}]},
  {"text": "{{last_tool_result}}"},
  {"tool_calls": [{"name": "everything__trigger-long-running-operation", "input": {"duration": 60, "steps": 60}, "id": "toolu_long"}]},
  {"tool_calls": [{"name": "everything__echo", "input": {"message": "after the interrupt"}, "id": "toolu_mcp2"}]},
  {"text": "{{last_tool_result}}"},
  {"tool_calls": [{"name": "everything__get-env", "input": {}, "id": "toolu_env"}]},
  {"text": "{{last_tool_result}}"}
]}'
if ! mock_start "$SCRIPT" --record "$TEST_TMP/requests.jsonl" --log-level error; then
        fail "v1 mcp: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log"; then
        fail "v1 mcp: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi

# new_session NAME URL [POLICY]: an agent with that MCP server (its toolset's default policy, or
# POLICY), a session; SESSION
new_session() {
        local dc=""
        [ -n "${3:-}" ] && dc=", \"default_config\": {\"permission_policy\": {\"type\": \"$3\"}}"
        v1 POST /v1/agents "{\"name\": \"mcp\", \"model\": \"$MODEL\", \"mcp_servers\": [{\"type\": \"url\", \"name\": \"$1\", \"url\": \"$2\"}], \"tools\": [{\"type\": \"mcp_toolset\", \"mcp_server_name\": \"$1\"$dc}]}"
        expect "v1 mcp: an agent with mcp_servers ($1 ${3:-default})" "s == 200 and b['tools'][0]['default_config']['permission_policy']['type'] == '${3:-always_ask}'"
        local agent env
        agent=$(field id)
        v1 POST /v1/environments '{"name": "t"}'
        env=$(field id)
        v1 POST /v1/sessions "{\"agent\": \"$agent\", \"environment_id\": \"$env\"}"
        SESSION=$(field id)
}

# events_until SECONDS PY-EXPR: poll the session's events (ev) until the expression holds
events_until() {
        local i
        for i in $(seq 1 $(($1 * 5))); do
                events_json "$SESSION" >"$TEST_TMP/events.json" 2>/dev/null
                "$PY" -c 'import json,sys; ev=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
                        "$TEST_TMP/events.json" "$2" 2>/dev/null && return 0
                sleep 0.2
        done
        return 1
}

evcheck() { # NAME PY-EXPR over ev (the session's events)
        events_json "$SESSION" >"$TEST_TMP/events.json"
        pycheck "$1" '
import json, sys
ev = json.load(open(sys.argv[1]))
types = [e["type"] for e in ev]
ok = eval(sys.argv[2])
if not ok:
    print("events:", json.dumps(ev)[-1500:], "types:", types, "handles:",
          [{k: v for k, v in e["handle"].items() if k != "preview"} for e in ev if e["type"] == "hull.handle_created"])
sys.exit(0 if ok else 1)' "$TEST_TMP/events.json" "$2" "${@:3}"
}

# ---- the approve flow ----
new_session everything "http://127.0.0.1:$PORT/mcp"
v1 POST "/v1/sessions/$SESSION/events" "$(user_message "echo it")"
events_until 120 'any(e["type"] == "session.status_idle" and e["stop_reason"]["type"] == "requires_action" for e in ev)' ||
        fail "v1 mcp: the turn pauses for a confirmation" "$(tail -c 1500 "$TEST_TMP/events.json")"
evcheck "v1 mcp: agent.mcp_tool_use names the tool, its server, its input and asks" \
        'any(e["type"] == "agent.mcp_tool_use" and e["name"] == "echo" and e["mcp_server_name"] == "everything" and e["input"] == {"message": "hello over mcp"} and e["evaluated_permission"] == "ask" for e in ev) and "agent.tool_use" not in types'
evcheck "v1 mcp: requires_action names the agent.mcp_tool_use event" \
        '[e for e in ev if e["type"] == "session.status_idle"][-1]["stop_reason"]["event_ids"] == [e["id"] for e in ev if e["type"] == "agent.mcp_tool_use"]'
USE=$("$PY" -c 'import json,sys; print([e["id"] for e in json.load(open(sys.argv[1])) if e["type"] == "agent.mcp_tool_use"][0])' "$TEST_TMP/events.json")
pycheck "v1 mcp: the model was offered everything__echo" '
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
names = [t.get("name") for t in reqs[0]["body"].get("tools", [])]
sys.exit(0 if "everything__echo" in names else print(names) or 1)' "$TEST_TMP/requests.jsonl"

v1 POST "/v1/sessions/$SESSION/events" "{\"events\": [{\"type\": \"user.tool_confirmation\", \"tool_use_id\": \"$USE\", \"result\": \"allow\"}]}"
expect "v1 mcp: the confirmation is taken" "s == 200"
events_until 120 'ev[-1]["type"] == "session.status_idle" and ev[-1]["stop_reason"]["type"] == "end_turn"' ||
        fail "v1 mcp: the turn ends after the confirmation" "$(tail -c 1500 "$TEST_TMP/events.json")"
evcheck "v1 mcp: agent.mcp_tool_result links back to the call and carries the server's answer" \
        'any(e["type"] == "agent.mcp_tool_result" and e["mcp_tool_use_id"] == sys.argv[3] and not e["is_error"] and "Echo: hello over mcp" in e["content"][0]["text"] for e in ev) and "agent.tool_result" not in types' "$USE"
evcheck "v1 mcp: the result reached the model (its answer repeats it)" \
        'any(e["type"] == "agent.message" and "Echo: hello over mcp" in e["content"][0]["text"] for e in ev)'

# ---- an interrupt mid-call: the call is cancelled, the connection serves the next turn ----
new_session everything "http://127.0.0.1:$PORT/mcp" always_allow
v1 POST "/v1/sessions/$SESSION/events" "$(user_message "take long")"
events_until 120 'any(e["type"] == "hull.tool_progress" and e.get("note", "").startswith("mcp:") for e in ev)' ||
        fail "v1 mcp: the long operation's progress reaches the session's events" "$(tail -c 1500 "$TEST_TMP/events.json")"
evcheck "v1 mcp: its progress notes are hull.tool_progress tagged mcp:everything, linked to the call" \
        'any(e["type"] == "hull.tool_progress" and e.get("note", "").startswith("mcp:everything: ") and e["tool_use_id"] == [u["id"] for u in ev if u["type"] == "agent.mcp_tool_use"][0] for e in ev)'
t0=$(date +%s)
v1 POST "/v1/sessions/$SESSION/events" '{"events": [{"type": "user.interrupt"}]}'
expect "v1 mcp: the interrupt is taken" "s == 200"
events_until 60 'ev[-1]["type"] == "session.status_idle"' ||
        fail "v1 mcp: the interrupted turn idles" "$(tail -c 1500 "$TEST_TMP/events.json")"
t1=$(date +%s)
# a hang check, not a speed check: the operation wanted 60 s
check "v1 mcp: the interrupt ended the 60 s call well before its end ($((t1 - t0)) s)" test $((t1 - t0)) -lt 45
v1 POST "/v1/sessions/$SESSION/events" "$(user_message "echo again")"
events_until 120 'ev[-1]["type"] == "session.status_idle" and sum(1 for e in ev if e["type"] == "agent.mcp_tool_result") >= 2' ||
        fail "v1 mcp: the turn after the interrupt ends" "$(tail -c 1500 "$TEST_TMP/events.json")"
evcheck "v1 mcp: the connection serves the next turn" \
        'any(e["type"] == "agent.mcp_tool_result" and "Echo: after the interrupt" in e["content"][0]["text"] and not e["is_error"] for e in ev)'

# ---- a big result ----
v1 POST "/v1/sessions/$SESSION/events" "$(user_message "the environment")"
events_until 120 'ev[-1]["type"] == "session.status_idle" and sum(1 for e in ev if e["type"] == "agent.mcp_tool_result") >= 3' ||
        fail "v1 mcp: the big result's turn ends" "$(tail -c 1500 "$TEST_TMP/events.json")"
evcheck "v1 mcp: a result over 100 KB becomes a handle in the session's sandbox; the model gets its summary" \
        'any(e["type"] == "hull.handle_created" and e["handle"]["source"] == "everything__get-env" and e["handle"]["bytes"] > 100000 for e in ev) and 0 < len([e for e in ev if e["type"] == "agent.mcp_tool_result"][-1]["content"][0]["text"]) < 8000'

# ---- an unreachable server ----
DEAD=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
new_session gone "http://127.0.0.1:$DEAD/mcp"
v1 POST "/v1/sessions/$SESSION/events" "$(user_message "echo it")"
events_until 90 'any(e["type"] == "session.status_idle" for e in ev)' ||
        fail "v1 mcp: a turn with an unreachable server ends" "$(tail -c 1500 "$TEST_TMP/events.json")"
evcheck "v1 mcp: an unreachable server is a terminal mcp_connection_failed_error naming it, then idle" \
        '[e for e in ev if e["type"] == "session.error"][0]["error"]["type"] == "mcp_connection_failed_error" and [e for e in ev if e["type"] == "session.error"][0]["error"]["mcp_server_name"] == "gone" and [e for e in ev if e["type"] == "session.error"][0]["error"]["retry_status"]["type"] == "terminal" and "127.0.0.1:" in [e for e in ev if e["type"] == "session.error"][0]["error"]["message"] and types[-1] == "session.status_idle"'

# ---- an interrupt while a server does not answer initialize: the turn ends, without an error ----
"$PY" "$(dirname "$0")/../unit/data/mcp-fake-http.py" "$TEST_TMP/fake.port" >/dev/null 2>&1 &
FAKE=$!
pids+=("$FAKE")
for _ in $(seq 1 600); do [ -s "$TEST_TMP/fake.port" ] && break; sleep 0.05; done
new_session slow "http://127.0.0.1:$(cat "$TEST_TMP/fake.port")/hang" always_allow
v1 POST "/v1/sessions/$SESSION/events" "$(user_message "echo it")"
sleep 2 # the turn is connecting: /hang answers nothing for 30 s, initialize waits up to 60 s
t0=$(date +%s)
v1 POST "/v1/sessions/$SESSION/events" '{"events": [{"type": "user.interrupt"}]}'
expect "v1 mcp: the interrupt during initialize is taken" "s == 200"
events_until 60 'any(e["type"] == "session.status_idle" for e in ev)' ||
        fail "v1 mcp: the turn interrupted while connecting idles" "$(tail -c 1500 "$TEST_TMP/events.json")"
t1=$(date +%s)
# a hang check, not a speed check: without the interrupt the wait lasts 30 s (the fake's sleep)
check "v1 mcp: the interrupt cut the initialize wait ($((t1 - t0)) s)" test $((t1 - t0)) -lt 20
evcheck "v1 mcp: an interrupted connect ends the turn as end_turn, with no session.error" \
        'types[-1] == "session.status_idle" and ev[-1]["stop_reason"]["type"] == "end_turn" and "session.error" not in types'
kill "$FAKE" 2>/dev/null
wait "$FAKE" 2>/dev/null

# ---- the egress guard: an internal address the operator did not admit, a metadata endpoint ----
for url in "http://10.255.255.1:9/mcp|blocked internal address 10.255.255.1 (private)|web.allow_cidrs" \
        "http://169.254.169.254/mcp|blocked cloud metadata endpoint 169.254.169.254|"; do
        IFS='|' read -r U WANT HINT <<<"$url"
        new_session guarded "$U"
        t0=$(date +%s)
        v1 POST "/v1/sessions/$SESSION/events" "$(user_message "echo it")"
        events_until 60 'any(e["type"] == "session.status_idle" for e in ev)' ||
                fail "v1 mcp: a turn with a refused URL ends" "$(tail -c 1500 "$TEST_TMP/events.json")"
        evcheck "v1 mcp: $U is refused by the egress guard as mcp_connection_failed_error saying why" \
                '[e for e in ev if e["type"] == "session.error"][0]["error"]["type"] == "mcp_connection_failed_error" and [e for e in ev if e["type"] == "session.error"][0]["error"]["mcp_server_name"] == "guarded" and sys.argv[3] in [e for e in ev if e["type"] == "session.error"][0]["error"]["message"] and sys.argv[4] in [e for e in ev if e["type"] == "session.error"][0]["error"]["message"] and types[-1] == "session.status_idle"' "$WANT" "$HINT"
done

stop_server
mock_stop
kill -INT "$EVH" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$EVH" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$EVH" 2>/dev/null
wait "$EVH" 2>/dev/null

