#!/usr/bin/env bash
# test-files-pg.sh: /v1/files on two hull serve nodes sharing one PostgreSQL database (a throwaway
# cluster, tests/lib-pg.sh), each with its own HULL_HOME: a file uploaded to one is listed by the
# other and downloaded from it byte for byte (its bytes come from the database's chunks, checked
# against their digest into that node's own copy); deleted on the second, it is gone on the first.
# Without PostgreSQL installed: a skip line.
source "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-pg.sh"
T="files on two nodes sharing PostgreSQL"
why=$(pg_missing)
if [ -n "$why" ]; then
        skip "$T" "$why"
        exit 0
fi
pg_cluster_start 2>"$TEST_TMP/pg.err" || { fail "$T" "the cluster did not start: $(tr '\n' ' ' <"$TEST_TMP/pg.err")"; exit 0; }
trap 'pg_cluster_stop; lib_cleanup' EXIT
url=$(pg_createdb hull_files) || { fail "$T" "createdb failed"; exit 0; }
H=(-H 'anthropic-version: 2023-06-01')
for n in a b; do mkdir -m 0711 "$TEST_TMP/$n"; done
HULL_HOME=$TEST_TMP/a start_server "$TEST_TMP/a.log" --db "$url" --no-cgroup || { fail "$T" "node a: $(tail -2 "$TEST_TMP/a.log")"; exit 0; }
A=$URL
HULL_HOME=$TEST_TMP/b start_server "$TEST_TMP/b.log" --db "$url" --no-cgroup || { fail "$T" "node b: $(tail -2 "$TEST_TMP/b.log")"; exit 0; }
B=$URL
head -c $((3 * 1024 * 1024 + 5)) /dev/urandom >"$TEST_TMP/in.bin"
curl -s "${H[@]}" -F "file=@$TEST_TMP/in.bin" "$A/v1/files" -o "$TEST_TMP/up.json"
id=$(json_get "$TEST_TMP/up.json" id)
check "node a keeps an upload" test -n "$id"
check "node b lists it" grep -q "\"$id\"" <(curl -s "${H[@]}" "$B/v1/files")
curl -s "${H[@]}" "$B/v1/files/$id/content" -o "$TEST_TMP/out.bin"
check "node b downloads the same bytes from the database" cmp -s "$TEST_TMP/in.bin" "$TEST_TMP/out.bin"
check "node b keeps its own copy, named by the digest" test -f "$TEST_TMP/b/blobs/$(sha256sum "$TEST_TMP/in.bin" | cut -d' ' -f1)"
check "the bytes are in the database, not in a directory of node a alone" test ! -e "$TEST_TMP/a/hull.db-blobs"
check "node b deletes it" grep -q file_deleted <(curl -s "${H[@]}" -X DELETE "$B/v1/files/$id")
check "node a finds it gone" grep -q file_not_found <(curl -s "${H[@]}" "$A/v1/files/$id")
