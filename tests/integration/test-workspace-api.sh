# test-workspace-api.sh: hull's /hull.v1.Workspace routes (Exec, Read, Write, Edit, Glob, Grep,
# Persist, Hydrate) and /hull.v1.Sessions/List on an open session of hull serve, driven over real
# HTTP by sessions_client.py: Exec's persistent cwd and environment, binary reads with offset and
# limit, Edit's uniqueness, path escapes and planted symbolic links refused with nothing changed,
# crafted tar archives refused, a catastrophic regex stopped by its budget.
source "$(dirname "$0")/../lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
check "sessions_client.py compiles" "$PY" -m py_compile "$here/sessions_client.py" "$here/sessions_common.py" \
        "$here/sessions_workspace.py"
if ! "$HULL" exec --timeout 10 -- true 2>"$TEST_TMP/err"; then
        skip "hull serve workspace API" "the sandbox cannot run here: $(head -c 200 "$TEST_TMP/err")"
        exit 77
fi

WORK=$TEST_TMP/work
mkdir -p "$WORK"
LOG=$TEST_TMP/serve.log
if ! start_server "$LOG" --work-dir "$WORK"; then
        fail "hull serve starts" "$(head -c 400 "$LOG")"
        exit 1
fi
pass "hull serve starts"

timeout 400 "$PY" "$here/sessions_client.py" workspace "$URL" "$WORK"; rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "the workspace client" "exited with status $rc (timeout or crash)"
check "no error was logged" sh -c "! grep -q 'level=error' '$LOG'"
grep 'level=error' "$LOG" | head -5 | cut -c1-400 | sed 's/^/# /'
check "nothing escaped into the work root's parent" sh -c "[ -z \"\$(find '$TEST_TMP' -maxdepth 1 -name 'hull-escape-*')\" ]"

stop_server; rc=$?
check "hull serve exits 0 on SIGTERM" test "$rc" -eq 0
check "the work directory is emptied at shutdown" sh -c "[ -z \"\$(ls -A '$WORK')\" ]"
exit 0
