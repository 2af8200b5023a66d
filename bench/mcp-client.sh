#!/usr/bin/env bash
# bench/mcp-client.sh: hull's MCP client beside the official SDK's (issue 11), run by hand (not a
# test), side by side in one run: tools/call round trips to @modelcontextprotocol/server-everything's
# echo (tests/conformance's lockfile, installed by npm ci into $BUILD/conformance-npm like the
# tests do), over stdio (each client spawns its own server) and over Streamable HTTP (one
# `mcp-server-everything streamableHttp` on loopback, killed at the end; each client has its own
# MCP session). hull's side is bench/bench-mcp.c (`ninja -C build bench-mcp`), the SDK's is
# bench/mcp-client.mjs (@modelcontextprotocol/sdk 1.32.2, the version in the lockfile). ROUNDS
# rounds alternate the two clients (hull first in odd rounds, the SDK first in even ones); each run
# makes WARMUP untimed calls, then CALLS timed ones. The statistics are over all timed calls:
# min, median, p95 (nearest rank), in ms; ratio = hull's median over the SDK's (target <= 1.2).
#
#   bench/mcp-client.sh                          # 3 rounds of 200 calls each way: ~1 minute
#   CALLS=500 ROUNDS=5 bench/mcp-client.sh
#
# Environment: BUILD (default build), CALLS (200), WARMUP (20), ROUNDS (3), PARTS ("stdio http").
# The output is also written to $BUILD/bench-mcp.log. See docs/BENCHMARKS.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
CALLS=${CALLS:-200}
WARMUP=${WARMUP:-20}
ROUNDS=${ROUNDS:-3}
PARTS=${PARTS:-"stdio http"}

for tool in ninja node npm /usr/bin/python3; do
        command -v "$tool" >/dev/null || { echo "mcp-client.sh: $tool is not installed" >&2; exit 1; }
done
ninja -C "$BUILD" bench-mcp >/dev/null

# the npm packages, as tests/conformance/npm-deps.sh installs them
skip() { echo "mcp-client.sh: $2" >&2; exit 1; }
fail() { echo "mcp-client.sh: $2" >&2; exit 1; }
# shellcheck source=tests/conformance/npm-deps.sh disable=SC1091
. tests/conformance/npm-deps.sh
npm_ready "mcp-client.sh"
EV=$NODE_PATH/.bin/mcp-server-everything
SDK=$NODE_PATH/@modelcontextprotocol/sdk
[ -x "$EV" ] || fail x "$EV is missing"
SDK_VERSION=$(node -p "require('$SDK/package.json').version")
EV_VERSION=$(node -p "require('$NODE_PATH/@modelcontextprotocol/server-everything/package.json').version")

D=$(mktemp -d /tmp/hull-bench-mcp-XXXXXX)
EVH=""
cleanup() {
        if [ -n "$EVH" ]; then
                kill "$EVH" 2>/dev/null || true
                wait "$EVH" 2>/dev/null || true
        fi
        rm -rf "$D"
}
trap cleanup EXIT
cp "$BUILD/bench-mcp" "$D/bench-mcp" # a rebuild during the run must not swap it

# run WHO TRANSPORT TARGET...: one run's samples appended to $D/WHO-TRANSPORT
run() {
        local who=$1 tr=$2
        shift 2
        if [ "$who" = hull ]; then
                "$D/bench-mcp" "$tr" "$CALLS" "$WARMUP" "$@" >>"$D/$who-$tr"
        else
                SDK=$SDK node bench/mcp-client.mjs "$tr" "$CALLS" "$WARMUP" "$@" >>"$D/$who-$tr"
        fi
}

rounds() { # TRANSPORT TARGET...
        local tr=$1 i
        shift
        : >"$D/hull-$tr"
        : >"$D/sdk-$tr"
        for i in $(seq 1 "$ROUNDS"); do
                if [ $((i % 2)) = 1 ]; then
                        run hull "$tr" "$@"
                        run sdk "$tr" "$@"
                else
                        run sdk "$tr" "$@"
                        run hull "$tr" "$@"
                fi
        done
}

{
        echo "# host: $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); hull $(git describe --always --dirty 2>/dev/null); node $(node --version); @modelcontextprotocol/sdk $SDK_VERSION; server-everything $EV_VERSION"
        echo "# $ROUNDS rounds x $CALLS calls (after $WARMUP warm-up calls per run) per client and transport"
        for part in $PARTS; do
                case $part in
                stdio) rounds stdio "$EV" stdio ;;
                http)
                        PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
                        HOST=127.0.0.1 PORT=$PORT "$EV" streamableHttp >"$D/evh.log" 2>&1 &
                        EVH=$!
                        for _ in $(seq 1 600); do
                                /usr/bin/python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$PORT" 2>/dev/null && break
                                sleep 0.05
                        done
                        rounds http "http://127.0.0.1:$PORT/mcp"
                        kill "$EVH" 2>/dev/null || true
                        wait "$EVH" 2>/dev/null || true
                        EVH=""
                        ;;
                *) echo "mcp-client.sh: unknown part $part" >&2; exit 2 ;;
                esac
        done
        # shellcheck disable=SC2086 # PARTS: a list of words
        /usr/bin/python3 - "$D" $PARTS <<'PYEOF'
import sys
d, parts = sys.argv[1], sys.argv[2:]
def stats(path):
    v = sorted(int(l) for l in open(path) if l.strip())
    rank = lambda q: v[max(0, -(-len(v) * q // 100) - 1)]
    return len(v), v[0] / 1000, rank(50) / 1000, rank(95) / 1000
print("%-6s %-5s %6s %9s %9s %9s %7s" % ("wire", "client", "calls", "min ms", "median", "p95", "ratio"))
for p in parts:
    h, s = stats("%s/hull-%s" % (d, p)), stats("%s/sdk-%s" % (d, p))
    print("%-6s %-5s %6d %9.3f %9.3f %9.3f %7s" % (p, "sdk", *s, ""))
    print("%-6s %-5s %6d %9.3f %9.3f %9.3f %7.2f" % (p, "hull", *h, h[2] / s[2]))
PYEOF
} 2>&1 | tee "$BUILD/bench-mcp.log"
