#!/usr/bin/env bash
# bench/v1.sh: issue 10's benchmarks of hull serve's /v1 API, run by hand (not a test), side by
# side in one run, on loopback against one `hull serve` whose model is `hull mock-model`:
#   1. GET /v1/sessions/{id}             (wrk -t2 -c16 -d10s), beside GET /healthz
#   2. GET /v1/sessions/{id}/events?limit=100 (the same), beside GET /healthz
#   3. a turn: POST .../events (a user.message) to its session.status_idle, two mock-model calls
#      and a glob between, median of TURN_ROUNDS (bench/v1-client.mjs), beside a GET /healthz
#   4. hull serve's memory: VmRSS idle, the largest VmRSS sampled under the GET's wrk load, with
#      the SSE subscribers connected, in the whole run; VmHWM
#   5. SUBSCRIBERS SSE subscribers on one session while SSE_TURNS turns run: every event to every
#      subscriber in order, and the delay from an event's processed_at to its receipt (p50, p99)
# Targets (the issue's, for this kind of machine): >= 17,500 requests/s for 1, <= 16 MB idle and
# <= 27 MB under load, <= 3.5 ms for 3.
#
#   bench/v1.sh                                  # about 2 minutes
#   DURATION=5s TURN_ROUNDS=20 SUBSCRIBERS=200 bench/v1.sh
#
# Environment: BUILD (default build), DURATION (10s), TURN_ROUNDS (50), SUBSCRIBERS (1000),
# SSE_TURNS (10), PARTS (default "get events turn sse"). Installs wrk with apt-get when it is
# missing (as root). Needs node (/usr/bin/node) and curl. The output is also written to
# $BUILD/bench-v1.log. See docs/BENCHMARKS.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
DURATION=${DURATION:-10s}
TURN_ROUNDS=${TURN_ROUNDS:-50}
SUBSCRIBERS=${SUBSCRIBERS:-1000}
SSE_TURNS=${SSE_TURNS:-10}
PARTS=${PARTS:-"get events turn sse"}

die() {
        echo "v1.sh: $*" >&2
        exit 1
}
for tool in ninja curl /usr/bin/node /usr/bin/python3; do
        command -v "$tool" >/dev/null || die "$tool is not installed"
done
if ! command -v wrk >/dev/null; then
        [ "$(id -u)" = 0 ] || die "wrk is not installed (apt-get install wrk, as root)"
        echo "v1.sh: installing wrk (apt-get install wrk)" >&2
        apt-get install -y --no-install-recommends wrk >/dev/null ||
                { apt-get update >/dev/null && apt-get install -y --no-install-recommends wrk >/dev/null; } ||
                die "cannot install wrk with apt-get"
fi
[ "$(id -u)" = 0 ] || die "needs root (the sessions' sandboxes)"
turns_total=$((TURN_ROUNDS + SSE_TURNS + 4))
[ $((turns_total * 2)) -le 4096 ] || die "at most 2040 turns in all (the mock's script holds 4096 steps)"

ninja -C "$BUILD" hull >/dev/null

D=$(mktemp -d /tmp/hull-bench-v1-XXXXXX)
chmod 0711 "$D" # HULL_HOME below it must be reachable by the sandbox user
pids=()
cleanup() {
        for p in "${pids[@]}"; do
                kill "$p" 2>/dev/null || true
                wait "$p" 2>/dev/null || true
        done
        rm -rf "$D"
}
trap cleanup EXIT
# A private copy: a rebuild during the run must not swap the binary under the daemon.
cp "$BUILD/hull" "$D/hull"
HULL="$D/hull"
export HULL_HOME=$D/home
mkdir -m 0711 "$HULL_HOME"
unset HULL_API_KEY HULL_TOKEN OPENAI_API_KEY ANTHROPIC_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER 2>/dev/null || true
# 1000 subscribers: the client's sockets and the server's
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true

# The mock: every turn is a glob call, then a text (two model calls).
/usr/bin/python3 - "$turns_total" >"$D/mock.json" <<'EOF'
import json, sys
n = int(sys.argv[1])
steps = []
for i in range(n):
    steps.append({"tool_calls": [{"name": "glob", "input": {"pattern": "*"}}], "usage": {"input_tokens": 50, "output_tokens": 5}})
    steps.append({"text": "done %d" % i, "usage": {"input_tokens": 60, "output_tokens": 3}})
print(json.dumps({"steps": steps, "then": "repeat"}))
EOF
"$HULL" mock-model --script "$D/mock.json" --listen 127.0.0.1:0 --log-level error >"$D/mock.out" 2>"$D/mock.err" &
pids+=($!)
MURL=""
for _ in $(seq 1 600); do
        MURL=$(head -1 "$D/mock.out" 2>/dev/null | sed -n 's|^listening on \(http://127\.0\.0\.1:[0-9][0-9]*\)$|\1|p' || true)
        [ -n "$MURL" ] && break
        sleep 0.05
done
[ -n "$MURL" ] || die "hull mock-model did not start: $(cat "$D/mock.err")"

# a free port (hull serve logs its address at info, and info logs a line per request: warn here)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ADDR=127.0.0.1:$PORT
"$HULL" serve --listen "$ADDR" --log-level warn --provider anthropic --base-url "$MURL" --api-key k \
        --model mock-model --max-connections $((SUBSCRIBERS + 64)) --max-connections-per-address 256 \
        >"$D/serve.log" 2>&1 &
SPID=$!
pids+=("$SPID")
up=""
for _ in $(seq 1 600); do
        curl -sf -o /dev/null "http://$ADDR/healthz" && up=1 && break
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.05
done
[ -n "$up" ] || die "hull serve did not start: $(tail -3 "$D/serve.log")"
URL=http://$ADDR
H=(-H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: managed-agents-2026-04-01')
code=$(curl -s -o /dev/null -w '%{http_code}' "${H[@]}" "$URL/v1/agents")
[ "$code" = 200 ] || die "hull serve has no /v1 API yet (GET /v1/agents answered $code)"

post() { # PATH JSON: the answer's "id"
        curl -sf "${H[@]}" -H 'content-type: application/json' "$URL$1" -d "$2" |
                /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}
AGENT=$(post /v1/agents '{"name":"bench","model":"mock-model","tools":[{"type":"agent_toolset_20260401",
 "default_config":{"enabled":false},"configs":[{"name":"glob","enabled":true,"permission_policy":{"type":"always_allow"}}]}]}') ||
        die "cannot make an agent"
ENV=$(post /v1/environments '{"name":"bench","config":{"type":"cloud","networking":{"type":"unrestricted"}}}') ||
        die "cannot make an environment"
SESSION=$(post /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$ENV\"}") || die "cannot make a session"
node() { /usr/bin/node "$top/bench/v1-client.mjs" "$@"; }

mem() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$SPID/status"; } # kB
# hull serve's CPU so far, its ended threads' included (utime + stime, in clock ticks)
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$SPID/stat"; }
# sample VmRSS every 0.2 s while a command runs; the largest into $peak_rss
peak_rss=0
sampled() {
        local f=$D/rss.samples
        : >"$f"
        (while kill -0 "$SPID" 2>/dev/null; do mem VmRSS >>"$f"; sleep 0.2; done) &
        local sp=$!
        "$@"
        local rc=$?
        kill "$sp" 2>/dev/null || true
        wait "$sp" 2>/dev/null || true
        local m
        m=$(sort -n "$f" | tail -1)
        last_rss=${m:-0}
        [ -n "$m" ] && [ "$m" -gt "$peak_rss" ] && peak_rss=$m
        return $rc
}
# wrk_run NAME PATH: requests/s and latency p50/p99 into $D/NAME.wrk
wrk_run() {
        sampled wrk -t2 -c16 -d"$DURATION" --latency "${H[@]}" "$URL$2" >"$D/$1.wrk" 2>&1 || die "wrk failed: $(cat "$D/$1.wrk")"
        grep -q 'Non-2xx' "$D/$1.wrk" && die "$2 answered errors under load: $(grep Non-2xx "$D/$1.wrk")"
        true
}
wrk_rps() { awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$D/$1.wrk"; }
wrk_lat() { awk -v p="$2" '$1 == p { print $2 }' "$D/$1.wrk"; }

exec > >(tee "$BUILD/bench-v1.log") 2>&1
echo "# hull /v1 benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# host: $(nproc) CPUs, kernel $(uname -r); hull $(git describe --always --dirty 2>/dev/null); $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2); node $(/usr/bin/node --version)"
sleep 1
idle_rss=$(mem VmRSS)

# a few turns first, so that the session has events to list
node turns "$URL" "$SESSION" 4 >/dev/null || die "the first turns failed"
rows=()
row() { rows+=("$(printf '| %-48s | %-26s | %-22s | %-14s |' "$@")"); }
row "what" "hull" "beside: GET /healthz" "target"
row "---" "---" "---" "---"

for part in $PARTS; do
        case $part in
        get)
                wrk_run get "/v1/sessions/$SESSION"
                get_rss=$last_rss
                wrk_run hz "/healthz"
                row "GET /v1/sessions/{id} (wrk -t2 -c16 -d$DURATION)" \
                        "$(wrk_rps get) req/s (p99 $(wrk_lat get 99%))" "$(wrk_rps hz) req/s (p99 $(wrk_lat hz 99%))" ">= 17,500 req/s"
                ;;
        events)
                wrk_run ev "/v1/sessions/$SESSION/events?limit=100"
                wrk_run hz2 "/healthz"
                row "GET .../events?limit=100 (wrk -t2 -c16 -d$DURATION)" \
                        "$(wrk_rps ev) req/s (p99 $(wrk_lat ev 99%))" "$(wrk_rps hz2) req/s (p99 $(wrk_lat hz2 99%))" "-"
                ;;
        turn)
                cpu0=$(cpu_ticks)
                sampled node turns "$URL" "$SESSION" "$TURN_ROUNDS" >"$D/turns.json" || die "the turns failed"
                cpu1=$(cpu_ticks)
                row "turn: POST .../events to idle (2 calls + glob)" \
                        "$(/usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print("%.2f ms median (p90 %.2f), n=%d" % (t["median_ms"], t["p90_ms"], t["turns"]))' "$D/turns.json")" \
                        "$(/usr/bin/python3 -c 'import json,sys; print("%.3f ms median" % json.load(open(sys.argv[1]))["healthz_median_ms"])' "$D/turns.json")" \
                        "<= 3.5 ms"
                row "  ... hull serve's CPU per turn (user + system)" \
                        "$(awk -v t=$((cpu1 - cpu0)) -v hz="$(getconf CLK_TCK)" -v n="$TURN_ROUNDS" 'BEGIN { printf "%.3f ms", t * 1000 / hz / n }')" "-" "-"
                ;;
        sse)
                S2=$(post /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$ENV\"}") || die "cannot make a session"
                sampled node fanout "$URL" "$S2" "$SUBSCRIBERS" "$SSE_TURNS" >"$D/fanout.json" || die "the SSE fan-out failed"
                sse_rss=$last_rss
                row "$SUBSCRIBERS SSE subscribers, $SSE_TURNS turns" \
                        "$(/usr/bin/python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); print("p50 %s ms, p99 %s ms" % (f["p50_ms"], f["p99_ms"]))' "$D/fanout.json")" "-" "every event, in order"
                row "  ... connected / in order / complete" \
                        "$(/usr/bin/python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); print("%d / %d / %d (%d events each)" % (f["connected"], f["in_order"], f["complete"], f["events_each"]))' "$D/fanout.json")" \
                        "-" "all $SUBSCRIBERS"
                ;;
        *) die "unknown part '$part' (get events turn sse)" ;;
        esac
done
row "hull serve VmRSS idle" "$((idle_rss / 1024)) MB ($idle_rss kB)" "-" "<= 16 MB"
[ -n "${get_rss:-}" ] && row "hull serve VmRSS under the GET load (largest sampled)" "$((get_rss / 1024)) MB ($get_rss kB)" "-" "<= 27 MB"
[ -n "${sse_rss:-}" ] && row "hull serve VmRSS with $SUBSCRIBERS streams open" "$((sse_rss / 1024)) MB ($sse_rss kB)" "-" "-"
row "hull serve VmRSS, largest sampled in the run" "$((peak_rss / 1024)) MB ($peak_rss kB)" "-" "-"
hwm=$(mem VmHWM)
row "hull serve VmHWM (peak of the whole run)" "$((hwm / 1024)) MB ($hwm kB)" "-" "-"
printf '%s\n' "${rows[@]}"
[ -f "$D/fanout.json" ] && echo "# fan-out: $(cat "$D/fanout.json")"
[ -f "$D/turns.json" ] && echo "# a turn's events as the client's stream saw them (median ms after the POST): $(/usr/bin/python3 -c 'import json,sys; print(", ".join("%s %.2f" % (t, ms) for t, ms in json.load(open(sys.argv[1]))["timeline"]))' "$D/turns.json")"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
