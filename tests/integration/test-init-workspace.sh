# test-init-workspace.sh: `hull init DIR` (issue 23): a workspace with agent.json, skills/example/
# SKILL.md, config.json and README.md; agent.json accepted as is by a real hull serve's POST
# /v1/agents and the example skill by `hull skill add`; a second run, or a run where any one of its
# files exists, refused with a clear error naming the file and nothing written or changed; --help,
# bad arguments refused with 2.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

W=$TEST_TMP/ws/my-agent
mkdir -p "$TEST_TMP/ws"
out=$("$HULL" init --model claude-test-1 "$W/" 2>&1)
rc=$?
if [ "$rc" -eq 0 ]; then pass "init DIR: exit 0"; else fail "init DIR: exit 0" "rc=$rc: $(tr "\n" " " <<<"$out")"; fi
check "init DIR: agent.json, config.json, README.md, skills/example/SKILL.md" \
        test -f "$W/agent.json" -a -f "$W/config.json" -a -f "$W/README.md" -a -f "$W/skills/example/SKILL.md"
pycheck "init DIR: agent.json names the agent after DIR, with the model and the agent toolset" '
import json, sys
a = json.load(open(sys.argv[1]))
assert a["name"] == "my-agent" and a["model"] == "claude-test-1", a
assert a["tools"][0]["type"] == "agent_toolset_20260401", a["tools"]
' "$W/agent.json"
pycheck "init DIR: config.json is JSON (comments as // keys)" 'import json, sys; json.load(open(sys.argv[1]))' "$W/config.json"
check "init DIR: the skill has its front matter" grep -q '^name: example$' "$W/skills/example/SKILL.md"
check "init DIR: the README says how to run it" grep -q 'hull serve' "$W/README.md"

sum() { find "$W" -type f -exec sha256sum {} + | sort; }
before=$(sum)
out=$("$HULL" init "$W" 2>&1)
rc=$?
check "init DIR again: refused (exit 1) naming the file ($out)" test "$rc" -eq 1
check "init DIR again: the message says nothing is overwritten" grep -q "never overwrites" <<<"$out"
check "init DIR again: no file changed" test "$before" = "$(sum)"

W2=$TEST_TMP/ws/other
mkdir -p "$W2"
echo "mine" >"$W2/README.md"
out=$("$HULL" init "$W2" 2>&1)
rc=$?
check "init DIR with README.md there: refused naming it ($out)" test "$rc" -eq 1 -a -n "$(grep -o "$W2/README.md exists" <<<"$out")"
check "init DIR with README.md there: nothing else written, README.md kept" \
        test ! -e "$W2/agent.json" -a ! -e "$W2/skills" -a "$(cat "$W2/README.md")" = mine

"$HULL" init --help >"$TEST_TMP/help" 2>&1
check "init --help: names DIR and the workspace's files" grep -q "agent.json" "$TEST_TMP/help"
"$HULL" init --force "$TEST_TMP/ws/x" >/dev/null 2>&1
check "init --force DIR: a usage error (2)" test $? -eq 2
"$HULL" init a b >/dev/null 2>&1
check "init A B: a usage error (2)" test $? -eq 2

# agent.json and the skill as a real server takes them
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
if ! start_server "$TEST_TMP/serve.log" --model claude-test-1 --provider anthropic --base-url http://127.0.0.1:9 --api-key sk-none; then
        fail "init DIR: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
v1 POST /v1/agents "@$W/agent.json"
expect "init DIR: POST /v1/agents takes agent.json as it is" "s == 200 and b['name'] == 'my-agent' and b['type'] == 'agent'"
out=$("$HULL" skill add "$W/skills/example" --url "$URL" 2>&1)
check "init DIR: hull skill add takes skills/example ($out)" test $? -eq 0
