#!/usr/bin/env bash
# bench/nodes.sh: hull serve on PostgreSQL (issue 21), beside hull serve on SQLite, in one run:
#   1. a /v1 turn (one model call, mock model), median of TURN_ROUNDS, one node on PostgreSQL vs
#      one node on SQLite, interleaved ROUNDS times (target: PostgreSQL ≤ 1.5× SQLite)
#   2. GET /v1/sessions/{id} (wrk -t2 -c16 -d$DURATION), the same two, interleaved (target ≥ 0.5×)
#   3. event fan-out: SUBSCRIBERS SSE streams on node B, SSE_TURNS turns run on node A: the delay
#      from an event's processed_at (stamped on A) to its receipt on B's streams, p50 and p99
#   4. turns per second of 1, 2 and 3 nodes on one PostgreSQL: LOAD_SESSIONS sessions x
#      LOAD_TURNS turns at once, spread over the nodes (tests/integration/nodes_load.py)
# PostgreSQL: a throwaway cluster (tests/lib-pg.sh: initdb in /tmp, a unix socket, fsync on).
# Environment: BUILD (build), ROUNDS (3), TURN_ROUNDS (30), DURATION (5s), SUBSCRIBERS (1000),
# SSE_TURNS (5), LOAD_SESSIONS (60), LOAD_TURNS (3); BASE_HULL (a hull binary, e.g. main's): its node
# on its own database of the same cluster, its turn interleaved in the same rounds (before/after);
# TURNS_ONLY=1: only part 1 (the turns, no GET, fan-out or node curve), and each round's event
# timeline (median arrival of each event after the POST) of every node; with TURN_TIMES=1 each
# turn's time too. PG_LOG=FILE: PostgreSQL logs every statement with its time, and its checkpoints,
# copied to FILE at the end (slows PostgreSQL: for where the time goes, not for the ratio).
# Results on stdout and in $BUILD/bench-nodes.log. See docs/BENCHMARKS.md.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$top/build}
ROUNDS=${ROUNDS:-3} TURN_ROUNDS=${TURN_ROUNDS:-30} DURATION=${DURATION:-5s}
SUBSCRIBERS=${SUBSCRIBERS:-1000} SSE_TURNS=${SSE_TURNS:-5} LOAD_SESSIONS=${LOAD_SESSIONS:-60} LOAD_TURNS=${LOAD_TURNS:-3}
die() { echo "nodes.sh: $*" >&2; exit 1; }
command -v wrk >/dev/null || die "wrk is not installed (apt-get install wrk; bench/v1.sh installs it)"
# shellcheck source=../tests/lib-pg.sh
. "$top/tests/lib-pg.sh"
D=$(mktemp -d /tmp/hull-bench-nodes-XXXXXX)
chmod 0711 "$D"
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
        [ -z "${PG_LOG:-}" ] || cp "$PG_DIR/server.log" "$PG_LOG" 2>/dev/null || true
        pg_cluster_stop
        rm -rf "$D"
}
trap cleanup EXIT
pg_cluster_start || die "no PostgreSQL cluster"
trap cleanup EXIT # (pg_cluster_start set its own)
if [ -n "${PG_LOG:-}" ]; then # every statement with its time, and the checkpoints, in PG_LOG
        "$PG_BIN/psql" -h "$PG_HOST" -U postgres -qAtc "ALTER SYSTEM SET log_min_duration_statement = 0" \
                -c "ALTER SYSTEM SET log_checkpoints = on" -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] '" \
                -c "SELECT pg_reload_conf()" >/dev/null
fi
DB=$(pg_createdb hull) || die "createdb failed"
cp "$BUILD/hull" "$D/hull"
HULL=$D/hull
unset HULL_API_KEY HULL_TOKEN OPENAI_API_KEY ANTHROPIC_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER HULL_DB 2>/dev/null || true
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true
export TMPDIR=$D

echo '{"then": "repeat", "steps": [{"text": "done", "usage": {"input_tokens": 50, "output_tokens": 3}}]}' >"$D/mock.json"
"$HULL" mock-model --script "$D/mock.json" --listen 127.0.0.1:0 --log-level error >"$D/mock.out" 2>"$D/mock.err" &
pids+=($!)
MURL=""
for _ in $(seq 1 600); do
        MURL=$(head -1 "$D/mock.out" 2>/dev/null | sed -n 's|^listening on \(http://127\.0\.0\.1:[0-9][0-9]*\)$|\1|p' || true)
        [ -n "$MURL" ] && break
        sleep 0.05
done
[ -n "$MURL" ] || die "hull mock-model did not start: $(cat "$D/mock.err")"

# serve NAME ARGS...: a hull serve with its own HULL_HOME; its URL in URL_NAME, pid in PID_NAME
serve() {
        local name=$1 port
        shift
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        mkdir -m 0711 "$D/home-$name"
        HULL_HOME=$D/home-$name "$HULL" serve --listen "127.0.0.1:$port" --log-level warn --no-kernel-tier \
                --provider anthropic --base-url "$MURL" --api-key k --model mock-model --capacity 256 \
                --max-connections $((SUBSCRIBERS + 256)) --max-connections-per-address 256 "$@" >"$D/$name.log" 2>&1 &
        pids+=($!)
        printf -v "PID_$name" %s $!
        for _ in $(seq 1 600); do
                curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break
                sleep 0.05
        done
        curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" || die "hull serve $name did not start: $(tail -3 "$D/$name.log")"
        printf -v "URL_$name" %s "http://127.0.0.1:$port"
}
# --capacity is a node flag: on SQLite it stays at its default (no nodes)
serve_sqlite() { # like serve, without --capacity
        local name=$1 port
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        mkdir -m 0711 "$D/home-$name"
        HULL_HOME=$D/home-$name "$HULL" serve --listen "127.0.0.1:$port" --log-level warn --no-kernel-tier \
                --provider anthropic --base-url "$MURL" --api-key k --model mock-model \
                --max-connections 512 --max-connections-per-address 256 >"$D/$name.log" 2>&1 &
        pids+=($!)
        for _ in $(seq 1 600); do
                curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break
                sleep 0.05
        done
        curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" || die "hull serve $name did not start: $(tail -3 "$D/$name.log")"
        printf -v "URL_$name" %s "http://127.0.0.1:$port"
}
serve_sqlite sq
serve n1 --db "$DB" --node-id n1
if [ -n "${BASE_HULL:-}" ]; then # the yardstick build's node, on a database of its own
        DB_BASE=$(pg_createdb hullbase) || die "createdb failed"
        cp "$BASE_HULL" "$D/hull-base"
        HULL=$D/hull-base serve b1 --db "$DB_BASE" --node-id b1
        HULL=$D/hull
fi
H=(-H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: managed-agents-2026-04-01')
post() { # URL PATH JSON: the answer's "id"
        curl -sf "${H[@]}" -H 'content-type: application/json' "$1$2" -d "$3" |
                /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}
session_on() { # URL: a new session (no tools) there
        local a e
        a=$(post "$1" /v1/agents '{"name":"bench","model":"mock-model","tools":[]}') || die "cannot make an agent"
        e=$(post "$1" /v1/environments '{"name":"bench","config":{"type":"cloud","networking":{"type":"unrestricted"}}}') || die "cannot make an environment"
        post "$1" /v1/sessions "{\"agent\":\"$a\",\"environment_id\":\"$e\"}" || die "cannot make a session"
}
S_sq=$(session_on "$URL_sq")
S_n1=$(session_on "$URL_n1")
[ -z "${BASE_HULL:-}" ] || S_b1=$(session_on "$URL_b1")
client() { /usr/bin/node "$top/bench/v1-client.mjs" "$@"; }
field() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# Each server's python zygote imports numpy and pandas a second after its start (at its autogroup's
# nice 19, for about 0.35 s of CPU; zygote.py sets the nice back to 0 once done): on two CPUs that
# made the first round's PostgreSQL turns 2-3x slower (many wake-ups a turn, each behind a zygote's
# slice). Measured after it, as a node that has been up a while is (at most 10 s).
for p in "${pids[@]}"; do
        z=""
        for z in $(pgrep -P "$p"); do # the zygote: the child at nice 19 (before its exec too)
                grep -q ' nice 19$' "/proc/$z/autogroup" 2>/dev/null && break
                z=""
        done
        [ -n "$z" ] || continue
        for _ in $(seq 1 200); do
                grep -q ' nice 0$' "/proc/$z/autogroup" 2>/dev/null && break
                sleep 0.05
        done
done
exec > >(tee "$BUILD/bench-nodes.log") 2>&1
echo "# bench/nodes.sh at $(git -C "$top" rev-parse --short HEAD 2>/dev/null), $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${BASE_HULL:-}" ] || echo "# BASE_HULL: $BASE_HULL ($("$D/hull-base" --version 2>/dev/null | head -1)), its node's turn in the last columns"
echo "| round | turn SQLite (ms) | turn PostgreSQL (ms) | ratio | GET SQLite (req/s) | GET PostgreSQL (req/s) | ratio | load |${BASE_HULL:+ turn PostgreSQL, BASE_HULL (ms) | ratio |}"
echo "|---|---|---|---|---|---|---|---|${BASE_HULL:+---|---|}"
for r in $(seq 1 "$ROUNDS"); do
        base=""
        if [ -n "${BASE_HULL:-}" ]; then # before the others, so neither build always goes first
                client turns "$URL_b1" "$S_b1" "$TURN_ROUNDS" >"$D/t-base.json"
        fi
        client turns "$URL_sq" "$S_sq" "$TURN_ROUNDS" >"$D/t-sq.json"
        client turns "$URL_n1" "$S_n1" "$TURN_ROUNDS" >"$D/t-pg.json"
        if [ -n "${TURNS_ONLY:-}" ]; then # the turns alone, with where their time goes
                : >"$D/g-sq.wrk"
                : >"$D/g-pg.wrk"
                for f in t-sq t-pg ${BASE_HULL:+t-base}; do
                        /usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["timeline"]; print("# round %s, %s: %s" % (sys.argv[3], sys.argv[2], " ".join("%s %.2f" % (a, b) for a, b in t)))' "$D/$f.json" "$f" "$r" >>"$D/timelines"
                        [ -z "${TURN_TIMES:-}" ] || /usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["times_ms"]; print("# round %s, %s, each turn (ms): %s" % (sys.argv[3], sys.argv[2], " ".join("%.1f" % x for x in t)))' "$D/$f.json" "$f" "$r" >>"$D/timelines"
                done
        else
                wrk -t2 -c16 -d"$DURATION" "${H[@]}" "$URL_sq/v1/sessions/$S_sq" >"$D/g-sq.wrk"
                wrk -t2 -c16 -d"$DURATION" "${H[@]}" "$URL_n1/v1/sessions/$S_n1" >"$D/g-pg.wrk"
        fi
        for f in g-sq g-pg; do ! grep -q Non-2xx "$D/$f.wrk" || die "$f: errors under load: $(grep Non-2xx "$D/$f.wrk")"; done
        tsq=$(field "$D/t-sq.json" median_ms) tpg=$(field "$D/t-pg.json" median_ms)
        gsq=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$D/g-sq.wrk") gpg=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$D/g-pg.wrk")
        if [ -n "${BASE_HULL:-}" ]; then
                tb=$(field "$D/t-base.json" median_ms)
                base=" $tb | $(echo "scale=2; $tb / $tsq" | bc) |"
        fi
        gr=-
        [ -n "${TURNS_ONLY:-}" ] && gsq=- gpg=- || gr=$(echo "scale=2; $gpg / $gsq" | bc)
        echo "| $r | $tsq | $tpg | $(echo "scale=2; $tpg / $tsq" | bc) | $gsq | $gpg | $gr | $(cut -d' ' -f1 /proc/loadavg) |$base"
done

if [ -n "${TURNS_ONLY:-}" ]; then
        cat "$D/timelines"
        exit 0
fi
serve n2 --db "$DB" --node-id n2
echo
echo "# fan-out: $SUBSCRIBERS streams on node n2, $SSE_TURNS turns on node n1 (load $(cut -d' ' -f1-3 /proc/loadavg))"
S_f=$(session_on "$URL_n1")
ADDRS=16 TURN_BASE=$URL_n1 client fanout "$URL_n2" "$S_f" "$SUBSCRIBERS" "$SSE_TURNS" >"$D/fanout.json" || die "the fan-out failed"
/usr/bin/python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); print("connected %s, in order %s, complete %s, %s events each; delay p50 %s ms, p99 %s ms" % (f["connected"], f["in_order"], f["complete"], f["events_each"], f["p50_ms"], f["p99_ms"]))' "$D/fanout.json"

serve n3 --db "$DB" --node-id n3
echo
echo "# turns per second, $LOAD_SESSIONS sessions x $LOAD_TURNS turns at once (tests/integration/nodes_load.py)"
echo "| nodes | turns/s | turn p50 (ms) | turn p99 (ms) | load |"
echo "|---|---|---|---|---|"
for k in 1 2 3 3 2 1; do
        urls=("$URL_n1" "$URL_n2" "$URL_n3")
        /usr/bin/python3 "$top/tests/integration/nodes_load.py" "$LOAD_SESSIONS" "$LOAD_TURNS" "${urls[@]:0:$k}" >"$D/load.json" || die "load on $k nodes: $(head -c 400 "$D/load.json")"
        /usr/bin/python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); print("| %s | %s | %s | %s | %s |" % (sys.argv[2], f["turns_per_s"], f["turn_ms_p50"], f["turn_ms_p99"], sys.argv[3]))' "$D/load.json" "$k" "$(cut -d' ' -f1 /proc/loadavg)"
done
"$HULL" db check --db "$DB"
# PostgreSQL's own counters for the whole run: commits, rows written
"$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atc "SELECT 'xact_commit ' || xact_commit || ', tup_inserted ' || tup_inserted || ', tup_updated ' || tup_updated || ', tup_deleted ' || tup_deleted FROM pg_stat_database WHERE datname = 'hull'"
"$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atc "SELECT 'events ' || count(*) || ', sessions ' || (SELECT count(*) FROM sessions) FROM events"
"$PG_BIN/psql" -h "$PG_HOST" -U postgres -d hull -Atc "SELECT 'connections now ' || count(*) FROM pg_stat_activity WHERE datname = 'hull'"
