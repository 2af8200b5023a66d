#!/usr/bin/env bash
# bench/files.sh: a 100 MiB file through hull serve's /v1/files (upload: POST multipart; download:
# GET /v1/files/{id}/content) beside the yardstick, curl to a static server on the same machine
# (bench/files-yardstick.py: Python's http.server, a POST written to disk in 1 MiB reads, a GET of
# a static file), ROUNDS times alternating, each a fresh random file (no blob reused). Prints the
# median seconds of each, the ratio hull/yardstick (issue 22's target: <= 1.3x), and the load
# average. Run by hand (never a test); the table also goes to $BUILD/bench-files.log.
#
#   BUILD=build bench/files.sh          # ROUNDS (5), SIZE_MB (100)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${BUILD:-$top/build}" && pwd)
ROUNDS=${ROUNDS:-5}
SIZE_MB=${SIZE_MB:-100}
tmp=$(mktemp -d /tmp/hull-bench-files.XXXXXX)
chmod 711 "$tmp"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "files.sh: $*" >&2; tail -5 "$tmp/serve.log" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$tmp/home" "$tmp/yard"
chmod 711 "$tmp/home"
hp=$(free_port)
HULL_HOME=$tmp/home "$BUILD/hull" serve --listen "127.0.0.1:$hp" --no-cgroup >"$tmp/serve.log" 2>&1 &
pids+=($!)
yp=$(free_port)
python3 "$top/bench/files-yardstick.py" "$yp" "$tmp/yard" >"$tmp/yard.log" 2>&1 &
pids+=($!)
for i in $(seq 1 100); do
        curl -s -o /dev/null "http://127.0.0.1:$hp/healthz" && curl -s -o /dev/null "http://127.0.0.1:$yp/" && break
        sleep 0.1
done
H=(-H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: files-api-2025-04-14')
secs() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
declare -a hu hd yu yd
for i in $(seq 1 "$ROUNDS"); do
        head -c "$((SIZE_MB << 20))" /dev/urandom >"$tmp/in.bin"
        cp "$tmp/in.bin" "$tmp/yard/static.bin"
        yu+=("$(secs curl -sf -F "file=@$tmp/in.bin" "http://127.0.0.1:$yp/upload" -o /dev/null)")
        hu+=("$(secs curl -sf "${H[@]}" -F "file=@$tmp/in.bin" "http://127.0.0.1:$hp/v1/files" -o "$tmp/up.json")") || fail "the upload failed: $(cat "$tmp/up.json" 2>/dev/null)"
        id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/up.json")
        yd+=("$(secs curl -sf "http://127.0.0.1:$yp/static.bin" -o "$tmp/out.bin")")
        hd+=("$(secs curl -sf "${H[@]}" "http://127.0.0.1:$hp/v1/files/$id/content" -o "$tmp/out.bin")")
        cmp -s "$tmp/in.bin" "$tmp/out.bin" || { echo "files.sh: the download differs from the upload" >&2; exit 1; }
        curl -sf "${H[@]}" -X DELETE "http://127.0.0.1:$hp/v1/files/$id" -o /dev/null
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
mhu=$(median "${hu[@]}") mhd=$(median "${hd[@]}") myu=$(median "${yu[@]}") myd=$(median "${yd[@]}")
{
        echo "# bench/files.sh: ${SIZE_MB} MiB, $ROUNDS rounds, median seconds; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "| what | hull serve /v1/files | curl to a static server | hull / yardstick |"
        echo "|---|---|---|---|"
        printf '| upload | %s s | %s s | %.2fx |\n' "$mhu" "$myu" "$(awk -v a="$mhu" -v b="$myu" 'BEGIN { print a / b }')"
        printf '| download | %s s | %s s | %.2fx |\n' "$mhd" "$myd" "$(awk -v a="$mhd" -v b="$myd" 'BEGIN { print a / b }')"
        echo "# every round: hull up ${hu[*]} / yard up ${yu[*]} / hull down ${hd[*]} / yard down ${yd[*]}"
} | tee "$BUILD/bench-files.log"
