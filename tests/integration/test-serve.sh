# test-serve.sh: hull serve end to end: a real server on 127.0.0.1 (a free port) and a unix
# socket, driven over real HTTP by serve_client.py (plimsoll protocol 3 conformance, auth,
# capacity), then the CLI's refusals, hull token, and a graceful shutdown with a run in flight.
source "$(dirname "$0")/../lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
client() { "$PY" "$here/serve_client.py" "$@"; }

if ! "$HULL" exec --timeout 10 -- true 2>"$TEST_TMP/err"; then
        skip "hull serve" "the sandbox cannot run here: $(head -c 200 "$TEST_TMP/err")"
        exit 77
fi

# ---- the CLI ----
check "--help lists serve and token" sh -c "'$HULL' --help | grep -q '^  serve' && '$HULL' --help | grep -q '^  token'"
check "serve --help shows the options" sh -c "'$HULL' serve --help | grep -q -- '--listen HOST:PORT'"
"$HULL" serve --listen 0.0.0.0:0 2>"$TEST_TMP/err"; rc=$?
check "no tokens: a non-loopback address is refused" sh -c "[ $rc -eq 2 ] && grep -q 'refusing to listen on 0.0.0.0:0 without tokens' '$TEST_TMP/err'"
for bad in "--listen nohost" "--listen 127.0.0.1:70000" "--max-runs 0" "--queue 99" "--log-level loud" "--memory 1K" "--bogus"; do
        # shellcheck disable=SC2086
        "$HULL" serve $bad 2>"$TEST_TMP/err"; rc=$?
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TEST_TMP/err")" -eq 1 ] && grep -q '^hull: serve: ' "$TEST_TMP/err"; then
                pass "serve refuses '$bad' with one line and 2"
        else
                fail "serve refuses '$bad' with one line and 2" "rc=$rc err=$(cat "$TEST_TMP/err")"
        fi
done

out=$("$HULL" token new --name ci)
tok=$(sed -n 1p <<<"$out")
line=$(sed -n 3p <<<"$out")
want=$(printf '%s' "$tok" | sha256sum | cut -d' ' -f1)
check "token new prints a token and its line (digest, scope, name)" test "$line" = "$want code:run ci"
check "a token is hull_ and 64 hex digits" grep -qE '^hull_[0-9a-f]{64}$' <<<"$tok"
TOKENS=$TEST_TMP/tokens
(umask 077; printf '# hull serve tokens' >"$TOKENS") # no final newline: token new adds one
good=$("$HULL" token new --tokens "$TOKENS" --name ci 2>"$TEST_TMP/err")
scopeless=$("$HULL" token new --tokens "$TOKENS" --scope other:thing 2>/dev/null)
check "token new --tokens appends lines with digests only" sh -c "[ \$(grep -c code:run '$TOKENS') -eq 1 ] && [ \$(grep -c other:thing '$TOKENS') -eq 1 ] && ! grep -q '$good' '$TOKENS'"
check "the tokens file is 0600" test "$(stat -c %a "$TOKENS")" = 600
printf 'nothex code:run\n' >"$TEST_TMP/badtokens"
"$HULL" serve --tokens "$TEST_TMP/badtokens" 2>"$TEST_TMP/err"; rc=$?
check "a malformed tokens file is refused, naming the line" sh -c "[ $rc -eq 1 ] && grep -q 'line 1' '$TEST_TMP/err'"

# ---- conformance on the open server (with a unix socket) ----
SOCK=$TEST_TMP/hull.sock
LOG_A=$TEST_TMP/serve-a.log
if ! start_server "$LOG_A" --socket "$SOCK" --max-runs 4 --shutdown-grace 20; then
        fail "hull serve starts" "$(cat "$LOG_A")"
        exit 1
fi
pass "hull serve starts and logs its address"
check "the unix socket is 0600" test "$(stat -c %a "$SOCK")" = 600
client conformance "$URL" "$SOCK"
check "every request is logged with its ID and status" grep -qE 'event=request id=[0-9a-f]{32} method=POST path=/plimsoll.v1.SandboxService/Run status=200' "$LOG_A"
check "no error was logged" sh -c "! grep -q 'level=error' '$LOG_A'"

# ---- graceful shutdown: SIGTERM with a run in flight ----
A_PID=$SERVER_PID
children=$(pgrep -P "$A_PID" | tr '\n' ' ')
WORK_A=$(grep -o 'work=[^ ]*' "$LOG_A" | head -1 | cut -d= -f2)
client slow "$URL" 1.731 >"$TEST_TMP/slow.out" 2>&1 &
slow_pid=$!
for i in $(seq 1 100); do pgrep -f 'sleep 1\.731' >/dev/null && break; sleep 0.05; done
stop_server TERM; rc=$?
wait "$slow_pid"; slow_rc=$?
cat "$TEST_TMP/slow.out"
check "SIGTERM: the run in flight finished and was answered" sh -c "[ $slow_rc -eq 0 ] && grep -q '^ok - in flight at SIGTERM: it finished' '$TEST_TMP/slow.out'"
check "SIGTERM: hull serve exits 0" test "$rc" -eq 0
check "SIGTERM: the shutdown is logged" grep -q 'event=stopped' "$LOG_A"
left=""
for p in $children; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
check "SIGTERM: the broker and its workers are gone" test -z "$left"
check "SIGTERM: no sandbox process is left" sh -c "! pgrep -f 'sleep 1\.731' >/dev/null"
check "SIGTERM: the unix socket is removed" test ! -e "$SOCK"
check "SIGTERM: the work directory is removed" sh -c "[ -n '$WORK_A' ] && [ ! -e '$WORK_A' ]"

# ---- the review's fixes: one slot, a queue, hostile bodies and connections ----
LOG_C=$TEST_TMP/serve-c.log
if start_server "$LOG_C" --max-runs 1 --queue 4 --shutdown-grace 1; then
        client hardening "$URL" "$SERVER_PID"
        check "hardening: no error was logged" sh -c "! grep -q 'level=error' '$LOG_C'"
        check "hardening: a client gone is logged" grep -q 'event=run-cancelled id=[^ ]* reason=client-gone' "$LOG_C"
        stop_server; rc=$?
        check "hardening: hull serve exits 0" test "$rc" -eq 0
else
        fail "hull serve starts with --max-runs 1 --queue 4" "$(cat "$LOG_C")"
fi

# ---- auth and capacity on a server with tokens ----
LOG_B=$TEST_TMP/serve-b.log
if start_server "$LOG_B" --tokens "$TOKENS" --max-runs 1 --queue 0 --shutdown-grace 0.3; then
        check "with tokens: auth=bearer in the log" grep -q 'auth=bearer tokens=2' "$LOG_B"
        client auth "$URL" "$good" "$scopeless"
        check "the caller's name is logged" grep -q 'caller=ci' "$LOG_B"
        # ---- SIGINT with a run that outlasts the grace: it is stopped, and says so ----
        client cancelled "$URL" "$good" 30.917 &
        cancelled_pid=$!
        for i in $(seq 1 100); do pgrep -f 'sleep 30\.917' >/dev/null && break; sleep 0.05; done
        stop_server INT; rc=$?
        wait "$cancelled_pid"
        check "SIGINT: exits 0 after stopping the run left" test "$rc" -eq 0
        check "SIGINT: the stopped run's sandbox is gone" sh -c "! pgrep -f 'sleep 30\.917' >/dev/null"
        check "SIGINT: the cancellation is logged" grep -q 'event=cancel-runs reason=grace-over' "$LOG_B"
else
        fail "hull serve starts with tokens" "$(cat "$LOG_B")"
fi
