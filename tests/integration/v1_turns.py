#!/usr/bin/env python3
"""v1_turns.py: turns of one /v1 session, each followed by a check that the conversation hull keeps
in its store is the one its agent sent the model (test-v1-elide.sh).

  v1_turns.py URL SESSION RECORD DB TEXT...
      For each TEXT: a user.message, then the session's event stream read up to the
      session.status_idle that ends its turn. What the agent holds then is the last model request
      hull mock-model recorded (RECORD, its --record file) and the turn's answer; the conversation
      in DB (SQLite: its conversations row's text with its conversation_parts joined, as the store
      joins them) must be that, message for message (norm() below: hull's own fields and what the
      wire leaves out aside), read once, as soon as the idle is seen: a session seen idle has its
      turn's conversation in the store (one node: the idle is committed after it). One JSON line per
      turn on stdout: {"text", "first_seq", "last_seq" (its model requests in RECORD), "answer",
      "compacted" (results elided: agent.thread_context_compacted's hull_elided), "parts" (the
      conversation_parts rows), "same" (bool), "why" (when not)}. The first turn that is not the
      same, or does not end, ends it: exit 1.
"""
import json
import os
import queue
import sqlite3
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from v1_client import headers_of, request  # noqa: E402


def norm(m):
    """A message as the store's text and the Anthropic wire both hold it: content as blocks, no
    hull_* field (hull's own: hull_short, hull_elided, hull_event_id), no cache_control (the wire's),
    no is_error false (the wire leaves it out)."""
    c = m["content"]
    if isinstance(c, str):
        c = [{"type": "text", "text": c}]
    blocks = [{k: v for k, v in b.items()
               if not k.startswith("hull_") and k != "cache_control" and not (k == "is_error" and v is False)}
              for b in c]
    return {"role": m["role"], "content": blocks}


def stored(db, session):
    """(the stored conversation, the number of its parts), or (None, 0) when none is kept."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        row = con.execute("SELECT body FROM conversations WHERE session_id = ?", (session,)).fetchone()
        parts = [r[0] for r in con.execute(
            "SELECT body FROM conversation_parts WHERE session_id = ? ORDER BY idx", (session,))]
    finally:
        con.close()
    if row is None:
        return None, 0
    return json.loads(row[0][:-1] + "".join(parts) + "]"), len(parts)


def stream(res, q):
    data = []
    for raw in res:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif line == "" and data:
            try:
                q.put(json.loads("\n".join(data)))
            except ValueError:
                pass
            data = []


def turns(url, session, record, db, texts):
    q = queue.Queue()
    hdrs = headers_of([])
    hdrs.pop("content-type", None)
    res = urllib.request.urlopen(urllib.request.Request(f"{url}/v1/sessions/{session}/events/stream",
                                                        headers=hdrs), timeout=600)
    threading.Thread(target=stream, args=(res, q), daemon=True).start()  # (open before the first POST)
    rec = open(record)
    rec.seek(0, os.SEEK_END)
    for text in texts:
        body = {"events": [{"type": "user.message", "content": [{"type": "text", "text": text}]}]}
        status, _, data = request("POST", f"{url}/v1/sessions/{session}/events", json.dumps(body), headers_of([]))
        out = {"text": text, "compacted": 0, "parts": 0, "same": False, "why": ""}
        if status != 200:
            out["why"] = f"POST: {status} {data[:200]!r}"
            print(json.dumps(out), flush=True)
            return 1
        seen, answer, deadline, types = False, None, time.monotonic() + 60, []
        while True:
            try:
                ev = q.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                out["why"] = "no session.status_idle in 60 s"
                print(json.dumps(out), flush=True)
                return 1
            t = ev.get("type")
            if seen:
                types.append(t if t != "session.error" else json.dumps(ev)[:300])
            if t == "user.message" and ev.get("content") == body["events"][0]["content"]:
                seen = True
            elif seen and t == "agent.thread_context_compacted":
                out["compacted"] += ev.get("hull_elided", 0)
            elif seen and t == "agent.message":
                answer = {"role": "assistant", "content": ev["content"]}
            elif seen and t == "session.status_idle":
                break
        reqs = [json.loads(line) for line in rec.readlines() if line.strip()]
        if not reqs or answer is None:
            out["why"] = f"{len(reqs)} model requests, no answer; its events: {types}"
            print(json.dumps(out), flush=True)
            return 1
        out["first_seq"], out["last_seq"] = reqs[0]["seq"], reqs[-1]["seq"]
        out["answer"] = answer["content"]
        want = [norm(m) for m in reqs[-1]["body"]["messages"] + [answer]]
        got, out["parts"] = stored(db, session)
        got = [norm(m) for m in got] if got is not None else None
        out["same"] = got == want
        if not out["same"]:
            n = 0
            while got and n < min(len(got), len(want)) and got[n] == want[n]:
                n += 1
            out["why"] = (f"{len(got) if got is not None else None} messages kept, {len(want)} held; first "
                          f"difference at {n}: kept {json.dumps(got[n] if got and n < len(got) else None)[:300]}, "
                          f"held {json.dumps(want[n] if n < len(want) else None)[:300]}")
        print(json.dumps(out), flush=True)
        if not out["same"]:
            return 1  # (the turns after it would each wait out the 10 s)
    return 0


def main():
    a = sys.argv[1:]
    if len(a) < 5:
        sys.exit(__doc__)
    return turns(a[0], a[1], a[2], a[3], a[4:])


if __name__ == "__main__":
    sys.exit(main())
