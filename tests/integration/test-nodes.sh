# test-nodes.sh: several hull serve --node-id on one PostgreSQL (a throwaway cluster, tests/lib-pg.sh,
# stopped and removed at exit). Three nodes: a session made on node 1, its message sent on node 2
# (the turn runs there, under its lease), its stream read on node 3 (woken by NOTIFY): every event
# once, in order; Last-Event-ID resumes on another node. kill -9 of the node running a turn
# mid-tool: after the lease TTL another node ends it with session.error and session.status_idle,
# and the model's record shows the call was never run again. A second live node with one
# --node-id is refused (exit 2, one line); --node-id on SQLite is refused; a bad --db exits 2.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"
source "$(dirname "$0")/../lib-pg.sh"

why=$(pg_missing)
if [ -n "$why" ]; then
        skip "nodes" "$why"
        exit 77
fi
if ! pg_cluster_start 2>"$TEST_TMP/pg-start.err"; then
        fail "nodes: the cluster starts" "$(tr '\n' ' ' <"$TEST_TMP/pg-start.err")"
        exit 1
fi
PSQL() { "$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atqc "$1"; }
# no_lease: true once session_leases is empty (polled up to 5 s: a turn's idle can be read on
# another node a moment before its node's next commit gives the lease back)
no_lease() {
        local i
        for i in $(seq 1 50); do
                [ "$(PSQL "SELECT count(*) FROM session_leases")" = 0 ] && return 0
                sleep 0.1
        done
        return 1
}
DB=$(pg_createdb hull) || { fail "nodes: createdb" "failed"; exit 1; }
# the servers' temporary files (a kill -9 leaves its work root behind): under TEST_TMP, searchable
export TMPDIR=$TEST_TMP/tmp
mkdir -m 0711 "$TMPDIR"
export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"

# node N ID [ARGS...]: hull serve --node-id ID on the cluster; sets NPID[N], NURL[N]
declare -A NPID NURL
node() {
        local n=$1 id=$2
        shift 2
        if ! serve_v1 "$TEST_TMP/node$n.log" --db "$DB" --node-id "$id" "$@"; then
                fail "nodes: node $n ($id) starts" "$(tail -3 "$TEST_TMP/node$n.log" | tr '\n' ' ')"
                exit 1
        fi
        NPID[$n]=$SERVER_PID
        NURL[$n]=$URL
}
at() { URL=${NURL[$1]}; } # the node the next v1 calls go to

# ---- three nodes: create on 1, send on 2, stream from 3 ----
# the model answers after 700 ms; its 5th answer (the turn a message on another node waits behind) after 3 s
if ! mock_start '{"then": "repeat", "steps": [{"text": "hello from a node", "delay_ms": 700, "times": 4},
        {"text": "hello from a node", "delay_ms": 3000}, {"text": "hello from a node", "delay_ms": 700}]}' --log-level error \
        --record "$TEST_TMP/mock.rec"; then
        fail "nodes: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
node 1 n1
node 2 n2
node 3 n3 --capacity 8
check "nodes: each node has its row (id, advertise URL, capacity, tiers, heartbeat)" test \
        "$(PSQL "SELECT count(*) FROM nodes WHERE advertise LIKE 'http://127.0.0.1:%' AND heartbeat_at > now() - interval '10 seconds' AND tiers LIKE '[%'")" = 3
check "nodes: without --advertise a node's URL is the address it listens at" test \
        "$(PSQL "SELECT advertise FROM nodes WHERE id = 'n1'")" = "${NURL[1]}"
check "nodes: --capacity is registered" test "$(PSQL "SELECT capacity FROM nodes WHERE id = 'n3'")" = 8
at 1
make_session || { fail "nodes: a session is made on node 1" "$(head -c 300 "$O")"; exit 1; }
pass "nodes: a session is made on node 1"
: >"$TEST_TMP/sse3.jsonl"
"$PY" "$V1_CLIENT" sse "${NURL[3]}/v1/sessions/$SESSION/events/stream" "$TEST_TMP/sse3.jsonl" &
SSE_PID=$!
pids+=("$SSE_PID")
# the stream must be open before the message (without Last-Event-ID it starts at the log's end):
# 30 s at most, as for the frames below (node 3 learns of node 2's events through PostgreSQL)
for _ in $(seq 1 600); do grep -q '"status"' "$TEST_TMP/sse3.jsonl" && break; sleep 0.05; done
at 2
v1 POST "/v1/sessions/$SESSION/events" "$(user_message 'hi')"
expect "nodes: the message is sent on node 2" "s == 200"
at 1
wait_turn_idle "$SESSION" 60
v1 GET "/v1/sessions/$SESSION"
expect "nodes: node 1 sees the turn end idle" "s == 200 and b['status'] == 'idle'"
events_json "$SESSION" >"$TEST_TMP/ev.json" 2>"$TEST_TMP/v1.err"
N=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$TEST_TMP/ev.json")
for _ in $(seq 1 600); do
        [ "$(grep -c '"event": "[a-z]' "$TEST_TMP/sse3.jsonl")" -ge "$N" ] && break
        sleep 0.05
done
kill "$SSE_PID" 2>/dev/null
grep -q "event=v1-turn\|session=$SESSION" "$TEST_TMP/node2.log" || true
pycheck "nodes: node 3's stream got every event once, in order, as logged (the turn ran on node 2)" '
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]) if "\"event\"" in l]
fr = [f for f in fr if f["event"] not in ("ping", None)]
ev = json.load(open(sys.argv[2]))
got = [(int(f["id"]), f["event"], json.loads(f["data"])["id"]) for f in fr]
want = [(i + 1, e["type"], e["id"]) for i, e in enumerate(ev)]
types = [e["type"] for e in ev]
ok = got == want and "agent.message" in types and types[-1] == "session.status_idle"
ok or print("streamed:", got, "listed:", want)
sys.exit(0 if ok else 1)' "$TEST_TMP/sse3.jsonl" "$TEST_TMP/ev.json"
check "nodes: the turn's lease is given up when it ends" no_lease
: >"$TEST_TMP/sse1.jsonl"
"$PY" "$V1_CLIENT" sse "${NURL[1]}/v1/sessions/$SESSION/events/stream" "$TEST_TMP/sse1.jsonl" "last-event-id: 2" &
SSE_PID=$!
pids+=("$SSE_PID")
for _ in $(seq 1 600); do
        [ "$(grep -c '"event": "[a-z]' "$TEST_TMP/sse1.jsonl")" -ge $((N - 2)) ] && break
        sleep 0.05
done
kill "$SSE_PID" 2>/dev/null
pycheck "nodes: Last-Event-ID 2 on node 1 resumes with seq 3..N, no gap, no duplicate" '
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]) if "\"event\"" in l]
got = [int(f["id"]) for f in fr if f["event"] not in ("ping", None)]
n = len(json.load(open(sys.argv[2])))
got == list(range(3, n + 1)) or print("resumed:", got, "n:", n)
sys.exit(0 if got == list(range(3, n + 1)) else 1)' "$TEST_TMP/sse1.jsonl" "$TEST_TMP/ev.json"

# ---- one session, messages on every node at once: one log, gap-free, one answer per turn ----
at 1
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
S2=$(field id)
senders=()
for n in 1 2 3; do
        "$PY" "$V1_CLIENT" call POST "${NURL[$n]}/v1/sessions/$S2/events" "$(user_message "from $n")" >"$TEST_TMP/par$n.out" 2>&1 &
        senders+=($!)
done
wait "${senders[@]}"
# the session is idle for a moment between two of the three turns (the node that holds the lease
# then takes the next queued message): wait until three answers are in and the log ends idle,
# at most 60 s
for _ in $(seq 1 300); do
        events_json "$S2" >"$TEST_TMP/ev2.json" 2>"$TEST_TMP/v1.err"
        "$PY" -c '
import json, sys
t = [e["type"] for e in json.load(open(sys.argv[1]))]
sys.exit(0 if t.count("agent.message") >= 3 and t[-1] == "session.status_idle" else 1)' "$TEST_TMP/ev2.json" 2>/dev/null && break
        sleep 0.2
done
pycheck "nodes: three nodes sending at once: every message taken (200), one turn each, one answer each, in order" '
import json, sys
for f in sys.argv[2:]:
    st = int(open(f).readline())
    if st != 200: print(f, "answered", open(f).read()[:300]); sys.exit(1)
ev = json.load(open(sys.argv[1]))
types = [e["type"] for e in ev]
ids = [e["id"] for e in ev]
users = [e for e in ev if e["type"] == "user.message"]
ok = types.count("user.message") == 3 and types.count("agent.message") == 3 and len(ids) == len(set(ids)) \
     and all(u.get("processed_at") for u in users) and types.count("session.status_idle") == types.count("session.status_running") \
     and types[-1] == "session.status_idle"
ok or print(types)
sys.exit(0 if ok else 1)' "$TEST_TMP/ev2.json" "$TEST_TMP"/par1.out "$TEST_TMP"/par2.out "$TEST_TMP"/par3.out
printf '# messages queued on one node and run by the node that held the turn: %s\n' "$(cat "$TEST_TMP"/node*.log | grep -c 'event=node-picked-up')"
# a message to node 2 while node 1 runs the turn (the model answers after 3 s): queued in the
# log, run by node 1 when its turn ends
at 1
v1 POST "/v1/sessions/$S2/events" "$(user_message 'first on node 1')"
expect "nodes: a message on node 1 starts a turn there" "s == 200"
at 2
v1 POST "/v1/sessions/$S2/events" "$(user_message 'then on node 2')"
expect "nodes: a message on node 2 meanwhile is taken, queued (processed_at null)" "s == 200 and b['data'][0]['processed_at'] is None"
# sent to node 2, answered by the node that holds the session's sandbox (forwarded: x-hull-node)
FWD=$("$PY" -c 'import json,sys; f=open(sys.argv[1]); f.readline(); print(json.load(f)["headers"].get("x-hull-node", ""))' "$O")
at 1
# idle between the two turns for a moment (the lease holder then takes the queued message): wait
# until the queued message's turn has answered and ended, at most 60 s
for _ in $(seq 1 300); do
        events_json "$S2" >"$TEST_TMP/ev3.json" 2>"$TEST_TMP/v1.err"
        "$PY" -c '
import json, sys
ev = json.load(open(sys.argv[1]))
t = [(e["type"], json.dumps(e.get("content", ""))) for e in ev]
i = [k for k, (ty, c) in enumerate(t) if ty == "user.message" and "then on node 2" in c]
after = [ty for ty, c in t[i[0]:]] if i else []
# (the first turn ends after the queued message was logged: its idle is not the answer, so the
# queued message processed too)
taken = all(e.get("processed_at") for e in ev if e["type"] == "user.message")
sys.exit(0 if taken and "agent.message" in after and after[-1] == "session.status_idle" else 1)' "$TEST_TMP/ev3.json" 2>/dev/null && break
        sleep 0.2
done
pycheck "nodes: ... and answered after the turn it waited for, by the node that ran it" '
import json, sys
ev = json.load(open(sys.argv[1]))
t = [(e["type"], json.dumps(e.get("content", ""))) for e in ev]
i = next(k for k, (ty, c) in enumerate(t) if ty == "user.message" and "then on node 2" in c)
after = [ty for ty, c in t[i:]]
ok = after.count("agent.message") >= 1 and after[-1] == "session.status_idle" and all(e.get("processed_at") for e in ev if e["type"] == "user.message")
ok or print([ty for ty, c in t])
sys.exit(0 if ok else 1)' "$TEST_TMP/ev3.json"
# node 2 forwards the message to the node that holds the sandbox (the turn runs there, with its
# files), or holds the sandbox itself (the turn ran there); queued on node 2 with no sandbox known,
# node 1 picks it up from the log
HOLDER=$(PSQL "SELECT node_id FROM sandbox_owners WHERE session_id = '$S2'")
check "nodes: node 2's message reached the node running the turn: forwarded to the sandbox's node ($FWD), node 2 holds it ($HOLDER) or node 1 picked it up" \
        sh -c "[ -n '$FWD' ] || [ '$HOLDER' = n2 ] || grep -q 'event=node-picked-up session=$S2' '$TEST_TMP/node1.log'"
# the session's title changed on node 3 while node 2 runs its turn: the turn's status changes keep it
at 2
v1 POST "/v1/sessions/$S2/events" "$(user_message 'a turn on node 2')"
at 3
v1 POST "/v1/sessions/$S2" '{"title": "renamed on node 3"}'
expect "nodes: the title is changed on node 3 during node 2's turn" "s == 200 and b['title'] == 'renamed on node 3'"
at 1
# the turn's idle logged first: node 1 can read the status idle before node 2's turn has logged
# its running (a07100a), and a second's pause was no bound on that
wait_turn_idle "$S2" 60
wait_idle "$S2" 60
expect "nodes: ... and after the turn ended on node 2 the session is idle with the new title" "s == 200 and b['status'] == 'idle' and b['title'] == 'renamed on node 3'"
check "nodes: no lease is left once every turn ended" no_lease
"$HULL" db check --db "$DB" >"$TEST_TMP/check.out" 2>&1
check "nodes: the store's logs are gap-free (hull db check)" test $? -eq 0

# ---- what made a node slow, counted (issue 21; not timed): PostgreSQL logs every statement for a
# while. A GET of a session a node read before is answered from memory (no statement), and the
# API-key count too, while no NOTIFY for it came; a turn writes the session row inside its appends
# (no UPDATE of its own). A write on one node is in that node's next GET, and in another node's
# once its NOTIFY came (store-pg-cache.c) ----
PSQL "ALTER SYSTEM SET log_statement = 'all'" && PSQL "ALTER SYSTEM SET log_line_prefix = '%p '" &&
        PSQL "SELECT pg_reload_conf()" >/dev/null
sleep 0.3
stmts() { tail -c +$(($1 + 1)) "$PG_DIR/server.log" | grep -c "$2"; } # OFFSET PATTERN: statements logged since
at 1
v1 GET "/v1/sessions/$S2" # read once: kept
off=$(stat -c %s "$PG_DIR/server.log")
for _ in $(seq 1 40); do v1 GET "/v1/sessions/$S2"; done
expect "nodes: GETs of a session on node 1 answered" "s == 200 and b['title'] == 'renamed on node 3'"
reads=$(stmts "$off" "SELECT body FROM sessions WHERE id") keys=$(stmts "$off" "count(\*) FROM api_keys")
check "nodes: 40 GETs of a session read before on one node: at most 1 read of the row, 1 of the key count (got $reads, $keys)" \
        test "$reads" -le 1 -a "$keys" -le 1
at 3
v1 POST "/v1/sessions/$S2" '{"title": "renamed again on node 3"}'
v1 GET "/v1/sessions/$S2"
expect "nodes: a title changed on node 3 is in node 3's next GET" "s == 200 and b['title'] == 'renamed again on node 3'"
at 1
for _ in $(seq 1 20); do
        v1 GET "/v1/sessions/$S2"
        "$PY" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])).get("title") != "renamed again on node 3")' "$O" 2>/dev/null && break
        sleep 0.05
done
expect "nodes: ... and in node 1's within a second (its NOTIFY)" "s == 200 and b['title'] == 'renamed again on node 3'"
off=$(stat -c %s "$PG_DIR/server.log")
at 2
v1 POST "/v1/sessions/$S2/events" "$(user_message 'a counted turn')"
sleep 0.3 # running by now (the model answers after 700 ms or more)
wait_idle "$S2" 60
ups=$(stmts "$off" "UPDATE sessions SET created_ms") withs=$(stmts "$off" "body = \$6, status = \$7")
appends=$(stmts "$off" "INSERT INTO events")
check "nodes: a turn writes its session row only inside its appends: no UPDATE of its own ($ups), $withs of $appends appends carry it" \
        test "$ups" = 0 -a "$withs" -ge 2 -a "$appends" -ge "$withs"
# user.message, then running with the model request's start (held: v1_log_hold_locked), then its
# end, agent.message, session.usage and the idle in one append: 3 commits of events, 7 before
check "nodes: a one-request turn's 7 events take at most 3 appends (got $appends)" test "$appends" -le 3
# every commit waits for PostgreSQL's WAL flush (fsync): the turn's write transactions, counted
# (tests/integration/pg_commits.py: those naming the session; not the nodes' heartbeats). The lease
# is claimed in the user.message's append and given back in a statement of its own: 4 commits a
# turn (the 3 appends and that one), 8 before (issue 21). The conversation is written once, in the
# append that logs the idle (the events, the session row and the conversation in one commit: a
# node that dies after it leaves the turn in the conversation too), not with the release, which
# carried it before (branch nodeconv)
"$PY" "$(dirname "$0")/pg_commits.py" "$PG_DIR/server.log" "$off" "$S2" >"$TEST_TMP/commits.json"
commits=$("$PY" -c '
import json, sys
c = json.load(open(sys.argv[1]))
k = c["by_kind"]
conv = [x for x in k if "conversations" in x.split("+")]
print(c["writes"], k.get("events+session_leases+sessions", 0), sum(k[x] for x in conv),
      sum(k[x] for x in conv if {"events", "sessions"} <= set(x.split("+"))), k.get("session_leases", 0))' "$TEST_TMP/commits.json")
read -r writes claimed convs with_idle released <<<"$commits"
check "nodes: a one-request turn commits at most 4 write transactions (got $writes: $(cat "$TEST_TMP/commits.json"))" \
        test "$writes" -ge 1 -a "$writes" -le 4
check "nodes: ... the lease claimed in the message's append ($claimed), given back on its own ($released)" \
        test "$claimed" = 1 -a "$released" = 1
check "nodes: ... the conversation written once ($convs), in an append of events with the session row ($with_idle)" \
        test "$convs" = 1 -a "$with_idle" = 1
# the round trips of a turn (its end watched with psql, not a GET), the statements naming the
# session counted (tests/integration/pg_commits.py). Sent to another node than the one that
# holds the sandbox, forwarded there: the first reads the holder with the session's row (one
# statement; its events not listed when the send goes elsewhere), its forward's thread the holder
# again; there the row with its last seq, the claiming append, two appends with their status
# webhooks queued in them, the release: 7 (9 before, 12 before that). Sent
# to the holder itself: the holder with the row and its last seq (one statement, taken by the
# send's own sync), the claiming append, two appends, the release: 5 (8 before). Each of them
# prepared once on its connection (pg_exec_hot: bound and run, not parsed and planned again at
# every turn) (issue 21)
turn_counted() { # NODE TEXT: the statements naming S2 of one turn sent to node NODE, in $TEST_TMP/trips.json
        local off i
        off=$(stat -c %s "$PG_DIR/server.log")
        at "$1"
        v1 POST "/v1/sessions/$S2/events" "$(user_message "$2")"
        sleep 0.3
        for i in $(seq 1 100); do
                [ "$(PSQL "SELECT status FROM sessions WHERE id = '$S2'")" = idle ] && no_lease && break
                sleep 0.1
        done
        "$PY" "$(dirname "$0")/pg_commits.py" "$PG_DIR/server.log" "$off" "$S2" >"$TEST_TMP/trips.json"
        "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["statements"])' "$TEST_TMP/trips.json"
}
holder=$(PSQL "SELECT node_id FROM sandbox_owners WHERE session_id = '$S2'")
other=1
[ "$holder" != n1 ] || other=2
trips=$(turn_counted "$other" 'a turn of round trips counted')
check "nodes: a one-request turn sent to another node than its sandbox's sends at most 7 statements naming its session (got $trips: $(cat "$TEST_TMP/trips.json"))" \
        test "$trips" -ge 5 -a "$trips" -le 7
holder=$(PSQL "SELECT node_id FROM sandbox_owners WHERE session_id = '$S2'")
woff=$(stat -c %s "$PG_DIR/server.log")
trips=$(turn_counted "${holder#n}" 'a turn sent to its sandbox node')
check "nodes: a one-request turn sent to its sandbox's node ($holder) sends at most 5 statements naming its session (got $trips: $(cat "$TEST_TMP/trips.json"))" \
        test "$trips" -ge 4 -a "$trips" -le 5
unprepared=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["unprepared"])' "$TEST_TMP/trips.json")
check "nodes: ... each of them run prepared (got $unprepared not)" test "$unprepared" = 0
# the status webhooks go in the appends that log the status changes (their parameters), none in
# a statement of its own (test-store-node: rows only for the subscriptions that want the type)
wh_own=$(stmts "$woff" "INSERT INTO webhook_deliveries (event_id, webhook_id, created_ms, due_ms, attempts, body) SELECT \$1")
wh_in=$(tail -c +$((woff + 1)) "$PG_DIR/server.log" | grep "DETAIL" | grep -c 'session.status_run_started\|session.status_idled')
check "nodes: ... its status webhooks queued in its appends ($wh_in), none on their own ($wh_own)" \
        test "$wh_in" -ge 2 -a "$wh_own" = 0
PSQL "ALTER SYSTEM RESET log_statement" && PSQL "ALTER SYSTEM RESET log_line_prefix" &&
        PSQL "SELECT pg_reload_conf()" >/dev/null

# ---- a model request's start is committed while the request goes out (issue 21: one WAL flush
# fewer before the answer): the start's append (it queues the status webhooks: an INSERT into
# webhook_deliveries, rows or none) made 4 s slow by a statement trigger there; the message's
# append has none, and the delivery workers only update and delete. The model is asked all the
# same, before the start is logged; the request's end waits for the start, and the log stays in
# order. (A lock on the table would not do: the node's 4 delivery workers would each wait on it
# with one of its pool's 4 connections.) ----
PSQL "CREATE FUNCTION hull_test_slow() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN PERFORM pg_sleep(4); RETURN NULL; END \$\$"
PSQL "CREATE TRIGGER hull_test_slow BEFORE INSERT ON webhook_deliveries FOR EACH STATEMENT EXECUTE FUNCTION hull_test_slow()"
asked=$(wc -l <"$TEST_TMP/mock.rec")
holder=$(PSQL "SELECT node_id FROM sandbox_owners WHERE session_id = '$S2'")
at "${holder#n}"
# in the background: its answer can wait for the session's lock, which the start's append holds
v1 POST "/v1/sessions/$S2/events" "$(user_message 'a start committed while the model is asked')" &
post_pid=$!
for _ in $(seq 1 60); do
        [ "$(wc -l <"$TEST_TMP/mock.rec")" -gt "$asked" ] && break
        sleep 0.05
done
now_asked=$(wc -l <"$TEST_TMP/mock.rec")
msg=$(PSQL "SELECT max(seq) FROM events WHERE session_id = '$S2' AND type = 'user.message' AND body LIKE '%a start committed while%'")
started=$(PSQL "SELECT count(*) FROM events WHERE session_id = '$S2' AND type = 'span.model_request_start' AND seq > coalesce(NULLIF('$msg', '')::bigint, 0)")
check "nodes: the model is asked while the request's start is still being committed (asked $asked -> $now_asked, message at seq '$msg', start logged $started)" \
        test "$now_asked" -gt "$asked" -a -n "$msg" -a "$started" = 0
wait "$post_pid"
expect "nodes: ... the message is taken" "s == 200"
ended() { [ "$(PSQL "SELECT type FROM events WHERE session_id = '$S2' AND seq > coalesce(NULLIF('$msg', '')::bigint, 0) ORDER BY seq DESC LIMIT 1")" = session.status_idle ]; }
for _ in $(seq 1 300); do ended && break; sleep 0.1; done
check "nodes: ... the turn ends (its idle logged after the message)" ended
PSQL "DROP TRIGGER hull_test_slow ON webhook_deliveries" && PSQL "DROP FUNCTION hull_test_slow()"
events_json "$S2" >"$TEST_TMP/start-async.json" 2>"$TEST_TMP/v1.err"
pycheck "nodes: ... its events in order: the message, running, the request's start, its end, the answer, the idle" '
import json, sys
evs = json.load(open(sys.argv[1]))
last = max(i for i, e in enumerate(evs) if e["type"] == "user.message")
types = [e["type"] for e in evs[last:]]
want = ["user.message", "session.status_running", "span.model_request_start", "span.model_request_end",
        "agent.message", "session.usage", "session.status_idle"]
types == want or print(types)
sys.exit(0 if types == want else 1)' "$TEST_TMP/start-async.json"

# ---- PostgreSQL stopped during a turn (pg_ctl stop -m fast), then started again: calls in
# between get 503 with retry-after, every node reconnects by itself (no restart), the turn ends
# cleanly, nothing acknowledged is lost, the log stays gap-free ----
events_json "$S2" >"$TEST_TMP/before-outage.json" 2>"$TEST_TMP/v1.err"
at 2
v1 POST "/v1/sessions/$S2/events" "$(user_message 'across the outage')"
expect "nodes: a message sent on node 2 just before PostgreSQL stops is taken" "s == 200"
pg_server_stop
at 1
v1 GET "/v1/sessions/$S2"
expect "nodes: PostgreSQL stopped: a read on node 1 gets 503 overloaded_error with retry-after" \
        "s == 503 and h.get('retry-after') and b['error']['type'] == 'overloaded_error'"
at 3
v1 POST "/v1/sessions/$S2/events" "$(user_message 'while down')"
expect "nodes: ... a message on node 3 gets 503 with retry-after (nothing taken)" "s == 503 and h.get('retry-after')"
sleep 1
pg_server_start 2>"$TEST_TMP/pg-start.err" || fail "nodes: PostgreSQL starts again" "$(cat "$TEST_TMP/pg-start.err")"
at 1
for _ in $(seq 1 50); do v1 GET "/v1/sessions/$S2"; grep -q '^200' "$O" && break; sleep 0.2; done
expect "nodes: once PostgreSQL is back node 1 serves again without a restart" "s == 200"
check "nodes: ... and no node restarted" kill -0 "${NPID[1]}" "${NPID[2]}" "${NPID[3]}"
wait_turn_idle "$S2" 60 # the turn on node 2 logged its end (node 1's status alone can read idle before)
wait_idle "$S2" 60
expect "nodes: the turn across the outage ended: the session is idle" "s == 200 and b['status'] == 'idle'"
events_json "$S2" >"$TEST_TMP/after-outage.json" 2>"$TEST_TMP/v1.err"
pycheck "nodes: every event logged before the outage is still there, the message sent before it too, the refused one not" '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
text = json.dumps(b[len(a):])
ok = b[:len(a)] == a and "across the outage" in text and "while down" not in text and b[-1]["type"] == "session.status_idle"
ok or print([e["type"] for e in b[len(a):]])
sys.exit(0 if ok else 1)' "$TEST_TMP/before-outage.json" "$TEST_TMP/after-outage.json"
at 2
v1 POST "/v1/sessions/$S2/events" "$(user_message 'after the outage')"
expect "nodes: node 2 takes a new message after the outage" "s == 200"
wait_idle "$S2" 60
check "nodes: no lease is left after the outage" no_lease
"$HULL" db check --db "$DB" >"$TEST_TMP/check2.out" 2>&1
check "nodes: after the outage the logs are still gap-free (hull db check)" test $? -eq 0
