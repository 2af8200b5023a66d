# test-kernel-sessions.sh: sessions of the kernel tier (issue 24: one gVisor sandbox per session,
# runsc create/start/exec): plimsoll sessions at minimumIsolation kernel with cells, payloads and
# workspace operations whose audit log hull verify checks, "vm" refused; a /v1 turn with the mock
# model in an environment whose config says "hull": {"tier": "kernel"}; hull run --tier kernel with
# the mock model; hull mcp --tier kernel. Every part proves it ran under gVisor's kernel and that
# nothing (runsc, sentry, gofer, bundle) outlives a session. Skipped without runsc or root.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
client() { timeout 400 "$PY" "$here/sessions_client.py" "$@"; }

if [ "$(id -u)" != 0 ] || ! command -v runsc >/dev/null; then
        skip "kernel-tier sessions" "needs runsc (Debian's package) and root"
        exit 0
fi
export TMPDIR=$TEST_TMP # the bundles: nothing may be left here
export HULL_TEST_KERNEL_TIER=1 # start_server: hull serve self-checks runsc
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
chmod 0711 "$TEST_TMP"
bundles() { find "$TEST_TMP" -maxdepth 1 -name 'hull-oci.*' | wc -l; }
our_runsc() { pgrep -f -- "--root=$TEST_TMP/hull-oci" | wc -l; }
# left_over NAME: no bundle and no runsc process of ours within 20 s (a teardown runs runsc kill and delete)
left_over() {
        local i
        for i in $(seq 1 100); do
                [ "$(bundles)" = 0 ] && [ "$(our_runsc)" = 0 ] && break
                sleep 0.2
        done
        check "$1: no bundle and no runsc process is left" test "$(bundles)" = 0 -a "$(our_runsc)" = 0
}

# ---- plimsoll: a session at minimumIsolation kernel, its audit log verified ----
AUDIT=$TEST_TMP/audit
mkdir -p "$AUDIT" "$TEST_TMP/work"
if start_server "$TEST_TMP/serve-p.log" --audit-dir "$AUDIT" --work-dir "$TEST_TMP/work"; then
        if ! grep -q 'event=kernel-tier ' "$TEST_TMP/serve-p.log"; then
                grep -v 'event=request' "$TEST_TMP/serve-p.log" | head -8 | sed 's/^/# /'
                skip "kernel-tier sessions" "runsc failed hull serve's self-check here (its log says why)"
                exit 0
        fi
        client kernel "$URL" >"$TEST_TMP/kernel.out" 2>&1
        cat "$TEST_TMP/kernel.out"
        read -r fp n last _ < <(sed -n 's/^# kernel //p' "$TEST_TMP/kernel.out")
        L=$AUDIT/session-${fp:-none}.jsonl
        if [ -n "${fp:-}" ] && [ -f "$L" ]; then
                out=$("$HULL" verify --calls "$n" --last "$last" "$L" 2>"$TEST_TMP/err"); rc=$?
                check "plimsoll: hull verify checks the kernel session's $n records" test "$rc" -eq 0
                check "plimsoll: every record of the session states isolation kernel" "$PY" -c '
import json, sys
recs = [json.loads(l)["record"] for l in open(sys.argv[1])]
assert recs and all(r["isolation"] == "kernel" for r in recs), [r["isolation"] for r in recs]' "$L"
        else
                fail "plimsoll: the kernel session's audit log" "fp='${fp:-}' $(ls "$AUDIT")"
        fi
        left_over "plimsoll: after the session closed"
        # hull session open --tier kernel: the floor on OpenSession
        sid=$("$HULL" session --url "$URL" open --tier kernel 2>"$TEST_TMP/err" </dev/null)
        out=$("$HULL" session --url "$URL" exec "$sid" -- sh -c 'dmesg | head -1' 2>>"$TEST_TMP/err" </dev/null)
        check "hull session open --tier kernel: a gVisor session (exec sees its dmesg)" \
                sh -c "echo '$out' | grep -q 'Starting gVisor'"
        "$HULL" session --url "$URL" close "$sid" >/dev/null 2>&1 </dev/null
        "$HULL" session --url "$URL" open --tier vm >/dev/null 2>&1 </dev/null
        check "hull session open --tier vm is a usage error" test $? -eq 2
        left_over "hull session: after the session closed"
        stop_server TERM 30
else
        fail "plimsoll: hull serve starts" "$(tail -5 "$TEST_TMP/serve-p.log")"
fi

# ---- /v1: a turn in an environment whose config asks for the kernel tier, network limited ----
# (an HTTP server on the host's loopback: allowed through hull's proxy, hull serve
# --net-allow-loopback; another host gets 403 from the proxy; a direct connection reaches nothing)
mkdir -p "$TEST_TMP/www"
echo "hello-through-the-proxy" >"$TEST_TMP/www/hello.txt"
"$PY" -c '
import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
print(s.server_address[1], flush=True)
s.serve_forever()' "$TEST_TMP/www" >"$TEST_TMP/www.port" 2>/dev/null &
pids+=($!)
wait_for_file "$TEST_TMP/www.port" "${pids[-1]}"
PORT=$(head -1 "$TEST_TMP/www.port")
NET_CMD="curl -sS -m 20 http://127.0.0.1:$PORT/hello.txt; curl -s -o /dev/null -w \\\"other=%{http_code}\\\\n\\\" -m 20 http://denied.example/x; curl -sS -m 5 --noproxy \\\"*\\\" http://127.0.0.1:$PORT/hello.txt; echo direct_rc=\$?"
SCRIPT='{"steps": [
  {"tool_calls": [{"name": "run_python", "input": {"code": "import platform\nprint(\"release\", platform.release())"}, "id": "toolu_k1"}]},
  {"tool_calls": [{"name": "bash", "input": {"command": "'"$NET_CMD"'"}, "id": "toolu_k2"}]},
  {"text": "done"}
]}'
if mock_start "$SCRIPT" --log-level error && serve_v1 "$TEST_TMP/serve-v1.log" --net-allow-loopback; then
        v1 POST /v1/environments '{"name": "k", "config": {"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["127.0.0.1"]}, "hull": {"tier": "kernel"}}}'
        expect "/v1: an environment with hull.tier kernel is accepted and shown" "s == 200 and b['config']['hull'] == {'tier': 'kernel'}"
        ENV=$(field id)
        v1 POST /v1/environments '{"name": "bad", "config": {"type": "cloud", "hull": {"tier": "vm"}}}'
        expect_error "/v1: hull.tier vm is refused" 400 invalid_request_error
        v1 POST /v1/agents "{\"name\": \"k\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"hull_toolset_20261201\"}, {\"type\": \"agent_toolset_20260401\"}]}"
        AGENT=$(field id)
        v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
        SESSION=$(field id)
        v1 POST "/v1/sessions/$SESSION/events" "$(user_message "go")"
        done_turn=""
        for i in $(seq 1 600); do # the turn is over when session.status_idle follows the message
                events_json "$SESSION" >"$TEST_TMP/events.json"
                "$PY" -c 'import json,sys; t=[e["type"] for e in json.load(open(sys.argv[1]))]; sys.exit(0 if "user.message" in t and "session.status_idle" in t[t.index("user.message"):] else 1)' "$TEST_TMP/events.json" && done_turn=1 && break
                sleep 0.4
        done
        if [ -n "$done_turn" ]; then
                pycheck "/v1: the turn's python ran under gVisor (release 4.4.0)" '
import json, sys
ev = json.load(open(sys.argv[1]))
ok = any(e["type"] == "agent.tool_result" and "release 4.4.0" in json.dumps(e["content"]) for e in ev)
if not ok:
    print(json.dumps(ev)[:1500])
sys.exit(0 if ok else 1)' "$TEST_TMP/events.json"
                pycheck "/v1 kernel, limited network: an allowed host answers, another gets 403, a direct connection fails" '
import json, sys
r = [json.dumps(e["content"]) for e in json.load(open(sys.argv[1])) if e["type"] == "agent.tool_result"]
ok = len(r) >= 2 and "hello-through-the-proxy" in r[1] and "other=403" in r[1] and "direct_rc=0" not in r[1] \
    and r[1].count("hello-through-the-proxy") == 1 and "direct_rc=" in r[1]
sys.exit(0 if ok else (print(r), 1)[1])' "$TEST_TMP/events.json"
                v1 GET "/v1/sessions/$SESSION/network_log"
                expect "/v1 kernel, limited network: every connection is in the session's network log" \
                        "s == 200 and 'net allowed HTTP 127.0.0.1:$PORT' in t and 'net refused HTTP denied.example:80' in t"
        else
                fail "/v1: the turn ends" "still running: $(tail -3 "$TEST_TMP/serve-v1.log")"
        fi
        v1 DELETE "/v1/sessions/$SESSION"
        stop_server TERM 30
        left_over "/v1: after hull serve stopped"
        mock_stop >/dev/null
else
        fail "/v1: the mock model and hull serve start" "$(cat "$TEST_TMP/mock.err"; tail -3 "$TEST_TMP/serve-v1.log")"
fi

# ---- hull run --tier kernel ----
SCRIPT='{"steps": [
  {"tool_calls": [{"name": "bash", "input": {"command": "dmesg | head -1; id -u"}}]},
  {"text": ["kernel: ", "{{last_tool_result|line:1}}"]}]}'
if mock_start "$SCRIPT" --log-level error; then
        HULL_PROVIDER=anthropic HULL_BASE_URL=$MURL HULL_API_KEY=k HULL_MODEL=mock-model \
                timeout 120 "$HULL" run --tier kernel "go" >"$TEST_TMP/run.out" 2>"$TEST_TMP/run.err" </dev/null
        rc=$?
        check "hull run --tier kernel: the bash tool ran under gVisor" \
                sh -c "[ $rc -eq 0 ] && grep -q 'kernel: \[ *0.000000\] Starting gVisor' '$TEST_TMP/run.out'"
        [ $rc -eq 0 ] || sed 's/^/# /' "$TEST_TMP/run.err" | tail -5
        timeout 30 "$HULL" run --tier vm "go" >/dev/null 2>"$TEST_TMP/err"
        check "hull run --tier vm is a usage error" test $? -eq 2
        mock_stop >/dev/null
        left_over "hull run: after it ended"
else
        fail "hull run: the mock model starts" "$(cat "$TEST_TMP/mock.err")"
fi

# ---- hull mcp --tier kernel: the connection's session is one gVisor sandbox ----
mkdir -p "$TEST_TMP/mcp"
timeout 120 "$PY" - "$HULL" "$TEST_TMP/mcp" >"$TEST_TMP/mcp.out" 2>&1 <<'PYEOF'
import json, subprocess, sys
hull, home = sys.argv[1], sys.argv[2]
p = subprocess.Popen([hull, "mcp", "--tier", "kernel", "--home", home], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=open(home + "/stderr.log", "wb"))
def call(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    return json.loads(p.stdout.readline())
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
m = call(2, "tools/call", {"name": "bash", "arguments": {"command": "dmesg | head -1"}})
print("bash:", json.dumps(m.get("result", m)))
m = call(3, "tools/call", {"name": "run_python", "arguments": {"code": "import platform\nprint('release', platform.release())"}})
print("python:", json.dumps(m.get("result", m)))
p.stdin.close()
print("exit:", p.wait(60))
PYEOF
check "hull mcp --tier kernel: the bash tool runs under gVisor" grep -q '^bash: .*Starting gVisor' "$TEST_TMP/mcp.out"
check "hull mcp --tier kernel: run_python runs under gVisor (release 4.4.0)" grep -q '^python: .*release 4.4.0' "$TEST_TMP/mcp.out"
check "hull mcp --tier kernel: it ends with its stdin" grep -q '^exit: 0' "$TEST_TMP/mcp.out"
grep -q '^exit: 0' "$TEST_TMP/mcp.out" || sed 's/^/# /' "$TEST_TMP/mcp.out" "$TEST_TMP/mcp/stderr.log" | tail -8
"$HULL" mcp --tier vm </dev/null >/dev/null 2>&1
check "hull mcp --tier vm is a usage error" test $? -eq 2
left_over "hull mcp: after it ended"
