#!/usr/bin/env bash
# test-skill-cli.sh: `hull skill add` and `hull skill list` against a real hull serve with an API
# key: a directory (checked and zipped by the CLI), a zip with --name, a new version with --to, the
# list; refused with a message and exit 1, nothing uploaded: a directory without SKILL.md, one with
# a symlink, a SKILL.md without front matter; a wrong key; no server.
source "$(dirname "$0")/../lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
KEY=$("$HULL" key create --name skills 2>/dev/null)
if ! start_server "$TEST_TMP/serve.log"; then
        fail "skill cli: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
export HULL_URL=$URL HULL_SERVE_KEY=$KEY
S=$TEST_TMP/skills
mkdir -p "$S/pdf/scripts" "$S/nomd" "$S/link" "$S/nofm"
printf -- '---\nname: pdf-tools\ndescription: Fill PDF forms.\n---\nThe body.\n' >"$S/pdf/SKILL.md"
echo 'print(1)' >"$S/pdf/scripts/fill.py"
echo hello >"$S/nomd/README.md"
cp "$S/pdf/SKILL.md" "$S/link/SKILL.md"
ln -s /etc/passwd "$S/link/passwd"
echo '# no front matter' >"$S/nofm/SKILL.md"
/usr/bin/python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1], "w"); z.writestr("notes/SKILL.md", "---\nname: notes\ndescription: Take notes.\n---\n"); z.close()' "$S/notes.zip"

out=$("$HULL" skill add "$S/pdf" 2>&1)
check "skill cli: add a directory" grep -Eq '^skill_[0-9a-z]+ version [0-9]+ \(pdf-tools\)$' <<<"$out"
id=${out%% *}
out=$("$HULL" skill add --name "My notes" "$S/notes.zip" 2>&1)
check "skill cli: add a zip with --name" grep -Eq '^skill_[0-9a-z]+ version [0-9]+ \(My notes\)$' <<<"$out"
out=$("$HULL" skill add --to "$id" "$S/pdf" 2>&1)
check "skill cli: add a version with --to" grep -Eq "^$id version [0-9]+ \(pdf-tools\)$" <<<"$out"
"$HULL" skill list >"$TEST_TMP/list" 2>&1
check "skill cli: list shows both" test "$(wc -l <"$TEST_TMP/list")" = 2
check "skill cli: list names them" grep -q "My notes" "$TEST_TMP/list"
"$HULL" skill list --json >"$TEST_TMP/list.json"
check "skill cli: list --json" /usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert len(a) == 2 and all(s["type"] == "skill" for s in a)' "$TEST_TMP/list.json"

refused() { # NAME DIR PATTERN
        local out st
        out=$("$HULL" skill add "$2" 2>&1)
        st=$?
        if [ "$st" = 1 ] && grep -q "$3" <<<"$out"; then pass "skill cli: refused: $1"; else fail "skill cli: refused: $1" "exit $st: $out"; fi
}
refused "no SKILL.md" "$S/nomd" "no SKILL.md"
refused "a symlink" "$S/link" "not links"
refused "no front matter" "$S/nofm" "front matter"
check "skill cli: nothing more uploaded" test "$("$HULL" skill list | wc -l)" = 2
out=$("$HULL" skill list --api-key hull_wrong 2>&1)
check "skill cli: a wrong key is refused" grep -q "HTTP 401" <<<"$out"
out=$(HULL_URL=http://127.0.0.1:1 "$HULL" skill list 2>&1)
check "skill cli: no server says so" grep -q "is 'hull serve' running there" <<<"$out"
stop_server >/dev/null
