#!/usr/bin/env bash
# test-cma-memory.sh: memory stores on hull serve's /v1 (stores, memories, versions, redaction,
# stores attached to sessions and used by the agent's own tools) driven by the official
# `@anthropic-ai/sdk` from npm (cma-memory.test.js against a real `hull serve` whose model is
# `hull mock-model`; the SDK installed by npm-deps.sh).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "CMA /v1 memory stores with the official SDK" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 600 node "$conformance_dir/cma-memory.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "cma memory stores" "cma-memory.test.js did not finish in 600 s"
exit "$st"
