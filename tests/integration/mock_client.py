#!/usr/bin/env python3
"""mock_client.py: a small client of hull mock-model for test-mock-model.sh.

  mock_client.py post URL PATH BODY [NAME:VALUE ...]  -> "STATUS", then headers and body as JSON
  mock_client.py raw URL PATH BODY [NAME:VALUE ...]   -> the chunked body read off the socket as JSON:
      {"status", "sizes": [chunk sizes], "ended": the terminating chunk came, "body": the bytes}
"""
import json
import socket
import sys
import urllib.error
import urllib.request
from urllib.parse import urlparse


def headers_of(args):
    return dict(a.split(":", 1) for a in args)


def post(url, path, body, extra):
    req = urllib.request.Request(url + path, data=body.encode(), method="POST", headers=extra)
    if "Content-Type" not in extra:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            status, hdrs, data = res.status, dict(res.headers), res.read()
    except urllib.error.HTTPError as e:
        status, hdrs, data = e.code, dict(e.headers), e.read()
    print(status)
    print(json.dumps({"headers": {k.lower(): v for k, v in hdrs.items()}, "body": data.decode("utf-8", "replace")}))


def raw(url, path, body, extra):
    u = urlparse(url)
    s = socket.create_connection((u.hostname, u.port), timeout=60)
    head = f"POST {path} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Type: application/json\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in extra.items())
    head += f"Content-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n"
    s.sendall(head.encode() + body.encode())
    data = b""
    while True:
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        data += b
    s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    sizes, out, ended = [], b"", False
    while rest:
        line, sep, rest = rest.partition(b"\r\n")
        if not sep:
            break
        n = int(line.split(b";")[0], 16)
        if n == 0:
            ended = True
            break
        if len(rest) < n + 2:  # cut inside a chunk
            out += rest[:n]
            sizes.append(len(rest[:n]))
            break
        sizes.append(n)
        out += rest[:n]
        rest = rest[n + 2:]
    print(json.dumps({"status": status, "sizes": sizes, "ended": ended, "body": out.decode("utf-8", "replace")}))


if __name__ == "__main__":
    cmd, url, path, body = sys.argv[1:5]
    {"post": post, "raw": raw}[cmd](url, path, body, headers_of(sys.argv[5:]))
