#!/usr/bin/python3
"""plimsoll_record.py: run-record digests written from the plimsoll spec alone (docs/API.md,
shared/reference/plimsoll-protocol.md), independent of hull's C code, so that the two can check
each other. Standard library only.

  plimsoll_record.py golden FILE          check every vector of a golden file; print one line each
  plimsoll_record.py chain OUT N          write an audit log of N chained session calls to OUT
  plimsoll_record.py tamper KIND IN OUT   write a copy of the log IN with one kind of tampering;
                                          print the line number the verifier must name
  plimsoll_record.py verify LOG           check an audit log's digests (request, result, record)
                                          and its chain, as hull verify does (not its rule, floor
                                          and envelope checks); print each problem, then "ok: N
                                          records, session S, last D" or "LOG: N problems"; exit
                                          0 or 1
"""
import base64
import hashlib
import json
import struct
import sys

OUTCOMES = {"PROJECT_OUTCOME_UNSPECIFIED": 0, "PROJECT_OUTCOME_COMPLETED": 1,
            "PROJECT_OUTCOME_SETUP_FAILED": 2, "PROJECT_OUTCOME_TIMED_OUT": 3,
            "PROJECT_OUTCOME_PROTOCOL_ERROR": 4}


def digest(domain, fields):
    h = hashlib.sha256()

    def value(b):
        h.update(struct.pack(">Q", len(b)))
        h.update(b)

    value(domain.encode())
    for name, v in fields:
        value(name.encode())
        if isinstance(v, bool):
            v = b"true" if v else b"false"
        elif isinstance(v, int):
            v = str(v).encode()
        elif isinstance(v, str):
            v = v.encode()
        value(v)
    return h.hexdigest()


def get(msg, camel, default):
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    v = msg.get(camel, msg.get(snake))
    return default if v is None else v


def b64(s):
    s = s.replace("-", "+").replace("_", "/")
    return base64.b64decode(s + "=" * (-len(s) % 4))


def dbl(v):
    # ProtoJSON doubles are numbers or the strings "NaN", "Infinity", "-Infinity"; float() reads all.
    return struct.pack(">d", float(v))


def request_digest(req):
    protocol = int(get(req, "protocol", 0))
    f = [("protocol", protocol), ("minimum_isolation", get(req, "minimumIsolation", "")),
         ("timeout_ms", int(get(req, "timeoutMs", 0)))]
    if protocol >= 2:
        rule = get(req, "softwareRule", {})
        ids = get(rule, "identities", [])
        f += [("software_mode", get(rule, "mode", "")), ("software_identities", len(ids))]
        f += [("software_identity", i) for i in ids]
    kinds = [k for k in ("javascript", "project", "module", "cell") if req.get(k) is not None]
    kind = kinds[0] if kinds else ""
    f.append(("kind", kind))
    p = req.get(kind, {})
    if kind == "javascript":
        f += [("code", get(p, "code", "")), ("grant_profile", get(p, "grantProfile", ""))]
    elif kind == "project":
        f.append(("grant_profile", get(p, "grantProfile", "")))
        files = get(p, "files", [])
        f.append(("files", len(files)))
        for x in files:
            f += [("file_path", get(x, "path", "")), ("file_content", get(x, "content", ""))]
        steps = get(p, "steps", [])
        f.append(("steps", len(steps)))
        f += [("step_command", s) for s in steps]
        arts = get(p, "artifacts", [])
        f.append(("artifacts", len(arts)))
        f += [("artifact_path", a) for a in arts]
    elif kind == "module":
        f += [("model", get(p, "model", "")), ("end_time", dbl(get(p, "endTime", 0))),
              ("step", dbl(get(p, "step", 0)))]
        rows = get(p, "rows", [])
        f.append(("rows", len(rows)))
        f += [("row_values", b"".join(dbl(v) for v in get(r, "values", []))) for r in rows]
    elif kind == "cell":
        f += [("language", get(p, "language", "")), ("code", get(p, "code", ""))]
        files = get(p, "files", [])
        f.append(("files", len(files)))
        for x in files:
            f += [("file_path", get(x, "path", "")), ("file_content", get(x, "content", ""))]
    domain = "plimsoll.run-request.v2" if protocol >= 2 else "plimsoll.run-request.v1"
    return digest(domain, f)


def outcome(v):
    return OUTCOMES[v] if isinstance(v, str) else int(v)


def stream_fields(r, prefix=""):
    return [(prefix + "exit_code", int(get(r, "exitCode", 0))), (prefix + "timed_out", bool(get(r, "timedOut", False))),
            (prefix + "stdout", b64(get(r, "stdout", ""))), (prefix + "stderr", b64(get(r, "stderr", ""))),
            (prefix + "stdout_truncated", bool(get(r, "stdoutTruncated", False))),
            (prefix + "stderr_truncated", bool(get(r, "stderrTruncated", False)))]


def result_digest(res):
    kind = [k for k in ("javascript", "project", "module", "cell") if res.get(k) is not None][0]
    r = res[kind]
    f = [("kind", kind)]
    if kind in ("javascript", "cell"):
        f += stream_fields(r)
        if kind == "cell":
            f += [("interpreter_started", bool(get(r, "interpreterStarted", False))),
                  ("interpreter_ended", bool(get(r, "interpreterEnded", False)))]
    elif kind == "project":
        f += [("outcome", outcome(get(r, "outcome", 0))), ("outcome_detail", get(r, "outcomeDetail", "")),
              ("artifacts_truncated", bool(get(r, "artifactsTruncated", False)))]
        steps = get(r, "steps", [])
        f.append(("steps", len(steps)))
        for s in steps:
            f.append(("step_command", get(s, "command", "")))
            f += stream_fields(s, "step_")
        arts = get(r, "artifacts", [])
        f.append(("artifacts", len(arts)))
        for a in arts:
            f += [("artifact_path", get(a, "path", "")), ("artifact_content", b64(get(a, "content", "")))]
    else:
        f += [("outcome", outcome(get(r, "outcome", 0))), ("outcome_detail", get(r, "outcomeDetail", "")),
              ("width", int(get(r, "width", 0))), ("stdout", b64(get(r, "stdout", ""))),
              ("stderr", b64(get(r, "stderr", "")))]
        runs = get(r, "runs", [])
        f.append(("runs", len(runs)))
        for x in runs:
            f += [("run_status", int(get(x, "status", 0))),
                  ("run_outputs", b"".join(dbl(v) for v in get(x, "outputs", [])))]
    return digest("plimsoll.run-result.v1", f)


def record_digest(rec):
    version = int(get(rec, "version", 0))
    f = [("request_sha256", get(rec, "requestSha256", "")), ("result_sha256", get(rec, "resultSha256", ""))]
    if version == 3:
        f.append(("unanswered", get(rec, "unanswered", "")))
    f += [("provider", get(rec, "provider", "")), ("isolation", get(rec, "isolation", "")),
          ("environment", get(rec, "environment", "")), ("policy", get(rec, "policy", ""))]
    if version >= 2:
        f += [("software_identity", get(rec, "softwareIdentity", "")),
              ("software_rule_id", get(rec, "softwareRuleId", ""))]
    f += [("started_unix_ms", int(get(rec, "startedUnixMs", 0))), ("ended_unix_ms", int(get(rec, "endedUnixMs", 0))),
          ("session", get(rec, "session", "")), ("sequence", int(get(rec, "sequence", 0))),
          ("previous_sha256", get(rec, "previousSha256", ""))]
    return digest("plimsoll.run-record.v%d" % version, f)


# hull's read-only kinds: the tool call's arguments, in this order, each hashed only when given.
READ_ONLY_ARGS = {
    "read": [("file_path", str), ("offset", int), ("limit", int)],
    "glob": [("pattern", str), ("path", str)],
    "grep": [("pattern", str), ("path", str), ("glob", str), ("-i", bool), ("output_mode", str),
             ("head_limit", int)],
    "inspect_handle": [("handle_id", str), ("rows", int), ("stats", bool)],
    "query_handle": [("sql", str), ("max_rows", int)],
}


def read_only_args(op, req):
    names = [n for n, _ in READ_ONLY_ARGS[op]]
    unknown = [k for k in req if k not in names]
    if unknown:
        raise ValueError("the %s request has an unknown field %r" % (op, unknown[0]))
    f = []
    for name, t in READ_ONLY_ARGS[op]:
        v = req.get(name)
        if v is None:  # not given: not hashed
            continue
        if t is int:
            if isinstance(v, bool) or not isinstance(v, (int, float, str)) or \
                    (isinstance(v, float) and v != int(v)):
                raise ValueError("%s.%s is not an integer" % (op, name))
            v = int(v)
        elif not isinstance(v, t):
            raise ValueError("%s.%s is not a %s" % (op, name, t.__name__))
        f.append((name, v))
    return f


def hull_request_digest(op, req):
    """hull's record kinds (docs/API.md "hull's record kinds"): the request digest."""
    f = [("operation", op)]
    if op in READ_ONLY_ARGS:
        f += read_only_args(op, req)
    elif op == "exec":
        env = get(req, "env", [])
        f += [("command", get(req, "command", "")), ("timeout_ms", int(get(req, "timeoutMs", 0))),
              ("env", len(env))]
        for kv in env:
            f += [("env_name", get(kv, "name", "")), ("env_value", get(kv, "value", ""))]
    elif op == "write":
        f += [("path", get(req, "path", "")), ("content", b64(get(req, "content", ""))),
              ("append", bool(get(req, "append", False)))]
    elif op == "edit":
        f += [("path", get(req, "path", "")), ("old_text", get(req, "oldText", "")),
              ("new_text", get(req, "newText", ""))]
    elif op == "hydrate":
        f += [("archive", b64(get(req, "archive", "")))]
    elif op == "add_input":
        f += [("input_id", get(req, "inputId", "")), ("name", get(req, "name", "")),
              ("bytes", int(get(req, "bytes", 0))), ("sha256", get(req, "sha256", ""))]
    else:
        raise ValueError("not one of hull's record kinds: %r" % op)
    return digest("hull.workspace-request.v1", f)


def hull_result_digest(op, res):
    """hull's record kinds: the result digest."""
    f = [("operation", op)]
    if op in READ_ONLY_ARGS:
        unknown = [k for k in res if k not in ("text", "isError", "is_error", "handles")]
        if unknown:
            raise ValueError("the %s result has an unknown field %r" % (op, unknown[0]))
        handles = get(res, "handles", [])
        f += [("text", get(res, "text", "")), ("is_error", bool(get(res, "isError", False))),
              ("handles", len(handles))]
        f += [("handle", h) for h in handles]
    elif op == "exec":
        f += [("exit_code", int(get(res, "exitCode", 0))), ("timed_out", bool(get(res, "timedOut", False))),
              ("stdout", b64(get(res, "stdout", ""))), ("stderr", b64(get(res, "stderr", ""))),
              ("stdout_truncated", bool(get(res, "stdoutTruncated", False))),
              ("stderr_truncated", bool(get(res, "stderrTruncated", False)))]
    elif op == "write":
        f += [("bytes", int(get(res, "bytes", 0)))]
    elif op == "edit":
        f += [("replaced", int(get(res, "replaced", 0)))]
    elif op == "hydrate":
        f += [("files", int(get(res, "files", 0))), ("bytes", int(get(res, "bytes", 0)))]
    elif op == "add_input":
        f += [("handle", get(res, "handle", "")), ("bytes", int(get(res, "bytes", 0))),
              ("sha256", get(res, "sha256", ""))]
    else:
        raise ValueError("not one of hull's record kinds: %r" % op)
    return digest("hull.workspace-result.v1", f)


def rule_id(rule):
    ids = sorted(set(i.encode() for i in get(rule or {}, "identities", [])))
    if not ids:
        return ""
    if len(ids) == 1:
        return "exact:" + ids[0].decode()
    return "approved:sha256:" + hashlib.sha256(b"\0".join(ids)).hexdigest()


def golden(path):
    g = json.load(open(path))
    bad = 0
    for v in g["requests"]:
        bad += report(v["name"], request_digest(v["request"]), v["sha256"])
    for v in g["results"]:
        bad += report(v["name"], result_digest(v["response"]), v["sha256"])
    for v in g["records"]:
        bad += report(v["name"], record_digest(v["record"]), v["sha256"])
    for v in g["sessionFingerprints"]:
        bad += report(v["name"], hashlib.sha256(v["sessionId"].encode()).hexdigest(), v["sha256"])
    return 1 if bad else 0


def report(name, got, want):
    print(("ok - %s" if got == want else "not ok - %s: got " + got) % name)
    return got != want


def hull_call(n, session, previous, rule):
    """The n-th call of a session as one of hull's record kinds (every fifth call)."""
    ops = ["exec", "write", "edit", "hydrate", "add_input", "read", "glob", "grep", "inspect_handle",
           "query_handle"]
    op = ops[(n // 5 - 1) % len(ops)]
    req, res = {
        "exec": ({"command": "echo %d; exit 3" % n, "env": [{"name": "N", "value": str(n)}], "timeoutMs": 30000},
                 {"exitCode": 3, "timedOut": False, "stdout": base64.b64encode(b"%d\n" % n).decode(),
                  "stderr": "", "stdoutTruncated": False, "stderrTruncated": False, "durationMs": "12"}),
        "write": ({"path": "data/a%d.csv" % n, "content": base64.b64encode(b"x,y\n%d,\x00\n" % n).decode(),
                   "append": n % 2 == 0}, {"bytes": "8"}),
        "edit": ({"path": "a.txt", "oldText": "old\u0000%d" % n, "newText": "n\u00e9w"}, {"replaced": 1}),
        "hydrate": ({"archive": base64.b64encode(b"\x00" * 1024).decode()}, {"files": "2", "bytes": "10"}),
        "add_input": ({"inputId": "sales-%d" % n, "name": "sales.csv", "bytes": "5", "sha256": "a" * 64},
                      {"handle": "sales-%d" % n, "bytes": "5", "sha256": "a" * 64}),
        "read": ({"file_path": "/workspace/notes-%d.txt" % n, "offset": 2},
                 {"text": "     2\tb\u00e9 %d\n" % n, "isError": False, "handles": []}),
        "glob": ({"pattern": "**/*.csv"}, {"text": "/workspace/data/a%d.csv\n" % n, "isError": False,
                                            "handles": []}),
        "grep": ({"pattern": "x+", "path": "src", "-i": True, "output_mode": "content", "head_limit": 5.0},
                 {"text": "no matches for x+ (%d files searched)" % n, "isError": False, "handles": []}),
        "inspect_handle": ({"handle_id": "t%d" % n, "rows": 0, "stats": False},
                           {"text": "inspect_handle: there is no handle t%d; the handles are: none" % n,
                            "isError": True, "handles": []}),
        "query_handle": ({"sql": "SELECT * FROM t WHERE s = 'a\u0000b'", "max_rows": 10},
                         {"text": "The result has %d rows: it was kept as the table handle h2." % n,
                          "isError": False, "handles": ["h2"]}),
    }[op]
    rec = {"version": 2, "requestSha256": hull_request_digest(op, req), "resultSha256": hull_result_digest(op, res),
           "provider": "hull", "isolation": "container", "environment": "", "policy": "", "softwareIdentity": "",
           "softwareRuleId": rule_id(rule),
           "startedUnixMs": str(1790000000000 + 1000 * n), "endedUnixMs": str(1790000000000 + 1000 * n + 3),
           "session": session, "sequence": str(n), "previousSha256": previous}
    rec["recordSha256"] = record_digest(rec)
    return {"operation": op, "record": rec, "request": req, "result": res}


def call(n, session, previous, rule):
    """The n-th call of a session: a request, its result and its record, all consistent."""
    if n % 5 == 0:
        return hull_call(n, session, previous, rule)
    if n % 4 == 1:
        req = {"protocol": 3, "minimumIsolation": "container", "traceId": "t-%d" % n, "timeoutMs": 30000,
               "cell": {"language": "python", "code": "x = %d\nx * 2" % n,
                        "files": [{"path": "in.txt", "content": "line\u0000%d\n" % n}]}}
        res = {"cell": {"stdout": base64.b64encode(b"%d\n" % (2 * n)).decode(), "interpreterStarted": n == 1}}
    elif n % 4 == 2:
        req = {"protocol": 3, "timeoutMs": 5000, "javascript": {"code": "console.log(%d)" % n}}
        res = {"javascript": {"stdout": base64.b64encode(b"%d\n\xff" % n).decode(),
                              "stderr": base64.urlsafe_b64encode(b"warn\xfe").decode().rstrip("="),
                              "exitCode": 3, "stdoutTruncated": True}}
    elif n % 4 == 3:
        req = {"protocol": 3, "minimumIsolation": "process",
               "project": {"files": [{"path": "main.py", "content": "print(%d)\n" % n},
                                     {"path": "lib/é.txt", "content": "ünï\n"}],
                           "steps": ["python3 main.py > out.txt", "cat out.txt"], "artifacts": ["out.txt"]}}
        res = {"project": {"steps": [{"command": "python3 main.py > out.txt", "durationMs": "40"},
                                     {"command": "cat out.txt", "stdout": base64.b64encode(b"%d\n" % n).decode(),
                                      "exitCode": 0, "durationMs": "2"}],
                           "outcome": "PROJECT_OUTCOME_COMPLETED",
                           "artifacts": [{"path": "out.txt", "content": base64.b64encode(b"%d\n" % n).decode()}]}}
    else:
        req = {"protocol": 3, "javascript": {"code": "while(true){}"}, "timeoutMs": 100}
        res = {"javascript": {"exitCode": 124, "timedOut": True, "stderr": base64.b64encode(b"timeout").decode()}}
    req["softwareRule"] = rule
    rec = {"version": 2, "requestSha256": request_digest(req), "resultSha256": result_digest(res),
           "provider": "hull", "isolation": "container", "environment": "hull-rootfs:sha256:ee",
           "policy": "", "softwareIdentity": "oci-manifest:linux/amd64@sha256:" + "a" * 64,
           "softwareRuleId": rule_id(rule),
           "startedUnixMs": str(1790000000000 + 1000 * n), "endedUnixMs": str(1790000000000 + 1000 * n + 7),
           "session": session, "sequence": str(n), "previousSha256": previous}
    rec["recordSha256"] = record_digest(rec)
    return {"record": rec, "request": req, "result": res}


def chain(out, n, session_id="00112233445566778899aabbccddeeff"):
    session = hashlib.sha256(session_id.encode()).hexdigest()
    rule = {"mode": "approved", "identities": ["oci-manifest:linux/amd64@sha256:" + "a" * 64,
                                               "oci-manifest:linux/amd64@sha256:" + "b" * 64]}
    previous = ""
    with open(out, "w") as f:
        for i in range(1, n + 1):
            e = call(i, session, previous, rule)
            if i == n and n >= 3:
                # The last call may have run but got no answer: a version 3 record, no result.
                rec = dict(e["record"], version=3, resultSha256="", unanswered="deadline_exceeded")
                rec["recordSha256"] = record_digest(rec)
                e = dict({"record": rec, "request": e["request"]},
                         **({"operation": e["operation"]} if "operation" in e else {}))
            previous = e["record"]["recordSha256"]
            f.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(session, previous)


def tamper(kind, src, dst):
    lines = open(src, encoding="utf-8").read().splitlines(keepends=True)
    k = 4  # the line (1-based) that is tampered with; the log must have at least 6 lines
    e = json.loads(lines[k - 1])
    rec = e["record"]
    if kind == "stdout":  # one byte of a result's output changed: its result digest breaks
        k = 6  # a javascript call with output
        e = json.loads(lines[k - 1])
        out = bytearray(b64(e["result"]["javascript"]["stdout"]))
        out[0] ^= 1
        e["result"]["javascript"]["stdout"] = base64.b64encode(bytes(out)).decode()
    elif kind == "request":  # the code of a request changed: its request digest breaks
        p = [v for key, v in e["request"].items() if key in ("javascript", "cell")]
        if not p:
            p = [e["request"]["project"]["files"][0]]
            p[0]["content"] += " "
        else:
            p[0]["code"] += " "
    elif kind == "field":  # a record field changed without recomputing: the record digest breaks
        rec["isolation"] = "vm"
    elif kind == "gap":  # a line removed
        del lines[k - 1]
        open(dst, "w", encoding="utf-8").writelines(lines)
        print(k)
        return
    elif kind == "swap":  # two lines swapped
        lines[k - 1], lines[k] = lines[k], lines[k - 1]
        open(dst, "w", encoding="utf-8").writelines(lines)
        print(k)
        return
    elif kind == "previous":  # previousSha256 rewritten, record digest recomputed to match
        rec["previousSha256"] = "0" * 64
        rec["recordSha256"] = record_digest(rec)
    elif kind == "previous-raw":  # previousSha256 rewritten, record digest left alone
        rec["previousSha256"] = "0" * 64
    elif kind == "garbage":  # a line cut in the middle
        lines[k - 1] = lines[k - 1][: len(lines[k - 1]) // 2] + "\n"
        open(dst, "w", encoding="utf-8").writelines(lines)
        print(k)
        return
    elif kind == "truncated":  # the file cut in the middle of its last line (a torn append)
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
        open(dst, "w", encoding="utf-8").writelines(lines)
        print(len(lines))
        return
    elif kind == "session":  # a line replaced by a consistent call of another session
        other = hashlib.sha256(b"ffeeddccbbaa99887766554433221100").hexdigest()
        rule = e["request"].get("softwareRule")
        e = call(k, other, rec["previousSha256"], rule)
    elif kind == "resequence":  # sequence renumbered and every digest after it recomputed
        rec["sequence"] = str(int(rec["sequence"]) + 1)
        rec["recordSha256"] = record_digest(rec)
    elif kind == "duplicate":  # a line repeated
        lines.insert(k, lines[k - 1])
        open(dst, "w", encoding="utf-8").writelines(lines)
        print(k + 1)
        return
    elif kind == "kind":  # a result of another kind than the request's
        e["result"] = {"cell" if "javascript" in e["result"] else "javascript": {"stdout": ""}}
        rec["resultSha256"] = result_digest(e["result"])
        rec["recordSha256"] = record_digest(rec)
    elif kind.startswith("hull-"):  # line 5: an entry of one of hull's record kinds (an exec)
        k = 5
        e = json.loads(lines[k - 1])
        rec = e["record"]
        if kind == "hull-stdout":  # one byte of its output
            out = bytearray(b64(e["result"]["stdout"]))
            out[0] ^= 1
            e["result"]["stdout"] = base64.b64encode(bytes(out)).decode()
        elif kind == "hull-command":  # its command
            e["request"]["command"] += " "
        elif kind == "hull-env":  # an environment variable added to the request
            e["request"]["env"].append({"name": "X", "value": "1"})
        elif kind == "hull-operation":  # another operation named
            e["operation"] = "write"
        elif kind == "hull-unknown":  # an operation hull does not have
            e["operation"] = "format_disk"
        elif kind == "hull-v1":  # a version 1 record, digest recomputed
            rec["version"] = 1
            rec["recordSha256"] = record_digest(rec)
        else:
            raise SystemExit("unknown tampering " + kind)
    elif kind == "rule":  # softwareRuleId that does not match the request's rule, digest recomputed
        rec["softwareRuleId"] = "exact:oci-manifest:linux/amd64@sha256:" + "c" * 64
        rec["recordSha256"] = record_digest(rec)
    else:
        raise SystemExit("unknown tampering " + kind)
    lines[k - 1] = json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n"
    open(dst, "w", encoding="utf-8").writelines(lines)
    print(k)


def verify(path):
    """Check an audit log from the spec alone: each line's request, result and record digests,
    and the chain (one session, sequence 1, 2, 3..., each naming the record before it; a log of
    single runs has no chain). Prints each problem and a summary; returns the exit status."""
    problems = []
    session, previous, n = None, "", 0
    with open(path, "rb") as fh:
        raw = fh.read()
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for i, line in enumerate(lines, 1):
        def bad(what):
            problems.append("%s line %d: %s" % (path, i, what))
        try:
            e = json.loads(line)
            rec, req, res, op = e["record"], e["request"], e.get("result"), e.get("operation")
            version = int(get(rec, "version", 0))
        except (ValueError, KeyError, TypeError) as x:
            bad("not a log entry: %s" % x)
            break
        n += 1
        try:
            if record_digest(rec) != get(rec, "recordSha256", ""):
                bad("record digest mismatch")
            want_req = hull_request_digest(op, req) if op else request_digest(req)
            if want_req != get(rec, "requestSha256", ""):
                bad("request digest mismatch")
            if version == 3:
                if res is not None or get(rec, "resultSha256", "") or not get(rec, "unanswered", ""):
                    bad("a version 3 record with a result or without unanswered")
            else:
                if res is None:
                    bad("a version %d record without a result" % version)
                else:
                    want_res = hull_result_digest(op, res) if op else result_digest(res)
                    if want_res != get(rec, "resultSha256", ""):
                        bad("result digest mismatch")
        except (ValueError, KeyError, TypeError) as x:
            bad("malformed: %s" % x)
        s = get(rec, "session", "")
        if session is None:
            session = s
        if s != session:
            bad("wrong session")
            break
        if s:
            if int(get(rec, "sequence", 0)) != n:
                bad("sequence %s where %d was expected" % (get(rec, "sequence", 0), n))
                break
            if get(rec, "previousSha256", "") != previous:
                bad("wrong previous record")
                break
        previous = get(rec, "recordSha256", "")
    if n == 0 and not problems:
        problems.append("%s: no records" % path)
    for p in problems:
        print(p)
    if problems:
        print("%s: %d problems" % (path, len(problems)))
        return 1
    print("ok: %d records, session %s, last %s" % (n, session, previous))
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "golden" and len(sys.argv) == 3:
        sys.exit(golden(sys.argv[2]))
    elif cmd == "chain" and len(sys.argv) == 4:
        chain(sys.argv[2], int(sys.argv[3]))
    elif cmd == "verify" and len(sys.argv) == 3:
        sys.exit(verify(sys.argv[2]))
    elif cmd == "tamper" and len(sys.argv) == 5:
        tamper(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
