# test-handle-cli.sh: `hull handle`, the client of the data handles of hull serve's sessions.
# First what needs no daemon (usage errors, an unreachable daemon), then a fake daemon (python,
# loopback) that checks the requests and answers as the handle store does (hd-store.h), then the
# round trip against a real hull serve (as root): handles saved by a python cell are listed,
# inspected, queried, read, and a local file is added as an input.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
unset HULL_URL HULL_TOKEN
# checkv NAME CMD...: check, and on failure show the last out and err files as comments.
checkv() {
        local name=$1
        shift
        if "$@"; then
                pass "$name"
        else
                fail "$name" "failed: $*"
                sed 's/^/#   /' "$TEST_TMP/out" "$TEST_TMP/err" 2>/dev/null | head -20
        fi
}
ID0=0123456789abcdef0123456789abcdef

# usage NAME ARGS...: hull handle ARGS exits 2 with one "hull: handle: " line on stderr.
usage() {
        local name=$1 rc
        shift
        "$HULL" handle "$@" </dev/null >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TEST_TMP/err")" -eq 1 ] && grep -q '^hull: handle: ' "$TEST_TMP/err"; then
                pass "usage: $name"
        else
                fail "usage: $name" "rc=$rc err=$(head -c 300 "$TEST_TMP/err")"
        fi
}

# ---- no daemon ----
check "hull --help lists handle" sh -c "'$HULL' --help | grep -q '^  handle'"
check "handle --help lists every subcommand" sh -c "'$HULL' handle --help >'$TEST_TMP/h' && for s in list inspect query get add; do grep -q \"hull handle \$s SESSION\" '$TEST_TMP/h' || exit 1; done"
check "handle query --help shows its usage" sh -c "'$HULL' handle query --help | grep -q 'Usage: hull handle query SESSION SQL'"
check "hull help handle" sh -c "'$HULL' help handle | grep -q 'Usage: hull handle'"
"$HULL" handle >/dev/null 2>&1; rc=$?
check "handle alone prints the usage and exits 2" test "$rc" -eq 2
printf 'a,b\n1,2\n' >"$TEST_TMP/in.csv"
usage "unknown subcommand" bogus "$ID0"
usage "no subcommand" --url http://127.0.0.1:1
usage "list without a session" list
usage "a malformed session ID" list XYZ
usage "an upper-case session ID" list 0123ABCD
usage "list takes one argument" list "$ID0" extra
usage "inspect without a handle" inspect "$ID0"
usage "inspect a bad handle id" inspect "$ID0" 'a b'
usage "inspect a handle id starting with '.'" inspect "$ID0" .x
usage "inspect a handle id over 64 bytes" inspect "$ID0" "$(printf 'a%.0s' $(seq 1 65))"
usage "inspect --head over 100" inspect "$ID0" h1 --head 101
usage "inspect --tail not a number" inspect "$ID0" h1 --tail x
usage "inspect --csv --json" inspect "$ID0" h1 --csv --json
usage "query without SQL" query "$ID0"
usage "query with empty SQL" query "$ID0" '  '
usage "query --handle with a bad id" query "$ID0" 'SELECT 1' --handle '../x'
usage "query --handle twice" query "$ID0" 'SELECT 1' --handle a --handle a
usage "query with 11 --handle" query "$ID0" 'SELECT 1' $(for i in $(seq 1 11); do printf -- '--handle t%s ' "$i"; done)
usage "query --max-rows 0" query "$ID0" 'SELECT 1' --max-rows 0
usage "get --limit 0" get "$ID0" h1 --limit 0
usage "get --limit not a size" get "$ID0" h1 --limit lots
usage "get --offset negative" get "$ID0" h1 --offset -1
usage "get -o empty" get "$ID0" h1 -o ''
usage "an option of another subcommand" list "$ID0" --stats
usage "-o on a subcommand without it" list "$ID0" -o f
usage "a subcommand's option before it" --json list "$ID0"
usage "add without a file" add "$ID0"
usage "add from stdin without --name" add "$ID0" -
usage "add --input-id with a slash" add "$ID0" "$TEST_TMP/in.csv" --input-id a/b
usage "add --name with a newline" add "$ID0" "$TEST_TMP/in.csv" --name "$(printf 'a\nb')"
usage "a URL that is not http(s)" --url ftp://127.0.0.1 list "$ID0"
usage "add --format of an unknown kind" add "$ID0" "$TEST_TMP/in.csv" --format xlsx
"$HULL" handle add "$ID0" /nonexistent/file.csv --url http://127.0.0.1:1 >/dev/null 2>"$TEST_TMP/err"; rc=$?
check "add of a missing file fails (1) naming it, before any call" sh -c "[ $rc -eq 1 ] && grep -q 'cannot open /nonexistent/file.csv' '$TEST_TMP/err'"
"$HULL" handle --url http://192.0.2.1:8750 list "$ID0" 2>"$TEST_TMP/err"; rc=$?
check "cleartext http to a host that is not loopback is refused (2)" sh -c "[ $rc -eq 2 ] && grep -q '^hull: handle: refusing cleartext http' '$TEST_TMP/err'"

port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$HULL" handle --url "http://127.0.0.1:$port" list "$ID0" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
check "an unreachable daemon: exit 1, naming the address" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$TEST_TMP/err') -eq 1 ] && grep -q '^hull: handle: .*cannot reach http://127.0.0.1:$port/hull.v1.Handles/List' '$TEST_TMP/err'"
HULL_URL="http://127.0.0.1:$port" "$HULL" handle inspect "$ID0" h1 2>"$TEST_TMP/err"; rc=$?
check "HULL_URL is the default address" sh -c "[ $rc -eq 1 ] && grep -q '127.0.0.1:$port/hull.v1.Handles/Inspect' '$TEST_TMP/err'"
"$HULL" handle --unix "$TEST_TMP/none.sock" list "$ID0" 2>"$TEST_TMP/err"; rc=$?
check "a missing unix socket: exit 1, naming it" sh -c "[ $rc -eq 1 ] && grep -q 'none.sock' '$TEST_TMP/err'"

# ---- a fake daemon: the requests as sent, answers shaped like the store's ----
cat >"$TEST_TMP/fake.py" <<'EOF'
import base64, hashlib, http.server, json, sys, urllib.parse
log, modefile = sys.argv[1], sys.argv[2]
TEXT = "héllo\n" * 3000  # 21,000 bytes: answered in pieces of at most 8,000
RAW = b"\x00\xffbin"
SUMS = [
    {"id": "sales", "kind": "table", "source": "cell", "bytes": "8192", "path": "sales.sqlite", "table": "data",
     "schema": {"region": "text", "x": "integer"}, "n_rows": 3, "n_cols": 2, "preview": "region,x\neu,1\nus,2\neu,3"},
    {"id": "my-data", "kind": "table", "source": "cell", "bytes": 4096, "path": "my-data.sqlite"},
    {"id": "note", "kind": "text", "source": "cell", "bytes": len(TEXT.encode()), "path": "note.txt", "preview": TEXT[:800]},
    {"id": "raw", "kind": "binary", "source": "input: x.bin", "bytes": 5, "path": "raw.bin", "preview": "<binary, 5 bytes>"},
]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                chunk = self.rfile.read(n + 2)[:n]
                if n == 0:
                    break
                raw += chunk
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if "?" in self.path:  # the streamed upload: the arguments in the query, the bytes raw
            path, query = self.path.split("?", 1)
            q = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
            with open(log, "a") as f:
                f.write(json.dumps({"path": path, "query": q, "type": self.headers.get("Content-Type"),
                                    "bytes": base64.b64encode(raw).decode()}) + "\n")
            ans = {"id": q["inputId"], "kind": "table" if q.get("format") in ("csv", "tsv") else "binary",
                   "source": "input " + q["name"], "bytes": len(raw), "path": q["inputId"] + ".bin"}
            data = json.dumps(ans).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Plimsoll-Request-Id", self.headers.get("Plimsoll-Request-Id", ""))
            self.end_headers()
            self.wfile.write(data)
            return
        body = json.loads(raw)
        mode = open(modefile).read().strip()
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path, "body": body}) + "\n")
        status, ans = 200, {}
        p = self.path.rsplit("/", 1)[1]
        if mode == "notfound":
            status, ans = 404, {"code": "not_found", "message": "no handle 'zz' in this session"}
        elif p == "List":
            ans = {"handles": SUMS}
        elif p == "Inspect":
            ans = dict([x for x in SUMS if x["id"] == body["id"]][0], columns=["region", "x"])
            if body["id"] == "my-data":
                ans.update(table="data", schema={"a": "real"}, n_rows="1", n_cols="1", preview="a\n1.5")
            if "head" in body:
                ans["head"] = [["eu", 1], ["us, \"west\"", None], ["eu", 3.5], ["é" * 50, 0]][: body["head"]]
            if body.get("stats"):
                ans["stats"] = {"region": {"count": 3, "nulls": 0, "min": "eu", "max": "us", "mean": None, "distinct": 2},
                                "x": {"count": 3, "nulls": 0, "min": 1, "max": 3, "mean": 2.0, "distinct": 3}}
        elif p == "Query":
            if mode == "bigquery":
                ans = {"handle": dict(SUMS[0], id="h9", source="query")}
            else:
                ans = {"columns": ["region", "s"], "rows": [["eu", 4], ["us", 2]], "n_rows": 2}
        elif p == "Read" and body["id"] == "raw":
            off, lim = body.get("offset", 0), body.get("limit", 8192)
            ans = {"id": "raw", "offset": off, "length": len(RAW[off:off + lim]), "total_bytes": len(RAW),
                   "eof": off + lim >= len(RAW), "content": base64.b64encode(RAW[off:off + lim]).decode(),
                   "sha256": hashlib.sha256(RAW if mode != "badsha" else b"").hexdigest()}
        elif p == "Read":
            raw = TEXT.encode()
            off, lim = body.get("offset", 0), body.get("limit", 8192)
            while off < len(raw) and (raw[off] & 0xC0) == 0x80: off += 1
            end = min(len(raw), off + lim, off + 8000)
            while end < len(raw) and (raw[end] & 0xC0) == 0x80: end -= 1
            if mode == "stuck": end = off
            ans = {"id": body["id"], "offset": off, "length": end - off, "total_bytes": str(len(raw)),
                   "eof": end == len(raw), "text": raw[off:end].decode()}
        elif p == "AddInput":
            ans = {"id": body["inputId"], "kind": "binary", "source": "input: " + body["name"],
                   "bytes": len(base64.b64decode(body["content"])), "path": body["inputId"] + ".bin"}
        data = json.dumps(ans).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Plimsoll-Request-Id", self.headers.get("Plimsoll-Request-Id", ""))
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
# last_request EXPR: a Python expression over r, the last request the fake daemon received
last_request() { tail -1 "$FAKE_LOG" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); v=eval(sys.argv[1]); print(json.dumps(v, sort_keys=True) if not isinstance(v,str) else v)' "$1"; }
if [ -s "$TEST_TMP/fake.port" ]; then
        export HULL_URL=http://127.0.0.1:$(cat "$TEST_TMP/fake.port")
        F() { "$HULL" handle "$@"; }
        F list "$ID0" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        check "fake: list posts {sessionId} to Handles/List" test "$(head -1 "$FAKE_LOG" | "$PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin), sort_keys=True))')" = '{"body": {"sessionId": "'$ID0'"}, "path": "/hull.v1.Handles/List"}'
        check "fake: list shows a header and one line a handle" sh -c "[ $rc -eq 0 ] && [ \$(wc -l <'$TEST_TMP/out') -eq 5 ] && head -1 '$TEST_TMP/out' | grep -qE '^ID +KIND +BYTES +ROWSxCOLS +SOURCE\$'"
        check "fake: list shows a table's bytes (a string) and rows x cols" grep -qE '^sales +table +8192 +3x2 +cell$' "$TEST_TMP/out"
        check "fake: list shows a binary handle without rows" grep -qE '^raw +binary +5 +- +input: x.bin$' "$TEST_TMP/out"
        check "fake: list asks Inspect for a table's rows and columns when List omits them" sh -c "grep -qE '^my-data +table +4096 +1x1 +cell\$' '$TEST_TMP/out' && grep -c Inspect '$FAKE_LOG' | grep -qx 1"
        out=$(F list "$ID0" --json); rc=$?
        check "fake: list --json prints the answer" sh -c "[ $rc -eq 0 ] && printf '%s' '$out' | '$PY' -c 'import json,sys; assert len(json.load(sys.stdin)[\"handles\"]) == 4'"

        F inspect "$ID0" sales --head 3 --stats >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        check "fake: inspect sends id, head and stats" test "$(last_request 'r["body"]')" = '{"head": 3, "id": "sales", "sessionId": "'$ID0'", "stats": true}'
        check "fake: inspect shows the summary" sh -c "[ $rc -eq 0 ] && grep -qx 'kind     table' '$TEST_TMP/out' && grep -qx 'rows     3 rows × 2 columns' '$TEST_TMP/out' && grep -qx 'schema   region text, x integer' '$TEST_TMP/out'"
        check "fake: inspect names the table as a query addresses it" grep -qx 'query as sales.data' "$TEST_TMP/out"
        check "fake: inspect shows the head as aligned text (NULL, numbers right-aligned)" sh -c "grep -qx 'head (3 rows)' '$TEST_TMP/out' && grep -qE '^  us, \"west\" +NULL\$' '$TEST_TMP/out' && grep -qE '^  eu +3.5\$' '$TEST_TMP/out' && grep -qE '^  eu +  1\$' '$TEST_TMP/out'"
        check "fake: inspect shows the stats" sh -c "grep -qx 'stats' '$TEST_TMP/out' && grep -qE '^  x +3 +0 +1 +3 +2.0 +3\$' '$TEST_TMP/out' && grep -qE '^  region +3 +0 +eu +us +NULL +2\$' '$TEST_TMP/out'"
        out=$(F inspect "$ID0" sales --head 4 | tail -1)
        check "fake: inspect cuts a long cell at 40 characters" grep -qxE "  $(printf 'é%.0s' $(seq 1 39))… +0" <<<"$out"
        out=$(F inspect "$ID0" sales --head 2 --csv | sed -n '/^head/,$p'); rc=$?
        check "fake: inspect --csv: RFC 4180 quoting, NULL empty" test "$out" = 'head (2 rows)
region,x
eu,1
"us, ""west""",'
        F inspect "$ID0" sales >/dev/null
        check "fake: inspect without options sends no head, tail or stats" test "$(last_request 'sorted(r["body"])')" = '["id", "sessionId"]'

        out=$(F query "$ID0" 'SELECT region, sum(x) AS s FROM sales.data GROUP BY 1' 2>"$TEST_TMP/err"); rc=$?
        check "fake: query prints CSV with a header" test "$rc:$out" = "0:region,s
eu,4
us,2"
        check "fake: query without --handle attaches every table handle from List" test "$(last_request 'r["body"]["handles"]')" = '["sales", "my-data"]'
        check "fake: ... after one List call" test "$(tail -2 "$FAKE_LOG" | head -1 | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["path"])')" = /hull.v1.Handles/List
        F query "$ID0" 'SELECT * FROM sales.data' --handle sales --max-rows 10 >/dev/null
        check "fake: query --handle --max-rows" test "$(last_request 'r["body"]')" = '{"handles": ["sales"], "maxRows": 10, "sessionId": "'$ID0'", "sql": "SELECT * FROM sales.data"}'
        printf 'SELECT 1\n' | F query "$ID0" - --handle sales >/dev/null
        check "fake: query SQL from stdin" test "$(last_request 'r["body"]["sql"]')" = 'SELECT 1'
        echo bigquery >"$MODE"
        F query "$ID0" 'SELECT * FROM sales.data' --handle sales >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        check "fake: a result that became a handle prints its id and summary" sh -c "[ $rc -eq 0 ] && head -1 '$TEST_TMP/out' | grep -qx 'id       h9' && grep -q 'new table handle h9' '$TEST_TMP/err'"
        echo ok >"$MODE"

        F get "$ID0" note >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        "$PY" -c 'import sys; sys.stdout.write("héllo\n" * 3000)' >"$TEST_TMP/want"
        check "fake: get reads a text handle to its end (3 pieces)" sh -c "[ $rc -eq 0 ] && cmp -s '$TEST_TMP/want' '$TEST_TMP/out' && [ \$(tail -3 '$FAKE_LOG' | grep -c Read) -eq 3 ]"
        F get "$ID0" note --limit 10000 >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        check "fake: get --limit past one answer reads on, up to the limit" sh -c "[ $rc -eq 0 ] && [ \$(wc -c <'$TEST_TMP/out') -le 10000 ] && [ \$(wc -c <'$TEST_TMP/out') -ge 9997 ] && head -c \$(wc -c <'$TEST_TMP/out') '$TEST_TMP/want' | cmp -s - '$TEST_TMP/out'"
        check "fake: ... asking for what is left" test "$(last_request 'r["body"]["limit"]')" = 2000
        n=$(wc -l <"$FAKE_LOG")
        F get "$ID0" note --offset 2 --limit 1000 -o "$TEST_TMP/got" 2>"$TEST_TMP/err"; rc=$?
        check "fake: get --offset --limit -o: the slice from a character boundary, whole characters, in FILE" sh -c "[ $rc -eq 0 ] && [ \$(wc -c <'$TEST_TMP/got') -eq 999 ] && head -c 4 '$TEST_TMP/got' | grep -qx llo && ! ls '$TEST_TMP'/got.tmp-* 2>/dev/null"
        check "fake: get sends offset and limit" test "$(sed -n "$((n + 2))p" "$FAKE_LOG" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); print(r["body"]["offset"], r["body"]["limit"])')" = '2 1000'
        F get "$ID0" sales >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        check "fake: get of a table points to query and inspect (1)" sh -c "[ $rc -eq 1 ] && [ ! -s '$TEST_TMP/out' ] && grep -q 'is a table: use .hull handle inspect' '$TEST_TMP/err' && grep -q 'query' '$TEST_TMP/err'"
        F get "$ID0" raw >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        check "fake: get of a binary handle writes its bytes" sh -c "[ $rc -eq 0 ] && printf '\\000\\377bin' | cmp -s - '$TEST_TMP/out'"
        echo badsha >"$MODE"
        F get "$ID0" raw -o "$TEST_TMP/raw" 2>"$TEST_TMP/err"; rc=$?
        check "fake: a binary handle whose digest does not match is not written (1)" sh -c "[ $rc -eq 1 ] && [ ! -e '$TEST_TMP/raw' ] && ! ls '$TEST_TMP'/raw.tmp-* 2>/dev/null && grep -q 'do not match the SHA-256' '$TEST_TMP/err'"
        echo ok >"$MODE"
        F get "$ID0" zz >/dev/null 2>"$TEST_TMP/err"; rc=$?
        check "fake: get of an unknown handle fails (1)" sh -c "[ $rc -eq 1 ] && grep -q \"no handle 'zz'\" '$TEST_TMP/err'"
        echo stuck >"$MODE"
        F get "$ID0" note >/dev/null 2>"$TEST_TMP/err"; rc=$?
        check "fake: a daemon that reads nothing and no end is not looped on (1)" sh -c "[ $rc -eq 1 ] && grep -q 'malformed' '$TEST_TMP/err'"
        echo ok >"$MODE"

        out=$(F add "$ID0" "$TEST_TMP/in.csv" 2>"$TEST_TMP/err"); rc=$?
        check "fake: add prints the new handle's id (made from the file name)" test "$rc:$out" = "0:in.csv"
        check "fake: add streams the file's bytes to Handles/Upload, the arguments in the query (csv from the extension)" \
                test "$(last_request '[r["path"], r["query"], r["type"], r["bytes"]]')" = '["/hull.v1.Handles/Upload", {"format": "csv", "inputId": "in.csv", "name": "in.csv", "sessionId": "'$ID0'"}, "application/octet-stream", "'$(base64 -w0 <"$TEST_TMP/in.csv")'"]'
        out=$(printf 'x\0y' | F add "$ID0" - --name 'my file (1)&x=2.txt' 2>"$TEST_TMP/err"); rc=$?
        check "fake: add from stdin (chunked): the id made from --name, the name escaped in the query" \
                test "$rc:$out:$(last_request '[r["query"]["name"], r["query"]["format"], r["bytes"]]')" = '0:my_file__1__x_2.txt:["my file (1)&x=2.txt", "binary", "eAB5"]'
        out=$(F add "$ID0" "$TEST_TMP/in.csv" --input-id up-1 --name data.bin --format tsv); rc=$?
        check "fake: add --input-id --name --format" test "$rc:$out:$(last_request 'r["query"]["name"] + r["query"]["format"]')" = "0:up-1:data.bintsv"
        head -c $((6 << 20)) /dev/urandom >"$TEST_TMP/big"
        out=$(F add "$ID0" "$TEST_TMP/big" 2>"$TEST_TMP/err"); rc=$?
        check "fake: add of a 6 MiB file (over any one request body of the JSON API) streams it whole" \
                test "$rc:$(last_request 'len(__import__("base64").b64decode(r["bytes"]))')" = "0:$((6 << 20))"

        echo notfound >"$MODE"
        F inspect "$ID0" zz >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
        check "fake: a Connect error prints its code and message (1)" sh -c "[ $rc -eq 1 ] && grep -qx \"hull: handle: not_found: no handle 'zz' in this session\" '$TEST_TMP/err'"
        unset HULL_URL
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
serve_opts=(--handle-max 20M)
if "$HULL" serve --help 2>/dev/null | grep -q -- '--handles-dir'; then
        serve_opts+=(--handles-dir "$TEST_TMP/handles")
fi
if ! start_server "$LOG" --socket "$SOCK" --audit-dir "$TEST_TMP/audit" --work-dir "$TEST_TMP" "${serve_opts[@]}"; then
        fail "hull serve starts" "$(cat "$LOG")"
        exit 1
fi
export HULL_URL=$URL
HH() { "$HULL" handle "$@"; }

ID=$("$HULL" session open --owner ci 2>"$TEST_TMP/err"); rc=$?
if [ "$rc" -ne 0 ] || ! grep -qE '^[0-9a-f]{1,64}$' <<<"$ID"; then
        fail "session open prints a session ID" "rc=$rc out=$ID err=$(cat "$TEST_TMP/err")"
        exit 1
fi
pass "session open prints a session ID"
"$HULL" session cell "$ID" --python 'save("sales", [{"region":"eu","x":1},{"region":"us","x":2},{"region":"eu","x":3}])
save("note", "hello")' >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "a python cell saves the handles sales and note" test "$rc" -eq 0

HH list "$ID" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "list shows sales (a 3x2 table) and note (text)" \
        sh -c "[ $rc -eq 0 ] && grep -qE '^sales +table +[0-9]+ +3x2 ' '$TEST_TMP/out' && grep -qE '^note +text +[0-9]+ +- ' '$TEST_TMP/out'"
HH inspect "$ID" sales --stats --head 3 >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "inspect sales --stats shows 3 rows, the head and the stats" \
        sh -c "[ $rc -eq 0 ] && grep -q '3 rows' '$TEST_TMP/out' && grep -qx 'head (3 rows)' '$TEST_TMP/out' && grep -qE '^  x +3 +0 +1 +3 +2.0 +3\$' '$TEST_TMP/out'"
HH inspect "$ID" sales --json >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "inspect --json is the store's summary" sh -c "[ $rc -eq 0 ] && '$PY' -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s[\"id\"] == \"sales\" and s[\"kind\"] == \"table\" and int(s[\"n_rows\"]) == 3, s' '$TEST_TMP/out'"
HH query "$ID" "SELECT region, sum(x) AS s FROM sales.data GROUP BY 1 ORDER BY 1" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "query GROUP BY prints eu,4 and us,2 (every table attached)" test "$rc:$(cat "$TEST_TMP/out")" = "0:region,s
eu,4
us,2"
out=$(HH query "$ID" "SELECT count(*) FROM sales.data" --handle sales 2>"$TEST_TMP/err"); rc=$?
checkv "query --handle sales" test "$rc:$out" = "0:count(*)
3"
HH query "$ID" "DELETE FROM sales.data" --handle sales >/dev/null 2>"$TEST_TMP/err"; rc=$?
checkv "query refuses a write (1)" sh -c "[ $rc -eq 1 ] && grep -q '^hull: handle: ' '$TEST_TMP/err' && ! grep -q unimplemented '$TEST_TMP/err'"
HH get "$ID" note >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "get note prints hello" test "$rc:$(cat "$TEST_TMP/out")" = "0:hello"
HH get "$ID" sales >/dev/null 2>"$TEST_TMP/err"; rc=$?
checkv "get of a table points to query/inspect (1)" sh -c "[ $rc -eq 1 ] && grep -q 'is a table' '$TEST_TMP/err'"

printf 'city,n\nParis,1\nOslo,2\n' >"$TEST_TMP/cities.csv"
HH add "$ID" "$TEST_TMP/cities.csv" --format binary >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "add --format binary uploads a local CSV as bytes and prints its id" test "$rc:$(cat "$TEST_TMP/out")" = "0:cities.csv"
out=$(HH add "$ID" "$TEST_TMP/cities.csv" --format binary 2>"$TEST_TMP/err"); rc=$?
checkv "add again is idempotent (the same id)" test "$rc:$out" = "0:cities.csv"
HH list "$ID" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "list shows the input as binary" sh -c "[ $rc -eq 0 ] && grep -qE '^cities.csv +binary +22 ' '$TEST_TMP/out'"
HH get "$ID" cities.csv -o "$TEST_TMP/cities.back" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "get of the input gives back its bytes (checked against the daemon's SHA-256)" sh -c "[ $rc -eq 0 ] && cmp -s '$TEST_TMP/cities.csv' '$TEST_TMP/cities.back'"
printf 'city,n\nParis,1\nOslo,3\n' >"$TEST_TMP/cities2.csv"
HH add "$ID" "$TEST_TMP/cities2.csv" --input-id cities.csv --name cities.csv --format binary >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "add of other bytes under the same input ID is refused (1)" sh -c "[ $rc -eq 1 ] && grep -q 'already exists' '$TEST_TMP/err'"
# A CSV becomes a table: streamed, typed over every row, queried at once.
"$PY" -c '
import sys
with open(sys.argv[1], "w") as f:
    f.write("region,qty,price\n")
    for i in range(300000):
        f.write("%s,%d,%.2f\n" % (("north", "south", "east")[i % 3], i % 7, i * 0.25))
' "$TEST_TMP/sales.csv"
HH add "$ID" "$TEST_TMP/sales.csv" --input-id sales300k >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "add of a 300,000-row CSV makes a table handle" test "$rc:$(cat "$TEST_TMP/out")" = "0:sales300k"
out=$(HH query "$ID" "SELECT region, count(*), sum(qty) FROM sales300k.data GROUP BY 1 ORDER BY 1" --handle sales300k 2>"$TEST_TMP/err"); rc=$?
want=$("$PY" -c '
import csv, sys, collections
n, q = collections.Counter(), collections.Counter()
for r in csv.DictReader(open(sys.argv[1])):
    n[r["region"]] += 1
    q[r["region"]] += int(r["qty"])
print("region,count(*),sum(qty)")
for k in sorted(n):
    print("%s,%d,%d" % (k, n[k], q[k]))
' "$TEST_TMP/sales.csv")
checkv "the table answers SQL over every row (types inferred: qty integer)" test "$rc:$out" = "0:$want"
out=$(HH inspect "$ID" sales300k --json 2>"$TEST_TMP/err"); rc=$?
checkv "its schema: region text, qty integer, price real; its source names the upload's digest" "$PY" -c '
import json, sys, hashlib
s = json.loads(sys.argv[1])
assert s["schema"] == {"region": "text", "qty": "integer", "price": "real"}, s["schema"]
assert hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest() in s["source"], s["source"]
' "$out" "$TEST_TMP/sales.csv"
head -c $((25 << 20)) /dev/urandom >"$TEST_TMP/huge.bin"
HH add "$ID" "$TEST_TMP/huge.bin" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "an upload over --handle-max (20M here) is refused (1), saying which bound" sh -c "[ $rc -eq 1 ] && grep -q 'resource_exhausted: .*--handle-max' '$TEST_TMP/err' && ! HH inspect '$ID' huge.bin >/dev/null 2>&1"
printf 'a,b\n1,2\n3\n' >"$TEST_TMP/ragged.csv"
HH add "$ID" "$TEST_TMP/ragged.csv" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "a ragged CSV is refused (1) naming its line; nothing is kept" sh -c "[ $rc -eq 1 ] && grep -q 'line 3' '$TEST_TMP/err' && ! HH inspect '$ID' ragged.csv >/dev/null 2>&1"
out=$(HH --unix "$SOCK" list "$ID" --json 2>"$TEST_TMP/err"); rc=$?
checkv "list --json over the unix socket" bash -c "[ $rc -eq 0 ] && grep -q '\"id\": *\"cities.csv\"' <<<'$out'"

HH inspect "$ID" nosuch >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "inspect of a bad id fails (1) with a message naming it" sh -c "[ $rc -eq 1 ] && [ ! -s '$TEST_TMP/out' ] && grep -q '^hull: handle: [a-z_]*: .*nosuch' '$TEST_TMP/err'"
HH get "$ID" nosuch >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "get of a bad id fails (1) with a message" sh -c "[ $rc -eq 1 ] && grep -q \"no handle 'nosuch'\" '$TEST_TMP/err'"
HH list ffffffffffffffffffffffffffffffff >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "an unknown session is not_found (1)" sh -c "[ $rc -eq 1 ] && grep -q '^hull: handle: not_found: ' '$TEST_TMP/err'"

# a document (issue 25): kept as an input, then read in the parser's sandbox into handles
printf '# Notes\n\n| k | v |\n|---|---|\n| a | 1 |\n| b | 2 |\n' >"$TEST_TMP/notes.md"
HH add "$ID" "$TEST_TMP/notes.md" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
tid=$(grep -o '^  h[0-9]*: table_1' "$TEST_TMP/out" | grep -o 'h[0-9]*')
checkv "add of a document keeps it and reads it: a text handle and a table handle" \
        sh -c "[ $rc -eq 0 ] && head -1 '$TEST_TMP/out' | grep -qx notes.md && grep -q 'markdown, 1 page' '$TEST_TMP/out' && [ -n '$tid' ]"
HH query "$ID" "SELECT sum(v) AS s FROM $tid" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "the document's table answers SQL" sh -c "[ $rc -eq 0 ] && grep -qx 3 '$TEST_TMP/out'"
printf '%%PDF-1.4 not really\n' >"$TEST_TMP/broken.pdf"
HH add "$ID" "$TEST_TMP/broken.pdf" >"$TEST_TMP/out" 2>"$TEST_TMP/err"; rc=$?
checkv "add of a damaged document keeps the file and says why it was not read (1)" \
        sh -c "[ $rc -eq 1 ] && grep -qx broken.pdf '$TEST_TMP/out' && grep -q 'not read: read_document: .*PDF' '$TEST_TMP/err'"

"$HULL" session close "$ID" >/dev/null 2>&1
HH list "$ID" >/dev/null 2>"$TEST_TMP/err"; rc=$?
checkv "list after close fails (1)" sh -c "[ $rc -eq 1 ] && ! grep -q unimplemented '$TEST_TMP/err'"
stop_server; rc=$?
checkv "hull serve exits 0" test "$rc" -eq 0
checkv "hull serve logged no error" sh -c "! grep -q 'level=error' '$LOG'"
