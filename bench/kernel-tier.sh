#!/usr/bin/env bash
# bench/kernel-tier.sh: what the kernel tier (gVisor) costs, run by hand (not a test). Interleaved,
# round by round (bench-exec), for /bin/true:
#   - `hull exec --tier kernel -- /bin/true` (hull writes the bundle, makes its cgroup, runs
#     `runsc run`, tears everything down), and the same with --no-cgroup;
#   - the yardstick: `runsc run` of a bundle with the same config.json and root (copied from one
#     of hull's own bundles, so the binds, the seccomp list and the platform are the same), with
#     runsc's own state directory, nothing else: gVisor's own start;
#   - `hull exec -- /bin/true` (the container tier), to show what the kernel tier costs.
# Target: hull's kernel tier <= 1.0x the yardstick.
#
#   bench/kernel-tier.sh          # ROUNDS=20 WARMUP=2
#   HULL_BEFORE=/path/to/older/hull bench/kernel-tier.sh   # one more row: that binary's kernel tier
# Needs root and runsc. The output is also written to $BUILD/bench-kernel-tier.log. See
# docs/BENCHMARKS.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-20}
WARMUP=${WARMUP:-2}
RUNSC=${HULL_RUNSC:-$(command -v runsc || echo /usr/bin/runsc)}
[ -x "$RUNSC" ] || { echo "kernel-tier.sh: runsc is not installed" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "kernel-tier.sh: needs root" >&2; exit 1; }

ninja -C "$BUILD" >/dev/null
cc -O2 -Wall -Wextra -o "$BUILD/bench-exec" bench/bench-exec.c -lm
DRIVER="$top/$BUILD/bench-exec"
D=$(mktemp -d /tmp/hull-bench-kernel.XXXXXX)
trap 'rm -rf "$D"' EXIT
cp "$BUILD/hull" "$D/hull"
HULL="$D/hull"

# The yardstick's bundle: hull's own, caught while a run sleeps, with /bin/true as its process.
. "$top/bench/kernel-bundle.sh"
kernel_bundle "$HULL" "$D" kernel-tier.sh || exit 1
plat_args=()
[ -n "${HULL_RUNSC_PLATFORM:-}" ] && plat_args=(--platform="$HULL_RUNSC_PLATFORM")

exec > >(tee "$BUILD/bench-kernel-tier.log") 2>&1
echo "# bench/kernel-tier.sh: $(date -u +%FT%TZ), $(nproc) CPUs, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# runsc: $("$RUNSC" --version | head -n 1), platform ${HULL_RUNSC_PLATFORM:-the runsc default}"
echo "# rounds: $ROUNDS interleaved (warm-up $WARMUP)"
printf '%s\0' \
        "runsc run (yardstick)" "$RUNSC" --root="$D/state" --network=none --ignore-cgroups --oci-seccomp \
        "${plat_args[@]}" run --bundle "$D/bundle" hull-bench-yardstick "::" \
        "hull exec --tier kernel" "$HULL" exec --tier kernel -- /bin/true "::" \
        "hull exec --tier kernel --no-cgroup" "$HULL" exec --tier kernel --no-cgroup -- /bin/true "::" \
        "hull exec (container)" "$HULL" exec -- /bin/true \
        ${HULL_BEFORE:+"::" "hull exec --tier kernel (HULL_BEFORE)" "$HULL_BEFORE" exec --tier kernel -- /bin/true} |
        xargs -0 "$DRIVER" -r "$ROUNDS" -w "$WARMUP" -b "runsc run (yardstick)" --
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
