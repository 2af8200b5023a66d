# test-run.sh: `hull run` end to end against `hull mock-model`, in both wire formats, streamed and
# whole: a tool call runs in the sandbox, a big result becomes a handle, the answer comes back;
# bad tool arguments, an unknown tool, a tool past its deadline, 429 then success, a wrong key, a
# cut stream, the context budget, always_ask approved and denied, an interrupt, --keep with
# hull verify, --json, --input, and the command's own errors.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER OPENAI_BASE_URL \
        ANTHROPIC_BASE_URL TAVILY_API_KEY 2>/dev/null
cd "$TEST_TMP" || exit 1 # no .env of the caller's

# mock SCRIPT-JSON [ARGS...]: hull mock-model (tests/lib.sh's mock_start) with its requests
# recorded in $TEST_TMP/requests.jsonl.
mock() {
        : >"$TEST_TMP/requests.jsonl"
        mock_start "$1" --record "$TEST_TMP/requests.jsonl" --log-level error "${@:2}"
}

# run_hull API [HULL-RUN-ARGS...]: hull run against the mock in API's format; stdout in $O,
# stderr in $E, the exit status in $RC, the seconds it took in $SECS.
O=$TEST_TMP/out
E=$TEST_TMP/err
run_hull() {
        local api=$1 base t0 t1
        shift
        base=$MURL
        [ "$api" = openai ] && base=$MURL/v1
        t0=$(date +%s%N)
        HULL_PROVIDER=$api HULL_BASE_URL=$base HULL_API_KEY=${KEY:-test-key} HULL_MODEL=mock-model \
                timeout 120 "$HULL" run "$@" >"$O" 2>"$E" </dev/null
        RC=$?
        t1=$(date +%s%N)
        SECS=$(((t1 - t0) / 1000000000))
}

# pyexpect NAME EXPR: pass when the Python expression holds; o (stdout), e (stderr), j (stdout as
# JSON or None), rc, reqs (the mock's recorded requests), secs.
pyexpect() {
        if RC=$RC SECS=$SECS "$PY" - "$O" "$E" "$TEST_TMP/requests.jsonl" "$2" <<'PYEOF'; then pass "$1"; else fail "$1" "rc=$RC out: $(head -c 300 "$O") err: $(head -c 600 "$E")"; fi
import json, os, sys
o = open(sys.argv[1]).read()
e = open(sys.argv[2]).read()
try:
    j = json.loads(o)
except ValueError:
    j = None
reqs = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
rc = int(os.environ["RC"])
secs = int(os.environ["SECS"])
def tool_results(req):
    """The tool results a request carried, as (text, is_error) pairs, in either API's form."""
    out = []
    for m in req["body"]["messages"]:
        if m.get("role") == "tool":
            c = m["content"]
            out.append((c if isinstance(c, str) else "".join(p.get("text", "") for p in c), None))
        elif m.get("role") == "user" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    c = b.get("content")
                    t = c if isinstance(c, str) else "".join(p.get("text", "") for p in (c or []))
                    out.append((t, bool(b.get("is_error"))))
    return out
sys.exit(0 if eval(sys.argv[4]) else 1)
PYEOF
}

# ---- a tool call runs in the sandbox, its big value becomes a handle, the answer comes back ----
SPILL='{"steps":[
 {"text":"Let me compute.","tool_calls":[{"name":"run_python","input":{"code":"rows = [{\"i\": i, \"sq\": i * i} for i in range(5000)]\nprint(\"made\", len(rows), \"rows\")\nemit(rows)"}}]},
 {"text":["The table ","has 5000 rows: ","{{last_tool_result|line:1}}"]}]}'
for api in openai anthropic; do
        for mode in streamed whole; do
                flag=()
                [ $mode = whole ] && flag=(--no-stream)
                mock "$SPILL" || { fail "mock-model starts" "$(cat "$TEST_TMP/mock.err")"; continue; }
                run_hull $api "how many rows?" --json "${flag[@]}"
                pyexpect "run $api $mode: exit 0 with the answer" \
                        'rc == 0 and j and j["stop"] == "end_turn" and j["answer"].startswith("The table has 5000 rows: ") and "made 5000 rows" in j["answer"]'
                pyexpect "run $api $mode: two model requests, one tool call, usage counted" \
                        'j["model_requests"] == 2 and j["tool_calls"] == 1 and j["usage"]["output_tokens"] > 0 and len(reqs) == 2'
                pyexpect "run $api $mode: the big value is a handle and the model saw its summary, not the rows" \
                        'len(j["handles"]) == 1 and j["handles"][0]["kind"] in ("table", "json") and len(json.dumps(reqs[1]["body"])) < len(json.dumps(reqs[0]["body"])) + 16000 and "made 5000 rows" in tool_results(reqs[1])[0][0] and j["handles"][0]["id"] in tool_results(reqs[1])[0][0]'
                pyexpect "run $api $mode: the request was $mode, with tools and hull's manual" \
                        'reqs[0]["body"].get("stream", False) == ("'$mode'" == "streamed") and len(reqs[0]["body"]["tools"]) >= 11 and "handle" in json.dumps(reqs[0]["body"]).lower()'
                if [ $api = openai ]; then
                        pyexpect "run openai $mode: store false" 'reqs[0]["body"].get("store") is False'
                fi
                mock_stop
        done
done

# the answer streamed on stdout as it comes, the steps on stderr with --verbose; a run that
# succeeded without --keep leaves nothing behind
mock "$SPILL"
before=$(ls -A "$HULL_HOME/runs" 2>/dev/null | wc -l)
run_hull anthropic "how many rows?" --verbose
after=$(ls -A "$HULL_HOME/runs" 2>/dev/null | wc -l)
check "run: a run that succeeded without --keep leaves nothing behind" test "$before" -eq "$after"
pyexpect "run: the answer on stdout, the steps on stderr with --verbose" \
        'rc == 0 and o.startswith("Let me compute.\nThe table has 5000 rows: ") and "made 5000 rows" in o and "run_python" in e and "model request 2" in e and "handle" in e'
mock_stop

# ---- what the model gets wrong is an error result it can act on, never a crash ----
mock '{"steps":[
 {"tool_calls":[{"name":"run_python","input":{"cod":"print(1)"}}]},
 {"tool_calls":[{"name":"no_such_tool","input":{"x":1}}]},
 {"tool_calls":[{"name":"bash","arguments":"{\"command\": \"echo hi\""}]},
 {"text":"gave up"}]}'
run_hull openai "try" --json
pyexpect "run: bad arguments, an unknown tool and broken JSON arguments are error results, the run goes on" \
        'rc == 0 and j["answer"] == "gave up" and len(reqs) == 4 and "unknown field" in tool_results(reqs[1])[0][0] and "code" in tool_results(reqs[1])[0][0] and "unknown tool" in tool_results(reqs[2])[1][0] and "bash" in tool_results(reqs[2])[1][0] and "JSON" in tool_results(reqs[3])[2][0]'
mock_stop
mock '{"steps":[
 {"tool_calls":[{"name":"read","input":{"file_path":"/etc/passwd"}}]},
 {"tool_calls":[{"name":"write","input":{"file_path":"../../outside.txt","content":"x"}}]},
 {"text":"done"}]}'
run_hull anthropic "try" --json
pyexpect "run: paths outside /workspace are refused as error results" \
        'rc == 0 and tool_results(reqs[1])[0][1] is True and "workspace" in tool_results(reqs[1])[0][0] and tool_results(reqs[2])[1][1] is True and not os.path.exists(os.environ["HULL_HOME"] + "/../outside.txt")'
mock_stop

# ---- a tool past its deadline is stopped and reported ----
mock '{"steps":[{"tool_calls":[{"name":"bash","input":{"command":"sleep 60","timeout":1000}}]},{"text":"{{last_tool_result|line:1}}"}]}'
run_hull openai "sleep" --json
pyexpect "run: a tool past its deadline is stopped and the model told" \
        'rc == 0 and "timed out" in j["answer"] and secs < 30'
mock_stop

# ---- provider faults ----
mock '{"steps":[{"error":{"kind":"rate_limit","retry_after_ms":10},"times":2},{"text":"after the storm"}]}'
run_hull anthropic "hi" --json
pyexpect "run: 429 twice, then success (retried, honouring retry-after-ms)" \
        'rc == 0 and j["answer"] == "after the storm" and len(reqs) == 3'
mock_stop
for api in openai anthropic; do
        mock '{"steps":[{"text":"never"}]}' --api-key right-key
        KEY=wrong-key run_hull $api "hi"
        pyexpect "run $api: a wrong key is one clear line, exit 1, no retry" \
                'rc == 1 and "key" in e.lower() and len(e.strip().splitlines()) <= 2 and "Traceback" not in e and len(reqs) == 1'
        mock_stop
done
mock '{"steps":[{"text":"this answer is cut off somewhere in the middle","cut":{"after_events":3,"mid_line":true}}]}'
run_hull openai "hi"
pyexpect "run: a stream cut in the middle is a clear error, exit 1" \
        'rc == 1 and "hull: run:" in e and secs < 60'
mock_stop
mock '{"steps":[{"error":{"kind":"model_not_found"}}]}'
run_hull anthropic "hi"
pyexpect "run: an unknown model is one clear line" 'rc == 1 and "model" in e.lower() and "mock-model" in e'
mock_stop
HULL_PROVIDER=openai HULL_BASE_URL=http://127.0.0.1:9/v1 HULL_API_KEY=k HULL_MODEL=m timeout 120 "$HULL" run "hi" >"$O" 2>"$E" </dev/null
RC=$? SECS=0
pyexpect "run: an endpoint that is not there is one clear line" 'rc == 1 and "127.0.0.1:9" in e'

# ---- the context budget: older results elided first, then a clear stop ----
printf '{"context_tokens": 5000}' >"$HULL_HOME/config.json"
mock '{"steps":[{"tool_calls":[{"name":"bash","input":{"command":"head -c 6000 /dev/zero | tr \"\\\\0\" a"}}]}]}'
run_hull openai "fill it" --json
pyexpect "run: past the context budget, old results are elided, then the run stops with a clear error" \
        'rc == 1 and j["stop"] == "context" and "context" in j["error"] and len(reqs) >= 2'
dir=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["dir"] or "")' "$O" 2>/dev/null)
if [ -n "$dir" ] && grep -q '"agent.thread_context_compacted"' "$dir/transcript.jsonl"; then
        pass "run: the elision is an event of the transcript, and a failed run is kept"
else
        fail "run: the elision is an event of the transcript, and a failed run is kept" "dir=$dir"
fi
mock_stop
rm -f "$HULL_HOME/config.json"

# ---- always_ask: approved with --yes, denied when nobody can be asked ----
printf '{"tools": {"bash": "always_ask"}}' >"$HULL_HOME/config.json"
ASK='{"steps":[{"tool_calls":[{"name":"bash","input":{"command":"echo ran-it > proof.txt; echo ran-it"}}]},{"text":"{{last_tool_result}}"}]}'
mock "$ASK"
run_hull anthropic "do it" --json --yes --keep
pyexpect "run: an always_ask tool approved (--yes) runs" 'rc == 0 and "ran-it" in j["answer"]'
dir=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["dir"] or "")' "$O" 2>/dev/null)
check "run --keep: the workspace is kept" grep -q ran-it "$dir/workspace/proof.txt"
check "run --keep: hull verify checks the run's records" "$HULL" verify "$dir"
mock_stop
mock "$ASK"
HULL_PROVIDER=openai HULL_BASE_URL=$MURL/v1 HULL_API_KEY=k HULL_MODEL=m setsid -w timeout 120 "$HULL" run "do it" --json \
        >"$O" 2>"$E" </dev/null
RC=$? SECS=0
pyexpect "run: an always_ask tool nobody can approve is denied, and the model told why" \
        'rc == 0 and "denied" in j["answer"] and tool_results(reqs[1])[0][0].startswith("denied") is not None and "ran-it" not in j["answer"]'
mock_stop
printf '{"tools": {"bash": "deny"}}' >"$HULL_HOME/config.json"
mock "$ASK"
run_hull openai "do it" --json
pyexpect "run: a denied tool does not run" 'rc == 0 and "ran-it" not in j["answer"] and "den" in j["answer"]'
mock_stop
rm -f "$HULL_HOME/config.json"

# ---- an interrupt ends the run and the command in flight ----
mock '{"steps":[{"tool_calls":[{"name":"bash","input":{"command":"sleep 100"}}]},{"text":"never"}]}'
HULL_PROVIDER=openai HULL_BASE_URL=$MURL/v1 HULL_API_KEY=k HULL_MODEL=m "$HULL" run "wait" >"$O" 2>"$E" </dev/null &
runpid=$!
for i in $(seq 1 200); do grep -q '"tool_calls"' "$TEST_TMP/requests.jsonl" 2>/dev/null && [ "$(wc -l <"$TEST_TMP/requests.jsonl")" -ge 1 ] && break; sleep 0.05; done
sleep 1
t0=$(date +%s)
kill -INT $runpid
wait $runpid
RC=$?
SECS=$(($(date +%s) - t0))
pyexpect "run: SIGINT ends the run (exit 130) and the command in flight, at once" 'rc == 130 and secs < 15'
mock_stop

# ---- inputs ----
printf 'region,amount\nnorth,10\nsouth,32\nnorth,5\n' >"$TEST_TMP/sales.csv"
mock '{"steps":[{"tool_calls":[{"name":"query_handle","input":{"sql":"SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY total DESC"}}]},{"text":"{{last_tool_result}}"}]}'
run_hull anthropic "top region? data: sales.csv" --input "$TEST_TMP/sales.csv" --json --keep
pyexpect "run --input: a CSV is a table handle the model can query by its id" \
        'rc == 0 and "south" in j["answer"] and "32" in j["answer"] and any(h["id"] == "sales" and h["kind"] == "table" for h in j["handles"]) and "sales" in json.dumps(reqs[0]["body"]["messages"][0])'
dir=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["dir"] or "")' "$O" 2>/dev/null)
check "run --keep: the handles are kept (files and manifest)" test -s "$dir/handles/_manifest.json" -a -s "$dir/handles/sales.sqlite"
check "run --keep: the live stores are gone" test ! -e "$dir/.stores"
mock_stop

# ---- the command's own errors ----
"$HULL" run >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "run: no task is a usage error" 'rc == 2 and "task" in e'
"$HULL" run "x" --max-turns 0 >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "run: --max-turns 0 is a usage error" 'rc == 2 and "max-turns" in e'
HULL_PROVIDER=openai HULL_BASE_URL=http://127.0.0.1:9/v1 HULL_MODEL=m "$HULL" run "x" --tool nope >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "run: an unknown --tool names the tools there are" 'rc == 2 and "nope" in e and "run_python" in e'
HULL_PROVIDER=openai HULL_BASE_URL=http://127.0.0.1:9/v1 HULL_MODEL=m "$HULL" run "x" --input "$TEST_TMP/missing.csv" >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "run: a missing --input file is named" 'rc == 2 and "missing.csv" in e'
"$HULL" run "x" >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "run: no provider configured says what to set" 'rc == 2 and "ANTHROPIC_API_KEY" in e and "OPENAI_API_KEY" in e'
before=$(ls -A "$HULL_HOME/runs" 2>/dev/null | wc -l)
printf '{"web": {"allow_cidrs": ["corp.example"]}}' >"$HULL_HOME/config.json"
HULL_PROVIDER=openai HULL_BASE_URL=http://127.0.0.1:9/v1 HULL_MODEL=m "$HULL" run "x" >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "run: an allowlist entry in the wrong list is a clear error, before anything starts" \
        'rc == 2 and "corp.example" in e and "Segmentation" not in e'
check "run: a run that could not start leaves no directory" test "$(ls -A "$HULL_HOME/runs" 2>/dev/null | wc -l)" -eq "$before"
printf '{"modle": "x"}' >"$HULL_HOME/config.json"
"$HULL" run "x" >"$O" 2>"$E"
RC=$? SECS=0
pyexpect "run: a config file with an unknown key is refused, naming it" 'rc == 2 and "modle" in e'
rm -f "$HULL_HOME/config.json"
