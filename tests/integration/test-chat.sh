# test-chat.sh: `hull chat` fed from a pipe against `hull mock-model`: the answers, /id, /handles,
# tool calls shown compactly, a conversation resumed by id with its workspace, its handles and its
# messages, Ctrl-C (SIGINT) ending a turn and not the chat, --list, and bad ids.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER OPENAI_BASE_URL \
        ANTHROPIC_BASE_URL TAVILY_API_KEY 2>/dev/null
cd "$TEST_TMP" || exit 1

# mock SCRIPT-JSON [ARGS...]: hull mock-model (tests/lib.sh's mock_start) with its requests
# recorded in $TEST_TMP/requests.jsonl.
mock() {
        : >"$TEST_TMP/requests.jsonl"
        mock_start "$1" --record "$TEST_TMP/requests.jsonl" --log-level error "${@:2}"
}

O=$TEST_TMP/out
E=$TEST_TMP/err
# chat INPUT [ARGS...]: hull chat with INPUT on stdin (Anthropic's format).
chat() {
        local input=$1
        shift
        printf '%s' "$input" | HULL_PROVIDER=anthropic HULL_BASE_URL=$MURL HULL_API_KEY=k HULL_MODEL=mock-model \
                timeout 120 "$HULL" chat "$@" >"$O" 2>"$E"
        RC=$?
}
pyexpect() {
        if RC=$RC "$PY" - "$O" "$E" "$TEST_TMP/requests.jsonl" "$2" <<'PYEOF'; then pass "$1"; else fail "$1" "rc=$RC out: $(head -c 400 "$O") err: $(head -c 600 "$E")"; fi
import json, os, sys
o = open(sys.argv[1]).read()
e = open(sys.argv[2]).read()
reqs = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
rc = int(os.environ["RC"])
sys.exit(0 if eval(sys.argv[4]) else 1)
PYEOF
}

mock '{"steps":[
 {"text":"Writing it.","tool_calls":[{"name":"bash","input":{"command":"echo remembered > note.txt; cat note.txt"}}]},
 {"text":"first answer: {{last_tool_result|line:1}}"},
 {"tool_calls":[{"name":"run_python","input":{"code":"emit([{\"k\": i} for i in range(3000)])"}}]},
 {"text":"second answer"},
 {"tool_calls":[{"name":"bash","input":{"command":"cat note.txt"}}]},
 {"text":"third answer: {{last_tool_result|line:1}}"}]}'
chat $'write a note\nmake a table\n/id\n/handles\n'
pyexpect "chat: answers to each line, on stdout" \
        'rc == 0 and "first answer: remembered" in o and "second answer" in o and len(reqs) == 4'
pyexpect "chat: tool calls shown compactly on stderr" 'e.count("hull: bash") == 1 and "run_python" in e'
id=$(sed -n 's/^hull: chat \([A-Za-z0-9_.-]*\) (Ctrl-D.*/\1/p' "$E" | head -1)
pyexpect "chat: /id prints the conversation's id, /handles its handles" \
        '"'"$id"'" in o.splitlines() and any(l.startswith("h1  json") for l in o.splitlines())'
pyexpect "chat: the second turn carries the first (one conversation)" \
        'any("write a note" in json.dumps(m) for m in reqs[2]["body"]["messages"]) and len(reqs[2]["body"]["messages"]) > len(reqs[0]["body"]["messages"])'
"$HULL" chat --list >"$O" 2>"$E"
RC=$?
pyexpect "chat --list lists it" 'rc == 0 and "'"$id"'" in o.split()'

chat $'what did I write?\n/handles\n' "$id"
pyexpect "chat ID: continued with its messages, its workspace and its handles" \
        'rc == 0 and "third answer: remembered" in o and "continued" in e and any("make a table" in json.dumps(m) for m in reqs[4]["body"]["messages"]) and any(l.startswith("h1  json") for l in o.splitlines())'
mock_stop

# Ctrl-C ends the turn in flight, not the chat: the next line is answered
mock '{"steps":[
 {"tool_calls":[{"name":"bash","input":{"command":"sleep 100"}}]},
 {"text":"after the interrupt"}]}'
mkfifo "$TEST_TMP/in"
HULL_PROVIDER=openai HULL_BASE_URL=$MURL/v1 HULL_API_KEY=k HULL_MODEL=mock-model "$HULL" chat <"$TEST_TMP/in" >"$O" 2>"$E" &
chatpid=$!
pids+=("$chatpid")
exec 7>"$TEST_TMP/in"
printf 'wait forever\n' >&7
for i in $(seq 1 400); do grep -q 'hull: bash' "$E" && break; sleep 0.05; done
sleep 1
busy_id=$(sed -n 's/^hull: chat \([A-Za-z0-9_.-]*\) (Ctrl-D.*/\1/p' "$E" | head -1)
HULL_PROVIDER=openai HULL_BASE_URL=$MURL/v1 HULL_API_KEY=k HULL_MODEL=mock-model timeout 60 "$HULL" chat "$busy_id" \
        </dev/null >"$TEST_TMP/out2" 2>"$TEST_TMP/err2"
rc2=$?
if [ $rc2 -eq 1 ] && grep -q "in use by another hull" "$TEST_TMP/err2"; then
        pass "chat: a conversation open in another hull chat is refused, not shared"
else
        fail "chat: a conversation open in another hull chat is refused, not shared" "rc=$rc2 $(cat "$TEST_TMP/err2")"
fi
t0=$(date +%s)
kill -INT $chatpid
for i in $(seq 1 300); do grep -q 'interrupted' "$E" && break; sleep 0.05; done
printf 'are you there?\n' >&7
exec 7>&-
wait $chatpid
RC=$?
secs=$(($(date +%s) - t0))
pyexpect "chat: SIGINT ends the turn, not the chat; the next line is answered" \
        'rc == 0 and "interrupted" in e and "after the interrupt" in o and '"$secs"' < 30'
mock_stop

# SIGTERM (or SIGHUP) ends the chat as /exit does: the conversation is kept
mock '{"steps":[{"text":"hello there"}]}'
mkfifo "$TEST_TMP/in3"
HULL_PROVIDER=openai HULL_BASE_URL=$MURL/v1 HULL_API_KEY=k HULL_MODEL=mock-model "$HULL" chat <"$TEST_TMP/in3" >"$O" 2>"$E" &
chatpid=$!
pids+=("$chatpid")
exec 7>"$TEST_TMP/in3"
printf 'hi\n' >&7
for i in $(seq 1 400); do grep -q 'hello there' "$O" && break; sleep 0.05; done
kill -TERM $chatpid
wait $chatpid
RC=$?
exec 7>&-
tid=$(sed -n 's/^hull: chat \([A-Za-z0-9_.-]*\) (Ctrl-D.*/\1/p' "$E" | head -1)
pyexpect "chat: SIGTERM ends the chat and keeps it" \
        'rc == 0 and "kept" in e and os.path.exists(os.environ["HULL_HOME"] + "/chats/'"$tid"'/conversation.json")'
mock_stop

HULL_PROVIDER=anthropic HULL_BASE_URL=http://127.0.0.1:9 HULL_API_KEY=k HULL_MODEL=m "$HULL" chat no-such-chat </dev/null >"$O" 2>"$E"
RC=$?
pyexpect "chat: an unknown id is a clear error" 'rc == 2 and "no conversation no-such-chat" in e'
HULL_PROVIDER=anthropic HULL_BASE_URL=http://127.0.0.1:9 HULL_API_KEY=k HULL_MODEL=m "$HULL" chat ../../etc </dev/null >"$O" 2>"$E"
RC=$?
pyexpect "chat: an id that is a path is refused" 'rc == 2 and "not a conversation id" in e'
