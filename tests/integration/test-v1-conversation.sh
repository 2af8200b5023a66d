# test-v1-conversation.sh: what a /v1 turn writes of the conversation, counted (never timed). The
# conversation was one row written whole at each turn's end (at 200 turns ~240 KB: ~60 WAL pages,
# and the next message's commit waited on them); now a turn appends its own messages
# (store_conversation_append_text) and the whole text is written only when an older message
# changed in place. Counted with strace -y on hull serve: the bytes written to SQLite's WAL during
# a short turn after one with a 500 KB message (main's code: over 500 KB), and the conversation
# read back whole after hull serve restarts (the next turn's model request holds every message).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

if ! command -v strace >/dev/null; then
        skip "v1 conversation: a turn's WAL bytes" "no strace"
        exit 0
fi
if ! mock_start '{"then": "repeat", "steps": [{"text": "done", "usage": {"input_tokens": 5, "output_tokens": 1}}]}' \
        --log-level error --record "$TEST_TMP/requests.jsonl"; then
        fail "v1 conversation: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log"; then
        fail "v1 conversation: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
make_session || {
        fail "v1 conversation: a session" "$(cat "$O")"
        exit 1
}
S=/v1/sessions/$SESSION/events
user_message "big $("$PY" -c 'print("x" * 500000)')" >"$TEST_TMP/big.json" # (too long for an argument)
v1 POST "$S" "@$TEST_TMP/big.json"
expect "v1 conversation: a 500 KB message is taken" "s == 200"
wait_turn_idle "$SESSION" 60 || fail "v1 conversation: the big turn idles" "still running"
v1 POST "$S" "$(user_message "second")"
wait_turn_idle "$SESSION" 60 || fail "v1 conversation: the second turn idles" "still running"

TRACE=$TEST_TMP/turn.strace
strace -f -y -e trace=pwrite64,write -o "$TRACE" -p "$SERVER_PID" 2>"$TEST_TMP/strace.err" &
spid=$!
wait_strace_attached "$TEST_TMP/strace.err" "$spid"
sleep 0.3
v1 POST "$S" "$(user_message "counted")"
wait_turn_idle "$SESSION" 60 || fail "v1 conversation: the counted turn idles" "still running"
sleep 0.3
kill -INT "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
if ! grep -q attached "$TEST_TMP/strace.err"; then
        skip "v1 conversation: a turn's WAL bytes" "strace cannot attach: $(head -1 "$TEST_TMP/strace.err")"
        exit 0
fi
wal=$("$PY" -c '
import re, sys
n = 0
for line in open(sys.argv[1]):
    m = re.search(r"(?:pwrite64|write)\(\d+<[^>]*-wal>.*\)\s+=\s+(\d+)", line)
    if m:
        n += int(m.group(1))
print(n)' "$TRACE")
[ "$wal" -gt 0 ] && [ "$wal" -lt 250000 ] &&
        pass "v1 conversation: a short turn after a 500 KB one writes less than 250 KB to the WAL ($wal)" ||
        fail "v1 conversation: a short turn after a 500 KB one writes less than 250 KB to the WAL" "$wal bytes"

# read back whole: hull serve again on the same home, one more turn; its request has every message
stop_server TERM 30
serve_v1 "$TEST_TMP/serve2.log" || fail "v1 conversation: hull serve starts again" "$(tail -5 "$TEST_TMP/serve2.log")"
v1 POST "$S" "$(user_message "after the restart")"
wait_turn_idle "$SESSION" 60 || fail "v1 conversation: the turn after the restart idles" "still running"
pycheck "v1 conversation: the model request after the restart holds every message, in order" '
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
msgs = reqs[-1]["body"]["messages"]
text = lambda m: m["content"] if isinstance(m["content"], str) else "".join(b.get("text", "") for b in m["content"])
users = [text(m)[:12] for m in msgs if m["role"] == "user"]
ok = users == ["big " + "x" * 8, "second", "counted", "after the re"] and len(msgs) == 7
ok or print(len(msgs), users)
sys.exit(0 if ok else 1)' "$TEST_TMP/requests.jsonl"
stop_server TERM 30
rc=$?
[ "$rc" -eq 0 ] && pass "v1 conversation: hull serve ends cleanly on SIGTERM" ||
        fail "v1 conversation: hull serve ends cleanly on SIGTERM" "exit $rc: $(tail -5 "$TEST_TMP/serve2.log")"
if grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error:' "$TEST_TMP/serve.log" "$TEST_TMP/serve2.log"; then
        fail "v1 conversation: no sanitizer report in hull serve's logs" "$(grep -E -A5 'Sanitizer|runtime error:' "$TEST_TMP"/serve*.log | head -20)"
else
        pass "v1 conversation: no sanitizer report in hull serve's logs"
fi
