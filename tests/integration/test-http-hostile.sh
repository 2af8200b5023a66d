# test-http-hostile.sh: what a hostile local client found in hull serve (2,505 bad inputs), each
# checked again by hostile_client.py over loopback and the unix socket: heads trickled a byte a
# second (other clients still served; the head cut within its bound), a NUL in the path or a
# header (refused, never cut short), a chunked body over 16 MiB (answered and logged),
# Describe's body, half-closed clients (their calls run and are answered; only a real hang-up
# stops a call), snake_case field names, and uploads to a route hull does not serve (the whole
# body sent first, as SDKs do: the 404 is read, never a reset connection).
source "$(dirname "$0")/../lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3

check "hostile_client.py compiles" "$PY" -m py_compile "$here/hostile_client.py"
sandbox=yes
if ! "$HULL" exec --timeout 10 -- true 2>"$TEST_TMP/err"; then
        sandbox=no
        skip "calls that run in a sandbox" "the sandbox cannot run here: $(head -c 200 "$TEST_TMP/err")"
fi
sessions=(--max-sessions 0)
if [ "$sandbox" = yes ] && [ "$(id -u)" -eq 0 ]; then
        sessions=(--audit-dir "$TEST_TMP/audit" --handles-dir "$TEST_TMP/handles")
fi

SOCK=$TEST_TMP/hull.sock
LOG=$TEST_TMP/serve.log
"$HULL" serve --listen 127.0.0.1:0 --socket "$SOCK" --max-runs 2 "${sessions[@]}" 2>"$LOG" &
SERVER_PID=$!
pids+=("$SERVER_PID")
server_logs+=("$LOG")
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

timeout 200 "$PY" "$here/hostile_client.py" net "$URL" >"$TEST_TMP/net.out"; rc=$?
grep -v '^rid-' "$TEST_TMP/net.out"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "the hostile client (net)" "exited with status $rc (timeout or crash)"
rid=$(sed -n 's/^rid-chunked //p' "$TEST_TMP/net.out")
check "the chunked body over 16 MiB is logged with its answer" \
        grep -qE "event=request id=$rid method=POST path=/plimsoll.v1.SandboxService/Run status=400 " "$LOG"
check "a trickled head's cut is logged" grep -q 'event=connection-cut reason=head-too-slow addr=127.0.0.2' "$LOG"
timeout 200 "$PY" "$here/hostile_client.py" unserved "$URL"; rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "the hostile client (unserved)" "exited with status $rc (timeout or crash)"
# curl's multipart upload (-F), with and without waiting for 100 Continue
head -c $((3 << 20)) /dev/zero >"$TEST_TMP/upload.bin"
for expect in "" "Expect:"; do
        code=$(curl -s -m 30 -o "$TEST_TMP/upload.out" -w '%{http_code}' -H "$expect" -H 'anthropic-version: 2023-06-01' \
                -F "file=@$TEST_TMP/upload.bin;filename=data.bin" "$URL/v1/no_such_uploads")
        check "curl -F 3 MiB to /v1/no_such_uploads${expect:+ (no 100 Continue)}: 404 in the /v1 envelope" "$PY" -c '
import json, sys
j = json.load(open(sys.argv[2]))
sys.exit(0 if sys.argv[1] == "404" and j["type"] == "error" and j["error"]["type"] == "not_found_error" else 1)' "$code" "$TEST_TMP/upload.out"
done
if [ "$sandbox" = yes ]; then
        timeout 200 "$PY" "$here/hostile_client.py" calls "$URL" "$SOCK"; rc=$?
        [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "the hostile client (calls)" "exited with status $rc"
        check "no run was taken for a caller gone" sh -c "! grep -q 'event=run-cancelled' '$LOG'"
fi
if [ "${sessions[0]}" != --max-sessions ]; then
        timeout 200 "$PY" "$here/hostile_client.py" session "$URL" "$SOCK"; rc=$?
        [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "the hostile client (session)" "exited with status $rc"
else
        skip "half-closed session calls" "sessions need root and the sandbox"
fi
check "hull serve is still up" kill -0 "$SERVER_PID"
check "no error was logged" sh -c "! grep -q 'level=error' '$LOG'"
grep 'level=error' "$LOG" | head -5 | cut -c1-400 | sed 's/^/# /'

kill -TERM "$SERVER_PID"
for i in $(seq 1 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
wait "$SERVER_PID"; rc=$?
check "hull serve exits 0 on SIGTERM" test "$rc" -eq 0
exit 0
