#!/usr/bin/env bash
# bench/deployments.sh: the deployments scheduler's cost (issue 23), run by hand (not a test):
# builds bench/bench-deploy.c (`ninja -C build bench-deploy`) and runs it with N deployments (10,000
# by default): the next-run computation beside a naive minute-by-minute localtime_r scheduler, and
# arming N deployments from SQLite (time, heap bytes, RSS). See docs/BENCHMARKS.md.
#
#   bench/deployments.sh            # 10,000 deployments: ~30 s on 2 busy cores (the yardstick is slow)
#   N=100000 bench/deployments.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
N=${N:-10000}
ninja -C "$BUILD" bench-deploy >/dev/null
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
"$BUILD/bench-deploy" "$N" | tee "$BUILD/bench-deploy.log"
