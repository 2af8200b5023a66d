# test-mock-model.sh: hull mock-model as a command: its usage and script errors, --listen with a
# free port and the URL as the first line, --record, GET /_mock/requests, the 404 and 405 in each
# API's envelope, --api-key, "then", streams cut into single-byte writes and cut off, SIGTERM and
# SIGINT in the middle of a slow stream, an unpaced stream queued whole without a thread of its own,
# a growing conversation's bodies parsed only where they differ from the one before.
# (The official SDKs drive it in tests/conformance.)
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
CLIENT="$(cd "$(dirname "$0")" && pwd)/mock_client.py"
E=$TEST_TMP/err
O=$TEST_TMP/out

post() { "$PY" "$CLIENT" post "$MURL" "$@"; }
raw() { "$PY" "$CLIENT" raw "$MURL" "$@"; }
# expect NAME FILE PY-EXPR: pass when the Python expression holds over what post or raw printed to
# FILE: s (the status), h (headers, lower-case), t (the body as text), b (the body as JSON, or None),
# and for raw r (sizes: the chunks, ended: the chunked end came).
expect() {
        if "$PY" - "$2" "$3" <<'PYEOF'; then pass "$1"; else fail "$1" "got: $(head -c 400 "$2")"; fi
import json, sys
text = open(sys.argv[1]).read()
first, _, rest = text.partition("\n")
if first.strip().isdigit():
    s = int(first); d = json.loads(rest); h = d["headers"]; t = d["body"]; r = None
else:
    r = json.loads(first); s = r["status"]; h = {}; t = r["body"]
try:
    b = json.loads(t)
except ValueError:
    b = None
sys.exit(0 if eval(sys.argv[2]) else 1)
PYEOF
}

# ---- usage ----
check "--help lists mock-model" sh -c "'$HULL' --help | grep -q '^  mock-model '"
check "mock-model --help shows the usage" sh -c "'$HULL' mock-model --help | grep -q 'Usage: hull mock-model --script FILE'"
for bad in "" "--script" "--bogus" "--script x extra" "--script x --listen nowhere" "--script x --listen 10.1.2.3:0" \
        "--script x --log-level loud"; do
        # shellcheck disable=SC2086
        "$HULL" mock-model $bad >"$O" 2>"$E"; rc=$?
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$E")" -eq 1 ] && grep -q '^hull: mock-model: ' "$E" && [ ! -s "$O" ]; then
                pass "usage error '$bad': one line, exit 2"
        else
                fail "usage error '$bad': one line, exit 2" "rc=$rc err=$(cat "$E")"
        fi
done
"$HULL" mock-model --script x --listen 0.0.0.0:0 2>"$E"
check "beyond loopback it wants --api-key" grep -q 'without --api-key' "$E"

# ---- bad scripts: one line naming the file, the step and the field; nothing listens ----
bad_script() { # NAME CONTENT WANT
        printf '%s' "$2" >"$TEST_TMP/bad.json"
        "$HULL" mock-model --script "$TEST_TMP/bad.json" --listen 127.0.0.1:0 >"$O" 2>"$E"; rc=$?
        if [ "$rc" -eq 1 ] && [ "$(wc -l <"$E")" -eq 1 ] && grep -qF -- "$3" "$E" && [ ! -s "$O" ]; then
                pass "bad script: $1"
        else
                fail "bad script: $1" "rc=$rc err=$(cat "$E") out=$(cat "$O")"
        fi
}
"$HULL" mock-model --script "$TEST_TMP/none.json" >"$O" 2>"$E"; rc=$?
check "a missing script: exit 1, says which" sh -c "[ $rc -eq 1 ] && grep -q 'cannot open the script .*none.json: No such file' '$E'"
bad_script "not JSON (line and column)" '{"steps": [' "bad.json: not JSON: line 1 column"
bad_script "no steps" '{"steps": []}' "bad.json: steps: must be a list of 1 to"
bad_script "a step's field" '{"steps": [{"text": "a"}, {"tool_calls": [{"input": {}}]}]}' \
        "bad.json: step 2: tool_calls[0].name: must be a non-empty string"
bad_script "an unknown field (a typo)" '{"steps": [{"text": "a", "delay": 5}]}' "bad.json: step 1: delay: unknown field"
bad_script "an error with text" '{"steps": [{"text": "a", "error": {"status": 500}}]}' \
        "step 1: error: an error step answers with the error alone"
bad_script "a bad status" '{"steps": [{"error": {"status": 302}}]}' "step 1: error: status must be 200"
bad_script "a malformed placeholder" '{"steps": [{"text": "a"}, {"text": "{{tool_result:0}}"}]}' \
        'step 2: text: "{{tool_result:0}}" is not a placeholder: write {{last_tool_result}}'
mkdir -p "$TEST_TMP/dir.json"
"$HULL" mock-model --script "$TEST_TMP/dir.json" >"$O" 2>"$E"; rc=$?
check "a directory as the script: exit 1" sh -c "[ $rc -eq 1 ] && grep -q 'not a regular file' '$E'"

# ---- serving ----
SCRIPT='{"models": ["m1", "claude-x"], "then": "error", "steps": [
  {"text": "one"},
  {"tool_calls": [{"name": "read", "input": {"path": "a"}}], "usage": {"input_tokens": 3, "output_tokens": 2}},
  {"text": "Grüße, 世界", "writes": "byte", "write_delay_ms": 1},
  {"text": "cut short", "delta_bytes": 2, "cut": {"after_events": 2, "mid_line": true}}]}'
if mock_start "$SCRIPT" --record "$TEST_TMP/rec.jsonl"; then
        pass "--listen 127.0.0.1:0: the first line is 'listening on http://127.0.0.1:PORT'"
        check "the port is a real one" sh -c "! echo '$MURL' | grep -q ':0$'"

        post /v1/chat/completions '{"model": "m1", "messages": []}' >"$O"
        expect "POST /v1/chat/completions: 200 application/json with content-length and x-request-id" "$O" \
                "s == 200 and h['content-type'] == 'application/json' and h['x-request-id'].startswith('req_mock') and int(h['content-length']) == len(t.encode())"
        expect "... the first step's text" "$O" "b['choices'][0]['message']['content'] == 'one'"

        post /v1/messages '{"model": "claude-x", "max_tokens": 5, "messages": []}' anthropic-version:2023-06-01 >"$O"
        expect "POST /v1/messages: the second step, as Anthropic's tool_use, with request-id" "$O" \
                "b['content'][0]['input'] == {'path': 'a'} and b['usage']['output_tokens'] == 2 and h['request-id'].startswith('req_mock')"

        raw /v1/chat/completions '{"model": "m1", "messages": [], "stream": true}' >"$O"
        expect "writes: byte: a 200 stream whose every chunk is one byte, ended by [DONE]" "$O" \
                "s == 200 and len(r['sizes']) > 100 and set(r['sizes']) == {1} and r['ended'] and t.endswith('data: [DONE]\\n\\n')"
        expect "... which carries the text whole (UTF-8 split across writes)" "$O" \
                "''.join(json.loads(l[6:])['choices'][0]['delta'].get('content') or '' for l in t.split('\\n') if l.startswith('data: {')) == 'Grüße, 世界'"

        raw /v1/chat/completions '{"model": "m1", "messages": [], "stream": true}' >"$O"
        expect "cut mid-line: two events, then half a data: line, no chunked end" "$O" \
                "t.count('\\n\\n') == 2 and t.rsplit('\\n\\n', 1)[1].startswith('data: {') and '\\n' not in t.rsplit('\\n\\n', 1)[1] and not r['ended']"

        post /v1/chat/completions '{"model": "m1", "messages": []}' >"$O"
        expect "then: error: a 500 once the steps are used up, in OpenAI's envelope" "$O" \
                "s == 500 and 'steps are used up' in b['error']['message']"

        post /v1/chat/completions '{"model": "gpt-other", "messages": []}' >"$O"
        expect "a model the script does not list: 404 model_not_found" "$O" "s == 404 and b['error']['code'] == 'model_not_found'"
        post /v1/chat/completions 'not json' >"$O"
        expect "a body that is not JSON: 400 invalid_request_error" "$O" "s == 400 and b['error']['type'] == 'invalid_request_error'"
        post /v1/messages '{"model": "claude-x", "messages": []}' anthropic-version:2023-06-01 >"$O"
        check "Anthropic without max_tokens: 400" sh -c "[ \"\$(head -1 '$O')\" = 400 ] && grep -q 'max_tokens: Field required' '$O'"

        post /v1/nope '{}' >"$O"
        expect "an unknown path: 404 in OpenAI's envelope (all four keys)" "$O" \
                "s == 404 and sorted(b['error']) == ['code', 'message', 'param', 'type'] and b['error']['code'] is None"
        post /v1/nope '{}' anthropic-version:2023-06-01 >"$O"
        expect "an unknown path from an Anthropic client: 404 not_found_error with request_id" "$O" \
                "s == 404 and b['type'] == 'error' and b['error']['type'] == 'not_found_error' and b['request_id'].startswith('req_')"
        "$PY" -c "import urllib.request,sys
try: urllib.request.urlopen('$MURL/v1/chat/completions', timeout=30)
except urllib.error.HTTPError as e: print(e.code, e.headers.get('Allow'), 'invalid_request_error' in e.read().decode())" >"$O" 2>&1
        check "GET on a model route: 405 with Allow, in the envelope" grep -qx '405 POST True' "$O"

        "$PY" -c "import json,urllib.request; print(json.dumps(json.load(urllib.request.urlopen('$MURL/_mock/requests', timeout=30))))" >"$TEST_TMP/reqs.json"
        n_lines=$(wc -l <"$TEST_TMP/rec.jsonl")
        check "GET /_mock/requests: every request so far, the same as --record's lines ($n_lines)" "$PY" -c "
import json,sys
a=json.load(open('$TEST_TMP/reqs.json')); b=[json.loads(l) for l in open('$TEST_TMP/rec.jsonl')]
sys.exit(0 if a == b and len(a) == 11 else 1)"
        check "a record holds method, path, headers and the body as JSON" "$PY" -c "
import json,sys
r=[json.loads(l) for l in open('$TEST_TMP/rec.jsonl')][1]
ok = r['method'] == 'POST' and r['path'] == '/v1/messages' and r['headers']['anthropic-version'] == '2023-06-01' \
  and r['body'] == {'model': 'claude-x', 'max_tokens': 5, 'messages': []} and r['step'] == 2 and r['api'] == 'anthropic'
sys.exit(0 if ok else 1)"
        mock_stop TERM; rc=$?
        check "SIGTERM: exit 0" test "$rc" -eq 0
else
        fail "--listen 127.0.0.1:0: the first line is 'listening on http://127.0.0.1:PORT'" "$(cat "$TEST_TMP/mock.err")"
fi

# ---- --api-key ----
if mock_start '{"steps": [{"text": "k"}]}' --api-key sekret; then
        post /v1/chat/completions '{"model": "m", "messages": []}' "Authorization:Bearer wrong" >"$O"
        expect "--api-key: a wrong key, OpenAI: 401 invalid_api_key" "$O" "s == 401 and b['error']['code'] == 'invalid_api_key'"
        post /v1/messages '{"model": "m", "max_tokens": 1, "messages": []}' anthropic-version:2026-10-21 >"$O"
        expect "--api-key: no key, Anthropic: 401 authentication_error" "$O" "s == 401 and b['error']['type'] == 'authentication_error'"
        post /v1/messages '{"model": "m", "max_tokens": 1, "messages": []}' anthropic-version:2026-10-21 x-api-key:sekret >"$O"
        check "--api-key: x-api-key accepted" sh -c "[ \"\$(head -1 '$O')\" = 200 ]"
        post /v1/chat/completions '{"model": "m", "messages": []}' "Authorization:Bearer sekret" >"$O"
        check "--api-key: the Bearer key accepted" sh -c "[ \"\$(head -1 '$O')\" = 200 ]"
        "$PY" -c "import urllib.request
try: urllib.request.urlopen('$MURL/_mock/requests', timeout=30); print('open')
except urllib.error.HTTPError as e: print(e.code)" >"$O" 2>&1
        check "--api-key: GET /_mock/requests wants the key too" grep -qx 401 "$O"
        mock_stop INT; rc=$?
        check "SIGINT: exit 0" test "$rc" -eq 0
else
        fail "--api-key: the mock starts" "$(cat "$TEST_TMP/mock.err")"
fi

# ---- a signal in the middle of a slow stream and of a delayed answer ----
if mock_start '{"steps": [{"text": "abcdef", "delta_bytes": 1, "event_delay_ms": 600000}, {"text": "late", "delay_ms": 600000}]}'; then
        # requests_at_least N: wait (20 s at most) until the mock recorded N requests
        requests_at_least() {
                local i
                for i in $(seq 1 200); do
                        "$PY" -c "import urllib.request,json,sys; sys.exit(0 if len(json.load(urllib.request.urlopen('$MURL/_mock/requests', timeout=30))) >= $1 else 1)" && return 0
                        sleep 0.1
                done
                return 1
        }
        raw /v1/chat/completions '{"model": "m", "messages": [], "stream": true}' >"$TEST_TMP/slow1" 2>&1 &
        c1=$!
        pids+=("$c1")
        requests_at_least 1 # the stream has the first step
        post /v1/chat/completions '{"model": "m", "messages": []}' >"$TEST_TMP/slow2" 2>&1 &
        c2=$!
        pids+=("$c2")
        requests_at_least 2
        mock_stop TERM; rc=$?
        check "SIGTERM with a stream and a delayed answer in flight: exit 0" test "$rc" -eq 0
        wait "$c1" "$c2" 2>/dev/null
        if grep -q 'chat.completion.chunk' "$TEST_TMP/slow1"; then pass "... the stream had begun (its first event came)"
        else fail "... the stream had begun (its first event came)" "$(head -c 600 "$TEST_TMP/slow1")"; fi
fi

# ---- templates: the request's tool results quoted in the answer; received_at_us in the record ----
T='{"steps": [{"text": ["Line 2: ", "{{last_tool_result|line:2|trim}}", "."], "delta_bytes": 2, "times": 2},
  {"tool_calls": [{"name": "w", "input": {"c": "{{tool_result:1}}", "l": "{{last_tool_result}}"}}], "delta_bytes": 3, "times": 2}]}'
OA_MSGS='[{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "c1", "content": "a\n  b \"q\" \\ é  \nc"},
  {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}]'
AN_MSGS='[{"role": "user", "content": "go"}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
  "content": "a\n  b \"q\" \\ é  \nc"}, {"type": "tool_result", "tool_use_id": "t2", "content": "x\ny"}]}]'
before_us=$("$PY" -c 'import time; print(time.time_ns() // 1000)')
if mock_start "$T" --record "$TEST_TMP/rec-t.jsonl"; then
        post /v1/chat/completions "{\"model\": \"m\", \"messages\": $OA_MSGS}" >"$O"
        expect "templates: OpenAI whole: {{last_tool_result|line:2|trim}} is the last tool message's line 2" "$O" \
                "s == 200 and b['choices'][0]['message']['content'] == 'Line 2: y.'"
        raw /v1/messages "{\"model\": \"m\", \"max_tokens\": 9, \"stream\": true, \"messages\": $AN_MSGS}" \
                anthropic-version:2023-06-01 >"$O"
        expect "templates: Anthropic streamed: the last tool_result's line 2, in 2-byte deltas" "$O" \
                "''.join(json.loads(l[6:])['delta'].get('text', '') for l in t.split('\\n') if l.startswith('data: {') and json.loads(l[6:])['type'] == 'content_block_delta') == 'Line 2: y.'"
        raw /v1/chat/completions "{\"model\": \"m\", \"stream\": true, \"messages\": $OA_MSGS}" >"$O"
        expect "templates: OpenAI streamed call: the arguments' pieces concatenate to JSON with the results escaped" "$O" \
                "json.loads(''.join(tc['function'].get('arguments', '') for l in t.split('\\n') if l.startswith('data: {') for c in json.loads(l[6:])['choices'] for tc in c['delta'].get('tool_calls', []))) == {'c': 'a\\n  b \"q\" \\\\ é  \\nc', 'l': 'x\\ny'}"
        post /v1/messages "{\"model\": \"m\", \"max_tokens\": 9, \"messages\": $AN_MSGS}" anthropic-version:2023-06-01 >"$O"
        expect "templates: Anthropic whole call: the input with {{tool_result:1}} and {{last_tool_result}}" "$O" \
                "s == 200 and b['content'][0]['input'] == {'c': 'a\\n  b \"q\" \\\\ é  \\nc', 'l': 'x\\ny'}"
        mock_stop TERM
        after_us=$("$PY" -c 'import time; print(time.time_ns() // 1000)')
        check "received_at_us: every record's, in microseconds between the start and the end, in request order" "$PY" -c "
import json,sys
r=[json.loads(l) for l in open('$TEST_TMP/rec-t.jsonl')]
u=[x['received_at_us'] for x in r]
ok = len(r) == 4 and all(isinstance(x, int) for x in u) and $before_us <= u[0] and u == sorted(u) and u[-1] <= $after_us \\
  and all(x['received_at_us'] <= x['time_ms'] * 1000 + 999 for x in r)
sys.exit(0 if ok else 1)"
else
        fail "templates: the mock starts" "$(cat "$TEST_TMP/mock.err")"
fi

# ---- a growing conversation: each body parsed by jansson only where it differs from the one before
# (the log's parsed=BYTES/LENGTH), the answers' templates, the records and a broken body as before ----
if mock_start '{"then": "repeat", "steps": [{"text": "got {{last_tool_result}}"}]}' --record "$TEST_TMP/rec-g.jsonl"; then
        "$PY" - "$MURL" >"$TEST_TMP/grow.json" 2>&1 <<'PYEOF'
import json, sys, urllib.request
url = sys.argv[1]
def ask(body):
    rq = urllib.request.Request(url + "/v1/messages", data=body.encode(),
                                headers={"anthropic-version": "2023-06-01", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(rq, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
msgs, sent, answers = [], [], []
for i in range(12):
    msgs += [{"role": "user", "content": "turn %d" % i},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "t%d" % i, "name": "glob", "input": {"pattern": "*"}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t%d" % i, "content": "result %d" % i}]}]
    body = json.dumps({"model": "m", "max_tokens": 99, "messages": msgs,
                       "tools": [{"name": "glob", "input_schema": {"type": "object"}}], "stream": False})
    sent.append(body)
    s, a = ask(body)
    answers.append([s, a["content"][0]["text"]])
s, a = ask(sent[-1][:-1] + ",}")
print(json.dumps({"sent": sent, "answers": answers, "broken": [s, a["error"]["message"]]}))
PYEOF
        mock_stop TERM
        check "a growing conversation: each request's tool result in its templated answer; the same body broken: 400" "$PY" -c "
import json,sys
g=json.load(open('$TEST_TMP/grow.json'))
ok = g['answers'] == [[200, 'got result %d' % i] for i in range(12)] and g['broken'] == [400, 'The request body is not valid JSON.']
sys.exit(0 if ok else 1)"
        check "... every body recorded as sent, byte for byte" "$PY" -c "
import json,sys
g=json.load(open('$TEST_TMP/grow.json')); lines=open('$TEST_TMP/rec-g.jsonl').read().splitlines()
ok = len(lines) == 13 and all(l.endswith(',\"body\":' + b + '}') for l, b in zip(lines, g['sent']))
sys.exit(0 if ok else 1)"
        check "... jansson given only what each request adds to the one before (the keys again, each value once)" "$PY" -c "
import json,re,sys
g=json.load(open('$TEST_TMP/grow.json'))
p=[(int(x), int(l)) for _, x, l in sorted(re.findall(r'id=req_mock([0-9]+) .* parsed=([0-9]+)/([0-9]+)', open('$TEST_TMP/mock.err').read()))]
n=[len(b.encode()) for b in g['sent']]
ok = [l for _, l in p] == n and all(p[i][0] <= n[i] - n[i - 1] + 64 for i in range(1, 12)) and sum(x for x, _ in p) * 4 < sum(n)
sys.exit(0 if ok else 1)"
else
        fail "a growing conversation: the mock starts" "$(cat "$TEST_TMP/mock.err")"
fi

# ---- unpaced streams: queued whole by the connection's thread, no thread made for each ----
if ! command -v strace >/dev/null; then
        skip "unpaced streams: no thread each" "no strace"
elif mock_start '{"then": "repeat", "steps": [{"text": "same bytes", "delta_bytes": 3}]}'; then
        strace -f -e trace=clone,clone3 -o "$TEST_TMP/clones" -p "$MOCK_PID" 2>"$TEST_TMP/strace.err" &
        spid=$!
        wait_strace_attached "$TEST_TMP/strace.err" "$spid"
        for i in 1 2 3 4 5; do
                raw /v1/messages '{"model": "m", "max_tokens": 9, "stream": true, "messages": []}' anthropic-version:2023-06-01 >"$O.$i"
        done
        kill -INT "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
        expect "unpaced streams: a whole Anthropic stream, message_stop last" "$O.5" \
                "s == 200 and r['ended'] and t.rstrip().split('\\n')[-2] == 'event: message_stop' and t.count('event: content_block_delta') == 4"
        if grep -q attached "$TEST_TMP/strace.err"; then
                n=$(grep -c 'clone' "$TEST_TMP/clones")
                check "unpaced streams: 5 streamed answers, no thread made for them ($n clones)" test "$n" -eq 0
        else
                skip "unpaced streams: no thread each" "strace cannot attach"
        fi
        mock_stop TERM
else
        fail "unpaced streams: the mock starts" "$(cat "$TEST_TMP/mock.err")"
fi
