#!/usr/bin/env bash
# bench/agent.sh: the agent's benchmarks (issue 9), run by hand (not a test), side by side in one
# run. Builds hull and the driver (bench/bench-agent.c, `ninja -C build bench-agent`), starts two
# `hull mock-model`s on loopback (killed at the end), then:
#   1. agent overhead per turn, model latency excluded: a real session and model client against
#      the first mock (each turn = a run_python call of `x = 1`, then a text), beside the same
#      code as a direct ss_cell;
#   2. `hull run x` from spawn to its first model request (the second mock's --record
#      received_at_us), beside `hull exec /bin/true`;
#   3. a 50 MB JSON tool result through the spill middleware, beside ss_handles_spill directly
#      (each in a process of its own, for its peak RSS).
#
#   bench/agent.sh                               # 200 turn rounds, 30 starts, 50 MB: ~2 minutes
#   TURN_ROUNDS=50 START_ROUNDS=10 SPILL_MB=10 bench/agent.sh
#
# Environment: BUILD (default build), TURN_ROUNDS (200), TURN_WARMUP (20), START_ROUNDS (30),
# START_WARMUP (3), SPILL_MB (50), SPILL_MODES ("value bytes text direct"), PARTS (default "turn start spill").
# The output is also written to $BUILD/bench-agent.log. Needs root (session sandboxes). See
# docs/BENCHMARKS.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
TURN_ROUNDS=${TURN_ROUNDS:-200}
TURN_WARMUP=${TURN_WARMUP:-20}
START_ROUNDS=${START_ROUNDS:-30}
START_WARMUP=${START_WARMUP:-3}
SPILL_MB=${SPILL_MB:-50}
SPILL_MODES=${SPILL_MODES:-value bytes text direct}
PARTS=${PARTS:-"turn start spill"}

for tool in ninja /usr/bin/python3; do
        command -v "$tool" >/dev/null || { echo "agent.sh: $tool is not installed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "agent.sh: needs root (session sandboxes)" >&2; exit 1; }
turns=$((TURN_ROUNDS + TURN_WARMUP))
[ "$turns" -le 2000 ] || { echo "agent.sh: at most 2000 turns (the mock's script holds 4096 steps)" >&2; exit 1; }

ninja -C "$BUILD" hull bench-agent >/dev/null

D=$(mktemp -d /tmp/hull-bench-agent-XXXXXX)
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
# Private copies: a rebuild during the run must not swap the binaries.
cp "$BUILD/hull" "$D/hull"
cp "$BUILD/bench-agent" "$D/bench-agent"
HULL="$D/hull"
DRIVER="$D/bench-agent"

# start_mock NAME SCRIPT_JSON: a mock on 127.0.0.1:0 recording to $D/NAME.jsonl; sets $url.
start_mock() {
        printf '%s\n' "$2" >"$D/$1.json"
        "$HULL" mock-model --script "$D/$1.json" --listen 127.0.0.1:0 --record "$D/$1.jsonl" --log-level error \
                >"$D/$1.out" 2>"$D/$1.err" &
        pids+=($!)
        url=
        for _ in $(seq 100); do
                url=$(sed -n 's/^listening on //p' "$D/$1.out")
                [ -n "$url" ] && return 0
                sleep 0.05
        done
        echo "agent.sh: mock-model $1 did not start: $(cat "$D/$1.err")" >&2
        exit 1
}

exec > >(tee "$BUILD/bench-agent.log") 2>&1
echo "# hull agent benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# host: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), kernel $(uname -r); hull $(git describe --always --dirty 2>/dev/null) (copied to $HULL)"
echo

if [[ " $PARTS " == *" turn "* ]]; then
        # one run_python call, then a text, for every turn (the mock's steps are taken in order)
        steps=$(/usr/bin/python3 -c '
import json, sys
n = int(sys.argv[1])
call = {"tool_calls": [{"name": "run_python", "input": {"code": "x = 1"}}]}
print(json.dumps({"then": "error", "steps": [call, {"text": "done"}] * n}))' "$turns")
        start_mock turn "$steps"
        "$DRIVER" turn --base-url "$url/v1" --record "$D/turn.jsonl" -r "$TURN_ROUNDS" -w "$TURN_WARMUP"
fi
if [[ " $PARTS " == *" start "* ]]; then
        start_mock start '{"steps": [{"text": "ok"}]}'
        mkdir -p "$D/home" "$D/cwd"
        # the driver spawns `hull run x` and `hull exec /bin/true` from an empty directory (no .env)
        (cd "$D/cwd" && HULL_HOME="$D/home" HULL_PROVIDER=openai HULL_BASE_URL="$url/v1" HULL_API_KEY=k HULL_MODEL=m \
                "$DRIVER" start --hull "$HULL" --record "$D/start.jsonl" -r "$START_ROUNDS" -w "$START_WARMUP")
fi
if [[ " $PARTS " == *" spill "* ]]; then
        # each mode in its own process; `cp` of the same bytes timed beside it by the driver
        for m in $SPILL_MODES; do
                "$DRIVER" spill --mb "$SPILL_MB" --mode "$m"
        done
fi
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
