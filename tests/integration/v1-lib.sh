# v1-lib.sh: sourced (after tests/lib.sh) by the /v1 API's integration tests: requests through
# v1_client.py and checks of their answers, the error envelope among them.
PY=/usr/bin/python3
V1_CLIENT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/v1_client.py"
O=$TEST_TMP/v1.out
MODEL=claude-sonnet-4-6
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER OPENAI_BASE_URL \
        ANTHROPIC_BASE_URL 2>/dev/null

# v1 METHOD PATH [BODY|@FILE|-] [NAME:VALUE ...]: a request to $URL; its answer in $O.
v1() {
        local m=$1 p=$2
        shift 2
        "$PY" "$V1_CLIENT" call "$m" "$URL$p" "$@" >"$O" 2>"$TEST_TMP/v1.err" ||
                printf '0\n{"headers": {}, "body": "v1_client.py failed: %s"}\n' "$(tr -d '"\\\n' <"$TEST_TMP/v1.err" | tail -c 300)" >"$O"
}

# expect NAME PY-EXPR: pass when the expression holds over the last answer ($O): s (status),
# h (headers, lower-case), t (the body text), b (the body as JSON, or None).
expect() {
        if "$PY" - "$O" "$2" <<'PYEOF'; then pass "$1"; else fail "$1" "got: $(head -c 500 "$O" | tr '\n' ' ')"; fi
import json, sys
first, _, rest = open(sys.argv[1]).read().partition("\n")
s = int(first)
d = json.loads(rest)
h, t = d["headers"], d["body"]
try:
    b = json.loads(t)
except ValueError:
    b = None
sys.exit(0 if eval(sys.argv[2]) else 1)
PYEOF
}

# pycheck NAME CODE [ARG...]: pass when the Python CODE (ARGs in sys.argv[1:]) exits 0; else fail
# with what it printed (say why before exiting 1) and the end of its traceback, if any.
pycheck() {
        local name=$1 code=$2 out
        shift 2
        if out=$("$PY" -c "$code" "$@" 2>&1); then pass "$name"; else fail "$name" "$(printf '%s' "$out" | tail -c 700 | tr '\n' ' ')"; fi
}

# ENVELOPE STATUS TYPE: the expression of an error answer: that status, JSON, the envelope
# {type:"error", error:{type, message}, request_id} and x-should-retry: false.
envelope() {
        printf '%s' "s == $1 and h.get('content-type', '').startswith('application/json') and isinstance(b, dict) and b.get('type') == 'error' and isinstance(b.get('error'), dict) and b['error'].get('type') == '$2' and isinstance(b['error'].get('message'), str) and len(b['error']['message']) > 0 and isinstance(b.get('request_id'), str) and len(b['request_id']) > 0 and h.get('x-should-retry') == 'false'"
}

# expect_error NAME STATUS TYPE: the last answer is that error in the envelope.
expect_error() {
        expect "$1" "$(envelope "$2" "$3")"
}

# field KEY: a top-level field of the last answer's JSON body.
field() {
        "$PY" -c 'import json,sys; f=open(sys.argv[1]); f.readline(); b=json.loads(json.load(f)["body"]); print(b[sys.argv[2]])' "$O" "$1"
}

# events_json SESSION: every event of the session (GET .../events, all pages), a JSON array.
events_json() {
        "$PY" "$V1_CLIENT" events "$URL" "$1"
}

# wait_streamed FILE SESSION [SECONDS]: until the SSE reader's FILE holds the session's last logged
# event (by its id; default 60 s); 1 if not. A turn is idle in the store a moment before its last
# events reach a reader, and the reader may be slower still on a busy machine.
wait_streamed() {
        local last i
        last=$(events_json "$2" 2>/dev/null | "$PY" -c 'import json,sys; e=json.load(sys.stdin); print(e[-1]["id"] if e else "")' 2>/dev/null)
        [ -n "$last" ] || return 1
        for i in $(seq 1 $((${3:-60} * 10))); do
                grep -qF "$last" "$1" && return 0
                sleep 0.1
        done
        return 1
}

# wait_idle SESSION [SECONDS]: until GET /v1/sessions/SESSION says idle (default 90 s); 1 if not.
wait_idle() {
        local i
        for i in $(seq 1 $((${2:-90} * 5))); do
                v1 GET "/v1/sessions/$1"
                [ "$(head -1 "$O")" = 200 ] && [ "$(field status 2>/dev/null)" = idle ] && return 0
                sleep 0.2
        done
        return 1
}

# wait_turn_idle SESSION [SECONDS]: until the session's log ends with a session.status_idle that
# follows its last user.message (default 90 s); 1 if not. Unlike wait_idle, not fooled by the idle
# status a node reads before another node's turn has logged its running.
wait_turn_idle() {
        local i
        for i in $(seq 1 $((${2:-90} * 5))); do
                events_json "$1" 2>/dev/null | "$PY" -c '
import json, sys
t = [e.get("type") for e in json.load(sys.stdin)]
u = max((i for i, x in enumerate(t) if x == "user.message"), default=-1)
sys.exit(0 if t and t[-1] == "session.status_idle" and len(t) - 1 > u else 1)' && return 0
                sleep 0.2
        done
        return 1
}

# serve_v1 LOG [ARGS...]: hull serve (start_server) with its model at the mock ($MURL).
serve_v1() {
        local log=$1
        shift
        # shellcheck disable=SC2086 # HULL_SERVE_ARGS: extra arguments, split on blanks
        start_server "$log" --model "$MODEL" --provider anthropic --base-url "$MURL" --api-key sk-mock ${HULL_SERVE_ARGS:-} "$@"
}

# make_session: an agent (glob only), an environment and a session; sets AGENT, ENV, SESSION.
make_session() {
        AGENT="" ENV="" SESSION=""
        v1 POST /v1/agents "{\"name\": \"t\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"agent_toolset_20260401\", \"default_config\": {\"enabled\": false}, \"configs\": [{\"name\": \"glob\", \"enabled\": true}]}]}"
        AGENT=$(field id 2>/dev/null) || return 1
        v1 POST /v1/environments '{"name": "t", "config": {"type": "cloud", "networking": {"type": "unrestricted"}}}'
        ENV=$(field id 2>/dev/null) || return 1
        v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
        SESSION=$(field id 2>/dev/null) || return 1
        [ -n "$AGENT" ] && [ -n "$ENV" ] && [ -n "$SESSION" ]
}

user_message() { # TEXT
        printf '{"events": [{"type": "user.message", "content": [{"type": "text", "text": "%s"}]}]}' "$1"
}
