#!/usr/bin/python3
"""bench/sessions.py: issue 3's benchmarks of `hull serve` sessions, run by hand (not a test).
Standard library only; run it with /usr/bin/python3 (bench/sessions.sh does, after building).

Starts one `hull serve --listen 127.0.0.1:0 --audit-dir TMP` (the port from its log line
`event=listening addr=127.0.0.1:PORT`), then:

  first   time to the first result of a new session: OpenSession + the first python cell
          `import pandas; pandas.__version__` (CloseSession untimed), interleaved with a cold
          `/usr/bin/python3 -c "import pandas"` under bench/commands.sh's bwrap (the baseline of
          bench/run.sh: same flags, same generated /etc files and seccomp program on fds 10-14)
  cell    the cell `1+1` in one open session over one keep-alive HTTP/1.1 connection, against a
          raw pipe round trip (a line to an already-running /usr/bin/python3 that evals it and
          writes back the repr), the two interleaved in blocks of 50 calls; and the same cell
          over a second keep-alive connection with a lean client (LeanClient: the request
          written with one send, the answer's head split by hand, its JSON parsed and stdout
          checked, as a C or Go client would, without http.client's header parsing), a third
          series in the same blocks
  js      Run {"javascript":{"code":"console.log(6*7)"}} (stdout checked: "42\\n") against
          `/usr/bin/node -e 'console.log(6*7)'` run directly, interleaved
  jsdiag  where a javascript Run's time goes: node -e / node main.mjs / hull exec / bwrap rows
          and the daemon's Run, interleaved, with the CPU time of each process tree
  par     16 client processes, each with its own session (distinct owner) and keep-alive
          connection, N calls each of the cell `1+1` (and, variant "exec", of
          /hull.v1.Workspace/Exec `true`): errors counted and printed, throughput, p50/p99

  sessions.py --hull PATH --bwrap-argv FILE [--parts "first cell js jsdiag par exec"] [--first N]
              [--first-base N] [--cells N] [--js N] [--clients N] [--par-calls N] [--seed N]

--bwrap-argv names a file holding the bwrap argv (NUL-separated, the program first) and, after an
empty field, lines "FD PATH" of the files to open on those fds for each spawn (bench/sessions.sh
writes it from bench/commands.sh). Times are wall clock (time.perf_counter) in the client.
Statistics: median and p99 (nearest rank). Exit status 1 when a call failed.
"""
import argparse
import base64
import http.client
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time

SVC = "/plimsoll.v1.SandboxService/"
HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
PANDAS_CELL = "import pandas; pandas.__version__"
ERRORS = []


QUIET = False  # workers: errors go back to the parent, which groups them


def err(what):
    ERRORS.append(what)
    if not QUIET:
        print("error: " + what, file=sys.stderr, flush=True)


def pct(xs, p):
    """Nearest rank."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(1, -(-len(s) * p // 100))
    return s[int(k) - 1]


def med(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        return float("nan")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


class Client:
    """One keep-alive HTTP/1.1 connection to the daemon."""

    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, path, body):
        data = json.dumps(body).encode()
        try:
            self.conn.request("POST", path, body=data, headers=HEADERS)
            r = self.conn.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException) as e:
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            return 0, {"transport": repr(e)}
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, {"raw": raw[:200].decode("utf-8", "replace")}

    def open(self, owner=None):
        body = {"protocol": 3, "languages": ["python"]}
        if owner:
            body["owner"] = owner
        st, o = self.call(SVC + "OpenSession", body)
        if st != 200 or "sessionId" not in o:
            err("OpenSession: %s %s" % (st, o))
            return None
        return o["sessionId"]

    def cell(self, sid, code, expect=None):
        st, o = self.call(SVC + "SessionRun",
                          {"protocol": 3, "sessionId": sid, "cell": {"language": "python", "code": code}})
        c = o.get("run", {}).get("cell") if st == 200 else None
        if c is None or c.get("exitCode", 0) != 0 or o.get("ended"):
            err("SessionRun %r: %s %s" % (code, st, json.dumps(o)[:300]))
            return False
        if expect is not None:
            out = base64.b64decode(c.get("stdout", ""))
            if out != expect:
                err("SessionRun %r: stdout %r, expected %r" % (code, out, expect))
                return False
        return True

    def exec_true(self, sid):
        st, o = self.call("/hull.v1.Workspace/Exec", {"sessionId": sid, "command": "true"})
        if st != 200 or o.get("exitCode", 0) != 0:
            err("Workspace/Exec true: %s %s" % (st, json.dumps(o)[:300]))
            return False
        return True

    def close(self, sid):
        st, o = self.call(SVC + "CloseSession", {"protocol": 3, "sessionId": sid})
        if st != 200:
            err("CloseSession: %s %s" % (st, o))


class LeanClient:
    """One keep-alive HTTP/1.1 connection on a plain socket (TCP_NODELAY): each call builds its
    request and JSON body, sends them with one send, reads the head to its blank line, the body
    by Content-Length, and parses the JSON answer. What http.client does, minus its header
    parsing (email.parser) and buffered-file layers."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def call(self, path, body):
        data = json.dumps(body).encode()
        self.sock.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          b"Connect-Protocol-Version: 1\r\nContent-Length: %d\r\n\r\n%s" %
                          (path.encode(), len(data), data))
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return 0, {}
            self.buf += chunk
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        n = 0
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        while len(rest) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                return 0, {}
            rest += chunk
        self.buf = rest[n:]
        return int(lines[0].split()[1]), json.loads(rest[:n])

    def cell(self, sid, code, expect):
        st, o = self.call(SVC + "SessionRun",
                          {"protocol": 3, "sessionId": sid, "cell": {"language": "python", "code": code}})
        c = o.get("run", {}).get("cell") if st == 200 else None
        if c is None or c.get("exitCode", 0) != 0 or base64.b64decode(c.get("stdout", "")) != expect:
            err("lean SessionRun %r: %s %s" % (code, st, json.dumps(o)[:300]))
            return False
        return True


def start_daemon(hull, tmp, extra):
    log = open(os.path.join(tmp, "serve.log"), "wb")
    p = subprocess.Popen([hull, "serve", "--listen", "127.0.0.1:0", "--audit-dir", os.path.join(tmp, "audit"),
                          "--work-dir", tmp] + extra, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline:
        with open(os.path.join(tmp, "serve.log"), "rb") as f:
            m = re.search(rb"event=listening addr=127\.0\.0\.1:(\d+)", f.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    sys.exit("sessions.py: hull serve did not report event=listening; log:\n" +
             open(os.path.join(tmp, "serve.log")).read())


def load_bwrap(path):
    with open(path, "rb") as f:
        fields = f.read().split(b"\0")
    i = fields.index(b"")
    argv = [x.decode() for x in fields[:i]]
    fds = []
    for line in b"\0".join(fields[i + 1:]).decode().splitlines():
        if line.strip():
            n, p = line.split(" ", 1)
            fds.append((int(n), p))
    return argv, fds


def spawn_timed(argv, fds=(), stdout=subprocess.DEVNULL, env=None):
    """Wall time of one run in ms; the files of fds are opened afresh for each run (bwrap reads
    them to the end), on the fd numbers bwrap's argv names."""
    def pre():
        for n, p in fds:
            fd = os.open(p, os.O_RDONLY)
            if fd != n:
                os.dup2(fd, n)  # inheritable
                os.close(fd)
            else:
                os.set_inheritable(fd, True)
    t = time.perf_counter()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE, env=env,
                       preexec_fn=pre if fds else None, close_fds=not fds)  # (python's own fds are
    # close-on-exec anyway; close_fds would close the fds pre() opened)
    dt = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        err("%s exited %d: %s" % (argv[-3:], r.returncode, r.stderr[-300:]))
    return dt, r


# ---- 1. time to the first result of a new session ----

def bench_first(port, bwrap, fds, n_sess, n_base, rng):
    cl = Client(port)
    sess, base = [], []
    bargv = bwrap + ["/usr/bin/python3", "-c", "import pandas"]
    expect = b"'%s'\n" % pandas_version()  # the cell's answer, e.g. '1.5.3'
    # Warm-up: the page cache, and the daemon's zygote, which imports numpy and pandas when
    # `hull serve` starts (a session opened before it is ready waits for it): new sessions until
    # one answers within 100 ms (at most 10), then one bwrap run.
    for i in range(10):
        t = time.perf_counter()
        sid = cl.open()
        if sid:
            cl.cell(sid, PANDAS_CELL)
            cl.close(sid)
        dt = (time.perf_counter() - t) * 1000
        print("# first: warm-up session %d: %.1f ms" % (i, dt), flush=True)
        if dt < 100:
            break
    spawn_timed(bargv, fds)
    order = ["s"] * n_sess + ["b"] * n_base
    rng.shuffle(order)
    seq = []
    for k in order:
        if k == "s":
            t = time.perf_counter()
            sid = cl.open()
            ok = sid and cl.cell(sid, PANDAS_CELL, expect)
            dt = (time.perf_counter() - t) * 1000
            if sid:
                cl.close(sid)
            if ok:
                sess.append(dt)
        else:
            dt, _ = spawn_timed(bargv, fds)
            base.append(dt)
        seq.append((k, dt))
    cl.conn.close()
    m = med(sess)
    for i, (k, dt) in enumerate(seq):
        if k == "s" and dt > 3 * m:
            print("# first: session sample %d of %d took %.1f ms (median %.1f); the one before was %s" %
                  (i, len(seq), dt, m, "a bwrap run" if i and seq[i - 1][0] == "b" else "a session"))
    return sess, base


_PV = None


def pandas_version():
    global _PV
    if _PV is None:
        _PV = subprocess.run(["/usr/bin/python3", "-c", "import pandas; print(pandas.__version__)"],
                             capture_output=True, text=True).stdout.strip().encode()
    return _PV


# ---- 2. cell round trip ----

PIPE_CHILD = ("import sys\n"
              "r = sys.stdin.readline; w = sys.stdout.write; f = sys.stdout.flush\n"
              "while True:\n"
              "    l = r()\n"
              "    if not l: break\n"
              "    w(repr(eval(l)) + '\\n'); f()\n")


def short_calls(port):
    """hull_http_short_calls_total from /metrics: (on libmicrohttpd's thread, on their own); (0, 0)
    from a hull without it."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode("utf-8", "replace")
    finally:
        c.close()
    got = {}
    for m in re.finditer(r'^hull_http_short_calls_total\{thread="(\w+)"\} (\d+)$', text, re.M):
        got[m.group(1)] = int(m.group(2))
    return got.get("polling_thread", 0), got.get("own_thread", 0)


def bench_cell(port, n, warm=50, block=50):
    cl = Client(port)
    sid = cl.open()
    child = subprocess.Popen(["/usr/bin/python3", "-c", PIPE_CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, bufsize=0)
    win, rout = child.stdin, child.stdout

    def pipe_once():
        t = time.perf_counter()
        win.write(b"1+1\n")
        line = rout.readline()
        dt = (time.perf_counter() - t) * 1e3
        if line != b"2\n":
            err("pipe: %r" % line)
        return dt

    def cell_once(c):
        t = time.perf_counter()
        ok = c.cell(sid, "1+1", b"2\n")
        return (time.perf_counter() - t) * 1e3 if ok else None

    lean = LeanClient(port)
    for _ in range(warm):
        cell_once(cl)
        cell_once(lean)
        pipe_once()
    cells, leans, pipes = [], [], []
    done = 0
    while done < n:
        k = min(block, n - done)
        for c, into in ((cl, cells), (lean, leans)):
            for _ in range(k):
                d = cell_once(c)
                if d is not None:
                    into.append(d)
        for _ in range(k):
            pipes.append(pipe_once())
        done += k
    win.close()
    child.wait()
    lean.sock.close()
    cl.close(sid)
    cl.conn.close()
    return cells, leans, pipes


# ---- 3. single javascript Run ----

# The environment `hull exec` and hull serve's runs give the command (hull exec -- env).
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", "LANG": "C.UTF-8",
               "TMPDIR": "/tmp", "USER": "sandbox", "LOGNAME": "sandbox", "SHELL": "/bin/sh", "HOME": "/tmp"}


def bench_js(port, n, rng):
    """Run through the daemon; node -e with the sandbox's environment (like for like); node -e with
    the client's own environment (node reads NODE_EXTRA_CA_CERTS, NODE_OPTIONS... from it)."""
    cl = Client(port)
    body = {"protocol": 3, "javascript": {"code": "console.log(6*7)"}}
    node = ["/usr/bin/node", "-e", "console.log(6*7)"]

    def run_once():
        t = time.perf_counter()
        st, o = cl.call(SVC + "Run", body)
        dt = (time.perf_counter() - t) * 1e3
        js = o.get("javascript") if st == 200 else None
        if js is None or base64.b64decode(js.get("stdout", "")) != b"42\n" or js.get("exitCode", 0) != 0:
            err("Run javascript: %s %s" % (st, json.dumps(o)[:300]))
            return None, None
        return dt, int(o.get("durationMs", 0))

    def node_once(env):
        dt, r = spawn_timed(node, stdout=subprocess.PIPE, env=env)
        if r.stdout != b"42\n":
            err("node -e: stdout %r" % r.stdout)
        return dt

    for _ in range(3):
        run_once()
        node_once(SANDBOX_ENV)
        node_once(None)
    runs, durs, nodes, nodes_env = [], [], [], []
    order = ["r"] * n + ["n"] * n + ["e"] * n
    rng.shuffle(order)
    for k in order:
        if k == "r":
            d, dm = run_once()
            if d is not None:
                runs.append(d)
                durs.append(dm)
        elif k == "n":
            nodes.append(node_once(SANDBOX_ENV))
        else:
            nodes_env.append(node_once(None))
    cl.conn.close()
    return runs, durs, nodes, nodes_env


def bench_jsdiag(port, hull, bwrap, fds, n, rng):
    """Where a javascript Run's time goes: the same node payload run several ways, interleaved
    (every round runs every row once, shuffled). Wall ms, and the CPU time (user+sys, ms) of the
    whole process tree from RUSAGE_CHILDREN (not for the daemon's Run: its tree is not ours)."""
    import resource
    d = tempfile.mkdtemp(prefix="hull-jsdiag.")
    os.chmod(d, 0o755)
    for name in ("main.mjs", "main.js"):
        with open(os.path.join(d, name), "w") as f:
            f.write("console.log(6*7)")
    env = dict(SANDBOX_ENV)
    e = ["/usr/bin/node", "-e", "console.log(6*7)"]
    rows = [
        ("node -e (sandbox's env)", e, (), env),
        ("node main.mjs (ESM entry, as Run)", ["/usr/bin/node", os.path.join(d, "main.mjs")], (), env),
        ("node main.js (CommonJS entry)", ["/usr/bin/node", os.path.join(d, "main.js")], (), env),
        ("node --input-type=module -e", ["/usr/bin/node", "--input-type=module", "-e", "console.log(6*7)"], (),
         env),
        ("node -e (client's env)", e, (), None),
        ("hull exec -- node -e", [hull, "exec", "--"] + e, (), env),
        ("hull exec --no-cgroup -- node -e", [hull, "exec", "--no-cgroup", "--"] + e, (), env),
        ("hull exec --workdir D -- node main.mjs", [hull, "exec", "--workdir", d, "--", "/usr/bin/node",
                                                    "main.mjs"], (), env),
        ("bwrap (bench/commands.sh) node -e", bwrap + e, fds, env),
        ("hull exec -- /bin/true", [hull, "exec", "--", "/bin/true"], (), env),
        ("bwrap (bench/commands.sh) /bin/true", bwrap + ["/bin/true"], fds, env),
    ]
    cl = Client(port)
    body = {"protocol": 3, "javascript": {"code": "console.log(6*7)"}}
    wall = {r[0]: [] for r in rows}
    cpu = {r[0]: [] for r in rows}
    wall["Run via hull serve"] = []
    wall["  its durationMs"] = []
    wall["Run project, one step `true`"] = []
    wall["  its durationMs "] = []
    proj = {"protocol": 3, "project": {"steps": ["true"]}}
    for rnd in range(n + 2):
        order = list(range(len(rows) + 2))
        rng.shuffle(order)
        for i in order:
            if i == len(rows) + 1:
                t = time.perf_counter()
                st, o = cl.call(SVC + "Run", proj)
                dt = (time.perf_counter() - t) * 1e3
                steps = o.get("project", {}).get("steps", [])
                if st != 200 or len(steps) != 1 or steps[0].get("exitCode", 0) != 0:
                    err("Run project true: %s %s" % (st, json.dumps(o)[:300]))
                    continue
                if rnd >= 2:
                    wall["Run project, one step `true`"].append(dt)
                    wall["  its durationMs "].append(float(o.get("durationMs", 0)))
                continue
            if i == len(rows):
                t = time.perf_counter()
                st, o = cl.call(SVC + "Run", body)
                dt = (time.perf_counter() - t) * 1e3
                if st != 200 or base64.b64decode(o.get("javascript", {}).get("stdout", "")) != b"42\n":
                    err("Run javascript: %s %s" % (st, json.dumps(o)[:300]))
                    continue
                if rnd >= 2:
                    wall["Run via hull serve"].append(dt)
                    wall["  its durationMs"].append(float(o.get("durationMs", 0)))
                continue
            name, argv, f, en = rows[i]
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            dt, r = spawn_timed(argv, f, stdout=subprocess.PIPE, env=en)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if argv[-1] != "/bin/true" and r.stdout != b"42\n":
                err("%s: stdout %r" % (name, r.stdout))
            if rnd >= 2:
                wall[name].append(dt)
                cpu[name].append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3)
    cl.conn.close()
    subprocess.run(["rm", "-rf", d])
    print()
    print("javascript Run breakdown, %d interleaved rounds (ms; CPU = user+sys of the process tree)" % n)
    print("| %-40s | %8s | %8s | %8s |" % ("row", "median", "p99", "CPU med"))
    print("|%s|%s|%s|%s|" % ("-" * 42, "-" * 9 + ":", "-" * 9 + ":", "-" * 9 + ":"))
    for k in wall:
        c = cpu.get(k)
        # bwrap's CPU does not reach RUSAGE_CHILDREN (its outer process does not reap the payload)
        print("| %-40s | %8.2f | %8.2f | %8s |" % (k, med(wall[k]), pct(wall[k], 99),
                                                   "%.1f" % med(c) if c and "bwrap" not in k else "-"))
    print(flush=True)


# ---- 4. parallel clients (each a process: one GIL per client) ----

def worker(port, kind, calls, owner, warm=20):
    """Prints one JSON line: {"lat": [ms...], "errors": [...], "t0": .., "t1": ..}."""
    cl = Client(port)
    sid = cl.open(owner)
    lat = []
    t0 = t1 = 0.0
    if sid:
        once = (lambda: cl.cell(sid, "1+1", b"2\n")) if kind == "cell" else (lambda: cl.exec_true(sid))
        for _ in range(warm):
            once()
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        sys.stdin.readline()  # the start signal: every client has its session open
        t0 = time.time()
        for _ in range(calls):
            t = time.perf_counter()
            if once():
                lat.append((time.perf_counter() - t) * 1e3)
        t1 = time.time()
        cl.close(sid)
    else:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        sys.stdin.readline()
    print(json.dumps({"lat": lat, "errors": ERRORS, "t0": t0, "t1": t1}))


def bench_par(port, kind, clients, calls, owners):
    procs = []
    for i in range(clients):
        a = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--port", str(port), "--par-calls",
             str(calls)]
        if owners:
            a += ["--owner", "bench-client-%02d" % i]
        procs.append(subprocess.Popen(a, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    for p in procs:
        p.stdout.readline()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    lat, errs, t0s, t1s = [], [], [], []
    for i, p in enumerate(procs):
        out, _ = p.communicate()
        try:
            d = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            errs.append("client %d: no result (exit %s)" % (i, p.returncode))
            continue
        lat += d["lat"]
        errs += ["client %d: %s" % (i, e) for e in d["errors"]]
        if d["t1"]:
            t0s.append(d["t0"])
            t1s.append(d["t1"])
    wall = (max(t1s) - min(t0s)) if t0s else float("nan")
    return lat, errs, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hull")
    ap.add_argument("--bwrap-argv")
    ap.add_argument("--parts", default="first cell js jsdiag par exec")
    ap.add_argument("--first", type=int, default=20)
    ap.add_argument("--first-base", type=int, default=10)
    ap.add_argument("--cells", type=int, default=1000)
    ap.add_argument("--js", type=int, default=40)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--par-calls", type=int, default=1000)
    ap.add_argument("--same-owner", action="store_true", help="par: no owner (the daemon's defaults apply)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--serve-arg", action="append", default=[])
    ap.add_argument("--worker")
    ap.add_argument("--port", type=int)
    ap.add_argument("--owner")
    a = ap.parse_args()
    if a.worker:
        global QUIET
        QUIET = True
        return worker(a.port, a.worker, a.par_calls, a.owner)

    parts = a.parts.split()
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="hull-sessbench.")
    os.chmod(tmp, 0o711)  # runs' work directories are made under it and bound by the sandbox user
    daemon, port = start_daemon(a.hull, tmp, a.serve_arg)
    rows = []
    try:
        print("# hull serve pid %d on 127.0.0.1:%d, audit and work dirs under %s, seed %d" %
              (daemon.pid, port, tmp, seed), flush=True)
        if "first" in parts:
            bwrap, fds = load_bwrap(a.bwrap_argv)
            s, b = bench_first(port, bwrap, fds, a.first, a.first_base, rng)
            rows.append(("1 first result, new session + pandas cell", s, "ms"))
            rows.append(("  bwrap python3 -c 'import pandas' (cold)", b, "ms"))
            rows.append(("  ratio session / bwrap (target <= 0.1)", med(s) / med(b), "ratio"))
            print("# first: done (%d + %d samples)" % (len(s), len(b)), flush=True)
        if "cell" in parts:
            before = short_calls(port)
            c, lc, p = bench_cell(port, a.cells)
            after = short_calls(port)
            rows.append(("2 cell 1+1, session, keep-alive HTTP", c, "ms"))
            rows.append(("  the same, lean keep-alive client", lc, "ms"))
            rows.append(("  raw pipe to a running python3", p, "ms"))
            rows.append(("  ratio cell / pipe (target: median <= 1 ms)", med(c) / med(p), "ratio"))
            print("# cell: done (%d + %d + %d calls); session calls on libmicrohttpd's thread %d, on their own %d "
                  "(hull_http_short_calls_total: a connection alone on its thread is served by it)" %
                  (len(c), len(lc), len(p), after[0] - before[0], after[1] - before[1]), flush=True)
        if "js" in parts:
            r, dm, n, ne = bench_js(port, a.js, rng)
            rows.append(("3 Run javascript console.log(6*7)", r, "ms"))
            rows.append(("  (its durationMs, daemon side)", dm, "ms"))
            rows.append(("  node -e directly, the sandbox's env", n, "ms"))
            rows.append(("  node -e directly, the client's env", ne, "ms"))
            rows.append(("  ratio Run / node, sandbox's env (<= 1.2)", med(r) / med(n), "ratio"))
            rows.append(("  ratio Run / node, client's env", med(r) / med(ne), "ratio"))
            print("# js: done (%d + %d + %d runs)" % (len(r), len(n), len(ne)), flush=True)
            if os.environ.get("NODE_EXTRA_CA_CERTS") or os.environ.get("NODE_OPTIONS"):
                print("# js: the client's env sets NODE_EXTRA_CA_CERTS=%r NODE_OPTIONS=%r" %
                      (os.environ.get("NODE_EXTRA_CA_CERTS"), os.environ.get("NODE_OPTIONS")), flush=True)
        if "jsdiag" in parts:
            bwrap, fds = load_bwrap(a.bwrap_argv)
            bench_jsdiag(port, a.hull, bwrap, fds, a.js, rng)
        for kind in ("cell", "exec"):
            if (kind == "cell" and "par" not in parts) or (kind == "exec" and "exec" not in parts):
                continue
            lat, errs, wall = bench_par(port, kind, a.clients, a.par_calls, not a.same_owner)
            groups = {}  # message -> [count, clients]
            for e in errs:
                ERRORS.append(e)
                m = re.match(r"client (\d+): (.*)", e, re.S)
                who, key = (m.group(1), m.group(2)[:200]) if m else ("?", e[:200])
                g = groups.setdefault(key, [0, set()])
                g[0] += 1
                g[1].add(who)
            for key, (cnt, who) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
                print("error: %d x (%d clients) %s" % (cnt, len(who), key), file=sys.stderr, flush=True)
            label = "cell 1+1" if kind == "cell" else "Workspace/Exec true"
            rows.append(("4 %d clients x %d %s" % (a.clients, a.par_calls, label), lat, "ms"))
            rows.append(("  throughput calls/s (errors: %d)" % len(errs), len(lat) / wall, "rate"))
            print("# par %s: done (%d calls ok, %d errors, %.1f s)" % (kind, len(lat), len(errs), wall),
                  flush=True)
    finally:
        daemon.terminate()
        try:
            daemon.wait(40)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        with open(os.path.join(tmp, "serve.log"), errors="replace") as f:
            bad = [l for l in f if " level=error " in l]
        subprocess.run(["rm", "-rf", tmp])
    print()
    print("| %-48s | %6s | %9s | %9s | %9s |" % ("benchmark", "n", "min", "median", "p99"))
    print("|%s|%s|%s|%s|%s|" % ("-" * 50, "-" * 7 + ":", "-" * 10 + ":", "-" * 10 + ":", "-" * 10 + ":"))
    for name, v, unit in rows:
        if unit == "ms":
            print("| %-48s | %6d | %9.3f | %9.3f | %9.3f |" % (name, len(v), min(v) if v else float("nan"),
                                                              med(v), pct(v, 99)))
        elif unit == "ratio":
            print("| %-48s | %6s | %9s | %9.3f | %9s |" % (name, "", "", v, ""))
        else:
            print("| %-48s | %6s | %9s | %9.0f | %9s |" % (name, "", "", v, ""))
    print("(times in ms, wall clock in the client; median and p99 nearest rank)")
    if bad:
        print("# daemon logged %d error lines, first: %s" % (len(bad), bad[0].strip()))
    if ERRORS:
        print("# %d failed calls (see stderr above)" % len(ERRORS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
