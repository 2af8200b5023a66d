#!/usr/bin/env bash
# bench/sessions.sh: issue 3's benchmarks of `hull serve` sessions, run by hand (not a test):
# time to the first result of a new session (pandas) against a cold bwrap python3, the cell round
# trip against a raw pipe, a single javascript Run against node -e, and 16 parallel clients. The
# work is bench/sessions.py (stdlib, /usr/bin/python3); this builds hull and the seccomp exporter
# and hands it bench/commands.sh's bwrap command line (the baseline of bench/run.sh).
#
#   bench/sessions.sh                       # full run, a few minutes
#   SESSIONS_ARGS="--parts 'first js' --first 10" bench/sessions.sh
#
# Environment: BUILD (default build), SESSIONS_ARGS (extra options of sessions.py, shell words).
# The output is also written to $BUILD/bench-sessions.log. See docs/BENCHMARKS.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
for tool in bwrap ninja cc /usr/bin/python3 /usr/bin/node; do
        command -v "$tool" >/dev/null || { echo "sessions.sh: $tool is not installed" >&2; exit 1; }
done

ninja -C "$BUILD" >/dev/null
cc -O2 -Wall -D_GNU_SOURCE -Isrc/basic -Isrc/sandbox -o "$BUILD/seccomp-bpf" bench/seccomp-bpf.c \
        "$BUILD/libsandbox.a" "$BUILD/libbasic.a" -lseccomp -lcap

. bench/commands.sh
# A private copy of hull: a rebuild during the run must not swap the binary under the daemon.
cp "$BUILD/hull" "$D/hull"

# The bwrap argv, NUL-separated, then an empty field, then "FD PATH" lines for the files bwrap
# reads on fds 10-14 (sessions.py opens them afresh for every spawn, as bench-exec does).
{
        printf '%s\0' "${BWRAP[@]}"
        printf '\0'
        for f in "${BWRAP_FDS[@]}"; do
                f=${f#--fd=}
                printf '%s %s\n' "${f%%:*}" "${f#*:}"
        done
} >"$D/bwrap-argv"

exec > >(tee "$BUILD/bench-sessions.log") 2>&1
echo "# hull sessions benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# host: $(nproc) CPUs, kernel $(uname -r); hull $(git describe --always --dirty 2>/dev/null) (copied to $D/hull); $(bwrap --version); node $(/usr/bin/node --version); $(/usr/bin/python3 --version)"
eval "extra=(${SESSIONS_ARGS:-})"
rc=0
/usr/bin/python3 bench/sessions.py --hull "$D/hull" --bwrap-argv "$D/bwrap-argv" "${extra[@]}" || rc=$?
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
