#!/usr/bin/env bash
# bench/read-document-ab.sh: bench/read-document.sh's commands for two builds in the same
# hyperfine runs (A/B, interleaved by hyperfine's rounds), beside the same yardsticks: the
# 100-page PDF against pdftotext, the 100,000-row .xlsx against sqlite3 .import of its CSV.
#   OLD=/work/main/build-dev NEW=build-dev RUNS=8 bench/read-document-ab.sh
# Environment: OLD, NEW (build directories holding hull and hull-docread), RUNS (8). Needs root
# (the parser's sandbox with cgroups). Run by hand; see docs/BENCHMARKS.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
OLD=$(cd "${OLD:?OLD=build directory}" && pwd)
NEW=$(cd "${NEW:?NEW=build directory}" && pwd)
RUNS=${RUNS:-8}
for tool in hyperfine pdftotext sqlite3 /usr/bin/python3; do
        command -v "$tool" >/dev/null || { echo "read-document-ab.sh: $tool is not installed" >&2; exit 1; }
done
W=$(mktemp -d /tmp/hull-bench-doc-ab.XXXXXX)
trap 'rm -rf "$W"' EXIT
/usr/bin/python3 tests/docs/make-corpus.py "$W/c" --bench >/dev/null
PDF=$W/c/bench-100.pdf XLSX=$W/c/bench-100k.xlsx CSV=$W/c/bench-100k.csv

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)   nproc: $(nproc)   old: $OLD   new: $NEW"
hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$W/pdf.json" \
        -n pdftotext "pdftotext $PDF /dev/null" \
        -n "old: hull read-document" "$OLD/hull read-document $PDF --json" \
        -n "new: hull read-document" "$NEW/hull read-document $PDF --json" \
        -n "old: hull-docread bare" "sh -c '$OLD/hull-docread < $PDF > /dev/null'" \
        -n "new: hull-docread bare" "sh -c '$NEW/hull-docread < $PDF > /dev/null'" \
        -n "old: --handles" "sh -c 'rm -rf $W/hp && $OLD/hull read-document $PDF --handles $W/hp > /dev/null'" \
        -n "new: --handles" "sh -c 'rm -rf $W/hp && $NEW/hull read-document $PDF --handles $W/hp > /dev/null'" \
        >/dev/null
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$W/xlsx.json" \
        -n "sqlite3 .import (CSV)" "sh -c 'rm -f $W/t.db && sqlite3 $W/t.db \".import --csv $CSV t\"'" \
        -n "old: --handles xlsx" "sh -c 'rm -rf $W/hx && $OLD/hull read-document $XLSX --handles $W/hx > /dev/null'" \
        -n "new: --handles xlsx" "sh -c 'rm -rf $W/hx && $NEW/hull read-document $XLSX --handles $W/hx > /dev/null'" \
        -n "old: hull-docread bare xlsx" "sh -c '$OLD/hull-docread < $XLSX > /dev/null'" \
        -n "new: hull-docread bare xlsx" "sh -c '$NEW/hull-docread < $XLSX > /dev/null'" >/dev/null
/usr/bin/python3 bench/hyperfine_table.py "$W/pdf.json" "$W/xlsx.json"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
