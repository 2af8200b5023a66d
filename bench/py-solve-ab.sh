#!/usr/bin/env bash
# bench/py-solve-ab.sh: issue 25's cold solve, A/B, by hand (not a test): bench/py_solve.py's
# solve-cold row for each variant in turn (a fresh python3: `import hull`, one hull.solve that
# starts its embedded hull serve), a raw turn on a settled server after each round (the
# yardstick), interleaved so the machine's load falls on each alike; medians, and each variant's
# sorted times. A variant is NAME:HULL_BINARY:TREE, TREE a checkout with bench/py_solve.py and
# python/ (git archive REV bench python | tar -x -C DIR gives an older one).
#
#   bench/py-solve-ab.sh 25 main:/tmp/main/build/hull:/tmp/main after:$PWD/build/hull:$PWD
# Environment: BUILD (default build: the yardstick's and the mock model's hull).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: py-solve-ab.sh ROUNDS NAME:HULL:TREE..." >&2; exit 2; }
N=$1
shift
H=$top/${BUILD:-build}/hull
[ -x "$H" ] || { echo "py-solve-ab.sh: build hull first ($H)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/hull-bench-pyab.XXXXXX)
chmod 0711 "$tmp"
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
echo '{"then": "repeat", "steps": [{"text": "ok", "usage": {"input_tokens": 10, "output_tokens": 1}}]}' >"$tmp/script.json"
"$H" mock-model --script "$tmp/script.json" --listen 127.0.0.1:0 --log-level error >"$tmp/mock.out" &
for _ in $(seq 100); do grep -q listening "$tmp/mock.out" && break; sleep 0.05; done
export HULL_PROVIDER=anthropic HULL_BASE_URL=$(sed -n 's/^listening on //p' "$tmp/mock.out") ANTHROPIC_API_KEY=sk-mock
unset HULL_SERVER HULL_API_KEY HULL_MODEL
mkdir -m 0711 "$tmp/home"
KEY=bench_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
HULL_HOME=$tmp/home HULL_SERVE_KEY=$KEY "$H" serve --listen 127.0.0.1:0 --socket "$tmp/s.sock" --work-dir "$tmp" \
        --log-level warn >"$tmp/serve.log" 2>&1 &
for _ in $(seq 200); do [ -S "$tmp/s.sock" ] && break; sleep 0.05; done
[ -S "$tmp/s.sock" ] || { echo "py-solve-ab.sh: hull serve did not start: $(tail -3 "$tmp/serve.log")" >&2; exit 1; }
echo "# py-solve-ab: $(date -u +%FT%TZ), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$top/bench/py_solve.py" raw "$tmp/s.sock" "$KEY" 3 >/dev/null # the yardstick settled
for _ in $(seq "$N"); do
        for v in "$@"; do
                IFS=: read -r name bin tree <<<"$v"
                HULL_BIN=$bin /usr/bin/python3 "$tree/bench/py_solve.py" solve-cold >>"$tmp/cold.$name"
        done
        /usr/bin/python3 "$top/bench/py_solve.py" raw "$tmp/s.sock" "$KEY" 1 >>"$tmp/raw"
done
med() { sort -n | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }
raw=$(awk '{print $1}' "$tmp/raw" | med)
echo "raw $raw ms (n=$(wc -l <"$tmp/raw"))"
for v in "$@"; do
        IFS=: read -r name _ _ <<<"$v"
        f=$tmp/cold.$name
        awk -v n="$name" -v c="$(awk '{print $1}' "$f" | med)" -v r="$raw" -v i="$(awk '{print $2}' "$f" | med)" \
                -v s="$(awk '{print $3}' "$f" | med)" \
                'BEGIN {printf "%-10s cold %7.2f ms (import %5.2f, start %6.2f): overhead %6.2f ms\n", n, c, i, s, c - r}'
        echo "  sorted: $(awk '{print $1}' "$f" | sort -n | tr '\n' ' ')"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
