#!/usr/bin/env bash
# bench/webhooks-pg.sh: webhook delivery throughput of a node on PostgreSQL, A/B: N deliveries put
# in the outbox of a disabled subscription (one INSERT), the subscription enabled (its wake-up),
# the time until the outbox is empty; a Python receiver on loopback answering 200 after RECV_DELAY
# seconds. Two nodes, each on its own database of one throwaway cluster (tests/lib-pg.sh): this
# build's and BASE_HULL's (e.g. main's), interleaved in each of ROUNDS rounds.
# Environment: BUILD (build-dev), BASE_HULL (required), N (1000), ROUNDS (6), RECV_DELAY (0).
# See docs/BENCHMARKS.md ("Outbound webhooks").
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build-dev}
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
export HULL=$BUILD/hull BUILD HULL_KERNEL_TIER=off
: "${BASE_HULL:?BASE_HULL: the hull binary to compare with}"
N=${N:-1000} ROUNDS=${ROUNDS:-6}
export RECV_DELAY=${RECV_DELAY:-0}
# shellcheck source=../tests/lib.sh
. "$top/tests/lib.sh"
# shellcheck source=../tests/integration/v1-lib.sh
. "$top/tests/integration/v1-lib.sh"
# shellcheck source=../tests/lib-pg.sh
. "$top/tests/lib-pg.sh"
pg_cluster_start || { echo "webhooks-pg.sh: no PostgreSQL cluster" >&2; exit 1; }
export HULL_HOME=$TEST_TMP/home TMPDIR=$TEST_TMP/tmp
mkdir -m 0711 "$HULL_HOME" "$TMPDIR"
printf '{"web": {"allow_cidrs": ["127.0.0.0/8"]}}\n' >"$HULL_HOME/config.json"

"$PY" - "$TEST_TMP/recv.port" <<'PYEOF' &
import http.server, os, sys, time
delay = float(os.environ["RECV_DELAY"])
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", "0")))
        time.sleep(delay)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PYEOF
pids+=("$!")
for _ in $(seq 1 200); do [ -s "$TEST_TMP/recv.port" ] && break; sleep 0.05; done
RECV=http://127.0.0.1:$(cat "$TEST_TMP/recv.port")/hook
mock_start '{"then": "repeat", "steps": [{"text": "x"}]}' --log-level error || exit 1

declare -A U WH
for b in base this; do
        pg_createdb "h$b" >/dev/null || exit 1
        bin=$HULL
        [ "$b" = base ] && bin=$BASE_HULL
        HULL=$bin serve_v1 "$TEST_TMP/node-$b.log" --db "postgresql:///h$b?host=$PG_HOST&user=postgres" --node-id "n$b" ||
                { echo "webhooks-pg.sh: the $b node did not start" >&2; exit 1; }
        U[$b]=$URL
        v1 POST /v1/webhooks "{\"url\": \"$RECV\", \"event_types\": [\"vault.created\"]}"
        WH[$b]=$(field id)
        v1 POST "/v1/webhooks/${WH[$b]}" '{"status": "disabled"}'
done
echo "N=$N RECV_DELAY=$RECV_DELAY base=$BASE_HULL this=$HULL"
for r in $(seq 1 "$ROUNDS"); do
        line="round $r:"
        for b in base this; do
                URL=${U[$b]}
                P() { "$PG_BIN/psql" -h "$PG_HOST" -U postgres -d "h$b" -Atqc "$1"; }
                P "INSERT INTO webhook_deliveries (event_id, webhook_id, created_ms, due_ms, attempts, body)
                   SELECT 'whe_r${r}_' || g, '${WH[$b]}', 0, 0, 0, '{\"type\":\"event\",\"id\":\"whe_r${r}_' || g ||
                   '\",\"created_at\":\"2026-12-07T00:00:00.000Z\",\"data\":{\"type\":\"vault.created\",\"id\":\"vlt_x\"}}'
                   FROM generate_series(1, $N) g"
                t0=$(date +%s%N)
                v1 POST "/v1/webhooks/${WH[$b]}" '{"status": "enabled"}'
                while [ "$(P "SELECT count(*) FROM webhook_deliveries")" != 0 ]; do sleep 0.01; done
                ms=$((($(date +%s%N) - t0) / 1000000))
                v1 POST "/v1/webhooks/${WH[$b]}" '{"status": "disabled"}'
                line="$line $b $ms ms ($((N * 1000 / (ms > 0 ? ms : 1)))/s)"
        done
        echo "$line, load $(cut -d' ' -f1-3 /proc/loadavg)"
done
