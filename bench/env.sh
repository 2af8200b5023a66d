#!/usr/bin/env bash
# bench/env.sh: what an environment's layer costs a sandbox (issue 13), run by hand (not a test).
# An environment with one Debian package and one npm package is built once (hull env build, in a
# private $HULL_HOME), then, in ROUNDS rounds alternating which goes first:
#   exec:    `hull exec [--env bench] -- sh -c true`: a fresh container sandbox's start, its command
#            and its end, with the layer bound at /env or without (RUNS each per round);
#   session: `hull run [--env bench]` against hull mock-model with one bash tool call: the session's
#            sandbox starts and its first call runs (SESSIONS each per round; the whole run timed).
# The statistics are over all runs: median and p95 (nearest rank) in ms; ratio = with / without
# (target <= 1.1). The output is also written to $BUILD/bench-env.log. See docs/BENCHMARKS.md.
#
#   bench/env.sh                    # 3 rounds: 100 execs and 10 sessions each way per round
#   RUNS=300 ROUNDS=5 bench/env.sh
#
# Environment: BUILD (default build), RUNS (100), SESSIONS (10), ROUNDS (3), APT (the first of
# hello, jq, tree the host lacks), NPM (is-number@7.0.0).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
RUNS=${RUNS:-100}
SESSIONS=${SESSIONS:-10}
ROUNDS=${ROUNDS:-3}
NPM=${NPM:-is-number@7.0.0}
HULL=$top/$BUILD/hull
[ -x "$HULL" ] || { echo "env.sh: build hull first (./build.sh build)" >&2; exit 1; }
if [ -z "${APT:-}" ]; then
        for p in hello jq tree; do
                if ! dpkg -s "$p" >/dev/null 2>&1; then APT=$p; break; fi
        done
fi
[ -n "${APT:-}" ] || { echo "env.sh: every candidate package is installed here: set APT" >&2; exit 1; }

tmp=$(mktemp -d /tmp/hull-bench-env.XXXXXX)
chmod 0711 "$tmp"
mock_pid=
cleanup() {
        [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null && wait "$mock_pid" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
export HULL_HOME=$tmp/home
mkdir -m 0711 "$HULL_HOME"
"$HULL" env create bench --apt "$APT" --npm "$NPM" >/dev/null
"$HULL" env build bench >"$tmp/build.out" 2>&1 || { cat "$tmp/build.out" >&2; exit 1; }

script='{"steps":[{"tool_calls":[{"name":"bash","input":{"command":"echo hi"}}]},{"text":"done"},
 {"tool_calls":[{"name":"bash","input":{"command":"echo hi"}}]},{"text":"done"}]}'
printf '%s' "$script" >"$tmp/script.json"

now_us() { echo $(($(date +%s%N) / 1000)); }
# time_exec FILE [ARGS...]: RUNS sandboxes, one duration (us) a line appended to FILE.
time_exec() {
        local f=$1 i t0
        shift
        for i in $(seq 1 "$RUNS"); do
                t0=$(now_us)
                "$HULL" exec "$@" -- sh -c true >/dev/null
                echo $(($(now_us) - t0)) >>"$f"
        done
}
time_session() {
        local f=$1 i t0 murl
        shift
        for i in $(seq 1 "$SESSIONS"); do
                : >"$tmp/mock.out"
                "$HULL" mock-model --script "$tmp/script.json" --listen 127.0.0.1:0 --log-level error \
                        >"$tmp/mock.out" 2>/dev/null &
                mock_pid=$!
                murl=
                while [ -z "$murl" ]; do
                        murl=$(head -1 "$tmp/mock.out" 2>/dev/null | sed -n 's|^listening on \(http://127\.0\.0\.1:[0-9]*\)$|\1|p' || true)
                        sleep 0.02
                done
                t0=$(now_us)
                HULL_PROVIDER=anthropic HULL_BASE_URL=$murl HULL_API_KEY=k HULL_MODEL=mock-model \
                        "$HULL" run "$@" "say hi" >/dev/null 2>&1 </dev/null
                echo $(($(now_us) - t0)) >>"$f"
                kill "$mock_pid"
                wait "$mock_pid" 2>/dev/null || true
                mock_pid=
        done
}
for r in $(seq 1 "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then
                time_exec "$tmp/exec-with" --env bench
                time_exec "$tmp/exec-without"
                time_session "$tmp/sess-with" --env bench
                time_session "$tmp/sess-without"
        else
                time_exec "$tmp/exec-without"
                time_exec "$tmp/exec-with" --env bench
                time_session "$tmp/sess-without"
                time_session "$tmp/sess-with" --env bench
        fi
done

/usr/bin/python3 - "$tmp" "$APT" "$NPM" <<'PYEOF' | tee "$BUILD/bench-env.log"
import sys
tmp, apt, npm = sys.argv[1:4]
def stats(name):
    v = sorted(int(l) for l in open(f"{tmp}/{name}") if l.strip())
    return len(v), v[len(v) // 2] / 1000, v[min(len(v) - 1, int(len(v) * 0.95))] / 1000
print(f"layer: apt {apt}, npm {npm}")
for what, label in (("exec", "hull exec -- sh -c true"), ("sess", "hull run, one bash call")):
    nw, mw, pw = stats(f"{what}-with")
    nn, mn, pn = stats(f"{what}-without")
    print(f"{label:26s} with layer: n={nw} median {mw:.1f} ms p95 {pw:.1f} ms | without: n={nn} median {mn:.1f} ms p95 {pn:.1f} ms | ratio {mw / mn:.3f}")
PYEOF
