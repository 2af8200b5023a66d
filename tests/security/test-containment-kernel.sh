#!/usr/bin/env bash
# test-containment-kernel.sh: the kernel tier (`hull exec --tier kernel`, gVisor's runsc). The
# containment probe's escape attempts run inside one kernel-tier sandbox (one gVisor start for all
# of them: a start costs a second or two), each must end contained (DENIED, BLOCKED or CONTAINED:
# the errno is gVisor's, not hull's seccomp list); then checks that the code runs under gVisor's
# kernel, not the host's, and that the host-side limits hold: a timeout leaves no process, bundle
# or cgroup behind, a memory bomb and a fork bomb are stopped, output is bounded; networks limited
# (hull's proxy) and unrestricted (pasta: the host's loopback and the metadata range unreachable).
# Needs root and runsc: without runsc it is skipped (exit 77), never passed.
. "$(dirname "$0")/../lib.sh"

T=60 # --timeout of the probes' sandbox, seconds (every mode runs in it)
PROBE_BIN=$BUILD/tests/security/probe
HOST_PIDNS=$(stat -L -c %i /proc/self/ns/pid)
HOST_USERNS=$(stat -L -c %i /proc/self/ns/user)
HOST_KERNEL="$(uname -r) $(uname -v)"
SB_UID=65534 # host uid of the sandbox user when hull runs as root
TOKEN=hullkprobe$$x$RANDOM
export HULL_CANARY_ENV="canary-$TOKEN" # must never be visible inside the sandbox

if [ "$(id -u)" -ne 0 ]; then
        skip "kernel containment" "needs root (runsc runs its sandbox as root)"
        exit 77
fi
if ! command -v runsc >/dev/null 2>&1 && [ ! -x /usr/bin/runsc ]; then
        skip "kernel containment" "runsc (gVisor) is not installed"
        exit 77
fi
if [ ! -x "$PROBE_BIN" ]; then
        fail "kernel containment: probe built" "$PROBE_BIN missing"
        exit 1
fi
. "$(dirname "$0")/probe-lib.sh"

SLEEPER_PID=
cleanup() {
        [ -n "$SLEEPER_PID" ] && kill "$SLEEPER_PID" 2>/dev/null
        [ -n "${NS_SERVER:-}" ] && kill "$NS_SERVER" 2>/dev/null
        [ -n "${NS:-}" ] && ip netns del "$NS" 2>/dev/null && ip link del "$VA" 2>/dev/null
        lib_cleanup # the processes in pids (the HTTP server), then TEST_TMP
}
trap cleanup EXIT
trap 'touch "$TEST_TMP/got-sigusr1"' USR1

W=$TEST_TMP/work
mkdir -p "$W"
install -m 0755 "$PROBE_BIN" "$W/probe"
chown -R "$SB_UID:$SB_UID" "$W"
CANARY=$TEST_TMP/canary
SECRET="secret-$TOKEN"
mkdir -p "$CANARY"
printf '%s\n' "$SECRET" >"$CANARY/secret"
chmod -R a+rX "$CANARY"
sleep 300 &
SLEEPER_PID=$!
ln -s "$CANARY/secret" "$W/evil"
host_pid1=$(tr '\0' '\n' </proc/1/cmdline | head -n 1)

# What is left of the kernel tier on the host: runsc processes of our bundles, bundles, cgroups.
leftovers() {
        pgrep -f "runsc.*$TMPDIR_K/hull-oci" 2>/dev/null
        ls -d "$TMPDIR_K"/hull-oci.* 2>/dev/null
}
TMPDIR_K=$TEST_TMP/ktmp # the bundles of this test's runs, and nothing else
mkdir -p "$TMPDIR_K"

kexec_() { TMPDIR=$TMPDIR_K timeout -k 5 $((T + 30)) "$HULL" exec --tier kernel "$@"; }

# ---- the probe's safety gate: on the host it refuses, even given the host's kernel ---------------

out=$(HULL_HOST_PIDNS=$HOST_PIDNS HULL_HOST_USERNS=$HOST_USERNS HULL_HOST_KERNEL=$HOST_KERNEL \
        "$PROBE_BIN" creds 2>&1); rc=$?
check "kernel containment: the probe refuses on the host given the host's kernel" \
        test "$rc" -eq 2 -a "${out%% *}" = REFUSED

# ---- every escape attempt, in one kernel-tier sandbox ---------------------------------------------

modes=(
        "read-host-files"
        "host-canary $CANARY/secret $SECRET"
        "proc-root"
        "proc1 ${host_pid1:-none}"
        "environ-scan $HULL_CANARY_ENV"
        "workdir-links /workspace/evil $CANARY/secret $SECRET"
        "write-usr hull-probe-$TOKEN"
        "write-root-etc"
        "proc-sys"
        "mknod"
        "dev-nodes"
        "mount"
        "new-mount-api"
        "chroot"
        "pivot-root"
        "unshare"
        "clone-ns"
        "setns"
        "process-vm"
        "signal-host $$ $SLEEPER_PID"
        "connect-unix @hull-canary-$TOKEN $TEST_TMP/host.sock"
        "netifs $(ls /sys/class/net 2>/dev/null | tr '\n' ' ')"
        "modules"
        "hostname"
        "clock"
        "keyctl"
        "bpf"
        "perf"
        "userfaultfd"
        "io-uring"
        "open-by-handle"
        "kexec"
        "reboot"
        "acct"
        "swap"
        "iopl"
        "cgroup-escape"
        "leaked-fds"
)
script='for m in "$@"; do echo "MODE $m"; /workspace/probe $m 2>&1 | head -n 1; done; echo ALL-DONE'
host_name=$(cat /proc/sys/kernel/hostname)
kexec_ --timeout "$T" --workdir "$W" --output-limit 4M \
        --env HULL_HOST_PIDNS="$HOST_PIDNS" --env HULL_HOST_USERNS="$HOST_USERNS" \
        --env HULL_HOST_KERNEL="$HOST_KERNEL" \
        -- /bin/sh -c "$script" sh "${modes[@]}" >"$TEST_TMP/probes.out" 2>"$TEST_TMP/probes.err"
RC=$?
ERR=$TEST_TMP/probes.err
check "kernel containment: the probes' sandbox ran them all" grep -qx ALL-DONE "$TEST_TMP/probes.out"
for m in "${modes[@]}"; do
        name=${m%% *}
        LINE=$(grep -A1 -xF "MODE $m" "$TEST_TMP/probes.out" | sed -n 2p)
        if [ "$name" = dev-nodes ] && [[ $LINE == ESCAPED* ]]; then
                # gVisor's own /dev has fuse and net/tun, served by its sentry (no host device
                # behind them; with --network=none tun reaches nothing): any other node is an escape
                rest=$(sed -e 's|/dev/fuse=ok([0-9]*)||' -e 's|/dev/net/tun=ok([0-9]*)||' <<<"$LINE")
                [[ $rest != *=ok* ]] && LINE="CONTAINED (gVisor's own fuse and tun only) ${LINE#ESCAPED }"
        fi
        expect "kernel containment: $name" "$CONTAINED"
done
check "kernel containment: nothing appeared under the host /usr" test ! -e "/usr/hull-probe-$TOKEN"
check "kernel containment: the host's hostname is unchanged" test "$(cat /proc/sys/kernel/hostname)" = "$host_name"
check "kernel containment: the host shell got no signal" test ! -e "$TEST_TMP/got-sigusr1"
check "kernel containment: the host's sleeper is alive" kill -0 "$SLEEPER_PID"
check "kernel containment: the host canary is unchanged" test "$(cat "$CANARY/secret")" = "$SECRET"

# ---- the code runs under gVisor's kernel --------------------------------------------------------

out=$(kexec_ --timeout 30 -- /bin/sh -c 'uname -s -r; uname -r -v; grep -c "^none / 9p " /proc/mounts; grep -E "^(CapEff|CapBnd)" /proc/self/status; id -u' 2>&1); rc=$?
lines() { sed -n "$1p" <<<"$out"; }
check "kernel tier: uname is gVisor's (Linux 4.4.0), not the host's $(uname -r)" \
        test "$rc" -eq 0 -a "$(lines 1)" = "Linux 4.4.0" -a "$(uname -r)" != 4.4.0
check "kernel tier: the kernel is not the host's" test -n "$(lines 2)" -a "$(lines 2)" != "$HOST_KERNEL"
check "kernel tier: the root is served by gVisor's gofer (9p), no host file system is mounted" test "$(lines 3)" = 1
check "kernel tier: no capability (effective, bounding)" \
        test "$(lines 4)" = "CapEff:	0000000000000000" -a "$(lines 5)" = "CapBnd:	0000000000000000"
check "kernel tier: the command runs as the sandbox user ($SB_UID), not root" test "$(lines 6)" = "$SB_UID"

# ---- host-side limits -----------------------------------------------------------------------------

t0=$(date +%s%N)
# (kexec_ spelled out: a function sent to the background is a subshell, and $! would be its pid)
TMPDIR=$TMPDIR_K timeout -k 5 $((T + 30)) "$HULL" exec --tier kernel --timeout 2 -- \
        /bin/sh -c 'sleep 300 & sleep 300 & while :; do :; done' >/dev/null 2>"$TEST_TMP/to.err" &
kpid=$!
# the run's hull (timeout's child): its cgroups are named hull-PID-*. Not the newest process named
# hull once it ended, which is another suite's (or hull exec's own forked child), named in none
hpid=""
for _ in $(seq 1 200); do
        hpid=$(pgrep -P "$kpid" -x hull | head -n 1)
        [ -n "$hpid" ] && break
        kill -0 "$kpid" 2>/dev/null || break
        sleep 0.05
done
wait "$kpid"
rc=$?
took=$((($(date +%s%N) - t0) / 1000000))
check "kernel tier: a timeout ends the run (124) within the grace period" test "$rc" -eq 124 -a "$took" -lt 15000
left=$(leftovers)
check "kernel tier: the timeout leaves no runsc process and no bundle behind" test -z "$left"
stale=$(find /sys/fs/cgroup -maxdepth 2 -type d -name "hull-${hpid:-none}-*" 2>/dev/null)
check "kernel tier: no cgroup of the run (hull $hpid) is left" test -n "$hpid" -a -z "$stale"

kexec_ --timeout 30 --memory 128M -- /usr/bin/python3 -c '
a = []
while True:
    a.append(bytearray(8 << 20))' >/dev/null 2>"$TEST_TMP/mem.err"
rc=$?
check "kernel tier: a memory bomb is stopped by the memory limit" \
        grep -q "ran out of memory" "$TEST_TMP/mem.err"
check "kernel tier: the memory bomb's run ends with a signal status" test "$rc" -ge 128

out=$(kexec_ --timeout 30 --pids 32 -- /bin/sh -c '
i=0; n=0
while [ $i -lt 200 ]; do sleep 20 & i=$((i+1)); done
echo started' 2>&1)
rc=$?
check "kernel tier: a fork bomb past --pids 32 is refused inside (the shell cannot fork)" \
        grep -q "Cannot fork" <<<"$out"
check "kernel tier: the fork bomb leaves no runsc process and no bundle behind" test -z "$(leftovers)"

n=$(kexec_ --timeout 30 --output-limit 4K -- /bin/sh -c 'head -c 1000000 /dev/zero | tr "\0" a' 2>"$TEST_TMP/out.err" | wc -c)
check "kernel tier: output is bounded (4K kept of 1 MB)" test "$n" -eq 4096
check "kernel tier: the dropped output is reported" grep -q "bytes of stdout dropped" "$TEST_TMP/out.err"


# ---- a limited network: only hull's proxy, to the allowed hosts ----------------------------------

mkdir -p "$TEST_TMP/site"
printf '%s\n' "$TOKEN" >"$TEST_TMP/site/index.html"
/usr/bin/python3 -m http.server 0 --bind 127.0.0.1 --directory "$TEST_TMP/site" >"$TEST_TMP/http.log" 2>&1 &
HTTP_PID=$!
pids+=("$HTTP_PID")
HP=
for _ in $(seq 50); do
        HP=$(ss -ltnp 2>/dev/null | grep "pid=$HTTP_PID," | grep -o '127.0.0.1:[0-9]*' | head -n 1 | cut -d: -f2)
        [ -n "$HP" ] && break
        sleep 0.1
done
printf '127.0.0.1 allowed.test other.test\n' >"$TEST_TMP/hosts"
NETLOG=$TEST_TMP/net.log
out=$(kexec_ --timeout 60 --net limited --net-hosts "$TEST_TMP/hosts" --net-log "$NETLOG" \
        --allow-host allowed.test --net-allow-loopback -- /bin/sh -c "
curl -sS --max-time 20 http://allowed.test:$HP/index.html
curl -s -o /dev/null -w 'other=%{http_code}\\n' --max-time 20 http://other.test:$HP/index.html
python3 -c '
import socket
s = socket.socket(); s.settimeout(5)
try:
    s.connect((\"127.0.0.1\", $HP)); print(\"direct=connected\")
except OSError as e:
    print(\"direct=refused\")
'" 2>&1)
check "kernel tier, limited network: an allowed host answers through hull's proxy" \
        test "$(sed -n 1p <<<"$out")" = "$TOKEN"
check "kernel tier, limited network: a host not allowed is refused by the proxy (403)" \
        test "$(sed -n 2p <<<"$out")" = other=403
check "kernel tier, limited network: a direct connection to the host's service fails" \
        test "$(sed -n 3p <<<"$out")" = direct=refused
check "kernel tier, limited network: every connection is in the log" \
        test "$(grep -c 'allowed.test' "$NETLOG") $(grep -c 'refused.*other.test' "$NETLOG")" = "1 1"
check "kernel tier: nothing is left behind at all" test -z "$(leftovers)"

# ---- an unrestricted network: pasta, as the container tier (host loopback and metadata blocked) ----
if [ -x /usr/bin/pasta ] && command -v ip >/dev/null; then
        # a server in a network namespace of the test's own, through a veth pair: the network is real
        # its /30 is this run's own (test_net30): another copy of the suite may run at once
        NS=hull-kt-$$ VA=hkt$$a VB=hkt$$b NS_PORT='' NETA='' NETB=''
        if read -r NETA NETB < <(test_net30) && ip netns add "$NS" 2>/dev/null; then
                if ip link add "$VA" type veth peer name "$VB" && ip link set "$VB" netns "$NS" &&
                        ip addr add "$NETA/30" dev "$VA" && ip link set "$VA" up &&
                        ip netns exec "$NS" ip addr add "$NETB/30" dev "$VB" && ip netns exec "$NS" ip link set "$VB" up; then
                        ip netns exec "$NS" /usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"NETNS-SERVER\n"); c.close()' "$NETB" >"$TEST_TMP/ns.port" 2>/dev/null &
                        NS_SERVER=$!
                        wait_for_file "$TEST_TMP/ns.port" "$NS_SERVER"
                        NS_PORT=$(head -1 "$TEST_TMP/ns.port")
                fi
        fi
        out=$(kexec_ --timeout 60 --net unrestricted -- /bin/sh -c "
ip route del unreachable 169.254.0.0/16 >/dev/null 2>&1 && echo route=removed || echo route=kept
grep -c '^hosts: files dns\$' /etc/nsswitch.conf
python3 -c '
import socket, sys
for name, fam, addr in [(\"ns\", socket.AF_INET, (sys.argv[3], int(sys.argv[1]))),
                        (\"lo\", socket.AF_INET, (\"127.0.0.1\", int(sys.argv[2]))),
                        (\"md\", socket.AF_INET, (\"169.254.169.254\", 80)),
                        (\"md6\", socket.AF_INET6, (\"fd00:ec2::254\", 80))]:
    s = socket.socket(fam); s.settimeout(5)
    try:
        s.connect(addr); print(name + \"=\" + s.recv(64).decode(errors=\"replace\").strip())
    except OSError as ex:
        print(name + \"=err\", ex.errno)
' ${NS_PORT:-1} $HP ${NETB:-10.64.0.2}" 2>&1)
        echo "$out" | sed 's/^/# /'
        if [ -n "$NS_PORT" ]; then
                check "kernel tier, unrestricted network: a server in another network namespace answers (pasta)" \
                        grep -qx 'ns=NETNS-SERVER' <<<"$out"
        fi
        check "kernel tier, unrestricted network: the host's 127.0.0.1 services are unreachable" \
                grep -q '^lo=err' <<<"$out"
        check "kernel tier, unrestricted network: 169.254.169.254 has no route" grep -qx 'md=err 113' <<<"$out"
        check "kernel tier, unrestricted network: fd00:ec2::254 is unreachable" grep -q '^md6=err' <<<"$out"
        check "kernel tier, unrestricted network: the sandbox cannot remove the blocking route" \
                grep -qx 'route=kept' <<<"$out"
        check "kernel tier, unrestricted network: names resolve through dns (nsswitch)" grep -qx 1 <<<"$out"
        [ -n "${NS_SERVER:-}" ] && kill "$NS_SERVER" 2>/dev/null
        ip netns del "$NS" 2>/dev/null
        ip link del "$VA" 2>/dev/null
        NS=
        check "kernel tier, unrestricted network: nothing is left (runsc, bundle)" test -z "$(leftovers)"
else
        skip "kernel tier, unrestricted network" "needs /usr/bin/pasta (passt) and ip"
fi
exit 0
