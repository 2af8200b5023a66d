# test-evals.sh: the eval tasks (evals/) offline: each runs through `hull run` against
# `hull mock-model` with its scripted answers, in both wire formats, and is graded on what the tools
# really returned (evals/run.py --mock). A real model runs the same tasks with `make eval`.
source "$(dirname "$0")/../lib.sh"

unset OPENAI_API_KEY ANTHROPIC_API_KEY HULL_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER 2>/dev/null
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$TEST_TMP/results
/usr/bin/python3 "$top/evals/run.py" --mock --hull "$HULL" --out "$out" >"$TEST_TMP/evals.out" 2>&1
rc=$?
grep -E '^(ok|not ok|skip) - ' "$TEST_TMP/evals.out"
n=$(grep -cE '^(ok|not ok) - ' "$TEST_TMP/evals.out")
if [ "$n" -ge 16 ]; then pass "evals: every task ran in both formats ($n runs)"; else fail "evals: every task ran in both formats" "$n runs: $(tail -5 "$TEST_TMP/evals.out")"; fi
if [ $rc -eq 0 ]; then pass "evals: run.py exits 0"; else fail "evals: run.py exits 0" "exit $rc: $(tail -3 "$TEST_TMP/evals.out")"; fi
check "evals: a result file per run" test "$(ls "$out" | wc -l)" -eq "$n"

# the grader fails an answer the tools did not produce: t03 answered from thin air
mkdir -p "$TEST_TMP/tasks"
cp -r "$top/evals/tasks/t03_compute_fib" "$TEST_TMP/tasks/"
printf '{"steps": [{"text": "The sum is 12345."}]}' >"$TEST_TMP/tasks/t03_compute_fib/mock.json"
# (a failed run is kept for its reader: its home goes under $TEST_TMP, removed with it)
mkdir -m 0711 "$TEST_TMP/kept"
TMPDIR=$TEST_TMP/kept /usr/bin/python3 "$top/evals/run.py" --mock --hull "$HULL" --out "$TEST_TMP/results2" --tasks-dir "$TEST_TMP/tasks" \
        >"$TEST_TMP/evals2.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && [ "$(grep -c '^not ok - t03' "$TEST_TMP/evals2.out")" -eq 2 ] && grep -q '16,?724' "$TEST_TMP/evals2.out"; then
        pass "evals: a made-up answer fails its checks"
else
        fail "evals: a made-up answer fails its checks" "exit $rc: $(head -c 600 "$TEST_TMP/evals2.out")"
fi
