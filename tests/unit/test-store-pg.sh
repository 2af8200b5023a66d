#!/usr/bin/env bash
# test-store-pg.sh TEST-STORE: the store's backend-neutral tests (tests/unit/test-store.c) against
# a real PostgreSQL: a throwaway cluster (tests/lib-pg.sh: initdb in a temporary directory, a unix
# socket only, stopped and removed at exit) and a new database in it, named to test-store by
# HULL_TEST_PG_URL. Without PostgreSQL installed: a skip line, never ok.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib-pg.sh"
bin=${1:?usage: test-store-pg.sh PATH-TO-test-store}
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
url=$(pg_createdb hull_test) && empty=$(pg_createdb hull_copy) ||
        { printf 'not ok - store on PostgreSQL: createdb failed\n'; exit 1; }
HULL_TEST_PG_URL=$url HULL_TEST_PG_EMPTY_URL=$empty "$bin"
