#!/usr/bin/python3
# mcp-fake-http.py PORTFILE: a misbehaving Streamable HTTP MCP endpoint for test-mcp-client, on a
# free loopback port (written to PORTFILE). The path says how it misbehaves:
#   /garbage   an event stream whose message is not JSON
#   /json      an application/json answer that is not JSON-RPC
#   /hang      never answers (the client's deadline must end it)
#   /401       401 with a WWW-Authenticate header
#   /resume... a server whose tools/call event stream breaks after its first progress event (id
#              "s2", retry 100 ms): /resume cuts the chunked stream mid-event, /resume-eof ends it
#              cleanly; a GET with Last-Event-ID s2 (and the session's id) replays progress 2 and
#              the result. /resume-dead: every GET is an empty stream; /resume-405: GET refused.
#              Each GET is logged as a JSON line to PORTFILE.log.
import http.server
import json
import socket
import socketserver
import sys
import time

SESSION = "fake-session-1"
state = {"calls": 0, "rid": None, "token": None}


def sse(events):
    return "".join(events).encode()


def event(eid, msg):
    return "id: %s\nevent: message\ndata: %s\n\n" % (eid, json.dumps(msg))


def progress(n):
    return {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": state["token"], "progress": n, "total": 3}}


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def resume_post(self, body):
        m = json.loads(body)
        if m.get("method") == "initialize":
            out = json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-resume", "version": "1"}}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Mcp-Session-Id", SESSION)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        if "id" not in m:  # a notification
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        state["calls"] += 1
        state["rid"] = m["id"]
        state["token"] = m.get("params", {}).get("_meta", {}).get("progressToken")
        first = sse(["retry: 100\nid: s1\ndata:\n\n", event("s2", progress(1))])
        if self.path == "/resume-eof":  # HTTP/1.0: the stream ends when the connection closes
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(first + b"id: s3\nevent: message\ndata: {")
            return
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        part = first + b"id: s3\nevent: message\ndata: {"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(part) + 100, part))  # a chunk that never ends
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def do_GET(self):
        if not self.path.startswith("/resume"):
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(sys.argv[1] + ".log", "a") as f:
            f.write(json.dumps({"path": self.path, "last_event_id": self.headers.get("Last-Event-ID"),
                                "session": self.headers.get("Mcp-Session-Id"),
                                "accept": self.headers.get("Accept"), "calls": state["calls"]}) + "\n")
        if self.path == "/resume-405":
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/resume-dead":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            return
        if self.headers.get("Last-Event-ID") != "s2" or self.headers.get("Mcp-Session-Id") != SESSION:
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        result = {"jsonrpc": "2.0", "id": state["rid"],
                  "result": {"content": [{"type": "text", "text": "resumed result"}]}}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(sse([event("s3", progress(2)), event("s4", result)]))

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.startswith("/resume"):
            self.resume_post(body)
        elif self.path == "/garbage":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"event: message\ndata: this is not json\n\n")
        elif self.path == "/json":
            body = b'{"hello": "world"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/hang":
            time.sleep(30)
        else:
            self.send_response(401)
            self.send_header("WWW-Authenticate", "Bearer")
            self.send_header("Content-Length", "0")
            self.end_headers()


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


s = S(("127.0.0.1", 0), H)
with open(sys.argv[1], "w") as f:
    f.write(str(s.server_address[1]))
s.serve_forever()
