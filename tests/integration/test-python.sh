# test-python.sh: the Python face (python/hull): its unit tests (schemas from type hints, argument
# conversion, errors) and its end-to-end tests against a real hull serve (embedded, private, with
# hull mock-model as the model): solve with typed callables, an exception and a large return, a
# three-turn Conversation reusing a handle, an input file, on_publish, on_status, async twins, the
# embedded server stopped with nothing left behind. One line per test (python/tests/tap.py).
source "$(dirname "$0")/../lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
unset HULL_SERVER HULL_API_KEY HULL_MODEL HULL_PROVIDER HULL_BASE_URL ANTHROPIC_API_KEY OPENAI_API_KEY \
        OPENAI_BASE_URL ANTHROPIC_BASE_URL 2>/dev/null
export HULL_BIN=$HULL TMPDIR=$TEST_TMP
cd "$top/python" && /usr/bin/python3 -W ignore::ResourceWarning tests/tap.py
after=$(ls "$TEST_TMP" | grep -c '^hull-py-' || true)
if [ "$after" -eq 0 ]; then pass "python: no hull-py-* directory is left behind"
else fail "python: no hull-py-* directory is left behind" "$(ls "$TEST_TMP" | grep '^hull-py-' | tr '\n' ' ')"; fi
# pip install ./python: the in-tree build backend (stdlib only) makes a wheel pip installs
if /usr/bin/python3 -m pip --version >/dev/null 2>&1; then
        if out=$(/usr/bin/python3 -m pip install --no-deps --no-index --target "$TEST_TMP/inst" "$top/python" 2>&1) &&
                (cd "$TEST_TMP" && PYTHONPATH=$TEST_TMP/inst /usr/bin/python3 -c 'import hull, sys; sys.exit(0 if hull.solve and hull.Conversation and hull.__file__.startswith(sys.argv[1]) else 1)' "$TEST_TMP/inst"); then
                pass "python: pip install ./python (stdlib build backend) gives an importable hull"
        else
                fail "python: pip install ./python (stdlib build backend) gives an importable hull" "$(printf '%s' "$out" | tail -c 400 | tr '\n' ' ')"
        fi
else
        skip "python: pip install ./python" "no pip here"
fi
# the examples, each against hull mock-model with its script, through the embedded server
example() { # NAME EXPECTED-GREP-PATTERN...
        local ex=$1 out pat ok=1
        shift
        if ! mock_start "$(cat "$top/examples/python/$ex.mock.json")" --log-level error; then
                fail "python: examples/python/$ex.py runs" "hull mock-model did not start"
                return
        fi
        out=$(cd "$top" && HULL_PROVIDER=anthropic HULL_BASE_URL=$MURL ANTHROPIC_API_KEY=sk-mock PYTHONPATH=$top/python \
                timeout 120 /usr/bin/python3 "examples/python/$ex.py" 2>&1) || ok=0
        for pat in "$@"; do grep -qF -- "$pat" <<<"$out" || ok=0; done
        if [ "$ok" = 1 ]; then pass "python: examples/python/$ex.py runs against the mock model"
        else fail "python: examples/python/$ex.py runs against the mock model" "$(printf '%s' "$out" | tail -c 600 | tr '\n' ' ')"; fi
        mock_stop
}
example sales_tools "it is managed by Ada." '"units": 120' "[tool] region_manager {'region': 'north'}"
example report_conversation "initech spent most; the report is published." "published report.md" \
        "{'customer': 'initech', 'total': 300.0}" "initech spent most: 300.0"
