#!/usr/bin/python3
# mcp-fake-server.py MODE: a tiny MCP stdio server for test-mcp-client, speaking just enough of
# the protocol to check the client's side of it. MODE:
#   ok        initialize; tools/list in 3 pages (cursors "p2", "p3"); tools:
#               echo {message}      -> text "Echo: MESSAGE"
#               pinger              -> pings the client first, answers once the client answered
#               chatty              -> a notifications/message and 3 progress notifications first
#               hang                -> never answers (notifications/cancelled is remembered)
#               last-cancelled      -> text: the requestId of the last notifications/cancelled
#               sampling            -> sends sampling/createMessage; text: the error code it got
#   badversion  answers initialize with protocolVersion 1999-01-01
#   initerror   answers initialize with a JSON-RPC error
import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
last_cancelled = None
pending = {}  # our request id -> (the client's request id, what to do with the answer)
next_id = 100


def send(o):
    o["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()


def text(rid, t, **extra):
    r = {"content": [{"type": "text", "text": t}]}
    r.update(extra)
    send({"id": rid, "result": r})


TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in
         ["echo", "pinger", "chatty", "hang", "last-cancelled", "sampling", "odd.name/with:chars"]]
TOOLS[0]["inputSchema"] = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                           "properties": {"message": {"type": "string"}}, "required": ["message"]}
TOOLS[0]["description"] = "Echoes"
TOOLS[1]["description"] = "a" + "\u00e9" * 5000  # 10000 bytes of UTF-8: cut, never inside a character

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    m = json.loads(line)
    method, rid, params = m.get("method"), m.get("id"), m.get("params") or {}
    if method is None:  # an answer to one of our requests
        if rid in pending:
            crid, kind = pending.pop(rid)
            if kind == "ping":
                text(crid, "pong answered" if m.get("result") == {} else "bad ping answer")
            else:
                text(crid, "sampling answered with error %s" % m.get("error", {}).get("code"))
        continue
    if method == "initialize":
        if mode == "badversion":
            send({"id": rid, "result": {"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}}})
        elif mode == "initerror":
            send({"id": rid, "error": {"code": -32602, "message": "Unsupported protocol version"}})
        else:
            v = params.get("protocolVersion")
            send({"id": rid, "result": {"protocolVersion": v, "capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}, "instructions": "be nice"}})
    elif method == "notifications/initialized":
        send({"method": "notifications/tools/list_changed"})
    elif method == "notifications/cancelled":
        last_cancelled = params.get("requestId")
    elif method == "tools/list":
        cur = params.get("cursor")
        page = {None: (0, 3, "p2"), "p2": (3, 5, "p3"), "p3": (5, 7, None)}.get(cur)
        if page is None:
            send({"id": rid, "error": {"code": -32602, "message": "bad cursor"}})
            continue
        res = {"tools": TOOLS[page[0]:page[1]]}
        if page[2]:
            res["nextCursor"] = page[2]
        send({"id": rid, "result": res})
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        tok = (params.get("_meta") or {}).get("progressToken")
        if name == "echo":
            text(rid, "Echo: %s" % args.get("message"))
        elif name == "pinger":
            next_id += 1
            pending[next_id] = (rid, "ping")
            send({"id": next_id, "method": "ping"})
        elif name == "sampling":
            next_id += 1
            pending[next_id] = (rid, "sampling")
            send({"id": next_id, "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}})
        elif name == "chatty":
            send({"method": "notifications/message", "params": {"level": "warning", "logger": "fake", "data": "careful"}})
            for i in range(1, 4):
                if tok is not None:
                    send({"method": "notifications/progress", "params": {"progressToken": tok, "progress": i, "total": 3}})
            send({"method": "notifications/progress", "params": {"progressToken": "not-yours", "progress": 9}})
            text(rid, "chatty done")
        elif name == "hang":
            pass
        elif name == "last-cancelled":
            text(rid, json.dumps(last_cancelled))
        else:
            text(rid, "no tool %s" % name, isError=True)
    elif rid is not None:
        send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})
