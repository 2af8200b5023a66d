# test-deploy-manifests.sh: deploy/ checked offline. deploy/kubernetes/*.json by check_manifests.py
# (stdlib python: Debian 12 has no kubectl), the flags they pass checked against `hull serve
# --help` (and `hull worker --help` when this hull has it); then the checker is shown to catch
# broken copies (no readiness probe, a Secret key that does not exist, the default seccomp
# profile, a Service on a port no container has). deploy/systemd/*.service by `systemd-analyze
# verify` (ExecStart pointed at this hull) and their hull serve flags against its --help.
source "$(dirname "$0")/../lib.sh"
start=$(date +%s.%N)
top=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
CHECK=$top/tests/integration/check_manifests.py
helps=("$TEST_TMP/serve.help")
"$HULL" serve --help >"$TEST_TMP/serve.help" 2>&1
if "$HULL" worker --help >"$TEST_TMP/worker.help" 2>&1; then helps+=("$TEST_TMP/worker.help"); fi
if out=$("$PY" "$CHECK" "$top/deploy/kubernetes" "${helps[@]}" 2>&1); then
        pass "deploy: the Kubernetes manifests: $out"
else
        fail "deploy: the Kubernetes manifests" "$(echo "$out" | head -5 | tr '\n' ' ')"
fi
# broken [FILE PYTHON-EDIT EXPECTED-WORDS]: a copy with one thing broken must be refused, naming it
broken() {
        local what=$1 file=$2 edit=$3 want=$4
        rm -rf "$TEST_TMP/k"
        cp -r "$top/deploy/kubernetes" "$TEST_TMP/k"
        "$PY" -c "
import json, sys
p = sys.argv[1]
d = json.load(open(p))
items = d['items'] if d.get('kind') == 'List' else [d]
$edit
json.dump(d, open(p, 'w'))" "$TEST_TMP/k/$file"
        if out=$("$PY" "$CHECK" "$TEST_TMP/k" "${helps[@]}" 2>&1); then
                fail "deploy: the checker refuses $what" "it passed: $out"
        elif echo "$out" | grep -q "$want"; then
                pass "deploy: the checker refuses $what"
        else
                fail "deploy: the checker refuses $what" "not naming '$want': $out"
        fi
}
SERVE_C="items[0]['spec']['template']['spec']['containers'][0]"
broken "a hull serve without its readiness probe" 20-hull-serve.json "del $SERVE_C['readinessProbe']" "readiness probe on /readyz"
broken "a Secret key that does not exist" 20-hull-serve.json "$SERVE_C['env'][2]['valueFrom']['secretKeyRef']['key'] = 'nope'" "no key nope"
broken "the runtime's default seccomp profile" 30-hull-worker.json "items[0]['spec']['template']['spec']['containers'][0]['securityContext']['seccompProfile']['type'] = 'RuntimeDefault'" "seccompProfile is not Unconfined"
broken "a Service on a port no container has" 20-hull-serve.json "items[1]['spec']['ports'][0]['targetPort'] = 9999" "targetPort 9999"
broken "a node id that is not the pod's name" 20-hull-serve.json "a = $SERVE_C['args']; a[a.index('--node-id') + 1] = 'n1'" "node-id is not the pod"
broken "a flag hull serve does not have" 20-hull-serve.json "$SERVE_C['args'].append('--no-such-flag')" "no flag --no-such-flag"

# systemd: the units as systemd reads them, ExecStart's hull this build's
for u in "$top"/deploy/systemd/*.service; do
        name=$(basename "$u")
        sed "s|/usr/local/bin/hull|$HULL|" "$u" >"$TEST_TMP/$name"
        exec_flags=$(sed -n 's/^ExecStart=[^ ]* \([a-z]*\) /\1 /p' "$u")
        sub=${exec_flags%% *}
        missing=""
        if [ -f "$TEST_TMP/$sub.help" ] && grep -q "^Usage: hull $sub" "$TEST_TMP/$sub.help"; then
                for f in $(echo "$exec_flags" | grep -o -- '--[a-z][a-z0-9-]*'); do
                        grep -q -- "$f\b" "$TEST_TMP/$sub.help" || missing="$missing $f"
                done
                if [ -z "$missing" ]; then pass "deploy: $name: its hull $sub flags exist"; else fail "deploy: $name: its hull $sub flags exist" "missing:$missing"; fi
        fi
        if command -v systemd-analyze >/dev/null; then
                if out=$(systemd-analyze verify "$TEST_TMP/$name" 2>&1); then
                        pass "deploy: systemd-analyze verify $name"
                else
                        fail "deploy: systemd-analyze verify $name" "$(echo "$out" | head -3 | tr '\n' ' ')"
                fi
        else
                skip "deploy: systemd-analyze verify $name" "systemd is not installed"
        fi
done
printf '# test-deploy-manifests: %.1f s\n' "$(echo "$(date +%s.%N) - $start" | bc)"
