#!/usr/bin/env bash
# bench/mcp.sh: issue 11's benchmark of hull as an MCP server, run by hand (not a test): the round
# trip of a tools/call of run_python "1+1" (median of CALLS after WARMUP), over stdio (`hull mcp`,
# the target: <= 2 ms) and, for reference, over hull serve's /mcp (one keep-alive connection).
# The client is bench/mcp.py (stdlib, /usr/bin/python3).
#
#   bench/mcp.sh                          # about half a minute
#   CALLS=1000 PARTS=stdio bench/mcp.sh
#
# Environment: BUILD (default build), CALLS (200), WARMUP (20), PARTS ("stdio http"). The output
# is also written to $BUILD/bench-mcp.log. See docs/BENCHMARKS.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
[ -x "$BUILD/hull" ] || ninja -C "$BUILD" hull
{
        echo "# bench/mcp.sh $(date -u '+%Y-%m-%d %H:%M UTC') commit $(git rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg)"
        /usr/bin/python3 bench/mcp.py --hull "$BUILD/hull" --calls "${CALLS:-200}" --warmup "${WARMUP:-20}" \
                --parts "${PARTS:-stdio http}"
} 2>&1 | tee "$BUILD/bench-mcp.log"
