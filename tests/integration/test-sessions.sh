# test-sessions.sh: plimsoll sessions on hull serve, end to end, written from the reference
# (shared/reference/plimsoll-protocol.md: "Sessions and the chain", "Errors", "What the client
# verifies" 2-9) and the sessions contract, not from the daemon's code. sessions_client.py is the
# client (its digests are plimsoll_record.py's, independent of hull's C). Daemons:
#   A  --audit-dir: conformance, refusals, semantics, then an audited session for hull verify
#   B  --session-idle 1s: UNCLAIMED and EXPIRED          C  --session-lifetime 2s --no-zygote
#   D  --max-sessions-per-owner 2, HULL_MAX_SESSIONS=4 (the cap as a setting): REPLACED and capacity
#   F  --tokens: another principal's session is not_found everywhere
#   E  kill -9 with a call in flight: no process and no mount outlives the daemon
source "$(dirname "$0")/../lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
client() { timeout 400 "$PY" "$here/sessions_client.py" "$@"; }

check "sessions_client.py and plimsoll_record.py compile" "$PY" -m py_compile "$here/sessions_client.py" \
        "$here/sessions_common.py" "$here/sessions_protocol.py" "$here/sessions_workspace.py" \
        "$here/plimsoll_record.py" "$here/serve_client.py"

if ! "$HULL" exec --timeout 10 -- true 2>"$TEST_TMP/err"; then
        skip "hull serve sessions" "the sandbox cannot run here: $(head -c 200 "$TEST_TMP/err")"
        exit 77
fi

# stop_checked NAME: stop_server (SIGTERM, at most 30 s, then SIGKILL); exit 0 expected, no
# descendant left.
stop_checked() {
        local name=$1 rc left
        "$PY" "$here/sessions_client.py" procs "$SERVER_PID" >"$TEST_TMP/procs-$name"
        stop_server TERM 30; rc=$?
        check "$name: hull serve exits 0 on SIGTERM with sessions" test "$rc" -eq 0
        left=$("$PY" "$here/sessions_client.py" alive "$TEST_TMP/procs-$name")
        check "$name: none of its $(wc -l <"$TEST_TMP/procs-$name") descendants outlives it" test -z "$left"
        [ -z "$left" ] || printf '%s\n' "$left" | sed 's/^/# left: /'
}

# ---- the CLI ----
check "serve --help lists the session options" sh -c "'$HULL' serve --help | grep -q -- '--max-sessions N' &&
        '$HULL' serve --help | grep -q -- '--max-sessions-per-owner' && '$HULL' serve --help | grep -q -- '--session-lifetime' &&
        '$HULL' serve --help | grep -q -- '--session-idle' && '$HULL' serve --help | grep -q -- '--audit-dir' &&
        '$HULL' serve --help | grep -q -- '--no-zygote'"
# the session cap is also a setting of the environment: HULL_MAX_SESSIONS, checked like the flag (D uses it)
HULL_MAX_SESSIONS=lots timeout 10 "$HULL" serve --listen 127.0.0.1:0 2>"$TEST_TMP/err"; rc=$?
check "serve refuses HULL_MAX_SESSIONS=lots with one line and 2" sh -c "[ $rc -eq 2 ] && grep -q 'HULL_MAX_SESSIONS wants' '$TEST_TMP/err'"
check "serve --help lists a session cap of 16,384" sh -c "'$HULL' serve --help | grep -q 'at most 16384'"
for bad in "--session-idle soon" "--session-lifetime 5parsecs" "--session-idle -1s" "--max-sessions x" \
        "--max-sessions-per-owner -3" "--session-lifetime 13h"; do
        # shellcheck disable=SC2086
        timeout 10 "$HULL" serve --listen 127.0.0.1:0 $bad 2>"$TEST_TMP/err"; rc=$?
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TEST_TMP/err")" -eq 1 ] && grep -q '^hull: serve: ' "$TEST_TMP/err"; then
                pass "serve refuses '$bad' with one line and 2"
        else
                fail "serve refuses '$bad' with one line and 2" "rc=$rc err=$(head -c 300 "$TEST_TMP/err")"
        fi
done

# ---- A: conformance, then the audit log ----
AUDIT=$TEST_TMP/audit
mkdir -p "$TEST_TMP/work-a"
LOG_A=$TEST_TMP/serve-a.log
if start_server "$LOG_A" --audit-dir "$AUDIT" --work-dir "$TEST_TMP/work-a"; then
        pass "A: hull serve starts with --audit-dir"
        client conformance "$URL" "$SERVER_PID"
        client audit "$URL" >"$TEST_TMP/audit.out" 2>&1
        cat "$TEST_TMP/audit.out"
        read -r fp n last sid < <(sed -n 's/^# audit //p' "$TEST_TMP/audit.out")
        L=$AUDIT/session-${fp:-none}.jsonl
        if [ -n "${fp:-}" ] && [ -f "$L" ]; then
                pass "audit: the session's log is $AUDIT/session-<fingerprint>.jsonl"
                check "audit: the log is mode 0600" test "$(stat -c %a "$L")" = 600
                check "audit: one line per executed call ($n), the refused call not logged" test "$(wc -l <"$L")" -eq "$n"
                out=$("$HULL" verify --calls "$n" --last "$last" "$L" 2>"$TEST_TMP/err"); rc=$?
                check "audit: hull verify --calls $n --last <close's digest> exits 0" test "$rc" -eq 0
                check "audit: hull verify names the session and the last record" \
                        test "$out" = "ok: $n records, session $fp, last $last"
                check "audit: the sessionId (a capability) is written nowhere in the audit dir" \
                        sh -c "! grep -rq '$sid' '$AUDIT'"
                check "audit: every line is {record, request, result, operation?}; hull's five are there" "$PY" -c '
import json, sys
ops = []
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert set(e) <= {"record", "request", "result", "operation"} and "record" in e and "request" in e, e.keys()
    assert "sessionId" not in e["request"], "sessionId in the request"
    ops.append(e.get("operation"))
assert [o for o in ops if o] == ["exec", "write", "write", "edit", "hydrate"], ops
' "$L"
                while read -r kind what; do
                        line=$("$PY" "$here/sessions_client.py" tamper "$kind" "$L" "$TEST_TMP/t.jsonl")
                        out=$("$HULL" verify "$TEST_TMP/t.jsonl" 2>"$TEST_TMP/err"); rc=$?
                        if [ "$rc" -ne 0 ] && grep -q "line $line: $what" "$TEST_TMP/err"; then
                                pass "audit: tampering '$kind' fails hull verify, naming line $line: $what"
                        else
                                fail "audit: tampering '$kind' fails hull verify, naming line $line: $what" \
                                        "rc=$rc out=$out err=$(head -c 400 "$TEST_TMP/err")"
                        fi
                done <<'EOF'
result result digest mismatch
exec-output result digest mismatch (tampered?): the record states [0-9a-f]*\.\.\., the exec result
write-content request digest mismatch (tampered?): the record states [0-9a-f]*\.\.\., the write request
delete gap in the sequence
swap records out of order
duplicate repeated call
EOF
                head -n $((n - 1)) "$L" >"$TEST_TMP/t.jsonl"
                "$HULL" verify --calls "$n" --last "$last" "$TEST_TMP/t.jsonl" >/dev/null 2>&1; rc=$?
                check "audit: the last line cut off fails with the close's numbers" test "$rc" -ne 0
        else
                fail "audit: the session's log is $AUDIT/session-<fingerprint>.jsonl" \
                        "fp='${fp:-}'; the dir holds: $(ls -la "$AUDIT" 2>&1 | head -20)"
        fi
        if [ -f "$AUDIT/runs.jsonl" ]; then
                out=$("$HULL" verify "$AUDIT/runs.jsonl" 2>"$TEST_TMP/err"); rc=$?
                check "audit: single runs are in runs.jsonl and verify (single runs, no session)" \
                        sh -c "[ $rc -eq 0 ] && printf '%s' '$out' | grep -q 'single runs (no session)'"
        else
                fail "audit: single runs are in runs.jsonl" "no $AUDIT/runs.jsonl"
        fi
        bad_logs=""
        nlogs=0
        for f in "$AUDIT"/session-*.jsonl; do
                [ -s "$f" ] || continue
                nlogs=$((nlogs + 1))
                "$HULL" verify "$f" >/dev/null 2>>"$TEST_TMP/allerr" || bad_logs="$bad_logs $(basename "$f")"
        done
        check "audit: every non-empty session log of the run verifies ($nlogs logs)" \
                sh -c "[ $nlogs -ge 3 ] && [ -z '$bad_logs' ]"
        [ -z "$bad_logs" ] || head -c 600 "$TEST_TMP/allerr" | sed 's/^/# /'
        check "audit: the call cut by CloseSession is logged as a version 3 record (counted, unanswered)" \
                sh -c "grep -h '\"version\":3' '$AUDIT'/session-*.jsonl | grep -q '\"unanswered\":\"'"
        check "A: no error was logged" sh -c "! grep 'level=error' '$LOG_A'"
        grep 'level=error' "$LOG_A" | head -5 | cut -c1-400 | sed 's/^/# /'
        client hold "$URL"
        stop_checked "A"
        check "A: the work directory is empty after the shutdown" \
                sh -c "[ -z \"\$(ls -A '$TEST_TMP/work-a' 2>/dev/null)\" ]"
else
        fail "A: hull serve starts with --audit-dir" "$(head -c 400 "$LOG_A")"
fi

# ---- B: idle ----
LOG_B=$TEST_TMP/serve-b.log
if start_server "$LOG_B" --session-idle 1s; then
        client idle "$URL" "$SERVER_PID"
        stop_checked "B"
else
        fail "B: hull serve starts with --session-idle 1s" "$(head -c 400 "$LOG_B")"
fi

# ---- C: lifetime, without the zygote ----
LOG_C=$TEST_TMP/serve-c.log
if start_server "$LOG_C" --session-lifetime 2s --no-zygote; then
        client lifetime "$URL"
        stop_checked "C"
else
        fail "C: hull serve starts with --session-lifetime 2s --no-zygote" "$(head -c 400 "$LOG_C")"
fi

# ---- D: per-owner eviction and the session cap ----
LOG_D=$TEST_TMP/serve-d.log
if HULL_MAX_SESSIONS=4 start_server "$LOG_D" --max-sessions-per-owner 2; then
        client owner "$URL"
        client hold "$URL"
        client hold "$URL"
        stop_checked "D"
else
        fail "D: hull serve starts with --max-sessions-per-owner 2 and HULL_MAX_SESSIONS=4" "$(head -c 400 "$LOG_D")"
fi

# ---- F: tokens: a session belongs to the principal that opened it ----
TOKENS=$TEST_TMP/tokens
alice=$("$HULL" token new --tokens "$TOKENS" --name alice 2>/dev/null)
bob=$("$HULL" token new --tokens "$TOKENS" --name bob 2>/dev/null)
scopeless=$("$HULL" token new --tokens "$TOKENS" --scope other:thing 2>/dev/null)
LOG_F=$TEST_TMP/serve-f.log
if start_server "$LOG_F" --tokens "$TOKENS" --max-sessions-per-owner 1; then
        client principals "$URL" "$alice" "$bob" "$scopeless"
        check "F: no token is ever logged" sh -c "! grep -qe '$alice' -e '$bob' '$LOG_F'"
        stop_checked "F"
else
        fail "F: hull serve starts with --tokens --max-sessions-per-owner 1" "$(head -c 400 "$LOG_F")"
fi

# ---- E: kill -9 with a call in flight ----
mounts_before=$TEST_TMP/mounts-before
cp /proc/self/mountinfo "$mounts_before"
hull_before=$(grep -c hull /proc/self/mountinfo)
tmpfs_before=$(grep -c ' - tmpfs ' /proc/self/mountinfo)
mkdir -p "$TEST_TMP/work-e"
LOG_E=$TEST_TMP/serve-e.log
AUDIT_E=$TEST_TMP/audit-e
if start_server "$LOG_E" --work-dir "$TEST_TMP/work-e" --audit-dir "$AUDIT_E"; then
        E_PID=$SERVER_PID
        "$PY" "$here/sessions_client.py" inflight "$URL" >"$TEST_TMP/inflight.out" 2>&1 &
        inflight_pid=$!
        pids+=("$inflight_pid")
        for i in $(seq 1 300); do
                pgrep -f 'sleep 100\.4321' >/dev/null && break
                kill -0 "$inflight_pid" 2>/dev/null || break
                sleep 0.1
        done
        if pgrep -f 'sleep 100\.4321' >/dev/null; then
                pass "E: a session call 'sleep 100' is in flight"
                sleep 0.3
                "$PY" "$here/sessions_client.py" procs "$E_PID" >"$TEST_TMP/procs"
                sleeper=$(pgrep -f 'sleep 100\.4321' | head -1)
                check "E: the daemon's descendants (broker, session init, interpreters, zygote) include the sleep" \
                        grep -q "^$sleeper " "$TEST_TMP/procs"
                sed 's/^/# before kill: /' "$TEST_TMP/procs"
                mounts_during=$(grep -c . /proc/self/mountinfo)
                kill -KILL "$E_PID"
                wait "$E_PID" 2>/dev/null
                for i in $(seq 1 50); do
                        [ -z "$("$PY" "$here/sessions_client.py" alive "$TEST_TMP/procs")" ] && break
                        sleep 0.1
                done
                left=$("$PY" "$here/sessions_client.py" alive "$TEST_TMP/procs")
                check "E: within 5 s of kill -9, none of the daemon's $(wc -l <"$TEST_TMP/procs") descendants is left" \
                        test -z "$left"
                [ -z "$left" ] || printf '%s\n' "$left" | sed 's/^/# left: /'
                check "E: the in-flight sleep is gone" sh -c "! pgrep -f 'sleep 100\.4321' >/dev/null"
                sleep 0.5
                check "E: no mount naming hull is left (grep -c hull /proc/self/mountinfo: $hull_before)" \
                        test "$(grep -c hull /proc/self/mountinfo)" -eq "$hull_before"
                check "E: no tmpfs mount was added ($tmpfs_before before)" \
                        test "$(grep -c ' - tmpfs ' /proc/self/mountinfo)" -le "$tmpfs_before"
                check "E: no mount under the daemon's work directory" sh -c "! grep -q '$TEST_TMP' /proc/self/mountinfo"
                echo "# mounts: $(grep -c . "$mounts_before") before, $mounts_during during, $(grep -c . /proc/self/mountinfo) after"
                for i in $(seq 1 50); do kill -0 "$inflight_pid" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$inflight_pid" 2>/dev/null
                wait "$inflight_pid" 2>/dev/null
                grep -E '^(ok|not ok|skip) ' "$TEST_TMP/inflight.out"
                fp=$(sed -n 's/^# inflight //p' "$TEST_TMP/inflight.out")
                out=$("$HULL" verify --calls 2 "$AUDIT_E/session-$fp.jsonl" 2>&1); rc=$?
                check "E: after kill -9 the session's audit log holds the 2 answered calls and verifies" test "$rc" -eq 0
                [ "$rc" -eq 0 ] || echo "# $out"
        else
                fail "E: a session call 'sleep 100' is in flight" "$(head -c 600 "$TEST_TMP/inflight.out")"
                kill -KILL "$inflight_pid" 2>/dev/null
        fi
else
        fail "E: hull serve starts" "$(head -c 400 "$LOG_E")"
fi
exit 0
