#!/usr/bin/env bash
# test-unprivileged.sh: the container tier holds when hull itself runs as an unprivileged user
# (uid 65534 here, via setpriv, with --no-cgroup since that user has no delegated cgroup). A
# handful of the containment probes must pass and the command must still run as uid 1000.
. "$(dirname "$0")/../lib.sh"

T=10 # --timeout of every sandboxed run, seconds
UNPRIV=65534
PROBE_BIN=$BUILD/tests/security/probe
HOST_PIDNS=$(stat -L -c %i /proc/self/ns/pid)
HOST_USERNS=$(stat -L -c %i /proc/self/ns/user)

if [ "$(id -u)" -ne 0 ]; then
        skip "unprivileged" "needs root to switch to uid $UNPRIV"
        exit 77
fi
if ! command -v setpriv >/dev/null; then
        skip "unprivileged" "setpriv (util-linux) is not installed"
        exit 77
fi
if [ ! -x "$PROBE_BIN" ]; then
        fail "unprivileged: probe built" "$PROBE_BIN missing"
        exit 1
fi

as_unpriv() {
        setpriv --reuid="$UNPRIV" --regid="$UNPRIV" --clear-groups --inh-caps=-all -- \
                env -i PATH=/usr/bin:/bin LANG=C "$@"
}

# Can an unprivileged user create a user namespace at all here?
if [ -r /proc/sys/kernel/unprivileged_userns_clone ] &&
        [ "$(cat /proc/sys/kernel/unprivileged_userns_clone)" = 0 ]; then
        skip "unprivileged" "kernel.unprivileged_userns_clone is 0"
        exit 77
fi
if [ -r /proc/sys/user/max_user_namespaces ] && [ "$(cat /proc/sys/user/max_user_namespaces)" = 0 ]; then
        skip "unprivileged" "user.max_user_namespaces is 0"
        exit 77
fi
if ! why=$(as_unpriv unshare --user --map-current-user true 2>&1); then
        skip "unprivileged" "uid $UNPRIV cannot create a user namespace: $why"
        exit 77
fi

# hull and the probe where uid 65534 can read and run them; a work dir it owns.
BIN=$TEST_TMP/bin W=$TEST_TMP/work
install -d -m 0755 "$BIN"
install -m 0755 "$HULL" "$BIN/hull"
install -d -m 0755 -o "$UNPRIV" -g "$UNPRIV" "$W"
install -m 0755 -o "$UNPRIV" -g "$UNPRIV" "$PROBE_BIN" "$W/probe"
CANARY=$TEST_TMP/canary SECRET="secret-$$-$RANDOM"
ENV_CANARY="envcanary-$$-$RANDOM" # in hull's environment: must not be visible inside
install -d -m 0755 "$CANARY"
printf '%s\n' "$SECRET" >"$CANARY/secret"
chmod 0644 "$CANARY/secret"

# hull_unpriv OUT-TAG [HULL-OPTION...] -- CMD...: run hull as the unprivileged user.
hull_unpriv() {
        local tag=$1 opts=()
        shift
        while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        OUT=$TEST_TMP/$tag.out ERR=$TEST_TMP/$tag.err
        timeout -k 5 $((T + 20)) setpriv --reuid="$UNPRIV" --regid="$UNPRIV" --clear-groups \
                --inh-caps=-all -- env -i PATH=/usr/bin:/bin LANG=C HULL_CANARY_ENV="$ENV_CANARY" \
                "$BIN/hull" exec --no-cgroup --timeout "$T" --workdir "$W" \
                --env HULL_HOST_PIDNS="$HOST_PIDNS" --env HULL_HOST_USERNS="$HOST_USERNS" \
                "${opts[@]}" -- "$@" >"$OUT" 2>"$ERR"
        RC=$?
        LINE=$(head -n 1 "$OUT")
}
. "$(dirname "$0")/probe-lib.sh"
attempt() { # attempt NAME REGEX MODE [ARG...]
        local name=$1 re=$2
        shift 2
        hull_unpriv "$1" -- /workspace/probe "$@"
        expect "unprivileged: $name" "$re"
}

# The probe refuses as the unprivileged user on the host too (identity uid map).
out=$(as_unpriv HULL_HOST_PIDNS="$HOST_PIDNS" HULL_HOST_USERNS="$HOST_USERNS" "$W/probe" creds 2>&1); rc=$?
check "unprivileged: probe refuses on the host as uid $UNPRIV" test "$rc" -eq 2 -a "${out%% *}" = REFUSED

hull_unpriv id -- /usr/bin/id -u
expect "unprivileged: hull exec runs the command as uid 1000" '^1000$'

attempt "uid/gid 1000, every capability set empty" "$CONTAINED" creds
attempt "no_new_privs and seccomp" "$CONTAINED" nnp
attempt "read /root and /etc/shadow" "$CONTAINED" read-host-files
attempt "read a host canary file by path and /proc tricks" "$CONTAINED" host-canary "$CANARY/secret" "$SECRET"
attempt "hull's environment is not visible in any /proc/*/environ" "$CONTAINED" environ-scan "$ENV_CANARY"
attempt "hull's init (pid 1) cannot be hijacked to shed seccomp, caps or no_new_privs" "$CONTAINED" pid1-hijack
attempt "write under /usr" "$CONTAINED" write-usr "hull-probe-unpriv-$$"
attempt "write to / and /etc" "$CONTAINED" write-root-etc
attempt "mount" "$DENIED" mount
attempt "unshare a user namespace" "$DENIED" unshare
attempt "setns" "$DENIED" setns
attempt "ptrace" "$DENIED" ptrace
attempt "keyctl" "$DENIED" keyctl
attempt "only loopback" "$CONTAINED" netifs
trap 'touch "$TEST_TMP/got-sigusr1"' USR1
attempt "the host shell is invisible" "$CONTAINED" signal-host "$$"
check "unprivileged: the host shell got no signal" test ! -e "$TEST_TMP/got-sigusr1"

if ! "$BUILD/tests/security/abi-check" i386 >/dev/null; then
        skip "unprivileged: the i386 ABI is killed with SIGSYS" "this kernel serves no i386 ABI (int 0x80 faults outside the sandbox too)"
elif hull_unpriv i386 --json -- /workspace/probe i386; [ "$RC" -eq 159 ] && /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j["signal"] == 31 else 1)' "$OUT" 2>/dev/null; then
        pass "unprivileged: the i386 ABI is killed with SIGSYS"
else
        fail "unprivileged: the i386 ABI is killed with SIGSYS" "exit=$RC out=$(head -c 400 "$OUT")"
fi

# ---- a delegated cgroup: an unprivileged hull gets memory and pids limits ----
# As root, make one cgroup per v1 hierarchy below ours, hand it to the user, and start hull in
# it; hull then makes the sandbox's cgroups below it (the way systemd delegates on v2).
own_cg() { awk -F: -v c="$1" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' /proc/self/cgroup; }
if [ "$(stat -f -c %T /sys/fs/cgroup/memory 2>/dev/null)" = cgroupfs ] && [ "$(stat -f -c %T /sys/fs/cgroup/pids 2>/dev/null)" = cgroupfs ]; then
        D=hull-deleg-$$-$RANDOM
        MEMD=/sys/fs/cgroup/memory$(own_cg memory)/$D PIDSD=/sys/fs/cgroup/pids$(own_cg pids)/$D
        mkdir "$MEMD" "$PIDSD" && chown -R "$UNPRIV:$UNPRIV" "$MEMD" "$PIDSD"
        run_delegated() { # run_delegated TAG HULL-ARGS...: hull as the user, inside the delegation
                local tag=$1
                shift
                OUT=$TEST_TMP/$tag.out ERR=$TEST_TMP/$tag.err
                timeout -k 5 60 sh -c 'echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"' sh \
                        "$MEMD" "$PIDSD" setpriv --reuid="$UNPRIV" --regid="$UNPRIV" --clear-groups --inh-caps=-all -- \
                        env -i PATH=/usr/bin:/bin LANG=C "$BIN/hull" exec --timeout "$T" "$@" >"$OUT" 2>"$ERR"
                RC=$?
        }
        run_delegated deleg-oom --json --memory 64M -- /usr/bin/python3 -c 'b = bytearray(1 << 30)'
        if [ "$RC" -eq 137 ] && grep -q '"oom_killed":true' "$OUT"; then
                pass "unprivileged, delegated cgroup: a memory bomb is OOM-killed and reported"
        else
                fail "unprivileged, delegated cgroup: a memory bomb is OOM-killed and reported" "exit=$RC out=$(head -c 300 "$OUT") err=$(head -c 300 "$ERR")"
        fi
        run_delegated deleg-pids --pids 16 -- /usr/bin/python3 -c '
import os, time
n = 0
for i in range(40):
    try:
        if os.fork() == 0:
            time.sleep(3); os._exit(0)
        n += 1
    except OSError:
        break
print(n)'
        n=$(cat "$OUT")
        if [ "$RC" -eq 0 ] && [ -n "$n" ] && [ "$n" -lt 16 ]; then
                pass "unprivileged, delegated cgroup: --pids bounds the processes ($n forks)"
        else
                fail "unprivileged, delegated cgroup: --pids bounds the processes" "exit=$RC out=$n err=$(head -c 300 "$ERR")"
        fi
        left=$(find "$MEMD" "$PIDSD" -mindepth 1 -type d | wc -l)
        check "unprivileged, delegated cgroup: the sandbox's cgroups are removed" test "$left" -eq 0
        rmdir "$MEMD" "$PIDSD" 2>/dev/null
else
        skip "unprivileged, delegated cgroup" "no v1 memory and pids hierarchies here (pure cgroup v2 delegation is not exercised by this test)"
fi

exit 0
