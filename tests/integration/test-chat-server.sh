# test-chat-server.sh: `hull chat --server URL AGENT` fed from a pipe against a real `hull serve`
# (its /v1 API) with `hull mock-model` as the model: the answer streamed on stdout, tool calls on
# stderr, an always_ask call approved and denied from the next piped line, --session continuing a
# session, SIGINT sent as user.interrupt (the turn ends, the chat goes on), the server's error
# envelopes printed clearly (an unknown agent, a missing or wrong API key), --api-key and
# $HULL_SERVE_KEY.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_SERVE_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER OPENAI_BASE_URL \
        ANTHROPIC_BASE_URL HULL_TOKEN 2>/dev/null
cd "$TEST_TMP" || exit 1
O=$TEST_TMP/out
E=$TEST_TMP/err
V1H=(-H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: managed-agents-2026-04-01' -H 'content-type: application/json')

pyexpect() {
        if RC=$RC "$PY" - "$O" "$E" "$TEST_TMP/requests.jsonl" "$2" <<'PYEOF'; then pass "$1"; else fail "$1" "rc=$RC out: $(head -c 400 "$O") err: $(head -c 800 "$E")"; fi
import json, os, sys
o = open(sys.argv[1]).read()
e = open(sys.argv[2]).read()
reqs = [json.loads(l) for l in open(sys.argv[3]) if l.strip()] if os.path.exists(sys.argv[3]) else []
rc = int(os.environ["RC"])
sys.exit(0 if eval(sys.argv[4]) else 1)
PYEOF
}

# chat INPUT [ARGS...]: hull chat --server with INPUT on stdin.
chat() {
        local input=$1
        shift
        printf '%s' "$input" | timeout 120 "$HULL" chat --server "$URL" "$@" >"$O" 2>"$E"
        RC=$?
}

: >"$TEST_TMP/requests.jsonl"
mock_start '{"steps":[
 {"text":["Hello ","from ","the mock."]},
 {"text":"Looking.","tool_calls":[{"name":"glob","input":{"pattern":"*"}}]},
 {"text":"globbed"},
 {"tool_calls":[{"name":"bash","input":{"command":"echo approved-ran"}}]},
 {"text":"bash said {{last_tool_result|line:1}}"},
 {"tool_calls":[{"name":"bash","input":{"command":"echo denied-ran"}}]},
 {"text":"after the denial"},
 {"text":"second session turn"},
 {"tool_calls":[{"name":"bash","input":{"command":"sleep 100"}}]},
 {"text":"after the interrupt"},
 {"text":"with a key"}]}' --record "$TEST_TMP/requests.jsonl" --log-level error ||
        { fail "hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"; exit 0; }
if ! start_server "$TEST_TMP/serve.log" --provider anthropic --base-url "$MURL" --api-key k --model mock-model; then
        fail "hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 0
fi
code=$(curl -s -o "$TEST_TMP/agents.json" -w '%{http_code}' "${V1H[@]}" "$URL/v1/agents")
if [ "$code" != 200 ]; then
        fail "hull serve has the /v1 API" "GET /v1/agents answered $code (the /v1 server is not in this tree yet)"
        exit 0
fi

curl -s "${V1H[@]}" "$URL/v1/agents" -d '{"name":"chat-test","model":"mock-model","tools":[
 {"type":"agent_toolset_20260401","default_config":{"enabled":false},"configs":[
  {"name":"glob","enabled":true,"permission_policy":{"type":"always_allow"}},
  {"name":"bash","enabled":true,"permission_policy":{"type":"always_ask"}}]}]}' >"$TEST_TMP/agent.json"
AGENT=$(json_get "$TEST_TMP/agent.json" id 2>/dev/null)
[ -n "$AGENT" ] || { fail "an agent is made" "$(cat "$TEST_TMP/agent.json")"; exit 0; }

chat $'say hello\nlook around\n' "$AGENT"
pyexpect "chat --server: the answers on stdout, in order" \
        'rc == 0 and o.find("Hello from the mock.") >= 0 and o.find("globbed") > o.find("Hello from the mock.")'
pyexpect "chat --server: a tool call as one line on stderr" 'any(l.startswith("hull: glob") for l in e.splitlines())'
SESSION=$(sed -n 's/^hull: chat: session \([A-Za-z0-9_-]*\) on .*/\1/p' "$E" | head -1)
check "chat --server: the session's id is said" test -n "$SESSION"

chat $'run it\ny\nrun it again\nn\n' --session "$SESSION"
pyexpect "chat --server --session: an always_ask call approved with y runs" \
        'rc == 0 and "bash said approved-ran" in o and "allow bash?" in e'
pyexpect "chat --server: denied with n, the tool does not run, the turn goes on" \
        '"after the denial" in o and len(reqs) >= 7 and "denied-ran" not in json.dumps(reqs[6]["body"]["messages"][-1])'

chat $'another\n' "$AGENT"
S2=$(sed -n 's/^hull: chat: session \([A-Za-z0-9_-]*\) on .*/\1/p' "$E" | head -1)
pyexpect "chat --server: a new session per run without --session" \
        'rc == 0 and "second session turn" in o and "'"$S2"'" not in ("", "'"$SESSION"'")'

# SIGINT: the turn is interrupted on the server, the chat goes on
mkfifo "$TEST_TMP/in"
"$HULL" chat --server "$URL" "$AGENT" <"$TEST_TMP/in" >"$O" 2>"$E" &
chatpid=$!
pids+=("$chatpid")
exec 7>"$TEST_TMP/in"
printf 'wait forever\n' >&7
for i in $(seq 1 600); do grep -q 'allow bash' "$E" && break; sleep 0.05; done
printf 'y\n' >&7
for i in $(seq 1 600); do grep -q '^hull: bash' "$E" && break; sleep 0.05; done
sleep 1
kill -INT $chatpid
for i in $(seq 1 600); do grep -q 'interrupting' "$E" && break; sleep 0.05; done
printf 'are you there?\n' >&7
exec 7>&-
wait $chatpid
RC=$?
pyexpect "chat --server: SIGINT interrupts the turn (user.interrupt), the next line is answered" \
        'rc == 0 and "interrupting" in e and "after the interrupt" in o'

chat $'hi\n' agent_doesnotexist
pyexpect "chat --server: an unknown agent: the server's error, one line, exit 1" \
        'rc == 1 and "not_found_error" in e and "404" in e and len([l for l in e.splitlines() if "hull: chat:" in l]) == 1'

# keys: once one exists, /v1 needs it
"$HULL" key create --name chat-test >"$TEST_TMP/key" 2>/dev/null
KEY=$(cat "$TEST_TMP/key")
if [ -n "$KEY" ]; then
        chat $'hi\n' "$AGENT"
        pyexpect "chat --server without the key once one exists: 401 authentication_error, said clearly" \
                'rc == 1 and "401" in e and "authentication_error" in e'
        chat $'hi\n' --api-key hull_wrong "$AGENT"
        pyexpect "chat --server with a wrong key: 401" 'rc == 1 and "401" in e'
        chat $'hello\n' --api-key "$KEY" "$AGENT"
        pyexpect "chat --server --api-key: works" 'rc == 0 and "with a key" in o'
        HULL_SERVE_KEY=$KEY chat $'hello\n' "$AGENT"
        pyexpect "chat --server with \$HULL_SERVE_KEY: works" 'rc == 0 and "with a key" in o'
else
        fail "hull key create makes a key" "no key printed"
fi

chat $'hi\n'
pyexpect "chat --server without an agent or --session: 2" 'rc == 2 and "agent" in e'
chat $'hi\n' '../etc'
pyexpect "chat --server with an id that is a path: 2" 'rc == 2 and "not an agent id" in e'
printf 'hi\n' | timeout 60 "$HULL" chat --server http://127.0.0.1:9 agent_x >"$O" 2>"$E"
RC=$?
pyexpect "chat --server with nothing listening: 1, says so" 'rc == 1 and "hull serve" in e'
exit 0
