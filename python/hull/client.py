"""The /v1 wire: JSON requests over HTTP (TCP or a unix socket), the error envelope as APIError,
and a session's event stream (SSE) read frame by frame. stdlib only.

Plain HTTP (a unix socket, the embedded server's, or http://) is spoken here, on a socket per
request: http.client imports the email and ssl packages (25-40 ms, more than the embedded
server's whole start, on the cold solve's path); it is imported only for an https:// server."""
import json
import socket
import sys

from .errors import APIError

BETA = "managed-agents-2026-04-01"
VERSION = "2026-10-21"
MAX_LINE = 65536  # an answer's status or header line, a chunk's size line (http.client's _MAXLINE)
MAX_HEADERS = 100  # header lines of an answer (http.client's _MAXHEADERS)
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


def quote(s):
    """urllib.parse.quote(s, safe=""): a path segment, every byte but RFC 3986's unreserved ones
    percent-encoded (urllib.parse imports ipaddress, re and more: not on a solve's path)."""
    return "".join(chr(b) if b in _UNRESERVED else "%%%02X" % b for b in str(s).encode("utf-8"))


class WireError(Exception):
    """An answer that is not HTTP/1.x, too long a line, or cut short."""


def wire_errors():
    """What a request can raise for an unreachable or broken server: OSError, WireError, and
    http.client's HTTPException once an https server made this process import it."""
    hc = sys.modules.get("http.client")
    return (OSError, WireError) if hc is None else (OSError, WireError, hc.HTTPException)


class Response:
    """An answer: ``status``, ``getheaders()``, then the body by ``read()`` or ``readline()``
    (Content-Length, chunked, or up to the end of the connection)."""

    def __init__(self, f, method):
        self._f = f
        while True:  # interim answers (1xx) come before the answer
            line = self._line()
            parts = line.split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit() or len(parts[1]) != 3:
                raise WireError("not an HTTP/1.x status line: %r" % line[:100])
            self.status = int(parts[1])
            self._headers = self._read_headers()
            if not 100 <= self.status < 200:
                break
        te = self.getheader("transfer-encoding", "").lower()
        cl = self.getheader("content-length")
        self._chunked, self._left = False, None  # _left: body bytes still to come (None: to EOF)
        if method == "HEAD" or self.status in (204, 304):
            self._left = 0
        elif "chunked" in te:
            self._chunked, self._left = True, 0  # _left: of the current chunk
            self._last = False
        elif cl is not None:
            if not cl.strip().isdigit():
                raise WireError("bad Content-Length: %r" % cl[:50])
            self._left = int(cl)

    def _line(self):
        line = self._f.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise WireError("an answer line longer than %d bytes" % MAX_LINE)
        if not line:
            raise WireError("the server closed the connection without an answer")
        return line

    def _read_headers(self):
        headers = []
        while True:
            line = self._line()
            if line in (b"\r\n", b"\n"):
                return headers
            if len(headers) >= MAX_HEADERS:
                raise WireError("more than %d header lines" % MAX_HEADERS)
            text = line.decode("iso-8859-1").rstrip("\r\n")
            if text[:1] in (" ", "\t") and headers:  # an obsolete folded line: the last header's
                headers[-1] = (headers[-1][0], headers[-1][1] + " " + text.strip())
                continue
            name, sep, value = text.partition(":")
            if not sep:
                raise WireError("a header line without a colon: %r" % text[:100])
            headers.append((name.strip(), value.strip()))

    def getheaders(self):
        return list(self._headers)

    def getheader(self, name, default=None):
        name = name.lower()
        for k, v in self._headers:
            if k.lower() == name:
                return v
        return default

    def _next_chunk(self):
        """Start the next chunk; False at the last one (its trailers read)."""
        if self._last:
            return False
        size = self._line().split(b";", 1)[0].strip()
        try:
            n = int(size, 16)
        except ValueError:
            raise WireError("bad chunk size: %r" % size[:50]) from None
        if n < 0:
            raise WireError("bad chunk size: %r" % size[:50])
        if n == 0:
            self._last = True
            self._read_headers()  # the trailers, up to the blank line
            return False
        self._left = n
        return True

    def _take(self, data):
        """Account for data read from the body."""
        if self._left is not None:
            self._left -= len(data)
        if self._chunked and self._left == 0 and data:
            if self._f.readline(3) not in (b"\r\n", b"\n"):
                raise WireError("a chunk not followed by its CRLF")
        return data

    def read(self):
        """The rest of the body."""
        if not self._chunked:
            if self._left is None:
                return self._f.read()
            data = self._f.read(self._left) if self._left else b""
            if len(data) < self._left:
                raise WireError("the answer was cut short (%d of %d bytes)" % (len(data), self._left))
            return self._take(data)
        out = bytearray()
        while self._left or self._next_chunk():
            data = self._f.read(self._left)
            if len(data) < self._left:
                raise WireError("the answer was cut short inside a chunk")
            out += self._take(data)
        return bytes(out)

    def readline(self):
        """One line of the body (with its newline; b"" at its end)."""
        if not self._chunked:
            if self._left == 0:
                return b""
            return self._take(self._f.readline() if self._left is None else self._f.readline(self._left))
        out = bytearray()
        while not out.endswith(b"\n"):
            if not self._left and not self._next_chunk():
                break
            data = self._f.readline(self._left)
            if not data:
                raise WireError("the answer was cut short inside a chunk")
            out += self._take(data)
        return bytes(out)

    def close(self):
        self._f.close()


class Connection:
    """One request and its answer on a connection of its own (HTTP/1.1, ``Connection: close``):
    the part of http.client's HTTPConnection this library uses (request, getresponse, close)."""

    def __init__(self, unix=None, host=None, port=None, timeout=None):
        self._unix, self._host, self._port, self._timeout = unix, host, port, timeout
        self._sock = self._f = self._method = None

    def request(self, method, url, body=None, headers=None):
        for ch in method + url:
            if ch <= " " or ch == "\x7f":
                raise ValueError("a control character or space in the request line: %r" % (method + " " + url))
        if self._unix:
            host = "localhost"
        else:
            port = self._port or 80
            host = ("[%s]" % self._host if ":" in self._host else self._host) + ("" if port == 80 else ":%d" % port)
        lines = ["%s %s HTTP/1.1" % (method, url), "Host: " + host, "Accept-Encoding: identity", "Connection: close"]
        if body is not None:
            lines.append("Content-Length: %d" % len(body))
        for k, v in (headers or {}).items():
            k, v = str(k), str(v)
            if any(c in k + v for c in "\r\n\0") or ":" in k:
                raise ValueError("a bad header: %r" % k)
            lines.append("%s: %s" % (k, v))
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("iso-8859-1")
        if self._unix:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(self._timeout)
                s.connect(self._unix)
            except BaseException:
                s.close()
                raise
        else:
            s = socket.create_connection((self._host, port), self._timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock, self._method = s, method
        if body is not None and len(body) < 65536:  # one write for the usual small request
            s.sendall(head + body)
        else:
            s.sendall(head)
            if body is not None:
                s.sendall(body)

    def getresponse(self):
        self._f = self._sock.makefile("rb")
        return Response(self._f, self._method)

    def close(self):
        for x in (self._f, self._sock):
            if x is not None:
                x.close()
        self._f = self._sock = None


def wire():
    """http.client, imported on first use (an https:// server only)."""
    import http.client

    return http.client


class Client:
    """A /v1 client. ``server``: "http://HOST:PORT" or "unix:/path/to/socket"; ``api_key`` (or
    None): sent as x-api-key."""

    def __init__(self, server, api_key=None, timeout=600.0):
        self.server = server
        self.api_key = api_key
        self.timeout = timeout
        if server.startswith("unix:"):
            self._unix, self._host, self._port, self._base = server[5:], None, None, ""
        else:
            import urllib.parse  # a TCP server's URL only: not the embedded server's path

            u = urllib.parse.urlsplit(server if "://" in server else "http://" + server)
            if u.scheme not in ("http", "https"):
                raise ValueError("server %r: give http://HOST:PORT, https://HOST or unix:/path" % server)
            self._unix, self._host, self._port = None, u.hostname, u.port
            self._https = u.scheme == "https"
            self._base = u.path.rstrip("/")

    def _conn(self, timeout=None):
        t = self.timeout if timeout is None else timeout
        if self._unix:
            return Connection(unix=self._unix, timeout=t)
        if self._https:
            return wire().HTTPSConnection(self._host, self._port, timeout=t)
        return Connection(host=self._host, port=self._port, timeout=t)

    def _headers(self, content_type="application/json"):
        h = {"anthropic-version": VERSION, "anthropic-beta": BETA, "accept": "application/json",
             "user-agent": "hull-python"}
        if content_type:
            h["content-type"] = content_type
        if self.api_key:
            h["x-api-key"] = self.api_key
        return h

    def raw(self, method, path, body=None, content_type="application/json", query=None):
        """One request: (status, headers (lower-case), body bytes); an error status raises APIError."""
        if query:
            import urllib.parse  # handles' reads only

            path += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        c = self._conn()
        try:
            try:
                c.request(method, self._base + path, body=body, headers=self._headers(content_type if body is not None
                                                                                     else None))
                r = c.getresponse()
                data = r.read()
            except wire_errors() as e:
                raise APIError("cannot reach hull at %s: %s" % (self.server, e), 0, "connection_error")
            headers = {k.lower(): v for k, v in r.getheaders()}
            if r.status >= 400:
                raise _api_error(r.status, data)
            return r.status, headers, data
        finally:
            c.close()

    def call(self, method, path, body=None, query=None):
        """A JSON request; the answer's JSON (None for an empty body)."""
        data = None if body is None else json.dumps(body).encode()
        _, _, out = self.raw(method, path, data, query=query)
        return json.loads(out) if out else None

    def stream(self, session_id, timeout=None):
        """Open a session's live event stream: an EventStream (iterate it; close it)."""
        c = self._conn(timeout)
        try:
            c.request("GET", self._base + "/v1/sessions/%s/events/stream" % quote(session_id),
                      headers=self._headers(None))
            r = c.getresponse()
        except wire_errors() as e:
            c.close()
            raise APIError("cannot reach hull at %s: %s" % (self.server, e), 0, "connection_error")
        if r.status >= 400:
            data = r.read()
            c.close()
            raise _api_error(r.status, data)
        return EventStream(c, r)


def _api_error(status, data):
    try:
        b = json.loads(data)
        err = b.get("error") or {}
        return APIError(err.get("message") or "HTTP %d" % status, status, err.get("type"),
                        (err.get("details") or {}).get("error_code"), b.get("request_id"))
    except (ValueError, AttributeError):
        return APIError("HTTP %d: %s" % (status, data[:300].decode("utf-8", "replace")), status, "api_error")


class EventStream:
    """The events of an SSE answer, as dicts, in order (pings skipped)."""

    def __init__(self, conn, resp):
        self._conn, self._resp = conn, resp

    def __iter__(self):
        return self

    def __next__(self):
        event, data = None, []
        while True:
            try:
                line = self._resp.readline()
            except wire_errors() as e:
                raise APIError("the event stream broke: %s" % e, 0, "connection_error")
            if not line:
                raise StopIteration
            line = line.decode("utf-8", "replace").rstrip("\r\n")
            if line == "":
                if data and event not in (None, "ping"):
                    payload = json.loads("\n".join(data))
                    if event == "error":
                        err = payload.get("error") or {}
                        raise APIError(err.get("message") or "stream error", 0, err.get("type"))
                    return payload
                event, data = None, []
            elif line.startswith(":"):
                continue
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" ") if line.startswith("data: ") else line[5:])

    def close(self):
        try:
            self._resp.close()
        finally:
            self._conn.close()
