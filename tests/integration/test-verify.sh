# test-verify.sh: hull verify end to end. The audit logs are written by plimsoll_record.py, an
# independent Python implementation of the record spec, so hull's C digests are checked against
# code that shares nothing with them; then each kind of tampering must be caught, on its line.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
GEN="$(cd "$(dirname "$0")" && pwd)/plimsoll_record.py"
DATA="$(cd "$(dirname "$0")/../unit/data" && pwd)"
L=$TEST_TMP/records.jsonl
T=$TEST_TMP/tampered.jsonl
E=$TEST_TMP/err

# ---- the independent implementation agrees with the spec's vectors ----
out=$("$PY" "$GEN" golden "$DATA/plimsoll-golden.json" 2>&1); rc=$?
check "plimsoll_record.py reproduces all 19 golden vectors" sh -c "[ $rc -eq 0 ] && [ \$(printf '%s\n' \"\$1\" | grep -c '^ok - ') -eq 19 ]" _ "$out"

# ---- the CLI ----
check "--help lists verify" sh -c "'$HULL' --help | grep -q '^  verify'"
check "verify --help shows the usage" sh -c "'$HULL' verify --help | grep -q 'Usage: hull verify'"
check "help verify works" sh -c "'$HULL' help verify | grep -q -- '--calls N'"
for bad in "" "a b" "--bogus x" "--calls x f" "--calls -1 f" "--last abc f"; do
        # shellcheck disable=SC2086
        "$HULL" verify $bad 2>"$E"; rc=$?
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$E")" -eq 1 ] && grep -q '^hull: verify: ' "$E"; then
                pass "usage error '$bad' is one line and exit 2"
        else
                fail "usage error '$bad' is one line and exit 2" "rc=$rc err=$(cat "$E")"
        fi
done
"$HULL" verify "$TEST_TMP/missing.jsonl" 2>"$E"; rc=$?
check "a missing log fails with 1" sh -c "[ $rc -eq 1 ] && grep -q \"cannot open '.*missing.jsonl': No such file\" '$E'"
: >"$TEST_TMP/empty.jsonl"
"$HULL" verify "$TEST_TMP/empty.jsonl" 2>"$E"; rc=$?
check "an empty log does not verify" sh -c "[ $rc -eq 1 ] && grep -q 'no records' '$E'"
mkdir -p "$TEST_TMP/nolog"
"$HULL" verify "$TEST_TMP/nolog" 2>"$E"; rc=$?
check "a directory without a log fails" sh -c "[ $rc -eq 1 ] && grep -q 'holds no .hull/records.jsonl or records.jsonl' '$E'"
mkfifo "$TEST_TMP/fifo"
timeout 10 "$HULL" verify "$TEST_TMP/fifo" 2>"$E"; rc=$?
check "a FIFO is refused without blocking" sh -c "[ $rc -eq 1 ] && grep -q 'not a regular file' '$E'"

# ---- a valid chain ----
read -r session last < <("$PY" "$GEN" chain "$L" 9)
out=$("$HULL" verify "$L" 2>"$E"); rc=$?
check "a valid chain of 9 calls verifies" test "$rc" -eq 0
check "the summary names the session and the last record" \
        test "$out" = "ok: 9 records, session $session, last $last"
check "a valid chain prints nothing on stderr" test ! -s "$E"
check "the log holds a cell, javascript, a project, hull's exec and an unanswered call" \
        sh -c "grep -q '\"cell\"' '$L' && grep -q '\"project\"' '$L' && grep -q '\"operation\":\"exec\"' '$L' && grep -q '\"version\":3' '$L'"
# A longer chain holds every one of hull's record kinds, the read-only ones too (every fifth call).
read -r session50 last50 < <("$PY" "$GEN" chain "$TEST_TMP/long.jsonl" 50)
out=$("$HULL" verify "$TEST_TMP/long.jsonl" 2>"$E"); rc=$?
check "a chain with every one of hull's record kinds verifies" \
        sh -c "[ $rc -eq 0 ] && [ \"\$1\" = 'ok: 50 records, session $session50, last $last50' ] && [ \$(grep -o '\"operation\":\"[a-z_]*\"' '$TEST_TMP/long.jsonl' | sort -u | wc -l) -eq 10 ]" _ "$out"
out2=$("$PY" "$GEN" verify "$TEST_TMP/long.jsonl"); rc=$?
check "plimsoll_record.py's own verify agrees" sh -c "[ $rc -eq 0 ] && [ \"\$1\" = \"\$2\" ]" _ "$out" "$out2"
"$HULL" verify --calls 9 --last "$last" "$L" >/dev/null; rc=$?
check "--calls and --last matching the close verify" test "$rc" -eq 0
"$HULL" verify --calls 10 "$L" >/dev/null 2>"$E"; rc=$?
check "--calls above the log's count fails (calls cut off)" sh -c "[ $rc -eq 1 ] && grep -q 'line 9: the log ends after call 9, the close states 10 calls (calls cut off the end?)' '$E'"
"$HULL" verify --last "$session" "$L" >/dev/null 2>"$E"; rc=$?
check "--last that is not the last record fails" sh -c "[ $rc -eq 1 ] && grep -q 'the close states' '$E'"
head -n 8 "$L" >"$T"
"$HULL" verify --calls 9 "$T" >/dev/null 2>"$E"; rc=$?
check "a log cut at the end is caught with --calls" test "$rc" -eq 1
mkdir -p "$TEST_TMP/proj/.hull" "$TEST_TMP/proj2"
cp "$L" "$TEST_TMP/proj/.hull/records.jsonl"
cp "$L" "$TEST_TMP/proj2/records.jsonl"
out=$("$HULL" verify "$TEST_TMP/proj"); rc=$?
check "a directory with .hull/records.jsonl verifies" sh -c "[ $rc -eq 0 ] && [ '${out%%,*}' = 'ok: 9 records' ]"
"$HULL" verify "$TEST_TMP/proj2/" >/dev/null; rc=$?
check "a directory with records.jsonl verifies" test "$rc" -eq 0
"$PY" "$GEN" tamper field "$L" "$TEST_TMP/proj/.hull/records.jsonl" >/dev/null
"$HULL" verify "$TEST_TMP/proj" 2>"$E" >/dev/null
check "problems in a directory's log name the file" grep -q "proj/.hull/records.jsonl line 4: record digest mismatch" "$E"

# ---- every kind of tampering is caught, on the right line, with exit 1 ----
while read -r kind what; do
        line=$("$PY" "$GEN" tamper "$kind" "$L" "$T")
        out=$("$HULL" verify "$T" 2>"$E"); rc=$?
        if [ "$rc" -eq 1 ] && [ -z "$out" ] && grep -q "^hull: verify: $T line $line: $what" "$E" &&
                grep -q "the log does not verify" "$E"; then
                pass "tampering '$kind' is caught at line $line: $what"
        else
                fail "tampering '$kind' is caught at line $line: $what" "rc=$rc out=$out err=$(cat "$E")"
        fi
done <<'EOF'
stdout result digest mismatch (tampered?)
request request digest mismatch (tampered?)
field record digest mismatch (tampered?)
gap gap in the sequence: sequence 5 where 4 was expected; call 4 is missing
swap records out of order: sequence 5 where 4 was expected; call 4 comes later, at line 5
previous wrong previous record
previous-raw record digest mismatch (tampered?)
garbage not valid JSON
truncated not valid JSON
session wrong session
resequence gap in the sequence
duplicate repeated call: sequence 4 again
kind a cell result for a javascript request
rule softwareRuleId
hull-stdout result digest mismatch (tampered?): the record states [0-9a-f]*\.\.\., the exec result gives
hull-command request digest mismatch (tampered?): the record states [0-9a-f]*\.\.\., the exec request gives
hull-env request digest mismatch (tampered?)
hull-operation the write request has an unknown field
hull-unknown the log entry's operation format_disk is not one of hull's record kinds
hull-v1 a version 1 record for hull's exec
EOF
"$PY" "$GEN" tamper garbage "$L" "$T" >/dev/null
"$HULL" verify "$T" 2>"$E" >/dev/null
check "a garbage line is one problem, not also a chain break" test "$(grep -c 'line' "$E")" -eq 1
"$PY" "$GEN" tamper previous-raw "$L" "$T" >/dev/null
"$HULL" verify "$T" 2>"$E" >/dev/null
check "a rewritten previousSha256 is also named as a chain break" grep -q "line 4: wrong previous record" "$E"

# ---- a kept hull run or hull chat: one log per session in .hull/session-*.jsonl ----
mkdir -p "$TEST_TMP/chat/.hull"
cp "$L" "$TEST_TMP/chat/.hull/session-aaaa.jsonl"
cp "$L" "$TEST_TMP/chat/.hull/session-bbbb.jsonl"
out=$("$HULL" verify "$TEST_TMP/chat" 2>"$E"); rc=$?
check "a directory of session logs verifies each" sh -c "[ $rc -eq 0 ] && [ \$(printf '%s\n' \"$out\" | grep -c '^ok: 9 records') -eq 2 ]"
"$HULL" verify --calls 9 "$TEST_TMP/chat" 2>"$E" >/dev/null; rc=$?
check "--calls with several session logs is a usage error naming one" sh -c "[ $rc -eq 2 ] && grep -q 'session-aaaa.jsonl' '$E'"
"$PY" "$GEN" tamper field "$L" "$TEST_TMP/chat/.hull/session-bbbb.jsonl" >/dev/null
"$HULL" verify "$TEST_TMP/chat" 2>"$E" >/dev/null; rc=$?
check "a tampered session log of the directory fails, naming it" sh -c "[ $rc -eq 1 ] && grep -q 'session-bbbb.jsonl line 4' '$E' && ! grep -q 'session-aaaa' '$E'"

# ---- hostile input: bounded, never a crash ----
"$PY" "$GEN" tamper field "$L" "$TEST_TMP/field.jsonl" >/dev/null
{ head -n 2 "$L"; head -c $((64 * 1024 * 1024 + 10)) /dev/zero | tr '\0' 'a'; echo; tail -n +3 "$TEST_TMP/field.jsonl"; } >"$T"
"$HULL" verify "$T" 2>"$E" >/dev/null; rc=$?
check "a line over 64 MiB is refused and skipped" sh -c "[ $rc -eq 1 ] && grep -q 'line 3: the line is longer than 67108864 bytes' '$E'"
check "the lines after an over-long one are still checked" grep -q 'line 5: record digest mismatch' "$E"
{ head -n 1 "$L"; head -c 100000 /dev/zero | tr '\0' '['; echo; } >"$T"
"$HULL" verify "$T" 2>"$E" >/dev/null; rc=$?
check "deep nesting is refused" sh -c "[ $rc -eq 1 ] && grep -q 'line 2: the line nests deeper than 16' '$E'"
head -c 65536 /dev/urandom >"$T"
"$HULL" verify "$T" 2>/dev/null >/dev/null; rc=$?
check "random bytes fail cleanly" test "$rc" -eq 1
printf '{"record":{},"request":{}}\0\n' >"$T"
"$HULL" verify "$T" 2>"$E" >/dev/null; rc=$?
check "a NUL byte in a line fails cleanly" test "$rc" -eq 1
for i in $(seq 150); do echo "x"; done >"$T"
"$HULL" verify "$T" 2>"$E" >/dev/null; rc=$?
check "problems are capped at 100 lines, then counted" \
        sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$E') -eq 102 ] && grep -q '50 more problems not shown' '$E' && grep -q '150 problems' '$E'"
