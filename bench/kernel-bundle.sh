# kernel-bundle.sh (sourced by kernel-tier.sh and kernel-tier-phases.sh): kernel_bundle HULL DIR NAME
# makes DIR/bundle, the yardstick's bundle: hull's own, caught while a `hull exec --tier kernel`
# sleeps (its temporary files in DIR/tmp), with /bin/true as its process and a copy of its root.
# NAME: the calling script's name, for its errors.
kernel_bundle() {
        local hull=$1 d=$2 name=$3 b= hull_pid
        mkdir -p "$d/tmp" "$d/state" "$d/bundle"
        TMPDIR="$d/tmp" "$hull" exec --tier kernel --no-cgroup --timeout 60 -- /bin/sleep 8 >/dev/null &
        hull_pid=$!
        for _ in $(seq 100); do
                b=$(ls -d "$d"/tmp/hull-oci.* 2>/dev/null | head -n 1 || true) # none yet: ls fails (pipefail)
                [ -n "$b" ] && [ -s "$b/config.json" ] && break
                sleep 0.1
        done
        [ -n "$b" ] || { echo "$name: no bundle appeared" >&2; return 1; }
        # hull's root: the shared skeleton config.json names (below /run/hull-kernel), copied
        cp -a "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["root"]["path"])' "$b/config.json")" \
                "$d/bundle/rootfs"
        /usr/bin/python3 - "$b/config.json" "$d/bundle/config.json" "$d/bundle/rootfs" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["process"]["args"] = ["/bin/true"]
c["root"]["path"] = sys.argv[3]
json.dump(c, open(sys.argv[2], "w"))
PY
        wait "$hull_pid" || true
}
