# test-exec.sh: hull exec end to end: the CLI, exit statuses, limits and the reported result.
source "$(dirname "$0")/../lib.sh"

J=$TEST_TMP/out.json
hexec() { "$HULL" exec --timeout 20 "$@"; }

# ---- the CLI ----
out=$("$HULL" --version); check "--version prints the version" grep -qE '^hull [0-9]+\.[0-9]+\.[0-9]+$' <<<"$out"
check "--help lists exec" sh -c "'$HULL' --help | grep -q '^  exec'"
check "exec --help shows the options" sh -c "'$HULL' exec --help | grep -q -- '--timeout SECONDS'"
check "help exec works" sh -c "'$HULL' help exec | grep -q 'Usage: hull exec'"
"$HULL" frobnicate 2>"$TEST_TMP/err"; rc=$?
check "unknown command exits 2" test "$rc" -eq 2
check "unknown command says so on one line" sh -c "grep -q \"unknown command 'frobnicate'\" '$TEST_TMP/err' && [ \$(wc -l < '$TEST_TMP/err') -eq 1 ]"
for bad in "--memory 12Q" "--memory 1M" "--timeout -1" "--timeout abc" "--pids 0" "--cpus 0" "--env 1X=y" "--env NOEQ" "--tier vm" "--workdir /nonexistent" "--stdin /nonexistent" "--rootfs relative/path" "--output-limit 1" "--bogus"; do
        # shellcheck disable=SC2086
        "$HULL" exec $bad -- true 2>"$TEST_TMP/err"; rc=$?
        if [ "$rc" -eq 125 ] && [ "$(wc -l <"$TEST_TMP/err")" -eq 1 ] && grep -q '^hull: exec: ' "$TEST_TMP/err"; then
                pass "bad option '$bad' is refused with one line and 125"
        else
                fail "bad option '$bad' is refused with one line and 125" "rc=$rc err=$(cat "$TEST_TMP/err")"
        fi
done
"$HULL" exec 2>"$TEST_TMP/err"; rc=$?
check "no command is a usage error" sh -c "[ $rc -eq 125 ] && grep -q 'no command given' '$TEST_TMP/err'"

# ---- exit statuses ----
hexec -- true; check "exit 0 passes through" test $? -eq 0
hexec -- sh -c 'exit 7'; check "exit 7 passes through" test $? -eq 7
hexec -- sh -c 'kill -USR1 $$'; check "death by SIGUSR1 is 128+10" test $? -eq 138
hexec -- /nonexistent/cmd 2>"$TEST_TMP/err"; rc=$?
check "a missing command is 125 with the reason" sh -c "[ $rc -eq 125 ] && grep -q \"cannot execute '/nonexistent/cmd': No such file\" '$TEST_TMP/err'"
hexec -- python3 -c 'print(1)' >/dev/null; check "commands are found on PATH" test $? -eq 0

# ---- output and the JSON result ----
out=$(hexec -- sh -c 'echo out; echo err >&2' 2>"$TEST_TMP/err")
check "stdout is captured separately" test "$out" = "out"
check "stderr is captured separately" grep -qx err "$TEST_TMP/err"
hexec --json -- sh -c 'echo hi; echo oops >&2; exit 3' >"$J"; rc=$?
check "--json keeps the exit status" test "$rc" -eq 3
check "--json exit_code" test "$(json_get "$J" exit_code)" = 3
check "--json stdout" test "$(json_get "$J" stdout)" = "hi"
check "--json stderr" test "$(json_get "$J" stderr)" = "oops"
check "--json signal is null" test "$(json_get "$J" signal)" = null
check "--json tier" test "$(json_get "$J" tier)" = container
for k in timed_out oom_killed stdout_truncated stderr_truncated; do
        check "--json $k is false" test "$(json_get "$J" $k)" = false
done
for k in wall_ms cpu_user_ms cpu_sys_ms peak_memory_bytes stdout_bytes stdout_dropped_bytes; do
        check "--json has $k" /usr/bin/python3 -c "import json,sys; v=json.load(open('$J'))['$k']; sys.exit(0 if isinstance(v,(int,float)) and v>=0 else 1)"
done
hexec --json --output-limit 1K -- sh -c 'head -c 100000 /dev/zero | tr "\0" a; echo END' >"$J"
check "a flood is truncated" test "$(json_get "$J" stdout_truncated)" = true
check "dropped bytes are counted" test "$(json_get "$J" stdout_dropped_bytes)" -eq $((100004 - 1024))
check "the tail is kept" /usr/bin/python3 -c "import json; s=json.load(open('$J'))['stdout']; assert len(s)==1024 and s.endswith('aEND\n') and s.startswith('aaa')"
hexec --output-limit 1K -- sh -c 'head -c 5000 /dev/zero | tr "\0" b' >/dev/null 2>"$TEST_TMP/err"
check "plain mode says what it dropped" grep -q 'bytes of stdout dropped' "$TEST_TMP/err"
hexec --json -- sh -c 'printf "\377\376ok"' >"$J"
check "binary output travels as base64" /usr/bin/python3 -c "import json,base64; o=json.load(open('$J')); assert base64.b64decode(o['stdout_base64'])==b'\xff\xfeok'"

# ---- stdin and environment ----
printf 'line1\nline2\n' >"$TEST_TMP/in.txt"
out=$(hexec --stdin "$TEST_TMP/in.txt" -- wc -l)
check "--stdin feeds the file" test "$out" = 2
out=$(hexec -- sh -c 'cat; echo done')
check "stdin is empty by default" test "$out" = done
out=$(SECRET_HOST_VAR=leak hexec --env FOO=bar --env PATH=/usr/bin:/bin -- sh -c 'echo "$FOO:${SECRET_HOST_VAR:-none}:$PATH:$HOME"')
check "environment is scrubbed, --env applies" test "$out" = "bar:none:/usr/bin:/bin:/workspace"

# ---- work directory ----
# A file with a name of this run's own: it must be nowhere on the host afterwards (counting
# /tmp's entries instead would count other runs' on a shared machine).
mark=hull-exec-leftover-$$-$RANDOM
out=$(hexec -- sh -c "echo x > /workspace/$mark; mkdir -p d/e; chmod 000 d; grep ' /workspace ' /proc/mounts | cut -d' ' -f3"); rc=$?
found=$(find /tmp /var/tmp -xdev -maxdepth 4 -name "$mark" 2>/dev/null | head -1)
check "without --workdir, /workspace is a private tmpfs that leaves nothing on the host" sh -c "[ $rc -eq 0 ] && [ '$out' = tmpfs ] && [ -z '$found' ]"
hexec --memory 32M --json -- sh -c 'head -c 100000000 /dev/zero > /workspace/big' >"$J"
check "the /workspace tmpfs is bounded by --memory" sh -c "grep -q '\"exit_code\":1' '$J' || grep -q '\"oom_killed\":true' '$J'"
before=$(ls /tmp | grep -c '^hull-exec\.' || true)
"$HULL" exec --tier process --no-isolation-warning -- sh -c 'mkdir -p d/e; chmod 000 d; ln -s /etc x'; rc=$?
after=$(ls /tmp | grep -c '^hull-exec\.' || true)
check "the process tier's temporary work directory is removed" sh -c "[ $rc -eq 0 ] && [ $before -eq $after ]"
wd=$TEST_TMP/wd; mkdir "$wd"; chown 65534:65534 "$wd" 2>/dev/null || true
hexec --workdir "$wd" -- sh -c 'echo kept > result.txt; pwd' >"$TEST_TMP/pwd"
check "--workdir is mounted at /workspace and kept" sh -c "grep -qx /workspace '$TEST_TMP/pwd' && grep -qx kept '$wd/result.txt'"

# ---- limits ----
# Sleepers get durations no other program on the machine uses, so pgrep finds only ours.
hexec --timeout 1 --json -- sh -c 'trap "" TERM; (trap "" TERM; sleep 7201) & sleep 7201' >"$J"; rc=$?
check "a timeout ends with 124" test "$rc" -eq 124
check "timed_out is reported" test "$(json_get "$J" timed_out)" = true
check "the timeout ends SIGTERM-ignoring processes within the grace" /usr/bin/python3 -c "import json; assert json.load(open('$J'))['wall_ms'] < 4000"
sleep 0.2
check "no sleeper survives a timeout" sh -c "! pgrep -f '^sleep 7201$'"
hexec --memory 64M --json -- /usr/bin/python3 -c 'b=[]
while True: b.append(bytearray(1<<20))' >"$J"; rc=$?
check "a memory bomb is killed (137)" test "$rc" -eq 137
check "oom_killed is reported" test "$(json_get "$J" oom_killed)" = true
check "the peak memory is near the limit" /usr/bin/python3 -c "import json; p=json.load(open('$J'))['peak_memory_bytes']; assert 32<<20 < p <= 64<<20, p"
hexec --memory 64M --tmp-size 512M --json -- sh -c 'head -c 200000000 /dev/zero > /tmp/big' >"$J"; rc=$?
check "tmpfs pages count against the memory limit" test "$(json_get "$J" oom_killed)" = true
hexec --tmp-size 1M -- sh -c 'head -c 2000000 /dev/zero > /tmp/big' 2>"$TEST_TMP/err"; rc=$?
check "/tmp is size-capped" sh -c "[ $rc -ne 0 ] && grep -q 'No space left' '$TEST_TMP/err'"
out=$(hexec --pids 20 -- /usr/bin/python3 -c '
import os, time
n = 0
for i in range(40):
    try:
        if os.fork() == 0:
            time.sleep(5); os._exit(0)
        n += 1
    except OSError:
        break
print(n)')
check "--pids bounds the process count ($out forks)" sh -c "[ -n '$out' ] && [ '$out' -lt 20 ] && [ '$out' -gt 10 ]"
hexec --cpus 0.2 --json -- sh -c 'timeout 1 sh -c "while :; do :; done"; true' >"$J"
check "--cpus 0.2 holds the command near 20% of one CPU" /usr/bin/python3 -c "
import json; o=json.load(open('$J')); cpu=o['cpu_user_ms']+o['cpu_sys_ms']
assert cpu < 0.4*o['wall_ms'], (cpu, o['wall_ms'])"
out=$(hexec -- sh -c 'ulimit -n; ulimit -c')
check "rlimits: nofile 1024, core 0" test "$(echo $out)" = "1024 0"

# ---- leftovers ----
hexec -- sh -c 'sleep 7202 & echo started'  >/dev/null
sleep 0.2
check "a background process dies with its command" sh -c "! pgrep -f '^sleep 7202$'"
# A cgroup left behind is one with no process in it, still there a second later: another hull
# (a concurrent run, a daemon, one in another pid namespace whose PID means nothing here) has
# processes in its cgroups, or removes them within that second. "No process" must hold whatever
# pid namespace this test runs in (cgroup.procs lists only the processes it can see): v2 says it
# in cgroup.events (populated), v1's pids controller in pids.current; a hierarchy with neither
# counts through the pids one (the same name there).
cgroup_populated() {
        local d=$1 name
        if [ -r "$d/cgroup.events" ]; then
                grep -qx 'populated 1' "$d/cgroup.events"
                return
        fi
        if [ -r "$d/pids.current" ]; then
                [ "$(cat "$d/pids.current")" -gt 0 ]
                return
        fi
        name=$(basename "$d")
        for p in $(find /sys/fs/cgroup/pids -maxdepth 3 -type d -name "$name" 2>/dev/null); do
                [ "$(cat "$p/pids.current" 2>/dev/null || echo 0)" -gt 0 ] && return 0
        done
        find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | grep -q .
}
empty_hull_cgroups() {
        local d
        for d in $(find /sys/fs/cgroup -maxdepth 4 -type d -name 'hull-*' 2>/dev/null); do
                [ -d "$d" ] || continue
                cgroup_populated "$d" || echo "$d"
        done
}
# The check itself sees an empty cgroup (as root, where one can be made).
probe_cg=$(find /sys/fs/cgroup -maxdepth 2 -name cgroup.procs -path '*/pids/*' -printf '%h\n' 2>/dev/null | head -1)
[ -n "$probe_cg" ] || probe_cg=/sys/fs/cgroup
if [ "$(id -u)" -eq 0 ] && mkdir "$probe_cg/hull-0-leftover-check" 2>/dev/null; then
        check "the leftover check sees an empty hull cgroup" bash -c "$(declare -f cgroup_populated empty_hull_cgroups); empty_hull_cgroups | grep -q hull-0-leftover-check"
        rmdir "$probe_cg/hull-0-leftover-check"
fi
# ... and a live hull's cgroups are not, even seen from another pid namespace (a fresh root's
# tests while a hull runs on the host).
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
        "$HULL" exec --timeout 30 -- sleep 20 >/dev/null 2>&1 &
        live=$!
        for i in $(seq 1 100); do
                [ -n "$(find /sys/fs/cgroup -maxdepth 4 -type d -name "hull-$live-*" 2>/dev/null)" ] && break
                sleep 0.05
        done
        inner=$(unshare --pid --fork --mount-proc bash -c "$(declare -f cgroup_populated empty_hull_cgroups); empty_hull_cgroups" 2>&1)
        check "a live hull's cgroups, seen from another pid namespace, are not leftovers" \
                sh -c "[ -n \"\$(find /sys/fs/cgroup -maxdepth 4 -type d -name 'hull-$live-*')\" ] && ! printf '%s' '$inner' | grep -q 'hull-$live-'"
        kill "$live" 2>/dev/null
        wait "$live" 2>/dev/null
fi
# A busy machine (other suites beside this one) can take a while to remove a cgroup: one still
# empty after 1 s is looked at again 3 s later; a leftover stays for good.
left=0
first=$(empty_hull_cgroups)
for pause in 1 3; do
        [ -n "$first" ] || break
        sleep "$pause"
        now=$(empty_hull_cgroups)
        first=$(grep -xF -f <(printf '%s\n' "$now") <<<"$first" || true)
done
for d in $first; do
        left=$((left + 1)) && echo "# left behind: $d"
done
check "no cgroup is left behind" test "$left" -eq 0

# ---- --no-cgroup ----
hexec --no-cgroup --json -- true >"$J"; rc=$?
check "--no-cgroup runs without cgroups" sh -c "[ $rc -eq 0 ] && grep -q '\"oom_killed\":false' '$J'"

# ---- --rootfs: a prepared root with one static program ----
if [ -f /usr/lib/x86_64-linux-gnu/libc.a ] && command -v cc >/dev/null; then
        rootfs=$TEST_TMP/rootfs; mkdir -p "$rootfs/bin" "$rootfs/etc"
        echo "from the rootfs" >"$rootfs/etc/marker"
        cat >"$TEST_TMP/show.c" <<'C'
#include <stdio.h>
#include <unistd.h>
int main(void) {
        char b[64] = {0}; FILE *f = fopen("/etc/marker", "r");
        if (!f || !fgets(b, sizeof b, f)) return 3;
        printf("%s", b);
        return access("/usr/bin/python3", F_OK) == 0 ? 4 : 0;
}
C
        cc -static -O1 -o "$rootfs/bin/show" "$TEST_TMP/show.c"
        out=$(hexec --rootfs "$rootfs" -- /bin/show); rc=$?
        check "--rootfs replaces the host's /usr" sh -c "[ $rc -eq 0 ] && [ '$out' = 'from the rootfs' ]"
else
        skip "--rootfs replaces the host's /usr" "no static libc to build the test program"
fi

# ---- the process tier ----
"$HULL" exec --tier process -- true 2>"$TEST_TMP/err"; rc=$?
check "the process tier warns that it is not isolation" sh -c "[ $rc -eq 0 ] && grep -q 'not isolation' '$TEST_TMP/err'"
"$HULL" exec --tier process --no-isolation-warning -- true 2>"$TEST_TMP/err"
check "--no-isolation-warning silences it" test ! -s "$TEST_TMP/err"
"$HULL" exec --tier process --require-isolation -- true 2>"$TEST_TMP/err"; rc=$?
check "--require-isolation refuses the process tier" sh -c "[ $rc -eq 125 ] && grep -q 'require-isolation' '$TEST_TMP/err'"
"$HULL" exec --tier process --no-isolation-warning --timeout 1 -- sh -c 'trap "" TERM; sleep 7203 & sleep 7203'; rc=$?
check "the process tier times out with 124" test "$rc" -eq 124
sleep 0.2
check "the process tier kills its whole group" sh -c "! pgrep -f '^sleep 7203$'"
out=$(FOO=leak "$HULL" exec --tier process --no-isolation-warning -- sh -c 'echo ${FOO:-clean}')
check "the process tier scrubs the environment" test "$out" = clean
"$HULL" exec --tier process --no-isolation-warning --json -- sh -c 'kill -TERM $$' >"$J"; rc=$?
check "the process tier reports signals" sh -c "[ $rc -eq 143 ] && [ \"\$(/usr/bin/python3 -c \"import json; print(json.load(open('$J'))['signal'])\")\" = 15 ]"

# ---- interruption: hull stops the sandbox, reaps it and reports ----
"$HULL" exec --json -- sh -c 'trap "" TERM; sleep 7204' >"$J" 2>/dev/null &
hp=$!
# the signal is sent once the sandbox's command runs (30 s at most), not after a fixed pause: a
# loaded machine may not have started it (or hull not yet be past its own start) in half a second
for _ in $(seq 1 300); do pgrep -f '^sleep 7204$' >/dev/null && break; sleep 0.1; done
kill -INT "$hp"
wait "$hp"; rc=$?
check "SIGINT to hull stops the sandbox (130)" test "$rc" -eq 130
check "--json says interrupted" grep -q '"interrupted":true' "$J"
sleep 0.2
check "nothing of the interrupted sandbox survives" sh -c "! pgrep -f '^sleep 7204$'"

# ---- set-up failures are hard errors that name the layer ----
# user.max_user_namespaces is per user namespace: setting it to 0 inside a throwaway one
# disables user namespaces for hull alone, never for the host.
if unshare --user --map-root-user true 2>/dev/null; then
        unshare --user --map-root-user sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" exec --no-cgroup -- true' "$HULL" 2>"$TEST_TMP/err"; rc=$?
        check "no user namespaces: 125 naming the layer and the sysctl" sh -c "[ $rc -eq 125 ] && grep -q 'namespaces: cannot create' '$TEST_TMP/err' && grep -q 'max_user_namespaces' '$TEST_TMP/err'"
else
        skip "no user namespaces: 125 naming the layer" "unshare --user is not available here"
fi
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
        bin=$TEST_TMP/bin; install -d -m 0755 "$bin"; install -m 0755 "$HULL" "$bin/hull"
        setpriv --reuid=65534 --regid=65534 --clear-groups -- env -i PATH=/usr/bin:/bin "$bin/hull" exec -- true 2>"$TEST_TMP/err"; rc=$?
        check "no cgroup delegation: 125 naming the cgroup layer and the way out" sh -c "[ $rc -eq 125 ] && grep -q 'cgroup: cannot create' '$TEST_TMP/err' && grep -q -- '--no-cgroup' '$TEST_TMP/err'"
else
        skip "no cgroup delegation: 125 naming the cgroup layer" "needs root and setpriv"
fi

# ---- the process tier's memory limit leaves runtimes that reserve address space alone ----
if [ -x /usr/bin/node ]; then
        out=$("$HULL" exec --tier process --no-isolation-warning -- /usr/bin/node -e 'console.log(6*7)' 2>&1)
        check "the process tier runs node under its memory rlimit" test "$out" = 42
else
        skip "the process tier runs node under its memory rlimit" "no /usr/bin/node"
fi
"$HULL" exec --tier process --no-isolation-warning --memory 64M -- /usr/bin/python3 -c 'b = bytearray(1 << 30)' 2>"$TEST_TMP/err"; rc=$?
check "the process tier bounds private memory" sh -c "[ $rc -eq 1 ] && grep -q MemoryError '$TEST_TMP/err'"

# ---- plain mode streams the output while the command runs ----
/usr/bin/python3 - "$HULL" >"$TEST_TMP/stream" 2>&1 <<'PY'
import subprocess, sys, time
t0 = time.monotonic()
p = subprocess.Popen([sys.argv[1], "exec", "--", "sh", "-c", "echo first; sleep 2; echo second"], stdout=subprocess.PIPE)
first = p.stdout.readline()
t_first = time.monotonic() - t0
rest = p.stdout.read()
p.wait()
print(first == b"first\n" and rest == b"second\n" and t_first < 1.5 and p.returncode == 0, round(t_first, 3))
PY
check "plain mode streams stdout as it arrives" grep -q '^True' "$TEST_TMP/stream"

# ---- options the process tier cannot honour are refused, not ignored ----
for opt in "--pids 3" "--cpus 0.5" "--tmp-size 1M" "--rootfs /"; do
        # shellcheck disable=SC2086
        "$HULL" exec --tier process --no-isolation-warning $opt -- true 2>"$TEST_TMP/err"; rc=$?
        check "the process tier refuses $opt" sh -c "[ $rc -eq 125 ] && grep -q -- '--tier container' '$TEST_TMP/err'"
done
"$HULL" exec --cpus 0.005 -- true 2>"$TEST_TMP/err"; rc=$?
check "--cpus below 0.01 is a usage error, not a set-up failure" sh -c "[ $rc -eq 125 ] && grep -q 'from 0.01 up' '$TEST_TMP/err'"

# ---- a set-up failure names the path it failed on ----
if [ "$(id -u)" -eq 0 ]; then
        locked=$TEST_TMP/locked-rootfs; mkdir -p "$locked/sub"; chmod 700 "$locked"
        "$HULL" exec --rootfs "$locked" -- /bin/true 2>"$TEST_TMP/err"; rc=$?
        check "an unreadable --rootfs entry fails with 125 naming it" sh -c "[ $rc -eq 125 ] && grep -q 'mount: cannot bind read-only $locked/sub: Permission denied' '$TEST_TMP/err'"
fi

# ---- --stdio: the caller's pipes handed to the command, live ----
printf 'one\ntwo\n' | "$HULL" exec --stdio -- cat 2>&1 | cat >"$TEST_TMP/o"; rc=${PIPESTATUS[1]}
check "--stdio: stdin reaches the command and its output comes back; EOF ends cat, exit 0" \
        sh -c "[ $rc -eq 0 ] && [ \"\$(cat '$TEST_TMP/o')\" = 'one
two' ]"
echo x | "$HULL" exec --stdio -- sh -c 'cat >/dev/null; echo to-stderr >&2; exit 7' 2>&1 | cat >"$TEST_TMP/o"
rc=${PIPESTATUS[1]}
check "--stdio: stderr is passed too and the exit status is the command's" \
        sh -c "[ $rc -eq 7 ] && [ \"\$(cat '$TEST_TMP/o')\" = to-stderr ]"
# live: each line comes back before the next is written (nothing is buffered or captured); then
# SIGTERM to hull exec ends it and the sandboxed command (128+15)
HULL="$HULL" /usr/bin/python3 - >"$TEST_TMP/live" 2>&1 <<'PYEOF'
import os, select, signal, subprocess, sys
def start(argv):
    return subprocess.Popen([os.environ["HULL"], "exec", "--stdio", "--"] + argv, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
def line_back(p, s):
    p.stdin.write(s)
    p.stdin.flush()
    r, _, _ = select.select([p.stdout], [], [], 60)
    return bool(r) and p.stdout.readline() == s
p = start(["cat"])
ok = all(line_back(p, b"line %d\n" % i) for i in range(3))
p.stdin.close()
rc = p.wait(60)
print("live" if ok and rc == 0 and p.stdout.read() == b"" else "not live rc=%s" % rc)
p = start(["sh", "-c", "trap 'echo term >&2; exit 9' TERM; while read l; do echo \"$l\"; done"])
ok = line_back(p, b"before\n")
p.send_signal(signal.SIGTERM)
try:
    rc = p.wait(60)
except subprocess.TimeoutExpired:
    p.kill()
    rc = None
print("stopped" if ok and rc == 128 + signal.SIGTERM else "not stopped ok=%s rc=%s" % (ok, rc))
PYEOF
check "--stdio: a line written comes back before stdin is closed, and EOF ends the sandbox" grep -qx live "$TEST_TMP/live"
check "--stdio: SIGTERM to hull exec stops the sandboxed command, status 143" grep -qx stopped "$TEST_TMP/live"
echo | FOO_SECRET=s3 "$HULL" exec --stdio --pass-env FOO_SECRET --pass-env UNSET_VAR -- \
        sh -c 'echo "$FOO_SECRET ${UNSET_VAR-unset}"' 2>&1 | cat >"$TEST_TMP/o"
check "--pass-env: a variable of hull's environment by name; an unset one stays unset" grep -qx "s3 unset" "$TEST_TMP/o"
"$HULL" exec --stdio -- cat <"$TEST_TMP/live" 2>"$TEST_TMP/err" | cat; rc=${PIPESTATUS[0]}
check "--stdio refuses a regular file as stdin (it could be reopened through /proc)" \
        sh -c "[ $rc -eq 125 ] && grep -q 'stdin is a regular file' '$TEST_TMP/err'"
for opt in "--json" "--stdin $TEST_TMP/live" "--output-limit 1M" "--tier process --no-isolation-warning"; do
        # shellcheck disable=SC2086
        echo | "$HULL" exec --stdio $opt -- true 2>&1 | cat >"$TEST_TMP/err"; rc=${PIPESTATUS[1]}
        check "--stdio refuses $opt" sh -c "[ $rc -eq 125 ] && grep -q -- '--stdio' '$TEST_TMP/err'"
done

# ---- what the start-up costs, counted (issue 26: hull exec ≤ 0.80× bwrap; bench/run.sh times it) ----
# The launcher maps libc and the loader only: every other library hull uses (libcurl, SQLite,
# OpenSSL, libarchive, ...) is loaded with dlopen by the commands that need it, never by exec.
# A sanitizer build maps its runtime (libasan, libubsan, libstdc++, ...) and makes its own
# syscalls at start: those two counts are the normal build's; the mounts are counted in both.
sanitized=""
ldd "$HULL" 2>/dev/null | grep -q 'libasan\|libubsan' && sanitized=1
if [ -n "$sanitized" ]; then
        skip "the hull exec launcher's libraries, counted" "a sanitizer build maps its runtime (the normal build counts them)"
else
        "$HULL" exec --timeout 20 -- sleep 2 & xp=$!
        libs=""
        for _ in $(seq 1 40); do
                libs=$(grep -o '/[^ ]*\.so[^ /]*$' "/proc/$xp/maps" 2>/dev/null | sort -u | xargs -r -n1 basename | tr '\n' ' ')
                case $libs in *libc.so*) break ;; esac
                sleep 0.05
        done
        wait "$xp"
        check "the hull exec launcher maps only libc and the loader (got: $libs)" \
                sh -c "[ \"\$(printf '%s\n' $libs | grep -cv '^libc\.so\|^ld-linux')\" -eq 0 ] && printf '%s\n' $libs | grep -q '^libc\.so'"
fi
# The syscalls of a whole `hull exec --no-cgroup -- /bin/true` (launcher, init, payload): 367 when
# this was written, 23 of them mounts (bench/commands.sh's bwrap: 629 and 37). A library loaded again, a mount more
# per run or a loop of calls shows here before it shows in the benchmark.
if command -v strace >/dev/null; then
        strace -f -c -o "$TEST_TMP/sc" "$HULL" exec --no-cgroup -- /bin/true
        total=$(awk '$NF == "total" {print $4}' "$TEST_TMP/sc")
        mounts=$(awk '$NF == "mount" {print $4}' "$TEST_TMP/sc")
        if [ -n "$sanitized" ]; then
                skip "the syscalls of hull exec, counted" "a sanitizer build makes its own at start (made ${total:-?}; the normal build counts them)"
        else
                check "hull exec --no-cgroup -- /bin/true makes at most 370 syscalls (made ${total:-?})" \
                        sh -c "[ -n '$total' ] && [ '$total' -le 370 ]"
        fi
        check "... and at most 24 mounts (made ${mounts:-?})" sh -c "[ -n '$mounts' ] && [ '$mounts' -le 24 ]"
        # One tmpfs for the staging area and the root (the root is a bind of its newroot
        # directory), then /dev, /dev/shm, /tmp and /workspace: 5 superblocks, not 6.
        strace -f -e trace=mount,mmap -o "$TEST_TMP/mt" "$HULL" exec --no-cgroup -- /bin/true
        tmpfs=$(grep -c 'mount("tmpfs"' "$TEST_TMP/mt")
        check "... and mounts 5 tmpfs (mounted ${tmpfs:-?})" sh -c "[ '$tmpfs' -eq 5 ]"
        # A command that writes nothing costs no output buffer (the 1 MiB captures are taken at
        # the first byte): no anonymous mapping of 1 MiB or more.
        big=$(awk 'match($0, /mmap\(NULL, [0-9]+, .*MAP_ANONYMOUS/) { split(substr($0, RSTART + 10), a, ","); if (a[1] + 0 >= 1048576) n++ } END { print n + 0 }' "$TEST_TMP/mt")
        if [ -n "$sanitized" ]; then
                skip "... and maps no output buffer for a silent command" "a sanitizer build maps its own (${big:-?} mappings of 1 MiB or more)"
        else
                check "... and maps no output buffer for a silent command (${big:-?} mappings of 1 MiB or more)" \
                        sh -c "[ '$big' -eq 0 ]"
        fi
        # With cgroups (v1): the sandbox joins through `tasks` fds hull opens and passes, so the
        # files are never chowned to the sandbox user and back (4 chown, 2 stat, a wait).
        if [ "$(stat -f -c %T /sys/fs/cgroup/memory 2>/dev/null)" = cgroupfs ]; then
                strace -f -c -o "$TEST_TMP/scg" "$HULL" exec -- /bin/true
                chowns=$(awk '$NF == "chown" {print $4}' "$TEST_TMP/scg")
                cgtotal=$(awk '$NF == "total" {print $4}' "$TEST_TMP/scg")
                check "hull exec -- /bin/true (v1 cgroups) chowns nothing (chowned ${chowns:-0} times)" \
                        sh -c "[ -z '$chowns' ]"
                if [ -z "$sanitized" ]; then
                        check "... and makes at most 410 syscalls (made ${cgtotal:-?})" \
                                sh -c "[ -n '$cgtotal' ] && [ '$cgtotal' -le 410 ]"
                fi
        fi
else
        skip "the syscalls of hull exec, counted" "no strace"
fi
