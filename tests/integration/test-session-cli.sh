# test-session-cli.sh: `hull session`, the client of hull serve's sessions. First what needs no
# daemon (usage errors, refusals, an unreachable daemon, no DT_NEEDED on libcurl), then a fake
# daemon (python, loopback) that checks the requests and sends crafted answers (unbound, errors,
# oversized, a wrong fingerprint), then the full round trip against a real hull serve (as root).
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
unset HULL_URL HULL_TOKEN
ID0=0123456789abcdef0123456789abcdef

# usage NAME ARGS...: hull session ARGS exits 2 with one "hull: session: " line on stderr.
usage() {
        local name=$1 rc
        shift
        "$HULL" session "$@" </dev/null >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TEST_TMP/err")" -eq 1 ] && grep -q '^hull: session: ' "$TEST_TMP/err"; then
                pass "usage: $name"
        else
                fail "usage: $name" "rc=$rc err=$(head -c 300 "$TEST_TMP/err")"
        fi
}

# ---- no daemon ----
if command -v readelf >/dev/null; then
        check "hull has no DT_NEEDED on libcurl (it is loaded with dlopen)" sh -c "! readelf -d '$HULL' | grep NEEDED | grep -qi curl"
else
        skip "hull has no DT_NEEDED on libcurl" "no readelf"
fi
check "hull --help lists session" sh -c "'$HULL' --help | grep -q '^  session'"
check "session --help lists every subcommand" sh -c "'$HULL' session --help >'$TEST_TMP/h' && for s in open exec cell read write persist close list; do grep -q \"hull session \$s\" '$TEST_TMP/h' || exit 1; done"
check "session exec --help shows its usage" sh -c "'$HULL' session exec --help | grep -q 'Usage: hull session exec ID'"
check "hull help session" sh -c "'$HULL' help session | grep -q 'Usage: hull session'"
"$HULL" session >/dev/null 2>&1; rc=$?
check "session alone prints the usage and exits 2" test "$rc" -eq 2
usage "unknown subcommand" bogus
usage "no subcommand" --url http://127.0.0.1:1
usage "a malformed session ID" exec XYZ -- true
usage "an upper-case session ID" close 0123ABCD
usage "a session ID over 64 digits" close "$(printf 'a%.0s' $(seq 1 65))"
usage "exec without a command" exec "$ID0"
usage "exec --timeout over 5m" exec "$ID0" --timeout 6m -- true
usage "exec --timeout not a duration" exec "$ID0" --timeout soon -- true
usage "exec --env without =" exec "$ID0" --env FOO -- true
usage "exec --env with a bad name" exec "$ID0" --env 1X=2 -- true
usage "open --owner with a space" open --owner 'a b'
usage "open --lifetime over 12h" open --lifetime 13h
usage "open --idle under 1s" open --idle 500ms
usage "open --language ruby" open --language ruby
usage "open --env with a =" open --env A=B
usage "open --env twice" open --env a --env b
usage "cell --python --javascript" cell "$ID0" --python --javascript 1
usage "cell --file with an absolute path" cell "$ID0" --file /etc/x=/dev/null 1
usage "cell --file with a .. segment" cell "$ID0" --file a/../b=/dev/null 1
usage "cell with empty code" cell "$ID0" ''
usage "read without a path" read "$ID0"
usage "read --limit 0" read "$ID0" f --limit 0
usage "write with an empty path" write "$ID0" '' /dev/null
usage "persist without an archive" persist "$ID0"
usage "list takes no argument" list extra
usage "an option of another subcommand" list --timeout 5s
usage "a subcommand's option before it" --json list
usage "a URL that is not http(s)" --url ftp://127.0.0.1 list
usage "a URL with user information" --url http://u:p@127.0.0.1:1 list
HULL_TOKEN='has space' "$HULL" session list 2>"$TEST_TMP/err"; rc=$?
check "a token with a space is refused (2)" sh -c "[ $rc -eq 2 ] && grep -q 'visible ASCII' '$TEST_TMP/err'"
"$HULL" session --url http://192.0.2.1:8750 list 2>"$TEST_TMP/err"; rc=$?
check "cleartext http to a host that is not loopback is refused (2)" sh -c "[ $rc -eq 2 ] && grep -q 'refusing cleartext http to 192.0.2.1' '$TEST_TMP/err'"

port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$HULL" session --url "http://127.0.0.1:$port" list >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
check "an unreachable daemon: exit 1, naming the address" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$TEST_TMP/err') -eq 1 ] && grep -q 'cannot reach http://127.0.0.1:$port/hull.v1.Sessions/List' '$TEST_TMP/err' && grep -q \"is 'hull serve' running\" '$TEST_TMP/err'"
HULL_URL="http://127.0.0.1:$port" "$HULL" session exec "$ID0" -- true 2>"$TEST_TMP/err"; rc=$?
check "HULL_URL is the default address" sh -c "[ $rc -eq 1 ] && grep -q '127.0.0.1:$port' '$TEST_TMP/err'"
"$HULL" session --unix "$TEST_TMP/none.sock" list 2>"$TEST_TMP/err"; rc=$?
check "a missing unix socket: exit 1, naming it" sh -c "[ $rc -eq 1 ] && grep -q 'none.sock' '$TEST_TMP/err'"

# ---- a fake daemon: the requests as sent, and answers a real daemon should never give ----
cat >"$TEST_TMP/fake.py" <<'EOF'
import base64, hashlib, http.server, json, sys
log, modefile = sys.argv[1], sys.argv[2]
SID = "00112233445566778899aabbccddeeff"
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        mode = open(modefile).read().strip()
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}) + "\n")
        rid = self.headers.get("Plimsoll-Request-Id", "")
        status, ans = 200, {}
        p = self.path.rsplit("/", 1)[1]
        if mode == "error":
            status = 400
            detail = base64.b64encode(b"\x08\x02\x12\x07expired").decode()
            ans = {"code": "failed_precondition", "message": "no luck",
                   "details": [{"type": "type.googleapis.com/plimsoll.v1.SessionEnded", "value": detail}]}
        elif mode == "html":
            status, ans = 502, None
        elif p == "OpenSession":
            ans = {"sessionId": SID, "session": hashlib.sha256(SID.encode()).hexdigest() if mode != "badfp" else "0" * 64,
                   "sandbox": "hull", "isolation": "container", "expiresUnixMs": "1", "idleTimeoutMs": 300000}
        elif p == "Exec":
            ans = {"exitCode": "3", "stdout": base64.urlsafe_b64encode(b"out\xff\n").decode().rstrip("="),
                   "stderr": base64.b64encode(b"err\n").decode(), "stdoutTruncated": True, "durationMs": "5"}
        elif p == "CloseSession":
            ans = {"session": hashlib.sha256(SID.encode()).hexdigest(), "calls": "2", "lastRecordSha256": "ab" * 32,
                   "ended": "SESSION_END_CLOSED"}
        elif p == "List":
            ans = {"sessions": [{"sessionId": SID, "calls": 7, "owner": "me", "idleTimeoutMs": 90000}]}
        data = b"<html>bad gateway</html>" if ans is None else json.dumps(ans).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html" if ans is None else "application/json")
        if mode == "big":
            self.send_header("Content-Length", str(33 << 20))
            self.end_headers()
            return
        self.send_header("Content-Length", str(len(data)))
        if mode == "wrongid":
            self.send_header("Plimsoll-Request-Id", "f" * 32)
        elif mode != "noid":
            self.send_header("Plimsoll-Request-Id", rid)
        self.end_headers()
        self.wfile.write(data)
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
FAKE_LOG=$TEST_TMP/fake.log MODE=$TEST_TMP/mode
echo ok >"$MODE"
"$PY" "$TEST_TMP/fake.py" "$FAKE_LOG" "$MODE" >"$TEST_TMP/fake.port" 2>"$TEST_TMP/fake.err" &
FAKE_PID=$!
pids+=("$FAKE_PID")
wait_for_file "$TEST_TMP/fake.port" "$FAKE_PID"
FAKE=http://127.0.0.1:$(cat "$TEST_TMP/fake.port")
# last_request FIELD: a field of the last request the fake daemon received
last_request() { tail -1 "$FAKE_LOG" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); v=eval(sys.argv[1]); print(json.dumps(v) if not isinstance(v,str) else v)' "$1"; }
if [ -s "$TEST_TMP/fake.port" ]; then
        FID=00112233445566778899aabbccddeeff
        TOKEN=hull_0000000000000000000000000000000000000000000000000000000000000000
        out=$(HULL_TOKEN=$TOKEN "$HULL" session --url "$FAKE/" open --owner ci --lifetime 5m --idle 90s --language python 2>"$TEST_TMP/err"); rc=$?
        check "fake: open prints the session ID alone" sh -c "[ $rc -eq 0 ] && [ '$out' = '$FID' ]"
        check "fake: open posts protocol 3, owner, lifetimeMs, idleTimeoutMs, languages" \
                test "$(last_request 'r["body"]')" = '{"protocol": 3, "owner": "ci", "lifetimeMs": 300000, "idleTimeoutMs": 90000, "languages": ["python"]}'
        check "fake: the path is the URL's plus the procedure (no double slash)" test "$(last_request 'r["path"]')" = /plimsoll.v1.SandboxService/OpenSession
        check "fake: Content-Type is application/json" test "$(last_request 'r["headers"]["Content-Type"]')" = application/json
        check "fake: a Plimsoll-Request-Id of 32 lowercase hex" grep -qE '^[0-9a-f]{32}$' <<<"$(last_request 'r["headers"]["Plimsoll-Request-Id"]')"
        check "fake: the token from HULL_TOKEN as a bearer" test "$(last_request 'r["headers"]["Authorization"]')" = "Bearer $TOKEN"
        printf '%s\n' "$TOKEN" >"$TEST_TMP/token"
        HULL_TOKEN=other-token-xxxxxxxxxxxxxxxxxxxxxxxxxxxxx "$HULL" session --url "$FAKE" --token-file "$TEST_TMP/token" list >/dev/null 2>&1
        check "fake: --token-file wins over HULL_TOKEN" test "$(last_request 'r["headers"]["Authorization"]')" = "Bearer $TOKEN"
        "$HULL" session --url "$FAKE" exec "$FID" --timeout 2.5s --env A=1 --env B=x=y -- echo '$A' 'two words' >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        check "fake: exec sends the words quoted, timeoutMs and env" \
                test "$(last_request 'r["body"]')" = '{"sessionId": "'$FID'", "command": "echo '"'\$A' 'two words'"'", "timeoutMs": 2500, "env": {"A": "1", "B": "x=y"}}'
        check "fake: exec exits with exitCode given as a string" test "$rc" -eq 3
        check "fake: exec writes stdout raw (URL-safe base64, unpadded, not UTF-8)" sh -c "printf 'out\\377\\n' | cmp -s - '$TEST_TMP/out'"
        check "fake: exec writes stderr raw and notes the truncated stdout" sh -c "grep -qx err '$TEST_TMP/err' && grep -q 'stdout was cut' '$TEST_TMP/err'"
        # Words a shell would split, expand or end: each must come back as one word, unchanged.
        WORDS=(printf '<%s>\n' 'a b' "it's" 'say "hi"' ';' 'echo $HOME' 'back\slash\\' $'new\nline' '' "'" '*' '&&' 'ünï')
        "$HULL" session --url "$FAKE" exec "$FID" -- "${WORDS[@]}" >/dev/null 2>&1
        last_request 'r["body"]["command"]' >"$TEST_TMP/sent"
        "$PY" -c 'import shlex,sys; print(shlex.join(sys.argv[1:]))' "${WORDS[@]}" >"$TEST_TMP/want"
        check "fake: exec quotes each word as shlex.join does" cmp -s "$TEST_TMP/want" "$TEST_TMP/sent"
        check "fake: the quoted command splits back into the same words" \
                "$PY" -c 'import shlex,sys; assert shlex.split(open(sys.argv[1]).read().rstrip("\n")) == sys.argv[2:]' "$TEST_TMP/sent" "${WORDS[@]}"
        "$HULL" session --url "$FAKE" exec "$FID" -- 'echo 1 2 3; echo x' >/dev/null 2>&1
        check "fake: exec of one argument sends it as the command line" test "$(last_request 'r["body"]["command"]')" = 'echo 1 2 3; echo x'
        out=$("$HULL" session --url "$FAKE" close "$FID"); rc=$?
        check "fake: close prints fingerprint, calls, last, ended" test "$out" = "closed $(printf %s "$FID" | sha256sum | cut -d' ' -f1) calls=2 last=$(printf 'ab%.0s' $(seq 1 32)) ended=CLOSED"
        out=$("$HULL" session --url "$FAKE" list); rc=$?
        check "fake: list shows a table (calls as a number)" bash -c "[ $rc -eq 0 ] && grep -qE '^$FID +7 +1m30s .* me\$' <<<'$out'"
        for m in noid wrongid; do
                echo "$m" >"$MODE"
                "$HULL" session --url "$FAKE" list >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
                check "fake: an answer with $m is not believed (1)" sh -c "[ $rc -eq 1 ] && [ ! -s '$TEST_TMP/out' ] && grep -q 'not bound to our request' '$TEST_TMP/err'"
        done
        echo error >"$MODE"
        "$HULL" session --url "$FAKE" exec "$FID" -- true 2>"$TEST_TMP/err"; rc=$?
        check "fake: a Connect error prints its code, message and SessionEnded (1)" \
                sh -c "[ $rc -eq 1 ] && grep -qx 'hull: session: failed_precondition: no luck (session ended: EXPIRED: expired)' '$TEST_TMP/err'"
        echo html >"$MODE"
        "$HULL" session --url "$FAKE" list 2>"$TEST_TMP/err"; rc=$?
        check "fake: a non-JSON error shows the status and the body (1)" sh -c "[ $rc -eq 1 ] && grep -q 'HTTP 502 from .*bad gateway' '$TEST_TMP/err'"
        echo big >"$MODE"
        "$HULL" session --url "$FAKE" list 2>"$TEST_TMP/err"; rc=$?
        check "fake: an answer over 32 MiB is refused (1)" sh -c "[ $rc -eq 1 ] && grep -q 'over 33554432 bytes' '$TEST_TMP/err'"
        echo badfp >"$MODE"
        n=$(wc -l <"$FAKE_LOG")
        "$HULL" session --url "$FAKE" open >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        check "fake: open with a wrong fingerprint fails and closes the session" \
                sh -c "[ $rc -eq 1 ] && [ ! -s '$TEST_TMP/out' ] && [ \$(wc -l <'$FAKE_LOG') -eq $((n + 2)) ] && tail -1 '$FAKE_LOG' | grep -q CloseSession"
else
        fail "the fake daemon starts" "$(cat "$TEST_TMP/fake.err")"
fi
kill -TERM "$FAKE_PID" 2>/dev/null
wait "$FAKE_PID" 2>/dev/null

# ---- the round trip against a real hull serve ----
if [ "$(id -u)" -ne 0 ]; then
        skip "round trip with hull serve" "needs root (sessions run in the container tier)"
        exit 77
fi
if ! "$HULL" exec --timeout 10 -- true 2>"$TEST_TMP/err"; then
        skip "round trip with hull serve" "the sandbox cannot run here: $(head -c 200 "$TEST_TMP/err")"
        exit 77
fi
SOCK=$TEST_TMP/hull.sock
LOG=$TEST_TMP/serve.log
if ! start_server "$LOG" --socket "$SOCK" --audit-dir "$TEST_TMP/audit" --work-dir "$TEST_TMP"; then
        fail "hull serve starts" "$(cat "$LOG")"
        exit 1
fi
export HULL_URL=$URL
S() { "$HULL" session "$@"; }

ID=$(S open --owner ci 2>"$TEST_TMP/err"); rc=$?
if [ "$rc" -ne 0 ] || ! grep -qE '^[0-9a-f]{1,64}$' <<<"$ID"; then
        fail "open prints a session ID" "rc=$rc out=$ID err=$(cat "$TEST_TMP/err")"
        exit 1
fi
pass "open prints a session ID"

out=$(S exec "$ID" -- echo hi 2>"$TEST_TMP/err"); rc=$?
check "exec 'echo hi' prints hi and exits 0" sh -c "[ $rc -eq 0 ] && [ '$out' = hi ]"
S exec "$ID" 'cd /tmp && export A=1' >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "exec 'cd /tmp && export A=1' exits 0" test "$rc" -eq 0
out=$(S exec "$ID" 'pwd; echo $A' 2>"$TEST_TMP/err"); rc=$?
check "the next exec keeps the working directory and the exported variable" test "$rc:$out" = "0:/tmp
1"
out=$(S exec "$ID" -- sh -c 'echo 1 2 3; echo x' 2>"$TEST_TMP/err"); rc=$?
check "exec -- sh -c 'echo 1 2 3; echo x' runs the script as one argument" test "$rc:$out" = "0:1 2 3
x"
WORDS=('<%s>\n' 'a b' "it's" 'say "hi"' ';' 'echo $HOME' '$(id)' 'back\slash\\' $'new\nline' '' "'" '*' '&&' 'ünï')
S exec "$ID" -- printf "${WORDS[@]}" >"$TEST_TMP/got" 2>"$TEST_TMP/err"; rc=$?
printf "${WORDS[@]}" >"$TEST_TMP/want"
check "exec hands every word over unchanged (spaces, quotes, ;, \$, backslashes, a newline, an empty one)" \
        sh -c "[ $rc -eq 0 ] && cmp -s '$TEST_TMP/want' '$TEST_TMP/got'"
S exec "$ID" -- 'exit 7' 2>/dev/null; rc=$?
check "exec exits with the command's status" test "$rc" -eq 7
S exec "$ID" --timeout 1s -- sleep 5 2>"$TEST_TMP/err"; rc=$?
check "exec past its timeout exits 124" sh -c "[ $rc -eq 124 ] && grep -q 'timed out' '$TEST_TMP/err'"

printf 'line one\n\0binary\377 tail' >"$TEST_TMP/data.bin"
out=$(S write "$ID" dir-less.bin "$TEST_TMP/data.bin" 2>"$TEST_TMP/err"); rc=$?
check "write reports the bytes written" sh -c "[ $rc -eq 0 ] && [ '$out' = 'wrote 22 bytes to dir-less.bin' ]"
S read "$ID" dir-less.bin >"$TEST_TMP/back.bin" 2>"$TEST_TMP/err"; rc=$?
check "read gives back the same bytes (NUL included)" sh -c "[ $rc -eq 0 ] && cmp -s '$TEST_TMP/data.bin' '$TEST_TMP/back.bin'"
out=$(S read "$ID" dir-less.bin --offset 9 --limit 6 | od -An -c | tr -s ' '); rc=$?
check "read --offset --limit" test "$out" = " \0 b i n a r"
printf 'from stdin' | S write "$ID" stdin.txt - >/dev/null 2>&1
check "write from stdin" test "$(S read "$ID" stdin.txt)" = "from stdin"
S read "$ID" no-such-file >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "read of a missing file fails (1) with the daemon's code" sh -c "[ $rc -eq 1 ] && grep -q '^hull: session: [a-z_]*: ' '$TEST_TMP/err'"
S read "$ID" ../../etc/passwd >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "read outside the workspace is refused (1)" test "$rc" -eq 1

S cell "$ID" 'x=41' >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
check "cell 'x=41' exits 0" test "$rc" -eq 0
out=$(S cell "$ID" 'x+1' 2>"$TEST_TMP/err"); rc=$?
check "the next cell sees x and prints 42" test "$rc:$out" = "0:42"
out=$(printf 'print(x * 2)\n' | S cell "$ID" - 2>"$TEST_TMP/err"); rc=$?
check "cell code from stdin" test "$rc:$out" = "0:82"
S cell "$ID" 'raise ValueError("boom")' >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "a cell that raises exits 1 and prints the traceback" sh -c "[ $rc -eq 1 ] && grep -q 'ValueError: boom' '$TEST_TMP/err'"
S cell "$ID" --timeout 1s 'import time; time.sleep(10)' >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "a cell past its timeout exits 124" test "$rc" -eq 124
printf 'a,b\n1,2\n' >"$TEST_TMP/t.csv"
out=$(S cell "$ID" --file data/t.csv="$TEST_TMP/t.csv" 'open("data/t.csv").read().count("\n")' 2>"$TEST_TMP/err"); rc=$?
check "cell --file writes the file (as text) before the code runs" test "$rc:$out" = "0:2"
printf 'bin\377' >"$TEST_TMP/bin"
S cell "$ID" --file b="$TEST_TMP/bin" 1 >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "cell --file refuses a file that is not UTF-8 (2)" sh -c "[ $rc -eq 2 ] && grep -q 'not UTF-8' '$TEST_TMP/err'"
out=$(S cell "$ID" --javascript 'let y = 6 * 7; console.log(y)' 2>"$TEST_TMP/err"); rc=$?
check "a javascript cell" test "$rc:$out" = "0:42"
# ps shows what each process is, and no interpreter's source is on a command line.
zpid=$(pgrep -P "$SERVER_PID" -x hull-zygote | head -1)
check "hull serve's zygote is hull-zygote in ps, its command line that name alone" \
        sh -c "[ -n '$zpid' ] && [ \"\$(tr -d '\\0' </proc/$zpid/cmdline)\" = hull-zygote ]"
out=$(S cell "$ID" "open('/proc/self/cmdline', 'rb').read().rstrip(b'\\0').decode()" 2>"$TEST_TMP/err"); rc=$?
check "a python interpreter's command line is hull-python" test "$rc:$out" = "0:'hull-python'"
S cell "$ID" --json '1+1' >"$TEST_TMP/cell.json" 2>"$TEST_TMP/err"; rc=$?
check "cell --json prints the whole answer with its record" sh -c "[ $rc -eq 0 ] && '$PY' -c 'import json,sys; a=json.load(open(sys.argv[1])); assert a[\"run\"][\"record\"][\"recordSha256\"]' '$TEST_TMP/cell.json'"

S persist "$ID" "$TEST_TMP/ws.tar" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
check "persist writes the tar and prints its SHA-256" sh -c "[ $rc -eq 0 ] && [ \"\$(cat '$TEST_TMP/out')\" = \"\$(sha256sum <'$TEST_TMP/ws.tar' | cut -d' ' -f1)\" ]"
check "the tar lists the written file" sh -c "tar -tf '$TEST_TMP/ws.tar' | grep -qE '(^|/)dir-less.bin\$'"
S persist "$ID" "$TEST_TMP/ws.tar" >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "persist refuses to overwrite without --force (1)" sh -c "[ $rc -eq 1 ] && grep -q -- '--force' '$TEST_TMP/err'"
S persist "$ID" "$TEST_TMP/ws.tar" --force >/dev/null 2>&1; rc=$?
check "persist --force overwrites" test "$rc" -eq 0

out=$(S list 2>"$TEST_TMP/err"); rc=$?
check "list shows the session" bash -c "[ $rc -eq 0 ] && grep -qE '^$ID +[0-9]+ .* ci\$' <<<'$out'"
out=$(S --unix "$SOCK" list --json 2>"$TEST_TMP/err"); rc=$?
check "list --json over the unix socket" bash -c "[ $rc -eq 0 ] && grep -q '\"sessionId\": *\"$ID\"' <<<'$out'"

out=$(S close "$ID" 2>"$TEST_TMP/err"); rc=$?
fp=$(printf %s "$ID" | sha256sum | cut -d' ' -f1)
check "close prints the fingerprint, calls=, last= and ended=CLOSED" \
        bash -c "[ $rc -eq 0 ] && grep -qE '^closed $fp calls=[0-9]+ last=[0-9a-f]{64} ended=CLOSED\$' <<<'$out'"
S exec "$ID" -- echo hi >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
check "exec after close fails (1), naming the ended session" \
        sh -c "[ $rc -eq 1 ] && [ ! -s '$TEST_TMP/out' ] && grep -qi 'session' '$TEST_TMP/err' && grep -qiE 'ended|closed' '$TEST_TMP/err'"
S cell "$ID" 1 >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "cell after close fails (1)" test "$rc" -eq 1
S close "$ID" >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "a second close answers without error or fails cleanly" sh -c "[ $rc -eq 0 ] || [ $rc -eq 1 ]"
S exec ffffffffffffffffffffffffffffffff -- true 2>"$TEST_TMP/err"; rc=$?
check "an unknown session is not_found (1)" sh -c "[ $rc -eq 1 ] && grep -q 'not_found' '$TEST_TMP/err'"

stop_server; rc=$?
check "hull serve exits 0" test "$rc" -eq 0
check "hull serve logged no error" sh -c "! grep -q 'level=error' '$LOG'"
