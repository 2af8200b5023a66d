#!/usr/bin/env python3
"""nodes_load.py: many sessions, several turns each, spread over several hull serve nodes (or one),
for test-nodes-load.sh and bench/nodes.sh.

  nodes_load.py SESSIONS TURNS URL [URL...]
      One agent (no tools: the turn is one model call) and one environment, made on the first
      node; SESSIONS sessions, session i made on node i % N; then every session runs TURNS turns
      at once with the others, turn t of session i sent to node (i + t) % N, the next one sent
      when the session is idle again with one more agent.message. Then every session's log is
      read (from the node after the one that made it) and checked: TURNS user.message, TURNS
      agent.message, as many session.status_running as session.status_idle (plus one per retried
      model call), idle last, event
      ids unique. Prints one JSON line: {"sessions", "turns", "seconds", "turns_per_s",
      "turn_ms_p50", "turn_ms_p99", "model_retries" (model calls that failed and were tried
      again: allowed), "gets_resent" and the first three "resent" (GETs sent again after their
      connection closed without an answer), "problems": [...]} (problems empty when all is well).
      Exit 0 when there is no problem, 1 otherwise.
"""
import json
import sys
import threading
import time
import http.client
from urllib.parse import urlparse

HEADERS = {"anthropic-version": "2026-10-21", "anthropic-beta": "managed-agents-2026-04-01",
           "content-type": "application/json"}
WAIT_S = 120  # a turn, at most
LOCAL = threading.local()


RESENT = []  # GETs sent again after their connection closed without an answer (counted, shown)


def call(method, url, body=None):
    """One request on a new connection from this thread's own loopback address (127.0.0.X: many
    clients, as hull serve allows SERVE_CONNECTIONS_PER_IP_MAX connections per address). A GET
    whose connection closed before any answer is sent again, as HTTP clients do with a request
    that changes nothing (RFC 9110 9.2.2), and counted in RESENT; any other method is not."""
    u = urlparse(url)
    data = json.dumps(body).encode() if body is not None else None
    src = getattr(LOCAL, "src", "127.0.0.1")
    for attempt in range(5):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60, source_address=(src, 0))
        try:
            c.request(method, u.path + (f"?{u.query}" if u.query else ""), body=data, headers=HEADERS)
            r = c.getresponse()
            raw = r.read()
            if r.status >= 300:
                return r.status, raw.decode("utf-8", "replace")[:300]
            return r.status, json.loads(raw or b"null")
        except ConnectionRefusedError as e:  # a busy machine's full backlog: nothing was sent
            if attempt == 4:
                return 0, str(e)
            time.sleep(0.2 * (attempt + 1))
        except (http.client.RemoteDisconnected, ConnectionResetError) as e:
            if method != "GET" or attempt == 4:
                return 0, str(e)
            RESENT.append(f"{method} {u.path}: {e}")
            time.sleep(0.2 * (attempt + 1))
        except OSError as e:
            return 0, str(e)
        finally:
            c.close()


def events(base, sid):
    out, page = [], None
    while True:
        q = "?limit=100" + (f"&page={page}" if page else "")
        st, b = call("GET", f"{base}/v1/sessions/{sid}/events{q}")
        if st != 200:
            raise RuntimeError(f"events of {sid}: {st} {b}")
        out += b["data"]
        page = b.get("next_page")
        if not page:
            return out


def main():
    n_sessions, n_turns, urls = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    n = len(urls)
    problems, lat = [], []
    lock = threading.Lock()

    def problem(msg):
        with lock:
            if len(problems) < 20:
                problems.append(msg)

    st, agent = call("POST", f"{urls[0]}/v1/agents", {"name": "load", "model": "claude-sonnet-4-6", "tools": []})
    st2, env = call("POST", f"{urls[0]}/v1/environments",
                    {"name": "load", "config": {"type": "cloud", "networking": {"type": "unrestricted"}}})
    if st != 200 or st2 != 200:
        print(json.dumps({"problems": [f"agent {st} {agent}", f"environment {st2} {env}"]}))
        return 1
    sessions = []
    for i in range(n_sessions):
        st, s = call("POST", f"{urls[i % n]}/v1/sessions", {"agent": agent["id"], "environment_id": env["id"]})
        if st != 200:
            problem(f"session {i}: {st} {s}")
            continue
        sessions.append((i, s["id"]))

    def run(i, sid):
        LOCAL.src = f"127.0.0.{2 + i % 200}"
        for t in range(n_turns):
            base = urls[(i + t) % n]
            t0 = time.monotonic()
            st, b = call("POST", f"{base}/v1/sessions/{sid}/events",
                         {"events": [{"type": "user.message", "content": [{"type": "text", "text": f"turn {t}"}]}]})
            if st != 200:
                problem(f"{sid} turn {t} on node {(i + t) % n + 1}: {st} {b}")
                return
            deadline = t0 + WAIT_S
            while True:  # idle again, with this turn's answer logged
                time.sleep(0.05)
                st, s = call("GET", f"{base}/v1/sessions/{sid}")
                if st == 200 and s["status"] == "idle":
                    ev = events(base, sid)
                    if sum(e["type"] == "agent.message" for e in ev) >= t + 1 and ev[-1]["type"] == "session.status_idle":
                        break
                if time.monotonic() > deadline:
                    problem(f"{sid} turn {t}: not idle with an answer in {WAIT_S} s")
                    return
            with lock:
                lat.append((time.monotonic() - t0) * 1000)

    start = time.monotonic()
    threads = [threading.Thread(target=run, args=s) for s in sessions]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    secs = time.monotonic() - start
    retries = 0
    for i, sid in sessions:
        ev = events(urls[(i + 1) % n], sid)
        types = [e["type"] for e in ev]
        ids = [e["id"] for e in ev]
        # a model call that failed and was tried again (session.error "retrying", then
        # session.status_rescheduled and running again) is not a second answer: counted, allowed
        errs = [e.get("error") or {} for e in ev if e["type"] == "session.error"]
        retried = types.count("session.status_rescheduled")
        retries += retried
        ok = (types.count("user.message") == n_turns and types.count("agent.message") == n_turns
              and types.count("session.status_running") == types.count("session.status_idle") + retried
              and len(errs) == retried
              and all((x.get("retry_status") or {}).get("type") == "retrying" for x in errs)
              and types and types[-1] == "session.status_idle" and len(ids) == len(set(ids)))
        if not ok:
            errs = [e.get("error") for e in ev if e["type"] == "session.error"]
            problem(f"{sid}: {types} errors: {errs}")
    lat.sort()
    pct = lambda p: round(lat[min(len(lat) - 1, int(len(lat) * p))], 1) if lat else None
    print(json.dumps({"sessions": len(sessions), "turns": len(lat), "seconds": round(secs, 2),
                      "turns_per_s": round(len(lat) / secs, 1) if secs else None,
                      "turn_ms_p50": pct(0.5), "turn_ms_p99": pct(0.99), "model_retries": retries,
                      "gets_resent": len(RESENT), "resent": RESENT[:3], "problems": problems}))
    return 0 if not problems and len(lat) == n_sessions * n_turns else 1


if __name__ == "__main__":
    sys.exit(main())
