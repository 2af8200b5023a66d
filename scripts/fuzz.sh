#!/usr/bin/env bash
# fuzz.sh [SECONDS]: build the libFuzzer targets with clang and run each for a while over a copy
# of its corpus; new crashes land in fuzz/ as crash-* files to be added to the corpus.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
cd "$top"
[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-fuzz
for t in build-fuzz/fuzz-*; do
        case "$t" in *-replay|*.p) continue ;; esac
        [ -x "$t" ] || continue
        name=$(basename "$t")
        work=$(mktemp -d)
        cp -r "fuzz/corpus/${name#fuzz-}/." "$work/"
        echo "## $name for ${secs}s"
        "$t" -max_total_time="$secs" -artifact_prefix="fuzz/crash-$name-" "$work"
        rm -rf "$work"
done
