#!/usr/bin/env bash
# bench/webhooks.sh: outbound webhook delivery latency (issue 23), run by hand (not a test):
# bench/webhooks.js against this build's hull serve and hull mock-model on loopback, with the
# official SDK (tests/conformance's npm install). Prints the load average around the run.
#
#   bench/webhooks.sh                       # 100 events/s for 10 s, 20 turns
#   RATE=50 SECONDS_RUN=5 TURNS=10 bench/webhooks.sh
#
# Environment: BUILD (default build), RATE, SECONDS_RUN, TURNS. See docs/BENCHMARKS.md.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
ninja -C "$BUILD" hull >/dev/null
export NODE_PATH=${NODE_PATH:-$(cd "$BUILD" && pwd)/conformance-npm/node_modules}
[ -d "$NODE_PATH/@anthropic-ai/sdk" ] || { echo "bench: run tests/conformance/test-webhooks-sdk.sh once (it installs the SDK)" >&2; exit 1; }
D=$(mktemp -d /tmp/hull-bench-webhooks.XXXXXX)
chmod 755 "$D" # the sandbox user reaches HULL_HOME under it
trap 'rm -rf "$D"' EXIT
echo "hull $(git rev-parse --short HEAD), node $(node --version), $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
TMPDIR=$D HULL=$(cd "$BUILD" && pwd)/hull node bench/webhooks.js 2>&1 | tee "$BUILD/bench-webhooks.log"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
