# test-mcp-records.sh: `hull mcp` puts every tool call on the record (issue 11), reads included:
# mcp_records.py drives it over stdio (files and a table handle made, then read, glob, grep,
# inspect_handle and query_handle, answers and error answers, a grep cancelled while it runs)
# and matches the audit log against what the client was answered; then hull verify and plimsoll_record.py (an independent
# implementation of the record rules) both accept the log, and both refuse it with one byte of a
# read record's result digest changed, with an answer's text changed, or with a record removed.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
DIR="$(cd "$(dirname "$0")" && pwd)"
GEN=$DIR/plimsoll_record.py
H=$TEST_TMP/home
E=$TEST_TMP/err
T=$TEST_TMP/tampered.jsonl
mkdir -m 711 "$H"

timeout 600 "$PY" "$DIR/mcp_records.py" "$HULL" "$H" >"$TEST_TMP/driver.out"
rc=$?
grep -v '^log ' "$TEST_TMP/driver.out"
[ $rc -eq 0 ] || fail "driver" "mcp_records.py exited $rc: $(tail -5 "$H/stderr.log" 2>/dev/null | tr '\n' ' ')"
log=$(sed -n 's/^log //p' "$TEST_TMP/driver.out")
if [ -z "$log" ] || [ ! -f "$log" ]; then
        fail "the audit log" "no audit log under $H/mcp"
        exit 0
fi
check "the log names the audit log" grep -q "audit log: $log" "$H/stderr.log"

out=$("$HULL" verify "$log" 2>"$E"); rc=$?
check "hull verify accepts the log" sh -c "[ $rc -eq 0 ] && echo '$out' | grep -q '^ok: 15 records, session '"
out2=$("$PY" "$GEN" verify "$log" 2>&1); rc=$?
check "plimsoll_record.py accepts it, with the same session and last record" \
        sh -c "[ $rc -eq 0 ] && [ \"\$1\" = \"\$2\" ]" _ "$out" "$out2"

# tamper KIND: a copy of the log with one read record changed in T; prints its line number.
tamper() {
        "$PY" - "$1" "$log" "$T" <<'EOF'
import json, sys
kind, src, dst = sys.argv[1:]
lines = open(src, encoding="utf-8").read().splitlines(keepends=True)
k = next(i for i, l in enumerate(lines) if json.loads(l).get("operation") == "glob")
e = json.loads(lines[k])
if kind == "digest":  # one hex digit of the record's resultSha256
    d = e["record"]["resultSha256"]
    e["record"]["resultSha256"] = ("1" if d[0] == "0" else "0") + d[1:]
elif kind == "answer":  # the answer's text
    e["result"]["text"] = e["result"]["text"].replace("t.csv", "u.csv")
elif kind == "request":  # the arguments
    e["request"]["pattern"] = "**/*"
if kind == "remove":
    del lines[k]
else:
    lines[k] = json.dumps(e, separators=(",", ":")) + "\n"
open(dst, "w", encoding="utf-8").writelines(lines)
print(k + 1)
EOF
}

while read -r kind what; do
        line=$(tamper "$kind")
        "$HULL" verify "$T" >/dev/null 2>"$E"; rc=$?
        if [ "$rc" -eq 1 ] && grep -q "^hull: verify: $T line $line: $what" "$E" && grep -q "the log does not verify" "$E"; then
                pass "hull verify refuses a read record's $kind changed, at line $line: $what"
        else
                fail "hull verify refuses a read record's $kind changed" "rc=$rc line=$line err=$(cat "$E")"
        fi
        "$PY" "$GEN" verify "$T" >"$E" 2>&1; rc=$?
        if [ "$rc" -eq 1 ] && grep -q "line $line: " "$E"; then
                pass "plimsoll_record.py refuses it too ($kind)"
        else
                fail "plimsoll_record.py refuses it too ($kind)" "rc=$rc out=$(cat "$E")"
        fi
done <<'EOF'
digest result digest mismatch (tampered?): the record states [0-9a-f]*\.\.\., the glob result gives
answer result digest mismatch (tampered?): the record states [0-9a-f]*\.\.\., the glob result gives
request request digest mismatch (tampered?): the record states [0-9a-f]*\.\.\., the glob request gives
remove gap in the sequence: sequence 6 where 5 was expected; call 5 is missing
EOF
line=$(tamper digest)
"$HULL" verify "$T" >/dev/null 2>"$E"
check "a changed result digest also breaks the record's own digest" grep -q "line $line: record digest mismatch (tampered?)" "$E"
