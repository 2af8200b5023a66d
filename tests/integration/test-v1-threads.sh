# test-v1-threads.sh: the threads a /v1 turn makes, counted (never timed). A turn used to start
# two: the session's worker (started by the POST's thread, ended when its queue was empty, its
# 8 MiB stack given back at each end) and a watcher around each tool call (a thread and an
# eventfd). Now the worker waits V1_WORKER_LINGER_MS for the session's next message and the
# agent keeps its tools' watch across calls: turns that follow each other (a glob and a text
# answer each, as bench/v1.sh's) make no thread. Counted with strace -f (clone3 and clone) on
# hull serve over 5 turns after a warm-up turn; main's code made 2 a turn.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

if ! command -v strace >/dev/null; then
        skip "v1 threads: a turn's threads" "no strace"
        exit 0
fi
# 16 turns at most (the warm-up's, 5 counted, 3 streamed, 2 more), each a glob call, then a text (two model calls)
SCRIPT=$("$PY" -c '
import json
step = {"tool_calls": [{"name": "glob", "input": {"pattern": "*"}}], "usage": {"input_tokens": 5, "output_tokens": 1}}
print(json.dumps({"steps": [step, {"text": "done", "usage": {"input_tokens": 5, "output_tokens": 1}}] * 16}))')
if ! mock_start "$SCRIPT" --log-level error; then
        fail "v1 threads: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log" --log-level debug; then # debug: each turn's appends (below)
        fail "v1 threads: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
make_session || {
        fail "v1 threads: a session" "$(cat "$O")"
        exit 1
}

# turns N: N turns, each POSTed as soon as the last one's session is idle (one process: no
# interpreter's start between them), each done at its idle (the log's last event a new
# session.status_idle); prints the number of turns that idled.
turns() {
        "$PY" - "$URL" "$SESSION" "$1" <<'PY'
import json, os, sys, time, urllib.request
url, sid, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
h = {"anthropic-version": "2026-10-21", "anthropic-beta": "managed-agents-2026-04-01",
     "content-type": "application/json"}
if os.environ.get("V1_KEY"):
    h["x-api-key"] = os.environ["V1_KEY"]
def call(method, path, body=None):
    req = urllib.request.Request(url + path, data=body, method=method, headers=h)
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())
done, seen = 0, None
for i in range(n):
    msg = {"events": [{"type": "user.message", "content": [{"type": "text", "text": "turn %d" % i}]}]}
    if seen is None:
        last = call("GET", "/v1/sessions/%s/events?order=desc&limit=1" % sid)["data"]
        seen = last[0]["id"] if last else ""
    call("POST", "/v1/sessions/%s/events" % sid, json.dumps(msg).encode())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.002)
        last = call("GET", "/v1/sessions/%s/events?order=desc&limit=1" % sid)["data"]
        if last and last[0]["type"] == "session.status_idle" and last[0]["id"] != seen:
            seen = last[0]["id"]
            done += 1
            break
print(done)
PY
}

[ "$(turns 1)" = 1 ] || fail "v1 threads: the warm-up turn idles" "still running"

TRACE=$TEST_TMP/turns.strace
strace -f -e trace=clone3,clone -o "$TRACE" -p "$SERVER_PID" 2>"$TEST_TMP/strace.err" &
spid=$!
wait_strace_attached "$TEST_TMP/strace.err" "$spid"
sleep 0.3
n=$(turns 5)
kill -INT "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
if ! grep -q attached "$TEST_TMP/strace.err"; then
        skip "v1 threads: a turn's threads" "strace cannot attach: $(head -1 "$TEST_TMP/strace.err")"
        exit 0
fi
[ "$n" = 5 ] && pass "v1 threads: 5 turns (a glob and a text each) idle" || fail "v1 threads: 5 turns idle" "idled: $n"
events_json "$SESSION" >"$TEST_TMP/events.json"
"$PY" -c '
import json, sys
ev = json.load(open(sys.argv[1]))
n = sum(e["type"] == "agent.tool_result" for e in ev)
if n != 6:
    print(n, " ".join(e["type"] for e in ev)[-600:])
    sys.exit(1)' "$TEST_TMP/events.json" >"$TEST_TMP/types" &&
        pass "v1 threads: each turn called the glob tool" || fail "v1 threads: each turn called the glob tool" "$(cat "$TEST_TMP/types")"
# a thread is a clone3 (or clone) with CLONE_THREAD; a process started meanwhile is not counted
threads=$(grep -E '^[0-9]+ +clone3?\(' "$TRACE" | grep -c CLONE_THREAD || true)
# at most one over 5 turns: a turn that came after the worker's wait (a busy machine) starts one
[ "$threads" -le 1 ] && pass "v1 threads: 5 turns start at most 1 thread ($threads)" ||
        fail "v1 threads: 5 turns start at most 1 thread" "$threads: $(grep -E 'clone3?\(' "$TRACE" | head -12 | tr '\n' ' ')"

# The session object copied (to put it back should the append fail) only by the appends whose
# events may change it (the statuses, a model request's end): 3 of a turn's 6, where each append
# made one before. Counted from the debug line each turn's end writes (the warm-up's and the 5
# turns'); each line's counts are the appends since the last line: at most half of them copy.
grep -o 'event=v1-turn-appends .*' "$TEST_TMP/serve.log" >"$TEST_TMP/appends"
"$PY" - "$TEST_TMP/appends" <<'PY' >"$TEST_TMP/appends.bad" &&
import re, sys
rows = [tuple(map(int, re.search(r"appends=(\d+) object_copies=(\d+)", l).groups())) for l in open(sys.argv[1])]
# summed: a turn's line may come after the next turn's start (then one line holds two turns)
a, c = sum(r[0] for r in rows), sum(r[1] for r in rows)
bad = a < 6 * 5 or 2 * c > a
print(rows)
sys.exit(1 if bad else 0)
PY
        pass "v1 threads: at most half of the appends copy the session object ($(cat "$TEST_TMP/appends.bad"))" ||
        fail "v1 threads: at most half of the appends copy the session object" "(appends, copies) a turn: $(cat "$TEST_TMP/appends.bad")"

# With a stream open, an appended event is serialised once, by the store (its text as stored is
# what the stream sends): the debug line's stream_dumps (events serialised again for the streams)
# is 0 for each of 3 turns; each event sent to the stream was one json_dumps more before.
SSE=$TEST_TMP/stream.jsonl
: >"$SSE"
"$PY" "$V1_CLIENT" sse "$URL/v1/sessions/$SESSION/events/stream" "$SSE" &
pids+=("$!")
wait_for_file "$SSE" "${pids[-1]}" # the stream is open (the reader wrote its status)
[ "$(turns 3)" = 3 ] || fail "v1 threads: 3 turns with a stream open idle" "still running"
sleep 0.3
grep -o 'event=v1-turn-appends .*' "$TEST_TMP/serve.log" | tail -3 >"$TEST_TMP/appends3"
"$PY" - "$TEST_TMP/appends3" "$SSE" <<'PY' >"$TEST_TMP/dumps.bad" &&
import json, re, sys
rows = [int(re.search(r"stream_dumps=(\d+)", l).group(1)) for l in open(sys.argv[1])]
frames = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
results = sum(f.get("event") not in (None, "ping") and '"agent.tool_result"' in f.get("data", "") for f in frames)
print(rows, "tool results streamed:", results)
sys.exit(0 if rows and not any(rows) and results >= 3 else 1)
PY
        pass "v1 threads: a streamed turn serialises its events once ($(cat "$TEST_TMP/dumps.bad"))" ||
        fail "v1 threads: a streamed turn serialises its events once" "$(cat "$TEST_TMP/dumps.bad")"

# A parked worker ends with its session (DELETE right after a turn) and with hull serve (SIGTERM
# right after another session's turn: exit 0, promptly as before; no sanitizer report).
[ "$(turns 1)" = 1 ] || fail "v1 threads: a turn before the deletion idles" "still running"
v1 DELETE "/v1/sessions/$SESSION"
expect "v1 threads: a session is deleted while its worker waits for a message" "s == 200"
v1 GET "/v1/sessions/$SESSION"
expect "v1 threads: ... and is gone" "s == 404"
make_session || fail "v1 threads: a second session" "$(cat "$O")"
[ "$(turns 1)" = 1 ] || fail "v1 threads: the second session's turn idles" "still running"
stop_server TERM 30
rc=$?
[ "$rc" -eq 0 ] && pass "v1 threads: hull serve ends cleanly on SIGTERM with a worker waiting" ||
        fail "v1 threads: hull serve ends cleanly on SIGTERM with a worker waiting" "exit $rc: $(tail -5 "$TEST_TMP/serve.log")"
if grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error:' "$TEST_TMP/serve.log"; then
        fail "v1 threads: no sanitizer report in hull serve's log" "$(grep -E -A5 'Sanitizer|runtime error:' "$TEST_TMP/serve.log" | head -20)"
else
        pass "v1 threads: no sanitizer report in hull serve's log"
fi
