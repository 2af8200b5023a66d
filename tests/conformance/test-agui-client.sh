#!/usr/bin/env bash
# test-agui-client.sh: hull serve's AG-UI endpoint (POST /agui) driven by the official `@ag-ui/client`
# from npm, every event checked against `@ag-ui/core`'s schemas (agui.test.js against a real
# `hull serve` whose model is `hull mock-model`; the packages installed by npm-deps.sh).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "AG-UI conformance with the official client" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 850 node "$conformance_dir/agui.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "agui conformance" "agui.test.js did not finish in 850 s"
exit "$st"
