#!/usr/bin/python3
"""bench/mcp.py: issue 11's round trip of an MCP tools/call (run_python "1+1"), stdlib only.

stdio: `hull mcp` started as an MCP host starts it, initialize, notifications/initialized, WARMUP
calls, then CALLS calls one after another, each timed from the request's write to the answer's
line read (time.perf_counter_ns). http: the same against `hull serve`'s /mcp over one keep-alive
connection (http.client), each POST timed until its whole answer is read. Prints min, median,
p95 (nearest rank), max in ms per transport. Run by bench/mcp.sh."""
import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

CALL = {"name": "run_python", "arguments": {"code": "1+1"}}


def stats(name, ns):
    ms = sorted(x / 1e6 for x in ns)
    p95 = ms[max(0, -(-95 * len(ms) // 100) - 1)]
    print(f"{name}: n={len(ms)} min={ms[0]:.3f} median={ms[len(ms) // 2]:.3f} p95={p95:.3f} max={ms[-1]:.3f} ms")
    return ms[len(ms) // 2]


def check_answer(msg, want_id):
    if msg.get("id") != want_id or "result" not in msg or msg["result"].get("isError"):
        sys.exit(f"mcp.py: a bad answer to call {want_id}: {json.dumps(msg)[:300]}")


def bench_stdio(hull, warmup, calls):
    home = tempfile.mkdtemp(prefix="hull-bench-mcp-")
    os.chmod(home, 0o711)
    p = subprocess.Popen([hull, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, bufsize=0)
    rd = p.stdout

    def send(msg):
        p.stdin.write((json.dumps(msg) + "\n").encode())

    def read():
        while True:
            line = rd.readline()
            if not line:
                sys.exit("mcp.py: hull mcp ended")
            msg = json.loads(line)
            if "id" in msg:
                return msg

    t0 = time.perf_counter_ns()
    send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    read()
    t_init = time.perf_counter_ns() - t0
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    ns = []
    first = None
    for i in range(1, warmup + calls + 1):
        t = time.perf_counter_ns()
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": CALL})
        msg = read()
        d = time.perf_counter_ns() - t
        check_answer(msg, i)
        if i == 1:
            first = d
        if i > warmup:
            ns.append(d)
    p.stdin.close()
    p.wait(timeout=60)
    shutil.rmtree(home, ignore_errors=True)
    print(f"stdio: initialize {t_init / 1e6:.1f} ms, first call {first / 1e6:.1f} ms (python starts)")
    return stats("stdio (hull mcp)", ns)


def bench_http(hull, warmup, calls):
    home = tempfile.mkdtemp(prefix="hull-bench-mcp-serve-")
    os.chmod(home, 0o711)
    log = open(os.path.join(home, "serve.log"), "w+")
    env = dict(os.environ, HULL_HOME=home)
    p = subprocess.Popen([hull, "serve", "--listen", "127.0.0.1:0", "--log-level", "warn"], stdout=log, stderr=log,
                         env=env)
    port = None
    try:
        for _ in range(600):
            log.seek(0)
            m = re.search(r"addr=127\.0\.0\.1:(\d+)", log.read())
            if m:
                port = int(m.group(1))
                break
            if p.poll() is not None:
                break
            time.sleep(0.05)
        if not port:
            # --log-level warn hides the listening line: ask the kernel
            out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
            for line in out.splitlines():
                if f"pid={p.pid}," in line:
                    port = int(line.split()[3].rsplit(":", 1)[1])
        if not port:
            sys.exit("mcp.py: hull serve did not listen")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

        def post(msg):
            conn.request("POST", "/mcp", body=json.dumps(msg), headers=headers)
            r = conn.getresponse()
            body = r.read()
            return r, body

        t0 = time.perf_counter_ns()
        r, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}}})
        t_init = time.perf_counter_ns() - t0
        sid = r.getheader("Mcp-Session-Id")
        if r.status != 200 or not sid:
            sys.exit(f"mcp.py: initialize over HTTP: {r.status}")
        headers["Mcp-Session-Id"] = sid
        headers["MCP-Protocol-Version"] = "2025-11-25"
        post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ns = []
        first = None
        for i in range(1, warmup + calls + 1):
            t = time.perf_counter_ns()
            r, body = post({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": CALL})
            d = time.perf_counter_ns() - t
            check_answer(json.loads(body), i)
            if i == 1:
                first = d
            if i > warmup:
                ns.append(d)
        conn.request("DELETE", "/mcp", headers=headers)
        conn.getresponse().read()
        conn.close()
        print(f"http: initialize {t_init / 1e6:.1f} ms, first call {first / 1e6:.1f} ms (python starts)")
        return stats("http (hull serve /mcp)", ns)
    finally:
        p.terminate()
        p.wait(timeout=60)
        shutil.rmtree(home, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hull", required=True)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--parts", default="stdio http")
    a = ap.parse_args()
    if "stdio" in a.parts:
        med = bench_stdio(a.hull, a.warmup, a.calls)
        print(f"target: stdio median <= 2 ms: {'met' if med <= 2.0 else 'MISSED'} ({med:.3f} ms)")
    if "http" in a.parts:
        bench_http(a.hull, a.warmup, a.calls)


if __name__ == "__main__":
    main()
