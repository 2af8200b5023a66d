"""The /v1 wire: JSON requests over HTTP (TCP or a unix socket), the error envelope as APIError,
and a session's event stream (SSE) read frame by frame. stdlib only (http.client).

http.client (with the ssl and email packages it imports: about 30 ms, most of ``import hull``)
is imported by wire(), not with this module: a program that starts an embedded server imports
it while that server starts (Conversation calls wire() before it waits for the server)."""
import json
import urllib.parse

from .errors import APIError

BETA = "managed-agents-2026-04-01"
VERSION = "2026-10-21"
_wire = None  # (http.client, the unix-socket connection class), once imported


def wire():
    """http.client and the unix-socket connection class, imported on first use."""
    global _wire
    if _wire is None:
        import http.client
        import socket

        class UnixConnection(http.client.HTTPConnection):
            def __init__(self, path, timeout=None):
                super().__init__("localhost", timeout=timeout)
                self._path = path

            def connect(self):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                if self.timeout is not None:
                    s.settimeout(self.timeout)
                try:
                    s.connect(self._path)
                except OSError:
                    s.close()
                    raise
                self.sock = s

        _wire = (http.client, UnixConnection)
    return _wire


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
            u = urllib.parse.urlsplit(server if "://" in server else "http://" + server)
            if u.scheme not in ("http", "https"):
                raise ValueError("server %r: give http://HOST:PORT, https://HOST or unix:/path" % server)
            self._unix, self._host, self._port = None, u.hostname, u.port
            self._https = u.scheme == "https"
            self._base = u.path.rstrip("/")

    def _conn(self, timeout=None):
        t = self.timeout if timeout is None else timeout
        http_client, unix_connection = wire()
        if self._unix:
            return unix_connection(self._unix, timeout=t)
        if self._https:
            return http_client.HTTPSConnection(self._host, self._port, timeout=t)
        return http_client.HTTPConnection(self._host, self._port, timeout=t)

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
            path += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        c = self._conn()
        try:
            try:
                c.request(method, self._base + path, body=body, headers=self._headers(content_type if body is not None
                                                                                     else None))
                r = c.getresponse()
                data = r.read()
            except (OSError, wire()[0].HTTPException) as e:
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
            c.request("GET", self._base + "/v1/sessions/%s/events/stream" % urllib.parse.quote(session_id, safe=""),
                      headers=self._headers(None))
            r = c.getresponse()
        except (OSError, wire()[0].HTTPException) as e:
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
            except (OSError, wire()[0].HTTPException) as e:
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
