"""bench/py_solve.py (run by bench/py-solve.sh): what hull.solve adds over the raw /v1 calls that
do the same turn. MODE raw SERVER KEY ROUNDS: the raw calls (http.client; agent, environment,
session, stream, user.message, read to idle, delete) against a running server, one time per round
(ms). MODE solve-cold: one hull.solve in this fresh process, the embedded server's start included
(ms). MODE solve-warm ROUNDS: hull.solve with the embedded server already up, one time per round.
MODE same ROUNDS: the raw calls and hull.solve (its close included, as raw times its deletes)
alternating on one embedded server, "RAW SOLVE" per round."""
import json
import os
import socket
import sys
import time

AGENT = {"name": "bench", "model": "claude-sonnet-4-6",
         "tools": [{"type": "agent_toolset_20260401",
                    "default_config": {"enabled": True, "permission_policy": {"type": "always_allow"}}},
                   {"type": "hull_toolset_20261201",
                    "default_config": {"enabled": True, "permission_policy": {"type": "always_allow"}}}]}
H = {"anthropic-version": "2026-10-21", "anthropic-beta": "managed-agents-2026-04-01",
     "content-type": "application/json"}


def Unix(path):
    """An http.client connection over the unix socket path. http.client is imported here, not at
    the top: solve-cold times `import hull` from a process that has not imported it (a program
    using hull does not), so the library's own import of it is counted."""
    if not _CONN:
        import http.client

        class Conn(http.client.HTTPConnection):
            def connect(self):
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(self.path_)

        _CONN.append(Conn)
    c = _CONN[0]("localhost")
    c.path_ = path
    return c


_CONN = []  # the connection class, made once


def call(sock, key, method, path, body=None):
    c = Unix(sock)
    c.request(method, path, body=None if body is None else json.dumps(body), headers=dict(H, **{"x-api-key": key}))
    r = c.getresponse()
    data = r.read()
    c.close()
    assert r.status < 300, (r.status, data)
    return json.loads(data) if data else None


def raw_turn(sock, key):
    a = call(sock, key, "POST", "/v1/agents", AGENT)["id"]
    e = call(sock, key, "POST", "/v1/environments", {"name": "bench"})["id"]
    s = call(sock, key, "POST", "/v1/sessions", {"agent": a, "environment_id": e})["id"]
    c = Unix(sock)
    c.request("GET", "/v1/sessions/%s/events/stream" % s, headers=dict(H, **{"x-api-key": key}))
    r = c.getresponse()
    call(sock, key, "POST", "/v1/sessions/%s/events" % s,
         {"events": [{"type": "user.message", "content": [{"type": "text", "text": "hi"}]}]})
    text, ev = None, None
    while True:
        line = r.readline().decode()
        if line.startswith("data:"):
            ev = json.loads(line[5:])
            if ev["type"] == "agent.message":
                text = ev["content"][0]["text"]
            if ev["type"] == "session.status_idle":
                break
    c.close()
    call(sock, key, "GET", "/v1/sessions/%s/handles" % s)
    call(sock, key, "DELETE", "/v1/sessions/%s" % s)
    call(sock, key, "DELETE", "/v1/environments/%s" % e)
    call(sock, key, "POST", "/v1/agents/%s/archive" % a)
    return text


def main():
    mode = sys.argv[1]
    if mode in ("raw", "same"):
        Unix("/").close()  # http.client imported before any timing: the raw script's import is not timed
    if mode == "raw":
        sock, key, rounds = sys.argv[2], sys.argv[3], int(sys.argv[4])
        for _ in range(rounds):
            t, c = time.perf_counter(), time.process_time()
            assert raw_turn(sock, key) == "ok"
            print("%.2f %.2f" % ((time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000))
        return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    t = time.perf_counter()
    import hull  # the import is part of what a program pays
    if mode == "solve-cold":
        imported = time.perf_counter()
        with hull.solve("hi") as r:  # it starts the embedded server, and overlaps its own work with that start
            ms = (time.perf_counter() - t) * 1000
            assert r.text == "ok", r.text
        from hull import server
        (srv,) = server._servers.values()
        assert srv.running
        # the server's start timed by the library itself (spawn to its ready notice), not waited for apart
        start = (srv.ready_at - srv.started_at) * 1000 if getattr(srv, "ready_at", None) else float("nan")
        print("%.2f %.2f %.2f" % (ms, (imported - t) * 1000, start))
        return
    import hull.conversation  # the whole library, loaded before the rounds (`import hull` loads it on first use)
    if mode == "same":  # raw and solve(+close) alternating on one embedded server: the same server's age
        srv = hull.EmbeddedServer()
        for _ in range(int(sys.argv[2])):
            t = time.perf_counter()
            assert raw_turn(srv.socket, srv.api_key) == "ok"
            raw = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            with hull.solve("hi", server=srv.server, api_key=srv.api_key) as r:
                assert r.text == "ok", r.text
            print("%.2f %.2f" % (raw, (time.perf_counter() - t) * 1000))  # solve's close (its deletes) included
        srv.stop()
        return
    srv = hull.EmbeddedServer()  # up before the rounds: each round is one solve
    print("server-start %.2f" % ((time.perf_counter() - t) * 1000))
    for _ in range(int(sys.argv[2])):
        t, c = time.perf_counter(), time.process_time()
        with hull.solve("hi", server=srv.server, api_key=srv.api_key) as r:
            ms, cpu = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
            assert r.text == "ok", r.text
        print("%.2f %.2f" % (ms, cpu))
    srv.stop()


if __name__ == "__main__":
    main()
