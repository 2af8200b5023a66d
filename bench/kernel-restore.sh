#!/bin/bash
# bench/kernel-restore.sh: issue 24's warm start under gVisor by checkpoint/restore, measured by
# hand as root (not a test): can a sandbox whose Python already imported numpy and pandas be
# checkpointed once and restored per session fast enough for "a new kernel-tier session to its
# first pandas cell <= 0.3x a cold import under runsc"?
#
# One OCI bundle shape for everything (the host's / read-only as the root, /workspace a bind of
# a per-sandbox directory, /tmp a tmpfs, network none, the sandbox user 65534 with no
# capabilities, runsc --platform=$PLATFORM --network=none --ignore-cgroups):
#   template  `runsc create` + `start` of python3 that imports pandas, then waits; timed to
#             its ready mark; `runsc checkpoint --image-path` of it (timed, image size)
#   cold      `runsc run` of python3 -c "import pandas" (the yardstick, interleaved)
#   restore   `runsc restore --image-path --detach` into a new bundle whose /workspace is a new
#             directory, then one `runsc exec` that checks the restored sandbox: its python with
#             pandas is there, /workspace is this sandbox's own (timed: restore + exec)
#   isolation two sandboxes restored from the one image at once, each writes in /workspace: each
#             sees only its own file, the other's is not there, their ids and processes differ
# The sentry's own timings of one restore ("Memory load took") come from its debug log.
# Usage: bench/kernel-restore.sh; N (default 3) rounds, PLATFORM (default ptrace).
set -u
N=${N:-3} PLATFORM=${PLATFORM:-ptrace}
[ "$(id -u)" = 0 ] || { echo "run as root (runsc)"; exit 2; }
command -v runsc >/dev/null || { echo "runsc is not installed"; exit 2; }
tmp=$(mktemp -d /tmp/hull-bench-restore.XXXXXX)
R=(runsc --root "$tmp/state" --network=none --platform="$PLATFORM" --ignore-cgroups)
cleanup() {
        for id in $(timeout 20 "${R[@]}" list -q 2>/dev/null); do
                timeout 20 "${R[@]}" kill "$id" KILL >/dev/null 2>&1
                timeout 20 "${R[@]}" delete --force "$id" >/dev/null 2>&1
        done
        rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/state"
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
# bundle NAME ARGS...: $tmp/NAME/config.json with its own workspace $tmp/NAME/ws
bundle() {
        local name=$1
        shift
        mkdir -p "$tmp/$name/ws"
        chown 65534:65534 "$tmp/$name/ws"
        (cd "$tmp/$name" && runsc spec -- "$@")
        python3 - "$tmp/$name" <<'EOF'
import json, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json"))
c["root"] = {"path": "/", "readonly": True}
p = c["process"]
p["terminal"] = False
p["user"] = {"uid": 65534, "gid": 65534}
p["cwd"] = "/workspace"
p["env"] = ["PATH=/usr/bin:/bin", "HOME=/workspace", "OPENBLAS_NUM_THREADS=1"]
p["capabilities"] = {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
p["noNewPrivileges"] = True
c["mounts"] += [{"destination": "/workspace", "type": "bind", "source": d + "/ws", "options": ["rbind", "rw"]},
                {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["size=64m"]}]
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"] + [{"type": "network"}]
json.dump(c, open(d + "/config.json", "w"))
EOF
}
echo "# $(runsc --version | head -1), platform $PLATFORM; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

bundle tmpl /usr/bin/python3 -c "import time, numpy, pandas; open('/workspace/ready', 'w').close(); time.sleep(1e6)"
t=$(now)
timeout 60 "${R[@]}" create --bundle "$tmp/tmpl" tmpl </dev/null >/dev/null 2>"$tmp/tmpl.err" &&
        timeout 20 "${R[@]}" start tmpl || { echo "template: runsc failed"; tail -3 "$tmp/tmpl.err"; exit 1; }
for _ in $(seq 1 1200); do [ -e "$tmp/tmpl/ws/ready" ] && break; sleep 0.05; done
[ -e "$tmp/tmpl/ws/ready" ] || { echo "template: pandas did not import"; exit 1; }
echo "template: start + import pandas in the sandbox: $(since "$t") s"
t=$(now)
timeout 120 "${R[@]}" checkpoint --image-path "$tmp/img" tmpl || { echo "checkpoint failed"; exit 1; }
echo "template: checkpoint: $(since "$t") s, image $(du -sm "$tmp/img" | cut -f1) MiB"
timeout 20 "${R[@]}" delete --force tmpl >/dev/null 2>&1

bundle cold /usr/bin/python3 -c "import numpy, pandas"
# restore ID: into the bundle ID (made by `bundle`, its own workspace)
restore() {
        local id=$1
        timeout 60 "${R[@]}" restore --image-path "$tmp/img" --bundle "$tmp/$id" --detach "$id" </dev/null \
                >/dev/null 2>"$tmp/$id.err" || { echo "restore $id failed: $(tail -1 "$tmp/$id.err")"; return 1; }
}
check() { # ID: the restored python with pandas is pid 1, /workspace holds only ID's file
        timeout 30 "${R[@]}" exec --user 65534:65534 "$1" /usr/bin/python3 -S -c "
import os, sys
ws = sorted(os.listdir('/workspace'))
cmd = open('/proc/1/cmdline').read()
ok = ws == ['own-$1'] and 'pandas' in cmd
print('ok' if ok else 'BAD %r %r' % (ws, cmd)); sys.exit(0 if ok else 1)"
}
end() {
        timeout 20 "${R[@]}" kill "$1" KILL >/dev/null 2>&1
        timeout 20 "${R[@]}" delete --force "$1" >/dev/null 2>&1
}
cold=() rest=() exe=()
for i in $(seq 1 "$N"); do # interleaved
        t=$(now)
        timeout 120 "${R[@]}" run --bundle "$tmp/cold" "cold$i" </dev/null >/dev/null 2>&1 || echo "cold run $i failed"
        cold+=("$(since "$t")")
        bundle "r$i" /usr/bin/python3 -c "import time, numpy, pandas; open('/workspace/ready', 'w').close(); time.sleep(1e6)"
        echo "r$i" >"$tmp/r$i/ws/own-r$i"
        t=$(now)
        restore "r$i"
        rest+=("$(since "$t")")
        t=$(now)
        [ "$(check "r$i")" = ok ] || echo "restore $i: the restored sandbox is not as expected"
        exe+=("$(since "$t")")
        end "r$i"
        echo "round $i: cold import ${cold[-1]} s, restore ${rest[-1]} s, then a python3 -S exec ${exe[-1]} s (load $(cut -d' ' -f1 /proc/loadavg))"
done
python3 - "${cold[*]}" "${rest[*]}" "${exe[*]}" <<'EOF'
import statistics, sys
c, r, x = ([float(v) for v in a.split()] for a in sys.argv[1:4])
m = statistics.median
print("cold import pandas under runsc run: median %.2f s (%s)" % (m(c), " ".join("%.2f" % v for v in c)))
print("runsc restore (detached, running): median %.2f s (%s)" % (m(r), " ".join("%.2f" % v for v in r)))
print("then one runsc exec of python3 -S: median %.2f s" % m(x))
print("ratio restore / cold: %.2fx, (restore + exec) / cold: %.2fx (the session target: <= 0.3x)" %
      (m(r) / m(c), (m(r) + m(x)) / m(c)))
EOF

# isolation: two restores of the one image at once
for id in iso1 iso2; do
        bundle $id /usr/bin/python3 -c "import time, numpy, pandas; open('/workspace/ready', 'w').close(); time.sleep(1e6)"
        echo $id >"$tmp/$id/ws/own-$id"
done
restore iso1 & restore iso2 & wait
a=$(check iso1) b=$(check iso2)
timeout 30 "${R[@]}" exec --user 65534:65534 iso1 /bin/sh -c 'echo secret > /workspace/mine' || true
seen=$(timeout 30 "${R[@]}" exec --user 65534:65534 iso2 /bin/sh -c 'cat /workspace/mine 2>/dev/null; echo end')
p1=$(timeout 20 "${R[@]}" state iso1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
p2=$(timeout 20 "${R[@]}" state iso2 | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
echo "isolation: iso1 $a, iso2 $b, iso2 sees iso1's new file: $([ "$seen" = end ] && echo no || echo YES), sandbox pids $p1 $p2"
end iso1
end iso2

# the sentry's own account of one restore
bundle dbg /usr/bin/python3 -c "import time, numpy, pandas; open('/workspace/ready', 'w').close(); time.sleep(1e6)"
mkdir -p "$tmp/dbglog"
timeout 60 "${R[@]}" --debug --debug-log="$tmp/dbglog/" restore --image-path "$tmp/img" --bundle "$tmp/dbg" --detach dbg \
        </dev/null >/dev/null 2>&1
grep -h -o -E "(CPUID|Kernel|Memory|Overall) load took \[[^]]*\]" "$tmp"/dbglog/*boot* | head -4 | sed 's/^/sentry: /'
end dbg
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
