# test-serve-kernel-check.sh: hull serve's runsc self-check runs in the background (issue 25: the
# embedded server of the Python library starts without waiting for it). Ordering, not durations:
# runsc is a wrapper that blocks until the test opens its gate, so the check is known to be
# running; meanwhile /healthz answers, Describe and a Run whose floor is kernel wait (they name or
# need the highest tier), and once the gate opens they answer as the check decided: kernel (real
# runsc, as root) or container (no runsc here: the wrapper fails, and the floor is refused).
source "$(dirname "$0")/../lib.sh"

real=""
if [ "$(id -u)" -eq 0 ] && [ -x /usr/bin/runsc ]; then real=/usr/bin/runsc; fi
GATE=$TEST_TMP/runsc-gate
cat >"$GATE" <<SH
#!/bin/sh
: >"$TEST_TMP/called"
i=0
while [ ! -e "$TEST_TMP/go" ] && [ \$i -lt 600 ]; do /bin/sleep 0.05; i=\$((i + 1)); done
${real:+exec $real "\$@"}
echo "runsc-gate: no runsc here" >&2
exit 1
SH
chmod 0755 "$GATE"

LOG=$TEST_TMP/serve.log
env -u HULL_KERNEL_TIER HULL_RUNSC="$GATE" "$HULL" serve --listen 127.0.0.1:0 >"$LOG" 2>&1 &
SERVER_PID=$!
pids+=("$SERVER_PID")
for _ in $(seq 1 600); do grep -q 'event=listening' "$LOG" && break; sleep 0.05; done
ADDR=$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$LOG" | head -1 | cut -d= -f2)
[ -n "$ADDR" ] || { fail "kernel check: hull serve starts" "$(tail -n 5 "$LOG" 2>&1)"; : >"$TEST_TMP/go"; exit 1; }
URL=http://$ADDR
for _ in $(seq 1 600); do [ -e "$TEST_TMP/called" ] && break; sleep 0.05; done
check "kernel check: hull serve listens while its runsc check is still running" \
        test -e "$TEST_TMP/called" -a ! -e "$TEST_TMP/go"
check "kernel check: /healthz answers 200 before the check completes" \
        test "$(curl -s -o /dev/null -w '%{http_code}' "$URL/healthz")" = 200
check "kernel check: no tier line is logged before the check completes" \
        test "$(grep -c 'event=kernel-tier' "$LOG")" -eq 0

P=$URL/plimsoll.v1.SandboxService
post() { curl -s -o "$3" -w '%{http_code}' -X POST -H 'content-type: application/json' --data-binary "$2" "$P/$1"; }
jq_() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1" 2>&1; }
post Describe '{}' "$TEST_TMP/d.json" >"$TEST_TMP/d.code" &
dpid=$!
post Run '{"protocol":3,"minimumIsolation":"kernel","timeoutMs":60000,"project":{"files":[],"steps":["uname -r"]}}' \
        "$TEST_TMP/k.json" >"$TEST_TMP/k.code" &
kpid=$!
sleep 0.5 # let both reach the server (a wrong early answer would be there by now)
curl -s -o /dev/null "$URL/healthz"
check "kernel check: Describe has not answered while the check runs" test ! -s "$TEST_TMP/d.code"
check "kernel check: a Run whose floor is kernel has not answered while the check runs" test ! -s "$TEST_TMP/k.code"
check "kernel check: /healthz still answers while those wait" \
        test "$(curl -s -o /dev/null -w '%{http_code}' "$URL/healthz")" = 200

: >"$TEST_TMP/go"
wait "$dpid" "$kpid"
if [ -n "$real" ] && grep -q 'event=kernel-tier ' "$LOG"; then
        check "kernel check: then Describe says kernel, with runsc's evidence" \
                test "$(cat "$TEST_TMP/d.code") $(jq_ "$TEST_TMP/d.json" 'j["isolation"]')" = "200 kernel"
        check "kernel check: then the waiting Run ran in the kernel tier" \
                test "$(cat "$TEST_TMP/k.code") $(jq_ "$TEST_TMP/k.json" 'j["record"]["isolation"]')" = "200 kernel"
else
        [ -n "$real" ] && skip "kernel check: the kernel tier" "runsc failed its self-check here (the log says why)"
        check "kernel check: then the check's failure is logged" grep -q 'event=kernel-tier-unavailable' "$LOG"
        check "kernel check: then Describe says container" \
                test "$(cat "$TEST_TMP/d.code") $(jq_ "$TEST_TMP/d.json" 'j["isolation"]')" = "200 container"
        check "kernel check: then the waiting Run's kernel floor is refused (failed_precondition)" \
                test "$(cat "$TEST_TMP/k.code") $(jq_ "$TEST_TMP/k.json" 'j["code"]')" = "400 failed_precondition"
fi
stop_server
exit 0
