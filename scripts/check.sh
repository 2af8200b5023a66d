#!/usr/bin/env bash
# check.sh BUILD ASAN_BUILD: the full suite on both builds; the last line is the combined count.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
p=0 f=0 s=0
first=$1
for b in "$@"; do
        echo "## suite on $b"
        # The sanitizer build samples the conformance suites' SDK matrix: the latest 1.x SDK only
        # (the first build runs every SDK version), the three-node suite's cases (CMA_SAMPLE) and
        # the nodes' load test (40 sessions, not 100).
        if [ "$b" = "$first" ]; then
                "$top/scripts/run-tests.sh" "$b" "$b"
        else
                # ... and runs its suites one at a time: two sanitized suites at once made LeakSanitizer's
                # exit check fail now and then ("encountered a fatal error") and slowed the
                # hostile queries past their time budget.
                CMA_SDKS=${CMA_SDKS:-@anthropic-ai/sdk} CMA_SAMPLE=1 NODES_LOAD=${NODES_LOAD:-40 3} \
                        HULL_TEST_JOBS=${HULL_TEST_JOBS_SANITIZED:-1} "$top/scripts/run-tests.sh" "$b" "$b"
        fi
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
