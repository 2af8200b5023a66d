#!/bin/bash
# bench/kernel-session.sh: issue 24's session benchmarks of the kernel tier (gVisor), run by hand as
# root (not a test), side by side in one run:
#   first   a new kernel-tier session to its first pandas cell (OpenSession at minimumIsolation
#           kernel + the cell `import pandas; pandas.__version__`, CloseSession untimed), against a
#           cold `python3 -c "import pandas"` run by `runsc run` (hull exec --tier kernel: hull's
#           OCI bundle, the same root and platform), and the container tier's first pandas cell
#   cell    the cell `1+1` in an open kernel-tier session, and in an open container-tier session
#   mem     sessions per GiB: the PSS of hull serve's process tree with N idle sessions (a python
#           cell run in each) less without, per session, for each tier
# The first kernel session of the serve makes the warm-start template (a checkpoint of a sandbox
# whose python imported pandas): timed on its own line; the rows are the restored sessions after
# it (HULL_KERNEL_WARM=0: every session cold, as before the templates).
# Usage: bench/kernel-session.sh [BUILD_DIR] (default build); N_FIRST, N_CELLS, N_MEM override;
# PARTS="first cell mem" (the default) picks parts.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
HULL=$top/${1:-build}/hull
N_FIRST=${N_FIRST:-5} N_CELLS=${N_CELLS:-40} N_MEM=${N_MEM:-4}
[ "$(id -u)" = 0 ] || { echo "run as root (runsc)"; exit 2; }
tmp=$(mktemp -d /tmp/hull-bench-kernel.XXXXXX)
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; [ -n "${KEEP_LOG:-}" ] && cp "$tmp/serve.log" "$KEEP_LOG"; rm -rf "$tmp"' EXIT
chmod 0711 "$tmp"
mkdir -m 0711 "$tmp/home"
HULL_HOME=$tmp/home TMPDIR=$tmp "$HULL" serve --listen 127.0.0.1:0 --work-dir "$tmp" >"$tmp/serve.log" 2>&1 &
SP=$!
for _ in $(seq 1 1200); do grep -q event=listening "$tmp/serve.log" && break; kill -0 $SP 2>/dev/null || break; sleep 0.1; done
ADDR=$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$tmp/serve.log" | head -1 | cut -d= -f2)
[ -n "$ADDR" ] || { echo "hull serve did not start:"; tail -5 "$tmp/serve.log"; exit 1; }
URL=http://$ADDR
echo "# $(runsc --version | head -1), platform ${HULL_RUNSC_PLATFORM:-ptrace}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$URL" "$HULL" "$SP" "$N_FIRST" "$N_CELLS" "$N_MEM" <<'PYEOF'
import os, statistics, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(sys.argv[2])), "..", "tests", "integration"))
import serve_client as sc
from sessions_common import Session, cell, descendants

url, hull, spid, n_first, n_cells, n_mem = sys.argv[1], sys.argv[2], int(sys.argv[3]), *map(int, sys.argv[4:])
c = sc.Client(url)
def med(v):
    return statistics.median(v)

def first(floor):
    s = Session(c, "first")
    t0 = time.perf_counter()
    s.open(floor=floor, quiet=True)
    t1 = time.perf_counter()
    _, run = s.run("first pandas cell", cell("python", "import pandas\npandas.__version__"))
    t = time.perf_counter() - t0
    phases.setdefault(floor, []).append((t1 - t0, t - (t1 - t0)))
    s.close("close")
    assert run, "the first cell failed"
    return t

phases = {}  # floor: [(OpenSession s, first cell s)]

def cold():
    t0 = time.perf_counter()
    subprocess.run([hull, "exec", "--tier", "kernel", "--timeout", "600", "--", "/usr/bin/python3", "-c", "import pandas"], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0

parts = os.environ.get("PARTS", "first cell mem").split()
fk, fc, cr = [], [], []
if "first" in parts:  # hull serve's first kernel session makes the warm template (sbx-kernel-warm.c)
    print("first kernel session of the serve (makes the warm template): %.2f s" % first("kernel"))
for _ in range(n_first if "first" in parts else 0):  # interleaved
    fk.append(first("kernel")); cr.append(cold()); fc.append(first(""))
if "first" in parts:
  print("first pandas cell, kernel session: median %.2f s (%s)" % (med(fk), " ".join("%.2f" % x for x in fk)))
  print("cold import pandas under runsc run: median %.2f s (%s)" % (med(cr), " ".join("%.2f" % x for x in cr)))
  print("first pandas cell, container session: median %.2f s" % med(fc))
  ko = phases["kernel"][1:]  # the serve's first (template-making) session left out
  print("  kernel session, of which OpenSession: median %.2f s (%s), the first cell: median %.2f s (%s)" %
        (med([o for o, _ in ko]), " ".join("%.2f" % o for o, _ in ko),
         med([x for _, x in ko]), " ".join("%.2f" % x for _, x in ko)))
  print("ratio kernel session / cold runsc: %.2fx (target <= 0.3x)" % (med(fk) / med(cr)))

def cells(floor):
    s = Session(c, "cells")
    s.open(floor=floor, quiet=True)
    s.run("warm", cell("python", "1"))
    v = []
    for _ in range(n_cells):
        t0 = time.perf_counter()
        a = c.call("SessionRun", s.request(cell("python", "1+1")))
        v.append(time.perf_counter() - t0)
        assert a.status == 200
    c.call("CloseSession", {"protocol": 3, "sessionId": s.sid})
    return v
for floor, name in (("kernel", "kernel"), ("", "container")) if "cell" in parts else ():
    v = sorted(cells(floor))
    print("cell round trip, %s: median %.1f ms, p90 %.1f ms" % (name, med(v) * 1000, v[int(len(v) * 0.9)] * 1000))

def pss():
    tot = 0
    for p in list(descendants(spid)) + [spid]:
        try:
            for line in open("/proc/%d/smaps_rollup" % p):
                if line.startswith("Pss:"):
                    tot += int(line.split()[1]) * 1024
        except OSError:
            pass
    return tot
for floor, name in (("kernel", "kernel"), ("", "container")) if "mem" in parts else ():
    time.sleep(1)
    base = pss()
    ss = []
    for i in range(n_mem):
        s = Session(c, "mem")
        s.open(floor=floor, quiet=True, owner="m%d" % i)
        s.run("a cell", cell("python", "x = 1"))
        ss.append(s)
    time.sleep(1)
    per = (pss() - base) / n_mem
    for s in ss:
        s.close("close")
    print("memory per idle %s session (PSS, python started): %.0f MiB -> %.1f sessions per GiB" % (
        name, per / 2**20, 2**30 / per))
PYEOF
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
