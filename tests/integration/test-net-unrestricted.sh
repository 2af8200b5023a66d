# test-net-unrestricted.sh: `hull exec --net unrestricted` (pasta, issue 13): the sandbox has a
# network, but the host's loopback services and the metadata range are unreachable; a server in a
# network namespace this test makes (a veth pair, addresses of its own) is reachable through it;
# the containment suite holds with every probe in an unrestricted sandbox. Only loopback and the
# test's own namespace.
source "$(dirname "$0")/../lib.sh"

if [ ! -x /usr/bin/pasta ]; then
        skip "net unrestricted" "needs Debian's passt package (scripts/install-deps.sh installs it)"
        exit 0
fi
PY=/usr/bin/python3
T=30

# connect HOST PORT: what a TCP connection from an unrestricted sandbox gets: CONNECTED DATA, or ERR errno
sandbox_connect() {
        timeout -k 5 60 "$HULL" exec --timeout "$T" --net unrestricted -- "$PY" -c '
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)
    print("CONNECTED", s.recv(64).decode(errors="replace").strip())
except OSError as ex:
    print("ERR", ex.errno, ex)' "$1" "$2" 2>"$TEST_TMP/exec.err"
}

# a host service on 127.0.0.1 that says who it is
"$PY" -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"HOST-LOOPBACK\n"); c.close()' >"$TEST_TMP/lo.port" 2>/dev/null &
pids+=($!)
wait_for_file "$TEST_TMP/lo.port" "${pids[-1]}"
LO_PORT=$(head -1 "$TEST_TMP/lo.port")

out=$(timeout -k 5 60 "$HULL" exec --timeout "$T" --net unrestricted -- ip -o link 2>&1)
if printf '%s' "$out" | grep -q 'eth\|tap\|link/ether'; then
        pass "net unrestricted: the sandbox has an interface of pasta's"
else
        fail "net unrestricted: the sandbox has an interface" "$out $(cat "$TEST_TMP/exec.err" 2>/dev/null)"
fi
out=$(sandbox_connect 127.0.0.1 "$LO_PORT")
if printf '%s' "$out" | grep -q '^ERR' && ! printf '%s' "$out" | grep -q HOST-LOOPBACK; then
        pass "net unrestricted: the host's 127.0.0.1 services are unreachable"
else
        fail "net unrestricted: host loopback" "$out $(head -c 300 "$TEST_TMP/exec.err")"
fi
out=$(sandbox_connect 169.254.169.254 80)
if printf '%s' "$out" | grep -q '^ERR 113\|^ERR 101'; then
        pass "net unrestricted: 169.254.169.254 is unreachable (no route)"
else
        fail "net unrestricted: metadata address" "$out $(head -c 300 "$TEST_TMP/exec.err")"
fi

# names resolve through the host's nameservers pasta can reach (none of them loopback: the
# sandbox cannot reach those); without a network there is no resolv.conf and nsswitch says files
want=$(grep -E '^nameserver[[:space:]]' /etc/resolv.conf 2>/dev/null | awk '{print $2}' | grep -vE '^(127\.|::1$|0\.0\.0\.0$|169\.254\.|fe80:|::ffff:127\.)' | head -3 | tr '\n' ' ')
out=$(timeout -k 5 60 "$HULL" exec --timeout "$T" --net unrestricted -- sh -c 'grep hosts: /etc/nsswitch.conf; awk "{print \$2}" /etc/resolv.conf | tr "\n" " "' 2>&1)
if printf '%s' "$out" | grep -q '^hosts: files dns$' && [ "$(printf '%s' "$out" | tail -1)" = "$want" ]; then
        pass "net unrestricted: /etc/resolv.conf holds the host's reachable nameservers ($want), nsswitch asks dns"
else
        fail "net unrestricted: resolv.conf" "got '$out', want nameservers '$want'"
fi
out=$(timeout -k 5 60 "$HULL" exec --timeout "$T" -- sh -c 'grep hosts: /etc/nsswitch.conf; test -e /etc/resolv.conf && echo has-resolv' 2>&1)
if [ "$out" = "hosts: files" ]; then
        pass "net unrestricted: ... and a sandbox without a network has none"
else
        fail "net unrestricted: resolv.conf without network" "$out"
fi

# an environment that says unrestricted: hull exec --env applies it
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
"$HULL" env create open --net unrestricted >/dev/null 2>&1
out=$(timeout -k 5 60 "$HULL" exec --timeout "$T" --env open -- ip route 2>&1)
if printf '%s' "$out" | grep -q '^default ' && printf '%s' "$out" | grep -q '^unreachable 169.254.0.0/16'; then
        pass "net unrestricted: hull exec --env of an unrestricted environment gets pasta's network"
else
        fail "net unrestricted: hull exec --env" "$out"
fi

# a server in a network namespace of the test's own, through a veth pair
NS=hull-t-$$
VA=hvt$$a
VB=hvt$$b
# the veth's /30, of this run's own (test_net30): another copy of the suite may run at once
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && read -r NETA NETB < <(test_net30) && ip netns add "$NS" 2>/dev/null; then
        cleanup_ns() { ip netns del "$NS" 2>/dev/null; ip link del "$VA" 2>/dev/null; }
        trap 'cleanup_ns; lib_cleanup' EXIT
        if ip link add "$VA" type veth peer name "$VB" && ip link set "$VB" netns "$NS" &&
                ip addr add "$NETA/30" dev "$VA" && ip link set "$VA" up &&
                ip netns exec "$NS" ip addr add "$NETB/30" dev "$VB" &&
                ip netns exec "$NS" ip link set "$VB" up && ip netns exec "$NS" ip link set lo up; then
                ip netns exec "$NS" "$PY" -c '
import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"TEST-NETNS-SERVER\n"); c.close()' "$NETB" >"$TEST_TMP/ns.port" 2>/dev/null &
                pids+=($!)
                wait_for_file "$TEST_TMP/ns.port" "${pids[-1]}"
                NS_PORT=$(head -1 "$TEST_TMP/ns.port")
                out=$(sandbox_connect "$NETB" "${NS_PORT:-1}")
                if printf '%s' "$out" | grep -q '^CONNECTED TEST-NETNS-SERVER'; then
                        pass "net unrestricted: a server in the test's network namespace (through a veth) answers"
                else
                        fail "net unrestricted: a server in the test's network namespace" "$out $(head -c 300 "$TEST_TMP/exec.err")"
                fi
                out=$(timeout -k 5 60 "$HULL" exec --timeout "$T" -- "$PY" -c '
import socket, sys
try:
    socket.create_connection((sys.argv[2], int(sys.argv[1])), 5); print("CONNECTED")
except OSError as ex:
    print("ERR", ex.errno)' "${NS_PORT:-1}" "$NETB" 2>&1)
                if printf '%s' "$out" | grep -q '^ERR'; then
                        pass "net unrestricted: ... and without --net it is not (none)"
                else
                        fail "net unrestricted: none mode reaches the namespace's server" "$out"
                fi
        else
                fail "net unrestricted: the test's veth pair" "ip link add/addr failed"
        fi
else
        skip "net unrestricted: a server in a test-made network namespace" "needs root and ip netns"
fi

# The whole containment suite with every probe in an unrestricted sandbox (its lines renamed).
SEC=$(dirname "$0")/../security/test-containment.sh
PROBE_BIN=$BUILD/tests/security/probe
if [ "$(id -u)" -eq 0 ] && [ -x "$PROBE_BIN" ]; then
        HULL_CONTAINMENT_NET=unrestricted bash "$SEC" | sed -E 's/^(ok|not ok|skip) - containment: /\1 - net unrestricted: containment: /'
        rc=${PIPESTATUS[0]}
        [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || fail "net unrestricted: the containment suite" "exit $rc"
else
        skip "net unrestricted: containment suite" "needs root and the probe ($PROBE_BIN)"
fi
