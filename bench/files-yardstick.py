# files-yardstick.py PORT DIR: bench/files.sh's yardstick, a static server on the same machine:
# GET serves DIR's files (Python's http.server), POST writes the request body to DIR/upload.bin
# in 1 MiB reads and answers 200.
import http.server
import os
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_POST(self):
        left = int(self.headers['Content-Length'])
        with open(os.path.join(sys.argv[2], 'upload.bin'), 'wb') as f:
            while left:
                b = self.rfile.read(min(left, 1 << 20))
                if not b:
                    break
                f.write(b)
                left -= len(b)
        self.send_response(200)
        self.send_header('Content-Length', '0')
        self.end_headers()

    def log_message(self, *args):
        pass


os.chdir(sys.argv[2])
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
