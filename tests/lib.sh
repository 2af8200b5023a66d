# tests/lib.sh: shared helpers for shell tests. Each result is one line the runner counts:
#   "ok - NAME", "not ok - NAME: why", "skip - NAME: why".
# The runner (scripts/run-tests.sh) sets HULL (the built binary) and BUILD (the build dir).
set -u
: "${HULL:?HULL must point at the built hull binary}"
: "${BUILD:?BUILD must point at the build directory}"

TEST_TMP=$(mktemp -d /tmp/hull-test.XXXXXX)
chmod 755 "$TEST_TMP"
# a failed check leaves this file (fail below; serve_client.py and hostile_client.py too)
export HULL_TEST_FAILED_MARK=$TEST_TMP/.failed
# pids: the test's background processes (daemons, fakes); SIGKILLed and reaped at exit.
pids=()
# server_logs: the logs of the servers start_server started; when a check failed
# (HULL_TEST_FAILED_MARK is there), their last lines are printed as comments at exit,
# before TEST_TMP goes, so a failure seen once in CI can still be read
server_logs=()
lib_cleanup() {
        local p l
        for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
        if [ -e "$HULL_TEST_FAILED_MARK" ]; then
                for l in "${server_logs[@]}"; do
                        [ -s "$l" ] || continue
                        printf '# the last lines of the server log %s:\n' "${l#"$TEST_TMP"/}"
                        tail -n "${LIB_LOG_TAIL:-60}" "$l" | cut -c1-400 | sed 's/^/#   /'
                done
        fi
        rm -rf "$TEST_TMP"
}
trap lib_cleanup EXIT

pass() { printf 'ok - %s\n' "$1"; }
fail() {
        printf 'not ok - %s: %s\n' "$1" "$2"
        : >"$HULL_TEST_FAILED_MARK" 2>/dev/null
}
skip() { printf 'skip - %s: %s\n' "$1" "$2"; }

# check NAME CONDITION-COMMAND... : pass when the command succeeds.
check() {
        local name=$1; shift
        if "$@"; then pass "$name"; else fail "$name" "failed: $*"; fi
}

# json_get FILE KEY: print a top-level field of a one-object JSON file (uses Debian's python3).
json_get() {
        /usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if isinstance(v,(bool,type(None))) else v)' "$1" "$2"
}

# start_server LOG [ARGS...]: start `hull serve --listen 127.0.0.1:0 ARGS` in the background, its
# output (its log) in LOG, and wait for it to listen: at most SERVE_START_S seconds (default 30; the
# machine may be busy), less if it exits first; with HULL_TEST_KERNEL_TIER=1 also for its runsc
# check's line. Sets SERVER_PID (also added to pids), ADDR
# (127.0.0.1:PORT) and URL (http://ADDR). Returns 1, ADDR and URL empty, when it did not start.
start_server() {
        local log=$1 i
        shift
        # runsc's self-check (the kernel tier) costs a second or two per start: only the tests of
        # the kernel tier ask for it (HULL_TEST_KERNEL_TIER=1)
        # (scripts/run-tests.sh also sets HULL_KERNEL_TIER=off for the servers tests start directly)
        local kt=--no-kernel-tier
        [ "${HULL_TEST_KERNEL_TIER:-0}" = 1 ] && kt=
        if [ -n "$kt" ]; then
                "$HULL" serve --listen 127.0.0.1:0 $kt "$@" >"$log" 2>&1 &
        else
                env -u HULL_KERNEL_TIER "$HULL" serve --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
        fi
        SERVER_PID=$!
        pids+=("$SERVER_PID")
        server_logs+=("$log")
        ADDR="" URL=""
        for i in $(seq 1 $((${SERVE_START_S:-30} * 20))); do
                grep -q 'event=listening' "$log" && break
                kill -0 "$SERVER_PID" 2>/dev/null || break
                sleep 0.05
        done
        # the kernel tier's check runs in the background (hull serve answers at once): its tests
        # wait for its line (event=kernel-tier, or kernel-tier-unavailable), at most 60 s more
        if [ -z "$kt" ]; then
                for i in $(seq 1 1200); do
                        grep -q 'event=kernel-tier' "$log" && break
                        kill -0 "$SERVER_PID" 2>/dev/null || break
                        sleep 0.05
                done
        fi
        ADDR=$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$log" | head -1 | cut -d= -f2)
        [ -n "$ADDR" ] || return 1
        URL=http://$ADDR
}

# stop_server [SIGNAL [SECONDS]]: send SIGNAL (default TERM) to SERVER_PID, wait at most SECONDS
# (default 30) for it to exit, then SIGKILL it. Returns its exit status (137 when it was killed).
stop_server() {
        local sig=${1:-TERM} secs=${2:-30} i
        kill -"$sig" "$SERVER_PID" 2>/dev/null
        for i in $(seq 1 $((secs * 10))); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID"
}

# mock_start SCRIPT-JSON [ARGS...]: start hull mock-model on a free port; sets MOCK_PID, MURL.
mock_start() {
        local script=$1 i
        shift
        printf '%s' "$script" >"$TEST_TMP/script.json"
        : >"$TEST_TMP/mock.out"
        "$HULL" mock-model --script "$TEST_TMP/script.json" --listen 127.0.0.1:0 "$@" \
                >"$TEST_TMP/mock.out" 2>"$TEST_TMP/mock.err" &
        MOCK_PID=$!
        pids+=("$MOCK_PID")
        MURL=""
        for i in $(seq 1 600); do
                MURL=$(head -1 "$TEST_TMP/mock.out" | sed -n 's|^listening on \(http://127\.0\.0\.1:[0-9][0-9]*\)$|\1|p')
                [ -n "$MURL" ] && return 0
                kill -0 "$MOCK_PID" 2>/dev/null || return 1
                sleep 0.05
        done
        return 1
}

# everything_http_start EV LOG [VAR=VALUE...]: start @modelcontextprotocol/server-everything (the
# binary EV) over Streamable HTTP on 127.0.0.1, its output in LOG, with those variables in its
# environment. A port is picked free and handed to it, so another process may take it first (a
# bind(0) or a connection's local port meanwhile): the server then exits, and a new port is tried
# (5 at most). Up: its own "listening on port N" line in LOG (not merely a connect, which another
# listener could answer), then a connect on 127.0.0.1. Sets EV_PORT and EV_PID (also in pids); 1
# when it never listened.
everything_http_start() {
        local ev=$1 log=$2 attempt i
        shift 2
        for attempt in 1 2 3 4 5; do
                EV_PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
                env "$@" HOST=127.0.0.1 PORT="$EV_PORT" "$ev" streamableHttp >"$log" 2>&1 &
                EV_PID=$!
                pids+=("$EV_PID")
                for i in $(seq 1 1200); do
                        if grep -q "listening on port $EV_PORT\$" "$log" 2>/dev/null; then
                                # and reached on loopback: its listen on every address can succeed
                                # while a connection holds 127.0.0.1 on that port
                                /usr/bin/python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
                                        "$EV_PORT" 2>/dev/null && return 0
                                break
                        fi
                        kill -0 "$EV_PID" 2>/dev/null || break
                        sleep 0.05
                done
                kill -KILL "$EV_PID" 2>/dev/null
                wait "$EV_PID" 2>/dev/null
                printf '# server-everything did not listen on port %s (attempt %s): %s\n' "$EV_PORT" "$attempt" \
                        "$(tail -3 "$log" | tr '\n' ' ' | cut -c1-300)"
        done
        return 1
}

# mock_stop [SIGNAL]: signal it and wait (30 s at most); returns its exit status.
mock_stop() {
        local i
        kill -"${1:-TERM}" "$MOCK_PID" 2>/dev/null
        for i in $(seq 1 300); do kill -0 "$MOCK_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$MOCK_PID" 2>/dev/null
        wait "$MOCK_PID"
}

# test_net30: print "HOST PEER", the two addresses of a /30 in 10.0.0.0/8 for a veth pair of the
# test's own: the /30 numbered by this shell's pid (10.64.0.0 + 4 * pid, wrapping in 10/8; pid_max
# is at most 2^22, the number of /30s in 10/8), so two copies of a suite running at once (each its
# own pid) never get the same one, nor one of the 10.0/10.1 addresses other tests name. One that overlaps an address or a route already here (the machine's own
# networks) or a nameserver is passed over for the next in a stride; 1 when none is free.
test_net30() {
        /usr/bin/python3 - "$$" "$(ip -4 -o addr show 2>/dev/null; ip -4 route show table all 2>/dev/null
                cat /etc/resolv.conf 2>/dev/null)" <<'PYEOF'
import ipaddress, re, sys
pid, text = int(sys.argv[1]), sys.argv[2]
used = []
for m in re.finditer(r"(?:^|\s)(\d+\.\d+\.\d+\.\d+(?:/\d+)?)", text):
    try:
        n = ipaddress.ip_network(m.group(1), strict=False)
    except ValueError:
        continue
    if n.prefixlen > 0:
        used.append(n)
base = int(ipaddress.ip_address("10.0.0.0"))
for k in range(64):
    net = ipaddress.ip_network((base + 4 * ((pid + (1 << 20) + k * 65521) % (1 << 22)), 30))
    if not any(net.overlaps(u) for u in used):
        print(net[1], net[2])
        sys.exit(0)
sys.exit(1)
PYEOF
}

# wait_for_file FILE PID [SECONDS]: until FILE is not empty (a helper's port, written once it
# listens): SECONDS at most (default 60; python alone took 4 s to start on a busy machine), less
# when PID (the helper) ended first; 1 if FILE is still empty.
wait_for_file() {
        local i
        for i in $(seq 1 $((${3:-60} * 10))); do
                [ -s "$1" ] && return 0
                kill -0 "$2" 2>/dev/null || break
                sleep 0.1
        done
        [ -s "$1" ]
}

# wait_strace_attached ERR PID: until strace (PID, its -o elsewhere, its stderr ERR) says it
# attached, which it does once every thread of the traced process is: 30 s at most (a busy
# machine), less when strace ended first; 1 if it never said so.
wait_strace_attached() {
        local i
        for i in $(seq 1 600); do
                grep -q attached "$1" && return 0
                kill -0 "$2" 2>/dev/null || break
                sleep 0.05
        done
        grep -q attached "$1"
}
