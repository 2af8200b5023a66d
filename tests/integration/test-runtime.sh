# test-runtime.sh: the interpreter side of hull's sessions (runtime/). runtime_harness.py starts
# each cell driver exactly as the host will (fd 3 a stream socket, 1 and 2 pipes, 0 /dev/null)
# and checks the frame protocol, the REPL behaviour, errors, large outputs and fd 3's isolation;
# then, as root, the zygote against an unshare(1) session: credentials, capabilities, seccomp,
# namespaces, bad requests, and the end of the session; then the module hull (runtime/hull.py) in
# a driver and as the script runner, against a handle store built by hand (load and save of every
# kind, a 1,000,000-row DataFrame round trip, ids, emit, publish, scripts). Each process started
# shows its name in ps (hull-python, hull-node, hull-zygote) and no source on its command line.
# Also: the sources embedded in the build.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
here="$(cd "$(dirname "$0")" && pwd)"
RT="$(cd "$here/../../runtime" && pwd)"
H="$here/runtime_harness.py"

for f in cell.py cell.js zygote.py hull.py boot.py boot.js; do
        check "runtime/$f has no NUL byte" "$PY" -c 'import sys; sys.exit(b"\0" in open(sys.argv[1], "rb").read())' "$RT/$f"
done
check "runtime/cell.py, zygote.py, hull.py and boot.py compile with Debian's python3" \
        "$PY" -c 'import sys; [compile(open(f).read(), f, "exec") for f in sys.argv[1:]]' "$RT/cell.py" "$RT/zygote.py" \
        "$RT/hull.py" "$RT/boot.py"
# The bootstraps are the command lines (the sources travel on fd 0): short, a comment and one line.
check "runtime/boot.py and boot.js are two lines of at most 512 bytes" \
        "$PY" -c 'import sys; sys.exit(any(len(open(f, "rb").read()) > 512 or len(open(f).read().splitlines()) != 2 for f in sys.argv[1:]))' \
        "$RT/boot.py" "$RT/boot.js"
check "runtime/cell.js and boot.js compile with node" sh -c "/usr/bin/node --check '$RT/cell.js' && /usr/bin/node --check '$RT/boot.js'"

# The embedded copies in the build are the sources, byte for byte.
if [ -f "$BUILD/runtime-embed.c" ]; then
        out=$("$PY" - "$BUILD/runtime-embed.c" "$RT" <<'PYEOF'
import re, sys
c = open(sys.argv[1]).read()
for name in ("cell.py", "cell.js", "zygote.py", "hull.py", "boot.py", "boot.js"):
    sym = "hull_runtime_" + name.replace(".", "_")
    m = re.search(r"const char %s\[\] = \{(.*?)\};" % sym, c, re.S)
    n = re.search(r"const size_t %s_len = (\d+);" % sym, c)
    data = bytes(int(x) for x in m.group(1).replace(",", " ").split()) if m else b""
    src = open(sys.argv[2] + "/" + name, "rb").read()
    ok = m and n and data == src + b"\0" and int(n.group(1)) == len(src)
    print("%s - the build embeds runtime/%s%s" % ("ok" if ok else "not ok", name, "" if ok else ": differs (rebuild?)"))
PYEOF
)
        printf '%s\n' "$out"
else
        skip "the build embeds the runtime sources" "no $BUILD/runtime-embed.c"
fi

timeout 120 "$PY" "$H" drivers "$RT"; rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "the driver harness" "exited with status $rc"
timeout 180 "$PY" "$H" zygote "$RT"; rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "the zygote harness" "exited with status $rc"
timeout 300 "$PY" "$H" hull "$RT"; rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "the hull module harness" "exited with status $rc"
exit 0
