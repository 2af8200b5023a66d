# test-v1-console-api.sh: hull's /v1 extensions for the console: a session whose run_python saves
# a table, a json and a text handle; GET .../handles lists them with their summaries, GET
# .../handles/NAME previews each (a table's columns and first rows, a json's shape, a text's first
# bytes); GET .../records gives the audit log's lines and parsed entries whose record digests and
# chain check out (recomputed here from the documented encoding), and GET .../audit_log is the
# file hull verify accepts; unknown sessions and handles are 404; a key is needed once one exists;
# agent.tool_result carries hull_duration_ms for the timeline.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

CODE='import hull\nhull.save(\"cities\", [{\"city\": \"Oslo\", \"n\": 3}, {\"city\": \"Lima\", \"n\": 7}, {\"city\": \"Pune\", \"n\": 1}])\nhull.save(\"cfg\", {\"items\": [{\"a\": 1}], \"total\": 1})\nhull.save(\"notes\", \"<script>alert(1)</script> \" * 200)\nprint(\"saved\")'
SCRIPT='{"then": "repeat", "steps": [
  {"tool_calls": [{"name": "run_python", "input": {"code": "'"$CODE"'"}, "id": "toolu_py1"}]},
  {"text": "done: {{last_tool_result}}"},
  {"text": "plain"}
]}'
if ! mock_start "$SCRIPT" --log-level error; then
        fail "console-api: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log" --audit-dir "$TEST_TMP/audit"; then
        fail "console-api: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
v1 POST /v1/agents "{\"name\": \"py\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"hull_toolset_20261201\"}]}"
AGENT=$(field id)
v1 POST /v1/environments '{"name": "t"}'
ENV=$(field id)
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
SESSION=$(field id)
B=/v1/sessions/$SESSION

v1 GET "$B/handles"
expect "console-api: a session that never opened a sandbox lists no handles (state none)" \
        "s == 200 and b['data'] == [] and b['has_more'] is False and b['sandbox'] == {'state': 'none'}"
v1 GET "$B/audit_log"
expect_error "console-api: ... and has no audit log (404)" 404 not_found_error
v1 GET "$B/records"
expect "console-api: ... and no records" "s == 200 and b['data'] == [] and b['sandboxes'] == []"

v1 POST "$B/events" "$(user_message "save things")"
wait_idle "$SESSION" 120 || fail "console-api: the python turn idles" "still running"

v1 GET "$B/handles"
expect "console-api: the handles: a table, a json and a text, with summaries" "(
s == 200 and b['sandbox']['state'] == 'open' and len(b['sandbox']['fingerprint']) == 64 and
{h['name']: h['type'] for h in b['data']} == {'cities': 'table', 'cfg': 'json', 'notes': 'text'} and
all(isinstance(h['summary'], str) and h['summary'] and h['bytes'] > 0 for h in b['data']) and
[h for h in b['data'] if h['name'] == 'cities'][0]['rows'] == 3 and [h for h in b['data'] if h['name'] == 'cities'][0]['columns'] == 2 and
'city text' in [h for h in b['data'] if h['name'] == 'cities'][0]['summary'])"

v1 GET "$B/handles/cities?rows=2"
expect "console-api: a table's preview: columns with types, the first rows, truncated" "(
s == 200 and b['type'] == 'table' and b['preview']['columns'] == [{'name': 'city', 'type': 'text'}, {'name': 'n', 'type': 'integer'}] and
b['preview']['rows'] == [['Oslo', 3], ['Lima', 7]] and b['preview']['truncated'] is True)"
v1 GET "$B/handles/cities"
expect "console-api: ... every row by default (20) and not truncated" "s == 200 and len(b['preview']['rows']) == 3 and b['preview']['truncated'] is False"
v1 GET "$B/handles/cfg"
expect "console-api: a json handle's shape and text" "(
s == 200 and b['type'] == 'json' and b['preview']['shape']['type'] == 'object' and 'items' in json.dumps(b['preview']['shape']) and
json.loads(b['preview']['text']) == {'items': [{'a': 1}], 'total': 1} and b['preview']['truncated'] is False)"
v1 GET "$B/handles/notes"
expect "console-api: a text handle's first KB, as JSON text" "(
s == 200 and h['content-type'].startswith('application/json') and b['type'] == 'text' and b['preview']['text'].startswith('<script>alert(1)</script>') and
0 < len(b['preview']['text'].encode()) <= 1024 and b['preview']['truncated'] is True)"
v1 GET "$B/handles/nosuch"
expect_error "console-api: an unknown handle is 404" 404 not_found_error
v1 GET "$B/handles/cities?rows=0"
expect_error "console-api: rows=0 is 400" 400 invalid_request_error
v1 GET "$B/handles/cities?bogus=1"
expect_error "console-api: an unknown query name is 400" 400 invalid_request_error
v1 GET "/v1/sessions/sesn_nosuch/handles"
expect_error "console-api: an unknown session's handles are 404" 404 not_found_error
v1 GET "/v1/sessions/sesn_nosuch/records"
expect_error "console-api: an unknown session's records are 404" 404 not_found_error
v1 GET "/v1/sessions/sesn_nosuch/audit_log"
expect_error "console-api: an unknown session's audit log is 404" 404 not_found_error

v1 GET "$B/records"
cp "$O" "$TEST_TMP/records.out"
expect "console-api: the records: raw lines and their entries, one sandbox" "(
s == 200 and len(b['data']) >= 1 and len(b['sandboxes']) == 1 and b['sandboxes'][0]['records'] == len(b['data']) and
all(json.loads(r['raw']) == r['entry'] and r['sandbox'] == b['sandboxes'][0]['fingerprint'] == r['entry']['record']['session'] for r in b['data']) and
[r['line'] for r in b['data']] == list(range(1, len(b['data']) + 1)) and b['has_more'] is False)"
pycheck "console-api: the record digests and the chain, recomputed from the documented encoding" '
import hashlib, json, struct, sys
first, _, rest = open(sys.argv[1]).read().partition("\n")
b = json.loads(json.loads(rest)["body"])
def value(x):
    x = x.encode() if isinstance(x, str) else x
    return struct.pack(">Q", len(x)) + x
prev = ""
for i, r in enumerate(b["data"]):
    rec = r["entry"]["record"]
    v = int(rec["version"])
    f = [("request_sha256", rec.get("requestSha256", "")), ("result_sha256", rec.get("resultSha256", ""))]
    if v == 3: f.append(("unanswered", rec.get("unanswered", "")))
    f += [(k, rec.get(j, "")) for k, j in (("provider", "provider"), ("isolation", "isolation"), ("environment", "environment"), ("policy", "policy"))]
    if v >= 2: f += [("software_identity", rec.get("softwareIdentity", "")), ("software_rule_id", rec.get("softwareRuleId", ""))]
    f += [("started_unix_ms", str(int(rec.get("startedUnixMs", 0)))), ("ended_unix_ms", str(int(rec.get("endedUnixMs", 0)))),
          ("session", rec.get("session", "")), ("sequence", str(int(rec.get("sequence", 0)))), ("previous_sha256", rec.get("previousSha256", ""))]
    data = value("plimsoll.run-record.v%d" % v) + b"".join(value(k) + value(c) for k, c in f)
    d = hashlib.sha256(data).hexdigest()
    if d != rec["recordSha256"] or rec.get("previousSha256", "") != prev or int(rec["sequence"]) != i + 1:
        print("record", i + 1, "digest", d, "stated", rec["recordSha256"], "previous", rec.get("previousSha256"), "expected", prev); sys.exit(1)
    prev = d
print(len(b["data"]), "records")' "$TEST_TMP/records.out"

v1 GET "$B/records?limit=1"
expect "console-api: a page of one record says there is more" "s == 200 and len(b['data']) == 1 and (b['has_more'] is True) == (b['sandboxes'][0]['records'] > 1)"

"$PY" "$V1_CLIENT" call GET "$URL$B/audit_log" >"$O" 2>"$TEST_TMP/v1.err"
expect "console-api: the audit log: x-ndjson, an attachment" "(
s == 200 and h['content-type'].startswith('application/x-ndjson') and h['content-disposition'].startswith('attachment; filename=\"session-') and
len(t.splitlines()) >= 1)"
"$PY" -c 'import json,sys; f=open(sys.argv[1]); f.readline(); open(sys.argv[2], "w").write(json.load(f)["body"])' "$O" "$TEST_TMP/downloaded.jsonl"
if out=$("$HULL" verify "$TEST_TMP/downloaded.jsonl" 2>&1); then
        pass "console-api: hull verify accepts the downloaded audit log ($out)"
else
        fail "console-api: hull verify accepts the downloaded audit log" "$out"
fi
if cmp -s "$TEST_TMP/downloaded.jsonl" "$TEST_TMP/audit/$(ls "$TEST_TMP/audit" | grep '^session-' | head -1)"; then
        pass "console-api: the download is the file, byte for byte"
else
        fail "console-api: the download is the file, byte for byte" "$(ls -la "$TEST_TMP/audit")"
fi
v1 GET "$B/audit_log?sandbox=0000000000000000000000000000000000000000000000000000000000000000"
expect_error "console-api: another sandbox's log is 404" 404 not_found_error

events_json "$SESSION" >"$TEST_TMP/events.json"
pycheck "console-api: a timeline: model request spans and the tool result's hull_duration_ms" '
import json, sys
ev = json.load(open(sys.argv[1]))
starts = [e for e in ev if e["type"] == "span.model_request_start"]
ends = [e for e in ev if e["type"] == "span.model_request_end"]
res = [e for e in ev if e["type"] == "agent.tool_result"]
ok = len(starts) >= 2 and len(ends) == len(starts) and all(e["processed_at"] for e in starts + ends) and \
    len(res) == 1 and isinstance(res[0].get("hull_duration_ms"), int) and res[0]["hull_duration_ms"] >= 0
print(len(starts), [e.get("hull_duration_ms") for e in res]); sys.exit(0 if ok else 1)' "$TEST_TMP/events.json"

# a key: from now on every extension route needs it
"$HULL" key create --name console >"$TEST_TMP/key" 2>/dev/null
KEY=$(cat "$TEST_TMP/key")
v1 GET "$B/handles"
expect_error "console-api: once a key exists the handles need it (401)" 401 authentication_error
v1 GET "$B/records"
expect_error "console-api: ... and the records" 401 authentication_error
v1 GET "$B/audit_log"
expect_error "console-api: ... and the audit log" 401 authentication_error
V1_KEY=$KEY v1 GET "$B/handles"
expect "console-api: with the key the handles answer" "s == 200 and len(b['data']) == 3"
V1_KEY=$KEY v1 GET "$B/records" "" "anthropic-beta:"
expect "console-api: the extensions need no anthropic-beta" "s == 200 and len(b['data']) >= 1"
V1_KEY=$KEY v1 GET "$B/records" "" "anthropic-version:"
expect_error "console-api: ... but anthropic-version (400)" 400 invalid_request_error

stop_server
mock_stop
check "console-api: no sanitizer report in hull serve's log" sh -c "! grep -Eq 'Sanitizer|runtime error:' '$TEST_TMP/serve.log'"
