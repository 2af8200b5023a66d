#!/usr/bin/env bash
# check.sh BUILD ASAN_BUILD: the full suite on both builds; the last line is the combined count.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
p=0 f=0 s=0
for b in "$@"; do
        echo "## suite on $b"
        "$top/scripts/run-tests.sh" "$b" "$b"
        if [ -f "$b/test-counts" ]; then
                read -r bp bf bs < "$b/test-counts"
        else
                bp=0 bf=1 bs=0
        fi
        p=$((p + bp)) f=$((f + bf)) s=$((s + bs))
done
for b in "$@"; do # what failed, again, just above the count
        [ -s "$b/test-failures" ] && { echo "## what failed on $b"; sed 's/^/    /' "$b/test-failures"; }
done
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
