# test-net-v1.sh: a /v1 session whose environment's config.networking is limited (issue 13): the
# keeper of hull serve's broker runs the sandbox's proxy; run_python reaches an allowed HTTP
# server on loopback through it (hull serve --net-allow-loopback, for testing) and a host not on
# the list is refused; GET /v1/sessions/{id}/network_log shows both. A session whose environment
# names no networking has none. Only loopback.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
chmod 0711 "$TEST_TMP"

mkdir "$TEST_TMP/www"
echo "hello-through-the-proxy" >"$TEST_TMP/www/hello.txt"
"$PY" -c '
import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
print(s.server_address[1], flush=True)
s.serve_forever()' "$TEST_TMP/www" >"$TEST_TMP/www.port" 2>/dev/null &
pids+=($!)
wait_for_file "$TEST_TMP/www.port" "${pids[-1]}"
PORT=$(head -1 "$TEST_TMP/www.port")
if [ -z "$PORT" ]; then
        fail "net-v1: the test's HTTP server starts" "no port"
        exit 1
fi

CODE="import urllib.request\nfor u in [\\\"http://127.0.0.1:$PORT/hello.txt\\\", \\\"http://denied.example/x\\\"]:\n    try:\n        print(\\\"GOT\\\", urllib.request.urlopen(u, timeout=30).read().decode().strip())\n    except Exception as ex:\n        print(\\\"ERR\\\", u, ex)"
SCRIPT='{"steps": [
  {"tool_calls": [{"name": "run_python", "input": {"code": "'"$CODE"'"}, "id": "toolu_n1"}]},
  {"tool_calls": [{"name": "bash", "input": {"command": "curl -sS -m 20 http://127.0.0.1:'"$PORT"'/hello.txt; echo rc=$?"}, "id": "toolu_n2"}]},
  {"tool_calls": [{"name": "bash", "input": {"command": "curl -sS -m 20 --noproxy \"*\" http://127.0.0.1:'"$PORT"'/hello.txt; echo rc=$?"}, "id": "toolu_n3"}]},
  {"text": "done"},
  {"tool_calls": [{"name": "run_python", "input": {"code": "'"$CODE"'"}, "id": "toolu_p1"}]},
  {"text": "done"},
  {"tool_calls": [{"name": "bash", "input": {"command": "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d \" \" | tr \"\\n\" \" \"; echo; curl -sS -m 5 --noproxy \"*\" http://127.0.0.1:'"$PORT"'/hello.txt; echo rc=$?"}, "id": "toolu_u1"}]},
  {"text": "done"}
]}'
if ! mock_start "$SCRIPT" --log-level error; then
        fail "net-v1: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log" --net-allow-loopback --allow-unrestricted-network; then
        fail "net-v1: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
v1 POST /v1/agents "{\"name\": \"net\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"hull_toolset_20261201\"}, {\"type\": \"agent_toolset_20260401\"}]}"
AGENT=$(field id)
v1 POST /v1/environments '{"name": "lim", "config": {"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["127.0.0.1"]}}}'
expect "net-v1: an environment with limited networking" "s == 200"
ENV=$(field id)

turn() { # ENV NAME: a session of ENV, one turn; its events in $TEST_TMP/events.json, id in SESSION
        v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$1\"}"
        SESSION=$(field id)
        v1 POST "/v1/sessions/$SESSION/events" "$(user_message "go")"
        local i
        for i in $(seq 1 600); do
                events_json "$SESSION" >"$TEST_TMP/events.json"
                "$PY" -c 'import json,sys; t=[e["type"] for e in json.load(open(sys.argv[1]))]; sys.exit(0 if "user.message" in t and "session.status_idle" in t[t.index("user.message"):] else 1)' "$TEST_TMP/events.json" && return 0
                sleep 0.4
        done
        fail "$2: the turn ends" "still running"
}
results() { # the tool results' texts, one JSON list
        "$PY" -c 'import json,sys; print(json.dumps([json.dumps(e.get("content")) for e in json.load(open(sys.argv[1])) if e["type"] == "agent.tool_result"]))' "$TEST_TMP/events.json"
}

turn "$ENV" "net-v1: limited session"
R=$(results)
pycheck "net-v1: run_python reaches the allowed host through the keeper's proxy" \
        'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if len(r) >= 1 and "GOT hello-through-the-proxy" in r[0] else (print(r), 1)[1])' "$R"
pycheck "net-v1: a host not on the list is refused" \
        'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if len(r) >= 1 and "ERR http://denied.example/x" in r[0] and "GOT" not in r[0].split("denied.example")[1] else (print(r), 1)[1])' "$R"
pycheck "net-v1: bash's curl reaches it too (HTTP_PROXY in every call)" \
        'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if len(r) >= 2 and "hello-through-the-proxy" in r[1] and "rc=0" in r[1] else (print(r), 1)[1])' "$R"
pycheck "net-v1: a direct connection that bypasses the proxy reaches nothing" \
        'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if len(r) >= 3 and "rc=" in r[2] and "hello-through-the-proxy" not in r[2] and "rc=0" not in r[2] else (print(r), 1)[1])' "$R"
v1 GET "/v1/sessions/$SESSION/network_log"
expect "net-v1: the network log shows the allowed connection" \
        "s == 200 and h.get('content-type', '').startswith('text/plain') and 'net allowed HTTP 127.0.0.1:$PORT' in t"
expect "net-v1: ... and the refused one" "s == 200 and 'net refused HTTP denied.example:80' in t"
# The same connections as hull.network events, each naming a tool call of the turn (the call
# during which the connection ended, or a later one).
pycheck "net-v1: hull.network events carry the connections, tied to the turn's tool calls" \
        'import json,sys
ev = json.load(open(sys.argv[1]))
uses = {e["id"] for e in ev if e["type"] == "agent.tool_use"}
net = [e for e in ev if e["type"] == "hull.network"]
lines = [l for e in net for l in e.get("connections", [])]
ok = net and all(e.get("tool_use_id") in uses for e in net) and \
    any("net allowed HTTP 127.0.0.1:'"$PORT"'" in l for l in lines) and \
    any("net refused HTTP denied.example:80" in l for l in lines)
sys.exit(0 if ok else (print(json.dumps(net)[:1200]), 1)[1])' "$TEST_TMP/events.json"

# an environment that allows no host (a self_hosted one no longer serves: its caller runs the
# built-in tools): nothing is reachable, and the log has refusals only
v1 POST /v1/environments '{"name": "plain", "config": {"type": "cloud", "networking": {"type": "limited", "allowed_hosts": []}}}'
PLAIN=$(field id)
turn "$PLAIN" "net-v1: session that allows no host"
R=$(results)
pycheck "net-v1: with no host allowed nothing is reachable" \
        'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if len(r) >= 1 and "GOT hello" not in r[0] and "ERR" in r[0] else (print(r), 1)[1])' "$R"
v1 GET "/v1/sessions/$SESSION/network_log"
expect "net-v1: its network log has the refusals and no allowed connection" \
        "s == 200 and 'net refused HTTP 127.0.0.1:$PORT' in t and 'net allowed' not in t"
pycheck "net-v1: ... and its hull.network events allow nothing" \
        'import json,sys; net=[l for e in json.load(open(sys.argv[1])) if e["type"] == "hull.network" for l in e.get("connections", [])]; sys.exit(0 if net and not any("net allowed" in l for l in net) else (print(net), 1)[1])' "$TEST_TMP/events.json"
v1 GET "/v1/sessions/sesn_nosuch/network_log"
expect "net-v1: an unknown session's network log is a 404" "s == 404"

# a bad allowed host: the turn's session.error says which (the sandbox fails before any model call)
v1 POST /v1/environments '{"name": "bad", "config": {"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["bad host!"]}}}'
BAD=$(field id)
turn "$BAD" "net-v1: bad allowed host"
pycheck "net-v1: an allowed host that is not a name ends the turn with a session.error naming it" \
        'import json,sys; ev=json.load(open(sys.argv[1])); sys.exit(0 if any(e["type"] == "session.error" and "allowed_hosts[0]" in json.dumps(e) for e in ev) else (print([e["type"] for e in ev], json.dumps(ev)[:800]), 1)[1])' "$TEST_TMP/events.json"
# unrestricted (hull serve --allow-unrestricted-network): the sandbox has pasta's interface
# beside lo, and the host's loopback stays out of reach
if [ -x /usr/bin/pasta ]; then
        v1 POST /v1/environments '{"name": "open", "config": {"type": "cloud", "networking": {"type": "unrestricted"}}}'
        OPEN=$(field id)
        turn "$OPEN" "net-v1: unrestricted session"
        R=$(results)
        pycheck "net-v1: an unrestricted environment's sandbox has a network interface beside lo (pasta)" \
                'import json,sys; r=json.loads(sys.argv[1]); c=json.loads(r[0]) if r else None; t=c if isinstance(c, str) else "".join(b.get("text", "") for b in (c or []) if isinstance(b, dict)); n=t.split("\n")[0].split(); sys.exit(0 if "lo" in n and any(x != "lo" for x in n) else (print(n, r), 1)[1])' "$R"
        pycheck "net-v1: ... and the host's loopback is not reachable from it" \
                'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if r and "hello-through-the-proxy" not in r[0] and "rc=0" not in r[0] else (print(r), 1)[1])' "$R"
else
        fail "net-v1: unrestricted session" "no /usr/bin/pasta (scripts/install-deps.sh installs passt)"
fi
v1 GET /v1/agents
expect "net-v1: hull serve goes on" "s == 200"
if grep -q "ERROR: AddressSanitizer\|runtime error:" "$TEST_TMP/serve.log"; then
        fail "net-v1: no sanitizer report" "$(grep -m3 "AddressSanitizer\|runtime error" "$TEST_TMP/serve.log")"
fi
