# test-workspace-api.sh: hull's /hull.v1.Workspace routes (Exec, Read, Write, Edit, Glob, Grep,
# Persist, Hydrate) and /hull.v1.Sessions/List on an open session of hull serve, driven over real
# HTTP by sessions_client.py: Exec's persistent cwd and environment, binary reads with offset and
# limit, Edit's uniqueness, path escapes and planted symbolic links refused with nothing changed,
# crafted tar archives refused, a catastrophic regex stopped by its budget.
source "$(dirname "$0")/../lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
        rm -rf "$TEST_TMP"
}
trap cleanup EXIT

check "sessions_client.py compiles" "$PY" -m py_compile "$here/sessions_client.py"
if ! "$HULL" exec --timeout 10 -- true 2>"$TEST_TMP/err"; then
        skip "hull serve workspace API" "the sandbox cannot run here: $(head -c 200 "$TEST_TMP/err")"
        exit 77
fi

WORK=$TEST_TMP/work
mkdir -p "$WORK"
LOG=$TEST_TMP/serve.log
"$HULL" serve --listen 127.0.0.1:0 --work-dir "$WORK" 2>"$LOG" &
SERVER_PID=$!
pids+=("$SERVER_PID")
for i in $(seq 1 200); do
        grep -q 'event=listening' "$LOG" && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
done
URL=http://$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$LOG" | head -1 | cut -d= -f2)
if [ "$URL" = "http://" ]; then
        fail "hull serve starts" "$(head -c 400 "$LOG")"
        exit 1
fi
pass "hull serve starts"

timeout 400 "$PY" "$here/sessions_client.py" workspace "$URL" "$WORK"; rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "the workspace client" "exited with status $rc (timeout or crash)"
check "no error was logged" sh -c "! grep -q 'level=error' '$LOG'"
grep 'level=error' "$LOG" | head -5 | cut -c1-400 | sed 's/^/# /'
check "nothing escaped into the work root's parent" sh -c "[ -z \"\$(find '$TEST_TMP' -maxdepth 1 -name 'hull-escape-*')\" ]"

kill -TERM "$SERVER_PID"
for i in $(seq 1 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$SERVER_PID" 2>/dev/null
wait "$SERVER_PID"; rc=$?
check "hull serve exits 0 on SIGTERM" test "$rc" -eq 0
check "the work directory is emptied at shutdown" sh -c "[ -z \"\$(ls -A '$WORK')\" ]"
exit 0
