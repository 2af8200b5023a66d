"""sessions_workspace.py: sessions_client.py's workspace command: every /hull.v1.Workspace route and
/hull.v1.Sessions/List against a session. Standard library only."""
import base64
import hashlib
import io
import os
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_client as sc  # noqa: E402
from serve_client import b64, check, bad  # noqa: E402
from sessions_common import Session, Ws, cell, pgrep, tar_of, u64, wait_gone, ws_refused  # noqa: E402


def ex(w, cmd, **kw):
    """One Exec: the answer, its JSON, stdout and stderr decoded."""
    a = w.call("Exec", command=cmd, **kw)
    j = w.j(a)
    return a, j, b64(j.get("stdout", "")), b64(j.get("stderr", ""))


def workspace_exec(w, tag):
    """Exec: output, exit code, the cwd and env kept, a timeout, a flood, refusals."""
    # Exec
    a, j, out, err = ex(w, "echo hi; echo there >&2; exit 3")
    check("Exec: exit code, stdout, stderr", a.status == 200 and j.get("exitCode") == 3 and out == b"hi\n" and
          err == b"there\n" and not j.get("timedOut"), "status %d %r" % (a.status, a.body[:300]))
    check("Exec: durationMs is an int64 (string)", isinstance(j.get("durationMs"), str), repr(j.get("durationMs")))
    a, j, out, err = ex(w, "pwd")
    top = out.strip()
    a, j, out, err = ex(w, "mkdir -p sub/deeper && cd sub/deeper && export HULL_T=kept-%s && FOO_LOCAL=x" % tag)
    check("Exec: cd and export", a.status == 200 and j.get("exitCode", 0) == 0, repr(a.body[:300]))
    a, j, out, err = ex(w, "pwd; echo \"$HULL_T\"")
    check("Exec: the cwd and exported variables persist to the next Exec",
          out == top + b"/sub/deeper\n" + ("kept-%s\n" % tag).encode(), repr(out))
    a, j, out, err = ex(w, "cd \"%s\"" % top.decode())
    a, j, out, err = ex(w, "echo \"$ONE:$TWO\"", env={"ONE": "1", "TWO": "two words"})
    check("Exec: env is given to the command", out == b"1:two words\n", repr(a.body[:300]))
    a, j, out, err = ex(w, "echo \"[$ONE]\"")
    check("Exec: a call's env does not stick", out == b"[]\n", repr(out))
    t = time.monotonic()
    a, j, out, err = ex(w, "echo before; sleep 30", timeoutMs=800)
    took = time.monotonic() - t
    check("Exec: timeoutMs ends the command, timedOut (%.1f s)" % took,
          a.status == 200 and j.get("timedOut") is True and took < 10 and out == b"before\n", repr(a.body[:300]))
    a, j, out, err = ex(w, "echo alive")
    check("Exec: the shell works after a timeout", out == b"alive\n", repr(a.body[:300]))
    a, j, out, err = ex(w, "sleep 79.4321 >/dev/null 2>&1 & echo started")
    check("Exec: a background process does not outlive its Exec", out == b"started\n" and
          wait_gone("'sleep 79\\.4321'", 3), "left %r" % pgrep("'sleep 79\\.4321'"))
    a, j, out, err = ex(w, "head -c 40000000 /dev/zero | tr '\\0' y")
    check("Exec: a flood (40 MB) is cut and flagged", a.status == 200 and j.get("stdoutTruncated") is True and
          0 < len(out) < 40000000 and set(out) == {ord("y")}, "status %d len %d" % (a.status, len(out)))
    ws_refused("Exec: an empty command is refused", w.call("Exec", command=""), ("invalid_argument",))
    ws_refused("Exec: a bad env name is refused", w.call("Exec", command="true", env={"1X": "y"}), ("invalid_argument",))


def workspace_files(w, tag):
    """Write, Read and Edit; returns the binary content written to dir/bin.dat."""
    # Write / Read
    data = b"\x00bin\xffary\x00\n" + bytes(range(256))
    a = w.call("Write", path="dir/bin.dat", content=base64.b64encode(data).decode())
    check("Write: binary content (NUL, 0xff) into a new directory; bytes", a.status == 200 and
          u64(w.j(a).get("bytes")) == len(data), repr(a.body[:300]))
    a = w.call("Read", path="dir/bin.dat")
    j = w.j(a)
    check("Read: the same bytes back, size, eof", a.status == 200 and b64(j.get("content", "")) == data and
          u64(j.get("size")) == len(data) and j.get("eof") is True, repr(a.body[:300]))
    a, j, out, err = ex(w, "od -An -tx1 dir/bin.dat | head -1")
    check("Write: the sandbox sees the file written", out.split()[:4] == [b"00", b"62", b"69", b"6e"], repr(out))
    w.call("Write", path="digits.txt", content=base64.b64encode(b"0123456789").decode())
    a = w.call("Read", path="digits.txt", offset=2, limit=3)
    j = w.j(a)
    check("Read: offset 2 limit 3", b64(j.get("content", "")) == b"234" and u64(j.get("size")) == 10 and
          j.get("eof") is False, repr(a.body[:300]))
    a = w.call("Read", path="digits.txt", offset=8, limit=10)
    j = w.j(a)
    check("Read: offset 8 limit 10 reaches the end", b64(j.get("content", "")) == b"89" and j.get("eof") is True,
          repr(a.body[:300]))
    a = w.call("Read", path="digits.txt", offset=50)
    j = w.j(a)
    check("Read: an offset past the end: nothing, eof (or out_of_range)",
          (a.status == 200 and b64(j.get("content", "")) == b"" and j.get("eof") is True) or
          (w.j(a).get("code") in ("out_of_range", "invalid_argument")), repr(a.body[:300]))
    a = w.call("Write", path="digits.txt", content=base64.b64encode(b"AB").decode(), append=True)
    a = w.call("Read", path="digits.txt")
    check("Write append: added at the end", b64(w.j(a).get("content", "")) == b"0123456789AB", repr(a.body[:200]))
    a = w.call("Write", path="digits.txt", content=base64.b64encode(b"new").decode())
    a = w.call("Read", path="digits.txt")
    check("Write: replaces the content", b64(w.j(a).get("content", "")) == b"new", repr(a.body[:200]))
    a = w.call("Read", path="missing-%s" % tag)
    check("Read: a missing file is an error (not_found)", a.status != 200 and w.j(a).get("code") == "not_found",
          repr(a.body[:200]))
    a = w.call("Read", path="dir")
    check("Read: a directory is an error", a.status != 200 and w.j(a).get("code"), repr(a.body[:200]))
    a, j, out, err = ex(w, "mkfifo fifo")
    t = time.monotonic()
    a = w.call("Read", path="fifo", timeout=20)
    check("Read: a FIFO is refused without blocking", a.status != 200 and time.monotonic() - t < 5, repr(a.body[:200]))

    # Edit
    w.call("Write", path="e.txt", content=base64.b64encode(b"x foo y foo z\n").decode())
    a = w.call("Edit", path="e.txt", oldText="foo", newText="bar")
    ws_refused("Edit: two matches are refused", a, ("invalid_argument", "failed_precondition"))
    a = w.call("Read", path="e.txt")
    check("Edit: a refused edit changes nothing", b64(w.j(a).get("content", "")) == b"x foo y foo z\n")
    a = w.call("Edit", path="e.txt", oldText="absent", newText="bar")
    ws_refused("Edit: no match is refused", a, ("invalid_argument", "failed_precondition", "not_found"))
    a = w.call("Edit", path="e.txt", oldText="y foo", newText="Y\u00e9\u0000")
    check("Edit: a unique match is replaced", a.status == 200 and u64(w.j(a).get("replaced")) == 1, repr(a.body[:200]))
    a = w.call("Read", path="e.txt")
    check("Edit: the file holds the new text (UTF-8, a NUL kept)",
          b64(w.j(a).get("content", "")) == "x foo Y\u00e9\u0000 z\n".encode(), repr(a.body[:200]))
    ws_refused("Edit: an empty oldText is refused", w.call("Edit", path="e.txt", oldText="", newText="q"),
               ("invalid_argument", "failed_precondition"))
    return data


def workspace_search(w):
    """Glob and Grep, a catastrophic regex within its budget."""
    # Glob
    for p in ("g/a.py", "g/sub/b.py", "g/sub/deep/c.py", "g/c.txt", "g/.hidden.py"):
        w.call("Write", path=p, content="")
    a = w.call("Glob", pattern="g/**/*.py")
    paths = w.j(a).get("paths", [])
    check("Glob: g/**/*.py finds every depth, sorted, not the .txt",
          a.status == 200 and {"g/a.py", "g/sub/b.py", "g/sub/deep/c.py"} <= set(paths) and "g/c.txt" not in paths
          and paths == sorted(paths) and w.j(a).get("truncated") is not True, repr(a.body[:400]))
    a = w.call("Glob", pattern="g/*.txt")
    check("Glob: g/*.txt", w.j(a).get("paths") == ["g/c.txt"], repr(a.body[:300]))
    a = w.call("Glob", pattern="../*")
    check("Glob: a pattern leaving the workspace is refused or finds nothing",
          (a.status != 200 and w.j(a).get("code") in ("invalid_argument", "permission_denied")) or
          (a.status == 200 and not w.j(a).get("paths")), repr(a.body[:300]))
    a = w.call("Glob", pattern="/etc/*")
    check("Glob: an absolute pattern is refused or finds nothing",
          a.status != 200 or not w.j(a).get("paths"), repr(a.body[:300]))

    # Grep
    w.call("Write", path="src/one.py", content=base64.b64encode(b"alpha\nNeedle here\nbeta needle\n").decode())
    w.call("Write", path="src/two.txt", content=base64.b64encode(b"needle in txt\n").decode())
    w.call("Write", path="other/three.py", content=base64.b64encode(b"a needle elsewhere\n").decode())
    a = w.call("Grep", pattern="needle", path="src")
    m = [(x.get("path"), u64(x.get("line")), x.get("text")) for x in w.j(a).get("matches", [])]
    check("Grep: matches with path, line and text (case-sensitive)",
          sorted(m) == [("src/one.py", 3, "beta needle"), ("src/two.txt", 1, "needle in txt")], repr(a.body[:400]))
    a = w.call("Grep", pattern="needle", ignoreCase=True, glob="*.py")
    m = sorted((x.get("path"), u64(x.get("line"))) for x in w.j(a).get("matches", []))
    check("Grep: ignoreCase and a glob filter", m == [("other/three.py", 1), ("src/one.py", 2), ("src/one.py", 3)],
          repr(a.body[:400]))
    a = w.call("Grep", pattern="needle", ignoreCase=True, maxMatches=1)
    check("Grep: maxMatches 1 stops at one, truncated", len(w.j(a).get("matches", [])) == 1 and
          w.j(a).get("truncated") is True, repr(a.body[:300]))
    ws_refused("Grep: an invalid regex is refused", w.call("Grep", pattern="(unclosed"), ("invalid_argument",))
    evil = b"".join(b"a" * 3000 + b"b\n" for _ in range(500))
    w.call("Write", path="redos/evil.txt", content=base64.b64encode(evil).decode())
    t = time.monotonic()
    a = w.call("Grep", pattern="(a+)+$", path="redos", timeout=60)
    took = time.monotonic() - t
    check("Grep: a catastrophic regex ends within its budget (%.1f s), budgetExceeded" % took,
          a.status == 200 and took < 8 and w.j(a).get("budgetExceeded") is True, "status %d %r" % (a.status, a.body[:300]))
    a, j, out, err = ex(w, "echo still")
    check("Grep: the session serves after a catastrophic regex", out == b"still\n")


def workspace_persist(w, data):
    """Persist: the workspace as a tar; returns the archive."""
    # Persist
    a = w.call("Persist")
    j = w.j(a)
    arc = b64(j.get("archive", ""))
    check("Persist: an archive, its size and sha256", a.status == 200 and arc and u64(j.get("bytes")) == len(arc) and
          j.get("sha256") == hashlib.sha256(arc).hexdigest(), "status %d %r" % (a.status, a.body[:200]))
    names = []
    try:
        with tarfile.open(fileobj=io.BytesIO(arc)) as t:
            members = {m.name.lstrip("./"): m for m in t.getmembers()}
            names = list(members)
            got = t.extractfile(members["dir/bin.dat"]).read() if "dir/bin.dat" in members else None
            links = {n: m.linkname for n, m in members.items() if m.issym()}
    except (tarfile.TarError, KeyError) as e:
        got, links = None, {}
        names = ["error: %s" % e]
    check("Persist: a tar holding the files, byte for byte", got == data, repr(names[:20]))
    check("Persist: FIFOs are skipped", "fifo" not in names, repr(names[:30]))
    check("Persist: nothing from outside (no passwd content)", b"root:x:0:0" not in arc)
    return arc


def workspace_hydrate(c, s, w, arc, data, tag, host_passwd, workroot):
    """Hydrate the archive into a second session; crafted archives refused; Sessions/List."""
    # Hydrate into a second session
    s2 = Session(c, "hydrated")
    s2.open(owner="ws-test")
    if s2.sid:
        w2 = Ws(c, s2.sid, s2)
        a = w2.call("Hydrate", archive=base64.b64encode(arc).decode())
        j = w2.j(a)
        check("Hydrate: the archive is extracted, files and bytes stated", a.status == 200 and u64(j.get("files")) and
              u64(j.get("bytes")) is not None, repr(a.body[:300]))
        a = w2.call("Read", path="dir/bin.dat")
        check("Hydrate: the files read back in the other session", b64(w2.j(a).get("content", "")) == data)
        a = w2.call("Exec", command="cat g/c.txt e.txt | wc -c")
        check("Hydrate: the sandbox of the other session sees them", b64(w2.j(a).get("stdout", "")).strip() ==
              str(len("x foo Y\u00e9\u0000 z\n".encode())).encode(), repr(a.body[:200]))
        a = w2.call("Hydrate", archive=base64.b64encode(tar_of([(dict(name="dir/bin.dat"), b"other")])).decode())
        ws_refused("Hydrate: an existing file is not replaced", a,
                   ("invalid_argument", "already_exists", "failed_precondition", "permission_denied"))
        a = w2.call("Read", path="dir/bin.dat")
        check("Hydrate: ... and it is unchanged", b64(w2.j(a).get("content", "")) == data)

        crafted = [
            ("an absolute path", [(dict(name="/tmp/hull-escape-%s" % tag), b"x")]),
            ("a '..' path", [(dict(name="../hull-escape-%s" % tag), b"x")]),
            ("a '..' inside a path", [(dict(name="ok/../../hull-escape-%s" % tag), b"x")]),
            ("a symlink out, then a file through it", [(dict(name="out", type=tarfile.SYMTYPE, linkname="/tmp"), None),
                                                        (dict(name="out/hull-escape-%s" % tag), b"x")]),
            ("a hard link to /etc/passwd", [(dict(name="hl", type=tarfile.LNKTYPE, linkname="/etc/passwd"), None)]),
            ("a hard link to ../../etc/passwd", [(dict(name="hl2", type=tarfile.LNKTYPE,
                                                      linkname="../../etc/passwd"), None)]),
            ("a character device", [(dict(name="null", type=tarfile.CHRTYPE, devmajor=1, devminor=3), None)]),
            ("a block device", [(dict(name="sda", type=tarfile.BLKTYPE, devmajor=8, devminor=0), None)]),
            ("a FIFO", [(dict(name="ff", type=tarfile.FIFOTYPE), None)]),
        ]
        before = sorted(w2.j(w2.call("Glob", pattern="**/*")).get("paths", []))
        for name, entries in crafted:
            arcx = tar_of([(dict(kw), d) for kw, d in entries])
            a = w2.call("Hydrate", archive=base64.b64encode(arcx).decode())
            ws_refused("Hydrate refuses " + name, a,
                       ("invalid_argument", "permission_denied", "failed_precondition"))
        # a file that declares more bytes than the cap (5 GiB), with only its header sent
        ti = tarfile.TarInfo("huge.bin")
        ti.size = 5 << 30
        huge = ti.tobuf(tarfile.USTAR_FORMAT) + b"\0" * 4096
        a = w2.call("Hydrate", archive=base64.b64encode(huge).decode())
        ws_refused("Hydrate refuses a file declared over the size cap (5 GiB)", a,
                   ("invalid_argument", "permission_denied", "failed_precondition", "resource_exhausted",
                    "out_of_range"))
        a = w2.call("Hydrate", archive=base64.b64encode(b"not a tar archive at all" * 40).decode())
        ws_refused("Hydrate refuses garbage", a, ("invalid_argument",))
        check("no crafted archive wrote outside the workspace", not os.path.exists("/tmp/hull-escape-%s" % tag) and
              not os.popen("find %s -name 'hull-escape-%s' 2>/dev/null" % (workroot, tag)).read().strip())
        check("host /etc/passwd unchanged after the crafted archives",
              hashlib.sha256(open("/etc/passwd", "rb").read()).hexdigest() == host_passwd)
        after = sorted(w2.j(w2.call("Glob", pattern="**/*")).get("paths", []))
        if after != before:
            print("# note: refused archives left entries in the workspace: %r" % sorted(set(after) - set(before)))
        # List
        a = w.call("List", service="/hull.v1.Sessions/")
        lst = {x.get("sessionId"): x for x in w.j(a).get("sessions", [])}
        me = lst.get(s.sid, {})
        check("Sessions/List: both sessions, with fingerprint, times, idle timeout, calls and owner",
              a.status == 200 and s2.sid in lst and me.get("session") == s.fp and me.get("owner") == "ws-test" and
              u64(me.get("openedUnixMs")) and u64(me.get("expiresUnixMs")) and u64(me.get("idleTimeoutMs")) and
              u64(me.get("calls")) is not None, repr(a.body[:500]))
        s2.close("the hydrated session closes")
        w.unbound += w2.unbound


def workspace_escapes(c, w, tag, host_passwd, workroot):
    """Paths and planted links that lead out: refused, nothing changed."""
    # path escapes: refused, nothing changed
    outside = "/tmp/hull-escape-%s" % tag
    for name, kw in [("Read '../x'", dict(proc="Read", path="../x")),
                     ("Read '/etc/passwd'", dict(proc="Read", path="/etc/passwd")),
                     ("Read 'a/../../etc/passwd'", dict(proc="Read", path="a/../../etc/passwd")),
                     ("Write '../escape'", dict(proc="Write", path="../hull-escape-%s" % tag, content="eA==")),
                     ("Write an absolute path", dict(proc="Write", path=outside, content="eA==")),
                     ("Edit '/etc/passwd'", dict(proc="Edit", path="/etc/passwd", oldText="root", newText="toor")),
                     ("Grep path '..'", dict(proc="Grep", pattern="root", path="..")),
                     ("Grep path '/etc'", dict(proc="Grep", pattern="root", path="/etc"))]:
        proc = kw.pop("proc")
        ws_refused("escape refused: " + name, w.call(proc, **kw))
    ex(w, "ln -s /etc/passwd plink; ln -s / rootlink; ln -s /tmp tmplink; ln -s ../.. uplink")
    for name, kw in [("Read a planted link to /etc/passwd", dict(proc="Read", path="plink")),
                     ("Read through a link to /", dict(proc="Read", path="rootlink/etc/passwd")),
                     ("Read through a link to ../..", dict(proc="Read", path="uplink/etc/passwd")),
                     ("Write through a link to /tmp", dict(proc="Write", path="tmplink/hull-escape-%s" % tag,
                                                           content="eA==")),
                     ("Edit a planted link to /etc/passwd", dict(proc="Edit", path="plink", oldText="root",
                                                                 newText="toor")),
                     ("Grep through a link to /", dict(proc="Grep", pattern="root", path="rootlink/etc"))]:
        proc = kw.pop("proc")
        ws_refused("symlink refused: " + name, w.call(proc, **kw))
    a = w.call("Write", path="plink", content=base64.b64encode(b"replaced").decode())
    if a.status == 200:
        out = ex(w, "test -L plink && echo still-a-link || cat plink")[2]
        check("Write on a planted link: the link itself is replaced by a file, never written through",
              out == b"replaced", repr(out))
    else:
        ws_refused("Write on a planted link: refused", a)
    a = w.call("Glob", pattern="rootlink/*")
    check("Glob does not enter a planted link to /", not w.j(a).get("paths"), repr(a.body[:300]))
    a = w.call("Grep", pattern="root:", ignoreCase=False)
    check("Grep over the workspace does not follow planted links",
          not [x for x in w.j(a).get("matches", []) if "root:" in (x.get("text") or "")], repr(a.body[:300]))
    check("host /etc/passwd unchanged", hashlib.sha256(open("/etc/passwd", "rb").read()).hexdigest() == host_passwd)
    check("nothing was written outside the workspace (/tmp)", not os.path.exists(outside) and
          not os.path.exists("/tmp/hull-escape-%s" % tag))
    leaked = os.popen("find %s /tmp -name 'hull-escape-%s' 2>/dev/null" % (workroot, tag)).read()
    check("nothing named hull-escape-%s anywhere near the work root" % tag, leaked.strip() == "", leaked)

    a = w.call("Persist")
    arc2 = b64(w.j(a).get("archive", ""))
    try:
        with tarfile.open(fileobj=io.BytesIO(arc2)) as t:
            links = {m.name.lstrip("./"): m.linkname for m in t.getmembers() if m.issym()}
    except tarfile.TarError as e:
        links = {"error": str(e)}
    check("Persist: planted links are stored as links, not followed", links.get("rootlink") == "/" and
          links.get("uplink") == "../.." and b"root:x:0:0" not in arc2, repr(links))
    s3 = Session(c, "hydrate-links")
    s3.open(owner="ws-other")
    if s3.sid:
        w3 = Ws(c, s3.sid, s3)
        a = w3.call("Hydrate", archive=base64.b64encode(tar_of([(dict(name="lonely", type=tarfile.SYMTYPE,
                                                                           linkname="/etc/passwd"), None)])).decode())
        if a.status == 200:
            print("# note: Hydrate accepts an archive that only holds a symlink pointing out (lonely -> /etc/passwd)")
            ws_refused("... but reading through it is refused", w3.call("Read", path="lonely"))
        else:
            ws_refused("Hydrate refuses a symlink pointing out", a,
                       ("invalid_argument", "permission_denied", "failed_precondition"))
        s3.close("the links session closes")
    w.unbound += w3.unbound if s3.sid else 0


def workspace_chain(c, s, w):
    """What ran or changed the workspace is on the record; calls after the close."""
    # Workspace calls and the chain: what ran or changed the workspace is on the record
    check("every Exec, Write, Edit and Hydrate answer carries a verified record, chained with the session's calls",
          w.recorded >= 10 and not w.record_problems, "%d recorded; %s" % (w.recorded, w.record_problems[:3]))
    s.run("a cell after the Workspace calls sees their files, chained after their records",
          cell("python", "open('digits.txt').read()"))
    a = c.call("CloseSession", {"protocol": 3, "sessionId": s.sid})
    jj = a.json or {}
    check("CloseSession counts every recorded call, Workspace changes and commands included",
          u64(jj.get("calls")) == s.calls and jj.get("lastRecordSha256") == s.last and s.calls > w.recorded,
          "%r; tracked %d %r" % (jj, s.calls, s.last))
    a = w.call("Read", path="digits.txt")
    check("Workspace on a closed session: refused", a.status != 200 and w.j(a).get("code") in
          ("failed_precondition", "not_found"), repr(a.body[:300]))
    a = w.call("List", service="/hull.v1.Sessions/")
    check("Sessions/List: a closed session is not listed", a.status == 200 and s.sid not in a.body.decode(),
          repr(a.body[:300]))
    w3 = Ws(c, os.urandom(16).hex())
    a = w3.call("Exec", command="true")
    check("Workspace on an unknown session: not_found", a.status == 404 and w3.j(a).get("code") == "not_found",
          repr(a.body[:300]))
    a = w3.call("Exec", command="true", sessionId="")
    check("Workspace without a sessionId: invalid_argument or not_found", a.status in (400, 404), repr(a.body[:200]))
    a = c.raw("POST", "/hull.v1.Workspace/Frobnicate", b"{}", [("Content-Type", "application/json")])
    check("an unknown Workspace method: 404", a.status == 404, repr(a.body[:200]))
    check("every Workspace answer carries the request ID back", w.unbound == 0, "%d unbound" % w.unbound)


def workspace(url, workroot):
    c = sc.Client(url)
    s = Session(c, "workspace")
    s.open(owner="ws-test")
    if not s.sid:
        bad("the workspace checks run", "OpenSession failed")
        return
    w = Ws(c, s.sid, s)
    tag = os.urandom(4).hex()
    host_passwd = hashlib.sha256(open("/etc/passwd", "rb").read()).hexdigest()

    workspace_exec(w, tag)
    data = workspace_files(w, tag)
    workspace_search(w)
    arc = workspace_persist(w, data)
    workspace_hydrate(c, s, w, arc, data, tag, host_passwd, workroot)
    workspace_escapes(c, w, tag, host_passwd, workroot)
    workspace_chain(c, s, w)
