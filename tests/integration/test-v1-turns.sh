# test-v1-turns.sh: what a /v1 session's turn does beyond the SDK's conformance flow: hull's
# toolset (run_python in the session's sandbox, its variables kept between turns), agent.message
# previews (event_start, event_delta, then the agent.message with the preview's id), a provider
# that keeps failing (session.error, then idle with retries_exhausted; the session takes the next
# message), and a subscriber that never reads: the turn and the other subscribers go on, and its
# stream is ended.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

SCRIPT='{"then": "repeat", "steps": [
  {"tool_calls": [{"name": "run_python", "input": {"code": "v = 6 * 7\nprint(v)"}, "id": "toolu_py1"}]},
  {"text": "python said: {{last_tool_result}}"},
  {"tool_calls": [{"name": "run_python", "input": {"code": "print(v + 1)"}, "id": "toolu_py2"}]},
  {"text": "python said: {{last_tool_result}}"},
  {"text": ["streamed ", "answer ", "in pieces"]},
  {"error": {"kind": "server"}, "times": 3},
  {"text": "back again"},
  {"text": "slow answer", "delay_ms": 2000},
  {"text": "the queued one"}
]}'
if ! mock_start "$SCRIPT" --log-level error; then
        fail "turns: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log"; then
        fail "turns: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
v1 POST /v1/agents "{\"name\": \"py\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"hull_toolset_20261201\"}]}"
expect "turns: an agent with hull's toolset" "s == 200 and any(c['name'] == 'run_python' and c['enabled'] for c in b['tools'][0]['configs'])"
AGENT=$(field id)
v1 POST /v1/environments '{"name": "t"}'
ENV=$(field id)
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
SESSION=$(field id)
S=/v1/sessions/$SESSION/events

# last_turn PY-EXPR: over the events after the last user.message (ev: their list; types)
last_turn() {
        events_json "$SESSION" >"$TEST_TMP/events.json"
        pycheck "$1" '
import json, sys
all_ = json.load(open(sys.argv[1]))
i = max(k for k, e in enumerate(all_) if e["type"] == "user.message")
ev = all_[i + 1:]
types = [e["type"] for e in ev]
ok = eval(sys.argv[2])
if not ok:
    print("types:", types, "events:", json.dumps(ev)[:1500])
sys.exit(0 if ok else 1)' "$TEST_TMP/events.json" "$2"
}

v1 POST "$S" "$(user_message "compute")"
wait_idle "$SESSION" 120 || fail "turns: the python turn idles" "still running"
last_turn "turns: run_python ran in the session's sandbox and the model saw 42" \
        'any(e["type"] == "agent.tool_result" and "42" in json.dumps(e["content"]) for e in ev) and any(e["type"] == "agent.message" and e["content"][0]["text"].startswith("python said: ") and "42" in e["content"][0]["text"] for e in ev)'

v1 POST "$S" "$(user_message "again")"
wait_idle "$SESSION" 120 || fail "turns: the second python turn idles" "still running"
last_turn "turns: the interpreter kept v between turns (43)" \
        'any(e["type"] == "agent.tool_result" and "43" in json.dumps(e["content"]) for e in ev)'

# previews: a stream with event_deltas[]=agent.message
SSE=$TEST_TMP/deltas.jsonl
: >"$SSE"
"$PY" "$V1_CLIENT" sse "$URL$S/stream?event_deltas%5B%5D=agent.message" "$SSE" &
pids+=("$!")
wait_for_file "$SSE" "${pids[-1]}" # the stream is open (the reader wrote its status)
v1 POST "$S" "$(user_message "stream it")"
wait_idle "$SESSION" 60 || fail "turns: the streamed turn idles" "still running"
wait_streamed "$SSE" "$SESSION" || fail "turns: the stream carries the streamed turn's last event" "$(tail -c 300 "$SSE")"
pycheck "turns: event_start, event_deltas, then the agent.message with the preview's id" '
import json, sys
f = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
f = [x for x in f if x.get("event") not in (None, "ping")]
starts = [json.loads(x["data"]) for x in f if x["event"] == "event_start"]
deltas = [json.loads(x["data"]) for x in f if x["event"] == "event_delta"]
msgs = [json.loads(x["data"]) for x in f if x["event"] == "agent.message"]
if not (starts and deltas and msgs):
    print("frames:", [x["event"] for x in f]); sys.exit(1)
pid = starts[-1]["event"]["id"]
text = "".join(d["delta"]["content"]["text"] for d in deltas if d["event_id"] == pid)
order = [x["event"] for x in f]
ok = msgs[-1]["id"] == pid and text == "streamed answer in pieces" and msgs[-1]["content"][0]["text"] == text \
    and order.index("event_start") < order.index("event_delta") < len(order) - 1 - order[::-1].index("agent.message") \
    and all(x.get("id") is None for x in f if x["event"] in ("event_start", "event_delta"))
print(pid, text, msgs[-1]); sys.exit(0 if ok else 1)' "$SSE"
events_json "$SESSION" >"$TEST_TMP/events.json"
pycheck "turns: previews are never listed" 'import json,sys; sys.exit(0 if all(e["type"] not in ("event_start", "event_delta") for e in json.load(open(sys.argv[1]))) else 1)' "$TEST_TMP/events.json"

# a provider that fails every try: the turn ends with a clear session.error
v1 POST "$S" "$(user_message "fail")"
wait_idle "$SESSION" 120 || fail "turns: the failing turn idles" "still running"
last_turn "turns: a failing provider: session.error (model_*, exhausted) then idle retries_exhausted" \
        'any(e["type"] == "session.error" and e["error"]["type"].startswith("model_") and e["error"]["retry_status"]["type"] == "exhausted" for e in ev) and ev[-1]["type"] == "session.status_idle" and ev[-1]["stop_reason"]["type"] == "retries_exhausted"'
v1 POST "$S" "$(user_message "and now")"
wait_idle "$SESSION" 60 || fail "turns: the session takes the next message" "still running"
last_turn "turns: after the failure the next turn answers" \
        'any(e["type"] == "agent.message" and e["content"][0]["text"] == "back again" for e in ev)'

# a message sent while a turn runs waits: its processed_at is null until its turn starts
v1 POST "$S" "$(user_message "slow")"
sleep 0.5
v1 POST "$S" "$(user_message "queued")"
expect "turns: a message behind a running turn is stored with processed_at null" \
        "s == 200 and b['data'][0]['processed_at'] is None"
Q=$(field data | "$PY" -c 'import ast,sys; print(ast.literal_eval(sys.stdin.read())[0]["id"])')
for _ in $(seq 1 100); do
        events_json "$SESSION" >"$TEST_TMP/events.json"
        "$PY" -c 'import json,sys; ev=json.load(open(sys.argv[1])); sys.exit(0 if sum(e["type"] == "session.status_idle" for e in ev) >= 7 else 1)' "$TEST_TMP/events.json" && break
        sleep 0.2
done
wait_idle "$SESSION" 60 || fail "turns: the queued turn idles" "still running"
events_json "$SESSION" >"$TEST_TMP/events.json"
pycheck "turns: the queued message got its processed_at when its turn started, and was answered" '
import json, sys
ev = json.load(open(sys.argv[1]))
q = [e for e in ev if e["id"] == sys.argv[2]][0]
k = [e["id"] for e in ev].index(sys.argv[2])
after = ev[k + 1:]
ok = isinstance(q["processed_at"], str) and any(e["type"] == "agent.message" and e["content"][0]["text"] == "the queued one" for e in after)
print(q, [e["type"] for e in after]); sys.exit(0 if ok else 1)' "$TEST_TMP/events.json" "$Q"

# a subscriber that never reads while 8 MB of events go by (eight 1 MB messages; each turn stops
# at once: the message alone is over the context budget), beside one that reads: the turns go on,
# the reader gets every event, the stuck stream is ended by the server
"$PY" - "$URL$S/stream" >"$TEST_TMP/stuck.out" 2>&1 <<'PYEOF' &
import socket, sys, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((u.hostname, u.port))
s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nanthropic-version: 2023-06-01\r\nanthropic-beta: managed-agents-2026-04-01\r\n\r\n" % u.path).encode())
time.sleep(30) # never reads; then counts what is left
s.setblocking(False)
n, closed = 0, False
deadline = time.time() + 10
while time.time() < deadline:
    try:
        d = s.recv(1 << 20)
    except BlockingIOError:
        time.sleep(0.05)
        continue
    except ConnectionResetError:
        closed = True
        break
    if not d:
        closed = True
        break
    n += len(d)
print("bytes", n, "closed", closed)
PYEOF
STUCK=$!
pids+=("$STUCK")
SSE2=$TEST_TMP/reader.jsonl
: >"$SSE2"
"$PY" "$V1_CLIENT" sse "$URL$S/stream" "$SSE2" &
pids+=("$!")
wait_for_file "$SSE2" "${pids[-1]}"
sleep 0.5
"$PY" -c 'import json; print(json.dumps({"events": [{"type": "user.message", "content": [{"type": "text", "text": "y" * 1000000}]}]}))' >"$TEST_TMP/big.json"
FIRST=""
for k in 1 2 3 4 5 6 7 8; do
        v1 POST "$S" "@$TEST_TMP/big.json"
        [ -z "$FIRST" ] && FIRST=$("$PY" -c 'import json,sys; f=open(sys.argv[1]); f.readline(); print(json.loads(json.load(f)["body"])["data"][0]["id"])' "$O")
        wait_idle "$SESSION" 60 || fail "turns: big turn $k idles beside a stuck subscriber" "still running"
done
pass "turns: eight 1 MB turns end while a subscriber reads nothing"
wait_streamed "$SSE2" "$SESSION" 120 || fail "turns: the reading subscriber gets the last big turn's last event" "$(tail -c 300 "$SSE2")"
events_json "$SESSION" >"$TEST_TMP/events.json"
pycheck "turns: the reading subscriber got every event from the first big one on, in order" '
import json, sys
f = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
got = [json.loads(x["data"])["id"] for x in f if x.get("event") not in (None, "ping")]
log = [e["id"] for e in json.load(open(sys.argv[2]))]
want = log[log.index(sys.argv[3]):]
tail = got[got.index(sys.argv[3]):] if sys.argv[3] in got else []
print(len(tail), len(want)); sys.exit(0 if tail == want else 1)' "$SSE2" "$TEST_TMP/events.json" "$FIRST"
wait "$STUCK"
pycheck "turns: the stuck subscriber's stream was ended by the server" \
        'import sys; t = open(sys.argv[1]).read(); print(t); sys.exit(0 if "closed True" in t else 1)' "$TEST_TMP/stuck.out"
v1 GET /healthz
expect "turns: hull serve still serves" "s == 200"
