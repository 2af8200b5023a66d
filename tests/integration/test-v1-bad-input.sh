# test-v1-bad-input.sh: hull serve's /v1 API given bad input: malformed JSON, wrong types, unknown
# fields, an oversized body (413), unknown ids (404), events for an archived session (409), a
# missing or unsupported anthropic-version, anthropic-beta without managed-agents-2026-04-01, bad
# queries, and 10 concurrent sends. Each answer has the right status and the error envelope
# {type:"error", error:{type, message}, request_id} with x-should-retry: false; afterwards the
# daemon still serves and the session's events hold exactly what was accepted, in a gap-free
# sequence.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

if ! mock_start '{"steps": [{"text": "ok"}]}' --record "$TEST_TMP/requests.jsonl" --log-level error; then
        fail "bad input: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log"; then
        fail "bad input: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
if ! make_session; then
        fail "bad input: an agent, an environment and a session are made" "$(head -c 500 "$O")"
        exit 1
fi
pass "bad input: an agent, an environment and a session are made"

# ---- malformed JSON, wrong types, unknown fields ----
v1 POST /v1/agents '{"name": "a", "model": '
expect_error "malformed JSON (cut): 400 invalid_request_error" 400 invalid_request_error
v1 POST /v1/agents '{"name": "a" "model": "m"}'
expect_error "malformed JSON (no comma): 400" 400 invalid_request_error
v1 POST /v1/agents '[1, 2]'
expect_error "a JSON array instead of an object: 400" 400 invalid_request_error
v1 POST /v1/agents ''
expect_error "an empty body: 400" 400 invalid_request_error
printf '{"name": "\xff\xfe", "model": "%s"}' "$MODEL" >"$TEST_TMP/badutf8.json"
v1 POST /v1/agents "@$TEST_TMP/badutf8.json"
expect_error "invalid UTF-8: 400" 400 invalid_request_error
head -c 200000 /dev/zero | tr '\0' '[' >"$TEST_TMP/deep.json"
v1 POST /v1/agents "@$TEST_TMP/deep.json"
expect_error "200,000 nested arrays: 400" 400 invalid_request_error
v1 POST /v1/agents "{\"name\": 5, \"model\": \"$MODEL\"}"
expect_error "wrong type: name a number: 400" 400 invalid_request_error
v1 POST /v1/agents '{"name": "a"}'
expect_error "missing model: 400" 400 invalid_request_error
v1 POST /v1/agents "{\"name\": \"a\", \"model\": \"$MODEL\", \"tools\": \"glob\"}"
expect_error "wrong type: tools a string: 400" 400 invalid_request_error
v1 POST /v1/agents "{\"name\": \"a\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"agent_toolset_20260401\", \"configs\": [{\"name\": \"glob\", \"permission_policy\": {\"type\": \"sometimes\"}}]}]}"
expect_error "an unknown permission policy: 400" 400 invalid_request_error
v1 POST /v1/agents "{\"name\": \"a\", \"model\": \"$MODEL\", \"metadata\": {\"k\": 5}}"
expect_error "metadata with a non-string value: 400" 400 invalid_request_error
v1 POST /v1/agents "{\"name\": \"$(head -c 300 /dev/zero | tr '\0' n)\", \"model\": \"$MODEL\"}"
expect_error "a 300-byte name (at most 256): 400" 400 invalid_request_error
v1 POST /v1/agents "{\"name\": \"a\", \"model\": \"$MODEL\", \"bogus_field\": 1}"
expect_error "an unknown field: 400" 400 invalid_request_error
expect "the unknown field is named in the message" "'bogus_field' in b['error']['message']"
v1 POST /v1/environments '{"name": "e", "config": {"type": "moon"}}'
expect_error "environment: an unknown config type: 400" 400 invalid_request_error
v1 POST /v1/sessions "{\"agent\": \"$AGENT\"}"
expect_error "session: no environment_id: 400" 400 invalid_request_error
v1 POST /v1/sessions "{\"agent\": 7, \"environment_id\": \"$ENV\"}"
expect_error "session: agent a number: 400" 400 invalid_request_error
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\", \"colour\": \"red\"}"
expect_error "session: an unknown field: 400" 400 invalid_request_error
v1 POST "/v1/agents/$AGENT" '{"version": "one"}'
expect_error "agent update: version a string: 400" 400 invalid_request_error

S=/v1/sessions/$SESSION/events
v1 POST "$S" '{"events": "hello"}'
expect_error "events: not a list: 400" 400 invalid_request_error
v1 POST "$S" '{"events": []}'
expect_error "events: an empty list: 400" 400 invalid_request_error
v1 POST "$S" '{"events": [{"type": "user.bogus"}]}'
expect_error "events: an unknown event type: 400" 400 invalid_request_error
v1 POST "$S" '{"events": [{"type": "user.message", "content": [{"type": "text", "text": 5}]}]}'
expect_error "events: text a number: 400" 400 invalid_request_error
v1 POST "$S" '{"events": [{"type": "user.message", "content": [{"type": "text", "text": "a"}], "extra": true}]}'
expect_error "events: an unknown field on an event: 400" 400 invalid_request_error
EV51=$("$PY" -c 'import json; print(json.dumps({"events": [{"type": "user.message", "content": [{"type": "text", "text": "x"}]}] * 51}))')
v1 POST "$S" "$EV51"
expect_error "events: 51 in one send (at most 50): 400" 400 invalid_request_error
v1 POST "$S" '{"events": [{"type": "user.message", "content": [{"type": "text", "text": "first"}]}, {"type": "user.bogus"}]}'
expect_error "events: a batch with one bad event is refused whole: 400" 400 invalid_request_error
v1 POST "$S" '{"events": [{"type": "session.status_idle"}]}'
expect_error "events: a server event type sent by the client: 400" 400 invalid_request_error
v1 POST "$S" '{"events": [{"type": "user.custom_tool_result", "custom_tool_use_id": "sevt_nothere", "content": [{"type": "text", "text": "x"}]}]}'
expect_error "events: a custom tool result for no pending call: 400" 400 invalid_request_error
v1 POST "$S" '{"events": [{"type": "user.tool_confirmation", "tool_use_id": "sevt_nothere", "result": "allow"}]}'
expect_error "events: a confirmation for no pending call: 400" 400 invalid_request_error
v1 POST "$S" '{"events": [{"type": "user.tool_confirmation", "tool_use_id": "sevt_nothere", "result": "maybe"}]}'
expect_error "events: a confirmation result neither allow nor deny: 400" 400 invalid_request_error

# ---- oversized body: > 8 MiB is 413 ----
"$PY" "$V1_CLIENT" big "$URL/v1/agents" $((9 * 1024 * 1024)) >"$O" 2>"$TEST_TMP/v1.err" || printf '0\n{"headers": {}, "body": ""}\n' >"$O"
expect "a 9 MiB body: 413 in the envelope" "s == 413 and isinstance(b, dict) and b.get('type') == 'error' and isinstance(b.get('error'), dict) and isinstance(b['error'].get('type'), str) and b['error'].get('message') and b.get('request_id') and h.get('x-should-retry') == 'false'"
"$PY" "$V1_CLIENT" big "$URL$S" $((9 * 1024 * 1024)) >"$O" 2>"$TEST_TMP/v1.err" || printf '0\n{"headers": {}, "body": ""}\n' >"$O"
expect "a 9 MiB events body: 413" "s == 413 and isinstance(b, dict) and b.get('type') == 'error'"

# ---- unknown ids and routes: 404 not_found_error ----
for p in /v1/agents/agent_nothere000000 /v1/environments/env_nothere000000 /v1/sessions/sesn_nothere000000 \
        /v1/sessions/sesn_nothere000000/events /v1/agents/agent_nothere000000/versions "/v1/agents/$AGENT?version=99"; do
        v1 GET "$p"
        expect_error "GET $p: 404 not_found_error" 404 not_found_error
done
v1 POST /v1/sessions/sesn_nothere000000/events "$(user_message hi)"
expect_error "POST events to an unknown session: 404" 404 not_found_error
v1 POST /v1/sessions "{\"agent\": \"agent_nothere000000\", \"environment_id\": \"$ENV\"}"
expect "a session of an unknown agent: 404 (or 400), the envelope" "(s == 404 and b['error']['type'] == 'not_found_error' or s == 400 and b['error']['type'] == 'invalid_request_error') and b['request_id'] and h.get('x-should-retry') == 'false'"
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"env_nothere000000\"}"
expect "a session in an unknown environment: 404 (or 400), the envelope" "(s == 404 and b['error']['type'] == 'not_found_error' or s == 400 and b['error']['type'] == 'invalid_request_error') and b['request_id'] and h.get('x-should-retry') == 'false'"
v1 GET /v1/nothing
expect_error "an unknown /v1 route: 404" 404 not_found_error
v1 GET /v1/agents/..%2F..%2Fetc%2Fpasswd
expect "an id with an encoded path: 404 (or 400), the envelope" "(s == 404 and b['error']['type'] == 'not_found_error' or s == 400 and b['error']['type'] == 'invalid_request_error') and b['request_id'] and h.get('x-should-retry') == 'false'"

# ---- ids that are not UTF-8 once percent-decoded: 404 in the envelope on every route ----
# (jansson refuses a string that is not UTF-8: the id quoted in a message once made every such
# answer a 500 "out of memory")
BAD=%ff%fe
while read -r m p body; do
        v1 "$m" "$p" "${body:--}" </dev/null
        expect "$m $p (not UTF-8): 404 not_found_error in the envelope" "$(envelope 404 not_found_error) and 'out of memory' not in b['error']['message']"
done <<EOF
GET /v1/agents/$BAD
POST /v1/agents/$BAD {}
POST /v1/agents/$BAD/archive
GET /v1/agents/$BAD/versions
GET /v1/environments/$BAD
POST /v1/environments/$BAD {}
DELETE /v1/environments/$BAD
POST /v1/environments/$BAD/archive
GET /v1/sessions/$BAD
POST /v1/sessions/$BAD {}
DELETE /v1/sessions/$BAD
POST /v1/sessions/$BAD/archive
GET /v1/sessions/$BAD/events
POST /v1/sessions/$BAD/events {"events":[{"type":"user.message","content":[{"type":"text","text":"hi"}]}]}
GET /v1/sessions/$BAD/events/stream
GET /v1/sessions/$BAD/handles
GET /v1/sessions/$BAD/handles/$BAD
GET /v1/sessions/$SESSION/handles/$BAD
GET /v1/sessions/$BAD/records
GET /v1/sessions/$BAD/audit_log
GET /v1/sessions/$BAD/network_log
DELETE /v1/api-keys/$BAD
GET /v1/sessions/%0a%1b
EOF
# a message that cuts the client's text inside a character ("%.64s" of 63 bytes, then an é)
v1 GET "/v1/sessions/$SESSION/handles/$(printf 'a%.0s' $(seq 63))%c3%a9"
expect "a handle name cut inside a character in a message: 404 in the envelope" "$(envelope 404 not_found_error)"

# ---- headers: anthropic-version, anthropic-beta ----
v1 GET /v1/agents - "anthropic-version:"
expect_error "no anthropic-version: 400" 400 invalid_request_error
v1 GET /v1/agents - "anthropic-version: 2020-01-01"
expect_error "anthropic-version 2020-01-01: 400" 400 invalid_request_error
v1 GET /v1/agents - "anthropic-version: 2023-06-01"
expect "anthropic-version 2023-06-01 (SDK 0.x): 200" "s == 200 and isinstance(b.get('data'), list)"
v1 GET /v1/agents - "anthropic-version: 2026-10-21"
expect "anthropic-version 2026-10-21 (SDK 1.x): 200" "s == 200"
v1 GET /v1/agents - "anthropic-beta:"
expect_error "no anthropic-beta: 400" 400 invalid_request_error
v1 GET /v1/agents - "anthropic-beta: files-api-2025-04-14"
expect_error "anthropic-beta without managed-agents-2026-04-01: 400" 400 invalid_request_error
v1 GET /v1/agents - "anthropic-beta: managed-agents-2025-01-01"
expect_error "anthropic-beta with another managed-agents date: 400" 400 invalid_request_error
v1 GET /v1/agents - "anthropic-beta: files-api-2025-04-14,managed-agents-2026-04-01"
expect "anthropic-beta as a list containing it: 200" "s == 200"
v1 GET "/v1/agents?beta=true"
expect "?beta=true is ignored: 200" "s == 200"

# ---- bad queries ----
v1 GET "/v1/agents?limit=abc"
expect_error "limit=abc: 400" 400 invalid_request_error
v1 GET "/v1/agents?limit=-1"
expect_error "limit=-1: 400" 400 invalid_request_error
v1 GET "/v1/agents?page=not-a-cursor"
expect_error "a forged page cursor: 400" 400 invalid_request_error
v1 GET "/v1/sessions/$SESSION/events/stream?event_deltas%5B%5D=agent.bogus"
expect_error "stream: an unknown delta type is refused before the stream opens: 400" 400 invalid_request_error
v1 GET "/v1/sessions/$SESSION/events/stream" - "last-event-id: banana"
expect_error "stream: Last-Event-ID not a number: 400" 400 invalid_request_error

# ---- nothing of the above was stored ----
v1 GET "/v1/agents?limit=100"
expect "no agent stored by a refused create (only the one made)" "s == 200 and [a['id'] for a in b['data']] == ['$AGENT']"
v1 GET "/v1/agents/$AGENT"
expect "the agent is unchanged (version 1)" "s == 200 and b['version'] == 1"
v1 GET "/v1/sessions?limit=100"
expect "no session stored by a refused create" "s == 200 and [x['id'] for x in b['data']] == ['$SESSION']"
events_json "$SESSION" >"$TEST_TMP/ev0.json" 2>"$TEST_TMP/v1.err"
pycheck "no event stored by a refused send" 'import json,sys; e=json.load(open(sys.argv[1])); e and print("stored:", [x["type"] for x in e]); sys.exit(0 if e == [] else 1)' "$TEST_TMP/ev0.json"

# ---- 10 concurrent sends: all accepted, distinct ids, all stored, seqs gap-free ----
"$PY" "$V1_CLIENT" parallel 10 "$URL$S" "$(user_message 'at once')" >"$TEST_TMP/par.json" 2>"$TEST_TMP/v1.err"
pycheck "10 concurrent sends: all 200 with one event each, 10 distinct ids" '
import json, sys
r = json.load(open(sys.argv[1]))
ids = [json.loads(b)["data"][0]["id"] for s, b in r if s == 200 and len(json.loads(b)["data"]) == 1]
ok = len(r) == 10 and len(ids) == 10 and len(set(ids)) == 10
ok or print("answers:", [(s, b[:120]) for s, b in r])
sys.exit(0 if ok else 1)' "$TEST_TMP/par.json"
wait_idle "$SESSION" 180 || fail "10 concurrent sends: the session idles again" "$(head -c 300 "$O")"
# settled: the last event is an idle and two reads a second apart agree
for i in $(seq 1 60); do
        events_json "$SESSION" >"$TEST_TMP/ev1.json" 2>/dev/null
        sleep 1
        events_json "$SESSION" >"$TEST_TMP/ev2.json" 2>/dev/null
        cmp -s "$TEST_TMP/ev1.json" "$TEST_TMP/ev2.json" &&
                "$PY" -c 'import json,sys; e=json.load(open(sys.argv[1])); sys.exit(0 if e and e[-1]["type"]=="session.status_idle" else 1)' "$TEST_TMP/ev2.json" && break
done
pycheck "10 concurrent sends: every accepted id stored once, as a user.message" '
import json, sys
sent = [json.loads(b)["data"][0]["id"] for s, b in json.load(open(sys.argv[1]))]
ev = json.load(open(sys.argv[2]))
ids = [e["id"] for e in ev]
users = [e["id"] for e in ev if e["type"] == "user.message"]
ok = sorted(users) == sorted(sent) and len(ids) == len(set(ids))
ok or print("sent:", sorted(sent), "stored user.message:", sorted(users), "duplicates:", len(ids) - len(set(ids)))
sys.exit(0 if ok else 1)' "$TEST_TMP/par.json" "$TEST_TMP/ev2.json"
N=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$TEST_TMP/ev2.json")
: >"$TEST_TMP/sse.jsonl"
"$PY" "$V1_CLIENT" sse "$URL$S/stream" "$TEST_TMP/sse.jsonl" "last-event-id: 0" &
SSE_PID=$!
pids+=("$SSE_PID")
for i in $(seq 1 300); do
        [ "$(grep -c '"event"' "$TEST_TMP/sse.jsonl")" -ge "$N" ] && break
        sleep 0.1
done
kill "$SSE_PID" 2>/dev/null
pycheck "10 concurrent sends: replay from 0 gives seq 1..N, gap-free, each the listed event in order" '
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]) if "\"event\"" in l]
fr = [f for f in fr if f["event"] != "ping"]
ev = json.load(open(sys.argv[2]))
got = [(int(f["id"]), f["event"], json.loads(f["data"])["id"]) for f in fr]
want = [(i + 1, e["type"], e["id"]) for i, e in enumerate(ev)]
got == want or print("replayed:", got[:40], "listed:", want[:40])
sys.exit(0 if got == want else 1)' "$TEST_TMP/sse.jsonl" "$TEST_TMP/ev2.json"

# ---- archived: sending is 409, nothing stored ----
v1 POST "/v1/sessions/$SESSION/archive"
expect "archive the session: 200, archived_at set" "s == 200 and b['archived_at']"
v1 POST "$S" "$(user_message 'too late')"
expect_error "events for an archived session: 409 conflict_error" 409 conflict_error
events_json "$SESSION" >"$TEST_TMP/ev3.json" 2>/dev/null
check "nothing stored for the archived session" cmp -s "$TEST_TMP/ev2.json" "$TEST_TMP/ev3.json"

# ---- the daemon still serves ----
v1 GET /healthz
expect "the daemon still serves /healthz" "s == 200"
v1 GET "/v1/sessions/$SESSION"
expect "the daemon still serves /v1" "s == 200 and b['id'] == '$SESSION'"
check "hull serve is still running" kill -0 "$SERVER_PID"
check "no sanitizer report in hull serve's log" sh -c "! grep -Eq 'AddressSanitizer|runtime error:' '$TEST_TMP/serve.log'"

# ---- a key too short, once /v1 keys are in use: said so, and 'hull key create' named ----
v1 POST /v1/api-keys '{"name": "bad-input"}'
expect "a key is made" "s == 200 and b['key'].startswith('hull_')"
V1_KEY=abc123 v1 GET /v1/agents
expect "a 6-character key: 401, said to be shorter than the minimum, 'hull key create' named" "$(envelope 401 authentication_error) and 'shorter than the minimum of 32' in b['error']['message'] and 'hull key create' in b['error']['message'] and 'hull token new' not in b['error']['message']"
V1_KEY="hull_$(printf '0%.0s' $(seq 64))" v1 GET /v1/agents
expect "an unknown key: 401, 'hull key create' named" "$(envelope 401 authentication_error) and 'unknown' in b['error']['message'] and 'shorter' not in b['error']['message'] and 'hull key create' in b['error']['message']"
