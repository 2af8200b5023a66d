#!/usr/bin/env bash
# test-vaults-sdk.sh: hull serve's /v1 vaults and credentials (issue 22) driven by the official
# `@anthropic-ai/sdk` (vaults.test.js against a real `hull serve` whose model is `hull
# mock-model`, with an MCP server and an OAuth token endpoint of its own; the SDK installed by
# npm-deps.sh): every route, hostile input, a bearer token injected from a vault, an OAuth token
# refreshed on 401, and a sweep for every secret's plaintext in answers, logs, records and hull.db.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "vaults /v1 conformance with the official SDK" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 600 node "$conformance_dir/vaults.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "vaults conformance" "vaults.test.js did not finish in 600 s"
exit "$st"
