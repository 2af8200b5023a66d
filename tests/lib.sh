# tests/lib.sh: shared helpers for shell tests. Each result is one line the runner counts:
#   "ok - NAME", "not ok - NAME: why", "skip - NAME: why".
# The runner (scripts/run-tests.sh) sets HULL (the built binary) and BUILD (the build dir).
set -u
: "${HULL:?HULL must point at the built hull binary}"
: "${BUILD:?BUILD must point at the build directory}"

TEST_TMP=$(mktemp -d /tmp/hull-test.XXXXXX)
chmod 755 "$TEST_TMP"
trap 'rm -rf "$TEST_TMP"' EXIT

pass() { printf 'ok - %s\n' "$1"; }
fail() { printf 'not ok - %s: %s\n' "$1" "$2"; }
skip() { printf 'skip - %s: %s\n' "$1" "$2"; }

# check NAME CONDITION-COMMAND... : pass when the command succeeds.
check() {
        local name=$1; shift
        if "$@"; then pass "$name"; else fail "$name" "failed: $*"; fi
}

# json_get FILE KEY: print a top-level field of a one-object JSON file (uses Debian's python3).
json_get() {
        /usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if isinstance(v,(bool,type(None))) else v)' "$1" "$2"
}
