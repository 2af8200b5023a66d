"""sessions_common.py: what sessions_client.py's parts share: the protocol's names and codes, the
protobuf reader for records, the refusal checks, a Session (open, run, verify and chain, close), hull's
Workspace calls (Ws) and process listings. Standard library only."""
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plimsoll_record as record  # noqa: E402
import serve_client as sc  # noqa: E402
from serve_client import b64, check, bad  # noqa: E402


SERVICE = sc.SERVICE
TIERS = sc.TIERS
REASONS = {1: "request", 2: "permission", 3: "protocol", 4: "unsupported", 5: "isolation", 6: "capacity",
           7: "environment"}
ENDS = ["SESSION_END_UNSPECIFIED", "SESSION_END_CLOSED", "SESSION_END_EXPIRED", "SESSION_END_DISK_EXCEEDED",
        "SESSION_END_MAIN_PROCESS_ENDED", "SESSION_END_BOUNDARY_FAILED", "SESSION_END_SANDBOX_CHANGED",
        "SESSION_END_SHUTDOWN", "SESSION_END_REPLACED", "SESSION_END_NOT_FOUND", "SESSION_END_UNCLAIMED"]
CONNECT_CODES = {"canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
                 "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
                 "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated"}
PAYLOADS = ("javascript", "project", "cell")
HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def failures():
    return sc.failures


def end_name(v):
    """SessionEnd by name or number; None when absent."""
    if v is None or v == "":
        return None
    if isinstance(v, int):
        return ENDS[v] if 0 <= v < len(ENDS) else str(v)
    return v


def u64(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


# ---- protobuf (the binary error details) ----

def varint(buf, i):
    shift = n = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def pb_fields(buf):
    i, out = 0, []
    while i < len(buf):
        key, i = varint(buf, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            if i + n > len(buf):
                raise ValueError("truncated bytes")
            v, i = bytes(buf[i:i + n]), i + n
        elif wt == 1:
            v, i = bytes(buf[i:i + 8]), i + 8
        elif wt == 5:
            v, i = bytes(buf[i:i + 4]), i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((fn, wt, v))
    return out


RECORD_FIELDS = {1: ("version", int), 2: ("requestSha256", str), 3: ("resultSha256", str), 4: ("provider", str),
                 5: ("isolation", str), 6: ("environment", str), 7: ("policy", str), 8: ("startedUnixMs", int),
                 9: ("endedUnixMs", int), 10: ("session", str), 11: ("sequence", int), 12: ("previousSha256", str),
                 13: ("recordSha256", str), 14: ("softwareIdentity", str), 15: ("softwareRuleId", str),
                 16: ("unanswered", str)}


def pb_record(buf):
    rec = {}
    for fn, wt, v in pb_fields(buf):
        if fn not in RECORD_FIELDS:
            continue
        name, kind = RECORD_FIELDS[fn]
        rec[name] = v if kind is int and wt == 0 else v.decode("utf-8") if kind is str and wt == 2 else None
    return rec


def details(a):
    """The error details of an answer: {"NotDispatched": reason, "SessionEnded": (end, detail),
    "UnansweredCall": record dict}; "bad" lists details that could not be read."""
    out = {"bad": []}
    j = a.json if isinstance(a.json, dict) else {}
    for d in j.get("details") or []:
        t = (d.get("type") or "").rsplit("/", 1)[-1]
        try:
            raw = b64(d.get("value", ""))
            f = pb_fields(raw)
            if t == "plimsoll.v1.NotDispatched":
                out["NotDispatched"] = REASONS.get(next((v for fn, wt, v in f if fn == 1), 0), "?")
            elif t == "plimsoll.v1.SessionEnded":
                r = next((v for fn, wt, v in f if fn == 1), 0)
                det = next((v.decode() for fn, wt, v in f if fn == 2), "")
                out["SessionEnded"] = (end_name(r), det)
            elif t == "plimsoll.v1.UnansweredCall":
                r = next((v for fn, wt, v in f if fn == 1 and wt == 2), None)
                out["UnansweredCall"] = pb_record(r) if r is not None else None
            else:
                out.setdefault("other", []).append(t)
        except (ValueError, UnicodeDecodeError) as e:
            out["bad"].append("%s: %s" % (t, e))
    return out


def refusal(name, a, status, code, reason, ended=None):
    """An error answer: bound, status, code, NotDispatched reason (None: must have none), and the
    SessionEnded reason when ended is given."""
    j = a.json if isinstance(a.json, dict) else {}
    d = details(a)
    probs = []
    if not a.bound():
        probs.append("not bound to its request ID (headers %r)" % a.header_values("Plimsoll-Request-Id"))
    if a.status != status:
        probs.append("status %d, want %d" % (a.status, status))
    if j.get("code") != code:
        probs.append("code %r, want %r" % (j.get("code"), code))
    if d.get("NotDispatched") != reason:
        probs.append("NotDispatched %r, want %r" % (d.get("NotDispatched"), reason))
    if ended is not None and d.get("SessionEnded", (None,))[0] != ended:
        probs.append("SessionEnded %r, want %r" % (d.get("SessionEnded"), ended))
    if d["bad"]:
        probs.append("unreadable details %r" % d["bad"])
    return check(name, not probs, "; ".join(probs) + " | body %r" % a.body[:300])


def tier_meets(tier, floor):
    return tier in TIERS and (not floor or TIERS.index(tier) >= TIERS.index(floor))


# ---- a session, as the official client tracks it ----

class Session:
    def __init__(self, c, label="session"):
        self.c = c
        self.label = label
        self.sid = None
        self.fp = None
        self.calls = 0
        self.last = ""
        self.open_answer = None
        self.ended = None          # the SessionEnd an answer stated
        self.abandoned = False     # an unmarked error without a valid UnansweredCall: send nothing more

    # check 7
    def open(self, floor="", owner=None, quiet=False, **extra):
        msg = {"protocol": 3}
        if floor:
            msg["minimumIsolation"] = floor
        if owner is not None:
            msg["owner"] = owner
        msg.update(extra)
        a = self.c.call("OpenSession", msg)
        probs = []
        j = a.json if isinstance(a.json, dict) else {}
        if a.status != 200:
            probs.append("status %d body %r" % (a.status, a.body[:300]))
        else:
            if not a.bound():
                probs.append("not bound to its request ID")
            ct = a.header_values("Content-Type")
            if not (len(ct) == 1 and ct[0].split(";")[0].strip() == "application/json"):
                probs.append("content type %r" % ct)
            sid = j.get("sessionId", "")
            if not HEX32.match(sid or ""):
                probs.append("sessionId %r is not 32 lowercase hex digits" % sid)
            elif j.get("session") != hashlib.sha256(sid.encode()).hexdigest():
                probs.append("session %r is not sha256(sessionId)" % j.get("session"))
            if not tier_meets(j.get("isolation", ""), floor):
                probs.append("isolation %r does not meet the floor %r" % (j.get("isolation"), floor))
            if not j.get("sandbox"):
                probs.append("no sandbox")
            if not u64(j.get("expiresUnixMs")) or u64(j.get("expiresUnixMs")) <= time.time() * 1000:
                probs.append("expiresUnixMs %r not in the future" % j.get("expiresUnixMs"))
            if not u64(j.get("idleTimeoutMs")):
                probs.append("idleTimeoutMs %r not set" % j.get("idleTimeoutMs"))
        good = not probs
        if not quiet or not good:
            check("%s: OpenSession answers a checked session (bound, sha256 fingerprint, tier, expiry)" % self.label,
                  good, "; ".join(probs))
        if good:
            self.sid, self.fp, self.open_answer = j["sessionId"], j["session"], j
        return a

    def request(self, payload, **env):
        req = {"protocol": 3, "sessionId": self.sid}
        req.update(env)
        req.update(payload)
        return req

    def verify_run(self, req, a, chain=True):
        """Checks 2-4, 6 and 8 on a 200 SessionRun answer. Returns (problems, run, record)."""
        probs = []
        kind = [k for k in PAYLOADS if req.get(k) is not None][0]
        if not a.bound():
            probs.append("not bound to its request ID (%r)" % a.header_values("Plimsoll-Request-Id"))
        ct = a.header_values("Content-Type")
        if not (len(ct) == 1 and ct[0].split(";")[0].strip() == "application/json"):
            probs.append("content type %r" % ct)
        j = a.json if isinstance(a.json, dict) else None
        run = j.get("run") if j else None
        if not isinstance(run, dict):
            return probs + ["no run object: %r" % a.body[:300]], None, None
        kinds = [k for k in sc.RESULT_KINDS if run.get(k) is not None]
        if kinds != [kind]:
            probs.append("results %r, want exactly [%r]" % (kinds, kind))
        rec = run.get("record")
        if not isinstance(rec, dict):
            return probs + ["no record"], run, None
        if rec.get("version") != 2:
            probs.append("record version %r" % rec.get("version"))
        if rec.get("provider") != run.get("sandbox") or rec.get("isolation") != run.get("isolation"):
            probs.append("provider/isolation %r/%r vs %r/%r" % (rec.get("provider"), rec.get("isolation"),
                                                               run.get("sandbox"), run.get("isolation")))
        if (rec.get("environment", "") != run.get("environment", "") or
                rec.get("softwareIdentity", "") != run.get("softwareIdentity", "")):
            probs.append("environment/software differ from the answer's")
        if rec.get("softwareRuleId", "") != record.rule_id(req.get("softwareRule")):
            probs.append("softwareRuleId %r" % rec.get("softwareRuleId"))
        floor = req.get("minimumIsolation", "")
        if not tier_meets(run.get("isolation", ""), floor):
            probs.append("isolation %r below the floor %r" % (run.get("isolation"), floor))
        if self.open_answer and run.get("isolation") != self.open_answer.get("isolation"):
            probs.append("isolation %r differs from the one measured at open %r" % (
                run.get("isolation"), self.open_answer.get("isolation")))
        if rec.get("requestSha256") != record.request_digest(req):
            probs.append("requestSha256 %s != %s" % (rec.get("requestSha256"), record.request_digest(req)))
        if len(kinds) == 1 and rec.get("resultSha256") != record.result_digest(run):
            probs.append("resultSha256 %s != %s" % (rec.get("resultSha256"), record.result_digest(run)))
        if rec.get("recordSha256") != record.record_digest(rec):
            probs.append("recordSha256 does not hold")
        if rec.get("session") != self.fp:
            probs.append("record session %r is not the fingerprint" % rec.get("session"))
        if chain:
            if u64(rec.get("sequence")) != self.calls + 1:
                probs.append("sequence %r, want %d" % (rec.get("sequence"), self.calls + 1))
            if rec.get("previousSha256", "") != self.last:
                probs.append("previousSha256 %r, want %r" % (rec.get("previousSha256"), self.last))
        e = end_name(j.get("ended"))
        if e and e != "SESSION_END_UNSPECIFIED":
            self.ended = e
        return probs, run, rec

    def verify_unanswered(self, req, rec):
        """Check 8 on an UnansweredCall record."""
        probs = []
        if not isinstance(rec, dict):
            return ["no record in UnansweredCall"]
        if rec.get("version") != 3:
            probs.append("version %r, want 3" % rec.get("version"))
        if rec.get("resultSha256", ""):
            probs.append("a result digest")
        if rec.get("unanswered") not in CONNECT_CODES:
            probs.append("unanswered %r is no Connect code" % rec.get("unanswered"))
        if rec.get("requestSha256") != record.request_digest(req):
            probs.append("requestSha256")
        if rec.get("softwareRuleId", "") != record.rule_id(req.get("softwareRule")):
            probs.append("softwareRuleId")
        if rec.get("recordSha256") != record.record_digest(rec):
            probs.append("recordSha256 does not hold")
        o = self.open_answer or {}
        if (rec.get("provider") != o.get("sandbox") or rec.get("isolation") != o.get("isolation") or
                rec.get("softwareIdentity", "") != o.get("softwareIdentity", "")):
            probs.append("provider/tier/software differ from the open's")
        if rec.get("session") != self.fp or u64(rec.get("sequence")) != self.calls + 1 or \
                rec.get("previousSha256", "") != self.last:
            probs.append("chain: session %r sequence %r previous %r" % (rec.get("session"), rec.get("sequence"),
                                                                       rec.get("previousSha256")))
        return probs

    def run(self, name, payload, expect_ok=True, timeout=90, **env):
        """One SessionRun. A 200 is verified and chained; an error is classified: marked (not counted),
        UnansweredCall (checked and counted), else the session is abandoned. Returns (answer, run)."""
        if self.abandoned:
            bad(name, "the session was abandoned after an unmarked error without a valid record")
            return None, None
        req = self.request(payload, **env)
        a = self.c.call("SessionRun", req, timeout=timeout)
        if a.status == 200:
            probs, run, rec = self.verify_run(req, a)
            if not probs:
                self.calls += 1
                self.last = rec["recordSha256"]
            check(name + ": a verified, chained answer (sequence %d)" % (self.calls if not probs else self.calls + 1),
                  not probs, "; ".join(probs))
            return a, run if not probs else None
        d = details(a)
        if "NotDispatched" not in d:
            un = d.get("UnansweredCall")
            if un is not None or "UnansweredCall" in d:
                probs = self.verify_unanswered(req, un)
                check(name + ": an UnansweredCall v3 record that checks", not probs, "; ".join(probs))
                if not probs:
                    self.calls += 1
                    self.last = un["recordSha256"]
                else:
                    self.abandoned = True
            else:
                self.abandoned = True
        if expect_ok:
            bad(name, "status %d body %r" % (a.status, a.body[:400]))
        return a, None

    def close(self, name, expect_ended="SESSION_END_CLOSED", calls=None, last=None):
        """Check 9: the close states what the client tracked."""
        a = self.c.call("CloseSession", {"protocol": 3, "sessionId": self.sid})
        j = a.json if isinstance(a.json, dict) else {}
        probs = []
        if a.status != 200:
            probs.append("status %d body %r" % (a.status, a.body[:300]))
        else:
            if not a.bound():
                probs.append("not bound")
            if j.get("session") != self.fp:
                probs.append("session %r" % j.get("session"))
            want_calls = self.calls if calls is None else calls
            if u64(j.get("calls", 0)) != want_calls:
                probs.append("calls %r, tracked %d" % (j.get("calls"), want_calls))
            want_last = self.last if last is None else last
            if j.get("lastRecordSha256", "") != want_last:
                probs.append("lastRecordSha256 %r, tracked %r" % (j.get("lastRecordSha256"), want_last))
            if end_name(j.get("ended")) != expect_ended:
                probs.append("ended %r, want %r" % (j.get("ended"), expect_ended))
        check(name, not probs, "; ".join(probs))
        return a


def cell(language, code, files=None):
    c = {"language": language, "code": code}
    if files:
        c["files"] = [{"path": p, "content": v} for p, v in files]
    return {"cell": c}


def out_of(run, kind):
    r = (run or {}).get(kind) or {}
    return b64(r.get("stdout", "")), b64(r.get("stderr", "")), r.get("exitCode", 0), r


def pgrep(pattern):
    return os.popen("pgrep -f %s" % pattern).read().split()


def session_calls(c):
    """hull_session_calls_total: counted when a call enters its session (inflight, before it waits its
    turn), so a session with a counted call is busy: never the least recently used idle one."""
    return sc.metrics(c).get("hull_session_calls_total", -1)


def wait_session_calls(c, n, seconds=60):
    """Until n session calls have entered (a loaded machine may take seconds to send one); the count."""
    end = time.monotonic() + seconds
    while True:
        got = session_calls(c)
        if got >= n or time.monotonic() >= end:
            return got
        time.sleep(0.05)


def wait_gone(pattern, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not pgrep(pattern):
            return True
        time.sleep(0.1)
    return not pgrep(pattern)


def descendants(pid):
    """Every process under pid: {pid: (starttime, comm)} read from /proc/*/stat."""
    parent, info = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            s = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        parent[int(d)] = int(rest[1])
        info[int(d)] = (rest[19], comm)
    out, todo = {}, [int(pid)]
    while todo:
        p = todo.pop()
        for q, pp in parent.items():
            if pp == p and q not in out:
                out[q] = info[q]
                todo.append(q)
    return out


def still_alive(procs):
    """Those of {pid: (starttime, comm)} that still run (same pid and start time, not a zombie)."""
    left = {}
    for p, (st, comm) in procs.items():
        try:
            s = open("/proc/%d/stat" % p).read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()
        if rest[19] == st and rest[0] != "Z":
            left[p] = (st, comm)
    return left


def describe(c):
    a = c.call("Describe", {})
    return a.json if isinstance(a.json, dict) else {}


# ---- hull's Workspace extension ----

# What runs code or changes the workspace is on the session's record, in hull's own kinds
# (docs/API.md "hull's record kinds"): the operation's request and result as the session core
# states them, rebuilt here from what the client sent and got.
RECORDED = {"Exec": "exec", "Write": "write", "Edit": "edit", "Hydrate": "hydrate"}


def hull_request(op, body):
    if op == "exec":
        t = int(body.get("timeoutMs", 0) or 0)
        return {"command": body["command"], "timeoutMs": min(t if t > 0 else 30000, 300000),
                "env": [{"name": k, "value": v} for k, v in (body.get("env") or {}).items()]}
    if op == "write":
        return {"path": body["path"], "content": body.get("content", ""), "append": bool(body.get("append"))}
    if op == "edit":
        return {"path": body["path"], "oldText": body.get("oldText", ""), "newText": body.get("newText", "")}
    return {"archive": body.get("archive", "")}


def hull_result(op, j):
    keys = {"exec": ("exitCode", "timedOut", "stdout", "stderr", "stdoutTruncated", "stderrTruncated"),
            "write": ("bytes",), "edit": ("replaced",), "hydrate": ("files", "bytes")}[op]
    return {k: j[k] for k in keys if k in j}


class Ws:
    def __init__(self, c, sid, session=None):
        self.c, self.sid = c, sid
        self.unbound = 0
        self.session = session  # a Session: recorded calls are verified and chained on it
        self.recorded = 0
        self.record_problems = []

    def call(self, proc, timeout=60, service="/hull.v1.Workspace/", **body):
        if self.sid and service == "/hull.v1.Workspace/" and "sessionId" not in body:
            body["sessionId"] = self.sid
        hs = [("Content-Type", "application/json"), ("Connect-Protocol-Version", "1")]
        if self.c.token:
            hs.append(("Authorization", "Bearer " + self.c.token))
        a = self.c.raw("POST", self.c.prefix + service + proc, json.dumps(body).encode(), hs, True, timeout)
        if not a.bound():
            self.unbound += 1
        if self.session and service == "/hull.v1.Workspace/" and proc in RECORDED:
            self.track(RECORDED[proc], body, a)
        return a

    def track(self, op, body, a):
        """A 200 carries a version 2 record of the call; an error that may have run carries a
        version 3 one in UnansweredCall; a refusal (NotDispatched) carries none. Each is checked
        against hull's rules and the chain, and counted."""
        s = self.session
        req = hull_request(op, body)
        if a.status == 200:
            rec, res = self.j(a).get("record"), hull_result(op, self.j(a))
            want = 2
        else:
            d = details(a)
            if "NotDispatched" in d:
                return
            rec, res, want = d.get("UnansweredCall"), None, 3
        probs = []
        if not isinstance(rec, dict):
            probs.append("no record")
        else:
            if rec.get("version") != want:
                probs.append("version %r, want %d" % (rec.get("version"), want))
            if rec.get("requestSha256") != record.hull_request_digest(op, req):
                probs.append("requestSha256 is not the %s request's" % op)
            if want == 2 and rec.get("resultSha256") != record.hull_result_digest(op, res):
                probs.append("resultSha256 is not the %s result's" % op)
            if want == 3 and (rec.get("resultSha256") or rec.get("unanswered") not in CONNECT_CODES):
                probs.append("a version 3 record with a result or without a Connect code")
            if rec.get("recordSha256") != record.record_digest(rec):
                probs.append("recordSha256 does not hold")
            if rec.get("session") != s.fp or u64(rec.get("sequence")) != s.calls + 1 or \
                    rec.get("previousSha256", "") != s.last:
                probs.append("chain: sequence %r previous %r, tracked %d %r" % (
                    rec.get("sequence"), rec.get("previousSha256"), s.calls, s.last))
        if probs:
            self.record_problems.append("%s: %s" % (op, "; ".join(probs)))
        else:
            s.calls += 1
            s.last = rec["recordSha256"]
            self.recorded += 1

    def j(self, a):
        return a.json if isinstance(a.json, dict) else {}


def ws_refused(name, a, codes=("invalid_argument", "permission_denied")):
    j = a.json if isinstance(a.json, dict) else {}
    return check(name, a.status in (400, 403, 404, 409, 412) and j.get("code") in codes,
                 "status %d body %r" % (a.status, a.body[:300]))


def tar_of(entries):
    """entries: (TarInfo kwargs, data or None); returns the archive bytes (pax)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for kw, data in entries:
            ti = tarfile.TarInfo(kw.pop("name"))
            for k, v in kw.items():
                setattr(ti, k, v)
            if data is not None:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
            else:
                t.addfile(ti)
    return buf.getvalue()
