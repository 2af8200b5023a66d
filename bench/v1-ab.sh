#!/usr/bin/env bash
# v1-ab.sh: the /v1 turn (bench/v1.sh's turn part) of two builds, interleaved: N rounds, each
# running both builds' bench once, in an order that alternates round by round, then the medians
# of the runs, the paired ratio per round, hull serve's CPU per turn and the client's timeline
# (the tool's run, the worker's start, the POST's commit) for each build. Root, as bench/v1.sh.
#
#   BASE=/tmp/ab-base BUILD=build N=24 TURN_ROUNDS=50 bench/v1-ab.sh
#
# BASE and BUILD: directories with a hull and a build.ninja (bench/v1.sh runs ninja there).
# The raw lines go to $OUT (default $BUILD/bench-v1-ab.log). See docs/BENCHMARKS.md.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BASE=${BASE:?BASE: the build to compare against}
BUILD=${BUILD:-build}
N=${N:-8}
TURN_ROUNDS=${TURN_ROUNDS:-50}
OUT=${OUT:-$BUILD/bench-v1-ab.log}
: >"$OUT"
for i in $(seq 1 "$N"); do
        if [ $((i % 2)) = 1 ]; then order=("$BASE" "$BUILD"); else order=("$BUILD" "$BASE"); fi
        for b in "${order[@]}"; do
                which=build
                [ "$b" = "$BASE" ] && which=base
                load=$(cut -d' ' -f1 /proc/loadavg)
                out=$(PARTS=turn SSE_TURNS=0 BUILD=$b TURN_ROUNDS=$TURN_ROUNDS bench/v1.sh 2>&1 |
                        grep -E '^\| turn:|events as the client|CPU per turn' | tr '\n' ' ')
                echo "$i $which $load $out" >>"$OUT"
        done
done
/usr/bin/python3 - "$OUT" "$BASE" "$BUILD" <<'PY'
import re, statistics as st, sys
rows = {"base": [], "build": []}
for line in open(sys.argv[1]):
    f = line.split()
    m = re.search(r"([\d.]+) ms median \(p90", line)
    cpu = re.search(r"CPU per turn[^|]*\|\s*([\d.]+) ms", line)
    if not m or not cpu or "POST):" not in line:
        sys.exit("a run failed: " + line[:300])
    ev = {k: float(v) for k, v in re.findall(r"([a-z_.]+) ([\d.]+)[,\s]", line.split("POST):")[1])}
    rows[f[1]].append((int(f[0]), float(f[2]), float(m.group(1)), float(cpu.group(1)), ev))
for name, path in (("base", sys.argv[2]), ("build", sys.argv[3])):
    r = rows[name]
    med = [x[2] for x in r]
    span = lambda a, b: st.median(x[4][b] - x[4][a] for x in r)
    print(f"{name} ({path}): {len(r)} runs, load {min(x[1] for x in r)}-{max(x[1] for x in r)}: "
          f"turn median (median of runs) {st.median(med):.2f} ms, runs {min(med):.2f}-{max(med):.2f}, "
          f"<= 2.5 ms in {sum(x <= 2.5 for x in med)}; hull serve CPU/turn mean {st.mean(x[3] for x in r):.3f} ms; "
          f"tool_use->tool_result {span('agent.tool_use', 'agent.tool_result'):.2f}, "
          f"user.message->running {span('user.message', 'session.status_running'):.2f}, "
          f"POST->user.message {st.median(x[4]['user.message'] for x in r):.2f} ms")
    print("  runs: " + ", ".join(f"{x:.2f}" for x in med))
b = {x[0]: x[2] for x in rows["base"]}
ratios = [x[2] / b[x[0]] for x in rows["build"] if x[0] in b]
print(f"paired build/base per round: median {st.median(ratios):.3f}, build faster in {sum(x < 1 for x in ratios)} of {len(ratios)}")
PY
