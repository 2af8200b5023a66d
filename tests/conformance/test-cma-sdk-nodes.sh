#!/usr/bin/env bash
# test-cma-sdk-nodes.sh: the official `@anthropic-ai/sdk` (the latest 1.x) conformance suite
# (cma.test.js) against three `hull serve --node-id` on one PostgreSQL (a throwaway cluster,
# tests/lib-pg.sh, a new database per case), the client's calls spread over the nodes: a session
# created on node 1, its events sent on node 2, its streams read from node 3, the rest round-robin;
# after each case `hull db check` finds every session's log gap-free.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-pg.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "CMA /v1 conformance on three nodes" || exit 0
why=$(pg_missing)
if [ -n "$why" ]; then
        skip "CMA /v1 conformance on three nodes" "$why"
        exit 77
fi
if ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "CMA /v1 conformance on three nodes: the cluster starts" "$(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        exit 1
fi
# The sanitizer build runs a sample (CMA_SAMPLE=1, set by scripts/check.sh): a turn spread over
# the nodes, a stream resumed on another node, an interrupt from another node.
if [ -n "${CMA_SAMPLE:-}" ] && [ -z "${CMA_ONLY:-}" ]; then
        export CMA_ONLY='^(§7|Last-Event-ID|user\.interrupt)'
        echo "# sampled (CMA_SAMPLE): only the cases matching $CMA_ONLY"
fi
start=$(date +%s.%N)
# TMPDIR: the nodes' HULL_HOMEs and logs under this test's own directory (removed at exit)
TMPDIR=$TEST_TMP HULL=$HULL CMA_SDK=@anthropic-ai/sdk CMA_PG_HOST=$PG_HOST PG_BIN=$PG_BIN \
        timeout 300 node "$conformance_dir/cma.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "cma conformance on three nodes" "cma.test.js did not finish in 300 s"
printf '# test-cma-sdk-nodes: %.1f s\n' "$(echo "$(date +%s.%N) - $start" | bc)"
exit "$st"
