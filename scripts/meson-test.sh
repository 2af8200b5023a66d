#!/usr/bin/env bash
# meson-test.sh CMD [ARG...]: run one of hull's tests for `meson test` (each test is registered
# through this, so `meson test -C build NAME` runs it alone). Prints the test's own lines and
# exits as meson reads it: 1 when a line says "not ok" or the test failed without saying so,
# 77 (skipped) when nothing passed and something was skipped, 0 otherwise.
set -u
# A test that names no HULL_HOME gets a fresh one of its own: nothing a test does may depend on,
# or change, the machine's own state directory (/var/lib/hull as root), which another hull may
# have made at another schema version.
if [ -z "${HULL_HOME:-}" ]; then
        test_home=$(mktemp -d "${TMPDIR:-/tmp}/hull-test-home.XXXXXX") || exit 1
        trap 'rm -rf "$test_home"' EXIT
        chmod 0711 "$test_home"
        export HULL_HOME=$test_home
fi
# Nor the machine's database: HULL_DB (hull serve's default database, maybe a PostgreSQL
# server's) is the test's own to set.
unset HULL_DB
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
grep -qE '^not ok ' <<<"$out" && exit 1
[ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && exit 1
if ! grep -qE '^ok ' <<<"$out" && { [ "$rc" -eq 77 ] || grep -qE '^skip ' <<<"$out"; }; then
        exit 77
fi
exit 0
