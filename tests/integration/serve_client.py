#!/usr/bin/python3
"""serve_client.py: a plimsoll protocol 3 conformance client for `hull serve`, written from
shared/reference/plimsoll-protocol.md ("What the client verifies") with the standard library only.
It prints one TAP-ish line per check ("ok - ...", "not ok - ...: why").

  serve_client.py conformance URL SOCKET   the open server: procedures, records, refusals, metrics
  serve_client.py auth URL TOKEN SCOPELESS the server with tokens (and --max-runs 1 --queue 0)
  serve_client.py slow URL SECONDS         one project run that sleeps; for the shutdown test
  serve_client.py cancelled URL TOKEN SECS one that the shutdown stops: unavailable, no mark
  serve_client.py hardening URL PID        the review's fixes (--max-runs 1 --queue 4)

Digests are recomputed with plimsoll_record.py (beside this file), which implements the run-record
rules from the spec alone, independently of hull's C code.
"""
import base64
import hashlib
import http.client
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import plimsoll_record as record
except ImportError:  # pragma: no cover - the digest checks are then reported as skipped
    record = None

SERVICE = "/plimsoll.v1.SandboxService/"
TIERS = ["none", "process", "container", "kernel", "vm"]
REASONS = {"CAE": "request", "CAI": "permission", "CAM": "protocol", "CAQ": "unsupported",
           "CAU": "isolation", "CAY": "capacity", "CAc": "environment"}
RESULT_KINDS = ("javascript", "project", "module", "cell")
failures = 0


def ok(name):
    print("ok - " + name)


def bad(name, why):
    global failures
    failures += 1
    mark = os.environ.get("HULL_TEST_FAILED_MARK")  # tests/lib.sh prints its servers' logs then
    if mark:
        open(mark, "a").close()
    print("not ok - %s: %s" % (name, why))


def check(name, cond, why=""):
    if cond:
        ok(name)
    else:
        bad(name, why or "condition false")
    return cond


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class Answer:
    def __init__(self, status, headers, body, rid):
        self.status = status
        self.headers = headers  # list of (name, value)
        self.body = body
        self.rid = rid
        self.json = None
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            pass

    def header_values(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def bound(self):
        """Exactly one Plimsoll-Request-Id, equal to the one sent."""
        return self.header_values("Plimsoll-Request-Id") == [self.rid]

    def detail(self):
        d = (self.json or {}).get("details") or []
        if len(d) != 1 or d[0].get("type", "").rsplit("/", 1)[-1] != "plimsoll.v1.NotDispatched":
            return None
        return REASONS.get(d[0].get("value"))


class Client:
    def __init__(self, url, unix=None, token=None):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.prefix = u.hostname, u.port, u.path.rstrip("/")
        self.unix = unix
        self.token = token

    def conn(self, timeout):
        if self.unix:
            return UnixConnection(self.unix, timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def raw(self, method, path, body=b"", headers=None, rid=True, timeout=60):
        """One request on a fresh connection, as the official client does. headers is a list of
        (name, value); rid True adds a fresh request ID."""
        c = self.conn(timeout)
        hs = list(headers or [])
        sent_rid = None
        if rid is True:
            sent_rid = os.urandom(16).hex()
            hs.append(("Plimsoll-Request-Id", sent_rid))
        elif isinstance(rid, str):
            sent_rid = rid
            hs.append(("Plimsoll-Request-Id", rid))
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in hs:
            c.putheader(k, v)
        if body or method == "POST":
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body if body else None)
        r = c.getresponse()
        data = r.read()
        a = Answer(r.status, r.getheaders(), data, sent_rid)
        c.close()
        return a

    def call(self, proc, msg, headers=None, rid=True, timeout=60, token=None):
        body = msg if isinstance(msg, bytes) else json.dumps(msg, ensure_ascii=False).encode()
        hs = [("Content-Type", "application/json"), ("Connect-Protocol-Version", "1"),
              ("Accept-Encoding", "identity"), ("User-Agent", "hull-serve-test/1")]
        tok = token if token is not None else self.token
        if tok:
            hs.append(("Authorization", "Bearer " + tok))
        if headers is not None:
            hs = headers
        return self.raw("POST", self.prefix + SERVICE + proc, body, hs, rid, timeout)


def b64(s):
    return base64.b64decode(s + "=" * (-len(s) % 4)) if s else b""


def verify_run(name, req, a, kind, floor=""):
    """The client's checks 2 to 6 on a Run answer. Returns the result object or None."""
    if not check(name + ": 200", a.status == 200, "status %d body %r" % (a.status, a.body[:300])):
        return None
    if not check(name + ": bound to its request ID", a.bound(), "headers %r" % a.headers):
        return None
    ct = a.header_values("Content-Type")
    check(name + ": application/json", len(ct) == 1 and ct[0].split(";")[0].strip() == "application/json", repr(ct))
    res = a.json
    if not check(name + ": a JSON object", isinstance(res, dict), repr(a.body[:200])):
        return None
    kinds = [k for k in RESULT_KINDS if res.get(k) is not None]
    check(name + ": exactly one result, of the request's kind", kinds == [kind], repr(kinds))
    rec = res.get("record")
    if not check(name + ": has a record", isinstance(rec, dict)):
        return None
    check(name + ": record version 2", rec.get("version") == 2, repr(rec.get("version")))
    check(name + ": provider is the sandbox, tiers agree",
          rec.get("provider") == res.get("sandbox") and rec.get("isolation") == res.get("isolation"), repr(rec))
    check(name + ": environment and software agree with the answer",
          rec.get("environment", "") == res.get("environment", "") and
          rec.get("softwareIdentity", "") == res.get("softwareIdentity", "") and rec.get("softwareRuleId", "") == "",
          repr(rec))
    check(name + ": no session fields (single run)",
          rec.get("session", "") == "" and int(rec.get("sequence", 0)) == 0 and rec.get("previousSha256", "") == "",
          repr(rec))
    if floor:
        tier = res.get("isolation", "")
        check(name + ": the tier meets the floor", tier in TIERS and TIERS.index(tier) >= TIERS.index(floor), tier)
    if record is None:
        print("skip - %s: digests: plimsoll_record.py is missing" % name)
        return res
    check(name + ": requestSha256 is the digest of what was sent",
          rec.get("requestSha256") == record.request_digest(req), "%s != %s" % (rec.get("requestSha256"), record.request_digest(req)))
    check(name + ": resultSha256 is the digest of the result received",
          rec.get("resultSha256") == record.result_digest(res), rec.get("resultSha256"))
    check(name + ": recordSha256 holds", rec.get("recordSha256") == record.record_digest(rec), rec.get("recordSha256"))
    return res


def expect_error(name, a, status, code, reason, header=None, message=None):
    """A refusal: status, code, NotDispatched reason (None: none), the echo, optional header."""
    j = a.json if isinstance(a.json, dict) else {}
    why = "status %d body %r headers %r" % (a.status, a.body[:300], a.headers)
    good = a.status == status and j.get("code") == code and a.detail() == reason and a.bound()
    if header is not None:
        good = good and a.header_values("Plimsoll-Not-Dispatched") == [header]
    if message is not None:
        good = good and j.get("message") == message
    return check(name, good, why)


def metrics(c):
    a = c.raw("GET", "/metrics", rid=False)
    out = {}
    for line in a.body.decode().splitlines():
        m = re.match(r"^([a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def run_js(c, code, **env):
    req = dict({"protocol": 3, "javascript": {"code": code}}, **env)
    return req, c.call("Run", req)


def conformance(url, sock):
    c = Client(url)
    m0 = metrics(c)
    check("/metrics answers with the run counters", 'hull_runs_total{outcome="ok"}' in m0, repr(list(m0)[:5]))

    # Describe
    t = time.monotonic()
    a = c.call("Describe", {})
    describe_ms = (time.monotonic() - t) * 1000
    d = a.json or {}
    check("Describe: 200, bound", a.status == 200 and a.bound(), repr(a.headers))
    check("Describe: protocol 3, sandbox hull, tier container",
          d.get("protocol") == 3 and d.get("sandbox") == "hull" and d.get("isolation") == "container", repr(d))
    check("Describe: projects and sessions yes, modules not yet",
          d.get("supportsProject") is True and d.get("supportsSessions") is True and d.get("supportsModule") is False, repr(d))
    check("Describe: project languages", "javascript" in d.get("projectEnvironment", {}).get("languages", []), repr(d))
    check("Describe: max timeout is the 5-minute ceiling",
          d.get("projectEnvironment", {}).get("maxTimeoutMs") == 300000, repr(d))
    a = c.call("Describe", b"")
    check("Describe: an empty body is an empty message", a.status == 200 and a.bound())
    a = Client(url.rstrip("/") + "/some/prefix").call("Describe", {})
    check("Describe: under a path prefix", a.status == 200 and a.json.get("protocol") == 3)
    a = Client(url, unix=sock).call("Describe", {})
    check("Describe: on the unix socket", a.status == 200 and a.bound() and a.json.get("protocol") == 3, repr(a.body[:100]))

    # javascript
    t = time.monotonic()
    req, a = run_js(c, "console.log(6*7)")
    run_ms = (time.monotonic() - t) * 1000
    res = verify_run("javascript 6*7", req, a, "javascript")
    if res:
        js = res["javascript"]
        check("javascript 6*7: prints 42", b64(js.get("stdout", "")) == b"42\n" and js.get("exitCode", 0) == 0, repr(js))
        check("javascript 6*7: stdout is standard padded base64", js.get("stdout") == "NDIK", js.get("stdout"))
        check("javascript 6*7: int64 fields are strings", isinstance(res.get("durationMs"), str) and
              isinstance(res["record"].get("startedUnixMs"), str), repr(res.get("durationMs")))
        check("javascript 6*7: the reference vector's request digest",
              res["record"]["requestSha256"] == "17d474652a5625b252078626a20a8d2d60e0507e98ea44a69c08febde9d7473f")
        check("javascript 6*7: the reference vector's result digest",
              res["record"]["resultSha256"] == "9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5")
    req, a = run_js(c, "process.stderr.write('e'); process.stdout.write(Buffer.from([0xff, 0, 0xfe])); process.exit(3)",
                    minimumIsolation="container", timeoutMs=20000, traceId="trace-1")
    res = verify_run("javascript exit 3 with a floor", req, a, "javascript", floor="container")
    if res:
        js = res["javascript"]
        check("javascript exit 3: exit code, stderr and raw bytes",
              js.get("exitCode") == 3 and b64(js.get("stderr", "")) == b"e" and b64(js.get("stdout", "")) == b"\xff\x00\xfe", repr(js))
    req, a = run_js(c, "while (true) {}", timeoutMs=700)
    res = verify_run("javascript timeout", req, a, "javascript")
    if res:
        js = res["javascript"]
        check("javascript timeout: timedOut, 124", js.get("timedOut") is True and js.get("exitCode") == 124, repr(js))
    req, a = run_js(c, "process.stdout.write('x'.repeat(3 << 20))")
    res = verify_run("javascript flood", req, a, "javascript")
    if res:
        js = res["javascript"]
        check("javascript flood: truncated flag, no marker", js.get("stdoutTruncated") is True and
              set(b64(js["stdout"])) == {ord("x")} and len(b64(js["stdout"])) == 1 << 20, repr(len(js.get("stdout", ""))))
    req = {"protocol": 3, "javascript": {"code": "import { writeFileSync } from 'node:fs';\n"
                                                 "writeFileSync('/workspace/left.txt', 'x'); console.log('ok')"}}
    verify_run("javascript writes a file", req, c.call("Run", req), "javascript")
    req, a = run_js(c, "import { existsSync } from 'node:fs';\nconsole.log(existsSync('/workspace/left.txt'))")
    res = verify_run("javascript fresh work dir", req, a, "javascript")
    if res:
        check("javascript fresh work dir: nothing is left from the run before",
              b64(res["javascript"]["stdout"]) == b"false\n", repr(res["javascript"]))
    # code written for `node -e` (plimsoll's clients send require('fs')) runs unchanged, beside import
    for name, code, want in [
            ("require('fs'), require('path'), require('node:os')",
             "const fs = require('fs'), path = require('path'), os = require('node:os');\n"
             "console.log(fs.existsSync('/'), path.join('a', 'b'), typeof os.platform())", b"true a/b string\n"),
            ("require beside a static import",
             "import { join } from 'node:path';\nconsole.log(join('x', require('node:os').platform()))", b"x/linux\n"),
            ("a relative require of a work-directory file",
             "require('fs').writeFileSync('lib.cjs', 'module.exports = 7');\nconsole.log(require('./lib.cjs') * 6)",
             b"42\n"),
            ("code that makes its own require",
             "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n"
             "console.log(typeof require('fs').statSync)", b"function\n"),
            ("require in code over 96 KiB (run from a file)",
             "/*" + "x" * (100 << 10) + "*/\nconsole.log(typeof require('fs').readFileSync)", b"function\n")]:
        req, a = run_js(c, code)
        res = verify_run("javascript " + name, req, a, "javascript")
        if res:
            js = res["javascript"]
            check("javascript %s: runs as with node -e" % name,
                  b64(js.get("stdout", "")) == want and js.get("exitCode", 0) == 0,
                  repr((b64(js.get("stdout", "")), b64(js.get("stderr", ""))[:400])))

    # After a javascript run the broker's spare starts a node ahead of the next one (its code
    # then runs from /workspace/.hull-main.mjs, as code over 96 KiB does): that run answers as a
    # cold one does. A spare still being set up is waited for a moment, so tries are paced.
    warm = None
    for _ in range(6):
        time.sleep(0.4)
        req, a = run_js(c, "console.log(import.meta.url, process.argv.length)")
        res = json.loads(a.body) if a.status == 200 else {}
        out = b64(res.get("javascript", {}).get("stdout", ""))
        if out == b"file:///workspace/.hull-main.mjs 1\n":
            warm = res
            break
    check("javascript: a run after a javascript run starts on a warm node", warm is not None, repr(out))
    for name, code, want_code, want_out, want_err in [
            ("a throw", "throw new Error('boom')", 1, b"", b"Error: boom"),
            ("process.exit(3) and stderr", "console.error('e'); process.exit(3)", 3, b"", b"e\n"),
            ("its own work directory, the code file gone after the run",
             "import { readdirSync } from 'node:fs';\nsetTimeout(() => console.log(readdirSync('.').length), 20)",
             0, b"0\n", b"")]:
        time.sleep(0.4)
        req, a = run_js(c, code)
        res = verify_run("javascript warm " + name, req, a, "javascript")
        if res:
            js = res["javascript"]
            check("javascript warm %s: as a cold run" % name,
                  js.get("exitCode", 0) == want_code and b64(js.get("stdout", "")) == want_out and
                  want_err in b64(js.get("stderr", "")), repr(js)[:400])

    # project
    req = {"protocol": 3, "minimumIsolation": "container", "timeoutMs": 30000,
           "project": {"files": [{"path": "main.py", "content": "print(1)\n"}], "steps": ["python3 main.py"]}}
    res = verify_run("project reference vector", req, c.call("Run", req), "project", floor="container")
    if res:
        check("project reference vector: the reference's request digest",
              res["record"]["requestSha256"] == "0b3ad2014fdd3cf8eacb31ae94ebe7adc5d3c8087501af19b3f43991308512ff")
        p = res["project"]
        check("project reference vector: completed, printed 1", p.get("outcome") == "PROJECT_OUTCOME_COMPLETED" and
              len(p.get("steps", [])) == 1 and b64(p["steps"][0].get("stdout", "")) == b"1\n", repr(p))
    req = {"protocol": 3, "project": {
        "files": [{"path": "main.py", "content": "import json\nprint(json.load(open('lib/in.json'))['n'] * 2)\n"},
                  {"path": "lib/in.json", "content": "{\"n\": 21}"},
                  {"path": "bin.dat", "content": "a\u0000b\u00e9"}],
        "steps": ["python3 main.py > out.txt", "cat out.txt; echo err >&2", "exit 3", "echo never"],
        "artifacts": ["out.txt", "bin.dat", "missing.txt", "lib"]}}
    res = verify_run("project steps and artifacts", req, c.call("Run", req), "project")
    if res:
        p = res["project"]
        steps = p.get("steps", [])
        check("project: stops at the first failing step", [s.get("exitCode", 0) for s in steps] == [0, 0, 3], repr(steps))
        check("project: each step names its command, output and duration",
              steps and steps[1].get("command") == "cat out.txt; echo err >&2" and b64(steps[1].get("stdout", "")) == b"42\n"
              and b64(steps[1].get("stderr", "")) == b"err\n" and isinstance(steps[1].get("durationMs"), str), repr(steps[:2]))
        arts = {x["path"]: b64(x.get("content", "")) for x in p.get("artifacts", [])}
        check("project: the artifacts that exist, as bytes", arts == {"out.txt": b"42\n", "bin.dat": "a\u0000b\u00e9".encode()},
              repr(arts))
        check("project: completed, nothing truncated", p.get("outcome") == "PROJECT_OUTCOME_COMPLETED" and
              not p.get("artifactsTruncated") and p.get("outcomeDetail", "") == "", repr(p))
    req = {"protocol": 3, "timeoutMs": 800, "project": {"steps": ["echo a", "sleep 5.123", "echo never"]}}
    res = verify_run("project timeout", req, c.call("Run", req), "project")
    if res:
        p = res["project"]
        check("project timeout: outcome timed out, the step says so", p.get("outcome") == "PROJECT_OUTCOME_TIMED_OUT" and
              len(p["steps"]) == 2 and p["steps"][1].get("timedOut") is True and p.get("outcomeDetail"), repr(p))
    req = {"protocol": 3, "project": {"files": [{"path": "a", "content": "x"}, {"path": "a/b", "content": "y"}],
                                      "steps": ["true"]}}
    res = verify_run("project setup failure", req, c.call("Run", req), "project")
    if res:
        p = res["project"]
        check("project setup failure: outcome setup failed with a detail, no step ran",
              p.get("outcome") == "PROJECT_OUTCOME_SETUP_FAILED" and not p.get("steps") and "a/b" in p.get("outcomeDetail", ""), repr(p))
    req = {"protocol": 3, "project": {"steps": ["head -c 6000000 /dev/urandom > big; head -c 3000000 /dev/zero > small"],
                                      "artifacts": ["big", "small"]}}
    res = verify_run("project artifact budget", req, c.call("Run", req), "project")
    if res:
        p = res["project"]
        check("project artifact budget: what does not fit is dropped and flagged",
              p.get("artifactsTruncated") is True and [x["path"] for x in p.get("artifacts", [])] == ["big"], repr(p.get("artifacts", [])[:0]))

    # concurrency: three half-second runs at once take well under three half-seconds
    answers = []

    def one():
        r, ans = run_js(c, "setTimeout(() => console.log('done'), 600)")
        answers.append(ans)
    t = time.monotonic()
    threads = [threading.Thread(target=one) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    took = time.monotonic() - t
    check("three runs at once all answer", len(answers) == 3 and all(x.status == 200 and x.bound() for x in answers))
    check("three runs at once run side by side (%.2f s; one after another takes over 1.8)" % took, took < 1.75, "%.2f s" % took)

    # refusals: each bound, each with its detail, each changing nothing
    V = "this daemon serves protocol 3 and the request states %d; nothing ran"
    expect_error("missing protocol: invalid_argument + protocol", c.call("Run", {"javascript": {"code": "1"}}),
                 400, "invalid_argument", "protocol", message=V % 0)
    expect_error("protocol 2: unimplemented + protocol", c.call("Run", {"protocol": 2, "javascript": {"code": "1"}}),
                 501, "unimplemented", "protocol", message=V % 2)
    expect_error("protocol 4 with a bad payload: the gate comes first",
                 c.call("Run", {"protocol": 4, "javascript": 7}), 501, "unimplemented", "protocol")
    expect_error("floor vm: failed_precondition + isolation",
                 c.call("Run", {"protocol": 3, "minimumIsolation": "vm", "javascript": {"code": "1"}}),
                 400, "failed_precondition", "isolation")
    expect_error("floor kernel: failed_precondition + isolation",
                 c.call("Run", {"protocol": 3, "minimumIsolation": "kernel", "project": {"steps": ["true"]}}),
                 400, "failed_precondition", "isolation")
    expect_error("floor none is refused", c.call("Run", {"protocol": 3, "minimumIsolation": "none", "javascript": {"code": "1"}}),
                 400, "invalid_argument", "request")
    expect_error("cell on Run: invalid_argument + request",
                 c.call("Run", {"protocol": 3, "cell": {"language": "python", "code": "x = 1"}}), 400, "invalid_argument", "request")
    expect_error("module: unimplemented + unsupported",
                 c.call("Run", {"protocol": 3, "module": {"model": "m", "rows": [{"values": [1]}], "endTime": 1, "step": 1}}),
                 501, "unimplemented", "unsupported")
    expect_error("no payload", c.call("Run", {"protocol": 3}), 400, "invalid_argument", "request")
    expect_error("two payloads", c.call("Run", {"protocol": 3, "javascript": {"code": "1"}, "project": {"steps": ["true"]}}),
                 400, "invalid_argument", "request")
    expect_error("software rule: failed_precondition + environment",
                 c.call("Run", {"protocol": 3, "softwareRule": {"mode": "exact", "identities": ["node:sha256:ab"]},
                                "javascript": {"code": "1"}}), 400, "failed_precondition", "environment")
    expect_error("malformed software rule", c.call("Run", {"protocol": 3, "softwareRule": {"mode": "exact", "identities": []},
                                                          "javascript": {"code": "1"}}), 400, "invalid_argument", "request")
    expect_error("grant profile: permission_denied + permission",
                 c.call("Run", {"protocol": 3, "javascript": {"code": "1", "grantProfile": "github"}}),
                 403, "permission_denied", "permission")
    for path in ["../x", "/etc/passwd", "a//b", "a/./b", "a\\b", "a\nb", "", "x" * 1025]:
        expect_error("file path %r refused" % path[:20],
                     c.call("Run", {"protocol": 3, "project": {"files": [{"path": path, "content": ""}], "steps": ["true"]}}),
                     400, "invalid_argument", "request")
    expect_error("artifact path '..' refused", c.call("Run", {"protocol": 3, "project": {"steps": ["true"], "artifacts": [".."]}}),
                 400, "invalid_argument", "request")
    expect_error("duplicate file paths", c.call("Run", {"protocol": 3, "project": {
        "files": [{"path": "a", "content": ""}, {"path": "a", "content": ""}], "steps": ["true"]}}), 400, "invalid_argument", "request")
    expect_error("21 steps", c.call("Run", {"protocol": 3, "project": {"steps": ["true"] * 21}}), 400, "invalid_argument", "request")
    expect_error("no steps", c.call("Run", {"protocol": 3, "project": {"steps": []}}), 400, "invalid_argument", "request")
    expect_error("201 files", c.call("Run", {"protocol": 3, "project": {
        "files": [{"path": "f%d" % i, "content": ""} for i in range(201)], "steps": ["true"]}}), 400, "invalid_argument", "request")
    expect_error("empty code", c.call("Run", {"protocol": 3, "javascript": {"code": ""}}), 400, "invalid_argument", "request")
    expect_error("code over 256 KiB", c.call("Run", {"protocol": 3, "javascript": {"code": "x" * (256 * 1024 + 1)}}),
                 400, "invalid_argument", "request")
    expect_error("code with NUL", c.call("Run", {"protocol": 3, "javascript": {"code": "a\u0000"}}), 400, "invalid_argument", "request")
    expect_error("timeoutMs beyond int32", c.call("Run", {"protocol": 3, "timeoutMs": 1 << 40, "javascript": {"code": "1"}}),
                 400, "invalid_argument", "request")
    expect_error("oversized body: refused from its length, marked",
                 c.call("Run", b'{"protocol":3,"javascript":{"code":"' + b"x" * (9 << 20) + b'"}}'),
                 400, "invalid_argument", "request", header="request")
    expect_error("malformed JSON: marked", c.call("Run", b'{"protocol":3,'), 400, "invalid_argument", "request", header="request")
    expect_error("duplicate keys: marked", c.call("Run", b'{"protocol":3,"protocol":3,"javascript":{"code":"1"}}'),
                 400, "invalid_argument", "request", header="request")
    expect_error("nesting beyond the bound: marked", c.call("Run", b'{"protocol":3,"x":' + b"[" * 40 + b"]" * 40 + b"}"),
                 400, "invalid_argument", "request", header="request")
    expect_error("not an object: marked", c.call("Run", b"[3]"), 400, "invalid_argument", "request", header="request")
    expect_error("wrong content type: marked", c.call("Run", {"protocol": 3}, headers=[("Content-Type", "text/plain")]),
                 400, "invalid_argument", "request", header="request")
    expect_error("compressed body refused", c.call("Run", {"protocol": 3}, headers=[
        ("Content-Type", "application/json"), ("Content-Encoding", "gzip")]), 400, "invalid_argument", "request", header="request")
    expect_error("unknown procedure: 404 + unsupported", c.call("Frobnicate", {"protocol": 3}),
                 404, "unimplemented", "unsupported", header="unsupported")
    expect_error("unknown path: 404", c.raw("POST", "/nope", b"{}", [("Content-Type", "application/json")]),
                 404, "unimplemented", "unsupported", header="unsupported")
    expect_error("GET on Run: 405", c.raw("GET", SERVICE + "Run"), 405, "unimplemented", "request", header="request")
    for proc, msg in [("OpenSession", {"protocol": 3}), ("SessionRun", {"protocol": 3, "sessionId": "0" * 32,
                                                                        "cell": {"language": "python", "code": "1"}}),
                      ("CloseSession", {"protocol": 3, "sessionId": "0" * 32})]:
        if proc == "OpenSession":
            continue  # served: tests/integration/test-sessions.sh
        a = c.call(proc, msg)
        types = [d.get("type", "").rsplit("/", 1)[-1] for d in ((a.json or {}).get("details") or [])]
        check(proc + " of an unknown session: not_found + NotDispatched + SessionEnded",
              a.status == 404 and (a.json or {}).get("code") == "not_found" and a.bound() and
              types == ["plimsoll.v1.NotDispatched", "plimsoll.v1.SessionEnded"], repr(a.body[:300]))
    expect_error("OpenSession without protocol: the gate first", c.call("OpenSession", {}), 400, "invalid_argument", "protocol")

    # garbage: cut and mangled requests, each refused with a JSON error, none of them fatal
    import random
    rnd = random.Random(7)
    good = json.dumps({"protocol": 3, "project": {"files": [{"path": "a", "content": "x"}], "steps": ["true"],
                                                  "artifacts": ["a"]}}).encode()
    answered = 0
    for i in range(40):
        body = bytearray(good[:rnd.randrange(len(good))])
        for _ in range(rnd.randrange(4)):
            if body:
                body[rnd.randrange(len(body))] = rnd.randrange(256)
        a = c.call("Run", bytes(body))
        answered += a.status == 400 and a.bound() and isinstance(a.json, dict) and a.json.get("code") == "invalid_argument"
    check("40 cut and mangled requests: each a bound invalid_argument", answered == 40, "%d of 40" % answered)

    # the request ID
    a = c.call("Describe", {}, rid="0123456789ABCDEF0123456789ABCDEF")
    check("an upper-case request ID is not echoed, not refused",
          a.status == 200 and a.header_values("Plimsoll-Request-Id") == [], repr(a.headers))
    a = c.call("Describe", {}, rid=False, headers=[("Content-Type", "application/json"),
                                                   ("Plimsoll-Request-Id", "a" * 32), ("Plimsoll-Request-Id", "b" * 32)])
    check("two request IDs: neither is echoed", a.status == 200 and a.header_values("Plimsoll-Request-Id") == [], repr(a.headers))
    a = c.call("Run", {"protocol": 3, "minimumIsolation": "vm", "javascript": {"code": "1"}}, rid="f" * 32)
    check("an error carries the request ID back", a.header_values("Plimsoll-Request-Id") == ["f" * 32], repr(a.headers))

    # health and metrics
    a = c.raw("GET", "/healthz", rid=False)
    check("/healthz 200", a.status == 200 and a.body == b"ok\n")
    a = c.raw("GET", "/readyz", rid=False)
    check("/readyz 200", a.status == 200 and a.body == b"ready\n")
    req, a = run_js(c, "console.log('still here')")
    check("the daemon survived every bad request", a.status == 200 and a.bound())
    m1 = metrics(c)

    def moved(key, at_least):
        return m1.get(key, 0) - m0.get(key, 0) >= at_least
    check("/metrics: ok runs counted", moved('hull_runs_total{outcome="ok"}', 8), repr(m1))
    check("/metrics: failed and timed-out runs counted",
          moved('hull_runs_total{outcome="failed"}', 2) and moved('hull_runs_total{outcome="timed_out"}', 2))
    check("/metrics: refusals by reason", moved('hull_refusals_total{reason="protocol"}', 3) and
          moved('hull_refusals_total{reason="isolation"}', 2) and moved('hull_refusals_total{reason="request"}', 20) and
          moved('hull_refusals_total{reason="unsupported"}', 2))
    check("/metrics: HTTP statuses", moved('hull_http_requests_total{code="200"}', 20) and
          moved('hull_http_requests_total{code="400"}', 20) and moved('hull_http_requests_total{code="404"}', 2))
    check("/metrics: latency histogram", moved('hull_run_duration_seconds_count', 10) and
          m1.get('hull_run_duration_seconds_bucket{le="+Inf"}') == m1.get("hull_run_duration_seconds_count"))
    check("/metrics: nothing in flight", m1.get("hull_runs_in_flight") == 0)
    print("# Describe %.1f ms, Run console.log(6*7) %.1f ms (one call each, new connection)" % (describe_ms, run_ms))


def auth(url, token, scopeless):
    c = Client(url, token=token)
    a = c.call("Describe", {}, token="")
    expect_error("no token: unauthenticated + permission", a, 401, "unauthenticated", "permission")
    a = c.call("Describe", {}, token="hull_" + "0" * 64)
    expect_error("unknown token: unauthenticated + permission", a, 401, "unauthenticated", "permission")
    msg = (a.json if isinstance(a.json, dict) else {}).get("message", "")
    check("unknown token: 'hull token new' named (a tokens file), not 'hull key create'",
          "hull token new" in msg and "hull key create" not in msg and "shorter" not in msg, msg)
    a = c.call("Describe", {}, token="short-token")
    expect_error("a token under 32 characters: unauthenticated + permission", a, 401, "unauthenticated", "permission")
    msg = (a.json if isinstance(a.json, dict) else {}).get("message", "")
    check("a token under 32 characters: said to be too short, 'hull token new' named",
          "shorter than the minimum of 32" in msg and "hull token new" in msg and "hull key create" not in msg, msg)
    a = c.call("Describe", {}, headers=[("Content-Type", "application/json"), ("Authorization", "Basic " + token)])
    expect_error("another scheme: unauthenticated", a, 401, "unauthenticated", "permission")
    a = c.call("Describe", {}, headers=[("Content-Type", "application/json"), ("Authorization", "Bearer " + token + " x")])
    expect_error("two fields: unauthenticated", a, 401, "unauthenticated", "permission")
    a = c.call("Run", {"protocol": 3, "javascript": {"code": "1"}}, token=scopeless)
    expect_error("a token without code:run: permission_denied + permission", a, 403, "permission_denied", "permission")
    a = c.call("Describe", {}, headers=[("Content-Type", "application/json"), ("Authorization", "bearer " + token)])
    check("the scheme is case-insensitive", a.status == 200 and a.bound(), repr(a.body[:200]))
    req, a = run_js(c, "console.log(6*7)")
    verify_run("with a token: javascript", req, a, "javascript")
    a = c.raw("GET", "/healthz", rid=False)
    check("/healthz needs no token", a.status == 200)
    # --max-runs 1 --queue 0: a second run while one runs is shed, marked capacity
    slow = []
    th = threading.Thread(target=lambda: slow.append(run_js(c, "setTimeout(() => console.log(1), 3000)")[1]))
    th.start()
    wait_in_flight(c, 1)
    a = c.call("Run", {"protocol": 3, "javascript": {"code": "1"}})
    expect_error("at capacity: resource_exhausted + capacity", a, 429, "resource_exhausted", "capacity")
    th.join()
    check("the run that held the slot answers", slow and slow[0].status == 200 and slow[0].bound())


def wait_in_flight(c, n, seconds=10):
    """Until /metrics says n runs are in flight (a loaded machine may take a while to admit one)."""
    until = time.time() + seconds
    while time.time() < until:
        a = c.raw("GET", "/metrics", rid=False)
        if re.search(rb"^hull_runs_in_flight %d$" % n, a.body, re.M):
            return True
        time.sleep(0.05)
    return False


def slow(url, seconds):
    c = Client(url)
    req = {"protocol": 3, "project": {"steps": ["sleep %s; echo slept" % seconds]}}
    res = verify_run("in flight at SIGTERM", req, c.call("Run", req, timeout=30), "project")
    if res:
        p = res["project"]
        check("in flight at SIGTERM: it finished", p.get("outcome") == "PROJECT_OUTCOME_COMPLETED" and
              b64(p["steps"][0].get("stdout", "")) == b"slept\n", repr(p))


def cancelled(url, token, seconds):
    c = Client(url, token=token)
    a = c.call("Run", {"protocol": 3, "project": {"steps": ["sleep %s" % seconds]}}, timeout=30)
    expect_error("stopped at shutdown: unavailable, not marked (it may have run)", a, 503, "unavailable", None)


def hardening(url, pid):
    """The review's fixes, on a server with --max-runs 1 --queue 4: requests the record could not
    digest, exact routing, bodies that cost more to parse than their size, a client that goes away,
    a run that waits in the queue, and connections that never finish their request."""
    c = Client(url)

    def runs_total():
        return sum(v for k, v in metrics(c).items() if k.startswith("hull_runs_total"))
    n0 = runs_total()
    js = {"code": "console.log(1)"}
    for name, body in [
            ("an unknown top-level field", {"protocol": 3, "javascript": js, "extra": 1}),
            ("an unknown field in javascript", {"protocol": 3, "javascript": dict(js, extra=1)}),
            ("an unknown field in project", {"protocol": 3, "project": {"steps": ["true"], "extra": 1}}),
            ("an unknown field in a file", {"protocol": 3, "project": {"steps": ["true"], "files": [
                {"path": "a", "content": "", "mode": 1}]}}),
            ("an unknown field in softwareRule", {"protocol": 3, "softwareRule": {"extra": 1}, "javascript": js}),
            ("a sessionId of the wrong type", {"protocol": 3, "sessionId": 7, "javascript": js}),
            ("a sessionId on Run", {"protocol": 3, "sessionId": "0" * 32, "javascript": js}),
            ("protocol \"3\\u0000x\"", {"protocol": "3\u0000x", "javascript": js})]:
        expect_error("refused before running, marked: " + name, c.call("Run", body), 400, "invalid_argument", "request")
    check("none of the refused requests ran", runs_total() == n0, "%s runs, then %s" % (n0, runs_total()))

    a = c.raw("POST", "/metrics/../plimsoll.v1.SandboxService/Run", json.dumps({"protocol": 3, "javascript": js}).encode(),
              [("Content-Type", "application/json")])
    check("/metrics/../plimsoll.v1.SandboxService/Run is not Run: 404", a.status == 404, "status %d" % a.status)

    def hwm_kib():
        for line in open("/proc/%s/status" % pid):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0
    body = b'{"protocol":3,"x":[' + b"{}," * ((8 << 20) // 3 - 20) + b"{}]}"
    t = time.monotonic()
    a = c.call("Run", body)
    took = time.monotonic() - t
    expect_error("8 MiB of {},{},...: refused, marked", a, 400, "invalid_argument", "request", header="request")
    check("8 MiB of {},{},...: refused for its count of values", "JSON values" in (a.json or {}).get("message", ""),
          repr(a.body[:200]))
    check("8 MiB of {},{},...: the server stayed under 120 MB", hwm_kib() < 120 << 10, "VmHWM %d KiB" % hwm_kib())
    check("8 MiB of {},{},...: answered in under a second (%.2f s)" % took, took < 1.0)
    expect_error("a Describe body over 1 KiB: refused unread", c.call("Describe", b"{}" + b" " * 5000),
                 400, "invalid_argument", "request", header="request")

    # a client that hangs up: its run is stopped (review 2.1). The step sleeps 70 s (its deadline
    # 120 s), so the waits for its start (30 s) and its end (20 s) can be long enough for a busy
    # machine, and a run that ended by itself is still not taken for one that was stopped.
    u = urllib.parse.urlsplit(url)
    body = json.dumps({"protocol": 3, "timeoutMs": 120000, "project": {"steps": ["sleep 70.123"]}}).encode()
    sk = socket.create_connection((u.hostname, u.port))
    sk.sendall(b"POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def sleeping():
        return os.system("pgrep -f 'sleep 70\\.123' >/dev/null") == 0
    for _ in range(600):
        if sleeping():
            break
        time.sleep(0.05)
    started = sleeping()
    # a hang-up is a reset: SO_LINGER 0 makes close() send one (a clean close over TCP cannot be
    # told from a half-close, whose run goes on: test-http-hostile.sh)
    sk.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sk.close()
    for _ in range(400):
        if not sleeping():
            break
        time.sleep(0.05)
    check("a client that hangs up (a reset): its run is stopped", started and not sleeping(), "started %s" % started)

    # request bodies held at once share a budget (64 MiB): nine bodies of 8 MiB, each but its last
    # byte sent, then all finished; the ones over the budget are refused, marked capacity
    big = json.dumps({"protocol": 3, "javascript": {"code": "x" * ((8 << 20) - 64)}}).encode()
    socks = []
    for _ in range(9):
        sk = socket.create_connection((u.hostname, u.port), timeout=30)
        sk.sendall(b"POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(big) + big[:-1])
        socks.append(sk)
    time.sleep(0.5)
    statuses = []
    for sk in socks:
        sk.sendall(big[-1:])
    for sk in socks:
        data = b""
        try:
            while True:
                chunk = sk.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        sk.close()
        statuses.append(data.split(b" ", 2)[1] if data.startswith(b"HTTP/1.1 ") else b"none")
    check("nine 8 MiB bodies at once: those over the budget get 429 (capacity), the rest 400",
          b"429" in statuses and set(statuses) <= {b"400", b"429"}, repr(statuses))
    req, a = run_js(c, "console.log('budget back')")
    check("the budget is given back", a.status == 200, "status %d" % a.status)

    # a connection that sends nothing more is closed after the idle timeout (10 s), checked after
    # the queued run below has taken longer than that
    idle = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    idle.bind(("127.0.0.3", 0))
    idle.connect((u.hostname, u.port))
    idle.sendall(b"GET /healthz HT")

    # a run that waits in the queue gets the whole of its own time (review 1.2): the first holds
    # the only slot for 17 s, longer than the second's timeout plus the slack (3 + 15 s)
    first = []
    th = threading.Thread(target=lambda: first.append(
        c.call("Run", {"protocol": 3, "timeoutMs": 30000, "project": {"steps": ["sleep 17"]}}, timeout=60)))
    th.start()
    wait_in_flight(c, 1)
    req = {"protocol": 3, "timeoutMs": 3000, "project": {"steps": ["sleep 2; echo queued"]}}
    res = verify_run("a queued run", req, c.call("Run", req, timeout=60), "project")
    if res:
        p = res["project"]
        check("a queued run: it ran to its end", p.get("outcome") == "PROJECT_OUTCOME_COMPLETED" and
              b64(p["steps"][0].get("stdout", "")) == b"queued\n", repr(p)[:300])
    th.join()
    check("the run that held the slot answers", first and first[0].status == 200 and first[0].bound(),
          repr(first[0].body[:200]) if first else "no answer")

    idle.settimeout(1)
    try:
        closed = idle.recv(100) == b""
    except ConnectionResetError:
        closed = True
    except OSError:
        closed = False
    idle.close()
    check("a connection idle for 10 s in its request line is closed", closed)

    # 300 connections that never finish their request line, from another address: /healthz still
    # answers (review 1.4)
    held = []
    for _ in range(300):
        try:
            sk = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sk.bind(("127.0.0.2", 0))
            sk.settimeout(2)
            sk.connect((u.hostname, u.port))
            sk.sendall(b"POST /plimsoll.v1.SandboxService/Run HT")
            held.append(sk)
        except OSError:
            break
    time.sleep(0.3)
    try:
        a = Client(url).raw("GET", "/healthz", rid=False, timeout=3)
        healthy = a.status == 200
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        healthy, a = False, e
    check("300 half-sent requests from one address: /healthz still answers", healthy, repr(a))
    for sk in held:
        sk.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    commands = {("conformance", 3): conformance, ("auth", 4): auth, ("slow", 3): slow, ("cancelled", 4): cancelled,
                ("hardening", 3): hardening}
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
