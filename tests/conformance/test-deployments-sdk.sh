#!/usr/bin/env bash
# test-deployments-sdk.sh: hull serve's scheduled deployments (issue 23) driven by the official
# `@anthropic-ai/sdk` (deployments.test.js against a real `hull serve` whose model is `hull
# mock-model`; the SDK installed by npm-deps.sh): every route, hostile input, and on the test clock a
# schedule running twice, a failed run pausing, a missing agent archiving, a kill -9 doubling nothing.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "deployments /v1 conformance with the official SDK" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 300 node "$conformance_dir/deployments.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "deployments conformance" "deployments.test.js did not finish in 300 s"
exit "$st"
