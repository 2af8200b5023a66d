# test-env-pip.sh: a pip environment end to end, without PyPI: the test makes a pure-Python wheel
# by hand and serves it from a PEP 503 simple index in a network namespace of its own (through a
# veth pair, never loopback: the limited proxy refuses loopback and never pins it); hull's HOME
# pip.conf names that index. `hull env build` installs the wheel in the container sandbox through
# the limited proxy (its log shows the index's address), `hull env check` imports it, `hull exec
# --env` imports it from /env/pip, a second build reuses the layer, a package the index lacks
# fails with a clear error and leaves no layer.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
export HULL_HOME=$TEST_TMP/hullhome
mkdir -m 0711 "$HULL_HOME"
chmod 0711 "$TEST_TMP"
cd "$TEST_TMP" || exit 1
LAYERS=$HULL_HOME/layers

if ! "$PY" -m pip --version >/dev/null 2>&1; then
        skip "pip environments" "Debian's python3-pip is not installed (scripts/install-deps.sh installs it)"
        exit 0
fi
NS=hull-pip-$$
VA=hpip$$a
VB=hpip$$b
# the index's /30, of this run's own (test_net30): another copy of the suite may run at once
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! read -r NETA NETB < <(test_net30) ||
        ! ip netns add "$NS" 2>/dev/null; then
        skip "pip environments" "needs root and ip netns for the index's network namespace"
        exit 0
fi
cleanup_ns() {
        ip netns pids "$NS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
        ip netns del "$NS" 2>/dev/null
        ip link del "$VA" 2>/dev/null
}
trap 'lib_cleanup; cleanup_ns' EXIT
if ! { ip link add "$VA" type veth peer name "$VB" && ip link set "$VB" netns "$NS" &&
        ip addr add "$NETA/30" dev "$VA" && ip link set "$VA" up &&
        ip netns exec "$NS" ip addr add "$NETB/30" dev "$VB" &&
        ip netns exec "$NS" ip link set "$VB" up && ip netns exec "$NS" ip link set lo up; }; then
        fail "pip environments: the index's veth pair" "ip link add/addr failed"
        exit 0
fi

# ---- a wheel made by hand, and a PEP 503 simple index of it ----
mkdir -p "$TEST_TMP/index/simple/hullpipdemo"
VALUE=hull-pip-$$-$RANDOM
"$PY" - "$TEST_TMP/index" "$VALUE" <<'EOF' || fail "pip environments: the test's wheel" "python failed"
import base64, hashlib, os, sys, zipfile
root, value = sys.argv[1], sys.argv[2]
name, ver = "hullpipdemo", "1.0"
dist = f"{name}-{ver}.dist-info"
files = {
    f"{name}/__init__.py": f"VALUE = {value!r}\n",
    f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\nSummary: hull's pip test\n",
    f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: hull-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    f"{dist}/top_level.txt": f"{name}\n",
}
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join(f"{p},{digest(d.encode())},{len(d.encode())}\n" for p, d in files.items())
record += f"{dist}/RECORD,,\n"
whl = f"{name}-{ver}-py3-none-any.whl"
path = os.path.join(root, "simple", name, whl)
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
    for p, d in files.items():
        z.writestr(p, d)
    z.writestr(f"{dist}/RECORD", record)
sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
with open(os.path.join(root, "simple", name, "index.html"), "w") as f:
    f.write(f'<!DOCTYPE html>\n<html><body><a href="{whl}#sha256={sha}">{whl}</a></body></html>\n')
with open(os.path.join(root, "simple", "index.html"), "w") as f:
    f.write(f'<!DOCTYPE html>\n<html><body><a href="{name}/">{name}</a></body></html>\n')
EOF

# The index, inside the namespace, on a port of its own choosing.
ip netns exec "$NS" "$PY" -c '
import http.server, os, sys
os.chdir(sys.argv[1])
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        sys.stderr.write("%s %s\n" % (self.command, self.path)); sys.stderr.flush()
s = http.server.ThreadingHTTPServer((sys.argv[2], 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' "$TEST_TMP/index" "$NETB" >"$TEST_TMP/index.port" 2>"$TEST_TMP/index.log" &
pids+=($!)
wait_for_file "$TEST_TMP/index.port" "${pids[-1]}"
PORT=$(head -1 "$TEST_TMP/index.port")
if [ -z "$PORT" ] || ! curl -s --noproxy '*' --max-time 10 "http://$NETB:$PORT/simple/hullpipdemo/" | grep -q 'sha256='; then
        fail "pip environments: the test's index answers from its namespace" "port='$PORT' $(cat "$TEST_TMP/index.log")"
        exit 0
fi
pass "the test's simple index answers from its network namespace"

# hull's HOME: its pip.conf names the index (and trusts it: plain http).
export HOME=$TEST_TMP/home
mkdir -p "$HOME/.config/pip"
printf '[global]\nindex-url = http://%s:%s/simple\ntrusted-host = %s\n' "$NETB" "$PORT" "$NETB" \
        >"$HOME/.config/pip/pip.conf"
unset PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_CONFIG_FILE 2>/dev/null

# ---- create, build, check, exec ----
"$HULL" env create pyenv --pip hullpipdemo==1.0 >"$TEST_TMP/o" 2>"$TEST_TMP/e"
if grep -q "^pyenv version 1 layer" "$TEST_TMP/o"; then pass "env create with a pip package"; else fail "env create --pip" "$(cat "$TEST_TMP/o" "$TEST_TMP/e")"; fi
DIGEST=$("$HULL" env show pyenv | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
SEEN=$(wc -l <"$TEST_TMP/index.log")
if timeout 900 "$HULL" env build pyenv >"$TEST_TMP/o" 2>"$TEST_TMP/e" &&
        grep -q "^ok pip hullpipdemo$" "$TEST_TMP/o" && [ -r "$LAYERS/$DIGEST/pip/hullpipdemo/__init__.py" ]; then
        pass "env build installs the wheel from the configured index and checks it"
else
        fail "env build --pip" "$(cat "$TEST_TMP/o" "$TEST_TMP/e" | tail -20)"
fi
if grep -q "net allowed HTTP $NETB:$PORT " "$LAYERS/$DIGEST/meta/net.log" 2>/dev/null &&
        ! grep -q "net refused" "$LAYERS/$DIGEST/meta/net.log"; then
        pass "the build fetched from the index through the limited proxy (its net.log names the index)"
else
        fail "pip build through the proxy" "$(cat "$LAYERS/$DIGEST/meta/net.log" 2>&1 | tail -10)"
fi
tail -n +$((SEEN + 1)) "$TEST_TMP/index.log" >"$TEST_TMP/build.gets"
if grep -q "^GET /simple/hullpipdemo/$" "$TEST_TMP/build.gets" &&
        grep -q "^GET /simple/hullpipdemo/hullpipdemo-1.0-py3-none-any.whl$" "$TEST_TMP/build.gets"; then
        pass "the index served the project page and the wheel"
else
        fail "index requests" "$(cat "$TEST_TMP/build.gets")"
fi
if ! ls -d "$LAYERS"/.build-* >/dev/null 2>&1; then pass "no build directory is left"; else fail "build dirs" "$(ls -a "$LAYERS")"; fi
"$HULL" env check pyenv >"$TEST_TMP/o" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "^ok pip hullpipdemo$" "$TEST_TMP/o" && grep -q "every package is there" "$TEST_TMP/o"; then
        pass "env check imports the pip package"
else
        fail "env check --pip" "rc=$rc $(cat "$TEST_TMP/o")"
fi
out=$("$HULL" exec --env pyenv -- python3 -c 'import hullpipdemo; print(hullpipdemo.VALUE)' 2>&1)
if [ "$out" = "$VALUE" ]; then pass "hull exec --env imports the package from the layer"; else fail "exec --env pyenv" "$out"; fi
out=$("$HULL" exec -- python3 -c 'import hullpipdemo' 2>&1)
case $out in *ModuleNotFoundError*) pass "without --env the package is not there" ;; *) fail "exec without env" "$out" ;; esac

# ---- a second build reuses the layer ----
STAMP=$(stat -c %Y.%i "$LAYERS/$DIGEST/meta/spec.json" 2>/dev/null)
GETS=$(grep -c "GET " "$TEST_TMP/index.log")
if "$HULL" env build pyenv >"$TEST_TMP/o" 2>"$TEST_TMP/e" && [ -n "$STAMP" ] &&
        [ "$(stat -c %Y.%i "$LAYERS/$DIGEST/meta/spec.json")" = "$STAMP" ] &&
        [ "$(grep -c "GET " "$TEST_TMP/index.log")" = "$GETS" ]; then
        pass "a second build reuses the layer (the index is not asked again)"
else
        fail "second build" "$(cat "$TEST_TMP/o" "$TEST_TMP/e" | tail -5)"
fi

# ---- a package the index does not have: a clear error, no layer ----
"$HULL" env create nopkg --pip nosuchpkg >/dev/null 2>&1
NDIGEST=$("$HULL" env show nopkg | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
timeout 900 "$HULL" env build nopkg >"$TEST_TMP/o" 2>"$TEST_TMP/e"
rc=$?
if [ $rc != 0 ] && grep -q "pip install failed" "$TEST_TMP/e" && grep -q "No matching distribution found for nosuchpkg" "$TEST_TMP/e" &&
        grep -q "^GET /simple/nosuchpkg/$" "$TEST_TMP/index.log" &&
        [ -n "$NDIGEST" ] && [ ! -e "$LAYERS/$NDIGEST" ] && ! ls -d "$LAYERS"/.build-* >/dev/null 2>&1; then
        pass "a package the index lacks fails clearly and leaves no layer"
else
        fail "missing pip package" "rc=$rc digest=$NDIGEST $(tail -c 800 "$TEST_TMP/e") $(ls -a "$LAYERS")"
fi
