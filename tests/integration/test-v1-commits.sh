# test-v1-commits.sh: the SQLite write transactions a /v1 turn takes, counted (never timed). Each
# event is durable before it is streamed, but the events a turn makes between two waits (a model
# call, a tool's run, the turn's end) go in one commit: the session's running with its model
# request's start; the request's end with its tool_use (here none: with the agent.message, the
# usage and the idle); the session object's update in the same transaction. Counted with strace on the turn's thread (the one that asks the model): the
# SQLite WAL write lock it takes (fcntl F_WRLCK at byte 120 of the -shm file), one per write
# transaction. A turn of one text answer: 2 appends, each with the session object's update in its
# transaction, the conversation in the second (the idle's): 2 (3 while the conversation was its own
# transaction). The webhook outbox for running and idle is only read when no subscription wants
# them (branch turnmock; 5 before it, with a write transaction each; main's code before branch
# turnfast2: 12, an append per event and the object's update after 3 of them).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

if ! command -v strace >/dev/null; then
        skip "v1 commits: a turn's write transactions" "no strace"
        exit 0
fi
if ! mock_start '{"then": "repeat", "steps": [{"text": "done", "usage": {"input_tokens": 5, "output_tokens": 1}}]}' --log-level error; then
        fail "v1 commits: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log"; then
        fail "v1 commits: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
make_session || {
        fail "v1 commits: a session" "$(cat "$O")"
        exit 1
}
S=/v1/sessions/$SESSION/events
v1 POST "$S" "$(user_message "warm up")" # statements compiled, the agent made
wait_idle "$SESSION" 60 || fail "v1 commits: the first turn idles" "still running"

TRACE=$TEST_TMP/turn.strace
strace -f -e trace=fcntl,sendto -o "$TRACE" -p "$SERVER_PID" 2>"$TEST_TMP/strace.err" &
spid=$!
wait_strace_attached "$TEST_TMP/strace.err" "$spid"
sleep 0.3
v1 POST "$S" "$(user_message "count")"
wait_idle "$SESSION" 60 || fail "v1 commits: the counted turn idles" "still running"
sleep 0.3
kill -INT "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
if ! grep -q attached "$TEST_TMP/strace.err"; then
        skip "v1 commits: a turn's write transactions" "strace cannot attach: $(head -1 "$TEST_TMP/strace.err")"
        exit 0
fi
last_turn_types() {
        events_json "$SESSION" >"$TEST_TMP/events.json"
        "$PY" -c '
import json, sys
ev = json.load(open(sys.argv[1]))
i = max(k for k, e in enumerate(ev) if e["type"] == "user.message")
print(" ".join(e["type"] for e in ev[i:]))' "$TEST_TMP/events.json"
}
types=$(last_turn_types)
[ "$types" = "user.message session.status_running span.model_request_start span.model_request_end agent.message session.usage session.status_idle" ] &&
        pass "v1 commits: the counted turn's events, in order" || fail "v1 commits: the counted turn's events, in order" "$types"
"$PY" - "$TRACE" <<'PY' >"$TEST_TMP/counts"
import re, sys
asked, locks = set(), {}
for line in open(sys.argv[1]):
    f = line.split(None, 1)
    if len(f) < 2 or not f[0].isdigit():
        continue
    if f[1].startswith("sendto(") and '"POST /v1/messages' in f[1]:
        asked.add(f[0])
    if f[1].startswith("fcntl(") and "F_WRLCK" in f[1] and "l_start=120," in f[1]:
        locks[f[0]] = locks.get(f[0], 0) + 1
print(len(asked), sum(locks.get(t, 0) for t in asked))
PY
read -r threads commits <"$TEST_TMP/counts"
[ "$threads" = 1 ] && [ "$commits" -ge 1 ] && [ "$commits" -le 2 ] &&
        pass "v1 commits: a text turn's thread takes 2 write transactions at most ($commits)" ||
        fail "v1 commits: a text turn's thread takes 2 write transactions at most" "threads that asked the model: $threads, write locks: $commits"
