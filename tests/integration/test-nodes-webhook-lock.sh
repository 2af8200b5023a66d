# test-nodes-webhook-lock.sh: a node (hull serve --node-id on a throwaway PostgreSQL, tests/lib-pg.sh)
# keeps answering its API while its webhook outbox is locked. Another session holds
# `LOCK TABLE webhook_deliveries IN EXCLUSIVE MODE` (cancelled by the test; 600 s at most) with
# deliveries due; the node's delivery threads wait on that lock, at most WEBHOOK_STORE_CALLS (1) of
# them in a store call, so at most one of the node's pooled connections (STORE_PG_CONNS, 4) waits
# there: sessions are listed and read, a user.message is logged, its events listed, all answered
# while the lock is still held (an order, not a time). Then the lock goes and every delivery is
# sent: the three queued under it and the turn's two status webhooks.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"
source "$(dirname "$0")/../lib-pg.sh"

why=$(pg_missing)
if [ -n "$why" ]; then
        skip "webhook lock" "$why"
        exit 77
fi
if ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "webhook lock: the cluster starts" "$(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        exit 1
fi
PSQL() { "$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atqc "$1"; }
DB=$(pg_createdb hull) || { fail "webhook lock: createdb" "failed"; exit 1; }
export TMPDIR=$TEST_TMP/tmp
mkdir -m 0711 "$TMPDIR"
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
# the receiver is on loopback: admitted by the egress guard
printf '{"web": {"allow_cidrs": ["127.0.0.0/8"]}}\n' >"$HULL_HOME/config.json"

# the receiver: each POST's webhook-id and data.type, one line each, answered 200
: >"$TEST_TMP/recv.txt"
"$PY" - "$TEST_TMP/recv.port" "$TEST_TMP/recv.txt" <<'PYEOF' 2>"$TEST_TMP/recv.err" &
import http.server, json, sys
port_file, out = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        with open(out, "a") as f:
            f.write("%s %s\n" % (self.headers.get("webhook-id"), json.loads(body)["data"]["type"]))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_file + ".tmp", "w").write(str(s.server_address[1]))
__import__("os").rename(port_file + ".tmp", port_file)
s.serve_forever()
PYEOF
pids+=("$!")
wait_for_file "$TEST_TMP/recv.port" "${pids[-1]}"
RECV=http://127.0.0.1:$(cat "$TEST_TMP/recv.port")/hook

if ! mock_start '{"then": "repeat", "steps": [{"text": "hello while locked"}]}' --log-level error; then
        fail "webhook lock: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/node.log" --db "$DB" --node-id n1; then
        fail "webhook lock: the node starts" "$(tail -3 "$TEST_TMP/node.log" | tr '\n' ' ')"
        exit 1
fi
make_session || { fail "webhook lock: a session is made" "$(head -c 300 "$O")"; exit 1; }
v1 POST /v1/webhooks "{\"url\": \"$RECV\", \"event_types\": [\"session.status_run_started\", \"session.status_idled\"]}"
WH=$(field id 2>/dev/null)
expect "webhook lock: a webhook is subscribed" "s == 200 and b['id'].startswith('wh')"
# disabled while its test deliveries are queued: they wait in the outbox, due, until it is enabled
v1 POST "/v1/webhooks/$WH" '{"status": "disabled"}'
for i in 1 2 3; do v1 POST "/v1/webhooks/$WH/test" '{}'; done
expect "webhook lock: test deliveries are queued" "s == 200"
PSQL "SELECT event_id FROM webhook_deliveries WHERE webhook_id = '$WH' ORDER BY event_id" >"$TEST_TMP/queued.txt"
check "webhook lock: three deliveries wait in the outbox" test "$(wc -l <"$TEST_TMP/queued.txt")" = 3

# the lock, held by another session until the test cancels it (600 s at most: the checks made while
# it is held may take long on a busy machine, and a lock gone before them fails them)
printf '%s\n' 'SELECT pg_backend_pid();' 'BEGIN;' 'LOCK TABLE webhook_deliveries IN EXCLUSIVE MODE;' '\echo locked' \
        'SELECT pg_sleep(600);' 'ROLLBACK;' '\echo released' |
        "$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atq >"$TEST_TMP/locker.out" 2>&1 &
LOCKER=$!
pids+=("$LOCKER")
for _ in $(seq 1 200); do grep -q '^locked$' "$TEST_TMP/locker.out" && break; sleep 0.05; done
LOCKER_PID=$(head -1 "$TEST_TMP/locker.out")
held() { # the lock is still held (granted to the locking session)
        [ "$(PSQL "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'webhook_deliveries' AND l.mode = 'ExclusiveLock' AND l.granted AND l.pid = $LOCKER_PID")" = 1 ]
}
check "webhook lock: another session holds the outbox locked" held
waiting() { # the node's connections waiting on the lock with a claim
        PSQL "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'hull' AND wait_event_type = 'Lock' AND query LIKE 'UPDATE webhook_deliveries SET due_ms%'"
}

# enabled: its deliveries are due; the node's threads (woken, or at their next look) claim and wait
v1 POST "/v1/webhooks/$WH" '{"status": "enabled"}'
expect "webhook lock: the webhook is enabled while the outbox is locked" "s == 200 and b['status'] == 'enabled'"
for _ in $(seq 1 200); do [ "$(waiting)" -ge 1 ] && break; sleep 0.05; done
# every thread has looked by now: each looks at least every WEBHOOK_POLL_MS (1 s)
sleep 2.5
n=$(waiting)
check "webhook lock: one of the node's connections waits on the lock with a claim, no more (got $n; 4 threads)" test "$n" = 1

v1 GET /v1/sessions
expect "webhook lock: the sessions are listed while the outbox is locked" "s == 200 and any(x['id'] == '$SESSION' for x in b['data'])"
check "webhook lock: ... the lock still held when the list was answered" held
v1 GET "/v1/sessions/$SESSION"
expect "webhook lock: the session is read while the outbox is locked" "s == 200 and b['id'] == '$SESSION'"
v1 GET "/v1/webhooks/$WH"
expect "webhook lock: the webhook is read while the outbox is locked" "s == 200 and b['status'] == 'enabled'"
v1 POST "/v1/sessions/$SESSION/events" "$(user_message 'while the outbox is locked')"
expect "webhook lock: a user.message is logged while the outbox is locked" "s == 200"
v1 GET "/v1/sessions/$SESSION/events"
expect "webhook lock: the session's events are listed, the message among them" \
        "s == 200 and any(e['type'] == 'user.message' for e in b['data'])"
v1 GET /v1/agents
expect "webhook lock: the agents are listed" "s == 200 and len(b['data']) == 1"
check "webhook lock: every answer above came while the lock was still held" held
not_released() { ! grep -q '^released$' "$TEST_TMP/locker.out"; }
check "webhook lock: ... and the locking session still waits in its pg_sleep" not_released

# the lock goes: the turn (its start waited for the lock) ends and every delivery is sent
PSQL "SELECT pg_cancel_backend($LOCKER_PID)" >/dev/null 2>&1
for _ in $(seq 1 200); do grep -q '^released$' "$TEST_TMP/locker.out" && break; sleep 0.05; done
check "webhook lock: the lock is released" grep -q '^released$' "$TEST_TMP/locker.out"
check "webhook lock: the turn ends once the lock is gone" wait_turn_idle "$SESSION" 60
outbox_empty() {
        local i
        for i in $(seq 1 300); do
                [ "$(PSQL "SELECT count(*) FROM webhook_deliveries")" = 0 ] && return 0
                sleep 0.1
        done
        return 1
}
check "webhook lock: the outbox empties" outbox_empty
pycheck "webhook lock: every delivery went out: the three queued under the lock and the turn's two" '
import sys
got = [l.split() for l in open(sys.argv[1]) if l.strip()]
ids = {g[0] for g in got}
queued = [l.strip() for l in open(sys.argv[2]) if l.strip()]
types = [g[1] for g in got]
ok = all(q in ids for q in queued) and "session.status_run_started" in types and "session.status_idled" in types
ok or print("received:", got, "queued:", queued)
sys.exit(0 if ok else 1)' "$TEST_TMP/recv.txt" "$TEST_TMP/queued.txt"
check "webhook lock: no delivery was dropped nor failed" test "$(grep -c 'event=webhook_dropped\|event=webhook_retry' "$TEST_TMP/node.log")" = 0
check "webhook lock: the node is still running" kill -0 "$SERVER_PID"
