# test-nodes-load.sh: 3 hull serve nodes on one PostgreSQL (a throwaway cluster, tests/lib-pg.sh)
# x 100 sessions x 3 turns, all at once, with hull mock-model: each session made on one node, its
# turns sent to the next nodes in turn (nodes_load.py); every session's log has one answer per
# turn, as many running as idle, idle last; `hull db check` finds every log numbered without a
# gap (and the counters right). NODES_LOAD="SESSIONS TURNS" makes it smaller or bigger.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"
source "$(dirname "$0")/../lib-pg.sh"

why=$(pg_missing)
if [ -n "$why" ]; then
        skip "nodes load" "$why"
        exit 77
fi
if ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "nodes load: the cluster starts" "$(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        exit 1
fi
start=$(date +%s.%N)
DB=$(pg_createdb hull) || { fail "nodes load: createdb" "failed"; exit 1; }
export TMPDIR=$TEST_TMP/tmp
mkdir -m 0711 "$TMPDIR"
if ! mock_start '{"then": "repeat", "steps": [{"text": "one answer"}]}' --log-level error; then
        fail "nodes load: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
urls=()
for n in 1 2 3; do
        mkdir -m 0711 "$TEST_TMP/home$n"
        if ! HULL_HOME=$TEST_TMP/home$n serve_v1 "$TEST_TMP/node$n.log" --db "$DB" --node-id "n$n"; then
                fail "nodes load: node $n starts" "$(tail -3 "$TEST_TMP/node$n.log" | tr '\n' ' ')"
                exit 1
        fi
        urls+=("$URL")
done
read -r sessions turns <<<"${NODES_LOAD:-100 3}"
"$PY" "$(dirname "$0")/nodes_load.py" "$sessions" "$turns" "${urls[@]}" >"$TEST_TMP/load.json" 2>"$TEST_TMP/load.err"
st=$?
printf '# %s\n' "$(cat "$TEST_TMP/load.json")"
if [ "$st" = 0 ]; then
        pass "nodes load: 3 nodes x $sessions sessions x $turns turns at once: every turn answered once, every log as it should be"
else
        fail "nodes load: 3 nodes x $sessions sessions x $turns turns" "$(head -c 600 "$TEST_TMP/load.json") $(tail -3 "$TEST_TMP/load.err")"
fi
if "$HULL" db check --db "$DB" >"$TEST_TMP/check.out" 2>&1; then
        pass "nodes load: hull db check: every session's events numbered 1..N, no gap, the counters at N"
else
        fail "nodes load: hull db check" "$(head -5 "$TEST_TMP/check.out" | tr '\n' ' ')"
fi
check "nodes load: no lease left behind" test "$("$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atqc "SELECT count(*) FROM session_leases")" = 0
grep -h 'level=error' "$TEST_TMP"/node*.log | head -3
printf '# test-nodes-load: %.1f s\n' "$(echo "$(date +%s.%N) - $start" | bc)"
