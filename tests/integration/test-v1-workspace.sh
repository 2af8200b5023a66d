# test-v1-workspace.sh: hull's /v1 extensions for programs (api-v1-workspace.c): an input file
# POSTed to .../inputs waits for the next turn, which finds it under /workspace/inputs and as a
# table handle; GET .../handles/NAME/content gives a handle's stored bytes (a published file, a
# table's SQLite database) in slices; POST .../query runs read-only SQL over table handles; bad
# names, formats, handles, bodies, SQL and sessions get clear 4xx answers and change nothing.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

CODE='import hull, os\nrows = open(\"/workspace/inputs/sales/sales.csv\").read().splitlines()\nos.makedirs(\"/workspace/outputs\", exist_ok=True)\nopen(\"/workspace/outputs/report.txt\", \"w\").write(\"lines=%d\\n\" % len(rows))\nhull.publish(\"outputs/report.txt\", \"the report\")\nprint(len(rows), sorted(os.listdir(\"/workspace/inputs\")))'
SCRIPT='{"then": "repeat", "steps": [
  {"tool_calls": [{"name": "run_python", "input": {"code": "'"$CODE"'"}, "id": "toolu_py1"}]},
  {"text": "done: {{last_tool_result}}"}
]}'
if ! mock_start "$SCRIPT" --log-level error; then
        fail "workspace: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log"; then
        fail "workspace: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
v1 POST /v1/agents "{\"name\": \"py\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"hull_toolset_20261201\"}]}"
AGENT=$(field id)
v1 POST /v1/environments '{"name": "t"}'
ENV=$(field id)
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
SESSION=$(field id)
B=/v1/sessions/$SESSION
printf 'region,units\nnorth,3\nsouth,5\neast,7\n' >"$TEST_TMP/sales.csv"

v1 POST "$B/inputs?name=sales.csv" "@$TEST_TMP/sales.csv"
expect "workspace: an input is taken for the next turn (202, pending, its path and handle)" \
        "s == 202 and b['type'] == 'session_input' and b['handle'] == 'sales' and b['path'] == '/workspace/inputs/sales/sales.csv' and b['bytes'] == 36 and b['status'] == 'pending'"
v1 POST "$B/inputs?name=sales.csv&handle=salestab&format=csv" "@$TEST_TMP/sales.csv"
expect "workspace: ... and one to become a table (format=csv)" "s == 202 and b['handle'] == 'salestab'"
v1 POST "$B/inputs?name=sales.csv" "@$TEST_TMP/sales.csv"
expect_error "workspace: the same handle twice before the turn is a 409" 409 conflict_error
v1 POST "$B/inputs?name=../etc/passwd" "x"
expect_error "workspace: a name with a '/' is refused (400)" 400 invalid_request_error
v1 POST "$B/inputs" "x"
expect_error "workspace: no name is refused (400)" 400 invalid_request_error
v1 POST "$B/inputs?name=a.bin&handle=../h" "x"
expect_error "workspace: a handle that is no handle name is refused (400)" 400 invalid_request_error
v1 POST "$B/inputs?name=a.bin&format=exe" "x"
expect_error "workspace: an unknown format is refused (400)" 400 invalid_request_error
v1 POST "$B/inputs?name=a.bin&color=red" "x"
expect_error "workspace: an unknown query parameter is refused (400)" 400 invalid_request_error
v1 POST "/v1/sessions/sesn_nope/inputs?name=a.bin" "x"
expect_error "workspace: an unknown session is a 404" 404 not_found_error
"$PY" "$V1_CLIENT" big "$URL$B/inputs?name=big.bin" $((32 * 1024 * 1024 + 1)) >"$O" 2>/dev/null
expect "workspace: an input over 32 MiB is refused (413)" "s == 413"
v1 GET "$B/handles/sales/content"
expect_error "workspace: before any turn there is no sandbox to read from (404)" 404 not_found_error
expect "workspace: ... and the answer says so" "b['error']['details']['error_code'] == 'sandbox_not_open'"

v1 POST "$B/events" "$(user_message "count")"
wait_idle "$SESSION" 120 || fail "workspace: the turn idles" "still running"
EV=$(events_json "$SESSION")
pycheck "workspace: the turn found the input under /workspace/inputs (4 lines)" '
import json, sys
evs = json.loads(sys.argv[1])
res = [e for e in evs if e["type"] == "agent.tool_result"]
text = json.dumps(res)
sys.exit(0 if "4 [" in text and "sales" in text else (print(text[:600]) or 1))' "$EV"

v1 GET "$B/handles"
expect "workspace: the inputs are a binary and a table handle, the published file a binary one" "(
s == 200 and {h['name']: h['type'] for h in b['data']}.get('sales') == 'binary' and {h['name']: h['type'] for h in b['data']}.get('salestab') == 'table' and
any(h['type'] == 'binary' and h['source'].startswith('published outputs/report.txt') for h in b['data']))"
PUB=$("$PY" -c 'import json,sys; f=open(sys.argv[1]); f.readline(); b=json.loads(json.load(f)["body"]); print([h["name"] for h in b["data"] if h["source"].startswith("published")][0])' "$O")

v1 GET "$B/handles/$PUB/content"
expect "workspace: a published file's bytes, whole, with its size" \
        "s == 200 and t == 'lines=4\n' and h['x-hull-total-bytes'] == '8' and h['x-hull-handle-kind'] == 'binary' and h['content-type'] == 'application/octet-stream'"
v1 GET "$B/handles/$PUB/content?offset=6&limit=1"
expect "workspace: ... and a slice of them" "s == 200 and t == '4' and h['x-hull-offset'] == '6'"
v1 GET "$B/handles/salestab/content"
expect "workspace: a table's content is its SQLite database" \
        "s == 200 and t.startswith('SQLite format 3') and h['content-type'] == 'application/vnd.sqlite3'"
v1 GET "$B/handles/nope/content"
expect_error "workspace: an unknown handle is a 404" 404 not_found_error
v1 GET "$B/handles/$PUB/content?limit=0"
expect_error "workspace: a limit of 0 is refused (400)" 400 invalid_request_error

v1 POST "$B/query" '{"sql": "SELECT region, units FROM salestab.data WHERE units > 4 ORDER BY units"}'
expect "workspace: a query answers inline" \
        "s == 200 and b['type'] == 'query_result' and b['columns'] == ['region', 'units'] and b['rows'] == [['south', 5], ['east', 7]] and b['n_rows'] == 2"
v1 POST "$B/query" '{"sql": "SELECT sum(units) AS n FROM salestab.data", "handles": ["salestab"]}'
expect "workspace: ... over the handles named" "s == 200 and b['rows'] == [[15]]"
v1 POST "$B/query" '{"sql": "WITH RECURSIVE c(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM c WHERE v < 500) SELECT v FROM c", "handles": ["salestab"]}'
expect "workspace: a large result becomes a table handle" "s == 200 and b['handle']['type'] == 'table' and b['handle']['rows'] == 500" 
v1 POST "$B/query" '{"sql": "DELETE FROM salestab.data"}'
expect_error "workspace: a write is refused (400)" 400 invalid_request_error
v1 POST "$B/query" '{"sql": "SELECT 1", "limit": 3}'
expect_error "workspace: an unknown field is refused (400)" 400 invalid_request_error
v1 POST "$B/query" '{"sql": "SELECT 1", "handles": ["../x"]}'
expect_error "workspace: a bad handle name is refused (400)" 400 invalid_request_error
v1 POST "$B/query" '{"sql": 5}'
expect_error "workspace: sql that is no string is refused (400)" 400 invalid_request_error
v1 POST "$B/query" '{"sql": "SELECT 1", "handles": ["nope"]}'
expect_error "workspace: a query of an unknown handle is a 404" 404 not_found_error
v1 POST "$B/query" '{"sql": "SELECT count(*) FROM salestab.data"}'
expect "workspace: the table is unchanged after the refusals" "s == 200 and b['rows'] == [[3]]"
v1 GET "/v1/sessions/$SESSION"
expect "workspace: hull serve still answers" "s == 200 and b['status'] == 'idle'"

# an input the turn cannot take (a CSV whose rows do not fit its header) ends that turn with a
# session.error naming it, and the session goes on
printf 'a,b\n1,2,3\n' >"$TEST_TMP/bad.csv"
v1 POST "$B/inputs?name=bad.csv&handle=bad&format=csv" "@$TEST_TMP/bad.csv"
expect "workspace: a malformed CSV is taken for the next turn (its bytes are checked there)" "s == 202"
v1 POST "$B/events" "$(user_message "again")"
wait_idle "$SESSION" 120 || fail "workspace: the turn with a bad input idles" "still running"
EV=$(events_json "$SESSION")
pycheck "workspace: ... which ends with a session.error naming the input, then idle" '
import json, sys
evs = json.loads(sys.argv[1])
errs = [e for e in evs if e["type"] == "session.error"]
ok = errs and "bad.csv" in errs[-1]["error"]["message"] and evs[-1]["type"] == "session.status_idle"
sys.exit(0 if ok else (print(errs[-1:] or evs[-3:]) or 1))' "$EV"
v1 GET "$B/handles"
expect "workspace: ... and adds no handle" "s == 200 and 'bad' not in [h['name'] for h in b['data']]"

# at most 32 inputs wait for a turn
for i in $(seq 1 32); do v1 POST "$B/inputs?name=f$i.txt" "x"; done
expect "workspace: 32 inputs wait for the next turn" "s == 202"
v1 POST "$B/inputs?name=f33.txt" "x"
expect_error "workspace: a 33rd is refused (409 too_many_inputs)" 409 conflict_error
expect "workspace: ... saying so" "b['error']['details']['error_code'] == 'too_many_inputs' and 'at most 32' in b['error']['message']"

v1 POST "$B/archive"
v1 POST "$B/inputs?name=late.txt" "x"
expect_error "workspace: an archived session takes no input (409)" 409 conflict_error
