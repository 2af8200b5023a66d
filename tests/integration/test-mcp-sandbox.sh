#!/usr/bin/env bash
# test-mcp-sandbox.sh: stdio MCP servers run inside a hull sandbox (`hull exec --stdio`), end to
# end through `hull run` and `hull mock-model`: @modelcontextprotocol/server-everything
# (--mcp-sandbox, its node_modules' directory as the workspace) lists its tools and answers echo;
# a probe server written here (Python, stdio) sees its workspace read-write and nothing else of
# the host, has no network at all by default, and with config.json's "sandbox": {"allow_hosts":
# [...]} reaches an allowed loopback HTTP server through hull's proxy (the testing override for
# loopback) but not another name; bad "sandbox" entries are clear errors; nothing is left
# running. Needs the container tier (user namespaces) and tests/conformance's lockfile.
source "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../conformance/npm-deps.sh"
npm_ready "hull run --mcp-sandbox" || exit 0
NPM_DIR=$(dirname "$NODE_PATH")
if [ ! -e "$NODE_PATH/.bin/mcp-server-everything" ]; then
        fail "hull run --mcp-sandbox" "server-everything is missing after npm ci"
        exit 0
fi
if ! "$HULL" exec --timeout 30 -- true >/dev/null 2>&1; then
        skip "hull run --mcp-sandbox" "the container tier does not work here: $("$HULL" exec -- true 2>&1 | head -1)"
        exit 0
fi

PY=/usr/bin/python3
export HULL_TEST_MARK=$TEST_TMP # every hull exec this test starts inherits it
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER OPENAI_BASE_URL \
        ANTHROPIC_BASE_URL TAVILY_API_KEY 2>/dev/null
cd "$TEST_TMP" || exit 1

# ---- the probe server: a minimal MCP server over stdio, one JSON-RPC message a line ----
SRV=$TEST_TMP/srv
mkdir "$SRV"
# as root, the sandbox user writes where host uid 65534 (or the directory's owner) may
chown 65534:65534 "$SRV" 2>/dev/null || true
printf 'inside the workspace\n' >"$SRV/mine.txt"
printf 'a host secret\n' >"$TEST_TMP/secret.txt"
cat >"$SRV/probe.py" <<'PYEOF'
import json, os, socket, sys, urllib.request

def run(name, a):
    if name == "read":
        return open(a["path"]).read()
    if name == "write":
        with open(a["path"], "w") as f:
            f.write(a["text"])
        return "written"
    if name == "fetch":
        with urllib.request.urlopen(a["url"], timeout=20) as r:
            return "status %d: %s" % (r.status, r.read().decode())
    if name == "connect":
        s = socket.create_connection((a["host"], int(a["port"])), timeout=10)
        s.close()
        return "connected"
    if name == "env":
        return json.dumps({"cwd": os.getcwd(), "env": sorted(os.environ)})
    raise ValueError("no tool " + name)

obj = {"type": "object", "additionalProperties": True}
tools = [{"name": n, "inputSchema": obj} for n in ("read", "write", "fetch", "connect", "env")]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    meth, p = m.get("method"), m.get("params") or {}
    out = {"jsonrpc": "2.0", "id": m["id"]}
    if meth == "initialize":
        out["result"] = {"protocolVersion": p["protocolVersion"], "capabilities": {"tools": {}},
                         "serverInfo": {"name": "probe", "version": "1"}}
    elif meth == "tools/list":
        out["result"] = {"tools": tools}
    elif meth == "tools/call":
        try:
            text, err = run(p["name"], p.get("arguments") or {}), False
        except Exception as ex:
            text, err = "%s: %s" % (type(ex).__name__, ex), True
        out["result"] = {"content": [{"type": "text", "text": text}], "isError": err}
    else:
        out["error"] = {"code": -32601, "message": "no method " + str(meth)}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
PYEOF

# a host HTTP server on loopback, the sandbox's only allowed destination
WWW=$TEST_TMP/www
mkdir "$WWW"
printf 'hello from the host' >"$WWW/hello.txt"
(cd "$WWW" && exec "$PY" -u -m http.server --bind 127.0.0.1 0 >"$TEST_TMP/www.out" 2>&1) &
WWW_PID=$!
pids+=("$WWW_PID")
PORT=""
for _ in $(seq 1 1200); do # 60 s at most: python alone can take seconds to start on a busy machine
        PORT=$(sed -n 's|.*port \([0-9][0-9]*\).*|\1|p' "$TEST_TMP/www.out" | head -1)
        [ -n "$PORT" ] && break
        kill -0 "$WWW_PID" 2>/dev/null || break
        sleep 0.05
done

mock() {
        : >"$TEST_TMP/requests.jsonl"
        mock_start "$1" --record "$TEST_TMP/requests.jsonl" --log-level error
}

O=$TEST_TMP/out
E=$TEST_TMP/err
run_hull() {
        HULL_PROVIDER=anthropic HULL_BASE_URL=$MURL HULL_API_KEY=test-key HULL_MODEL=mock-model \
                timeout 180 "$HULL" run "$@" >"$O" 2>"$E" </dev/null
        RC=$?
}

pyexpect() {
        if RC=$RC SRV=$SRV "$PY" - "$O" "$E" "$TEST_TMP/requests.jsonl" "$2" <<'PYEOF'; then pass "$1"; else fail "$1" "rc=$RC out: $(head -c 400 "$O") err: $(head -c 800 "$E")"; fi
import json, os, sys
o = open(sys.argv[1]).read()
e = open(sys.argv[2]).read()
try:
    j = json.loads(o)
except ValueError:
    j = None
reqs = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
rc = int(os.environ["RC"])
srv = os.environ["SRV"]
def results(req):
    out = []
    for m in req["body"]["messages"]:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    c = b.get("content")
                    t = c if isinstance(c, str) else "".join(p.get("text", "") for p in (c or []))
                    out.append(t)
    return out
def tool_names(req):
    return [t.get("name") for t in req["body"].get("tools", [])]
last = results(reqs[-1]) if reqs else []
sys.exit(0 if eval(sys.argv[4]) else 1)
PYEOF
}

# ---- server-everything in a sandbox: tools listed, echo called ----
mock '{"steps":[
 {"tool_calls":[{"name":"ev__echo","input":{"message":"hello from the sandbox"}}]},
 {"text":"{{last_tool_result}}"}]}' || fail "mock-model starts" "$(cat "$TEST_TMP/mock.err")"
(cd "$NPM_DIR" && run_hull "echo" --json --mcp "ev=node node_modules/.bin/mcp-server-everything stdio" \
        --mcp-sandbox ev
echo "$RC" >"$TEST_TMP/rc")
RC=$(cat "$TEST_TMP/rc")
pyexpect "mcp sandbox: server-everything in a sandbox offers its tools" \
        'rc == 0 and "ev__echo" in tool_names(reqs[0]) and "ev__get-sum" in tool_names(reqs[0])'
pyexpect "mcp sandbox: echo answers end to end" 'rc == 0 and j["answer"] == "Echo: hello from the sandbox"'
mock_stop

# ---- the probe with --mcp-sandbox: its workspace and nothing else, no network ----
mock '{"steps":[
 {"tool_calls":[{"name":"p__env","input":{}}]},
 {"tool_calls":[{"name":"p__read","input":{"path":"mine.txt"}}]},
 {"tool_calls":[{"name":"p__read","input":{"path":"'"$TEST_TMP"'/secret.txt"}}]},
 {"tool_calls":[{"name":"p__read","input":{"path":"/etc/shadow"}}]},
 {"tool_calls":[{"name":"p__write","input":{"path":"made.txt","text":"made inside"}}]},
 {"tool_calls":[{"name":"p__connect","input":{"host":"127.0.0.1","port":"'"$PORT"'"}}]},
 {"tool_calls":[{"name":"p__fetch","input":{"url":"http://127.0.0.1:'"$PORT"'/hello.txt"}}]},
 {"text":"done"}]}'
(cd "$SRV" && HULL_SECRET_OF_HULL=s3cret run_hull "probe" --json --mcp "p=python3 probe.py" --mcp-sandbox p
echo "$RC" >"$TEST_TMP/rc")
RC=$(cat "$TEST_TMP/rc")
pyexpect "mcp sandbox: the run ends well" 'rc == 0 and j["answer"] == "done" and len(reqs) == 8'
pyexpect "mcp sandbox: the server runs in /workspace with the sandbox's environment, not hull's" \
        'json.loads(last[0])["cwd"] == "/workspace" and "HULL_SECRET_OF_HULL" not in json.loads(last[0])["env"] and "HULL_TEST_MARK" not in json.loads(last[0])["env"] and "HTTP_PROXY" not in json.loads(last[0])["env"]'
pyexpect "mcp sandbox: it reads its own directory" 'last[1] == "inside the workspace\n"'
pyexpect "mcp sandbox: a host file outside its directory is not there" \
        '"FileNotFoundError" in last[2] and "a host secret" not in o + "".join(last)'
pyexpect "mcp sandbox: the host's /etc/shadow is not readable" '"Error" in last[3] and "root:" not in last[3]'
pyexpect "mcp sandbox: its directory is read-write: a file it writes is in the host directory" \
        'last[4] == "written" and open(os.path.join(srv, "made.txt")).read() == "made inside"'
pyexpect "mcp sandbox: no network: the host's loopback server cannot be reached directly" \
        '"Error" in last[5] and "connected" != last[5]'
pyexpect "mcp sandbox: no network: nor by HTTP (no proxy is offered)" '"Error" in last[6] and "hello from the host" not in last[6]'
mock_stop

# ---- config.json's "sandbox": allowed hosts through the proxy, env given by the entry ----
cat >"$HULL_HOME/config.json" <<EOF
{"mcp": {"p": {"command": "python3", "args": ["probe.py"], "env": {"PROBE_TOKEN": "t0ken", "HULL_TEST_MARK": "$TEST_TMP"},
               "sandbox": {"allow_hosts": ["127.0.0.1"], "net_allow_loopback": true, "workdir": "$SRV"}}}}
EOF
mock '{"steps":[
 {"tool_calls":[{"name":"p__env","input":{}}]},
 {"tool_calls":[{"name":"p__fetch","input":{"url":"http://127.0.0.1:'"$PORT"'/hello.txt"}}]},
 {"tool_calls":[{"name":"p__fetch","input":{"url":"http://localhost:'"$PORT"'/hello.txt"}}]},
 {"tool_calls":[{"name":"p__connect","input":{"host":"127.0.0.1","port":"'"$PORT"'"}}]},
 {"text":"done"}]}'
run_hull "probe" --json
pyexpect "mcp sandbox config: the entry's env and the proxy variables are all it gets beside the defaults" \
        'rc == 0 and "PROBE_TOKEN" in json.loads(last[0])["env"] and "HTTP_PROXY" in json.loads(last[0])["env"] and json.loads(last[0])["cwd"] == "/workspace"'
pyexpect "mcp sandbox config: an allowed host is reached through hull's proxy" \
        'last[1] == "status 200: hello from the host"'
pyexpect "mcp sandbox config: a host not allowed is refused by the proxy" \
        '"Error" in last[2] and "hello from the host" not in last[2]'
pyexpect "mcp sandbox config: a direct connection, past the proxy, still goes nowhere" '"Error" in last[3]'
mock_stop

# ---- bad entries and flags are clear errors ----
mock '{"steps":[{"text":"never"}]}'
printf '{"mcp": {"p": {"command": "python3", "sandbox": {"allow_host": ["x"]}}}}' >"$HULL_HOME/config.json"
run_hull "x"
pyexpect "mcp sandbox config: an unknown sandbox key names itself" 'rc != 0 and "mcp.p.sandbox.allow_host" in e and len(reqs) == 0'
printf '{"mcp": {"p": {"url": "http://127.0.0.1:1/mcp", "sandbox": true}}}' >"$HULL_HOME/config.json"
run_hull "x"
pyexpect "mcp sandbox config: an HTTP server cannot be sandboxed" 'rc != 0 and "mcp.p.sandbox" in e and len(reqs) == 0'
printf '{"mcp": {"p": {"command": "python3", "sandbox": {"allow_hosts": ["not a host"]}}}}' >"$HULL_HOME/config.json"
run_hull "x"
pyexpect "mcp sandbox config: a bad allowed host is hull exec's clear error" \
        'rc != 0 and "mcp: p" in e and "--allow-host" in e and len(reqs) == 0'
rm -f "$HULL_HOME/config.json"
run_hull "x" --mcp-sandbox nope
pyexpect "mcp sandbox: --mcp-sandbox of an unknown server is an error" 'rc != 0 and "--mcp-sandbox nope" in e'
(cd "$SRV" && run_hull "x" --mcp "p=no-such-server-cmd" --mcp-sandbox p
echo "$RC" >"$TEST_TMP/rc")
RC=$(cat "$TEST_TMP/rc")
pyexpect "mcp sandbox: a command the sandbox cannot find is a clear error" \
        'rc != 0 and "mcp: p" in e and "no-such-server-cmd" in e'
mkdir "$TEST_TMP/h"
(cd "$TEST_TMP/h" && HOME=$TEST_TMP/h run_hull "x" --mcp "p=python3 probe.py" --mcp-sandbox p
echo "$RC" >"$TEST_TMP/rc")
RC=$(cat "$TEST_TMP/rc")
pyexpect "mcp sandbox: the home directory as the server's workspace is refused" \
        'rc != 0 and "mcp: p: sandbox" in e and "directory of its own" in e and len(reqs) == 0'
mock_stop

# ---- nothing left running ----
sleep 1
left=$("$PY" - "$TEST_TMP" <<'PYEOF'
import os, sys
mark = ("HULL_TEST_MARK=" + sys.argv[1]).encode()
n = 0
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        cmd = open("/proc/%s/cmdline" % pid, "rb").read()
        env = open("/proc/%s/environ" % pid, "rb").read().split(b"\0")
    except OSError:
        continue
    if mark in env and (b"exec\0--stdio" in cmd or b"probe.py" in cmd):
        n += 1
print(n)
PYEOF
)
check "mcp sandbox: no sandboxed server and no hull exec is left running" test "$left" -eq 0
