# test-nodes-durable.sh: a node killed (kill -9) right after its turn's idle is committed, before
# it gives the session's lease back, leaves the turn in the session's conversation too: the next
# turn, run by another node once the lease expired, has it (the model is sent the first turn's
# message and answer). The window is held open without timing: a psql session locks the lease's
# row while the turn runs, so the node's release waits on it (seen in pg_stat_activity) after the
# idle's commit; the node is killed then, and its waiting statement ended (pg_terminate_backend),
# so nothing it had not committed by then is written. (On one PostgreSQL cluster, tests/lib-pg.sh:
# a throwaway one, stopped and removed at exit.)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"
source "$(dirname "$0")/../lib-pg.sh"

why=$(pg_missing)
if [ -n "$why" ]; then
        skip "nodes-durable" "$why"
        exit 77
fi
if ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "nodes-durable: the cluster starts" "$(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        exit 1
fi
PSQL() { "$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atqc "$1"; }
DB=$(pg_createdb hull) || { fail "nodes-durable: createdb" "failed"; exit 1; }
export TMPDIR=$TEST_TMP/tmp
mkdir -m 0711 "$TMPDIR"
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
# poll CONDITION-SQL [TENTHS]: until the query prints 1 (at most TENTHS tenths of a second, 300)
poll() {
        local i
        for i in $(seq 1 "${2:-300}"); do
                [ "$(PSQL "$1")" = 1 ] && return 0
                sleep 0.1
        done
        return 1
}

# the first answer after 6 s (the lease's row is locked meanwhile: a busy machine may take seconds to
# start psql and take the lock), then at once
if ! mock_start '{"then": "repeat", "steps": [{"text": "the word is giraffe", "delay_ms": 6000},
        {"text": "second answer"}]}' --log-level error --record "$TEST_TMP/mock.rec"; then
        fail "nodes-durable: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
serve_v1 "$TEST_TMP/node1.log" --db "$DB" --node-id n1 || { fail "nodes-durable: node 1 starts" "$(tail -3 "$TEST_TMP/node1.log")"; exit 1; }
N1_PID=$SERVER_PID N1=$URL
serve_v1 "$TEST_TMP/node2.log" --db "$DB" --node-id n2 || { fail "nodes-durable: node 2 starts" "$(tail -3 "$TEST_TMP/node2.log")"; exit 1; }
N2_PID=$SERVER_PID N2=$URL
URL=$N1
make_session || { fail "nodes-durable: a session is made on node 1" "$(head -c 300 "$O")"; exit 1; }
S=$SESSION
v1 POST "/v1/sessions/$S/events" "$(user_message 'remember the word')"
expect "nodes-durable: the message is sent on node 1" "s == 200"
check "nodes-durable: node 1 holds the session's lease" test "$(PSQL "SELECT node_id FROM session_leases WHERE session_id = '$S'")" = n1
# the lease's row locked by another session until it is ended below
PGAPPNAME=hull-test-locker "$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atqc \
        "SELECT 1 FROM session_leases WHERE session_id = '$S' FOR UPDATE; SELECT pg_sleep(120)" >/dev/null 2>&1 &
pids+=($!)
poll "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'hull-test-locker' AND backend_xid IS NOT NULL"
check "nodes-durable: the lease's row is locked while the turn runs" test $? -eq 0
check "nodes-durable: ... before the turn's idle" test "$(PSQL "SELECT status FROM sessions WHERE id = '$S'")" = running
# the idle committed, the release waiting on the row
poll "SELECT (count(*) > 0)::int FROM sessions s, pg_stat_activity a WHERE s.id = '$S' AND s.status = 'idle'
      AND a.wait_event_type = 'Lock' AND a.query LIKE '%DELETE FROM session_leases%'" 300
check "nodes-durable: node 1 committed the turn's idle and waits to give the lease back" test $? -eq 0
kill -9 "$N1_PID"
wait "$N1_PID" 2>/dev/null
PSQL "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE wait_event_type = 'Lock'" >/dev/null
PSQL "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'hull-test-locker'" >/dev/null
check "nodes-durable: node 1 killed: its lease is left behind" test "$(PSQL "SELECT node_id FROM session_leases WHERE session_id = '$S'")" = n1
check "nodes-durable: the log has the turn (agent.message, then the idle)" test \
        "$(PSQL "SELECT string_agg(type, ',' ORDER BY seq) FROM (SELECT type, seq FROM events WHERE session_id = '$S' AND type IN ('agent.message', 'session.status_idle')) x")" = \
        "agent.message,session.status_idle"
check "nodes-durable: ... and so has the session's conversation (written in the idle's commit)" test \
        "$(PSQL "SELECT count(*) FROM conversations WHERE session_id = '$S' AND body LIKE '%remember the word%' AND body LIKE '%the word is giraffe%'")" = 1
# node 2 takes the expired lease (its heartbeat's reaper), then runs the next turn
poll "SELECT (count(*) = 0)::int FROM session_leases WHERE session_id = '$S' AND node_id = 'n1'" 300
check "nodes-durable: after the lease TTL node 1's lease is gone" test $? -eq 0
URL=$N2
wait_idle "$S" 30
v1 POST "/v1/sessions/$S/events" "$(user_message 'which word')"
expect "nodes-durable: the next message is sent on node 2" "s == 200"
wait_idle "$S" 30
pycheck "nodes-durable: node 2's turn sent the model the first turn (its message and its answer) before its own" '
import json, sys
rec = [l for l in open(sys.argv[1]) if l.strip()]
last = rec[-1] if rec else ""
i, j, k = last.find("remember the word"), last.find("the word is giraffe"), last.find("which word")
ok = len(rec) == 2 and 0 <= i < j < k
ok or print(len(rec), i, j, k, last[:600])
sys.exit(0 if ok else 1)' "$TEST_TMP/mock.rec"
SERVER_PID=$N2_PID
stop_server TERM 30
check "nodes-durable: node 2 stops cleanly" test $? -eq 0
