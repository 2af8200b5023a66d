#!/usr/bin/python3
"""hostile_client.py: what a hostile local client found in hull serve, each checked again (standard
library only, loopback only, every connection bounded in count and time). One line per check:
"ok - ...", "not ok - ...: why", "skip - ...: why".

  hostile_client.py net URL               trickled heads, NUL bytes, a chunked flood, Describe's body
  hostile_client.py calls URL SOCK        half-closed Run calls over TCP and the unix socket
  hostile_client.py session URL SOCK      a half-closed Exec, a unix-socket hang-up, snake_case fields
  hostile_client.py unserved URL          uploads to a route hull does not serve: the whole body
                                          sent, then the 404 read (what an SDK's files.upload does)
"""
import base64
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

failures = 0
SERVICE = "/plimsoll.v1.SandboxService/"


def ok(name):
    print("ok - " + name, flush=True)


def bad(name, why):
    global failures
    failures += 1
    mark = os.environ.get("HULL_TEST_FAILED_MARK")  # tests/lib.sh prints its servers' logs then
    if mark:
        open(mark, "a").close()
    print("not ok - %s: %s" % (name, why), flush=True)


def check(name, cond, why=""):
    if cond:
        ok(name)
    else:
        bad(name, why or "condition false")
    return cond


def addr(url):
    u = urllib.parse.urlsplit(url)
    return u.hostname, u.port


def connect(target, source="127.0.0.1", timeout=10):
    if isinstance(target, str):  # a unix socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(target)
        return s
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(target)
    return s


def read_answer(s, timeout=30):
    """Read one HTTP answer (Content-Length or to EOF). Returns (status, headers, body) or (0, {}, why)."""
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        if not lines[0].startswith("HTTP/1."):
            return 0, {}, data[:200]
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "-1"))
        while n < 0 or len(body) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, headers, body
    except OSError as e:
        return 0, {}, repr(e)


def request(method, path, body=b"", headers=(), rid=None):
    h = ["%s %s HTTP/1.1" % (method, path), "Host: x", "Connection: close"]
    h += ["%s: %s" % kv for kv in headers]
    if rid:
        h.append("Plimsoll-Request-Id: " + rid)
    if body or method == "POST":
        h.append("Content-Length: %d" % len(body))
    return ("\r\n".join(h) + "\r\n\r\n").encode() + body


def json_post(target, path, msg, half_close=False, timeout=60):
    body = json.dumps(msg).encode()
    s = connect(target)
    s.sendall(request("POST", path, body, [("Content-Type", "application/json")]))
    if half_close:
        s.shutdown(socket.SHUT_WR)  # the whole request is sent; the answer is still wanted
    st, h, b = read_answer(s, timeout)
    s.close()
    try:
        return st, json.loads(b)
    except (ValueError, TypeError):
        return st, b


def closed_within(s, seconds):
    """Wait for the server to close s: the seconds it took, or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        r, _, _ = select.select([s], [], [], 0.2)
        if r:
            try:
                if s.recv(4096) == b"":
                    return time.monotonic() - t0
            except OSError:
                return time.monotonic() - t0
    return None


# ---- net: needs no sandbox ----

def net(url):
    target = addr(url)

    # 64 connections that trickle their head a byte a second, from the clients' address; one more
    # from another address, to time its cut
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nUser-Agent: slow\r\nAccept: */*\r\nX-Pad: " + b"p" * 200 + b"\r\n\r\n"
    socks = []
    for _ in range(64):
        try:
            socks.append(connect(target, timeout=2))
        except OSError:
            break
    lone = connect(target, "127.0.0.2", timeout=2)
    stop = threading.Event()

    def trickle():
        i = 0
        while not stop.is_set() and i < len(head):
            for s in socks + [lone]:
                try:
                    s.send(head[i:i + 1])
                except OSError:
                    pass
            i += 1
            stop.wait(1.0)
    t = threading.Thread(target=trickle, daemon=True)
    started = time.monotonic()
    t.start()
    time.sleep(2.5)
    answered = 0
    for _ in range(16):
        try:
            s = connect(target, timeout=3)
            s.sendall(request("GET", "/healthz"))
            st, _, body = read_answer(s, timeout=3)
            s.close()
            answered += st == 200 and body == b"ok\n"
        except OSError:
            pass
    check("64 connections trickling their heads: /healthz answers 16 of 16 (%d)" % answered, answered == 16)
    cut = closed_within(lone, 25 - (time.monotonic() - started)) is not None
    elapsed = time.monotonic() - started  # since its first byte
    check("a head trickled a byte a second is cut within its bound (10 s, a tick late at most): after %.1f s"
          % elapsed, cut and elapsed <= 20, "still open after %.1f s" % elapsed)
    stop.set()
    t.join()
    for s in socks + [lone]:
        s.close()

    # a NUL in the path or a header: refused, not cut short
    for name, raw in [
            ("%00 after the procedure", b"POST /plimsoll.v1.SandboxService/Describe%00 HTTP/1.1\r\n"),
            ("%00 inside a segment", b"POST /plimsoll.v1.SandboxService/Desc%00ribe HTTP/1.1\r\n"),
            ("a raw NUL in the path", b"POST /plimsoll.v1.SandboxService/Describe\x00x HTTP/1.1\r\n")]:
        s = connect(target)
        s.sendall(raw + b"Host: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        st, h, body = read_answer(s)
        s.close()
        check("%s: 400, not Describe" % name, st == 400 and b"invalid_argument" in body and b"supportsProject" not in body,
              "%d %r" % (st, body[:200]))
    for name, hdr in [("a NUL in Content-Type", b"Content-Type: application/json\x00junk\r\n"),
                      ("a NUL in another header", b"Content-Type: application/json\r\nX-Trace: a\x00b\r\n")]:
        s = connect(target)
        s.sendall(b"POST /plimsoll.v1.SandboxService/Describe HTTP/1.1\r\nHost: x\r\n" + hdr +
                  b"Content-Length: 2\r\nConnection: close\r\n\r\n{}")
        st, h, body = read_answer(s)
        s.close()
        check("%s: 400" % name, st == 400 and b"supportsProject" not in body, "%d %r" % (st, body[:200]))

    # a chunked body over 16 MiB: answered like one declared with Content-Length, and logged
    rid = os.urandom(16).hex()
    s = connect(target, timeout=60)
    s.sendall(b"POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\nConnection: close\r\nPlimsoll-Request-Id: " + rid.encode() + b"\r\n\r\n")
    piece = b"x" * (1 << 20)
    sent_ok = True
    try:
        for _ in range(17):
            s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        s.sendall(b"0\r\n\r\n")
    except OSError:
        sent_ok = False
    st, h, body = read_answer(s, 60)
    s.close()
    try:
        j = json.loads(body)
    except (ValueError, TypeError):
        j = {}
    check("a chunked body of 17 MiB is answered: 400, the body is over the bound, not dispatched",
          sent_ok and st == 400 and j.get("code") == "invalid_argument" and "the body is over" in j.get("message", "")
          and h.get("plimsoll-not-dispatched") == "request", "%d %r" % (st, body[:200]))
    print("rid-chunked " + rid, flush=True)  # the shell looks for its log line

    # Describe takes DescribeRequest {}: the protocol gate and unknown fields as everywhere
    st, j = json_post(target, SERVICE + "Describe", {"x": 1})
    check("Describe with an unknown field: invalid_argument", st == 400 and j.get("code") == "invalid_argument", repr(j))
    st, j = json_post(target, SERVICE + "Describe", {"protocol": 4})
    check("Describe stating protocol 4: unimplemented", st == 501 and j.get("code") == "unimplemented", repr(j))
    st, j = json_post(target, SERVICE + "Describe", {"protocol": 3})
    check("Describe stating protocol 3: 200", st == 200 and j.get("protocol") == 3, repr(j)[:200])


# ---- unserved: uploads to a route hull does not serve ----

BOUNDARY = "----hullUnservedBoundary"


def multipart(size):
    pre = ('--%s\r\nContent-Disposition: form-data; name="file"; filename="data.bin"\r\n'
           'Content-Type: application/octet-stream\r\n\r\n' % BOUNDARY).encode()
    return pre, ("\r\n--%s--\r\n" % BOUNDARY).encode()


def upload(target, path, size, chunked=False, keep_alive=False, sock=None):
    """POST a multipart body of size bytes of data to path the way an SDK does: all of it, then
    read the answer. Returns (send error or None, status, headers, body, socket or None)."""
    s = sock or connect(target, timeout=30)
    pre, post = multipart(size)
    head = ["POST %s HTTP/1.1" % path, "Host: x", "anthropic-version: 2023-06-01",
            "anthropic-beta: files-api-2025-04-14", "Content-Type: multipart/form-data; boundary=" + BOUNDARY]
    head.append("Transfer-Encoding: chunked" if chunked else "Content-Length: %d" % (len(pre) + size + len(post)))
    if not keep_alive:
        head.append("Connection: close")
    frame = (lambda b: b"%x\r\n" % len(b) + b + b"\r\n") if chunked else (lambda b: b)
    err = None
    try:
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + frame(pre))
        piece, sent = b"u" * (1 << 16), 0
        while sent < size:
            n = min(len(piece), size - sent)
            s.sendall(frame(piece[:n]))
            sent += n
        s.sendall(frame(post) + (b"0\r\n\r\n" if chunked else b""))
    except OSError as e:
        err = e
    st, h, body = read_answer(s, 30)
    if keep_alive:
        return err, st, h, body, s
    s.close()
    return err, st, h, body, None


def is_v1_404(st, body):
    try:
        j = json.loads(body)
    except (ValueError, TypeError):
        return False
    return st == 404 and j.get("type") == "error" and j.get("error", {}).get("type") == "not_found_error"


def unserved(url):
    # /v1/no_such_uploads: a route hull does not serve (/v1/files is served since issue 22)
    target = addr(url)
    for size in (64 << 10, 4 << 20, 15 << 20):
        err, st, h, body, _ = upload(target, "/v1/no_such_uploads", size)
        check("POST /v1/no_such_uploads, a multipart body of %d bytes sent whole: 404 in the /v1 envelope" % size,
              err is None and is_v1_404(st, body), "send error %r, answer %d %r" % (err, st, body[:200]))
    err, st, h, body, _ = upload(target, "/v1/no_such_uploads", 4 << 20, chunked=True)
    check("POST /v1/no_such_uploads, a chunked multipart body of 4 MiB: 404 in the /v1 envelope",
          err is None and is_v1_404(st, body), "send error %r, answer %d %r" % (err, st, body[:200]))
    err, st, h, body, _ = upload(target, "/v2/uploads", 4 << 20)
    j = {}
    try:
        j = json.loads(body)
    except (ValueError, TypeError):
        pass
    check("POST /v2/uploads (outside /v1), 4 MiB: 404 in plimsoll's Connect envelope",
          err is None and st == 404 and j.get("code") == "unimplemented", "send error %r, answer %d %r" %
          (err, st, body[:200]))
    # the body read and dropped: the connection serves the next request
    err, st, h, body, s = upload(target, "/v1/no_such_uploads", 1 << 20, keep_alive=True)
    ok1 = err is None and is_v1_404(st, body)
    st2 = 0
    if ok1 and h.get("connection", "").lower() != "close":
        try:
            s.sendall(request("GET", "/healthz"))
            st2, _, _ = read_answer(s, 10)
        except OSError:
            pass
    s.close()
    check("a kept-alive connection: 404 for the upload, then /healthz answers on it", ok1 and st2 == 200,
          "404 %s, then %d (connection: %s)" % (ok1, st2, h.get("connection")))
    # over the bound (16 MiB): answered at once, before the body, then closed
    s = connect(target, timeout=10)
    pre, post = multipart(20 << 20)
    s.sendall(("POST /v1/no_such_uploads HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=%s\r\n"
               "Content-Length: %d\r\n\r\n" % (BOUNDARY, len(pre) + (20 << 20) + len(post))).encode())
    st, h, body = read_answer(s, 10)
    s.close()
    check("a body declared over 16 MiB to an unserved route: the 404 comes before the body is sent",
          is_v1_404(st, body), "%d %r" % (st, body[:200]))


# ---- calls: a sandbox runs ----

def run_body(tag):
    return {"protocol": 3, "timeoutMs": 30000, "project": {"steps": ["sleep 1.2; echo %s" % tag]}}


def calls(url, sock):
    target = addr(url)
    for where, t in [("TCP", target), ("the unix socket", sock)]:
        st, j = json_post(t, SERVICE + "Run", run_body("half-" + where[:3]), half_close=True)
        out = ""
        if isinstance(j, dict) and j.get("project"):
            out = base64.b64decode(j["project"]["steps"][0].get("stdout", "")).decode(errors="replace")
        check("Run from a client that half-closed after its request (%s): it runs and is answered" % where,
              st == 200 and out == "half-%s\n" % where[:3], "%d %r" % (st, j if not isinstance(j, dict) else
                                                                         {k: j[k] for k in j if k != "record"}))


# ---- session: a session's calls ----

def sleeping(tag):
    return subprocess.run(["pgrep", "-f", tag], capture_output=True).returncode == 0


def session(url, sock):
    target = addr(url)
    st, j = json_post(target, SERVICE + "OpenSession", {"protocol": 3})
    if not check("OpenSession", st == 200 and j.get("sessionId"), repr(j)):
        return
    sid = j["sessionId"]

    st, j = json_post(target, "/hull.v1.Workspace/Exec", {"sessionId": sid, "command": "sleep 1.3; echo fine"},
                      half_close=True)
    check("Exec from a client that half-closed after its request: the command ends by itself (exit 0)",
          st == 200 and j.get("exitCode") == 0 and base64.b64decode(j.get("stdout", "")) == b"fine\n", repr(j))

    # a client on the unix socket that closes: that is a hang-up, the command stops
    s = connect(sock)
    body = json.dumps({"sessionId": sid, "command": "sleep 30.789", "timeoutMs": 60000}).encode()
    s.sendall(request("POST", "/hull.v1.Workspace/Exec", body, [("Content-Type", "application/json")]))
    for _ in range(100):
        if sleeping("sleep 30.789"):
            break
        time.sleep(0.05)
    started = sleeping("sleep 30.789")
    s.close()
    gone = False
    for _ in range(100):
        if not sleeping("sleep 30.789"):
            gone = True
            break
        time.sleep(0.05)
    check("a unix-socket client that closes during Exec: the command stops", started and gone, (started, gone))

    # snake_case like every other field
    content = base64.b64encode(b"a,b\n1,2\n").decode()
    st, j = json_post(target, "/hull.v1.Handles/AddInput",
                      {"session_id": sid, "input_id": "notes", "name": "n.csv", "content": content})
    check("AddInput takes input_id", st == 200 and j.get("id") == "notes", repr(j))
    st, j = json_post(target, "/hull.v1.Workspace/Exec",
                      {"sessionId": sid, "command": "python3 -c \"import hull; hull.save('t', [{'a': 1}, {'a': 2}])\""})
    check("a table handle saved through Exec", st == 200 and j.get("exitCode") == 0, repr(j))
    st, j = json_post(target, "/hull.v1.Handles/Query",
                      {"sessionId": sid, "sql": "SELECT sum(a) AS s FROM t.data", "max_rows": 5})
    check("Query takes max_rows", st == 200 and j.get("rows") == [[3]], repr(j))
    st, j = json_post(target, "/hull.v1.Handles/Query", {"sessionId": sid, "sql": "SELECT 1", "maxRows": 5,
                                                        "max_rows": 5})
    check("Query with maxRows and max_rows: refused", st == 400 and "given twice" in j.get("message", ""), repr(j))
    json_post(target, SERVICE + "CloseSession", {"protocol": 3, "sessionId": sid})


if __name__ == "__main__":
    args = sys.argv[1:]
    commands = {("net", 2): net, ("calls", 3): calls, ("session", 3): session, ("unserved", 2): unserved}
    f = commands.get((args[0] if args else "", len(args)))
    if not f:
        sys.exit(__doc__)
    try:
        f(*args[1:])
    except Exception as e:  # a crash is one failure, with the reason; the checks not reached are lost
        import traceback
        traceback.print_exc()
        bad("the client ran to its end (%s)" % args[0], "%s: %s" % (type(e).__name__, e))
    sys.exit(1 if failures else 0)
