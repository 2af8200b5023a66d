#!/usr/bin/env bash
# test-deployments-sdk.sh: hull serve's scheduled deployments (issue 23) driven by the official
# `@anthropic-ai/sdk` (deployments.test.js against a real `hull serve` whose model is `hull
# mock-model`; the SDK installed by npm-deps.sh): every route, hostile input, and on the test clock a
# schedule running twice, a failed run pausing, a missing agent archiving, a kill -9 doubling nothing;
# once with hull's state in SQLite, once in PostgreSQL (HULL_DB: a throwaway cluster, tests/lib-pg.sh)
# when it is installed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-pg.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "deployments /v1 conformance with the official SDK" || exit 0
rc=0
TMPDIR=$TEST_TMP HULL=$HULL timeout 300 node "$conformance_dir/deployments.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "deployments conformance" "deployments.test.js did not finish in 300 s"
[ "$st" -eq 0 ] || rc=1
why=$(pg_missing)
if [ -n "$why" ]; then
        skip "deployments on PostgreSQL" "$why"
elif ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "deployments on PostgreSQL" "the cluster did not start: $(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        rc=1
else
        db=$(pg_createdb hull_deploy) || { fail "deployments on PostgreSQL" "createdb failed"; exit 1; }
        HULL_DB=$db TMPDIR=$TEST_TMP HULL=$HULL timeout 300 node "$conformance_dir/deployments.test.js" 2>&1 |
                sed 's/^\(not \)\{0,1\}ok - deployments\[/&postgresql, /'
        st=${PIPESTATUS[0]}
        [ "$st" -eq 124 ] && fail "deployments on PostgreSQL" "deployments.test.js did not finish in 300 s"
        [ "$st" -eq 0 ] || rc=1
fi
exit "$rc"
