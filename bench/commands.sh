# bench/commands.sh: the reference launchers of the start-up benchmark, sourced by bench/run.sh
# and bench/profile.sh (from the top of the tree, with $BUILD set and $BUILD/seccomp-bpf built).
# Defines BWRAP (argv), BWRAP_FDS (the driver's --fd options BWRAP needs), UNSHARE (argv), and a
# scratch directory $D removed on exit.
#
# bwrap gets the isolation hull's container tier sets up by default (hull exec without
# --workdir/--rootfs, as of this writing): user, pid, mount, net, ipc, uts and cgroup
# namespaces; a tmpfs root with the host's /usr read-only and the /bin-style links; the same
# /etc subset (ld.so.cache, alternatives, localtime, ssl/certs, ssl/openssl.cnf bound read-only,
# and passwd, group, hosts and nsswitch.conf written into the root: bwrap's --file copies them
# from an fd into its tmpfs, as hull writes them); /proc; /dev with devpts and a 64M /dev/shm
# tmpfs; a 64M /tmp tmpfs; a tmpfs /workspace (512M, hull's default memory limit) as the working
# directory; a read-only root; hostname "hull"; uid/gid 1000; a new session; no capabilities;
# and hull's own seccomp program (written by bench/seccomp-bpf.c from sbx_seccomp_filter, the one
# program hull installs).
# What bwrap does not do: cgroups (compare with `hull exec --no-cgroup`) and hull's output
# capture (bwrap's payload writes straight to the inherited fds).

D=$(mktemp -d "${TMPDIR:-/tmp}/hull-bench.XXXXXX")
trap 'rm -rf "$D"' EXIT
mkdir "$D/etc"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:1000:1000:hull sandbox:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$D/etc/passwd"
printf 'root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n' >"$D/etc/group"
printf '127.0.0.1\tlocalhost hull\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$D/etc/hosts"
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' >"$D/etc/nsswitch.conf"
"$BUILD/seccomp-bpf" "$D/seccomp.bpf" 2>/dev/null

root_links=()
for l in bin sbin lib lib32 lib64 libx32; do
        if [ -L "/$l" ]; then root_links+=(--symlink "$(readlink "/$l")" "/$l"); fi
done
etc_binds=()
for f in ld.so.cache alternatives ssl/certs ssl/openssl.cnf; do
        if [ -e "/etc/$f" ]; then etc_binds+=(--ro-bind "/etc/$f" "/etc/$f"); fi
done
if [ -L /etc/localtime ]; then etc_binds+=(--symlink "$(readlink /etc/localtime)" /etc/localtime); fi

# The driver opens each file afresh on these fds for every spawn (bwrap reads them to the end).
BWRAP_FDS=(--fd=10:"$D/etc/passwd" --fd=11:"$D/etc/group" --fd=12:"$D/etc/hosts"
        --fd=13:"$D/etc/nsswitch.conf" --fd=14:"$D/seccomp.bpf")
BWRAP=(bwrap --unshare-all --die-with-parent --new-session --uid 1000 --gid 1000 --hostname hull
        --ro-bind /usr /usr "${root_links[@]}" "${etc_binds[@]}"
        --file 10 /etc/passwd --file 11 /etc/group --file 12 /etc/hosts --file 13 /etc/nsswitch.conf
        --proc /proc --dev /dev --size 67108864 --tmpfs /dev/shm --size 67108864 --tmpfs /tmp
        --size 536870912 --tmpfs /workspace --chdir /workspace --remount-ro /
        --cap-drop ALL --seccomp 14)
UNSHARE=(unshare --user --map-root-user --pid --fork --mount --net --ipc --uts --cgroup)
