# test-key-init.sh: `hull key create|list|rm` and `hull init`, without a server: a key printed
# once (stdout) and stored as its SHA-256 only (checked in hull.db with sqlite3 when it is
# installed), listed, deleted; bad arguments refused with 2; `hull init` writing a config.json
# that hull run reads and a starter agent with the agent toolset and hull's, both kept on a
# second run, --force replacing the config and keeping the old one.
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
export HULL_HOME=$TEST_TMP/home
unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER OPENAI_BASE_URL \
        ANTHROPIC_BASE_URL 2>/dev/null
cd "$TEST_TMP" || exit 1
O=$TEST_TMP/out
E=$TEST_TMP/err
run() {
        "$HULL" "$@" >"$O" 2>"$E"
        RC=$?
}
expect() { # NAME CONDITION (python over o, e, rc)
        if RC=$RC "$PY" - "$O" "$E" "$2" <<'PYEOF'; then pass "$1"; else fail "$1" "rc=$RC out: $(head -c 400 "$O") err: $(head -c 400 "$E")"; fi
import json, os, re, sys
o = open(sys.argv[1]).read()
e = open(sys.argv[2]).read()
rc = int(os.environ["RC"])
sys.exit(0 if eval(sys.argv[3]) else 1)
PYEOF
}
dump() { # the whole database as SQL text, or nothing without sqlite3
        command -v sqlite3 >/dev/null && sqlite3 "$HULL_HOME/hull.db" .dump
}

if ! "$HULL" help key >/dev/null 2>&1; then
        skip "hull key" "hull key and hull init are not built here (they need src/store/store.c and src/service/v1-shape.c)"
        exit 0
fi

# ---- hull key ----
run key list
expect "key list: none at first" 'rc == 0 and o == ""'

run key create --name "ci bot"
K1=$(cat "$O")
expect "key create: the key alone on stdout (hull_ and 64 hex digits), its id on stderr" \
        'rc == 0 and re.fullmatch(r"hull_[0-9a-f]{64}\n", o) and re.search(r"key_[0-9a-f]+", e) and o.strip() not in e'
ID1=$(grep -o 'key_[0-9a-f]*' "$E" | head -1)
run key create
K2=$(cat "$O")
ID2=$(grep -o 'key_[0-9a-f]*' "$E" | head -1)
check "key create: each key and id new" test -n "$K2" -a "$K1" != "$K2" -a "$ID1" != "$ID2"

run key list
expect "key list: both, oldest first, with the name and the key's first characters, never the key" \
        'rc == 0 and len(o.splitlines()) == 2 and o.splitlines()[0].startswith("'"$ID1"'") and "ci bot" in o.splitlines()[0] and "'"${K1:0:12}"'" in o.splitlines()[0] and "'"$K1"'" not in o and "'"$K2"'" not in o'
run key list --json
expect "key list --json: an array of api_key objects" \
        'rc == 0 and [k["id"] for k in json.loads(o)] == ["'"$ID1"'", "'"$ID2"'"] and all(k["type"] == "api_key" for k in json.loads(o)) and json.loads(o)[0]["name"] == "ci bot"'

if command -v sqlite3 >/dev/null; then
        D1=$(printf '%s' "$K1" | sha256sum | cut -d' ' -f1)
        dump >"$TEST_TMP/dump.sql"
        check "hull.db: the key's SHA-256 is stored, the key is not" \
                sh -c "grep -q '$D1' '$TEST_TMP/dump.sql' && ! grep -q '${K1#hull_}' '$TEST_TMP/dump.sql' && ! grep -q '${K2#hull_}' '$TEST_TMP/dump.sql'"
        check "hull.db: mode 0600" test "$(stat -c %a "$HULL_HOME/hull.db")" = 600
else
        skip "hull.db: the key's SHA-256 is stored, the key is not" "no sqlite3 (apt-get install sqlite3)"
fi

run key rm "$ID1"
expect "key rm: deleted" 'rc == 0 and "'"$ID1"'" in e'
run key list
expect "key list: the other key is left" 'rc == 0 and len(o.splitlines()) == 1 and o.startswith("'"$ID2"'")'
run key rm "$ID1"
expect "key rm of a key that is gone: 1, says so" 'rc == 1 and "no key '"$ID1"'" in e'

run key rm nonsense
expect "key rm of something that is not a key id: 2" 'rc == 2 and "not a key id" in e'
run key create --name ""
expect "key create --name '': 2" 'rc == 2 and "--name" in e'
run key create --name "$(printf 'a\tb')"
expect "key create --name with a control character: 2" 'rc == 2 and "--name" in e'
run key frob
expect "key with an unknown subcommand: 2" 'rc == 2 and "frob" in e'
run key list --name x
expect "key list --name: 2 (create's option)" 'rc == 2 and "--name" in e'
run key create --home relative/dir
expect "key --home relative: 2" 'rc == 2 and "absolute" in e'
run key list --home "$TEST_TMP/other"
expect "key --home DIR: another state directory, empty" 'rc == 0 and o == "" and os.path.exists("'"$TEST_TMP"'/other/hull.db")'
echo "not a database, not at all, not even close to one: SQLite needs more than this to call it one" \
        >"$TEST_TMP/bad-home.db"
mkdir -p "$TEST_TMP/bad" && cp "$TEST_TMP/bad-home.db" "$TEST_TMP/bad/hull.db"
run key list --home "$TEST_TMP/bad"
expect "key list on a hull.db that is not a database: 1, one line naming it" \
        'rc == 1 and len(e.splitlines()) == 1 and "hull.db" in e'

# ---- hull init ----
export HULL_HOME=$TEST_TMP/ihome
run init
expect "init: writes config.json and makes the starter agent, then the next steps" \
        'rc == 0 and "wrote '"$HULL_HOME"'/config.json" in o and re.search(r"made agent agent_[0-9a-f]+ \"starter\"", o) and "hull serve" in o and "hull chat --server" in o and "/v1/sessions" in o and "@anthropic-ai/sdk" in o'
AID=$(grep -o 'agent_[0-9a-f]*' "$O" | head -1)
check "init: config.json is JSON with comments only (keys starting with //), mode 0600" \
        sh -c "$PY -c 'import json,sys; c=json.load(open(sys.argv[1])); sys.exit(0 if c and all(k.startswith(\"//\") for k in c) else 1)' '$HULL_HOME/config.json' && [ \$(stat -c %a '$HULL_HOME/config.json') = 600 ]"
# hull run reads the file first: a bad file would be named; with it, the missing key is the error
HULL_MODEL= "$HULL" run "hello" >"$O" 2>"$E"
RC=$?
expect "init: hull run accepts the config.json (it then asks for a model key)" \
        'rc == 2 and "config.json" not in e and "API_KEY" in e'
if command -v sqlite3 >/dev/null; then
        dump >"$TEST_TMP/dump.sql"
        check "init: the agent in hull.db: starter, the agent toolset and hull's, web_fetch asks" \
                "$PY" -c '
import re, sys
d = open(sys.argv[1]).read()
m = re.search(r"\{[^\n]*\"id\": ?\"" + sys.argv[2] + r"\"[^\n]*", d) or re.search(r"[^\n]*" + sys.argv[2] + r"[^\n]*", d)
s = m.group(0) if m else ""
ok = all(x in s for x in ("starter", "agent_toolset_20260401", "hull_toolset_20261201", "always_ask", "web_fetch", "bash"))
sys.exit(0 if ok else 1)' "$TEST_TMP/dump.sql" "$AID"
else
        skip "init: the agent in hull.db" "no sqlite3 (apt-get install sqlite3)"
fi

echo '{"model": "mine"}' >"$HULL_HOME/config.json"
run init
expect "init again: config.json and the starter agent kept" \
        'rc == 0 and "kept '"$HULL_HOME"'/config.json" in o and "kept agent '"$AID"'" in o and open("'"$HULL_HOME"'/config.json").read() == "{\"model\": \"mine\"}\n"'
run init --force
expect "init --force: config.json replaced, the old one kept as config.json.bak, the agent kept" \
        'rc == 0 and "wrote" in o and "kept agent '"$AID"'" in o and open("'"$HULL_HOME"'/config.json.bak").read() == "{\"model\": \"mine\"}\n" and "//" in open("'"$HULL_HOME"'/config.json").read()'

run init --home "$TEST_TMP/ihome2" --model gpt-test
expect "init --home DIR --model M: there, with that model" \
        'rc == 0 and os.path.exists("'"$TEST_TMP"'/ihome2/config.json") and os.path.exists("'"$TEST_TMP"'/ihome2/hull.db") and "model gpt-test" in o'
run init --home rel
expect "init --home relative: 2" 'rc == 2 and "absolute" in e'
run init extra extra2 # one DIR makes a workspace (test-init-workspace.sh); two are an error
expect "init with two arguments: 2" 'rc == 2 and "extra2" in e'
exit 0
