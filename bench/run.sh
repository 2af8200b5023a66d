#!/usr/bin/env bash
# bench/run.sh: hull's start-up benchmark, run by hand (not a test). Builds hull and the driver,
# then times `hull exec` against bubblewrap with an equivalent isolation set (bench/commands.sh)
# and against `unshare` with all namespaces, interleaved, for /bin/true and for
# /usr/bin/python3 -c pass; then lone runs (a 100 ms pause before each, as a single `hull exec`
# from an idle caller sees it); then launcher memory (PSS) while each supervises `sleep 2`.
#
#   bench/run.sh            # full run: 300 rounds of true, 60 of python3, 60 lone, 3 memory starts
#   ROUNDS_TRUE=50 ROUNDS_PY=10 PARTS="true mem" bench/run.sh
#
# Environment: ROUNDS_TRUE, ROUNDS_PY, ROUNDS_LONE, WARMUP (default 10), MEM_REPS (default 3),
# SEED (default: from the clock), BUILD (default build), PARTS (default "true python lone mem"),
# SESSIONS (default 1; 0 skips bench/sessions.sh, the `hull serve` sessions benchmark, run last),
# BASE_HULL (another hull binary, e.g. one built from an older commit: its rows run beside the
# current ones, "before" and "after" in one interleaved run).
# The output is also written to $BUILD/bench-exec.log. Needs root (cgroups). See
# docs/BENCHMARKS.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
ROUNDS_TRUE=${ROUNDS_TRUE:-300}
ROUNDS_PY=${ROUNDS_PY:-60}
ROUNDS_LONE=${ROUNDS_LONE:-60}
WARMUP=${WARMUP:-10}
MEM_REPS=${MEM_REPS:-3}
PARTS=${PARTS:-"true python lone mem"}
seed_args=()
[ -n "${SEED:-}" ] && seed_args=(-s "$SEED")

for tool in bwrap unshare ninja cc; do
        command -v "$tool" >/dev/null || { echo "run.sh: $tool is not installed" >&2; exit 1; }
done

ninja -C "$BUILD" >/dev/null
cc -O2 -Wall -Wextra -o "$BUILD/bench-exec" bench/bench-exec.c -lm
# hull's own seccomp program, for bwrap --seccomp (the same filter hull installs).
cc -O2 -Wall -D_GNU_SOURCE -Isrc/basic -Isrc/sandbox -o "$BUILD/seccomp-bpf" bench/seccomp-bpf.c \
        "$BUILD/libsandbox.a" "$BUILD/libbasic.a" -lcap

DRIVER="$top/$BUILD/bench-exec"

. bench/commands.sh
# A private copy of hull: a rebuild during the run must not swap the binary under the driver.
cp "$BUILD/hull" "$D/hull"
HULL="$D/hull"
if [ -n "${BASE_HULL:-}" ]; then
        cp "$BASE_HULL" "$D/hull-base"
fi

# Groups for the driver: LABEL [--fd=N:PATH]... ARGV..., separated by "::".
rows() { # $1: short name of the payload; rest: the payload's argv. hull, hull --no-cgroup, bwrap.
        local name=$1
        shift
        printf '%s\0' "hull $name" "$HULL" exec -- "$@" "::" \
                "hull --no-cgroup $name" "$HULL" exec --no-cgroup -- "$@" "::"
        if [ -n "${BASE_HULL:-}" ]; then
                printf '%s\0' "base hull $name" "$D/hull-base" exec -- "$@" "::" \
                        "base hull --no-cgroup $name" "$D/hull-base" exec --no-cgroup -- "$@" "::"
        fi
        printf '%s\0' "bwrap $name" "${BWRAP_FDS[@]}" "${BWRAP[@]}" "$@"
}
unshare_row() {
        local name=$1
        shift
        printf '%s\0' "::" "unshare $name" "${UNSHARE[@]}" "$@"
}

exec > >(tee "$BUILD/bench-exec.log") 2>&1

echo "# hull start-up benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# host: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), kernel $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")"
echo "# hull $(git describe --always --dirty 2>/dev/null) (binary sha256 $(sha256sum "$HULL" | cut -c1-12), copied to $HULL), $(bwrap --version), $(unshare --version | head -1)"
[ -n "${BASE_HULL:-}" ] && echo "# base hull: $BASE_HULL (binary sha256 $(sha256sum "$BASE_HULL" | cut -c1-12))"
echo "# cgroups: $(grep -E '^[0-9]+:(memory|pids):' /proc/self/cgroup | tr '\n' ' ')"
echo

if [[ " $PARTS " == *" true "* ]]; then
        mapfile -d '' g < <(rows /bin/true /bin/true; unshare_row /bin/true /bin/true
                printf '%s\0' "::" "plain /bin/true (no sandbox)" /bin/true)
        "$DRIVER" -r "$ROUNDS_TRUE" -w "$WARMUP" "${seed_args[@]}" -b "bwrap /bin/true" -- "${g[@]}"
        echo
fi
if [[ " $PARTS " == *" python "* ]]; then
        mapfile -d '' g < <(rows "python3 -c pass" /usr/bin/python3 -c pass; unshare_row "python3 -c pass" /usr/bin/python3 -c pass)
        "$DRIVER" -r "$ROUNDS_PY" -w "$WARMUP" "${seed_args[@]}" -b "bwrap python3 -c pass" -- "${g[@]}"
        echo
fi
if [[ " $PARTS " == *" lone "* ]]; then
        # No unshare row: it is only the namespace floor, and the pauses make this part slow.
        mapfile -d '' g < <(rows /bin/true /bin/true)
        "$DRIVER" -r "$ROUNDS_LONE" -w 3 --gap 100 "${seed_args[@]}" -b "bwrap /bin/true" -- "${g[@]}"
        echo
fi
if [[ " $PARTS " == *" mem "* ]]; then
        mapfile -d '' g < <(rows "sleep 2" /bin/sleep 2; unshare_row "sleep 2" /bin/sleep 2)
        "$DRIVER" --mem -r "$MEM_REPS" --settle 1.0 --payload sleep -- "${g[@]}"
fi
if [ "${SESSIONS:-1}" != 0 ]; then
        echo
        BUILD="$BUILD" bench/sessions.sh
fi
