#!/usr/bin/env python3
"""v1_client.py: a small client of hull serve's /v1 API for test-v1-crash.sh and test-v1-bad-input.sh.

  v1_client.py call METHOD URL [BODY|@FILE|-] [NAME:VALUE ...]
      -> "STATUS" on one line, then {"headers": {...lower-case...}, "body": "..."} on the next
         (an SSE answer's body is left unread: "").
         The /v1 headers (anthropic-version 2026-10-21, anthropic-beta managed-agents-2026-04-01,
         content-type application/json, and x-api-key $V1_KEY when set) are added unless given;
         NAME: with an empty value leaves that header out.
  v1_client.py big URL SIZE      -> POST SIZE bytes of a JSON string to URL over a raw socket; the
         answer as "call" prints it (the server may answer before reading it all).
  v1_client.py sse URL OUT [NAME:VALUE ...]
      -> reads URL as an SSE stream, appending each frame to OUT as one JSON line
         {"id", "event", "data"} (flushed), until the connection ends (exit 0) or it is killed.
         First line written: {"status": N} once the headers came.
  v1_client.py events BASE SESSION -> every event of GET BASE/v1/sessions/SESSION/events, following
         next_page (limit 100), as one JSON array.
  v1_client.py parallel N URL BODY -> N POSTs of BODY at once; a JSON array of [status, body] pairs.
"""
import json
import os
import socket
import sys
import threading
import urllib.error
import urllib.request
from urllib.parse import urlparse, urlencode

BETA = "managed-agents-2026-04-01"


def headers_of(args):
    h = {"anthropic-version": "2026-10-21", "anthropic-beta": BETA, "content-type": "application/json"}
    if os.environ.get("V1_KEY"):
        h["x-api-key"] = os.environ["V1_KEY"]
    for a in args:
        k, v = a.split(":", 1)
        h[k.strip().lower()] = v.strip()
    return {k: v for k, v in h.items() if v != ""}


def request(method, url, body, hdrs, timeout=120):
    data = None if body is None else (body if isinstance(body, bytes) else body.encode())
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            hdrs = {k.lower(): v for k, v in res.headers.items()}
            if hdrs.get("content-type", "").startswith("text/event-stream"):
                return res.status, hdrs, b""  # a stream: its head is the answer (it would not end)
            return res.status, hdrs, res.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def body_arg(b):
    if b == "-":
        return None
    if b.startswith("@"):
        with open(b[1:], "rb") as f:
            return f.read()
    return b


def call(method, url, body, extra):
    status, hdrs, data = request(method, url, body_arg(body) if body is not None else None, headers_of(extra))
    print(status)
    print(json.dumps({"headers": hdrs, "body": data.decode("utf-8", "replace")}))


def big(url, size):
    u = urlparse(url)
    s = socket.create_connection((u.hostname, u.port), timeout=60)
    path = u.path + ("?" + u.query if u.query else "")
    h = headers_of([])
    head = f"POST {path} HTTP/1.1\r\nHost: {u.netloc}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items())
    head += f"Content-Length: {size}\r\nConnection: close\r\n\r\n"
    s.sendall(head.encode())
    chunk = b"x" * 65536
    sent = 0
    try:
        s.sendall(b'{"name": "')
        sent = 10
        while sent < size - 2:
            n = min(len(chunk), size - 2 - sent)
            s.sendall(chunk[:n])
            sent += n
        s.sendall(b'"}')
    except OSError:
        pass  # the server answered (and closed) before reading it all: fine
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError:
        pass
    s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        status = 0
    hdrs = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        out, r = b"", rest
        while r:
            size_line, _, r = r.partition(b"\r\n")
            try:
                n = int(size_line.split(b";")[0], 16)
            except ValueError:
                break
            if n == 0:
                break
            out, r = out + r[:n], r[n + 2:]
        rest = out
    print(status)
    print(json.dumps({"headers": hdrs, "body": rest.decode("utf-8", "replace")}))


def sse(url, out, extra):
    hdrs = headers_of(extra)
    hdrs.pop("content-type", None)
    req = urllib.request.Request(url, headers=hdrs)
    with open(out, "a") as f:
        def put(obj):
            f.write(json.dumps(obj) + "\n")
            f.flush()
        try:
            res = urllib.request.urlopen(req, timeout=600)
        except urllib.error.HTTPError as e:
            put({"status": e.code, "body": e.read().decode("utf-8", "replace")})
            return
        put({"status": res.status, "content_type": res.headers.get("content-type")})
        cur = {"id": None, "event": None, "data": []}
        try:
            for raw in res:
                line = raw.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if cur["event"] is not None or cur["data"]:
                        put({"id": cur["id"], "event": cur["event"], "data": "\n".join(cur["data"])})
                    cur = {"id": None, "event": None, "data": []}
                    continue
                if line.startswith(":"):
                    continue
                field, _, val = line.partition(":")
                if val.startswith(" "):
                    val = val[1:]
                if field == "id":
                    cur["id"] = val
                elif field == "event":
                    cur["event"] = val
                elif field == "data":
                    cur["data"].append(val)
        except (OSError, ValueError):
            pass  # the server went away (kill -9): what came is in OUT
        put({"end": True})


def events(base, session):
    out, page = [], None
    for _ in range(10000):
        q = {"limit": 100}
        if page:
            q["page"] = page
        status, _, data = request("GET", f"{base}/v1/sessions/{session}/events?{urlencode(q)}", None, headers_of([]))
        if status != 200:
            sys.exit(f"GET events: {status}: {data[:300]!r}")
        j = json.loads(data)
        out += j.get("data") or []
        page = j.get("next_page")
        if not page:
            break
    print(json.dumps(out))


def parallel(n, url, body):
    res = [None] * n
    go = threading.Barrier(n)

    def one(i):
        go.wait()
        try:
            s, _, d = request("POST", url, body, headers_of([]))
            res[i] = [s, d.decode("utf-8", "replace")]
        except OSError as e:
            res[i] = [0, str(e)]

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps(res))


def main():
    a = sys.argv[1:]
    if a[0] == "call":
        call(a[1], a[2], a[3] if len(a) > 3 else None, a[4:])
    elif a[0] == "big":
        big(a[1], int(a[2]))
    elif a[0] == "sse":
        sse(a[1], a[2], a[3:])
    elif a[0] == "events":
        events(a[1], a[2])
    elif a[0] == "parallel":
        parallel(int(a[1]), a[2], a[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
