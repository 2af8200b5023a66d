# test-db-postgres.sh: hull's state in PostgreSQL. A throwaway cluster (tests/lib-pg.sh: initdb in
# a temporary directory, a unix socket only, stopped and removed at exit even on failure); hull
# serve --db on it runs a /v1 agent, session and turn with the mock model, is restarted and reads
# the same events back; a SQLite hull.db made by another hull serve is moved with hull db copy
# and checked with hull db check (and a gap made by hand is found); HULL_DB is honoured by hull
# key; a --db that cannot be opened fails at start with one line, exit 2, and no password.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"
source "$(dirname "$0")/../lib-pg.sh"

why=$(pg_missing)
if [ -n "$why" ]; then
        skip "db-postgres" "$why"
        exit 77
fi
if ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "db-postgres: the cluster starts" "$(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        exit 1
fi
PSQL() { "$PG_BIN/psql" -h "$PG_HOST" -U postgres -d "$1" -Atqc "$2"; }
pg_createdb hull >/dev/null && pg_createdb moved >/dev/null || { fail "db-postgres: createdb" "failed"; exit 1; }
# a password in the URL (the cluster trusts local connections, so it is never checked): it must
# never show in an output or a log
PW=pw-$$-topsecret
DB="postgresql://postgres:$PW@/hull?host=$PG_HOST"
MOVED="postgresql://postgres:$PW@/moved?host=$PG_HOST"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
SCRIPT='{"then": "repeat", "steps": [{"text": "first answer"}, {"text": "second answer"}]}'
if ! mock_start "$SCRIPT" --log-level error; then
        fail "db-postgres: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi

# ---- hull serve --db postgresql://...: a turn, a restart, the same events ----
if ! serve_v1 "$TEST_TMP/serve1.log" --db "$DB"; then
        fail "db-postgres: hull serve --db starts" "$(tail -5 "$TEST_TMP/serve1.log")"
        exit 1
fi
pass "db-postgres: hull serve --db postgresql://... starts"
if ! make_session; then
        fail "db-postgres: an agent, an environment and a session are made" "$(head -c 500 "$O")"
        exit 1
fi
v1 POST "/v1/sessions/$SESSION/events" "$(user_message 'hello')"
expect "db-postgres: a message is sent" "s == 200"
wait_idle "$SESSION" 90
expect "db-postgres: the turn ends idle" "s == 200 and b['status'] == 'idle'"
events_json "$SESSION" >"$TEST_TMP/before.json" 2>"$TEST_TMP/v1.err"
stop_server TERM 30
check "db-postgres: hull serve ends cleanly" test $? -eq 0
check "db-postgres: nothing was written to hull.db" test ! -e "$HULL_HOME/hull.db"
check "db-postgres: the events are rows of PostgreSQL" test "$(PSQL hull "SELECT count(*) FROM events")" -ge 3

if ! HULL_DB=$DB serve_v1 "$TEST_TMP/serve2.log"; then
        fail "db-postgres: hull serve restarts with HULL_DB" "$(tail -5 "$TEST_TMP/serve2.log")"
        exit 1
fi
events_json "$SESSION" >"$TEST_TMP/after.json" 2>"$TEST_TMP/v1.err"
pycheck "db-postgres: after the restart the same events are read back, seqs 1..N" '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
types = [e["type"] for e in b]
ok = a == b and "user.message" in types and "agent.message" in types and types[-1] == "session.status_idle"
ok or print("before:", [e["type"] for e in a], "after:", types)
sys.exit(0 if ok else 1)' "$TEST_TMP/before.json" "$TEST_TMP/after.json"
# PostgreSQL drops hull's connection (as a restart of the server would): a read reconnects
PSQL hull "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'hull'" >/dev/null
v1 GET "/v1/sessions/$SESSION"
expect "db-postgres: after PostgreSQL dropped the connection, a read reconnects" "s == 200 and b['status'] == 'idle'"
PSQL hull "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'hull'" >/dev/null
v1 POST "/v1/sessions/$SESSION/events" "$(user_message 'lost')"
printf "# a write on the dropped connection answered %s\n" "$(head -c 300 "$O" | tr "\n" " ")"
v1 GET "/v1/sessions/$SESSION"
expect "db-postgres: after a write on a dropped connection, the next call reconnects" "s == 200"
wait_idle "$SESSION" 90
# PostgreSQL stopped: an error (hull serve stays up), then, once it is back, the calls work again
pg_server_stop
v1 GET "/v1/sessions/$SESSION"
# (the key count cannot be read either: /v1's auth fails closed with a 503 and retry-after)
expect "db-postgres: while PostgreSQL is down a read fails" "s >= 400"
check "db-postgres: ... and hull serve stays up" kill -0 "$SERVER_PID"
pg_server_start 2>"$TEST_TMP/pg-start.err" || fail "db-postgres: the cluster starts again" "$(cat "$TEST_TMP/pg-start.err")"
v1 GET "/v1/sessions/$SESSION"
expect "db-postgres: once PostgreSQL is back, hull serve reconnects" "s == 200 and b['status'] == 'idle'"
v1 POST "/v1/sessions/$SESSION/events" "$(user_message 'again')"
expect "db-postgres: a message after the restart is sent" "s == 200"
wait_idle "$SESSION" 90
events_json "$SESSION" >"$TEST_TMP/after2.json" 2>"$TEST_TMP/v1.err"
pycheck "db-postgres: the second turn appends after the first" '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ok = b[:len(a)] == a and len(b) > len(a) and any(e["type"] == "agent.message" and "second answer" in json.dumps(e) for e in b[len(a):])
ok or print(len(a), len(b))
sys.exit(0 if ok else 1)' "$TEST_TMP/after.json" "$TEST_TMP/after2.json"
stop_server TERM 30
"$HULL" db check --db "$DB" >"$TEST_TMP/check.out" 2>&1
check "db-postgres: hull db check passes on the served database" test $? -eq 0

# ---- a SQLite hull.db moved with hull db copy ----
export HULL_HOME=$TEST_TMP/home-sqlite
mkdir -m 0711 "$HULL_HOME"
if ! serve_v1 "$TEST_TMP/serve3.log"; then
        fail "db-postgres: hull serve on SQLite starts" "$(tail -5 "$TEST_TMP/serve3.log")"
        exit 1
fi
make_session || fail "db-postgres: a session on SQLite" "$(head -c 300 "$O")"
v1 POST "/v1/sessions/$SESSION/events" "$(user_message 'on sqlite')"
wait_idle "$SESSION" 90
events_json "$SESSION" >"$TEST_TMP/sqlite.json" 2>"$TEST_TMP/v1.err"
stop_server TERM 30
"$HULL" key create --name moved >"$TEST_TMP/key.txt" 2>/dev/null
"$HULL" db copy --from "$HULL_HOME/hull.db" --to "$MOVED" >"$TEST_TMP/copy.out" 2>&1
check "db-postgres: hull db copy from hull.db into an empty PostgreSQL database" test $? -eq 0
check "db-postgres: hull db copy names the tables it copied" grep -q '^events ' "$TEST_TMP/copy.out"
"$HULL" db check --db "$MOVED" >"$TEST_TMP/check.out" 2>&1
check "db-postgres: hull db check passes on the copy" test $? -eq 0
"$HULL" db copy --from "$HULL_HOME/hull.db" --to "$MOVED" >"$TEST_TMP/copy2.out" 2>&1
rc=$?
check "db-postgres: a copy into a database that is not empty is refused" test "$rc" -eq 1
check "db-postgres: ... saying so" grep -q 'not empty' "$TEST_TMP/copy2.out"
if ! serve_v1 "$TEST_TMP/serve4.log" --db "$MOVED"; then
        fail "db-postgres: hull serve on the copy starts" "$(tail -5 "$TEST_TMP/serve4.log")"
        exit 1
fi
# the key made on SQLite was copied: /v1 wants it now
V1_KEY=$(tail -1 "$TEST_TMP/key.txt")
export V1_KEY
events_json "$SESSION" >"$TEST_TMP/moved.json" 2>"$TEST_TMP/v1.err"
pycheck "db-postgres: the copy serves the same events" '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ok = a == b and len(a) >= 3
ok or print(len(a), len(b))
sys.exit(0 if ok else 1)' "$TEST_TMP/sqlite.json" "$TEST_TMP/moved.json"
v1 GET "/v1/agents/$AGENT"
expect "db-postgres: the copy serves the agent" "s == 200 and b['id'] == '$AGENT'"
v1 GET "/v1/agents/$AGENT" "" "x-api-key: wrong"
expect "db-postgres: the copied key is what /v1 checks" "s == 401"
stop_server TERM 30
unset V1_KEY
check "db-postgres: the copy has the key" sh -c "HULL_DB='$MOVED' '$HULL' key list | grep -q moved"

# a gap made by hand is found
PSQL moved "DELETE FROM events WHERE session_id = '$SESSION' AND seq = 2"
"$HULL" db check --db "$MOVED" >"$TEST_TMP/check2.out" 2>&1
rc=$?
check "db-postgres: hull db check finds a gap (exit 1)" test "$rc" -eq 1
check "db-postgres: ... one line naming the session" test "$(grep -c "session $SESSION" "$TEST_TMP/check2.out")" -eq 1

# ---- a --db that cannot be opened: exit 2, one line, no password ----
bad_db() { # NAME DB
        local out=$TEST_TMP/bad.out rc
        "$HULL" serve --listen 127.0.0.1:0 --db "$2" >"$out" 2>&1 &
        local p=$!
        pids+=("$p")
        for _ in $(seq 1 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        wait "$p"
        rc=$?
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$out")" -eq 1 ] && ! grep -q "$PW" "$out"; then
                pass "db-postgres: $1: exit 2, one line, no password"
        else
                fail "db-postgres: $1: exit 2, one line, no password" "rc=$rc: $(head -c 300 "$out")"
        fi
}
bad_db "an unreachable server" "postgresql://postgres:$PW@/hull?host=$TEST_TMP/nowhere"
bad_db "a database that does not exist" "postgresql://postgres:$PW@/nosuchdb?host=$PG_HOST"
bad_db "a refused TCP port" "postgres://postgres:$PW@127.0.0.1:1/hull?connect_timeout=5"
bad_db "a relative path" "relative/hull.db"
bad_db "HULL_DB unreachable" "postgresql://postgres:$PW@/hull?host=$TEST_TMP/nowhere2"
HULL_DB="postgresql://postgres:$PW@/hull?host=$TEST_TMP/nowhere" "$HULL" key list >"$TEST_TMP/bad.out" 2>&1
rc=$?
check "db-postgres: hull key with an unreachable HULL_DB exits 2 without the password" \
        sh -c "[ $rc -eq 2 ] && ! grep -q '$PW' '$TEST_TMP/bad.out'"
check "db-postgres: no log or output holds the password" sh -c "! grep -rq '$PW' '$TEST_TMP'/*.log '$TEST_TMP'/*.out"
