# test-kernel-tier.sh: the kernel tier (gVisor's runsc) through hull serve's plimsoll face: hull
# serve's self-check at start makes Describe say isolation kernel with runsc's version and platform
# as the evidence (policy); a Run with minimumIsolation kernel runs under gVisor (its output shows
# gVisor's kernel) and its record says kernel; a Run without a floor still gets the container tier;
# a floor of vm is refused before dispatch (failed_precondition + isolation); the audit log of the
# runs passes hull verify; with --no-kernel-tier, container is the highest tier again; with runsc
# missing or failing its self-check (HULL_RUNSC), hull serve says so in one line and offers
# container (Describe, a kernel floor refused, a /v1 kernel environment's turn a clear error).
# Without runsc it is skipped (exit 77), never passed.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

if [ "$(id -u)" -ne 0 ]; then
        skip "kernel tier" "needs root (runsc runs its sandbox as root)"
        exit 77
fi
if ! command -v runsc >/dev/null 2>&1 && [ ! -x /usr/bin/runsc ]; then
        skip "kernel tier" "runsc (gVisor) is not installed"
        exit 77
fi

AUDIT=$TEST_TMP/audit
LOG=$TEST_TMP/serve.log
# its bundles (runsc's --root) below TEST_TMP: its runsc processes are told from other suites' by them
TMPDIR=$TEST_TMP HULL_TEST_KERNEL_TIER=1 start_server "$LOG" --audit-dir "$AUDIT" ||
        { fail "kernel tier: hull serve starts" "$(tail -n 5 "$LOG")"; exit 1; }
check "kernel tier: hull serve logs its evidence in one line" \
        test "$(grep -c 'event=kernel-tier evidence="gVisor runsc .*, platform [a-z]*"' "$LOG")" -eq 1

P=$URL/plimsoll.v1.SandboxService
post() { # post PROCEDURE JSON OUT: the answer's body in OUT, its status printed
        curl -s -o "$3" -w '%{http_code}' -X POST -H 'content-type: application/json' --data-binary "$2" "$P/$1"
}
jq_() { /usr/bin/python3 -c "import json,sys,base64; j=json.load(open(sys.argv[1])); print($2)" "$1" 2>&1; }

st=$(post Describe '{}' "$TEST_TMP/d.json")
check "kernel tier: Describe answers 200" test "$st" = 200
check "kernel tier: Describe says isolation kernel" test "$(jq_ "$TEST_TMP/d.json" 'j["isolation"]')" = kernel
check "kernel tier: Describe's policy is runsc's version and platform" \
        grep -qE '^gVisor runsc [^ ]+, platform [a-z]+$' <<<"$(jq_ "$TEST_TMP/d.json" 'j.get("policy","")')"

req='{"protocol":3,"minimumIsolation":"kernel","timeoutMs":60000,"project":{"files":[{"path":"a.sh","content":"uname -r\nid -u\necho ok > out.txt\n"}],"steps":["sh a.sh"],"artifacts":["out.txt"]}}'
st=$(post Run "$req" "$TEST_TMP/k.json")
check "kernel tier: a Run with minimumIsolation kernel answers 200" test "$st" = 200
check "kernel tier: its answer and its record say kernel" \
        test "$(jq_ "$TEST_TMP/k.json" 'j["isolation"] + " " + j["record"]["isolation"]')" = "kernel kernel"
check "kernel tier: its record's policy is the evidence Describe gave" \
        test "$(jq_ "$TEST_TMP/k.json" 'j["record"]["policy"]')" = "$(jq_ "$TEST_TMP/d.json" 'j["policy"]')"
out=$(jq_ "$TEST_TMP/k.json" 'base64.b64decode(j["project"]["steps"][0]["stdout"]).decode()')
check "kernel tier: the step ran under gVisor's kernel (4.4.0), not the host's ($(uname -r))" \
        test "$(head -n 1 <<<"$out")" = 4.4.0 -a "$(uname -r)" != 4.4.0
check "kernel tier: the step ran as the sandbox user, and its artifact came back" \
        test "$(sed -n 2p <<<"$out") $(jq_ "$TEST_TMP/k.json" 'base64.b64decode(j["project"]["artifacts"][0]["content"]).decode().strip()')" = "65534 ok"

st=$(post Run '{"protocol":3,"timeoutMs":60000,"project":{"files":[],"steps":["uname -r"]}}' "$TEST_TMP/c.json")
check "kernel tier: a Run without a floor gets the container tier (the host's kernel)" \
        test "$st" = 200 -a "$(jq_ "$TEST_TMP/c.json" 'j["record"]["isolation"] + " " + base64.b64decode(j["project"]["steps"][0]["stdout"]).decode().strip()')" = "container $(uname -r)"

st=$(post Run '{"protocol":3,"minimumIsolation":"vm","timeoutMs":60000,"project":{"files":[],"steps":["touch /workspace/ran"]}}' "$TEST_TMP/v.json")
check "kernel tier: a floor of vm is refused: failed_precondition" \
        test "$st" = 400 -a "$(jq_ "$TEST_TMP/v.json" 'j["code"]')" = failed_precondition
check "kernel tier: the vm refusal is NotDispatched + isolation (CAU) and says so" \
        grep -q '"value": *"CAU"' "$TEST_TMP/v.json"
check "kernel tier: the vm refusal names both tiers" grep -q "floor is vm and this daemon's tier is kernel" "$TEST_TMP/v.json"

st=$(post Run '{"protocol":3,"minimumIsolation":"kernel","timeoutMs":3000,"project":{"files":[],"steps":["sleep 60"]}}' "$TEST_TMP/t.json")
check "kernel tier: a kernel run past its deadline times out" \
        test "$st" = 200 -a "$(jq_ "$TEST_TMP/t.json" 'j["project"]["outcome"]')" = PROJECT_OUTCOME_TIMED_OUT
# this server's runsc processes, by their bundles' root (the machine's other runsc-sandbox processes
# are other suites'; a status file holding the server's pid's digits was no test: a sandbox's
# parent is runsc, and any number there, another suite's too, could hold them); 10 s at most
for _ in $(seq 1 100); do
        left=$(pgrep -f -- "--root=$TEST_TMP/hull-oci" | tr '\n' ' ')
        [ -z "$left" ] && break
        sleep 0.1
done
check "kernel tier: the timed-out run left no runsc sandbox behind ($left)" test -z "$left"

out=$("$HULL" verify "$AUDIT/runs.jsonl" 2>&1); rc=$?
check "kernel tier: hull verify accepts the runs' audit log (kernel and container records)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || echo "# $out"
stop_server

start_server "$LOG.2" ||
        { fail "kernel tier: hull serve --no-kernel-tier starts" "$(tail -n 5 "$LOG.2")"; exit 1; }
P=$URL/plimsoll.v1.SandboxService
post Describe '{}' "$TEST_TMP/d2.json" >/dev/null
check "kernel tier: with --no-kernel-tier, Describe says container" \
        test "$(jq_ "$TEST_TMP/d2.json" 'j["isolation"]')" = container
st=$(post Run "$req" "$TEST_TMP/k2.json")
check "kernel tier: ... and a kernel floor is refused (failed_precondition)" \
        test "$st" = 400 -a "$(jq_ "$TEST_TMP/k2.json" 'j["code"]')" = failed_precondition
stop_server

# ---- runsc missing, then a runsc that fails its self-check (it knows its version, fails to run) ----
printf '%s\n' '#!/bin/sh' 'case "$1" in --version) echo "runsc version fake-1"; exit 0 ;; flags) exit 0 ;; esac' \
        'echo "this runsc fails on purpose" >&2' 'exit 1' >"$TEST_TMP/runsc-bad"
chmod 0755 "$TEST_TMP/runsc-bad"
SCRIPT='{"steps": [{"tool_calls": [{"name": "run_python", "input": {"code": "print(1)"}, "id": "toolu_b1"}]}, {"text": "done"}]}'
mock_start "$SCRIPT" --log-level error || fail "kernel tier: the mock model starts" "$(cat "$TEST_TMP/mock.err")"
for case in missing:$TEST_TMP/no-such-runsc failing:$TEST_TMP/runsc-bad; do
        what=${case%%:*}
        HULL_RUNSC=${case#*:} HULL_TEST_KERNEL_TIER=1 TMPDIR=$TEST_TMP serve_v1 "$LOG.$what" ||
                { fail "kernel tier, runsc $what: hull serve starts" "$(tail -n 5 "$LOG.$what")"; continue; }
        check "kernel tier, runsc $what: hull serve says so in one line, container the highest tier" \
                test "$(grep -c 'kernel' "$LOG.$what") $(grep -c 'event=kernel-tier-unavailable error=.*msg="container is the highest tier"' "$LOG.$what")" = "1 1"
        grep 'kernel' "$LOG.$what" | sed 's/^/# /'
        P=$URL/plimsoll.v1.SandboxService
        post Describe '{}' "$TEST_TMP/d3.json" >/dev/null
        check "kernel tier, runsc $what: Describe offers container, with no kernel evidence" \
                test "$(jq_ "$TEST_TMP/d3.json" 'j["isolation"] + " " + str("gVisor" in j.get("policy", ""))')" = "container False"
        st=$(post Run "$req" "$TEST_TMP/k3.json")
        check "kernel tier, runsc $what: a Run with a kernel floor is refused before dispatch" \
                test "$st" = 400 -a "$(jq_ "$TEST_TMP/k3.json" 'j["code"]')" = failed_precondition
        v1 POST /v1/environments '{"name": "k", "config": {"type": "cloud", "hull": {"tier": "kernel"}}}'
        ENV=$(field id)
        v1 POST /v1/agents "{\"name\": \"k\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"hull_toolset_20261201\"}]}"
        AGENT=$(field id)
        v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
        SESSION=$(field id)
        v1 POST "/v1/sessions/$SESSION/events" "$(user_message "go")"
        wait_idle "$SESSION" 60
        events_json "$SESSION" >"$TEST_TMP/events.json"
        pycheck "kernel tier, runsc $what: a /v1 kernel environment's turn ends with a clear session.error" '
import json, sys
ev = json.load(open(sys.argv[1]))
ok = any(e["type"] == "session.error" and "has no kernel tier" in e["error"]["message"] for e in ev)
sys.exit(0 if ok else (print(json.dumps(ev)[:1200]), 1)[1])' "$TEST_TMP/events.json"
        stop_server
        check "kernel tier, runsc $what: nothing is left (no bundle)" \
                test -z "$(find "$TEST_TMP" -maxdepth 1 -name 'hull-oci.*')"
done
mock_stop >/dev/null

# ---- hull exec --tier kernel: the shared root skeleton (sbx-oci-root.c) --------------------------
# A run's root is a skeleton below /run/hull-kernel shared by every run of the same content, so a
# run creates only its bundle directory and config.json (counted, not timed; runsc adds its log
# and state files there); a skeleton that is not hull's own (writable by others, another owner, a
# link) is replaced, never used or followed; concurrent runs share one. The work directory's owner
# is a uid of this test's own, so its skeleton (its passwd names that uid) is this test's alone,
# removed at the end.
KUID=$((40000 + RANDOM % 20000))
KW=$TEST_TMP/kwork
KT=$TEST_TMP/ktmp
mkdir -p "$KW" "$KT"
chown "$KUID:$KUID" "$KW"
kx() { TMPDIR=$KT timeout -k 5 90 "$HULL" exec --tier kernel --workdir "$KW" "$@"; }
TMPDIR=$KT timeout -k 5 90 "$HULL" exec --tier kernel --workdir "$KW" -- /bin/sleep 3 >/dev/null 2>&1 &
kpid=$!
# each wait 30 s at most: runsc's start is slow on a busy machine (the sleep then holds it 3 s)
for _ in $(seq 600); do
        kb=$(ls -d "$KT"/hull-oci.* 2>/dev/null | head -n 1)
        [ -n "$kb" ] && [ -s "$kb/config.json" ] && break
        sleep 0.05
done
SK=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["root"]["path"])' "$kb/config.json" 2>/dev/null)
hull_made=$(find "$kb" -mindepth 1 -maxdepth 1 ! -name runsc.log ! -name '*.state' ! -name '*.lock' | wc -l)
# runsc is given /dev/null (read only) at fd 300 and nothing else above stdio, so its gofer and
# sandbox start with a 512-slot fd table and never wait for an RCU grace period to grow it
wide="" gs=""
for _ in $(seq 600); do
        # until both kinds run: two processes could be one kind and a child it forked for a moment
        pgrep -f "runsc-gofer .*$kb" >/dev/null && pgrep -f "runsc-sandbox .*$kb" >/dev/null &&
                gs=$(pgrep -f "runsc-(gofer|sandbox) .*$kb" | tr '\n' ' ') && break
        sleep 0.05
done
# every process of runsc's gofer and sandbox seen (a third, forked by one of them for a moment,
# holds it too; one already gone when read is left out, and so is one that was ending: its fds
# are closed before its /proc entry goes, so one without fd 300 counts only if it still runs
# 0.2 s later, as the gofer and the sandbox do for the 3 s of the command)
kinds="" bad=0 seen=0
for p in $gs; do
        w="$(readlink "/proc/$p/fd/300" 2>/dev/null || echo none):$(awk '/^flags:/ {print $2 % 4}' "/proc/$p/fdinfo/300" 2>/dev/null):$(awk '/^FDSize:/ {print $2}' "/proc/$p/status" 2>/dev/null)"
        k=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | head -n 1)
        [ -d "/proc/$p" ] || continue
        if [ "${w%%:*}" = none ]; then
                sleep 0.2
                case "$(awk '/^State:/ {print $2}' "/proc/$p/status" 2>/dev/null)" in '' | Z | X) continue ;; esac
        fi
        wide="$wide $w"
        kinds="$kinds ${k:-?}"
        seen=$((seen + 1))
        [ "$w" = /dev/null:0:512 ] || bad=$((bad + 1))
done
wait "$kpid"
ok_kinds=no
case "$kinds" in *runsc-gofer*) case "$kinds" in *runsc-sandbox*) ok_kinds=yes ;; esac ;; esac
check "kernel exec: runsc's gofer and sandbox hold /dev/null read only at fd 300 and a 512-slot fd table ($wide;$kinds)" \
        test "$ok_kinds" = yes -a "$seen" -ge 2 -a "$bad" -eq 0
check "kernel exec: the root is a shared skeleton below /run/hull-kernel ($SK)" \
        sh -c "case '$SK' in /run/hull-kernel/root-*) test -d '$SK' && grep -q ':$KUID:$KUID:' '$SK/etc/passwd' ;; *) false ;; esac"
check "kernel exec: the bundle holds only config.json besides runsc's state files and log ($hull_made entries)" \
        test "$hull_made" -eq 1
if command -v strace >/dev/null; then
        # hull alone (runsc untraced): every entry it creates on a run whose skeleton exists
        strace -o "$TEST_TMP/kx.st" -e trace=mkdir,mkdirat,symlink,symlinkat,openat,creat,rename,renameat2,link,linkat,clone,clone3,fork,vfork \
                env TMPDIR="$KT" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
                "$HULL" exec --tier kernel --no-cgroup --workdir "$KW" -- /bin/true
        made=$(grep -E '^(mkdir|mkdirat|symlink|symlinkat|creat|rename|renameat2|link|linkat)\(|O_CREAT' "$TEST_TMP/kx.st" |
                grep -v '= -1' | wc -l)
        check "kernel exec: a run creates at most 2 filesystem entries (the bundle, config.json; made $made, 31 before the skeleton)" \
                test "$made" -le 2
        grep -E '^(mkdir|mkdirat|symlink|symlinkat|creat|rename|renameat2)\(|O_CREAT' "$TEST_TMP/kx.st" | sed 's/^/# /' | head -n 8
        # runsc is started sharing hull's memory until its execve (no page tables copied, no
        # copy-on-write faults after): one clone, CLONE_VM | CLONE_VFORK (the sanitizer build's
        # leak check, which clones a tracer at exit, cannot work under strace: off above)
        check "kernel exec: runsc is started vfork-style (clone with CLONE_VM|CLONE_VFORK), not forked" \
                sh -c "test \$(grep -cE '^(clone|clone3|fork|vfork)\\(' '$TEST_TMP/kx.st') -eq 1 && grep -E '^clone\\(' '$TEST_TMP/kx.st' | grep -q 'CLONE_VM|CLONE_VFORK'"
        grep -E '^(clone|clone3|fork|vfork)\(' "$TEST_TMP/kx.st" | sed 's/^/# /'
else
        skip "kernel exec: the entries a run creates, counted" "no strace"
fi
# a skeleton writable by others (a file planted in it), then one of another owner, then a link
chmod o+w "$SK" && touch "$SK/planted"
out=$(kx -- /bin/cat /etc/passwd 2>&1); rc=$?
check "kernel exec: a skeleton writable by others is replaced, not used" \
        sh -c "[ $rc -eq 0 ] && [ ! -e '$SK/planted' ] && [ \"\$(stat -c '%a %u' '$SK')\" = '755 0' ]"
chown -R 65534 "$SK"
out=$(kx -- /bin/true 2>&1); rc=$?
check "kernel exec: a skeleton of another owner is replaced" \
        sh -c "[ $rc -eq 0 ] && [ \"\$(stat -c '%u' '$SK' '$SK/etc' '$SK/etc/passwd' | sort -u)\" = 0 ]"
mkdir -p "$TEST_TMP/decoy" && echo keep >"$TEST_TMP/decoy/keep"
rm -rf "$SK" && ln -s "$TEST_TMP/decoy" "$SK"
out=$(kx -- /bin/true 2>&1); rc=$?
check "kernel exec: a link in the skeleton's place is replaced, its target untouched" \
        sh -c "[ $rc -eq 0 ] && [ ! -L '$SK' ] && [ -d '$SK' ] && [ \"\$(ls '$TEST_TMP/decoy')\" = keep ] && [ ! -e '$TEST_TMP/decoy/etc' ]"
# concurrent runs with no skeleton yet: each its own bundle, one skeleton, nothing left over
rm -rf "$SK"
for i in 1 2 3; do kx -- /bin/sh -c "grep -c ':$KUID:' /etc/passwd" >"$TEST_TMP/kc$i" 2>&1 & done
wait
check "kernel exec: three concurrent runs on a new skeleton all succeed" \
        test "$(cat "$TEST_TMP"/kc1 "$TEST_TMP"/kc2 "$TEST_TMP"/kc3 | tr -d '\n')" = 111
check "kernel exec: ... they left one skeleton, no half-made one, no bundle" \
        sh -c "[ -d '$SK' ] && [ -z \"\$(ls -d '$SK'.tmp-* 2>/dev/null)\" ] && [ -z \"\$(ls '$KT')\" ]"
rm -rf "$SK" "$SK".tmp-*
exit 0
