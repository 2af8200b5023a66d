#!/usr/bin/env bash
# run-tests.sh BUILD_DIR: run every test against one build and print "N passed, N failed, N skipped".
#   unit tests (BUILD/test-*), fuzz corpora replay, the banned-call check, and the shell suites in
#   tests/integration, tests/security and tests/conformance, which drive the built hull.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
label=${2:-}
passed=0 failed=0 skipped=0
# runsc's self-check costs every hull serve start about a second: the servers the suites start
# skip it (hull serve reads HULL_KERNEL_TIER=off), but for the kernel tier's own tests
# (tests/lib.sh start_server with HULL_TEST_KERNEL_TIER=1 unsets it).
export HULL_KERNEL_TIER=off
# Every failing line, named by its suite, is kept here and printed again at the end: the end of a
# long run is what a CI log shows first.
failures="$build/test-failures"
: > "$failures"
# Each suite's wall time, seconds, the slowest listed at the end: the whole run must stay well
# under CI's budget, and this says where it goes.
times="$build/test-times"
: > "$times"

count_output() { # count TAP-ish lines of a test's output; $2 is its exit code
        local out=$1 rc=$2 name=$3 p f s
        p=$(grep -cE '^ok ' <<<"$out" || true)
        f=$(grep -cE '^not ok ' <<<"$out" || true)
        s=$(grep -cE '^skip ' <<<"$out" || true)
        if [ "$f" -gt 0 ]; then
                grep -E '^not ok ' <<<"$out" | cut -c1-400 | sed "s|^|$name: |" >> "$failures"
        fi
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ "$f" -eq 0 ]; then # 77: stopped at a skip
                echo "not ok - $name exited with status $rc"
                echo "$name: not ok - exited with status $rc" >> "$failures"
                f=1
        fi
        if [ "$rc" -eq 77 ] && [ "$s" -eq 0 ]; then
                echo "skip - $name: skipped (exit 77)"
                s=1
        fi
        passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# Suites run JOBS at a time (HULL_TEST_JOBS, default 2): most of a suite's time is waiting on
# sandboxes, servers and clients, so two share this machine's CPUs well. Each suite's output is
# kept in a file and shown whole when it ends; its counts go to a file the parent adds up.
jobs=${HULL_TEST_JOBS:-2}
case $jobs in '' | *[!0-9]* | 0) echo "run-tests.sh: HULL_TEST_JOBS must be a positive number, not '$jobs'" >&2; exit 2 ;; esac
outdir=$(mktemp -d "${TMPDIR:-/tmp}/hull-test-out.XXXXXX") || exit 1
trap 'rm -rf "$outdir"' EXIT
nrun=0

run_one() { # run_one NAME CMD...: run it, then show the output and count it (in a job)
        local name=$1 out rc home="" t0=$SECONDS
        shift
        # A test that names no HULL_HOME gets a fresh one of its own: nothing a test does may
        # depend on, or change, the machine's own state directory (/var/lib/hull as root).
        if [ -z "${HULL_HOME:-}" ]; then
                home=$(mktemp -d "${TMPDIR:-/tmp}/hull-test-home.XXXXXX") && chmod 0711 "$home" || home=""
        fi
        out=$(if [ -n "$home" ]; then export HULL_HOME=$home; fi; "$@" 2>&1 </dev/null)
        rc=$?
        [ -n "$home" ] && rm -rf "$home"
        passed=0 failed=0 skipped=0
        {
                echo "# $name"
                printf '%s\n' "$out" | grep -vE '^[0-9]+ passed, [0-9]+ failed' | sed 's/^/    /'
                count_output "$out" "$rc" "$name"
        } > "$outdir/$nrun.out"
        printf '%d %d %d\n' "$passed" "$failed" "$skipped" > "$outdir/$nrun.cnt"
        printf '%d %s\n' $((SECONDS - t0)) "$name" >> "$times"
}

collect() { # show and count every ended job's output
        local f n p fl s
        for f in "$outdir"/*.cnt; do
                [ -f "$f" ] || continue
                n=${f%.cnt}
                cat "$n.out"
                read -r p fl s < "$f"
                passed=$((passed + p)) failed=$((failed + fl)) skipped=$((skipped + s))
                rm -f "$f" "$n.out"
        done
}

run() { # run NAME CMD...: start it as a job once fewer than JOBS run
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
                wait -n
                collect
        done
        nrun=$((nrun + 1))
        run_one "$@" &
}

# The shell suites first, the slowest of them first (their last times here), so the short ones
# fill in beside them at the end.
slow_first=(integration/test-chat-server.sh conformance/test-cma-sdk.sh integration/test-env.sh
        integration/test-kernel-sessions.sh integration/test-mcp-client.sh integration/test-sessions.sh
        integration/test-v1-turns.sh integration/test-serve.sh integration/test-run.sh
        security/test-containment.sh integration/test-net.sh integration/test-net-unrestricted.sh)
suites=()
for s in "${slow_first[@]}"; do [ -f "$top/tests/$s" ] && suites+=("$s"); done
for s in "$top"/tests/integration/test-*.sh "$top"/tests/security/test-*.sh "$top"/tests/conformance/test-*.sh; do
        [ -f "$s" ] || continue
        s=$(basename "$(dirname "$s")")/$(basename "$s")
        [[ " ${slow_first[*]} " == *" $s "* ]] || suites+=("$s")
done
for s in "${suites[@]}"; do
        run "$s" env HULL="$build/hull" BUILD="$build" bash "$top/tests/$s"
done

for t in "$build"/test-*; do
        [ -f "$t" ] && [ -x "$t" ] || continue
        run "unit $(basename "$t")" "$t"
done

# The store's backend-neutral tests again on PostgreSQL (tests/unit/test-store-pg.sh: one
# throwaway cluster for all of them; a skip where PostgreSQL is not installed).
pgbins=()
for n in store store-vault store-skill store-memory store-deploy store-files store-node store-webhook store-work; do
        [ -x "$build/test-$n" ] && pgbins+=("$build/test-$n")
done
[ ${#pgbins[@]} -gt 0 ] && run "unit store on PostgreSQL" bash "$top/tests/unit/test-store-pg.sh" "${pgbins[@]}"

for r in "$build"/fuzz-*-replay; do
        [ -x "$r" ] || continue
        name=$(basename "$r" -replay)
        corpus="$top/fuzz/corpus/${name#fuzz-}"
        out=$("$r" "$corpus" 2>&1) && res="ok - replay $name: $out" || res="not ok - replay $name: $out"
        run "fuzz $name" echo "$res"
done

if "$top/scripts/check-banned.sh"; then run "banned calls" echo "ok - no banned libc calls in src/"
else run "banned calls" echo "not ok - banned libc calls in src/"; fi
if out=$("$top/scripts/check-format.sh" 2>&1); then run "format" echo "ok - every C file is as .clang-format has it"
else run "format" echo "not ok - C files not formatted: $(tr '\n' ' ' <<<"$out")"; fi
for what in layers sizes; do # the layers' includes, the sizes of files and functions (scripts/check-tree.py)
        if out=$(/usr/bin/python3 "$top/scripts/check-tree.py" "$what" 2>&1); then run "tree $what" echo "ok - $out"
        else run "tree $what" echo "not ok - $(tr '\n' ';' <<<"$out")"; fi
done


wait
collect
echo "${label:+$label: }the slowest suites (seconds):"
sort -rn "$times" | head -n 12 | sed 's/^/    /'
if [ -s "$failures" ]; then
        echo "${label:+$label: }what failed:" >&2
        sed 's/^/    /' "$failures" >&2
fi
echo "${label:+$label: }$passed passed, $failed failed, $skipped skipped" >&2
printf '%d %d %d\n' "$passed" "$failed" "$skipped" > "$build/test-counts"
[ "$failed" -eq 0 ]
