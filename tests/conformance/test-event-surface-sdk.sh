#!/usr/bin/env bash
# test-event-surface-sdk.sh: the rest of the /v1 event surface and the capability inventory (issue
# 23) driven by the official `@anthropic-ai/sdk` (event-surface.test.js against a real `hull serve`
# whose model is `hull mock-model`; the SDK installed by npm-deps.sh): user.tool_result in a
# self_hosted environment, system.message, prompt caching and cache tokens, effort and speed,
# threads and multiagent refused by name, GET /v1/capabilities.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "event surface /v1 conformance with the official SDK" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 300 node "$conformance_dir/event-surface.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "event surface conformance" "event-surface.test.js did not finish in 300 s"
exit "$st"
