#!/usr/bin/env bash
# test-work-sdk.sh: the Work API of self_hosted environments (issue 21) with the official
# `@anthropic-ai/sdk` (work.test.js against a real `hull serve`, its model `hull mock-model`;
# the SDK installed by npm-deps.sh): the SDK's own worker serves a session's tool call, then the
# queue's rules (412 stale heartbeat, 409 double stop, null empty poll, scoped credentials, bad
# input).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "work queue conformance with the official SDK" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 120 node "$conformance_dir/work.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "work conformance" "work.test.js did not finish in 120 s"
exit "$st"
