#!/usr/bin/env bash
# bench/net-relay.sh: variants of the proxy's relay against the direct transfer, without the
# sandbox (run by hand, not a test; issue 26). bench/net.sh measures hull's proxy; this one asks
# what any relay in that place costs, with bench/net-relay.c standing in for sbx-net.c's relay.
# The same 100 MB file, the same Python sendfile server as bench/net.sh (single-threaded here, so
# its pid is the whole server), downloaded by curl in rounds that alternate:
#   direct         curl straight to the server (one loopback crossing)
#   poll           through net-relay's poll + splice relay (two crossings; sbx-net.c's way)
#   threads        through a blocking splice per direction on its own thread, no poll
#   bufs4m         poll, SO_RCVBUF/SO_SNDBUF 4 MiB on both of the relay's sockets
#   pipe1m         poll, 1 MiB pipes
#   nodelay        poll, TCP_NODELAY on the client's side too
#   threads1m      threads, 1 MiB pipes (not in the default list)
#   pollb          a second poll relay, the same as poll: the noise between two equal relays
# The order of the variants turns by one each round, so none always follows the direct one.
# With CPUS=1 every process (server, relays, curl) is pinned to one CPU, so a rate is the
# inverse of the CPU all stages spend per byte, free of the wait between them.
#
#   bench/net-relay.sh                  # 5 rounds, both CPU settings: ~1 minute
#   ROUNDS=7 CPUS=both VARIANTS="direct poll threads" bench/net-relay.sh
#
# Environment: SIZE_MB (100), ROUNDS (5), CPUS (both | 1 | all), VARIANTS (all above).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
SIZE_MB=${SIZE_MB:-100}
ROUNDS=${ROUNDS:-5}
CPUS=${CPUS:-both}
VARIANTS=${VARIANTS:-direct poll threads bufs4m pipe1m nodelay}
PY=/usr/bin/python3
for tool in cc curl taskset "$PY"; do
        command -v "$tool" >/dev/null || { echo "net-relay.sh: $tool is not installed" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/hull-bench-relay.XXXXXX)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
        rm -rf "$tmp"
}
trap cleanup EXIT

cc -O2 -Wall -Wextra -Werror -pthread -o "$tmp/net-relay" "$top/bench/net-relay.c"
head -c $((SIZE_MB << 20)) /dev/urandom >"$tmp/blob"
"$PY" "$top/bench/blob_server.py" "$tmp/blob" "$tmp/port" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
sport=$(cat "$tmp/port")

# A free port for each relay variant: ask the kernel for one, then listen there.
declare -A port
for v in $VARIANTS; do
        [ "$v" = direct ] && { port[$v]=$sport; continue; }
        case $v in
        poll | pollb) args=(poll) ;;
        threads) args=(threads) ;;
        bufs4m) args=(poll $((4 << 20))) ;;
        pipe1m) args=(poll 0 $((1 << 20))) ;;
        threads1m) args=(threads 0 $((1 << 20))) ;;
        nodelay) args=(poll 0 $((256 << 10)) 1) ;;
        *) echo "net-relay.sh: unknown variant $v" >&2; exit 2 ;;
        esac
        p=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        "$tmp/net-relay" "$p" "$sport" "${args[@]}" &
        pids+=($!)
        port[$v]=$p
done
sleep 0.3

pin() { # pin every process of ours (all threads) to the CPU list $1
        for p in "${pids[@]}"; do taskset -a -p -c "$1" "$p" >/dev/null; done
}
run() { # run CPULIST LABEL
        declare -A res=()
        pin "$1"
        printf 'load average: %s, CPUs %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$2"
        local order
        read -r -a order <<<"$VARIANTS"
        for i in $(seq 0 $((ROUNDS - 1))); do
                for j in $(seq 0 $((${#order[@]} - 1))); do
                        v=${order[$(((i + j) % ${#order[@]}))]}
                        res[$v]+="$(taskset -c "$1" curl -sS -o /dev/null -w '%{speed_download}' \
                                "http://127.0.0.1:${port[$v]}/blob") "
                done
        done
        for v in $VARIANTS; do
                "$PY" - "$v" "${res[direct]:-}" "${res[$v]}" <<'EOF'
import statistics, sys
v, d, x = sys.argv[1], sys.argv[2].split(), [float(s) / 2**20 for s in sys.argv[3].split()]
m = statistics.median(x)
ratio = " %.2f of direct" % (m / statistics.median([float(s) / 2**20 for s in d])) if d else ""
print("  %-8s median %5.0f MB/s (min %4.0f, max %4.0f)%s" % (v, m, min(x), max(x), ratio))
EOF
        done
}
last=$(($(nproc) - 1))
case $CPUS in
1) run "$last" "1 (all pinned)" ;;
all) run "0-$last" all ;;
*) run "0-$last" all; run "$last" "1 (all pinned)" ;;
esac
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
