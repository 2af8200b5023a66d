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
# The build ran in a sandbox whose network is the limited proxy: its log names the registries.
NPM_HOST=$(npm config get registry 2>/dev/null | sed -E 's|^[a-z]+://([^/:]+).*|\1|')
if grep -q "net allowed CONNECT ${NPM_HOST:-registry.npmjs.org}:443 " "$LAYERS/$DIGEST/meta/net.log" &&
        grep -q "net allowed HTTP.*:80 " "$LAYERS/$DIGEST/meta/net.log" && ! grep -q "net refused" "$LAYERS/$DIGEST/meta/net.log"; then
        pass "the build fetched through the limited proxy: its log shows the apt and npm registries"
else
        fail "build through the proxy" "$(cat "$LAYERS/$DIGEST/meta/net.log" 2>&1)"
fi
if [ "$(stat -c %u "$LAYERS/$DIGEST/root" "$LAYERS/$DIGEST/npm/node_modules/is-number" | sort -u)" = "$(id -u)" ]; then
        pass "the layer's files belong to hull's user after the sandboxed build"
else
        fail "layer owner" "$(stat -c '%u %n' "$LAYERS/$DIGEST/root" "$LAYERS/$DIGEST/npm/node_modules/is-number")"
fi
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
# The second call asks the proxy for a host not on the list: its connection is on the status
# feed (hull.network, shown by --verbose) after that call, or after the third (a connection is
# logged when it ends).
SCRIPT='{"steps":[
 {"tool_calls":[{"name":"bash","input":{"command":"echo proxy=$HTTPS_PROXY"}}]},
 {"tool_calls":[{"name":"bash","input":{"command":"python3 -c \"import socket; s = socket.create_connection((\u0027127.0.0.1\u0027, 3128)); s.sendall(b\u0027CONNECT blocked.invalid:443 HTTP/1.1\\r\\n\\r\\n\u0027); print(s.recv(12).decode())\""}}]},
 {"tool_calls":[{"name":"bash","input":{"command":"true"}}]},
 {"text":["done: ","{{last_tool_result|line:1}}"]}]}'
: >"$TEST_TMP/requests.jsonl"
if mock_start "$SCRIPT" --record "$TEST_TMP/requests.jsonl" --log-level error; then
        HULL_PROVIDER=anthropic HULL_BASE_URL=$MURL HULL_API_KEY=test-key HULL_MODEL=mock-model \
                timeout 300 "$HULL" run --env limitednet --verbose "use the tools" >"$TEST_TMP/o" 2>"$TEST_TMP/e" </dev/null
        mock_stop
fi
if grep -q "proxy=http://127.0.0.1:" "$TEST_TMP/requests.jsonl"; then
        pass "a session of an environment with limited networking gets the proxy"
else
        fail "limited env session" "$(tail -c 600 "$TEST_TMP/o") $(tail -c 600 "$TEST_TMP/e")"
fi
if grep -q "HTTP/1.1 403" "$TEST_TMP/requests.jsonl" &&
        grep -q '^hull:   network: .* net refused CONNECT blocked.invalid:443 .*reason=not on the allowed hosts' "$TEST_TMP/e"; then
        pass "hull run: a limited session's connections are on the status feed (hull.network)"
else
        fail "hull.network on the feed" "$(tail -c 1200 "$TEST_TMP/e")"
fi
"$HULL" env rm limitednet >/dev/null 2>&1

# ---- hull serve's sessions: OpenSession's hullEnvironment (hull session open --env) ----
if start_server "$TEST_TMP/serve.log" --work-dir "$TEST_TMP" --audit-dir "$TEST_TMP/audit"; then
        export HULL_URL=$URL
        SID=$("$HULL" session open --env demo 2>"$TEST_TMP/e")
        out=$([ -n "$SID" ] && "$HULL" session exec "$SID" -- "$PROBE >/dev/null && echo probe-ok; node -e 'console.log(require(\"is-number\")(7))'" 2>&1)
        if [ "$out" = "probe-ok
true" ]; then
                pass "hull session open --env: the session's calls run the package's program and require the npm package"
        else
                fail "session open --env" "sid=$SID out=$out err=$(cat "$TEST_TMP/e")"
        fi
        [ -n "$SID" ] && "$HULL" session close "$SID" >/dev/null 2>&1
        SID=$("$HULL" session open 2>/dev/null)
        out=$([ -n "$SID" ] && "$HULL" session exec "$SID" -- "command -v $APT_PKG || echo absent" 2>&1)
        if [ "$out" = absent ]; then pass "a session without --env has no layer"; else fail "session without env" "$out"; fi
        [ -n "$SID" ] && "$HULL" session close "$SID" >/dev/null 2>&1
        "$HULL" session open --env nosuch >"$TEST_TMP/o" 2>"$TEST_TMP/e"
        rc=$?
        if [ $rc != 0 ] && grep -q "no environment nosuch" "$TEST_TMP/e" && [ ! -s "$TEST_TMP/o" ]; then
                pass "OpenSession naming a missing environment is refused, naming it"
        else
                fail "missing env session" "rc=$rc $(cat "$TEST_TMP/o" "$TEST_TMP/e")"
        fi
        printf '{"protocol": 3, "hullEnvironment": "Bad Name"}' >"$TEST_TMP/req.json"
        code=$(curl -s -o "$TEST_TMP/o" -w '%{http_code}' -H 'Content-Type: application/json' \
                --data-binary @"$TEST_TMP/req.json" "$URL/plimsoll.v1.SandboxService/OpenSession")
        if [ "$code" = 400 ] && grep -q "hullEnvironment must be an environment's name" "$TEST_TMP/o"; then
                pass "a malformed hullEnvironment is invalid_argument"
        else
                fail "bad hullEnvironment" "code=$code $(cat "$TEST_TMP/o")"
        fi
        # ---- plimsoll's one-shot Run: the same hullEnvironment ----
        # run_env BODY: POST a RunRequest; the status in $code, the answer in $TEST_TMP/o; $out is
        # the project's steps' stdout, decoded, one line per step.
        run_env() {
                printf '%s' "$1" >"$TEST_TMP/req.json"
                code=$(curl -s -o "$TEST_TMP/o" -w '%{http_code}' -H 'Content-Type: application/json' \
                        --max-time 900 --data-binary @"$TEST_TMP/req.json" "$URL/plimsoll.v1.SandboxService/Run")
                out=$("$PY" -c 'import base64,json,sys
try:
    for s in json.load(open(sys.argv[1]))["project"]["steps"]:
        sys.stdout.write(base64.b64decode(s.get("stdout", "")).decode())
except Exception:
    pass' "$TEST_TMP/o")
        }
        # session_run SID CODE: one python cell through plimsoll's SessionRun; prints "cell: " + its
        # stdout lines, "net: " + each hullNetworkLog line, or "error: " + the answer.
        session_run() {
                "$PY" -c 'import json,sys; print(json.dumps({"protocol": 3, "sessionId": sys.argv[1], "cell": {"language": "python", "code": sys.argv[2]}}))' "$1" "$2" >"$TEST_TMP/sreq.json"
                curl -s -o "$TEST_TMP/sans.json" -H 'Content-Type: application/json' --max-time 120 \
                        --data-binary @"$TEST_TMP/sreq.json" "$URL/plimsoll.v1.SandboxService/SessionRun"
                "$PY" -c 'import base64,json,sys
a = json.load(open(sys.argv[1]))
run = a.get("run")
if not run:
    print("error:", json.dumps(a)[:600]); sys.exit()
for l in base64.b64decode(run["cell"].get("stdout", "")).decode().splitlines():
    print("cell:", l)
for l in run.get("hullNetworkLog", []):
    print("net:", l)
if "hullNetworkLog" not in run:
    print("no-net-log")' "$TEST_TMP/sans.json" 2>&1
        }
        STEPS="[\"$PROBE >/dev/null && echo probe-ok\", \"node -e 'console.log(require(\\\"is-number\\\")(7))'\", \"test -d /env && echo has-env || echo no-env\"]"
        run_env "{\"protocol\": 3, \"hullEnvironment\": \"demo\", \"project\": {\"steps\": $STEPS}}"
        if [ "$code" = 200 ] && [ "$out" = "probe-ok
true
has-env" ]; then
                pass "Run with hullEnvironment: the steps run the package's program, require the npm package, see /env"
        else
                fail "Run hullEnvironment" "code=$code out=$out $(head -c 600 "$TEST_TMP/o")"
        fi
        # The answer and its record name the environment: its version, its layer's digest, its network.
        "$HULL" env show demo >"$TEST_TMP/show.json" 2>&1
        want=$("$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); print("hull-env:demo@%d layer=sha256:%s net=none" % (s["version"], s["digest"]))' "$TEST_TMP/show.json" 2>&1)
        got=$("$PY" -c 'import json,sys; a=json.load(open(sys.argv[1])); print(a["environment"] if a["environment"] == a["record"]["environment"] else "differ: %r %r" % (a["environment"], a["record"]["environment"]))' "$TEST_TMP/o" 2>&1)
        if [ "$got" = "$want" ]; then
                pass "a Run's answer and record name the environment (version, layer digest, network)"
        else
                fail "Run environment in the record" "got=$got want=$want"
        fi
        run_env "{\"protocol\": 3, \"hull_environment\": \"demo\", \"project\": {\"steps\": [\"$PROBE >/dev/null && echo probe-ok\"]}}"
        if [ "$code" = 200 ] && [ "$out" = probe-ok ]; then pass "Run with hull_environment (snake case) gets the layer too"; else fail "Run hull_environment" "code=$code out=$out $(head -c 600 "$TEST_TMP/o")"; fi
        run_env "{\"protocol\": 3, \"project\": {\"steps\": [\"command -v $APT_PKG || echo absent\", \"test -d /env && echo has-env || echo no-env\"]}}"
        if [ "$code" = 200 ] && [ "$out" = "absent
no-env" ] && ! grep -q hullNetworkLog "$TEST_TMP/o" &&
                "$PY" -c 'import json,sys; a=json.load(open(sys.argv[1])); sys.exit(0 if a["environment"] == "" == a["record"]["environment"] else 1)' "$TEST_TMP/o"; then
                pass "a Run without hullEnvironment has no layer, no /env, no hullNetworkLog, no environment in its record"; else fail "Run without env" "code=$code out=$out $(head -c 600 "$TEST_TMP/o")"; fi
        run_env '{"protocol": 3, "hullEnvironment": "nosuch", "project": {"steps": ["true"]}}'
        if [ "$code" = 400 ] && grep -q '"invalid_argument"' "$TEST_TMP/o" && grep -q "no environment nosuch" "$TEST_TMP/o"; then
                pass "a Run naming a missing environment is invalid_argument naming it"
        else
                fail "Run missing env" "code=$code $(cat "$TEST_TMP/o")"
        fi
        run_env '{"protocol": 3, "hullEnvironment": "Bad Name", "project": {"steps": ["true"]}}'
        if [ "$code" = 400 ] && grep -q "hullEnvironment must be an environment's name" "$TEST_TMP/o"; then
                pass "a Run with a malformed hullEnvironment is invalid_argument naming the field"
        else
                fail "Run bad hullEnvironment" "code=$code $(cat "$TEST_TMP/o")"
        fi
        # A limited environment: its session gets the proxy where hull serve's keepers carry a
        # network, and a clear refusal where they do not (yet).
        "$HULL" env create limitednet2 --net limited --allow-host example.invalid >/dev/null 2>&1
        SID=$("$HULL" session open --env limitednet2 2>"$TEST_TMP/e")
        if [ -n "$SID" ]; then
                out=$("$HULL" session exec "$SID" -- 'echo proxy=$HTTPS_PROXY' 2>&1)
                # SessionRun's answers carry the session's connections since the call before
                # (hullNetworkLog): a cell asks the proxy for a host not on the list, then one more
                # call (a connection is logged when it ends, which may be just after the answer).
                session_run "$SID" 'import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT blocked.invalid:443 HTTP/1.1\r\n\r\n")
print(s.recv(12).decode())' >"$TEST_TMP/sr1"
                session_run "$SID" 'print("again")' >"$TEST_TMP/sr2"
                env2=$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["run"]; print(r["environment"] if r["environment"] == r["record"]["environment"] else "differ")' "$TEST_TMP/sans.json" 2>&1)
                "$HULL" session close "$SID" >/dev/null 2>&1
                # the session's audit log: every record names the environment, and hull verify agrees
                log=$(grep -l '"environment":"hull-env:limitednet2@' "$TEST_TMP"/audit/session-*.jsonl 2>/dev/null | head -n 1)
                if [ "$env2" = "hull-env:limitednet2@1 layer=none net=limited" ] && [ -n "$log" ] &&
                        [ "$(grep -c . "$log")" -ge 3 ] &&
                        [ "$(grep -c '"environment":"hull-env:limitednet2@1 layer=none net=limited"' "$log")" = "$(grep -c . "$log")" ] &&
                        "$HULL" verify "$log" >"$TEST_TMP/verify" 2>&1; then
                        pass "a limited session's records name its environment (answers and audit log), hull verify agrees"
                else
                        fail "session environment in the records" "env2=$env2 log=$log $(cat "$TEST_TMP/verify" 2>/dev/null) $(head -c 400 "$log" 2>/dev/null)"
                fi
                if grep -q '^cell: HTTP/1.1 403' "$TEST_TMP/sr1" && grep -q '^cell: again' "$TEST_TMP/sr2" &&
                        cat "$TEST_TMP/sr1" "$TEST_TMP/sr2" | grep -q '^net: .* net refused CONNECT blocked.invalid:443 .*reason=not on the allowed hosts'; then
                        pass "SessionRun in a limited environment: hullNetworkLog shows the refused connection"
                else
                        fail "SessionRun hullNetworkLog" "$(cat "$TEST_TMP/sr1" "$TEST_TMP/sr2")"
                fi
        else
                out=
        fi
        if [ "$out" = "proxy=http://127.0.0.1:3128" ] ||
                { [ -z "$SID" ] && grep -q "network mode is not wired through hull serve" "$TEST_TMP/e"; }; then
                pass "a limited environment's session: the proxy, or a clear refusal ($( [ -n "$SID" ] && echo proxy || echo refused))"
        else
                fail "limited env session via serve" "sid=$SID out=$out err=$(cat "$TEST_TMP/e")"
        fi
        # A limited environment's Run: the proxy, started by the broker's worker that runs the steps.
        run_env '{"protocol": 3, "hullEnvironment": "limitednet2", "project": {"steps": ["echo proxy=$HTTPS_PROXY", "python3 -c \"import socket; s = socket.create_connection((\u0027127.0.0.1\u0027, 3128)); s.sendall(b\u0027CONNECT blocked.invalid:443 HTTP/1.1\\\\r\\\\n\\\\r\\\\n\u0027); print(s.recv(12).decode())\""]}}'
        if [ "$code" = 200 ] && [ "$out" = "proxy=http://127.0.0.1:3128
HTTP/1.1 403" ]; then
                pass "a Run in a limited environment gets the proxy"
        else
                fail "Run limited env" "code=$code out=$out $(head -c 600 "$TEST_TMP/o")"
        fi
        # Its answer carries the run's connection log (hullNetworkLog), whole: the worker's proxy
        # stopped before the answer.
        netlog=$("$PY" -c 'import json,sys
for l in json.load(open(sys.argv[1])).get("hullNetworkLog", ["none"]): print(l)' "$TEST_TMP/o" 2>&1)
        if [ "$(printf '%s\n' "$netlog" | grep -c .)" = 1 ] &&
                printf '%s\n' "$netlog" | grep -q ' net refused CONNECT blocked.invalid:443 addr=- up=0 down=0 reason=not on the allowed hosts'; then
                pass "a limited Run's answer has hullNetworkLog: the refused connection, one line"
        else
                fail "Run hullNetworkLog" "$netlog"
        fi
        # An unrestricted environment: refused unless hull serve allows it (then pasta, below).
        "$HULL" env create openwide --net unrestricted >/dev/null 2>&1
        run_env '{"protocol": 3, "hullEnvironment": "openwide", "project": {"steps": ["true"]}}'
        if [ "$code" = 400 ] && grep -q '"failed_precondition"' "$TEST_TMP/o" && grep -q "allow-unrestricted-network" "$TEST_TMP/o"; then
                pass "a Run in an unrestricted environment is failed_precondition without --allow-unrestricted-network"
        else
                fail "Run unrestricted refused" "code=$code $(cat "$TEST_TMP/o")"
        fi
        "$HULL" env rm limitednet2 >/dev/null 2>&1
        stop_server
        unset HULL_URL
        if ! command -v pasta >/dev/null; then
                skip "a Run in an unrestricted environment gets pasta's network" "no pasta (apt install passt)"
        elif start_server "$TEST_TMP/serve2.log" --work-dir "$TEST_TMP" --allow-unrestricted-network; then
                # pasta gives the sandbox an interface beside lo; none has only lo.
                run_env '{"protocol": 3, "hullEnvironment": "openwide", "project": {"steps": ["tail -n +3 /proc/net/dev | grep -vc \"^ *lo:\""]}}'
                n1=$out code1=$code
                run_env '{"protocol": 3, "project": {"steps": ["tail -n +3 /proc/net/dev | grep -vc \"^ *lo:\""]}}'
                if [ "$code1" = 200 ] && [ "$n1" -ge 1 ] 2>/dev/null && [ "$code" = 200 ] && [ "$out" = 0 ]; then
                        pass "a Run in an unrestricted environment gets pasta's network (with --allow-unrestricted-network; none without the field)"
                else
                        fail "Run unrestricted" "code=$code1 n=$n1; without: code=$code n=$out $(head -c 600 "$TEST_TMP/o") $(tail -5 "$TEST_TMP/serve2.log")"
                fi
                SID=$(HULL_URL=$URL "$HULL" session open --env openwide 2>"$TEST_TMP/e")
                out=$([ -n "$SID" ] && HULL_URL=$URL "$HULL" session exec "$SID" -- 'tail -n +3 /proc/net/dev | grep -vc "^ *lo:"' 2>&1)
                [ -n "$SID" ] && HULL_URL=$URL "$HULL" session close "$SID" >/dev/null 2>&1
                if [ "$out" -ge 1 ] 2>/dev/null; then
                        pass "OpenSession of an unrestricted environment gets pasta's network (with --allow-unrestricted-network)"
                else
                        fail "session unrestricted" "sid=$SID out=$out err=$(cat "$TEST_TMP/e")"
                fi
                stop_server
        else
                fail "hull serve --allow-unrestricted-network starts" "$(tail -5 "$TEST_TMP/serve2.log")"
        fi
        "$HULL" env rm openwide >/dev/null 2>&1
else
        fail "hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
fi

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

# ---- gc removes what failed or killed builds left, unless a build holds its lock ----
STALE=$(printf 'a%.0s' $(seq 64))
HELD=$(printf 'b%.0s' $(seq 64))
touch "$LAYERS/.lock-$STALE" "$LAYERS/.lock-$HELD"
mkdir -p "$LAYERS/.build-$STALE-99999/root" "$LAYERS/.build-$HELD-99998/root"
flock -o "$LAYERS/.lock-$HELD" sleep 60 &
holder=$!
for _ in $(seq 50); do flock -n "$LAYERS/.lock-$HELD" true 2>/dev/null || break; sleep 0.1; done
"$HULL" env gc >"$TEST_TMP/o" 2>&1
if [ ! -e "$LAYERS/.lock-$STALE" ] && [ ! -e "$LAYERS/.build-$STALE-99999" ] &&
        [ -e "$LAYERS/.lock-$HELD" ] && [ -d "$LAYERS/.build-$HELD-99998" ] && [ -d "$LAYERS/$DIGEST2" ] &&
        [ -e "$LAYERS/.lock-$DIGEST2" ]; then
        pass "gc removes a dead build's .build-* and .lock-*, keeps a held build's and the named layer's"
else
        fail "gc leftovers" "$(ls -a "$LAYERS")"
fi
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
"$HULL" env gc >/dev/null 2>&1
if [ ! -e "$LAYERS/.lock-$HELD" ] && [ ! -e "$LAYERS/.build-$HELD-99998" ]; then pass "once the lock is free gc removes those too"; else fail "gc after unlock" "$(ls -a "$LAYERS")"; fi

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
