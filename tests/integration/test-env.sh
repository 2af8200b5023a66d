# test-env.sh: environments and layers (issue 13): a layer from a real Debian package the host
# lacks and a real npm package, built by `hull env build` and checked; used by hull exec and by
# an agent session (hull run --env against hull mock-model: the bash tool runs the program, the
# javascript cell require()s the package); a second session reuses the layer (no rebuild); a spec
# change builds a new layer; two builds of one spec at once make one layer; a package that does not
# exist gives a clear error and no layer; gc and rm remove layers no environment names; bad specs
# are refused naming the field. Reaches only Debian's apt mirror and the npm registry.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
chmod 0711 "$TEST_TMP"
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER 2>/dev/null
cd "$TEST_TMP" || exit 1
LAYERS=$HULL_HOME/layers

# ---- bad specs: refused before anything is stored, naming the field ----
"$HULL" env create bad1 --apt=-o >"$TEST_TMP/o" 2>"$TEST_TMP/e"
rc=$?
if [ $rc = 2 ] && grep -q "packages.apt\[0\]" "$TEST_TMP/e"; then pass "a package starting with '-' is refused naming the field"; else fail "bad apt package refused" "rc=$rc $(cat "$TEST_TMP/e")"; fi
echo '{"packages": {"npm": ["is-number@7.0.0"]}, "networking": {"type": "none", "allowed_hosts": ["a.com"]}}' >"$TEST_TMP/bad.json"
"$HULL" env create bad2 --file "$TEST_TMP/bad.json" >"$TEST_TMP/o" 2>"$TEST_TMP/e"
rc=$?
if [ $rc = 1 ] && grep -q "limited networking only" "$TEST_TMP/e"; then pass "allowed_hosts without limited networking is refused"; else fail "bad networking refused" "rc=$rc $(cat "$TEST_TMP/e")"; fi
"$HULL" env list >"$TEST_TMP/o" 2>&1
if [ ! -s "$TEST_TMP/o" ]; then pass "nothing was stored for refused specs"; else fail "nothing stored" "$(cat "$TEST_TMP/o")"; fi

# ---- what this host can build from ----
APT_PKG=
if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
        for p in jq hello tree; do
                if ! dpkg -s "$p" >/dev/null 2>&1 && apt-cache show "$p" >/dev/null 2>&1; then
                        APT_PKG=$p
                        break
                fi
        done
fi
HAVE_NPM=
command -v npm >/dev/null && command -v node >/dev/null && HAVE_NPM=1
if [ -z "$APT_PKG" ] || [ -z "$HAVE_NPM" ]; then
        skip "environments with packages" "needs apt-get with package lists holding one of jq, hello, tree not installed here, and npm (apt: '$APT_PKG', npm: '$HAVE_NPM')"
        exit 0
fi
case $APT_PKG in
hello) PROBE="hello" ;;
*) PROBE="$APT_PKG --version" ;;
esac

# ---- create, show, build, check ----
"$HULL" env create demo --apt "$APT_PKG" --npm is-number@7.0.0 >"$TEST_TMP/o" 2>"$TEST_TMP/e"
if grep -q "^demo version 1 layer" "$TEST_TMP/o"; then pass "env create stores version 1"; else fail "env create" "$(cat "$TEST_TMP/o" "$TEST_TMP/e")"; fi
"$HULL" env create demo --npm is-number@7.0.0 --apt "$APT_PKG" >"$TEST_TMP/o" 2>&1
if grep -q "^demo version 1 " "$TEST_TMP/o"; then pass "the same spec again is no new version"; else fail "same spec" "$(cat "$TEST_TMP/o")"; fi
DIGEST=$("$HULL" env show demo | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
if timeout 900 "$HULL" env build demo >"$TEST_TMP/o" 2>"$TEST_TMP/e" &&
        grep -q "^ok apt $APT_PKG" "$TEST_TMP/o" && grep -q "^ok npm is-number@7.0.0\|^ok npm is-number" "$TEST_TMP/o" &&
        [ -d "$LAYERS/$DIGEST/root" ] && [ -d "$LAYERS/$DIGEST/npm/node_modules/is-number" ]; then
        pass "env build makes the layer from a Debian package and an npm package, and checks it"
else
        fail "env build" "$(cat "$TEST_TMP/o" "$TEST_TMP/e" | tail -20)"
fi
if ! ls -d "$LAYERS"/.build-* >/dev/null 2>&1; then pass "no build directory is left"; else fail "build dirs" "$(ls -a "$LAYERS")"; fi
STAMP=$(stat -c %Y.%i "$LAYERS/$DIGEST/meta/spec.json" 2>/dev/null)
"$HULL" env check demo >"$TEST_TMP/o" 2>&1
if [ $? = 0 ] && grep -q "every package is there" "$TEST_TMP/o"; then pass "env check passes"; else fail "env check" "$(cat "$TEST_TMP/o")"; fi

# ---- hull exec --env ----
out=$("$HULL" exec --env demo -- sh -c "$PROBE >/dev/null && echo probe-ok; node -e 'console.log(require(\"is-number\")(7))'" 2>&1)
if [ "$out" = "probe-ok
true" ]; then pass "hull exec --env runs the package's program and requires the npm package"; else fail "exec --env" "$out"; fi
out=$("$HULL" exec -- sh -c "command -v $APT_PKG || echo absent" 2>&1)
if [ "$out" = absent ]; then pass "without --env the program is not there"; else fail "exec without env" "$out"; fi
out=$("$HULL" exec --env demo -- sh -c 'touch /env/x 2>&1; echo rc=$?' 2>&1)
case $out in *rc=1*) pass "the layer is read-only in the sandbox" ;; *) fail "layer read-only" "$out" ;; esac

# ---- an agent session with the environment (hull run --env) ----
SCRIPT='{"steps":[
 {"tool_calls":[{"name":"bash","input":{"command":"'"$PROBE"' >/dev/null && echo probe-ok"}}]},
 {"tool_calls":[{"name":"bash","input":{"command":"node -e \"console.log(\\\"isnum\\\", require(\\\"is-number\\\")(42))\""}}]},
 {"text":["done: ","{{last_tool_result|line:1}}"]}]}'
session_run() {
        : >"$TEST_TMP/requests.jsonl"
        mock_start "$SCRIPT" --record "$TEST_TMP/requests.jsonl" --log-level error || return 1
        HULL_PROVIDER=anthropic HULL_BASE_URL=$MURL HULL_API_KEY=test-key HULL_MODEL=mock-model \
                timeout 300 "$HULL" run --env demo --json "use the tools" >"$TEST_TMP/o" 2>"$TEST_TMP/e" </dev/null
        local rc=$?
        mock_stop
        return $rc
}
if session_run && grep -q "probe-ok" "$TEST_TMP/requests.jsonl" && grep -q "isnum true" "$TEST_TMP/requests.jsonl"; then
        pass "a session of the environment runs the program and requires the npm package (bash tool calls)"
else
        fail "session with env" "$(tail -c 600 "$TEST_TMP/o") $(tail -c 600 "$TEST_TMP/e")"
fi
if session_run && ! grep -q "building the layer" "$TEST_TMP/e" &&
        [ "$(stat -c %Y.%i "$LAYERS/$DIGEST/meta/spec.json")" = "$STAMP" ]; then
        pass "a second session reuses the layer (no rebuild)"
else
        fail "second session" "$(tail -c 600 "$TEST_TMP/e")"
fi

# ---- an environment's limited networking in a session: its calls go through the proxy ----
"$HULL" env create limitednet --net limited --allow-host example.invalid >/dev/null 2>&1
SCRIPT='{"steps":[
 {"tool_calls":[{"name":"bash","input":{"command":"echo proxy=$HTTPS_PROXY"}}]},
 {"text":["done: ","{{last_tool_result|line:1}}"]}]}'
: >"$TEST_TMP/requests.jsonl"
if mock_start "$SCRIPT" --record "$TEST_TMP/requests.jsonl" --log-level error; then
        HULL_PROVIDER=anthropic HULL_BASE_URL=$MURL HULL_API_KEY=test-key HULL_MODEL=mock-model \
                timeout 300 "$HULL" run --env limitednet --json "use the tools" >"$TEST_TMP/o" 2>"$TEST_TMP/e" </dev/null
        mock_stop
fi
if grep -q "proxy=http://127.0.0.1:" "$TEST_TMP/requests.jsonl"; then
        pass "a session of an environment with limited networking gets the proxy"
else
        fail "limited env session" "$(tail -c 600 "$TEST_TMP/o") $(tail -c 600 "$TEST_TMP/e")"
fi
"$HULL" env rm limitednet >/dev/null 2>&1

# ---- a spec change builds a new layer; gc removes the old one ----
"$HULL" env create demo --apt "$APT_PKG" --npm is-number@7.0.0 --npm left-pad@1.3.0 >"$TEST_TMP/o" 2>&1
DIGEST2=$("$HULL" env show demo | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
if grep -q "^demo version 2" "$TEST_TMP/o" && [ "$DIGEST2" != "$DIGEST" ] &&
        timeout 900 "$HULL" env build demo >"$TEST_TMP/o" 2>&1 && [ -d "$LAYERS/$DIGEST2/npm/node_modules/left-pad" ]; then
        pass "a spec change is version 2 and builds a new layer"
else
        fail "spec change" "$(tail -20 "$TEST_TMP/o")"
fi
"$HULL" env gc >"$TEST_TMP/o" 2>&1
if [ ! -e "$LAYERS/$DIGEST" ] && [ -d "$LAYERS/$DIGEST2" ] && grep -q "^1 layer removed" "$TEST_TMP/o"; then
        pass "gc removes the layer no environment names and keeps the named one"
else
        fail "gc" "$(cat "$TEST_TMP/o"; ls "$LAYERS")"
fi

# ---- two builds of one spec at once make one layer ----
"$HULL" env create twin-a --npm is-number@7.0.0 >/dev/null 2>&1
"$HULL" env create twin-b --npm is-number@7.0.0 >/dev/null 2>&1
timeout 600 "$HULL" env build twin-a --no-check >"$TEST_TMP/a" 2>&1 &
pa=$!
timeout 600 "$HULL" env build twin-b --no-check >"$TEST_TMP/b" 2>&1 &
pb=$!
wait $pa
ra=$?
wait $pb
rb=$?
n=$(ls "$LAYERS" | grep -c '^[0-9a-f]\{64\}$')
if [ $ra = 0 ] && [ $rb = 0 ] && [ "$n" = 2 ] && cat "$TEST_TMP/a" "$TEST_TMP/b" | grep -q "already built" &&
        ! ls -d "$LAYERS"/.build-* >/dev/null 2>&1; then
        pass "two builds of one spec at once make one layer"
else
        fail "concurrent builds" "ra=$ra rb=$rb n=$n $(cat "$TEST_TMP/a" "$TEST_TMP/b")"
fi

# ---- a package that does not exist: a clear error and no layer ----
before=$(ls -a "$LAYERS" | grep -v '^\.lock-' | sort)
"$HULL" env create broken --apt hull-no-such-package-x1 >/dev/null 2>&1
timeout 600 "$HULL" env build broken >"$TEST_TMP/o" 2>"$TEST_TMP/e"
rc=$?
after=$(ls -a "$LAYERS" | grep -v '^\.lock-' | sort)
if [ $rc = 1 ] && grep -q "hull: env: apt: apt-get could not resolve" "$TEST_TMP/e" &&
        grep -q "hull-no-such-package-x1" "$TEST_TMP/e" && [ "$before" = "$after" ]; then
        pass "an apt package that does not exist: a clear error, no layer"
else
        fail "missing apt package" "rc=$rc $(cat "$TEST_TMP/e") | $before | $after"
fi
"$HULL" env create broken2 --npm hull-no-such-package-x1@1.0.0 >/dev/null 2>&1
timeout 600 "$HULL" env build broken2 >"$TEST_TMP/o" 2>"$TEST_TMP/e"
rc=$?
after=$(ls -a "$LAYERS" | grep -v '^\.lock-' | sort)
if [ $rc = 1 ] && grep -q "hull: env: npm: npm install failed" "$TEST_TMP/e" && [ "$before" = "$after" ]; then
        pass "an npm package that does not exist: a clear error, no layer"
else
        fail "missing npm package" "rc=$rc $(tail -5 "$TEST_TMP/e")"
fi
"$HULL" exec --env broken -- true >"$TEST_TMP/o" 2>"$TEST_TMP/e"
rc=$?
if [ $rc = 125 ] && grep -q "apt-get could not resolve" "$TEST_TMP/e"; then pass "hull exec --env with a failing build says why and runs nothing"; else fail "exec broken env" "rc=$rc $(cat "$TEST_TMP/e")"; fi

# ---- rm: the environment and the layers no one names go ----
"$HULL" env rm demo >"$TEST_TMP/o" 2>&1
if [ ! -e "$LAYERS/$DIGEST2" ] && ! "$HULL" env show demo >/dev/null 2>&1; then pass "env rm deletes every version and its layer"; else fail "env rm" "$(cat "$TEST_TMP/o"; ls "$LAYERS")"; fi
"$HULL" exec --env demo -- true >/dev/null 2>"$TEST_TMP/e"
if grep -q "no environment demo" "$TEST_TMP/e"; then pass "a removed environment is named as missing"; else fail "missing env" "$(cat "$TEST_TMP/e")"; fi
