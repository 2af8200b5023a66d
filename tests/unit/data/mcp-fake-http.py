#!/usr/bin/python3
# mcp-fake-http.py PORTFILE: a misbehaving Streamable HTTP MCP endpoint for test-mcp-client, on a
# free loopback port (written to PORTFILE). The path says how it misbehaves:
#   /garbage   an event stream whose message is not JSON
#   /json      an application/json answer that is not JSON-RPC
#   /hang      never answers (the client's deadline must end it)
#   /401       401 with a WWW-Authenticate header
import http.server
import socketserver
import sys
import time


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/garbage":
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
