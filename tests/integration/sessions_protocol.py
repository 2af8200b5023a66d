"""sessions_protocol.py: sessions_client.py's plimsoll protocol 3 commands: conformance, idle,
lifetime, owner, principals, audit, hold and inflight (see sessions_client.py for their arguments).
Standard library only."""
import base64
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_client as sc  # noqa: E402
from serve_client import b64, check, bad  # noqa: E402
from sessions_common import (Session, Ws, cell, descendants, describe, details, end_name, out_of, pgrep, refusal,
    session_calls, still_alive, tar_of, u64, wait_gone, wait_session_calls)  # noqa: E402


def conformance_describe(c):
    """Describe states the session defaults and languages."""
    d = describe(c)
    check("Describe: supportsSessions true", d.get("supportsSessions") is True, repr(d)[:300])
    check("Describe: the session defaults (30 min lifetime, 5 min idle, 8 per owner)",
          u64(d.get("sessionLifetimeMs")) == 1800000 and u64(d.get("sessionIdleTimeoutMs")) == 300000 and
          u64(d.get("maxSessionsPerOwner")) == 8, repr({k: d.get(k) for k in d if "ession" in k}))
    langs = (d.get("sessionEnvironment") or {}).get("languages", [])
    check("Describe: sessionEnvironment names python and javascript", "python" in langs and "javascript" in langs,
          repr(d.get("sessionEnvironment")))


def conformance_warm_up(c, pid):
    """A warm-up session; returns the daemon's descendants after it (the baseline)."""
    # a warm-up session, so that anything started once per daemon is there before the baseline
    warm = Session(c, "warm-up")
    warm.open(quiet=True)
    if warm.sid:
        warm.run("warm-up cells", cell("python", "1"))
        warm.run("warm-up cells", cell("javascript", "1"))
        warm.close("warm-up session closes")
    time.sleep(0.3)
    base = descendants(pid)
    return base


def conformance_happy_path(s, pid, base):
    """Cells, payloads, files shared between them; returns the processes that appeared with the session."""
    a, run = s.run("python cell x = 41", cell("python", "x = 41"), timeoutMs=30000, traceId="t-1")
    so, se, rc, r = out_of(run, "cell")
    check("python cell 1: exit 0, nothing printed, a fresh interpreter",
          run is not None and rc == 0 and so == b"" and r.get("interpreterStarted") is True, repr(r))
    a, run = s.run("python cell x + 1", cell("python", "print('p')\nx + 1"))
    so, se, rc, r = out_of(run, "cell")
    check("python cell 2: state kept, prints then shows the last expression, same interpreter",
          so == b"p\n42\n" and rc == 0 and not r.get("interpreterStarted"), repr(r))
    a, run = s.run("python cell repr", cell("python", "'a' + 'b'"))
    check("python cell 3: the last expression is shown as repr()", out_of(run, "cell")[0] == b"'ab'\n",
          repr(out_of(run, "cell")[3]))
    a, run = s.run("python cell raises", cell("python", "1/0"))
    so, se, rc, r = out_of(run, "cell")
    check("python cell raises: exit 1, the traceback on stderr", rc == 1 and b"ZeroDivisionError" in se, repr(r))
    a, run = s.run("python cell after a raise", cell("python", "x"))
    so, se, rc, r = out_of(run, "cell")
    check("python cell after a raise: the interpreter and its state survive",
          so == b"41\n" and not r.get("interpreterStarted"), repr(r))
    # The zygote froze what it imported (gc.freeze): the collector of the session's interpreter walks
    # only the session's own objects, so a collection never copies the zygote's pages into the
    # session (issue 26: 19.5 MiB per session without, 5.0 with; bench/sessions-density.sh).
    a, run = s.run("python cell counts what its collector walks",
                   cell("python", "import gc\nprint(gc.get_freeze_count(), len(gc.get_objects()))"))
    counts = [int(v) for v in out_of(run, "cell")[0].split() if v.isdigit()]
    check("python cell: the zygote's objects are frozen, the collector walks only the session's",
          len(counts) == 2 and counts[0] >= 1000 and counts[1] < counts[0] // 4, repr(out_of(run, "cell")[:2]))
    a, run = s.run("python cell with files", cell("python", "open('data.txt').read() + open('sub/d2.txt').read()",
                                                   [("data.txt", "hel"), ("sub/d2.txt", "lo\u0000")]))
    check("python cell with files: they are written into the work directory first",
          out_of(run, "cell")[0] == (repr("hello\u0000") + "\n").encode(), repr(out_of(run, "cell")[3]))
    a, run = s.run("python cell writes shared.txt", cell("python", "open('shared.txt', 'w').write('from-cell')"))
    check("python cell writes: shows 9", out_of(run, "cell")[0] == b"9\n", repr(out_of(run, "cell")[3]))
    a, run = s.run("javascript cell var y = 6", cell("javascript", "var y = 6"))
    so, se, rc, r = out_of(run, "cell")
    check("javascript cell 1: exit 0, a fresh interpreter", rc == 0 and r.get("interpreterStarted") is True, repr(r))
    a, run = s.run("javascript cell y * 7", cell("javascript", "y * 7"))
    new = {p: v for p, v in descendants(pid).items() if p not in base}
    # the python interpreter's waiting parent on the host is hull's small reaper, not a second copy
    # of the zygote's interpreter (issue 26: 1.2 MiB less per session; bench/sessions-density.sh)
    comms = sorted(v[1] for v in new.values())
    check("the interpreter's waiting parent is hull-reaper, no per-session copy of the zygote",
          "hull-reaper" in comms and "hull-zygote" not in comms, repr(comms))
    so, se, rc, r = out_of(run, "cell")
    check("javascript cell 2: state kept, the last expression shown", so.strip() == b"42" and rc == 0 and
          not r.get("interpreterStarted"), repr(r))
    a, run = s.run("javascript cell throws", cell("javascript", "throw new Error('boom-js')"))
    so, se, rc, r = out_of(run, "cell")
    check("javascript cell throws: exit 1, the error on stderr", rc == 1 and b"boom-js" in se, repr(r))
    a, run = s.run("javascript cell reads a python file",
                   cell("javascript", "require('fs').readFileSync('shared.txt', 'utf8')"))
    check("javascript cell sees the python cell's file", b"from-cell" in out_of(run, "cell")[0],
          repr(out_of(run, "cell")[3]))
    a, run = s.run("javascript payload in the session", {"javascript": {
        "code": "import { readFileSync, writeFileSync } from 'node:fs';\n"
                "console.log(readFileSync('shared.txt', 'utf8')); writeFileSync('from-js.txt', 'js')"}})
    so, se, rc, r = out_of(run, "javascript")
    check("javascript payload: sees the cell's file", so == b"from-cell\n" and rc == 0, repr(r))
    # code written for `node -e` runs unchanged in the session's cells and payloads: require (a
    # workspace file relative to the work directory too) beside import
    a, run = s.run("javascript cell writes req/lib.cjs", cell(
        "javascript", "require('fs').mkdirSync('req'); require('fs').writeFileSync('req/lib.cjs', "
                      "'module.exports = {v: 6}'); 1"))
    a, run = s.run("javascript cell requires", cell(
        "javascript", "[require('./req/lib.cjs').v * 7, require('path').join('a', 'b'), typeof require('node:os').cpus,"
                      " require('fs').readFileSync('shared.txt', 'utf8')].join(' ')"))
    so, se, rc, r = out_of(run, "cell")
    check("javascript cell: require('fs'), require('path'), require('node:os'), require('./req/lib.cjs')",
          so == b"'42 a/b function from-cell'\n" and rc == 0, repr((so, se[:300])))
    for name, code in [
            ("javascript payload with require and import",
             "import { join } from 'node:path';\nconst os = require('node:os');\n"
             "console.log(require('./req/lib.cjs').v * 7, join('a', 'b'), typeof os.cpus, require('fs').existsSync('shared.txt'))"),
            ("javascript payload over 96 KiB with require",
             "/*" + "x" * (100 << 10) + "*/\nconst os = require('node:os');\n"
             "console.log(require('./req/lib.cjs').v * 7, require('path').join('a', 'b'), typeof os.cpus, "
             "require('fs').existsSync('shared.txt'))")]:
        a, run = s.run(name, {"javascript": {"code": code}})
        so, se, rc, r = out_of(run, "javascript")
        check(name + ": runs as with node -e", so == b"42 a/b function true\n" and rc == 0, repr((so, se[:300])))
    a, run = s.run("javascript cell removes req/", cell("javascript", "require('fs').rmSync('req', {recursive: true}); 1"))
    a, run = s.run("project payload in the session", {"project": {
        "files": [{"path": "p/main.py", "content": "print(open('shared.txt').read() + open('from-js.txt').read())\n"}],
        "steps": ["python3 p/main.py", "echo proj > proj.txt"], "artifacts": ["proj.txt", "shared.txt"]}},
        minimumIsolation="process")
    p = (run or {}).get("project") or {}
    steps = p.get("steps", [])
    arts = {x.get("path"): b64(x.get("content", "")) for x in p.get("artifacts", [])}
    check("project payload: completed, sees the cell's and the javascript's files, artifacts read back",
          p.get("outcome") == "PROJECT_OUTCOME_COMPLETED" and len(steps) == 2 and
          b64(steps[0].get("stdout", "")) == b"from-celljs\n" and
          arts == {"proj.txt": b"proj\n", "shared.txt": b"from-cell"}, repr(p)[:400])
    a, run = s.run("python cell reads the project's file", cell("python", "open('proj.txt').read()"))
    check("python cell sees the project's file (and its state is still there)",
          out_of(run, "cell")[0] == b"'proj\\n'\n", repr(out_of(run, "cell")[3]))
    return new


def conformance_refusals(c, s):
    """Refusals inside the session: marked, not counted."""
    # ---- refusals inside the session: marked, not counted ----
    V = "this daemon serves protocol 3 and the request states %d; nothing ran"
    n = s.calls
    for proc, msg in [("OpenSession", {}), ("SessionRun", {"sessionId": s.sid, "cell": {"language": "python", "code": "1"}}),
                      ("CloseSession", {"sessionId": s.sid})]:
        a = c.call(proc, dict(msg, protocol=0))
        refusal(proc + " protocol 0: invalid_argument + protocol", a, 400, "invalid_argument", "protocol")
        check(proc + " protocol 0: the reference's message", (a.json or {}).get("message") == V % 0,
              repr((a.json or {}).get("message")))
        a = c.call(proc, dict(msg, protocol=2))
        refusal(proc + " protocol 2: unimplemented + protocol", a, 501, "unimplemented", "protocol")
        a = c.call(proc, dict(msg))
        refusal(proc + " without protocol: invalid_argument + protocol", a, 400, "invalid_argument", "protocol")
    refusal("OpenSession floor vm: failed_precondition + isolation",
            c.call("OpenSession", {"protocol": 3, "minimumIsolation": "vm"}), 400, "failed_precondition", "isolation")
    refusal("OpenSession floor kernel: failed_precondition + isolation",
            c.call("OpenSession", {"protocol": 3, "minimumIsolation": "kernel"}), 400, "failed_precondition", "isolation")
    refusal("OpenSession floor none: invalid_argument + request",
            c.call("OpenSession", {"protocol": 3, "minimumIsolation": "none"}), 400, "invalid_argument", "request")
    refusal("OpenSession bad owner: invalid_argument + request",
            c.call("OpenSession", {"protocol": 3, "owner": "has space"}), 400, "invalid_argument", "request")
    refusal("OpenSession owner of 65 characters: invalid_argument + request",
            c.call("OpenSession", {"protocol": 3, "owner": "o" * 65}), 400, "invalid_argument", "request")
    refusal("OpenSession unknown language: invalid_argument + request",
            c.call("OpenSession", {"protocol": 3, "languages": ["cobol"]}), 400, "invalid_argument", "request")
    refusal("OpenSession software rule: failed_precondition + environment",
            c.call("OpenSession", {"protocol": 3, "softwareRule": {"mode": "exact", "identities": ["node:sha256:ab"]}}),
            400, "failed_precondition", "environment")
    refusal("OpenSession an unknown field: invalid_argument + request",
            c.call("OpenSession", {"protocol": 3, "extra": 1}), 400, "invalid_argument", "request")
    refusal("SessionRun floor vm: failed_precondition + isolation",
            c.call("SessionRun", s.request(cell("python", "x"), minimumIsolation="vm")), 400, "failed_precondition",
            "isolation")
    refusal("SessionRun code over 256 KiB: invalid_argument + request",
            c.call("SessionRun", s.request(cell("python", "#" + "x" * (256 * 1024)))), 400, "invalid_argument", "request")
    refusal("SessionRun javascript payload over 256 KiB: invalid_argument + request",
            c.call("SessionRun", s.request({"javascript": {"code": "x" * (256 * 1024 + 1)}})), 400, "invalid_argument",
            "request")
    refusal("SessionRun empty cell code: invalid_argument + request",
            c.call("SessionRun", s.request(cell("python", ""))), 400, "invalid_argument", "request")
    refusal("SessionRun cell language ruby: invalid_argument + request",
            c.call("SessionRun", s.request(cell("ruby", "1"))), 400, "invalid_argument", "request")
    refusal("SessionRun cell file '../x': invalid_argument + request",
            c.call("SessionRun", s.request(cell("python", "1", [("../x", "")]))), 400, "invalid_argument", "request")
    refusal("SessionRun module: unimplemented + unsupported or invalid_argument",
            c.call("SessionRun", s.request({"module": {"model": "m", "rows": [{"values": [1]}], "endTime": 1, "step": 1}})),
            501, "unimplemented", "unsupported")
    refusal("SessionRun two payloads: invalid_argument + request",
            c.call("SessionRun", s.request(dict(cell("python", "1"), javascript={"code": "1"}))), 400, "invalid_argument",
            "request")
    refusal("SessionRun no payload: invalid_argument + request",
            c.call("SessionRun", s.request({})), 400, "invalid_argument", "request")
    refusal("SessionRun software rule other than the session's: failed_precondition (environment)",
            c.call("SessionRun", s.request(cell("python", "1"), softwareRule={"mode": "exact", "identities": ["a:b"]})),
            400, "failed_precondition", "environment")
    unknown = os.urandom(16).hex()
    a = c.call("SessionRun", {"protocol": 3, "sessionId": unknown, "cell": {"language": "python", "code": "1"}})
    refusal("SessionRun on an unknown session: not_found + request + SessionEnded NOT_FOUND", a, 404, "not_found",
            "request", ended="SESSION_END_NOT_FOUND")
    check("the unknown ID is not repeated in the message", unknown not in a.body.decode("utf-8", "replace"))
    refusal("SessionRun on a malformed session ID: not_found + request",
            c.call("SessionRun", {"protocol": 3, "sessionId": "XYZ", "cell": {"language": "python", "code": "1"}}),
            404, "not_found", "request")
    refusal("SessionRun without a sessionId: invalid_argument + request",
            c.call("SessionRun", {"protocol": 3, "cell": {"language": "python", "code": "1"}}), 400, "invalid_argument",
            "request")
    refusal("CloseSession on an unknown session: not_found + request",
            c.call("CloseSession", {"protocol": 3, "sessionId": os.urandom(16).hex()}), 404, "not_found", "request")
    refusal("a cell on Run is still refused: invalid_argument + request",
            c.call("Run", {"protocol": 3, "cell": {"language": "python", "code": "1"}}), 400, "invalid_argument", "request")
    refusal("a sessionId on Run is still refused: invalid_argument + request",
            c.call("Run", {"protocol": 3, "sessionId": s.sid, "javascript": {"code": "1"}}), 400, "invalid_argument",
            "request")
    check("refused calls are not counted", s.calls == n)
    a, run = s.run("after the refusals, the chain continues", cell("python", "x"))
    check("after the refusals: the state is still there", out_of(run, "cell")[0] == b"41\n")


def conformance_semantics(c, s):
    """Timeouts, children that must not outlive their call, an interpreter that ends."""
    # ---- semantics ----
    a, run = s.run("python cell timeout", cell("python", "while True: pass"), timeoutMs=1500)
    so, se, rc, r = out_of(run, "cell")
    check("python cell timeout: exit 124, timedOut", rc == 124 and r.get("timedOut") is True, repr(r))
    if r.get("interpreterEnded") is not True:
        print("# note: the timed-out cell does not state interpreterEnded: %r" % r)
    a, run = s.run("python cell after the timeout", cell("python", "'x' in globals()"))
    so, se, rc, r = out_of(run, "cell")
    check("python cell after a timeout: a fresh interpreter (interpreterStarted), the old state gone",
          r.get("interpreterStarted") is True and so == b"False\n", repr(r))
    a, run = s.run("javascript cell timeout", cell("javascript", "while (true) {}"), timeoutMs=1500)
    so, se, rc, r = out_of(run, "cell")
    check("javascript cell timeout: exit 124, timedOut", rc == 124 and r.get("timedOut") is True, repr(r))
    a, run = s.run("javascript cell after the timeout", cell("javascript", "typeof y"))
    so, se, rc, r = out_of(run, "cell")
    check("javascript cell after a timeout: a fresh interpreter, the old state gone",
          r.get("interpreterStarted") is True and b"undefined" in so, repr(r))
    a, run = s.run("project payload starts a background sleep", {"project": {
        "steps": ["sleep 77.1234 >/dev/null 2>&1 &", "setsid sleep 77.1235 >/dev/null 2>&1 < /dev/null &", "echo bg"]}})
    check("a background process does not outlive its project call", wait_gone("'sleep 77\\.123[45]'", 3),
          "left: %r" % pgrep("'sleep 77\\.123[45]'"))
    a, run = s.run("python cell starts a child", cell(
        "python", "import subprocess, os\np = subprocess.Popen(['sleep', '78.1234'], start_new_session=True)\n"
                  "q = os.fork() or os.execvp('sleep', ['sleep', '78.1235'])\n1"))
    check("a cell's children do not outlive the cell", wait_gone("'sleep 78\\.123[45]'", 3),
          "left: %r" % pgrep("'sleep 78\\.123[45]'"))
    a, run = s.run("python cell after killing its children", cell("python", "'p' in globals()"))
    so, se, rc, r = out_of(run, "cell")
    check("... the python interpreter itself survives its call", so == b"True\n" and not r.get("interpreterStarted"),
          repr(r))
    a, run = s.run("javascript cell starts a child", cell(
        "javascript", "require('child_process').spawn('sleep', ['79.1234'], {detached: true, stdio: 'ignore'}).unref(); 1"))
    check("a javascript cell's children do not outlive the cell", wait_gone("'sleep 79\\.1234'", 3),
          "left: %r" % pgrep("'sleep 79\\.1234'"))
    a, run = s.run("javascript cell state after its child", cell("javascript", "typeof require"))
    check("... the javascript interpreter survives", run is not None and
          not out_of(run, "cell")[3].get("interpreterStarted"), repr(out_of(run, "cell")[3]))

    a, run = s.run("python cell ends its interpreter", cell("python", "import os\nos._exit(5)"))
    so, se, rc, r = out_of(run, "cell")
    check("a cell that ends its interpreter: answered, interpreterEnded, not exit 0",
          run is not None and r.get("interpreterEnded") is True and rc != 0, repr(r))
    a, run = s.run("python cell after its interpreter ended", cell("python", "'x' in globals()"))
    so, se, rc, r = out_of(run, "cell")
    check("... the next cell starts a fresh interpreter", r.get("interpreterStarted") is True and so == b"False\n",
          repr(r))
    a = c.call("SessionRun", s.request(cell("python", "1"), sessionId=s.sid.upper()))
    refusal("SessionRun naming the session in upper case: not_found + request", a, 404, "not_found", "request")


def conformance_one_at_a_time(c, s):
    """One call at a time, one waiter, a third is refused; the two that ran chain in order."""
    # one call at a time, one waiter, a third is refused
    t1 = []
    th1 = threading.Thread(target=lambda: t1.append(c.call("SessionRun", s.request(
        {"project": {"steps": ["sleep 2.3456; echo first > order.txt"]}}), timeout=60)))
    th1.start()
    for _ in range(1200):  # its step runs (so it holds the session's call): 60 s at most
        if pgrep("'sleep 2\\.3456'"):
            break
        time.sleep(0.05)
    t2 = []
    req2 = s.request(cell("python", "open('order.txt').read()"))
    n0 = session_calls(c)
    th2 = threading.Thread(target=lambda: t2.append(c.call("SessionRun", req2, timeout=60)))
    th2.start()
    # the waiter must have entered the session (counted in /metrics) before the third call is sent:
    # a fixed pause let the third call overtake a waiter that a loaded machine had not sent yet
    n = wait_session_calls(c, n0 + 1)
    check("one call at a time: the second call waits in the session", n >= n0 + 1 and th1.is_alive(),
          "hull_session_calls_total %s, then %s; the first call %s" % (n0, n, "runs" if th1.is_alive() else "ended"))
    t = time.monotonic()
    a3 = c.call("SessionRun", s.request(cell("python", "3")), timeout=30)
    took = time.monotonic() - t
    refusal("a third concurrent call: resource_exhausted + capacity", a3, 429, "resource_exhausted", "capacity")
    check("the third call is refused at once (%.2f s)" % took, took < 1.5)
    th1.join(90)
    th2.join(90)
    got = [x for x in t1 + t2 if x.status == 200]
    check("the running call and the waiter both answer", len(got) == 2,
          repr([(x.status, x.body[:200]) for x in t1 + t2]))
    if len(got) == 2:
        req1 = s.request({"project": {"steps": ["sleep 2.3456; echo first > order.txt"]}})
        p1, run1, rec1 = s.verify_run(req1, t1[0], chain=False)
        p2, run2, rec2 = s.verify_run(req2, t2[0], chain=False)
        chained = (not p1 and not p2 and u64(rec1.get("sequence")) == s.calls + 1 and
                   rec1.get("previousSha256", "") == s.last and u64(rec2.get("sequence")) == s.calls + 2 and
                   rec2.get("previousSha256") == rec1.get("recordSha256"))
        check("the two concurrent calls ran in order and chain (first, then the waiter)", chained,
              "%r %r %r %r" % (p1, p2, rec1, rec2))
        check("the waiter ran after the first call ended", out_of(run2, "cell")[0] == b"'first\\n'\n",
              repr(out_of(run2, "cell")[3]))
        if not p1 and not p2:
            s.calls, s.last = u64(rec2.get("sequence")) or s.calls + 2, rec2["recordSha256"]


def conformance_close(c, s, new):
    """A flood, payload timeouts, then the close and what it leaves."""
    check("Describe during a session: still answers", describe(c).get("protocol") == 3)
    a, run = s.run("python cell floods stdout", cell("python", "x = 41\nimport sys\nsys.stdout.write('z' * (3 << 20))\n7"))
    so, se, rc, r = out_of(run, "cell")
    check("a cell's flood: stdoutTruncated, no marker written, the interpreter answers",
          r.get("stdoutTruncated") is True and 0 < len(so) < 3 << 20 and set(so) <= set(b"z7\n"), "len %d %r" % (
              len(so), {k: v for k, v in r.items() if k not in ("stdout", "stderr")}))
    a, run = s.run("python cell after the flood", cell("python", "x"))
    check("... the state survives the flood", out_of(run, "cell")[0] == b"41\n", repr(out_of(run, "cell")[3]))
    a, run = s.run("javascript payload timeout in the session", {"javascript": {"code": "while (true) {}"}},
                   timeoutMs=1000)
    so, se, rc, r = out_of(run, "javascript")
    check("a javascript payload's timeout: 124, timedOut", rc == 124 and r.get("timedOut") is True, repr(r))
    a, run = s.run("project payload timeout in the session", {"project": {"steps": ["echo a", "sleep 60.789"]}},
                   timeoutMs=1000)
    p = (run or {}).get("project") or {}
    check("a project's timeout: TIMED_OUT, its sleep gone", p.get("outcome") == "PROJECT_OUTCOME_TIMED_OUT" and
          wait_gone("'sleep 60\\.789'", 3), repr(p)[:300])
    a, run = s.run("a malformed traceId is dropped, not refused", cell("python", "x"), traceId="not a trace id!")
    check("... and the call runs", out_of(run, "cell")[0] == b"41\n")
    # the close
    s.close("CloseSession: fingerprint, the calls the client counted, the last record, CLOSED")
    s.close("a second CloseSession still answers the summary (kept 10 minutes)")
    a = c.call("SessionRun", s.request(cell("python", "x")))
    refusal("SessionRun on a closed session: failed_precondition + NotDispatched + SessionEnded CLOSED", a, 400,
            "failed_precondition", details(a).get("NotDispatched") or "(some reason)", ended="SESSION_END_CLOSED")
    check("... marked NotDispatched", "NotDispatched" in details(a), repr(a.body[:300]))
    end = time.monotonic() + 3
    while still_alive(new) and time.monotonic() < end:
        time.sleep(0.1)
    check("the session's processes are gone after the close (%d appeared with it)" % len(new), new and
          not still_alive(new), repr(still_alive(new) or new))
    print("# session %s: %d calls, last %s" % (s.fp, s.calls, s.last))


def conformance_other_sessions(c):
    """A wrong count caught by the close; two sessions side by side."""
    # a client that tracks a wrong count is caught by the close (check 9 can fail)
    s2 = Session(c, "second")
    s2.open()
    if s2.sid:
        s2.run("second session: one cell", cell("python", "1"))
        a = c.call("CloseSession", {"protocol": 3, "sessionId": s2.sid})
        j = a.json or {}
        check("a close states the exact count, so a tracked gap would be caught (calls 1, not 2)",
              u64(j.get("calls")) == 1 and j.get("lastRecordSha256") == s2.last, repr(j))
    # two sessions run side by side: calls are serialized per session, not per daemon
    p1, p2 = Session(c, "parallel 1"), Session(c, "parallel 2")
    p1.open(quiet=True)
    p2.open(quiet=True)
    if p1.sid and p2.sid:
        res = {}
        ths = [threading.Thread(target=lambda x=x: res.__setitem__(x.label, x.run(
            x.label + ": a 1.5 s cell", cell("python", "import time\ntime.sleep(1.5)\n1")))) for x in (p1, p2)]
        t = time.monotonic()
        for th in ths:
            th.start()
        for th in ths:
            th.join(60)
        took = time.monotonic() - t
        check("two sessions' calls run side by side (%.2f s; one after the other takes over 3)" % took, took < 2.8)
        p1.close("parallel 1 closes")
        p2.close("parallel 2 closes")


def conformance_closed_while_busy(c):
    """CloseSession while a call runs: whatever happens, the close and the call's answer agree."""
    # CloseSession while a call runs: whatever happens, the close and the call's answer agree
    k = Session(c, "closed while busy")
    k.open()
    if k.sid:
        k.run("closed while busy: a first call", cell("python", "1"))
        busy = []
        req = k.request({"project": {"steps": ["sleep 1.789; echo done"]}})
        th = threading.Thread(target=lambda: busy.append(c.call("SessionRun", req, timeout=60)))
        th.start()
        for _ in range(100):
            if pgrep("'sleep 1\\.789'"):
                break
            time.sleep(0.05)
        t = time.monotonic()
        cl = c.call("CloseSession", {"protocol": 3, "sessionId": k.sid}, timeout=60)
        took = time.monotonic() - t
        th.join(60)
        b = busy[0] if busy else None
        j = cl.json or {}
        print("# close during a call: close %d after %.2f s %r; the call %s" % (
            cl.status, took, j, b and (b.status, b.body[:200])))
        want = None
        if b is not None and b.status == 200:
            probs, run, rec = k.verify_run(req, b)
            check("closed while busy: the call's answer verifies", not probs, "; ".join(probs))
            want = (2, rec and rec.get("recordSha256"))
        elif b is not None:
            d = details(b)
            if "NotDispatched" in d:
                want = (1, k.last)
            elif d.get("UnansweredCall"):
                check("closed while busy: the cut call's UnansweredCall checks", not k.verify_unanswered(
                    req, d["UnansweredCall"]), repr(d))
                want = (2, d["UnansweredCall"].get("recordSha256"))
                check("closed while busy: the cut call's error carries SessionEnded CLOSED",
                      d.get("SessionEnded", (None,))[0] == "SESSION_END_CLOSED", "code %r details %r" % (
                          (b.json or {}).get("code"), d))
            else:
                bad("closed while busy: the cut call says what happened", "an unmarked error without a record: %r"
                    % b.body[:300])
        check("closed while busy: the close counts exactly what the call's answer states",
              want is not None and cl.status == 200 and (u64(j.get("calls")), j.get("lastRecordSha256")) == want,
              "close %r, call answer implies %r" % (j, want))
        check("closed while busy: the sleep is gone", wait_gone("'sleep 1\\.789'", 3))


def conformance_short_sessions(c):
    """OpenSession's idle and lifetime: shortened, never lengthened; sessions do not share files."""
    s3 = Session(c, "third")
    s3.open(idleTimeoutMs=60000, lifetimeMs=120000)
    if s3.sid:
        j = s3.open_answer
        check("OpenSession idleTimeoutMs and lifetimeMs may shorten the daemon's",
              u64(j.get("idleTimeoutMs")) == 60000 and
              u64(j.get("expiresUnixMs")) <= time.time() * 1000 + 121000, repr(j))
        a, run = s3.run("third session: the files of another session are not here",
                        cell("python", "import os\nos.path.exists('shared.txt')"))
        check("third session: the files of another session are not here", out_of(run, "cell")[0] == b"False\n",
              repr(out_of(run, "cell")[3]))
        s3.close("third session closes")
    s4 = Session(c, "fourth")
    s4.open(idleTimeoutMs=999999999)
    if s4.sid:
        check("OpenSession idleTimeoutMs longer than the daemon's is not granted",
              u64(s4.open_answer.get("idleTimeoutMs")) <= 300000, repr(s4.open_answer))
        s4.close("fourth session closes (no calls: calls 0, no last record)")


def conformance(url, pid):
    c = sc.Client(url)
    conformance_describe(c)
    base = conformance_warm_up(c, pid)

    # ---- the happy path: cells, payloads, files shared between them ----
    s = Session(c, "main")
    s.open(floor="container", owner="conformance-1", traceId="t-open", languages=["python", "javascript"])
    if not s.sid:
        bad("the session conformance runs", "OpenSession failed; nothing more can be checked")
        return
    new = conformance_happy_path(s, pid, base)
    conformance_refusals(c, s)
    conformance_semantics(c, s)
    conformance_one_at_a_time(c, s)
    conformance_close(c, s, new)
    conformance_other_sessions(c)
    conformance_closed_while_busy(c)
    conformance_short_sessions(c)


def idle(url, pid):
    c = sc.Client(url)
    d = describe(c)
    check("Describe: sessionIdleTimeoutMs 1000 (--session-idle 1s)", u64(d.get("sessionIdleTimeoutMs")) == 1000,
          repr({k: d.get(k) for k in d if "ession" in k}))
    warm = Session(c, "warm-up")
    warm.open(quiet=True)
    if warm.sid:
        warm.run("warm-up cell", cell("python", "1"))
        warm.close("warm-up session closes")
    time.sleep(0.5)
    base = descendants(pid)
    a = Session(c, "never called")
    a.open()
    b = Session(c, "called once")
    b.open()
    if not (a.sid and b.sid):
        bad("the idle checks run", "OpenSession failed")
        return
    b.run("called once: a cell", cell("python", "import time\nz = 1"))
    during = descendants(pid)
    new = {p: v for p, v in during.items() if p not in base}
    time.sleep(2.6)
    r = c.call("SessionRun", a.request(cell("python", "1")))
    refusal("a session never called, past the idle timeout: failed_precondition + SessionEnded UNCLAIMED", r, 400,
            "failed_precondition", details(r).get("NotDispatched") or "(some reason)", ended="SESSION_END_UNCLAIMED")
    check("... marked NotDispatched", "NotDispatched" in details(r))
    r = c.call("SessionRun", b.request(cell("python", "z")))
    refusal("a session called once then idle: failed_precondition + SessionEnded EXPIRED", r, 400,
            "failed_precondition", details(r).get("NotDispatched") or "(some reason)", ended="SESSION_END_EXPIRED")
    a.close("CloseSession on the unclaimed session: ended UNCLAIMED, calls 0", expect_ended="SESSION_END_UNCLAIMED")
    b.close("CloseSession on the idle session: ended EXPIRED, its call counted", expect_ended="SESSION_END_EXPIRED")
    end = time.monotonic() + 3
    while still_alive(new) and time.monotonic() < end:
        time.sleep(0.1)
    check("the ended sessions' processes are gone (%d appeared with them)" % len(new), not still_alive(new),
          repr(still_alive(new)))
    # a session kept busy is not idle
    k = Session(c, "kept busy")
    k.open()
    if k.sid:
        ok_all = True
        for i in range(5):
            _, run = k.run("kept busy: call %d" % (i + 1), cell("python", "%d" % i))
            ok_all = ok_all and run is not None
            time.sleep(0.3)  # 0.3 s, not 0.6: a gap is this plus the client's and the server's time
        check("a session called every 0.3 s (1.5 s in all) outlives a 1 s idle timeout", ok_all)
        _, run = k.run("kept busy: a call longer than the idle timeout", cell("python", "import time\ntime.sleep(1.6)\n7"),
                       timeoutMs=10000)
        check("a call that lasts longer than the idle timeout is not cut by it", out_of(run, "cell")[0] == b"7\n",
              repr(out_of(run, "cell")[3]))
        k.close("kept busy: closes")


def lifetime(url):
    c = sc.Client(url)
    d = describe(c)
    check("Describe: sessionLifetimeMs 2000 (--session-lifetime 2s)", u64(d.get("sessionLifetimeMs")) == 2000,
          repr({k: d.get(k) for k in d if "ession" in k}))
    s = Session(c, "lifetime")
    t0 = time.time()
    s.open()
    if not s.sid:
        return
    exp = u64(s.open_answer.get("expiresUnixMs"))
    check("expiresUnixMs is about open + 2 s", exp and abs(exp - (t0 * 1000 + 2000)) < 1000, "%r vs %r" % (exp, t0))
    ended_at = None
    last = None
    while time.time() - t0 < 6:
        a, run = s.run("lifetime: a call at %.1f s" % (time.time() - t0), cell("python", "1"), expect_ok=False)
        if s.ended:
            ended_at, last = time.time() - t0, ("answer", s.ended)
            break
        if a is not None and a.status != 200:
            ended_at, last = time.time() - t0, ("refusal", a)
            break
        time.sleep(0.3)
    check("the session ends at its lifetime (%s s)" % (None if ended_at is None else "%.1f" % ended_at),
          ended_at is not None and 1.5 <= ended_at <= 3.5, repr(last))
    if last and last[0] == "refusal":
        refusal("the call after the lifetime: failed_precondition + SessionEnded EXPIRED", last[1], 400,
                "failed_precondition", details(last[1]).get("NotDispatched") or "(some reason)",
                ended="SESSION_END_EXPIRED")
    elif last:
        check("the last call's answer says ended EXPIRED", last[1] == "SESSION_END_EXPIRED", repr(last))
    s.close("CloseSession after the lifetime: ended EXPIRED, the calls counted", expect_ended="SESSION_END_EXPIRED")

    # the lifetime ends while a call runs: the answer must say so ("ended is set when the session ended
    # during or after this call"), as a SessionRunResponse with ended, or as an error that carries
    # SessionEnded EXPIRED and, since the code may have run, an UnansweredCall record and no mark
    m = Session(c, "lifetime mid-call")
    t0 = time.time()
    m.open()
    if not m.sid:
        return
    a, run = m.run("a call longer than the lifetime", cell("python", "import time\ntime.sleep(3.5)\n5"),
                   expect_ok=False, timeoutMs=10000)
    took = time.time() - t0
    check("the lifetime is kept even with a call running (%.1f s)" % took, took < 3.4)
    if a is not None and a.status == 200:
        check("the call's answer says ended EXPIRED", m.ended == "SESSION_END_EXPIRED", repr(a.body[:300]))
    elif a is not None:
        d = details(a)
        check("the call cut by the lifetime: no NotDispatched (it may have run)", "NotDispatched" not in d, repr(d))
        check("the call cut by the lifetime: an UnansweredCall record (counted)", d.get("UnansweredCall") is not None
              and m.calls == 1, repr(d))
        check("the call cut by the lifetime: the error carries SessionEnded EXPIRED, not a bare internal fault",
              d.get("SessionEnded", (None,))[0] == "SESSION_END_EXPIRED", "code %r details %r message %r" % (
                  (a.json or {}).get("code"), d, (a.json or {}).get("message")))
    m.abandoned = False
    r = c.call("SessionRun", m.request(cell("python", "1")))
    refusal("after the cut call: failed_precondition + SessionEnded EXPIRED", r, 400, "failed_precondition",
            details(r).get("NotDispatched") or "(some reason)", ended="SESSION_END_EXPIRED")
    m.close("CloseSession after the cut call: EXPIRED, the unanswered call counted", expect_ended="SESSION_END_EXPIRED")


def owner(url):
    c = sc.Client(url)
    d = describe(c)
    check("Describe: maxSessionsPerOwner 2", u64(d.get("maxSessionsPerOwner")) == 2,
          repr({k: d.get(k) for k in d if "ession" in k}))
    A, B, C, D = (Session(c, n) for n in ("owner A", "owner B", "owner C", "other owner D"))
    A.open(owner="alice")
    B.open(owner="alice")
    if not (A.sid and B.sid):
        return
    A.run("A: a call (B is now the least recently used)", cell("python", "a = 1"))
    time.sleep(0.3)
    C.open(owner="alice")
    r = c.call("SessionRun", B.request(cell("python", "1")))
    refusal("the owner's least recently used idle session is ended: failed_precondition + SessionEnded REPLACED",
            r, 400, "failed_precondition", details(r).get("NotDispatched") or "(some reason)", ended="SESSION_END_REPLACED")
    B.close("CloseSession on the replaced session: ended SESSION_END_REPLACED", expect_ended="SESSION_END_REPLACED")
    A.run("A still serves after the replacement", cell("python", "a"))
    if C.sid:
        C.run("C serves", cell("python", "2"))
    D.open(owner="bob")
    if D.sid:
        D.run("another owner's session is not counted against alice", cell("python", "3"))
    # all of alice's sessions busy: the next is refused with capacity, nothing replaced. Both calls
    # must have entered their sessions first (counted in /metrics), not merely be on their way: a
    # session whose call has not arrived is idle and is replaced. (Counting 'sleep 2.5678' processes
    # was not that: each step is /bin/sh -c plus its sleep, so one running call counted as two.)
    busy = []
    n0 = session_calls(c)
    ths = [threading.Thread(target=lambda s=s: busy.append(s.c.call("SessionRun", s.request(
        {"project": {"steps": ["sleep 2.5678"]}}), timeout=60))) for s in (A, C) if s.sid]
    for th in ths:
        th.start()
    n = wait_session_calls(c, n0 + len(ths))
    check("all of the owner's sessions busy: both calls entered their sessions", n >= n0 + 2,
          "hull_session_calls_total %s, then %s" % (n0, n))
    r = c.call("OpenSession", {"protocol": 3, "owner": "alice"})
    refusal("all of the owner's sessions busy: resource_exhausted + capacity", r, 429, "resource_exhausted", "capacity")
    for th in ths:
        th.join(60)
    check("the busy calls answered", len(busy) == 2 and all(x.status == 200 for x in busy),
          repr([(x.status, x.body[:100]) for x in busy]))
    # --max-sessions 4: alice A, C; bob D; carol F; a fifth is refused
    lst = c.raw("POST", "/hull.v1.Sessions/List", b"{}", [("Content-Type", "application/json")])
    sessions = ((lst.json or {}).get("sessions") or []) if lst.status == 200 else []
    owners = sorted(x.get("owner", "") for x in sessions)
    check("Sessions/List: the open sessions with their owners (alice twice, bob)", owners == ["alice", "alice", "bob"],
          "status %d %r" % (lst.status, lst.body[:300]))
    F = Session(c, "carol F")
    F.open(owner="carol")
    r = c.call("OpenSession", {"protocol": 3, "owner": "dave"})
    refusal("--max-sessions 4 reached: resource_exhausted + capacity", r, 429, "resource_exhausted", "capacity")
    r = c.call("OpenSession", {"protocol": 3})
    refusal("--max-sessions 4 reached, no owner: resource_exhausted + capacity", r, 429, "resource_exhausted",
            "capacity")
    for s in (A, C, D, F):
        if s.sid:
            x = c.call("CloseSession", {"protocol": 3, "sessionId": s.sid})
            check("%s closes: CLOSED" % s.label, x.status == 200 and end_name((x.json or {}).get("ended")) ==
                  "SESSION_END_CLOSED", repr(x.body[:200]))
    G = Session(c, "after the closes")
    G.open(owner="dave")
    check("after closes, a session opens again", G.sid is not None)
    if G.sid:
        G.close("G closes")


def principals(url, tok1, tok2, scopeless):
    """Sessions belong to the principal that opened it: another principal's ID is not_found, exactly
    as an unknown one, on every route; its List does not show it; its owner string is its own."""
    c1, c2, c0 = sc.Client(url, token=tok1), sc.Client(url, token=tok2), sc.Client(url)
    refusal("no token: OpenSession unauthenticated + permission", c0.call("OpenSession", {"protocol": 3}), 401,
            "unauthenticated", "permission")
    refusal("a token without code:run: OpenSession permission_denied + permission",
            sc.Client(url, token=scopeless).call("OpenSession", {"protocol": 3}), 403, "permission_denied", "permission")
    s = Session(c1, "alice's")
    s.open(owner="shared-owner")
    if not s.sid:
        return
    s.run("alice's session: a cell", cell("python", "secret = 'alice-%s'" % s.fp[:8]))
    for name, cl in [("no token", c0), ("bob", c2)]:
        a = cl.call("SessionRun", s.request(cell("python", "secret")))
        if name == "no token":
            refusal("SessionRun on alice's session without a token: unauthenticated", a, 401, "unauthenticated",
                    "permission")
            continue
        refusal("bob: SessionRun on alice's session: not_found + request + SessionEnded NOT_FOUND", a, 404, "not_found",
                "request", ended="SESSION_END_NOT_FOUND")
        u = cl.call("SessionRun", dict(s.request(cell("python", "secret")), sessionId=os.urandom(16).hex()))
        check("bob: alice's ID and an unknown ID get the same answer",
              (a.status, (a.json or {}).get("code"), (a.json or {}).get("details")) ==
              (u.status, (u.json or {}).get("code"), (u.json or {}).get("details")), "%r / %r" % (a.body[:200], u.body[:200]))
        refusal("bob: CloseSession on alice's session: not_found", cl.call("CloseSession", {"protocol": 3,
                                                                                       "sessionId": s.sid}),
                404, "not_found", "request")
        w = Ws(cl, s.sid)
        for proc, kw in [("Exec", dict(command="echo pwned > pwned.txt")), ("Read", dict(path="pwned.txt")),
                         ("Write", dict(path="pwned.txt", content="eA==")), ("Persist", {}),
                         ("Glob", dict(pattern="*")), ("Hydrate", dict(archive=base64.b64encode(
                             tar_of([(dict(name="pwned2.txt"), b"x")])).decode()))]:
            a = w.call(proc, **kw)
            check("bob: Workspace/%s on alice's session: not_found" % proc,
                  a.status == 404 and w.j(a).get("code") == "not_found", "status %d %r" % (a.status, a.body[:200]))
        a = w.call("List", service="/hull.v1.Sessions/")
        check("bob: Sessions/List does not show alice's session", a.status == 200 and s.sid not in a.body.decode() and
              s.fp not in a.body.decode(), "status %d %r" % (a.status, a.body[:300]))
        b = Session(cl, "bob's, same owner string")
        b.open(owner="shared-owner")
        if b.sid:
            b.run("bob's session: a cell", cell("python", "1"))
            b2 = Session(cl, "bob's second, same owner string")
            b2.open(owner="shared-owner")
            b.close("bob's first session was replaced by his second (per-owner cap 1)",
                    expect_ended="SESSION_END_REPLACED")
            if b2.sid:
                b2.close("bob's second session closes")
    a, run = s.run("alice's session still serves after bob's calls (bob's owner string did not replace it)",
                   cell("python", "import os\n(secret, os.path.exists('pwned.txt'), os.path.exists('pwned2.txt'))"))
    check("alice's session: her state is there and bob's calls changed nothing",
          out_of(run, "cell")[0] == ("('alice-%s', False, False)\n" % s.fp[:8]).encode(), repr(out_of(run, "cell")[3]))
    w = Ws(c0, s.sid)
    a = w.call("Exec", command="true")
    check("Workspace without a token: unauthenticated", a.status == 401, "status %d" % a.status)
    a = Ws(c1, s.sid).call("List", service="/hull.v1.Sessions/")
    check("alice: Sessions/List shows her session", a.status == 200 and s.sid in a.body.decode(), repr(a.body[:300]))
    s.close("alice closes her session: her calls counted")


def audit(url):
    c = sc.Client(url)
    req = {"protocol": 3, "javascript": {"code": "console.log('single')"}}
    a = c.call("Run", req)
    sc.verify_run("a single run for runs.jsonl", req, a, "javascript")
    s = Session(c, "audited")
    s.open()
    if not s.sid:
        return
    s.run("audited 1: python cell", cell("python", "v = 'audit'\nv", [("in.txt", "a\u0000b")]))
    s.run("audited 2: javascript cell", cell("javascript", "console.log('js'); 6 * 7"))
    refusal("audited: a refused call is not logged", c.call("SessionRun", s.request(cell("python", "1"),
                                                                                      minimumIsolation="vm")),
            400, "failed_precondition", "isolation")
    s.run("audited 3: javascript payload", {"javascript": {"code": "process.stdout.write(Buffer.from([0, 255, 10]))"}})
    s.run("audited 4: project payload", {"project": {"files": [{"path": "m.py", "content": "print(7)\n"}],
                                                     "steps": ["python3 m.py > o.txt", "cat o.txt"],
                                                     "artifacts": ["o.txt"]}})
    s.run("audited 5: a cell that raises", cell("python", "raise KeyError('k')"))
    s.run("audited 6: a cell that times out", cell("python", "while 1: pass"), timeoutMs=1000)
    # hull's own record kinds, in the same chain: a command, a write, an edit, an archive
    w = Ws(c, s.sid, s)
    w.call("Exec", command="echo audited > a.txt; cat a.txt", env={"K": "v"})
    w.call("Write", path="w/b.txt", content=base64.b64encode(b"one\x00two\n").decode())
    w.call("Write", path="w/b.txt", content=base64.b64encode(b"three\n").decode(), append=True)
    w.call("Edit", path="w/b.txt", oldText="three", newText="3")
    w.call("Hydrate", archive=base64.b64encode(tar_of([(dict(name="h/x.txt"), b"hydrated")])).decode())
    w.call("Read", path="w/b.txt")  # not recorded: it changes nothing
    check("audited: Exec, Write (twice), Edit and Hydrate answered verified records in the chain",
          w.recorded == 5 and not w.record_problems, "%d; %s" % (w.recorded, w.record_problems))
    s.run("audited 7: a last cell", cell("python", "v * 2"))
    s.close("audited session closes")
    print("# audit %s %d %s %s" % (s.fp, s.calls, s.last, s.sid))


def hold(url):
    """Open a session, start both interpreters and a background Exec-free state, and leave it open."""
    c = sc.Client(url)
    s = Session(c, "held open")
    s.open()
    if s.sid:
        s.run("held open: a python cell", cell("python", "1"))
        s.run("held open: a javascript cell", cell("javascript", "1"))


def inflight(url):
    c = sc.Client(url)
    s = Session(c, "in flight")
    s.open()
    if not s.sid:
        return
    s.run("in flight: a python cell first (the interpreter is up)", cell("python", "1"))
    s.run("in flight: a javascript cell (its interpreter too)", cell("javascript", "1"))
    print("# inflight %s" % s.fp, flush=True)
    try:
        a = c.call("SessionRun", s.request({"project": {"steps": ["sleep 100.4321"]}}, timeoutMs=120000), timeout=150)
        print("# the in-flight call answered %d" % a.status)
    except Exception as e:  # the daemon is killed under it: expected
        print("# the in-flight call ended without an answer: %s" % type(e).__name__)
