#!/usr/bin/env bash
# bench/net.sh: a limited sandbox's proxy (issue 13), run by hand (not a test). A 100 MB file
# served on 127.0.0.1 (Python, socket.sendfile: the server is not the bottleneck) is downloaded
# ROUNDS times each way, alternating (which goes first turns each round):
#   direct:  curl on the host, straight to the server;
#   proxied: the same curl inside `hull exec --net limited`, through hull's proxy (HTTP_PROXY,
#            absolute-URI forwarding) and, with PROXY_MODE=connect, through a CONNECT tunnel.
# Each figure is curl's own speed_download (bytes/s of the transfer, the sandbox's start-up
# excluded); the medians and their ratio are printed.
#
#   bench/net.sh                    # 100 MB, 7 rounds each way: ~1 minute
#   SIZE_MB=20 ROUNDS=3 bench/net.sh
#
# Environment: BUILD (default build), SIZE_MB (100), ROUNDS (7), PROXY_MODE (http | connect:
# default http). Needs root or user namespaces (hull exec's container tier), curl, python3.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
SIZE_MB=${SIZE_MB:-100}
ROUNDS=${ROUNDS:-7}
PROXY_MODE=${PROXY_MODE:-http}
HULL=${HULL:-$BUILD/hull} # HULL: another hull binary to compare (an A/B of builds)
PY=/usr/bin/python3

for tool in ninja curl "$PY"; do
        command -v "$tool" >/dev/null || { echo "net.sh: $tool is not installed" >&2; exit 1; }
done
ninja -C "$BUILD" hull >/dev/null

tmp=$(mktemp -d /tmp/hull-bench-net.XXXXXX)
chmod 755 "$tmp"
server=
cleanup() {
        # (wait returns the server's 143: under set -e that would end the trap before rm)
        if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
        rm -rf "$tmp"
}
trap cleanup EXIT

head -c $((SIZE_MB << 20)) /dev/urandom >"$tmp/blob"
"$PY" "$top/bench/blob_server.py" "$tmp/blob" "$tmp/port" &
server=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
url=http://bench.test:$port/blob
printf '127.0.0.1 bench.test\n' >"$tmp/hosts"

proxy_opts=()
[ "$PROXY_MODE" = connect ] && proxy_opts=(--proxytunnel)

printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
direct=() proxied=()
direct_once() {
        curl -sS -o /dev/null --resolve "bench.test:$port:127.0.0.1" -w '%{speed_download}' "$url"
}
proxied_once() {
        "$HULL" exec --timeout 120 --net limited --allow-host bench.test --net-allow-loopback \
                --net-hosts "$tmp/hosts" --net-log /dev/null -- \
                curl -sS -o /dev/null "${proxy_opts[@]}" -w '%{speed_download}' "$url"
}
for i in $(seq "$ROUNDS"); do
        # Which goes first alternates, so neither always follows the other's transfer.
        if [ $((i % 2)) = 1 ]; then
                d=$(direct_once)
                p=$(proxied_once)
        else
                p=$(proxied_once)
                d=$(direct_once)
        fi
        direct+=("$d")
        proxied+=("$p")
        printf 'round %d: direct %.0f MB/s, proxied %.0f MB/s\n' "$i" "$(echo "$d / 1048576" | bc -l)" \
                "$(echo "$p / 1048576" | bc -l)"
done
"$PY" - "${direct[*]}" "${proxied[*]}" "$SIZE_MB" "$PROXY_MODE" <<'EOF'
import statistics, sys
d = [float(x) for x in sys.argv[1].split()]
p = [float(x) for x in sys.argv[2].split()]
md, mp = statistics.median(d), statistics.median(p)
print("%s MB, %d rounds, proxy mode %s" % (sys.argv[3], len(d), sys.argv[4]))
print("direct  median %.0f MB/s (min %.0f, max %.0f)" % (md / 2**20, min(d) / 2**20, max(d) / 2**20))
print("proxied median %.0f MB/s (min %.0f, max %.0f)" % (mp / 2**20, min(p) / 2**20, max(p) / 2**20))
print("ratio proxied/direct: %.2f (target >= 0.8, issue 13; >= 0.90, issue 26)" % (mp / md))
EOF
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
