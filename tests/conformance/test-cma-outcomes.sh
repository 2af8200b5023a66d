#!/usr/bin/env bash
# test-cma-outcomes.sh: outcomes (user.define_outcome and its grader), budgets (max_list_cost
# priced from config.json's "pricing") and the session states rescheduling and terminated on hull
# serve's /v1, driven by the official `@anthropic-ai/sdk` from npm (cma-outcomes.test.js against a
# real `hull serve` whose model is `hull mock-model`; the SDK installed by npm-deps.sh).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "CMA /v1 outcomes, budgets and session states with the official SDK" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 300 node "$conformance_dir/cma-outcomes.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "cma outcomes" "cma-outcomes.test.js did not finish in 300 s"
[ "$st" -eq 0 ]
