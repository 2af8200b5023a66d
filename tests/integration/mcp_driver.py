#!/usr/bin/python3
"""mcp_driver.py: drives `hull mcp` over its stdio with raw JSON-RPC lines (what the SDK's client
cannot send: garbage, bad versions, cancellations) for tests/integration/test-mcp.sh. Prints one
"ok - NAME" / "not ok - NAME: why" line per check. Usage: mcp_driver.py HULL HOME"""
import json
import os
import select
import subprocess
import sys
import time

hull, home = sys.argv[1], sys.argv[2]
proc = subprocess.Popen([hull, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=open(os.path.join(home, "stderr.log"), "wb"))
buf = b""
lines = []  # every stdout line, to check nothing but JSON-RPC came


def result(name, ok, why=""):
    print(("ok - %s" % name) if ok else ("not ok - %s: %s" % (name, why)), flush=True)


def send(obj):
    data = obj if isinstance(obj, (bytes, str)) else json.dumps(obj)
    if isinstance(data, str):
        data = data.encode()
    proc.stdin.write(data + b"\n")
    proc.stdin.flush()


def read_msg(timeout=120.0):
    """The next message on stdout, or None at the deadline or EOF."""
    global buf
    end = time.time() + timeout
    while b"\n" not in buf:
        left = end - time.time()
        if left <= 0:
            return None
        r, _, _ = select.select([proc.stdout], [], [], left)
        if not r:
            return None
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            return None
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    lines.append(line)
    return json.loads(line)


def wait_for(pred, timeout=120.0):
    """Messages until one satisfies pred; returns (it, the others before it)."""
    seen = []
    end = time.time() + timeout
    while time.time() < end:
        m = read_msg(end - time.time())
        if m is None:
            break
        if pred(m):
            return m, seen
        seen.append(m)
    return None, seen


def call(i, method, params=None, timeout=120.0):
    msg = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        msg["params"] = params
    send(msg)
    m, _ = wait_for(lambda x: x.get("id") == i, timeout)
    return m


def tool(i, name, args, meta=None, timeout=120.0):
    p = {"name": name, "arguments": args}
    if meta:
        p["_meta"] = meta
    return call(i, "tools/call", p, timeout)


def text_of(m):
    try:
        return m["result"]["content"][0]["text"]
    except (KeyError, IndexError, TypeError):
        return ""


# initialize: an unknown version gets the latest; a supported one is echoed
m = call(1, "initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                           "clientInfo": {"name": "driver", "version": "0"}})
r = (m or {}).get("result", {})
result("initialize-unknown-version", r.get("protocolVersion") == "2025-11-25", json.dumps(m))
result("initialize-server-info", r.get("serverInfo", {}).get("name") == "hull" and "tools" in r.get("capabilities", {})
       and "audit" in r.get("instructions", ""), json.dumps(r)[:300])
m = call(2, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "driver", "version": "0"}})
result("initialize-echoes-version", (m or {}).get("result", {}).get("protocolVersion") == "2025-06-18", json.dumps(m))
send({"jsonrpc": "2.0", "method": "notifications/initialized"})

m = call(3, "tools/list")
names = [t["name"] for t in (m or {}).get("result", {}).get("tools", [])]
want = ["run_python", "bash", "read", "write", "edit", "glob", "grep", "inspect_handle", "query_handle"]
result("tools-list", all(n in names for n in want) and all(t.get("inputSchema", {}).get("type") == "object"
                                                          for t in m["result"]["tools"]), str(names))

# garbage and wrong JSON-RPC: answered without an id, the server goes on
send(b"this is not json")
m = read_msg()
result("parse-error", m is not None and m.get("error", {}).get("code") == -32700 and "id" not in m, json.dumps(m))
send({"jsonrpc": "1.0", "id": 9, "method": "ping"})
m = read_msg()
result("invalid-request", m is not None and m.get("error", {}).get("code") == -32600 and "id" not in m, json.dumps(m))
m = call(4, "no/such/method")
result("method-not-found", (m or {}).get("error", {}).get("code") == -32601, json.dumps(m))
m = tool(5, "no_such_tool", {})
result("unknown-tool", (m or {}).get("error", {}).get("code") == -32602 and "run_python" in m["error"]["message"],
       json.dumps(m))
m = call(6, "tools/call", {"arguments": {}})
result("call-without-name", (m or {}).get("error", {}).get("code") == -32602, json.dumps(m))
m = tool(7, "write", {"file_path": 42})
result("bad-arguments-is-error", (m or {}).get("result", {}).get("isError") is True
       and "file_path" in text_of(m), json.dumps(m))
m = call(8, "ping")
result("serving-after-errors", (m or {}).get("result") == {}, json.dumps(m))

# the session persists between calls
tool(10, "bash", {"command": "echo kept > /workspace/k.txt"})
m = tool(11, "bash", {"command": "cat k.txt"})
result("workspace-persists", "kept" in text_of(m), json.dumps(m))

# cancellation: the call in flight stops and is not answered; a ping is answered while it runs
send({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
      "params": {"name": "bash", "arguments": {"command": "sleep 60; echo late"}}})
time.sleep(1.0)
send({"jsonrpc": "2.0", "id": 21, "method": "ping"})
m, _ = wait_for(lambda x: x.get("id") in (20, 21), 30)
result("ping-during-call", m is not None and m.get("id") == 21, json.dumps(m))
started = time.time()
send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 20, "reason": "test"}})
m = tool(22, "bash", {"command": "echo after"}, timeout=60)
result("cancelled-call-stops", "after" in text_of(m) and time.time() - started < 50, json.dumps(m))
result("cancelled-call-unanswered", not any(json.loads(l).get("id") == 20 for l in lines), "id 20 was answered")

# stdout held nothing but JSON-RPC 2.0 messages
ok = all(json.loads(l).get("jsonrpc") == "2.0" for l in lines)
result("stdout-only-jsonrpc", ok, "a line is not JSON-RPC")

# EOF on stdin ends it cleanly
proc.stdin.close()
try:
    rc = proc.wait(60)
except subprocess.TimeoutExpired:
    proc.kill()
    rc = "hung"
result("eof-ends-cleanly", rc == 0, "exit %s" % rc)
