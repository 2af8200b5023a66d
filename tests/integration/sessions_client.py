#!/usr/bin/python3
"""sessions_client.py: plimsoll protocol 3 sessions (OpenSession, SessionRun, CloseSession) and hull's
/hull.v1.Workspace and /hull.v1.Sessions extension, checked from shared/reference/plimsoll-protocol.md
("Sessions and the chain", "Errors", "What the client verifies" 2 to 9) and the sessions contract,
with the standard library only. One line per check: "ok - ...", "not ok - ...: why", "skip - ...".

  sessions_client.py conformance URL PID       open, cells, payloads, close; refusals; semantics
  sessions_client.py idle URL PID              a daemon with --session-idle 1s: UNCLAIMED, EXPIRED
  sessions_client.py lifetime URL              a daemon with --session-lifetime 2s: EXPIRED
  sessions_client.py owner URL                 --max-sessions-per-owner 2 --max-sessions 4: REPLACED
  sessions_client.py principals URL T1 T2 T0   tokens: another principal's session is not_found
  sessions_client.py audit URL                 a session of several calls for the audit log; prints
                                               "# audit FINGERPRINT CALLS LAST SESSIONID"
  sessions_client.py hold URL                  open a session with both interpreters and leave it open
  sessions_client.py inflight URL              open, one cell, then a call that sleeps 100 s (for
                                               the kill -9 test); prints "# inflight FINGERPRINT"
  sessions_client.py workspace URL WORKROOT    every /hull.v1.Workspace route and /hull.v1.Sessions/List
  sessions_client.py kernel URL                a session at minimumIsolation kernel (gVisor), "vm" refused
  sessions_client.py procs PID                 print "pid starttime comm" of every descendant of PID
  sessions_client.py alive FILE                print the lines of a procs FILE whose process still lives
  sessions_client.py tamper KIND IN OUT        a copy of an audit log with one change (result, delete,
                                               swap, duplicate); prints the line hull verify must name

Digests are recomputed with plimsoll_record.py (independent of hull's C code); the transport and
the Connect error checks are serve_client.py's. The commands live in sessions_protocol.py and
sessions_workspace.py, what they share in sessions_common.py.
"""
import base64
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import b64, bad  # noqa: E402
from sessions_common import descendants, failures, still_alive  # noqa: E402
from sessions_protocol import audit, conformance, hold, idle, inflight, lifetime, owner, principals  # noqa: E402
from sessions_workspace import workspace  # noqa: E402
from sessions_kernel import kernel  # noqa: E402


def procs(pid):
    for p, (st, comm) in sorted(descendants(pid).items()):
        print(p, st, comm)


def alive(path):
    want = {}
    for line in open(path):
        f = line.split(None, 2)
        if len(f) == 3:
            want[int(f[0])] = (f[1], f[2].strip())
    for p, (st, comm) in sorted(still_alive(want).items()):
        print(p, st, comm)


def tamper(kind, src, dst):
    lines = open(src, encoding="utf-8").read().splitlines(keepends=True)
    if kind == "result":  # one byte of an output changed
        for k, line in enumerate(lines):
            e = json.loads(line)
            r = e.get("result") or {}
            kind_r = next((x for x in ("cell", "javascript") if x in r and b64(r[x].get("stdout", ""))), None)
            if kind_r:
                out = bytearray(b64(r[kind_r]["stdout"]))
                out[0] ^= 1
                r[kind_r]["stdout"] = base64.b64encode(bytes(out)).decode()
                lines[k] = json.dumps(e, separators=(",", ":")) + "\n"
                break
        else:
            raise SystemExit("no result with output to tamper with")
        line_no = k + 1
    elif kind in ("exec-output", "write-content"):  # an entry of hull's own kinds changed
        op, part = ("exec", "result") if kind == "exec-output" else ("write", "request")
        k = next(i for i, line in enumerate(lines) if json.loads(line).get("operation") == op)
        e = json.loads(lines[k])
        field = "stdout" if op == "exec" else "content"
        b = bytearray(b64(e[part][field]))
        b[0] ^= 1
        e[part][field] = base64.b64encode(bytes(b)).decode()
        lines[k] = json.dumps(e, separators=(",", ":")) + "\n"
        line_no = k + 1
    elif kind == "delete":
        del lines[1]
        line_no = 2
    elif kind == "swap":
        lines[1], lines[2] = lines[2], lines[1]
        line_no = 2
    elif kind == "duplicate":
        lines.insert(2, lines[1])
        line_no = 3
    else:
        raise SystemExit("unknown tampering " + kind)
    open(dst, "w", encoding="utf-8").writelines(lines)
    print(line_no)


if __name__ == "__main__":
    args = sys.argv[1:]
    commands = {("conformance", 3): conformance, ("idle", 3): idle, ("lifetime", 2): lifetime, ("owner", 2): owner,
                ("audit", 2): audit, ("principals", 5): principals, ("inflight", 2): inflight, ("hold", 2): hold, ("workspace", 3): workspace, ("procs", 2): procs,
                ("alive", 2): alive, ("tamper", 4): tamper,
                ("kernel", 2): kernel}
    f = commands.get((args[0] if args else "", len(args)))
    if not f:
        sys.exit(__doc__)
    try:
        f(*args[1:])
    except Exception as e:  # a crash is one failure, with the reason; the checks not reached are lost
        import traceback
        traceback.print_exc()
        bad("the client ran to its end (%s)" % args[0], "%s: %s" % (type(e).__name__, e))
    sys.stdout.flush()
    sys.exit(1 if failures() else 0)
