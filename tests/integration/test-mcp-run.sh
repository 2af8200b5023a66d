#!/usr/bin/env bash
# test-mcp-run.sh: `hull run --mcp 'NAME=COMMAND ARGS...'` end to end against `hull mock-model`:
# the scripted model calls @modelcontextprotocol/server-filesystem's tools on a temporary
# directory (read, write, a big file kept as a handle), server-everything's over stdio (progress
# notes and a log message reach the transcript) and over Streamable HTTP on loopback; hull chat
# --mcp over two turns; a server that fails to start, an HTTP server that is not there and a
# malformed --mcp are clear errors; an HTTP server's URL passes the egress guard (loopback only
# when config.json's web.allow_cidrs admits it, a metadata endpoint never); no server is left
# running. The servers come from
# tests/conformance's lockfile (npm-deps.sh).
source "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../conformance/npm-deps.sh"
npm_ready "hull run --mcp" || exit 0
FS=$NODE_PATH/.bin/mcp-server-filesystem
EV=$NODE_PATH/.bin/mcp-server-everything
if [ ! -x "$FS" ] || [ ! -x "$EV" ]; then
        fail "hull run --mcp" "the MCP servers are missing after npm ci"
        exit 0
fi

PY=/usr/bin/python3
export HULL_TEST_MARK=$TEST_TMP # every MCP server this test starts inherits it
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER OPENAI_BASE_URL \
        ANTHROPIC_BASE_URL TAVILY_API_KEY 2>/dev/null
cd "$TEST_TMP" || exit 1

ROOT=$TEST_TMP/root
mkdir "$ROOT"
printf 'alpha\nbeta\n' >"$ROOT/a.txt"
"$PY" -c 'import sys; sys.stdout.write("".join("line %06d of a big file\n" % i for i in range(8000)))' >"$ROOT/big.txt"

mock() {
        : >"$TEST_TMP/requests.jsonl"
        mock_start "$1" --record "$TEST_TMP/requests.jsonl" --log-level error "${@:2}"
}

O=$TEST_TMP/out
E=$TEST_TMP/err
run_hull() {
        local api=$1 base t0 t1
        shift
        base=$MURL
        [ "$api" = openai ] && base=$MURL/v1
        t0=$(date +%s%N)
        HULL_PROVIDER=$api HULL_BASE_URL=$base HULL_API_KEY=test-key HULL_MODEL=mock-model \
                timeout 180 "$HULL" run "$@" >"$O" 2>"$E" </dev/null
        RC=$?
        t1=$(date +%s%N)
        SECS=$(((t1 - t0) / 1000000000))
}

pyexpect() {
        if RC=$RC SECS=$SECS ROOT=$ROOT "$PY" - "$O" "$E" "$TEST_TMP/requests.jsonl" "$2" <<'PYEOF'; then pass "$1"; else fail "$1" "rc=$RC out: $(head -c 400 "$O") err: $(head -c 800 "$E")"; fi
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
root = os.environ["ROOT"]
def tool_results(req):
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
def tool_names(req):
    return [t.get("name") or t.get("function", {}).get("name") for t in req["body"].get("tools", [])]
def transcript():
    return [json.loads(l) for l in open(os.path.join(j["dir"], "transcript.jsonl")) if l.strip()]
sys.exit(0 if eval(sys.argv[4]) else 1)
PYEOF
}

# ---- server-filesystem: read, write, a big file kept as a handle ----
for api in openai anthropic; do
        mock '{"steps":[
 {"text":"Reading.","tool_calls":[{"name":"fs__read_text_file","input":{"path":"'"$ROOT"'/a.txt"}}]},
 {"tool_calls":[{"name":"fs__write_file","input":{"path":"'"$ROOT"'/new.txt","content":"written by hull"}}]},
 {"tool_calls":[{"name":"fs__read_text_file","input":{"path":"/etc/hostname"}}]},
 {"tool_calls":[{"name":"fs__read_text_file","input":{"path":"'"$ROOT"'/big.txt"}}]},
 {"text":["First line: ","{{tool_result:1|line:1}}"]}]}' || { fail "mock-model starts" "$(cat "$TEST_TMP/mock.err")"; continue; }
        run_hull $api "read the files" --json --mcp "fs=$FS $ROOT"
        pyexpect "mcp run $api: exit 0 with the answer built from the server's result" \
                'rc == 0 and j and j["stop"] == "end_turn" and j["answer"].endswith("First line: alpha")'
        pyexpect "mcp run $api: the server's tools are offered as fs__TOOL beside hull's own (no resource tools: it declares no resources)" \
                '"fs__read_text_file" in tool_names(reqs[0]) and "fs__write_file" in tool_names(reqs[0]) and "bash" in tool_names(reqs[0]) and "fs__read_resource" not in tool_names(reqs[0])'
        pyexpect "mcp run $api: read_text_file's text reached the model" \
                'tool_results(reqs[1])[0][0] == "alpha\nbeta\n" and tool_results(reqs[1])[0][1] in (None, False)'
        pyexpect "mcp run $api: write_file wrote the file outside the sandbox, where the server runs" \
                'open(os.path.join(root, "new.txt")).read() == "written by hull"'
        pyexpect "mcp run $api: the server refusing a path is an error result the model reads" \
                '"Access denied" in tool_results(reqs[3])[2][0] and tool_results(reqs[3])[2][1] in (None, True)'
        pyexpect "mcp run $api: the big file became a handle, the model saw its summary" \
                'len(j["handles"]) == 1 and j["handles"][0]["bytes"] > 190000 and j["handles"][0]["id"] in tool_results(reqs[4])[3][0] and len(tool_results(reqs[4])[3][0]) < 8000'
        rm -f "$ROOT/new.txt"
        mock_stop
done

# ---- hull chat --mcp: two turns, the server kept between them ----
mock '{"steps":[
 {"tool_calls":[{"name":"fs__write_file","input":{"path":"'"$ROOT"'/chat.txt","content":"from the chat"}}]},
 {"text":"wrote it"},
 {"tool_calls":[{"name":"fs__read_text_file","input":{"path":"'"$ROOT"'/chat.txt"}}]},
 {"text":["read: ","{{last_tool_result}}"]}]}'
t0=$(date +%s)
printf 'write it\nread it\n' | HULL_PROVIDER=anthropic HULL_BASE_URL=$MURL HULL_API_KEY=k HULL_MODEL=mock-model \
        timeout 120 "$HULL" chat --mcp "fs=$FS $ROOT" >"$O" 2>"$E"
RC=$? SECS=$(($(date +%s) - t0))
pyexpect "mcp chat: both turns use the server's tools" \
        'rc == 0 and "wrote it" in o and "read: from the chat" in o and len(reqs) == 4'
rm -f "$ROOT/chat.txt"
mock_stop

# ---- server-everything's resources, offered as ev__list_resources and ev__read_resource ----
mock '{"steps":[
 {"tool_calls":[{"name":"ev__list_resources","input":{}}]},
 {"tool_calls":[{"name":"ev__read_resource","input":{"uri":"demo://resource/static/document/architecture.md"}}]},
 {"tool_calls":[{"name":"ev__read_resource","input":{"uri":"demo://resource/dynamic/blob/1"}}]},
 {"tool_calls":[{"name":"ev__read_resource","input":{"uri":"demo://no/such/resource"}}]},
 {"text":"done"}]}'
run_hull anthropic "resources" --json --keep --mcp "ev=$EV stdio"
pyexpect "mcp run: a server with resources gets NAME__list_resources and NAME__read_resource" \
        'rc == 0 and "ev__list_resources" in tool_names(reqs[0]) and "ev__read_resource" in tool_names(reqs[0])'
pyexpect "mcp run: resources/list answers with the server's resources" \
        'any(ev["type"] == "agent.mcp_tool_result" and "demo://resource/static/document/architecture.md" in ev["content"][0]["text"] for ev in transcript())'
pyexpect "mcp run: resources/read gives a text resource's text, a blob as a handle, a missing one as an error" \
        '[ev["content"][0]["text"] for ev in transcript() if ev["type"] == "agent.mcp_tool_result"][1].startswith("[resource <demo://resource/static/document/architecture.md>]\n") and len([ev for ev in transcript() if ev["type"] == "agent.mcp_tool_result"][1]["content"][0]["text"]) > 200 and any(ev["type"] == "hull.handle_created" and ev["handle"]["kind"] == "binary" and ev["handle"]["source"] == "mcp:ev/resources/read" for ev in transcript()) and [ev for ev in transcript() if ev["type"] == "agent.mcp_tool_result"][3]["is_error"] and "not found" in [ev for ev in transcript() if ev["type"] == "agent.mcp_tool_result"][3]["content"][0]["text"]'
mock_stop

# ---- server-everything: progress and a log message reach the transcript ----
mock '{"steps":[
 {"tool_calls":[{"name":"ev__toggle-simulated-logging","input":{}}]},
 {"tool_calls":[{"name":"ev__trigger-long-running-operation","input":{"duration":4,"steps":8}}]},
 {"tool_calls":[{"name":"ev__get-sum","input":{"a":2,"b":3}}]},
 {"text":"{{last_tool_result}}"}]}'
run_hull anthropic "sum" --json --keep --mcp "ev=$EV stdio"
pyexpect "mcp run: server-everything's get-sum answers" 'rc == 0 and j["answer"] == "The sum of 2 and 3 is 5."'
pyexpect "mcp run: its progress notifications reach the bus as hull.tool_progress notes tagged mcp:ev" \
        'any(ev["type"] == "hull.tool_progress" and ev.get("note", "").startswith("mcp:ev: ") and "/8" in ev["note"] for ev in transcript())'
pyexpect "mcp run: its log message reaches the bus as hull.mcp_message" \
        'any(ev["type"] == "hull.mcp_message" and ev["source"] == "mcp:ev" and ev["level"] for ev in transcript())'
mock_stop

# ---- server-everything over Streamable HTTP, on loopback ----
# a port found free can be taken before the server binds it (by a connection of another suite: two
# run at once): the server says it listens on it and is reached there, or it exits (EADDRINUSE) or
# is not reached, and another port is tried, 3 at most
for _ in 1 2 3; do
        PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        PORT=$PORT "$EV" streamableHttp >"$TEST_TMP/evh.log" 2>&1 &
        EVH=$!
        pids+=("$EVH")
        for i in $(seq 1 600); do
                if grep -q "listening on port $PORT\$" "$TEST_TMP/evh.log"; then
                        # listening, and reached there (a wildcard listen can be, and not on loopback)
                        "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
                                "$PORT" 2>/dev/null && break 2
                        kill "$EVH" 2>/dev/null
                        break
                fi
                kill -0 "$EVH" 2>/dev/null || break
                sleep 0.05
        done
done
# the egress guard, as for /v1: a loopback URL is refused (naming the server and how to admit
# it) until config.json's web.allow_cidrs admits it; a metadata endpoint always is
mock '{"steps":[{"text":"never asked"}]}'
run_hull openai "x" --mcp "evh=http://127.0.0.1:$PORT/mcp"
pyexpect "mcp run: a loopback URL is refused by the egress guard with one line naming the server and the fix" \
        'rc == 1 and "mcp: evh:" in e and "refused" in e and "loopback" in e and "web.allow_cidrs" in e and len(e.strip().splitlines()) == 1 and len(reqs) == 0'
HULL_PROVIDER=openai HULL_BASE_URL=$MURL/v1 HULL_API_KEY=k HULL_MODEL=mock-model \
        timeout 120 "$HULL" chat --mcp "evh=http://127.0.0.1:$PORT/mcp" >"$O" 2>"$E" </dev/null
RC=$?
pyexpect "mcp chat: hull chat --mcp passes the same egress guard" \
        'rc == 1 and "mcp: evh:" in e and "refused" in e and "web.allow_cidrs" in e and len(reqs) == 0'
printf '{"mcp": {"evh": {"url": "http://127.0.0.1:%s/mcp"}}}\n' "$PORT" >"$HULL_HOME/config.json"
run_hull openai "x"
pyexpect "mcp config: a loopback URL of config.json's \"mcp\" is refused too" \
        'rc == 1 and "mcp: evh:" in e and "refused" in e and "web.allow_cidrs" in e and len(reqs) == 0'
printf '{"web": {"allow_cidrs": ["169.254.0.0/16"]}}\n' >"$HULL_HOME/config.json"
run_hull openai "x" --mcp "meta=http://169.254.169.254/mcp"
pyexpect "mcp run: a cloud metadata endpoint is refused even when web.allow_cidrs covers it" \
        'rc == 1 and "mcp: meta:" in e and "metadata" in e and len(e.strip().splitlines()) == 1 and len(reqs) == 0 and secs < 30'
mock_stop
# from here on the operator admits loopback (the test's servers run there), as the /v1 tests do
printf '{"web": {"allow_cidrs": ["127.0.0.0/8"]}}\n' >"$HULL_HOME/config.json"
mock '{"steps":[
 {"tool_calls":[{"name":"evh__trigger-long-running-operation","input":{"duration":3,"steps":6}}]},
 {"tool_calls":[{"name":"evh__get-sum","input":{"a":20,"b":22}}]},
 {"text":"{{last_tool_result}}"}]}'
run_hull openai "sum" --json --keep --mcp "evh=http://127.0.0.1:$PORT/mcp"
pyexpect "mcp run: a Streamable HTTP server's tools answer" 'rc == 0 and j["answer"] == "The sum of 20 and 22 is 42."'
pyexpect "mcp run: its progress (on the POST's event stream) reaches the bus" \
        'any(ev["type"] == "hull.tool_progress" and ev.get("note", "").startswith("mcp:evh: ") for ev in transcript())'
mock_stop

# ---- the same servers from config.json's "mcp" (stdio with args, env and cwd; HTTP with headers) ----
cat >"$HULL_HOME/config.json" <<CFGEOF
{"web": {"allow_cidrs": ["127.0.0.0/8"]},
 "mcp": {"ev": {"command": "$EV", "args": ["stdio"], "env": {"HULL_CFG_MARK": "from-config"}},
         "fs": {"type": "stdio", "command": "$FS", "args": ["."], "cwd": "$ROOT"},
         "evh": {"url": "http://127.0.0.1:$PORT/mcp", "headers": {"X-Hull-Test": "1"}}}}
CFGEOF
mock '{"steps":[
 {"tool_calls":[{"name":"ev__get-env","input":{}}]},
 {"tool_calls":[{"name":"fs__list_allowed_directories","input":{}}]},
 {"tool_calls":[{"name":"evh__get-sum","input":{"a":1,"b":2}}]},
 {"text":"{{last_tool_result}}"}]}'
run_hull anthropic "config" --json
pyexpect "mcp config: the servers of config.json's \"mcp\" are offered (stdio and HTTP)" \
        'rc == 0 and {"ev__get-env", "fs__list_allowed_directories", "evh__get-sum"} <= set(tool_names(reqs[0])) and j["answer"] == "The sum of 1 and 2 is 3."'
pyexpect "mcp config: a stdio server gets the entry's env" '"from-config" in tool_results(reqs[1])[0][0]'
pyexpect "mcp config: a stdio server runs in the entry's cwd (server-filesystem's \".\" is that directory)" \
        'os.path.realpath(root) in tool_results(reqs[2])[1][0]'
mock_stop
mock '{"steps":[
 {"tool_calls":[{"name":"ev__get-env","input":{}}]},
 {"text":"done"}]}'
run_hull anthropic "flag wins" --json --mcp "ev=$EV stdio"
pyexpect "mcp config: a --mcp of the same name replaces the file's entry, the others stay" \
        'rc == 0 and "ev__get-env" in tool_names(reqs[0]) and "fs__list_allowed_directories" in tool_names(reqs[0]) and "from-config" not in tool_results(reqs[1])[0][0] and "HULL_TEST_MARK" in tool_results(reqs[1])[0][0]'
mock_stop
printf '{"mcp": {"ev": {"command": "%s", "argz": ["stdio"]}}}\n' "$EV" >"$HULL_HOME/config.json"
run_hull anthropic "x" --json
pyexpect "mcp config: a bad entry is an error naming its key" 'rc != 0 and "mcp.ev.argz" in e and "config.json" in e'
printf '{"mcp": {"two words": {"url": "http://127.0.0.1:1/"}}}\n' >"$HULL_HOME/config.json"
run_hull anthropic "x" --json
pyexpect "mcp config: a bad server name is an error naming it" 'rc != 0 and "mcp.two words" in e'
printf '{"web": {"allow_cidrs": ["127.0.0.0/8"]}}\n' >"$HULL_HOME/config.json"
kill -INT "$EVH" 2>/dev/null
for i in $(seq 1 100); do kill -0 "$EVH" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$EVH" 2>/dev/null
wait "$EVH" 2>/dev/null

# ---- failures are clear errors, quickly ----
mock '{"steps":[{"text":"never asked"}]}'
run_hull openai "x" --mcp 'bad=sh -c "echo no such config >&2; exit 5"'
pyexpect "mcp run: a server that exits at start fails the run with its status and stderr" \
        'rc == 1 and "mcp: bad: the server exited with status 5" in e and "no such config" in e and len(reqs) == 0 and secs < 60'
# Ctrl-C while a server does not answer initialize (60 s by default): hull ends at once, 130
t0=$(date +%s)
HULL_PROVIDER=openai HULL_BASE_URL=$MURL/v1 HULL_API_KEY=k HULL_MODEL=mock-model \
        timeout --foreground 120 "$HULL" run "x" --mcp "slow=sh -c 'touch $TEST_TMP/slow.started; exec sleep 100'" \
        >"$O" 2>"$E" </dev/null & # --foreground: timeout passes the SIGINT on once, not to its group too
HP=$!
# once the server runs, hull waits for its initialize answer
for _ in $(seq 1 600); do [ -e "$TEST_TMP/slow.started" ] && break; sleep 0.1; done
sleep 0.5
kill -INT "$HP"
wait "$HP"
RC=$? SECS=$(($(date +%s) - t0))
# a hang check, not a speed check: without the interrupt hull waits 60 s
pyexpect "mcp run: Ctrl-C while a server starts ends hull (130) and says so" \
        'rc == 130 and "mcp: slow: initialize was interrupted" in e and len(reqs) == 0 and secs < 40'
run_hull openai "x" --mcp "nope=/nonexistent/mcp-server"
pyexpect "mcp run: a command that does not exist is named" \
        'rc == 1 and "cannot start" in e and "/nonexistent/mcp-server" in e and len(reqs) == 0'
run_hull openai "x" --mcp "just-a-command"
pyexpect "mcp run: --mcp without NAME= is a usage error" 'rc == 2 and "NAME=COMMAND" in e'
run_hull openai "x" --mcp "web=http://127.0.0.1:1/mcp"
pyexpect "mcp run: an HTTP server that is not there is a clear error" 'rc == 1 and "mcp: web" in e and "127.0.0.1:1" in e and len(reqs) == 0'
run_hull openai "x" --mcp 'inj=echo $(id)'
pyexpect "mcp run: a command substitution in --mcp is refused" 'rc == 2 and "command substitution" in e'
mock_stop

# ---- nothing left running ----
sleep 1
# (only this test's: the servers inherit HULL_TEST_MARK; other tests may run servers meanwhile)
left=$("$PY" - "$TEST_TMP" <<'PYEOF'
import os, sys
mark = ("HULL_TEST_MARK=" + sys.argv[1]).encode()
n = 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        cmd = open("/proc/%s/cmdline" % pid, "rb").read()
        env = open("/proc/%s/environ" % pid, "rb").read().split(b"\0")
    except OSError:
        continue
    if mark in env and (b"mcp-server-" in cmd or cmd == b"sleep\x00100\x00"):
        n += 1
print(n)
PYEOF
)
check "mcp run: no MCP server is left running" test "$left" -eq 0
