"""bench/blob_server.py BLOB PORTFILE: serve BLOB's bytes to any GET on 127.0.0.1 (sendfile, HTTP/1.1
keep-alive, a thread per connection), the port written to PORTFILE once listening. The far end
of bench/net.sh's and bench/net-relay.sh's transfers."""
import http.server
import os
import sys

blob, portfile = sys.argv[1:3]
size = os.path.getsize(blob)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        with open(blob, "rb") as f:
            self.connection.sendfile(f)


s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
