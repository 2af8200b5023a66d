#!/usr/bin/env bash
# test-cma-memory.sh: memory stores on hull serve's /v1 (stores, memories, versions, redaction,
# stores attached to sessions and used by the agent's own tools) driven by the official
# `@anthropic-ai/sdk` from npm (cma-memory.test.js against a real `hull serve` whose model is
# `hull mock-model`; the SDK installed by npm-deps.sh): once with hull's state in SQLite, once in
# PostgreSQL (HULL_DB: a database of a throwaway cluster, tests/lib-pg.sh) when it is installed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-pg.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "CMA /v1 memory stores with the official SDK" || exit 0
rc=0
TMPDIR=$TEST_TMP HULL=$HULL timeout 600 node "$conformance_dir/cma-memory.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "cma memory stores" "cma-memory.test.js did not finish in 600 s"
[ "$st" -eq 0 ] || rc=1
why=$(pg_missing)
if [ -n "$why" ]; then
        skip "cma memory stores on PostgreSQL" "$why"
elif ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "cma memory stores on PostgreSQL" "the cluster did not start: $(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        rc=1
else
        db=$(pg_createdb hull_memory) || { fail "cma memory stores on PostgreSQL" "createdb failed"; exit 1; }
        # one database for every case (each checks only what it made)
        HULL_DB=$db TMPDIR=$TEST_TMP HULL=$HULL timeout 600 node "$conformance_dir/cma-memory.test.js" 2>&1 |
                sed 's/^\(not \)\{0,1\}ok - cma-memory\[/&postgresql, /'
        st=${PIPESTATUS[0]}
        [ "$st" -eq 124 ] && fail "cma memory stores on PostgreSQL" "cma-memory.test.js did not finish in 600 s"
        [ "$st" -eq 0 ] || rc=1
fi
exit "$rc"
