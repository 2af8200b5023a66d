#!/usr/bin/env bash
# bench/handles.sh: the data handle store (issue 4) beside its peers, one run, medians of REPS:
#   1. ingest a generated ~100 MB CSV into a table handle vs `sqlite3 -csv :memory: '.import'`
#   2. summary (validate + shape + digest) of a ~100 MB JSON vs /usr/bin/python3 json.load
#   3. GROUP BY over a 1,000,000-row table via hd_query vs pandas (/usr/bin/python3)
#   4. the same ~100 MB CSV end to end: `hull handle add` streaming it to a real `hull serve` on
#      loopback (upload, the session's store, ingest, digest, record) vs the .import peer (root:
#      sessions need it; skipped otherwise)
# Data is generated under /tmp and deleted afterwards. Environment: REPS (default 3), BUILD,
# PARTS (default "ingest json groupby serve"; part 4 times its own .import beside each add,
# alternating), PERF=1 (part 4: `perf record` of the daemon during one more add, report printed).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
REPS=${REPS:-3}
PARTS=${PARTS:-ingest json groupby serve}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
ninja -C "$BUILD" libhandles.a libshared.a libdlib.a libbasic.a >/dev/null
cc -O2 -Wall -D_GNU_SOURCE -Isrc/basic -Isrc/shared -Isrc/handles -o "$BUILD/hd-bench" bench/hd-bench.c \
        "$BUILD/libhandles.a" "$BUILD/libshared.a" "$BUILD/libdlib.a" "$BUILD/libbasic.a" -ljansson -lcrypto -ldl -lpthread
D=$(mktemp -d /tmp/hd-bench-data-XXXXXX)
SERVE=
trap '[ -n "$SERVE" ] && kill "$SERVE" 2>/dev/null; rm -rf "$D"' EXIT

/usr/bin/python3 - "$D" <<'PY'
import random, sys, json
d = sys.argv[1]
random.seed(4)
regions = ["eu", "us", "apac", "latam", "mea"]
# ~100 MB CSV: 8 columns, ~1.6M rows
with open(d + "/big.csv", "w") as f:
    f.write("id,region,units,price,ok,day,name,note\n")
    i = 0
    size = 0
    rows = []
    while size < 100_000_000:
        i += 1
        row = f'{i},{regions[i % 5]},{random.randint(1, 1000)},{random.random() * 100:.4f},{"true" if i % 3 else "false"},2024-{1 + i % 12:02d}-{1 + i % 28:02d},name {i},"a note, with a comma {i % 97}"\n'
        size += len(row)
        rows.append(row)
        if len(rows) == 100000:
            f.write("".join(rows)); rows = []
    f.write("".join(rows))
# 1,000,000-row CSV for the GROUP BY
with open(d + "/m.csv", "w") as f:
    f.write("id,region,x\n")
    f.write("".join(f"{i},{regions[i % 5]},{random.random():.6f}\n" for i in range(1_000_000)))
# ~100 MB JSON: an array of records with a nested object
recs = []
size = 0
i = 0
while size < 100_000_000:
    i += 1
    r = {"id": i, "region": regions[i % 5], "units": i % 1000, "price": i * 0.25, "tags": ["a", "b", str(i % 7)],
         "meta": {"ok": i % 2 == 0, "day": "2024-01-%02d" % (1 + i % 28), "name": "name %d" % i}}
    recs.append(r)
    size += 130
with open(d + "/big.json", "w") as f:
    json.dump(recs, f)
PY
ls -l "$D"

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }

HB="$BUILD/hd-bench"
if part ingest; then
echo "== ingest $(du -m "$D/big.csv" | cut -f1) MB CSV =="
hull=$(for i in $(seq "$REPS"); do "$HB" ingest "$D/big.csv" 2>/dev/null; done | median)
sq=$(for i in $(seq "$REPS"); do t sqlite3 -csv :memory: ".import $D/big.csv data"; done | median)
"$HB" ingest "$D/big.csv" 2>&1 >/dev/null | cut -c1-300
printf 'hull hd_adopt_fd CSV -> table: %s s\nsqlite3 -csv :memory: .import: %s s\nratio: %s\n' "$hull" "$sq" "$(echo "scale=2; $hull / $sq" | bc)"
fi

if part json; then
echo "== summary of $(du -m "$D/big.json" | cut -f1) MB JSON =="
hull=$(for i in $(seq "$REPS"); do "$HB" json "$D/big.json" 2>/dev/null; done | median)
py=$(for i in $(seq "$REPS"); do t /usr/bin/python3 -c "import json; json.load(open('$D/big.json'))"; done | median)
"$HB" json "$D/big.json" 2>&1 >/dev/null | cut -c1-300
printf 'hull hd_adopt_fd JSON (copy, validate, shape, SHA-256): %s s\npython3 json.load: %s s\nratio: %s\n' "$hull" "$py" "$(echo "scale=2; $hull / $py" | bc)"
fi

if part groupby; then
echo "== GROUP BY over 1,000,000 rows =="
SQL='SELECT region, count(*) AS n, sum(x) AS total, avg(x) AS mean FROM t.data GROUP BY region ORDER BY region'
hull=$(for i in $(seq "$REPS"); do "$HB" query "$D/m.csv" "$SQL" 2>/dev/null; done | median)
"$HB" query "$D/m.csv" "$SQL" 2>&1 >/dev/null | cut -c1-300
pd=$(for i in $(seq "$REPS"); do /usr/bin/python3 - "$D/m.csv" <<'PY'
import sys, time, pandas as pd
df = pd.read_csv(sys.argv[1])
t = time.perf_counter()
r = df.groupby("region")["x"].agg(["count", "sum", "mean"])
print("%.3f" % (time.perf_counter() - t))
PY
done | median)
printf 'hull hd_query GROUP BY: %s s\npandas groupby (frame already loaded): %s s\n' "$hull" "$pd"
fi

if part serve && [ "$(id -u)" -eq 0 ]; then
        echo "== hull handle add of the $(du -m "$D/big.csv" | cut -f1) MB CSV through hull serve =="
        PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        chmod 0711 "$D" # the sandbox user passes through to the handle stores
        mkdir -p "$D/serve/handles" "$D/serve/audit"
        "$BUILD/hull" serve --listen "127.0.0.1:$PORT" --handles-dir "$D/serve/handles" --audit-dir "$D/serve/audit" \
                --work-dir "$D/serve" --log-level warn 2>"$D/serve.log" &
        SERVE=$!
        export HULL_URL=http://127.0.0.1:$PORT
        for i in $(seq 1 100); do "$BUILD/hull" session list >/dev/null 2>&1 && break; sleep 0.1; done
        sid=$("$BUILD/hull" session open --owner bench)
        : >"$D/add.t"
        : >"$D/sq.t"
        for i in $(seq "$REPS"); do # alternating, so the load hits both
                t "$BUILD/hull" handle add "$sid" "$D/big.csv" --input-id "big$i" >>"$D/add.t"
                t sqlite3 -csv :memory: ".import $D/big.csv data" >>"$D/sq.t"
        done
        add=$(median <"$D/add.t")
        sq=$(median <"$D/sq.t")
        echo "adds: $(tr '\n' ' ' <"$D/add.t")  imports: $(tr '\n' ' ' <"$D/sq.t")"
        if [ "${PERF:-0}" = 1 ]; then
                perf record -q -g -o "$D/perf.data" -p "$SERVE" 2>/dev/null &
                PERFPID=$!
                sleep 0.5
                t "$BUILD/hull" handle add "$sid" "$D/big.csv" --input-id bigperf >/dev/null
                kill -INT "$PERFPID"
                wait "$PERFPID" || true
                perf report -q -i "$D/perf.data" --no-children --sort dso,symbol -g none 2>/dev/null >"$D/perf.txt" || true
                grep -v '^$' "$D/perf.txt" | head -30 || true
        fi
        "$BUILD/hull" handle inspect "$sid" big1 | head -4
        printf 'hull handle add (stream, store, ingest, digest, record): %s s\nsqlite3 -csv :memory: .import: %s s\nratio: %s\n' \
                "$add" "$sq" "$(echo "scale=2; $add / $sq" | bc)"
        "$BUILD/hull" session close "$sid" >/dev/null
        kill "$SERVE"
        wait "$SERVE" || true
        SERVE=
        echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
