#!/usr/bin/python3
"""mcp_records.py: every `hull mcp` tool call on the record, for tests/integration/test-mcp-records.sh.
Drives `hull mcp --home HOME` over stdio with raw JSON-RPC lines: makes files and a table handle,
then reads, globs, greps, inspects and queries (answers and error answers), and after the end
matches the audit log against what the client was answered: one record per read-only call, in
order, whose request is the call's arguments and whose result is the answer the client got, each
digest recomputed with plimsoll_record.py (independent of hull's C code). Prints one
"ok - NAME" / "not ok - NAME: why" line per check and, last, "log PATH".
Usage: mcp_records.py HULL HOME"""
import glob
import json
import os
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plimsoll_record as record  # noqa: E402

hull, home = sys.argv[1], sys.argv[2]
proc = subprocess.Popen([hull, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=open(os.path.join(home, "stderr.log"), "wb"))
buf = b""
seen_ids = []  # the id of every message read


def result(name, ok, why=""):
    print(("ok - %s" % name) if ok else ("not ok - %s: %s" % (name, why)), flush=True)


def send(obj):
    proc.stdin.write(json.dumps(obj).encode() + b"\n")
    proc.stdin.flush()


def read_msg(timeout):
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
    m = json.loads(line)
    seen_ids.append(m.get("id"))
    return m


def call(i, method, params=None, timeout=120.0):
    msg = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        msg["params"] = params
    send(msg)
    end = time.time() + timeout
    while time.time() < end:
        m = read_msg(end - time.time())
        if m is None:
            return None
        if m.get("id") == i:
            return m
    return None


answered = []  # (tool, arguments, answer) of each read-only call, in order
READ_ONLY = ("read", "glob", "grep", "inspect_handle", "query_handle")
next_id = [10]


def tool(name, args):
    next_id[0] += 1
    m = call(next_id[0], "tools/call", {"name": name, "arguments": args})
    res = (m or {}).get("result") or {}
    if name in READ_ONLY and res:
        answered.append((name, args, res))
    return res


def text(res):
    try:
        return res["content"][0]["text"]
    except (KeyError, IndexError, TypeError):
        return ""


m = call(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "mcp_records", "version": "0"}})
instructions = (m or {}).get("result", {}).get("instructions", "")
result("the instructions name the audit log", "/audit/session-" in instructions and home in instructions,
       instructions[-200:])
send({"jsonrpc": "2.0", "method": "notifications/initialized"})

r = tool("bash", {"command": "mkdir -p data src && printf 'hello\\nworld\\n' > notes.txt && "
                             "printf 'a,b\\n1,x\\n' > data/t.csv && printf 'x = 1\\n# World\\n' > src/m.py"})
result("bash makes the files", not r.get("isError"), text(r))
r = tool("run_python", {"code": "import pandas as pd\n"
                                "save('sales', pd.DataFrame({'region': ['n', 's', 'n'], 'amount': [1, 2, 3]}))\n"
                                "print('saved')"})
result("run_python saves a table handle", "saved" in text(r) and not r.get("isError"), text(r))

r = tool("read", {"file_path": "notes.txt"})
result("read answers the file", "hello" in text(r) and "world" in text(r), text(r))
r = tool("read", {"file_path": "/workspace/notes.txt", "offset": 2, "limit": 1})
result("read with offset and limit", "world" in text(r) and "hello" not in text(r), text(r))
r = tool("glob", {"pattern": "**/*.csv"})
result("glob answers the matches", "data/t.csv" in text(r), text(r))
r = tool("grep", {"pattern": "world", "-i": True, "output_mode": "content", "head_limit": 10})
result("grep answers the lines", "notes.txt:2:world" in text(r) and "m.py" in text(r), text(r))
r = tool("inspect_handle", {"handle_id": "sales", "rows": 2, "stats": True})
result("inspect_handle answers the table", "region" in text(r) and not r.get("isError"), text(r)[:300])
r = tool("query_handle", {"sql": "SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY 1"})
result("query_handle answers the rows", '"n"' in text(r) and "4" in text(r) and not r.get("isError"), text(r)[:300])
r = tool("read", {"file_path": "missing.txt"})
result("a read of a missing file is an error answer", r.get("isError") is True, text(r))
r = tool("read", {"file_path": "../../etc/passwd"})
result("a read outside /workspace is refused", r.get("isError") is True and "root:" not in text(r), text(r))
r = tool("query_handle", {"sql": "SELECT nope FROM sales"})
result("a bad query is an error answer", r.get("isError") is True, text(r))
r = tool("read", {"file_path": 5})  # refused by the schema: never ran, not recorded
result("bad arguments never run", r.get("isError") is True and "did not run" in text(r), text(r))
answered.pop()
# A read-only call the client cancels while it runs is not answered, and is on the record as
# version 3 ("canceled"). The grep is slow on purpose (a backtracking pattern over 40000 lines:
# it runs into its time budget); it is cancelled once its first progress shows it running.
r = tool("bash", {"command": "mkdir big && for i in $(seq 200); do yes aaaaaaaaaaaaaaaaaaaaaaaaaaaa! | "
                             "head -n 200 > big/f$i.txt; done; echo made"})
result("bash makes the slow grep's files", "made" in text(r), text(r))
next_id[0] += 1
gid = next_id[0]
send({"jsonrpc": "2.0", "id": gid, "method": "tools/call",
      "params": {"name": "grep", "arguments": {"pattern": "(a|aa)+$", "path": "big"}, "_meta": {"progressToken": "g"}}})
first = None
end = time.time() + 120
while time.time() < end:
    first = read_msg(end - time.time())
    if first is None or first.get("method") == "notifications/progress" or first.get("id") == gid:
        break
result("the slow grep reports progress", (first or {}).get("method") == "notifications/progress", json.dumps(first))
send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": gid, "reason": "test"}})
cancelled_args = {"pattern": "(a|aa)+$", "path": "big"}
r = tool("glob", {"pattern": "*.txt"})
result("the session serves on after the cancelled grep", "notes.txt" in text(r), text(r))
answered.pop()  # checked below with the others: remembered apart
glob_after = ({"pattern": "*.txt"}, r)
r = tool("write", {"file_path": "out.txt", "content": "w"})
result("write still records itself", not r.get("isError"), text(r))

proc.stdin.close()
try:
    rc = proc.wait(60)
except subprocess.TimeoutExpired:
    proc.kill()
    rc = "hung"
result("hull mcp ends cleanly", rc == 0, "exit %s" % rc)
result("the cancelled grep got no answer", gid not in seen_ids, "it was answered")

logs = glob.glob(os.path.join(home, "mcp", "*", "audit", "session-*.jsonl"))
if len(logs) != 1:
    result("one audit log", False, str(logs))
    sys.exit(0)
log = logs[0]
result("the instructions named this log", log in instructions, log)
entries = [json.loads(line) for line in open(log, encoding="utf-8")]
ops = [e.get("operation") or "cell" for e in entries]
result("every call that ran is on the record, in order",
       ops == ["exec", "cell", "read", "read", "glob", "grep", "inspect_handle", "query_handle", "read", "read",
               "query_handle", "exec", "grep", "glob", "write"], str(ops))
reads = [e for e in entries if e.get("operation") in READ_ONLY]
# the cancelled grep and the glob after it, apart from the answered calls before them
if len(reads) >= 2:
    cut, after = reads[-2], reads[-1]
    reads = reads[:-2]
    rec = cut["record"]
    result("the cancelled grep's record: version 3, canceled, its arguments, no result",
           rec.get("version") == 3 and rec.get("unanswered") == "canceled" and not rec.get("resultSha256")
           and "result" not in cut and cut["request"] == cancelled_args
           and rec.get("requestSha256") == record.hull_request_digest("grep", cancelled_args)
           and rec.get("recordSha256") == record.record_digest(rec), json.dumps(cut)[:400])
    answered.append(("glob",) + glob_after)
    reads.append(after)
result("one record per read-only call", len(reads) == len(answered), "%d records, %d calls" % (len(reads),
                                                                                            len(answered)))
for (name, args, res), e in zip(answered, reads):
    ids = [h.get("id") for h in (res.get("structuredContent") or {}).get("handles", [])]
    want = {"text": text(res), "isError": bool(res.get("isError")), "handles": ids}
    rec = e["record"]
    probs = []
    if e["operation"] != name:
        probs.append("operation %s" % e["operation"])
    if e["request"] != args:
        probs.append("request %r is not the arguments %r" % (e["request"], args))
    if e.get("result") != want:
        probs.append("result %r is not the answer %r" % (e.get("result"), want))
    if rec.get("version") != 2:
        probs.append("version %r" % rec.get("version"))
    if rec.get("requestSha256") != record.hull_request_digest(name, args):
        probs.append("requestSha256 is not the arguments' digest")
    if rec.get("resultSha256") != record.hull_result_digest(name, want):
        probs.append("resultSha256 is not the answer's digest")
    if rec.get("recordSha256") != record.record_digest(rec):
        probs.append("recordSha256 does not hold")
    result("the %s record (%s) states the arguments and the answer" % (name, json.dumps(args)[:60]), not probs,
           "; ".join(probs))
print("log %s" % log, flush=True)
