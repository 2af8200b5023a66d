#!/usr/bin/env bash
# test-store-pg.sh TEST-STORE...: the store's backend-neutral tests (tests/unit/test-store*.c)
# against a real PostgreSQL: one throwaway cluster (tests/lib-pg.sh: initdb in a temporary
# directory, a unix socket only, stopped and removed at exit) and new databases in it for each
# binary, named to it by HULL_TEST_PG_URL. Without PostgreSQL installed: a skip line, never ok.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib-pg.sh"
[ $# -ge 1 ] || { echo "usage: test-store-pg.sh PATH-TO-test-store..." >&2; exit 2; }
why=$(pg_missing)
if [ -n "$why" ]; then
        printf 'skip - store on PostgreSQL: %s\n' "$why"
        exit 77
fi
if ! pg_cluster_start 2>"${TMPDIR:-/tmp}/hull-pg-start.$$"; then
        printf 'not ok - store on PostgreSQL: the cluster did not start: %s\n' "$(tr '\n' ' ' <"${TMPDIR:-/tmp}/hull-pg-start.$$")"
        rm -f "${TMPDIR:-/tmp}/hull-pg-start.$$"
        exit 1
fi
rm -f "${TMPDIR:-/tmp}/hull-pg-start.$$"
rc=0 i=0
for bin in "$@"; do
        i=$((i + 1))
        url=$(pg_createdb "hull_test_$i") && empty=$(pg_createdb "hull_copy_$i") ||
                { printf 'not ok - store on PostgreSQL: createdb failed\n'; exit 1; }
        echo "# $(basename "$bin") on PostgreSQL"
        HULL_TEST_PG_URL=$url HULL_TEST_PG_EMPTY_URL=$empty "$bin" || rc=1
done
exit $rc
