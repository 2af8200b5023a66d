#!/usr/bin/env bash
# test-webhooks-sdk.sh: hull serve's outbound webhooks (issue 23) with the official
# `@anthropic-ai/sdk` (webhooks.test.js against a real `hull serve`, its model `hull mock-model`;
# the SDK installed by npm-deps.sh): every /v1/webhooks route, deliveries verified with the
# Standard Webhooks algorithm and the SDK's beta.webhooks.unwrap(), retries, a redirect that
# disables, rotation, hostile input, and kill -9 with deliveries pending.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "webhooks conformance with the official SDK" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 300 node "$conformance_dir/webhooks.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "webhooks conformance" "webhooks.test.js did not finish in 300 s"
exit "$st"
