#!/bin/bash
# bench/sessions-density.sh: issue 26's "pandas-ready sessions in 24 GiB", run by hand as root (not
# a test). One hull serve (--max-sessions N+8); N idle container-tier sessions, each with its python
# interpreter started (a cell `x = 1`, numpy and pandas imported: the zygote's fork), distinct
# owners. What each costs, measured twice, before the first and after the last:
#   pss     the PSS of hull serve's whole process tree (the daemon, the broker, each session's
#           keeper and init, the zygote and its children A and B), per session
#   kernel  /proc/meminfo's PageTables + KernelStack + Slab (SUnreclaim) + Shmem (the tmpfs of the
#           sandboxes) per session: system-wide, so other tenants' work is in it (noisy)
# then sessions in 24 GiB = 24 GiB / (pss + kernel). Yardstick: E2B's ~482 MiB per sandbox.
# Usage: N=64 bench/sessions-density.sh [BUILD_DIR]; the load average is printed. CELL=CODE runs
# CODE as each session's cell instead (e.g. "import gc; gc.collect()"); DETAIL=1 prints the private
# pages of a few of the processes by mapping.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
HULL=$top/${1:-build}/hull
N=${N:-64}
[ "$(id -u)" = 0 ] || { echo "run as root (the sessions' sandboxes)"; exit 2; }
tmp=$(mktemp -d /tmp/hull-bench-density.XXXXXX)
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf "$tmp"' EXIT
chmod 0711 "$tmp"
mkdir -m 0711 "$tmp/home"
HULL_HOME=$tmp/home TMPDIR=$tmp HULL_KERNEL_TIER=off "$HULL" serve --listen 127.0.0.1:0 --work-dir "$tmp" \
        --max-sessions $((N + 8)) --max-sessions-per-caller $((N + 8)) >"$tmp/serve.log" 2>&1 &
SP=$!
for _ in $(seq 1 1200); do grep -q event=listening "$tmp/serve.log" && break; kill -0 $SP 2>/dev/null || break; sleep 0.1; done
ADDR=$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$tmp/serve.log" | head -1 | cut -d= -f2)
[ -n "$ADDR" ] || { echo "hull serve did not start:"; tail -5 "$tmp/serve.log"; exit 1; }
echo "# hull $(git -C "$top" rev-parse --short HEAD 2>/dev/null); N=$N; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "http://$ADDR" "$HULL" "$SP" "$N" <<'PYEOF'
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(sys.argv[2])), "..", "tests", "integration"))
import serve_client as sc
from sessions_common import Session, cell, descendants, out_of
url, spid, n = sys.argv[1], int(sys.argv[3]), int(sys.argv[4])
c = sc.Client(url)

def pss(by=None):
    tot, procs = 0, 0
    for p in list(descendants(spid)) + [spid]:
        try:
            comm = open("/proc/%d/comm" % p).read().strip()
            for line in open("/proc/%d/smaps_rollup" % p):
                if line.startswith("Pss:"):
                    v = int(line.split()[1]) * 1024
                    tot += v
                    procs += 1
                    if by is not None:
                        by[comm] = by.get(comm, 0) + v
        except OSError:
            pass
    return tot, procs

def kern():
    m = {}
    for line in open("/proc/meminfo"):
        k, v = line.split(":")
        m[k] = int(v.split()[0]) * 1024
    return {k: m[k] for k in ("PageTables", "KernelStack", "SUnreclaim", "Shmem")}

# one session first: the zygote is up and imported pandas (not counted)
s0 = Session(c, "warm")
s0.open(quiet=True, owner="warm")
s0.run("warm", cell("python", "import pandas"))
s0.close("close")
time.sleep(2)
p0, n0 = pss()
f0 = len(os.listdir("/proc/%d/fd" % spid))
k0 = kern()
ss = []
t0 = time.time()
for i in range(n):
    s = Session(c, "mem")
    s.open(quiet=True, owner="m%d" % i)
    _, run = s.run("a cell", cell("python", os.environ.get("CELL", "x = 1")))
    if i == 0 and os.environ.get("CELL"):
        print("the first session's cell printed: %r" % out_of(run, "cell")[0])
    ss.append(s)
opened = time.time() - t0
if any(not s.sid for s in ss):
    sys.exit("sessions-density: %d of %d sessions did not open (see above)" % (sum(not s.sid for s in ss), n))
time.sleep(2)
by = {}
seen_detail = {}
p1, n1 = pss(by)
f1 = len(os.listdir("/proc/%d/fd" % spid))
k1 = kern()
per_pss = (p1 - p0) / n
per_k = {k: (k1[k] - k0[k]) / n for k in k0}
per = per_pss + sum(per_k.values())
if os.environ.get("DETAIL"):  # the private pages of one session's processes, by mapping
    for p in descendants(spid):
        try:
            comm = open("/proc/%d/comm" % p).read().strip()
        except OSError:
            continue
        if comm not in ("hull-python", "hull-keeper", "hull", "hull-zygote") or p in seen_detail:
            continue
        if sum(1 for q in seen_detail.values() if q == comm) >= (2 if comm in ("hull-python", "hull-zygote") else 1):
            continue
        seen_detail[p] = comm
        maps, cur = {}, None
        for line in open("/proc/%d/smaps" % p):
            f = line.split()
            if not line[0].isupper() or not f[0].endswith(":"):
                cur = f[5] if len(f) > 5 else "[anon]"
            elif f[0] in ("Private_Dirty:", "Private_Clean:"):
                maps[cur] = maps.get(cur, 0) + int(f[1])
        top = sorted(maps.items(), key=lambda kv: -kv[1])[:6]
        if comm == "hull-python":
            nsp = [l for l in open("/proc/%d/status" % p) if l.startswith("NSpid:")][0].split()
            comm += " (B, in the session)" if len(nsp) > 2 else " (A, on the host)"
        print("  %s %d private: %d KiB: %s" % (comm, p, sum(maps.values()), ", ".join("%s %d" % kv for kv in top)))
for s in ss:
    s.close("close")
print("%d sessions opened (a python cell each) in %.1f s; processes %d -> %d (%.1f per session)" % (
    n, opened, n0, n1, (n1 - n0) / n))
print("hull serve's open fds: %d -> %d (%.1f per session)" % (f0, f1, (f1 - f0) / n))
print("per session: PSS of hull serve's tree %.2f MiB; kernel %s" % (
    per_pss / 2**20, ", ".join("%s %.2f MiB" % (k, v / 2**20) for k, v in per_k.items())))
print("PSS by process name, all %d sessions open (MiB): %s" % (n, ", ".join(
    "%s %.1f" % (k, v / 2**20) for k, v in sorted(by.items(), key=lambda kv: -kv[1]))))
print("per session in all: %.2f MiB -> %d sessions in 24 GiB (target >= 4,000, <= 6 MiB each); "
      "E2B ~482 MiB per sandbox -> %d" % (per / 2**20, 24 * 2**30 / per, 24 * 1024 / 482))
PYEOF
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
