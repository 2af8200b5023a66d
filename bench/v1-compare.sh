#!/usr/bin/env bash
# bench/v1-compare.sh OLD_BUILD NEW_BUILD: two builds of hull side by side in one run on bench/v1.sh's
# GET /v1/sessions/{id} (requests/s) and /v1 turn (median ms), each beside its own GET /healthz,
# alternating OLD, NEW, OLD, NEW... ROUNDS times (default 3), so a change of the machine's load
# falls on both. What issue 20 asks of a refactor: neither figure gets worse. Run by hand (never a
# test); the table also goes to NEW_BUILD/bench-v1-compare.log.
#
#   git worktree add /tmp/before COMMIT && meson setup /tmp/before/build && ninja -C /tmp/before/build hull
#   bench/v1-compare.sh /tmp/before/build build
#
# Environment: ROUNDS (3), DURATION (5s), TURN_ROUNDS (30).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: bench/v1-compare.sh OLD_BUILD NEW_BUILD" >&2; exit 2; }
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
ROUNDS=${ROUNDS:-3}
export DURATION=${DURATION:-5s} TURN_ROUNDS=${TURN_ROUNDS:-30} PARTS="get turn"
for b in "$old" "$new"; do
        [ -x "$b/hull" ] || { echo "v1-compare.sh: no hull in $b" >&2; exit 2; }
done
figures() { # LOG: "GET-rps healthz-rps turn-ms healthz-ms"
        awk -F'|' '
                /GET \/v1\/sessions\/\{id\} / { gsub(/[^0-9]/, " ", $3); split($3, a, " "); g = a[1];
                                                gsub(/[^0-9]/, " ", $4); split($4, b, " "); gh = b[1] }
                /turn: POST/ { split($3, a, " "); t = a[1]; split($4, b, " "); th = b[1] }
                END { print g, gh, t, th }' "$1"
}
declare -A sum
rows=()
for i in $(seq 1 "$ROUNDS"); do
        for side in old new; do
                b=${!side}
                BUILD=$b "$top/bench/v1.sh" >/dev/null 2>&1 || { echo "v1-compare.sh: bench/v1.sh failed on $b" >&2; exit 1; }
                read -r g gh t th < <(figures "$b/bench-v1.log")
                rows+=("$(printf '| %-5s | %5d | %10s req/s | %10s req/s | %8s ms | %8s ms |' "$side" "$i" "$g" "$gh" "$t" "$th")")
                sum[$side.g]=$(( ${sum[$side.g]:-0} + ${g:-0} ))
                sum[$side.t]=$(awk -v a="${sum[$side.t]:-0}" -v b="${t:-0}" 'BEGIN { print a + b }')
        done
done
{
        echo "# bench/v1-compare.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "# old: $old ($(git -C "$old/.." describe --always 2>/dev/null || echo '?')); new: $new ($(git -C "$top" describe --always --dirty 2>/dev/null))"
        echo "| build | round | GET /v1/sessions/{id} | beside: GET /healthz | a /v1 turn | beside: healthz |"
        echo "|---|---|---|---|---|---|"
        printf '%s\n' "${rows[@]}"
        awk -v og="${sum[old.g]}" -v ng="${sum[new.g]}" -v ot="${sum[old.t]}" -v nt="${sum[new.t]}" -v n="$ROUNDS" 'BEGIN {
                printf "mean: GET old %.0f, new %.0f req/s (new/old %.2fx); turn old %.2f, new %.2f ms (new/old %.2fx)\n",
                        og / n, ng / n, (og ? ng / og : 0), ot / n, nt / n, (ot ? nt / ot : 0) }'
} | tee "$new/bench-v1-compare.log"
