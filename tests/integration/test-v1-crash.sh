# test-v1-crash.sh: `kill -9` of hull serve in the middle of a /v1 session's turn, then a restart
# on the same HULL_HOME: every event acknowledged before the kill (the POST answers and what an SSE
# subscriber received) is in GET .../events, in the same order; the cut turn ends with a
# session.error and the session idles; a new message works (the model sees the conversation
# before the kill); a stream resumed with Last-Event-ID = the last seq seen before the kill sees
# every later event once, with no gap and no duplicate.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

# turn 1: a plain answer; turn 2: a glob call, then a model request that takes 10 minutes (the
# kill comes during it); after the restart: the answer to turn 3.
SCRIPT='{"then": "repeat", "steps": [
  {"text": "first answer"},
  {"tool_calls": [{"name": "glob", "input": {"pattern": "*"}, "id": "toolu_crash1"}]},
  {"text": "never sent", "delay_ms": 600000},
  {"text": "after the restart"}
]}'
if ! mock_start "$SCRIPT" --record "$TEST_TMP/requests.jsonl" --log-level error; then
        fail "crash: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve1.log"; then
        fail "crash: hull serve starts" "$(tail -5 "$TEST_TMP/serve1.log")"
        exit 1
fi
if ! make_session; then
        fail "crash: an agent, an environment and a session are made" "$(head -c 500 "$O")"
        exit 1
fi
S=/v1/sessions/$SESSION/events
SSE1=$TEST_TMP/sse1.jsonl
ACK=$TEST_TMP/acked.txt # event ids the server acknowledged, one a line
: >"$SSE1"
: >"$ACK"
"$PY" "$V1_CLIENT" sse "$URL$S/stream" "$SSE1" &
SSE_PID=$!
pids+=("$SSE_PID")

# wait_sse FILE PY-EXPR [SECONDS]: until the expression holds over the frames in FILE (f: the list
# of {"id", "event", "data"} frames, pings left out; types: their events), default 90 s.
wait_sse() {
        local i
        for i in $(seq 1 $((${3:-90} * 5))); do
                "$PY" - "$1" "$2" <<'PYEOF' && return 0
import json, sys
f = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
f = [x for x in f if x.get("event") and x["event"] != "ping"]
types = [x["event"] for x in f]
sys.exit(0 if eval(sys.argv[2]) else 1)
PYEOF
                sleep 0.2
        done
        return 1
}
# wait_open FILE: until the SSE reader wrote the stream's status (30 s at most); 1 unless it is 200.
wait_open() {
        local i
        for i in $(seq 1 150); do
                grep -q '"status"' "$1" && break
                sleep 0.2
        done
        head -1 "$1" | grep -q '"status": 200'
}
# sent_ids: the ids of the last POST's answer, one a line.
sent_ids() {
        "$PY" -c 'import json,sys; f=open(sys.argv[1]); f.readline(); [print(e["id"]) for e in json.loads(json.load(f)["body"])["data"]]' "$O" 2>/dev/null
}
ack() { sent_ids >>"$ACK"; }

wait_open "$SSE1" || fail "crash: the stream opens" "$(head -c 300 "$SSE1")"
v1 POST "$S" "$(user_message 'first question')"
expect "crash: turn 1 sent" "s == 200"
ack
if wait_sse "$SSE1" 'types.count("session.status_idle") >= 1'; then pass "crash: turn 1 ends idle"; else fail "crash: turn 1 ends idle" "$(cut -c1-120 "$SSE1" | tail -5)"; fi
v1 POST "$S" "$(user_message 'second question')"
expect "crash: turn 2 sent" "s == 200"
ack
if wait_sse "$SSE1" '"agent.tool_result" in types[types.index("session.status_idle"):]'; then
        pass "crash: turn 2 ran its tool before the slow model request"
else
        fail "crash: turn 2 ran its tool before the slow model request" "$(cut -c1-120 "$SSE1" | tail -5)"
fi
# the kill comes once the third model request is under way (the mock delays it 10 minutes): the
# mock has recorded it (it records a request before its delay; 60 s at most). Killed before it, the
# third question after the restart would get the mock's third step, the 10-minute one.
for _ in $(seq 1 600); do [ "$(grep -c . "$TEST_TMP/requests.jsonl" 2>/dev/null)" -ge 3 ] && break; sleep 0.1; done
check "crash: the third model request reached the mock before the kill" \
        test "$(grep -c . "$TEST_TMP/requests.jsonl" 2>/dev/null)" -ge 3
v1 GET "/v1/sessions/$SESSION"
expect "crash: the session is running when it is killed" "s == 200 and b['status'] == 'running'"

{ stop_server KILL 10; } 2>/dev/null
kill "$SSE_PID" 2>/dev/null
wait "$SSE_PID" 2>/dev/null
# what the subscriber received before the kill: acknowledged too
"$PY" -c '
import json, sys
for l in open(sys.argv[1]):
    x = json.loads(l)
    if x.get("event") and x["event"] != "ping":
        print(json.loads(x["data"])["id"])' "$SSE1" >>"$ACK"
LAST_SEQ=$("$PY" -c '
import json, sys
ids = [int(json.loads(l)["id"]) for l in open(sys.argv[1]) if json.loads(l).get("event") not in (None, "ping")]
print(ids[-1] if ids else 0)' "$SSE1")
pycheck "crash: the subscriber's seqs before the kill were 1..N, gap-free" '
import json, sys
ids = [int(json.loads(l)["id"]) for l in open(sys.argv[1]) if json.loads(l).get("event") not in (None, "ping")]
ok = ids and ids == list(range(1, len(ids) + 1))
ok or print("seqs:", ids)
sys.exit(0 if ok else 1)' "$SSE1"

if ! serve_v1 "$TEST_TMP/serve2.log"; then
        fail "crash: hull serve restarts on the same HULL_HOME" "$(tail -5 "$TEST_TMP/serve2.log")"
        exit 1
fi
pass "crash: hull serve restarts on the same HULL_HOME"
wait_idle "$SESSION" 90
expect "crash: after the restart the session is idle" "s == 200 and b['status'] == 'idle'"
events_json "$SESSION" >"$TEST_TMP/after.json" 2>"$TEST_TMP/v1.err"
pycheck "crash: every acknowledged event is stored" '
import json, sys
acked = [l.strip() for l in open(sys.argv[1]) if l.strip()]
stored = [e["id"] for e in json.load(open(sys.argv[2]))]
missing = [a for a in acked if a not in stored]
missing and print("acknowledged but not stored:", missing, "stored:", stored)
acked or print("nothing was acknowledged")
sys.exit(0 if acked and not missing else 1)' "$ACK" "$TEST_TMP/after.json"
pycheck "crash: the stored events start with what the subscriber saw, in its order, no duplicate" '
import json, sys
seen = [json.loads(json.loads(l)["data"])["id"] for l in open(sys.argv[1]) if json.loads(l).get("event") not in (None, "ping")]
stored = [e["id"] for e in json.load(open(sys.argv[2]))]
ok = stored[:len(seen)] == seen and len(stored) == len(set(stored))
ok or print("seen:", seen, "stored:", stored)
sys.exit(0 if ok else 1)' "$SSE1" "$TEST_TMP/after.json"
pycheck "crash: the cut turn ends with a session.error, then session.status_idle" '
import json, sys
n = int(sys.argv[2])
after = [e for e in json.load(open(sys.argv[1]))[n:] if not e["type"].startswith("span.")]
types = [e["type"] for e in after]
err = types.index("session.error") if "session.error" in types else -1
e = after[err]["error"] if err >= 0 else {}
ok = err >= 0 and "session.status_idle" in types[err:] and "agent.message" not in types and isinstance(e.get("message"), str) and e.get("type")
ok or print("events after the last one seen before the kill:", [(x["type"], x.get("error")) for x in after])
sys.exit(0 if ok else 1)' "$TEST_TMP/after.json" "$LAST_SEQ"

# a stream resumed at the last seq seen before the kill, then a new message
SSE2=$TEST_TMP/sse2.jsonl
: >"$SSE2"
"$PY" "$V1_CLIENT" sse "$URL$S/stream" "$SSE2" "last-event-id: $LAST_SEQ" &
SSE_PID=$!
pids+=("$SSE_PID")
wait_open "$SSE2" || fail "crash: the stream resumed with Last-Event-ID opens" "$(head -c 300 "$SSE2")"
v1 POST "$S" "$(user_message 'third question')"
expect "crash: a new message after the restart is accepted" "s == 200"
T3=$(sent_ids | head -1)
if wait_sse "$SSE2" '"user.message" in types and "session.status_idle" in types[types.index("user.message"):]' 120; then
        pass "crash: the new turn runs to idle"
else
        fail "crash: the new turn runs to idle" "$(cut -c1-120 "$SSE2" | tail -5)"
fi
kill "$SSE_PID" 2>/dev/null
wait "$SSE_PID" 2>/dev/null
events_json "$SESSION" >"$TEST_TMP/final.json" 2>"$TEST_TMP/v1.err"
pycheck "crash: the resumed stream has seq LAST+1.. with no gap and no duplicate, each the stored event" '
import json, sys
last = int(sys.argv[3])
fr = [json.loads(l) for l in open(sys.argv[1])]
fr = [x for x in fr if x.get("event") not in (None, "ping")]
stored = json.load(open(sys.argv[2]))
got = [(int(x["id"]), x["event"], json.loads(x["data"])["id"]) for x in fr]
want = [(i + 1, e["type"], e["id"]) for i, e in enumerate(stored)][last:last + len(got)]
ok = got and got == want and got[0][0] == last + 1
ok or print("resumed after", last, "got:", got, "stored from there:", want)
sys.exit(0 if ok else 1)' "$SSE2" "$TEST_TMP/final.json" "$LAST_SEQ"
pycheck "crash: the new turn's user.message is the one acknowledged, and it ends in end_turn" '
import json, sys
ev = json.load(open(sys.argv[1]))
users = [i for i, e in enumerate(ev) if e["type"] == "user.message"]
last = ev[users[-1]:]
msgs = [e for e in last if e["type"] == "agent.message"]
ok = ev[users[-1]]["id"] == sys.argv[2] and msgs and msgs[-1]["content"][0]["text"] == "after the restart" and last[-1]["type"] == "session.status_idle" and last[-1]["stop_reason"]["type"] == "end_turn"
ok or print("acknowledged", sys.argv[2], "; the last turn:", last)
sys.exit(0 if ok else 1)' "$TEST_TMP/final.json" "$T3"
pycheck "crash: the model request after the restart carries the conversation from before the kill" '
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
body = json.dumps(reqs[-1]["body"]["messages"])
ok = len(reqs) >= 3 and "first question" in body and "first answer" in body and "third question" in body
ok or print(len(reqs), "model requests; the messages of the last:", body[:500])
sys.exit(0 if ok else 1)' "$TEST_TMP/requests.jsonl"
check "crash: no sanitizer report in either hull serve's log" sh -c "! grep -Eq 'AddressSanitizer|runtime error:' '$TEST_TMP/serve1.log' '$TEST_TMP/serve2.log'"
stop_server TERM 30
rc=$?
[ "$rc" -eq 0 ] || tail -25 "$TEST_TMP/serve2.log" >&2
check "crash: hull serve ends cleanly on SIGTERM after the restart" test "$rc" -eq 0
