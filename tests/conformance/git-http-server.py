#!/usr/bin/env python3
# git-http-server.py: a git smart-HTTP server on loopback for the github_repository tests: Debian's
# `git http-backend` (CGI) behind a check of "Authorization: Bearer TOKEN". Usage:
# git-http-server.py PROJECT_ROOT TOKEN; prints "port=N" once listening. No internet involved.
import http.server
import os
import subprocess
import sys

ROOT, TOKEN = sys.argv[1], sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def serve(self):
        if self.headers.get('Authorization') != f'Bearer {TOKEN}':
            self.send_response(401)
            self.send_header('WWW-Authenticate', 'Basic realm="git"')
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        path, _, query = self.path.partition('?')
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n else b''
        env = {'GIT_PROJECT_ROOT': ROOT, 'GIT_HTTP_EXPORT_ALL': '1', 'PATH_INFO': path, 'QUERY_STRING': query,
               'REQUEST_METHOD': self.command, 'CONTENT_TYPE': self.headers.get('Content-Type', ''),
               'CONTENT_LENGTH': str(len(body)), 'REMOTE_ADDR': '127.0.0.1', 'PATH': '/usr/bin:/bin',
               'GIT_CONFIG_NOSYSTEM': '1', 'HOME': ROOT}
        if self.headers.get('Git-Protocol'):
            env['GIT_PROTOCOL'] = self.headers['Git-Protocol']
        out = subprocess.run(['git', 'http-backend'], input=body, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b'\r\n\r\n')
        status = 200
        headers = []
        for line in head.split(b'\r\n'):
            k, _, v = line.decode().partition(':')
            if k.lower() == 'status':
                status = int(v.strip().split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    do_GET = serve
    do_POST = serve


srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
print(f'port={srv.server_address[1]}', flush=True)
srv.serve_forever()
