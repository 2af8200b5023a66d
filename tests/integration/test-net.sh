#!/usr/bin/env bash
# test-net.sh: `hull exec --net limited`: the sandbox reaches only the allowed hosts, through
# hull's proxy, against HTTP and HTTPS servers of this test on 127.0.0.1 (names mapped with the
# testing hosts file, loopback let through with --net-allow-loopback only where a case says so).
# Every refusal is checked in the connection log. The network probes of the containment suite run
# in the limited sandbox too (tests/security/probe.c refuses to run outside a sandbox).
. "$(dirname "$0")/../lib.sh"

T=20 # --timeout of each sandboxed run, seconds
PY=/usr/bin/python3

if ! "$HULL" exec --timeout 10 -- /bin/true >/dev/null 2>&1; then
        skip "net" "the container tier does not run here (user namespaces?)"
        exit 77
fi
for tool in curl openssl; do
        if ! command -v "$tool" >/dev/null 2>&1; then
                fail "net: $tool is installed" "scripts/install-deps.sh installs it"
                exit 1
        fi
done

W=$TEST_TMP/w
mkdir -p "$W/site"
chmod 755 "$W" "$W/site"
TOKEN=net-$$-$RANDOM
printf '%s\n' "$TOKEN" >"$W/site/index.html"

# A throwaway certificate for allowed.test (and other.test), readable in the sandbox.
if ! openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=allowed.test \
        -addext "subjectAltName=DNS:allowed.test,DNS:other.test,DNS:meta.test" \
        -keyout "$TEST_TMP/key.pem" -out "$W/cert.pem" >/dev/null 2>&1; then
        fail "net: openssl makes a test certificate" "openssl req failed"
        exit 1
fi
chmod 644 "$W/cert.pem"

# An HTTP and an HTTPS server on 127.0.0.1, ports written to a file.
"$PY" - "$W/site" "$TEST_TMP/key.pem" "$W/cert.pem" "$TEST_TMP/ports" >"$TEST_TMP/servers.log" 2>&1 <<'EOF' &
import functools, http.server, os, ssl, sys, threading
site, key, cert, ports = sys.argv[1:5]
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        self.send_response(200); self.send_header("Content-Length", str(len(body) + 5)); self.end_headers()
        self.wfile.write(b"echo:" + body)
h = functools.partial(H, directory=site)
plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(cert, key)
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
with open(ports + ".tmp", "w") as f:
    f.write("%d %d\n" % (plain.server_address[1], tls.server_address[1]))
os.rename(ports + ".tmp", ports)
threading.Thread(target=tls.serve_forever, daemon=True).start()
plain.serve_forever()
EOF
pids+=($!)
wait_for_file "$TEST_TMP/ports" "${pids[-1]}"
read -r HP SP <"$TEST_TMP/ports" 2>/dev/null
if [ -z "${HP:-}" ] || [ "$(curl -s --noproxy '*' "http://127.0.0.1:$HP/index.html")" != "$TOKEN" ]; then
        fail "net: the test's servers answer on 127.0.0.1" "$(head -c 400 "$TEST_TMP/servers.log")"
        exit 1
fi

# The proxy's view of names: the testing hosts file.
HOSTS=$TEST_TMP/hosts
cat >"$HOSTS" <<EOF
127.0.0.1 allowed.test other.test
169.254.169.254 meta.test
10.1.2.3 private.test
EOF
LOG=$TEST_TMP/net.log

# sbx TAG [HULL-OPTION...] -- SHELL-COMMAND: run sh -c SHELL-COMMAND in a sandbox; RC, OUT, ERR.
sbx() {
        local tag=$1 opts=()
        shift
        while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        OUT=$TEST_TMP/$tag.out ERR=$TEST_TMP/$tag.err
        timeout -k 5 $((T + 20)) "$HULL" exec --timeout "$T" --workdir "$W" "${opts[@]}" -- /bin/sh -c "$1" \
                >"$OUT" 2>"$ERR"
        RC=$?
}
why() { printf 'exit=%s out=[%s] err=[%s]' "$RC" "$(head -c 300 "$OUT")" "$(head -c 300 "$ERR" | tr '\n' ' ')"; }
LIMITED=(--net limited --net-hosts "$HOSTS" --net-log "$LOG")

# ---- allowed ----------------------------------------------------------------------------------

sbx allowed-http "${LIMITED[@]}" --allow-host allowed.test --net-allow-loopback -- \
        "curl -sS --max-time 10 http://allowed.test:$HP/index.html"
if [ "$RC" -eq 0 ] && [ "$(cat "$OUT")" = "$TOKEN" ]; then pass "net: an allowed host answers over HTTP"
else fail "net: an allowed host answers over HTTP" "$(why)"; fi

sbx allowed-https "${LIMITED[@]}" --allow-host '*.test' --net-allow-loopback -- \
        "curl -sS --max-time 10 --cacert /workspace/cert.pem https://allowed.test:$SP/index.html"
if [ "$RC" -eq 0 ] && [ "$(cat "$OUT")" = "$TOKEN" ]; then
        pass "net: an allowed host (*.test) answers over HTTPS through CONNECT"
else fail "net: an allowed host (*.test) answers over HTTPS through CONNECT" "$(why)"; fi

sbx allowed-post "${LIMITED[@]}" --allow-host allowed.test --net-allow-loopback -- \
        "curl -sS --max-time 10 --data-binary hello-body http://allowed.test:$HP/echo"
if [ "$RC" -eq 0 ] && [ "$(cat "$OUT")" = "echo:hello-body" ]; then pass "net: a POST's body is forwarded"
else fail "net: a POST's body is forwarded" "$(why)"; fi

check "net: the log shows the allowed HTTP, CONNECT and POST connections with their bytes" \
        test "$(grep -cE "net allowed HTTP allowed\.test:$HP addr=127\.0\.0\.1 up=[1-9][0-9]* down=[1-9]" "$LOG")" -eq 2 \
        -a "$(grep -cE "net allowed CONNECT allowed\.test:$SP addr=127\.0\.0\.1 up=[1-9][0-9]* down=[1-9]" "$LOG")" -eq 1

# ---- refused ----------------------------------------------------------------------------------

: >"$LOG"
sbx not-listed "${LIMITED[@]}" --allow-host allowed.test --net-allow-loopback -- \
        "curl -sS --max-time 10 -o /dev/null -w '%{http_code}' http://other.test:$HP/index.html; echo;
         curl -sS --max-time 10 --cacert /workspace/cert.pem https://other.test:$SP/index.html; echo rc=\$?"
if grep -q '^403$' "$OUT" && ! grep -q "$TOKEN" "$OUT" && grep -q '^rc=56$' "$OUT" &&
        [ "$(grep -c "net refused .* other\.test:.* reason=not on the allowed hosts" "$LOG")" -eq 2 ]; then
        pass "net: a host not on the list is refused (HTTP 403, CONNECT 403) and logged"
else fail "net: a host not on the list is refused (HTTP 403, CONNECT 403) and logged" "$(why) log=[$(cat "$LOG")]"; fi

: >"$LOG"
sbx raw-ip "${LIMITED[@]}" --allow-host allowed.test --net-allow-loopback -- \
        "curl -sS --max-time 10 http://127.0.0.1:$HP/index.html; curl -sS --max-time 10 -k https://127.0.0.1:$SP/index.html; echo rc=\$?"
if ! grep -q "$TOKEN" "$OUT" && grep -q '^rc=56$' "$OUT" &&
        [ "$(grep -c "net refused .* 127\.0\.0\.1:.* reason=an address, not on the allowed hosts" "$LOG")" -eq 2 ]; then
        pass "net: a raw IP address is refused (HTTP and CONNECT) and logged"
else fail "net: a raw IP address is refused (HTTP and CONNECT) and logged" "$(why) log=[$(cat "$LOG")]"; fi

: >"$LOG"
sbx denied-addr "${LIMITED[@]}" --allow-host '*.test' -- \
        "curl -sS --max-time 10 http://allowed.test:$HP/index.html;
         curl -sS --max-time 10 --cacert /workspace/cert.pem https://allowed.test:$SP/index.html; echo rc=\$?"
if ! grep -q "$TOKEN" "$OUT" && grep -q '^rc=56$' "$OUT" &&
        [ "$(grep -c "net refused .* allowed\.test:.* reason=egress: blocked by egress policy: blocked internal address 127\.0\.0\.1 (loopback)" "$LOG")" -eq 2 ]; then
        pass "net: an allowed name that resolves to loopback is refused without the testing override, and logged"
else fail "net: an allowed name that resolves to loopback is refused without the testing override, and logged" "$(why) log=[$(cat "$LOG")]"; fi

: >"$LOG"
sbx metadata "${LIMITED[@]}" --allow-host '*.test' --allow-host 169.254.169.254 --net-allow-loopback -- \
        "curl -sS --max-time 10 http://meta.test/latest/meta-data/; curl -sS --max-time 10 http://169.254.169.254/;
         curl -sS --max-time 10 http://private.test:$HP/"
if [ "$(grep -c "net refused HTTP .*reason=egress: blocked by egress policy: blocked cloud metadata endpoint 169\.254\.169\.254" "$LOG")" -eq 2 ] &&
        grep -q "net refused HTTP private\.test:$HP .*blocked internal address 10\.1\.2\.3 (private)" "$LOG"; then
        pass "net: the metadata address (by name and listed literally) and a private address are refused even with the loopback override"
else fail "net: the metadata address (by name and listed literally) and a private address are refused even with the loopback override" "$(why) log=[$(cat "$LOG")]"; fi

: >"$LOG"
sbx direct "${LIMITED[@]}" --allow-host allowed.test --net-allow-loopback -- \
        "curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:$HP/index.html; echo rc=\$?;
         $PY -c 'import socket,sys
for a in sys.argv[1:]:
    try:
        socket.create_connection((a, $HP), timeout=3); print(\"CONNECTED\", a)
    except OSError as e: print(\"failed\", a, e.errno)' 127.0.0.1 10.0.0.1 1.1.1.1"
if grep -q '^rc=7$' "$OUT" && ! grep -q "$TOKEN\|CONNECTED" "$OUT" && [ "$(grep -c '^failed' "$OUT")" -eq 3 ] &&
        grep -q '^failed 1.1.1.1 101$' "$OUT" && [ ! -s "$LOG" ]; then
        pass "net: a direct connection that bypasses the proxy fails (no route), and never reaches the proxy"
else fail "net: a direct connection that bypasses the proxy fails (no route), and never reaches the proxy" "$(why)"; fi

: >"$LOG"
sbx bad-request "${LIMITED[@]}" --allow-host allowed.test -- \
        "$PY -c 'import socket
s = socket.create_connection((\"127.0.0.1\", 3128), timeout=5)
s.sendall(b\"GET /relative HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n\")
print(s.recv(100).split(b\"\\r\\n\")[0].decode())
s = socket.create_connection((\"127.0.0.1\", 3128), timeout=5)
s.sendall(b\"CONNECT allowed.test:443 HTTP/1.1\\r\\nX: \" + b\"a\" * 20000 + b\"\\r\\n\\r\\n\")
print(s.recv(100).split(b\"\\r\\n\")[0].decode())'"
if grep -q '^HTTP/1.1 400 ' "$OUT" && grep -q '^HTTP/1.1 431 ' "$OUT" &&
        grep -q "net refused - .*reason=not a CONNECT or an absolute http:// request" "$LOG" &&
        grep -q "reason=the request head is too large" "$LOG"; then
        pass "net: a malformed request (400) and an oversized head (431) are refused and logged"
else fail "net: a malformed request (400) and an oversized head (431) are refused and logged" "$(why) log=[$(cat "$LOG")]"; fi

: >"$LOG"
sbx cidr "${LIMITED[@]}" --allow-host '*.test' --net-allow-cidr 127.0.0.1/32 --net-allow-cidr 169.254.0.0/16 -- \
        "curl -sS --max-time 10 http://allowed.test:$HP/index.html; curl -sS --max-time 10 http://meta.test/"
if [ "$(head -n 1 "$OUT")" = "$TOKEN" ] && grep -q "net allowed HTTP allowed\.test:$HP addr=127\.0\.0\.1" "$LOG" &&
        grep -q "net refused HTTP meta\.test:80 .*blocked cloud metadata endpoint 169\.254\.169\.254" "$LOG"; then
        pass "net: --net-allow-cidr lets an internal address through, never the metadata one"
else fail "net: --net-allow-cidr lets an internal address through, never the metadata one" "$(why) log=[$(cat "$LOG")]"; fi
out=$("$HULL" exec --net limited --net-allow-cidr 10.0.0.0/33 -- /bin/true 2>&1); rc=$?
check "net: a malformed --net-allow-cidr is refused" test "$rc" -eq 125 -a -n "$(echo "$out" | grep -- "'10.0.0.0/33' is not an address or a CIDR")"

# ---- none and the options ---------------------------------------------------------------------

sbx none -- "env | grep -ci proxy; curl -sS --max-time 5 -x http://127.0.0.1:3128 http://allowed.test:$HP/; echo rc=\$?"
if grep -q '^0$' "$OUT" && grep -q '^rc=7$' "$OUT"; then
        pass "net: --net none (the default) sets no proxy and has nothing on port 3128"
else fail "net: --net none (the default) sets no proxy and has nothing on port 3128" "$(why)"; fi

sbx env-limited "${LIMITED[@]}" --allow-host allowed.test -- "echo \"\$HTTP_PROXY \$HTTPS_PROXY \$http_proxy \$https_proxy [\$NO_PROXY]\""
check "net: --net limited sets HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy and an empty NO_PROXY" \
        test "$(cat "$OUT")" = "http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128 []"

out=$("$HULL" exec --allow-host allowed.test -- /bin/true 2>&1); rc=$?
check "net: --allow-host without --net limited is refused" test "$rc" -eq 125 -a -n "$(echo "$out" | grep -- '--allow-host needs --net limited')"
out=$("$HULL" exec --net limited --allow-host 'bad host!' -- /bin/true 2>&1); rc=$?
check "net: a malformed --allow-host is refused" test "$rc" -eq 125 -a -n "$(echo "$out" | grep -- "not 'bad host!'")"
out=$("$HULL" exec --net everything -- /bin/true 2>&1); rc=$?
check "net: an unknown --net mode is refused" test "$rc" -eq 125 -a -n "$(echo "$out" | grep -- "must be 'none', 'limited' or 'unrestricted'")"
out=$("$HULL" exec --tier process --no-isolation-warning --net limited -- /bin/true 2>&1); rc=$?
check "net: --net limited needs the container tier" test "$rc" -eq 125 -a -n "$(echo "$out" | grep -- 'needs the container tier')"

sbx json "${LIMITED[@]}" --allow-host allowed.test --net-allow-loopback --json -- \
        "curl -sS --max-time 10 -o /dev/null http://allowed.test:$HP/index.html; curl -sS -o /dev/null http://other.test:$HP/"
check "net: --json reports the proxy's totals" \
        "$PY" -c 'import json,sys; n=json.load(open(sys.argv[1]))["net"]; sys.exit(0 if n["allowed"]==1 and n["refused"]==1 and n["bytes_down"]>0 else 1)' "$OUT"

# ---- containment in the limited mode ----------------------------------------------------------

PROBE_BIN=$BUILD/tests/security/probe
if [ -x "$PROBE_BIN" ] && [ "$(id -u)" -eq 0 ]; then
        install -m 0755 "$PROBE_BIN" "$W/probe"
        chown 65534:65534 "$W/probe"
        HOST_PIDNS=$(stat -L -c %i /proc/self/ns/pid)
        HOST_USERNS=$(stat -L -c %i /proc/self/ns/user)
        probe() {
                OUT=$TEST_TMP/probe.out ERR=$TEST_TMP/probe.err
                timeout -k 5 $((T + 20)) "$HULL" exec --timeout "$T" --workdir "$W" "${LIMITED[@]}" \
                        --allow-host allowed.test --net-allow-loopback \
                        --env HULL_HOST_PIDNS="$HOST_PIDNS" --env HULL_HOST_USERNS="$HOST_USERNS" \
                        -- /workspace/probe "$@" >"$OUT" 2>"$ERR"
                RC=$?
                LINE=$(head -n 1 "$OUT")
        }
        . "$(dirname "$0")/../security/probe-lib.sh"
        why() { printf 'exit=%s line=[%s] stderr=[%s]' "$RC" "$LINE" "$(head -c 400 "$ERR" | tr '\n' ' ')"; }
        probe netifs $(ls /sys/class/net 2>/dev/null)
        expect "net: limited: only the loopback interface is visible (probe)" "$CONTAINED"
        host_ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n 1)
        targets=(127.0.0.1 "$HP" 127.0.0.1 "$SP")
        [ -n "$host_ip" ] && targets+=("$host_ip" "$HP")
        probe connect-tcp "${targets[@]}"
        expect "net: limited: the host's services on 127.0.0.1 and its own address are unreachable (probe)" "$CONTAINED"
else
        skip "net: limited: containment probes" "needs root and the probe ($PROBE_BIN)"
fi

# The whole containment suite with every probe in a limited sandbox (its lines renamed).
SEC=$(dirname "$0")/../security/test-containment.sh
if [ "$(id -u)" -eq 0 ] && [ -x "$PROBE_BIN" ]; then
        HULL_CONTAINMENT_NET=limited bash "$SEC" | sed -E 's/^(ok|not ok|skip) - containment: /\1 - net limited: containment: /'
        rc=${PIPESTATUS[0]}
        [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || fail "net limited: the containment suite" "exit $rc"
fi
