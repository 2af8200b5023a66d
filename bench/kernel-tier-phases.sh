#!/usr/bin/env bash
# bench/kernel-tier-phases.sh: where the kernel tier's start goes, phase by phase, from runsc's own
# --debug logs (run by hand, not a test). Interleaved round by round (bench-exec), each running
# /bin/true with runsc's debug log on (which makes every run slower; compare the rows, not the
# absolute times):
#   - yardstick: `runsc run` of a bundle with hull's config.json and root (as bench/kernel-tier.sh);
#   - launcher: the same bundle, runsc started as hull starts it (its own process group, a clean
#     environment, stdout and stderr pipes, memory and pids cgroups with hull's limits) by a
#     60-line C launcher (bench/runsc-launch.c) instead of hull: what hull's way of starting
#     runsc costs, without hull's own code;
#   - hull: `hull exec --tier kernel -- /bin/true` (its own bundle), and with HULL_BEFORE set, an
#     older binary's.
# Then bench/runsc_phases.py prints each milestone's median time from runsc's start, per row.
#
#   ROUNDS=25 BUILD=build-dev bench/kernel-tier-phases.sh
# Needs root and runsc (Debian's 0.0~20221219.0 logs the milestones runsc_phases.py looks for).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-25}
RUNSC=${HULL_RUNSC:-$(command -v runsc || echo /usr/bin/runsc)}
[ -x "$RUNSC" ] || { echo "kernel-tier-phases.sh: runsc is not installed" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "kernel-tier-phases.sh: needs root" >&2; exit 1; }

ninja -C "$BUILD" >/dev/null
cc -O2 -Wall -Wextra -o "$BUILD/bench-exec" bench/bench-exec.c -lm
cc -O2 -Wall -Wextra -o "$BUILD/runsc-launch" bench/runsc-launch.c
D=$(mktemp -d /tmp/hull-bench-phases.XXXXXX)
trap 'rm -rf "$D"' EXIT
HULL="$top/$BUILD/hull"

# The yardstick's bundle: hull's own, caught while a run sleeps, with /bin/true as its process.
. "$top/bench/kernel-bundle.sh"
kernel_bundle "$HULL" "$D" kernel-tier-phases.sh || exit 1

# one wrapper per row, its log directory in its path (hull starts runsc with a clean environment)
rows=(yardstick launcher hull)
[ -n "${HULL_BEFORE:-}" ] && rows+=(before)
for r in "${rows[@]}"; do
        mkdir -p "$D/logs/$r" "$D/w/$r"
        printf '#!/bin/sh\nexec %s --debug --debug-log=%s/ "$@"\n' "$RUNSC" "$D/logs/$r" >"$D/w/$r/runsc"
        chmod +x "$D/w/$r/runsc"
done
yard=(--root="$D/state" --network=none --ignore-cgroups --oci-seccomp run --bundle "$D/bundle")

echo "# bench/kernel-tier-phases.sh: $(date -u +%FT%TZ), $(nproc) CPUs, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# runsc: $("$RUNSC" --version | head -n 1); rounds: $ROUNDS interleaved, runsc --debug on"
printf '%s\0' \
        "yardstick" "$D/w/yardstick/runsc" "${yard[@]}" hull-phases-y "::" \
        "launcher" "$top/$BUILD/runsc-launch" "$D/w/launcher/runsc" "${yard[@]}" hull-phases-l "::" \
        "hull" env HULL_RUNSC="$D/w/hull/runsc" "$HULL" exec --tier kernel -- /bin/true \
        ${HULL_BEFORE:+"::" "before" env HULL_RUNSC="$D/w/before/runsc" "$HULL_BEFORE" exec --tier kernel -- /bin/true} |
        xargs -0 "$BUILD/bench-exec" -r "$ROUNDS" -w 2 -b yardstick -- | grep -E '^\||wall '
echo
/usr/bin/python3 bench/runsc_phases.py "${rows[@]/#/$D/logs/}"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
