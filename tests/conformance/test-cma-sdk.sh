#!/usr/bin/env bash
# test-cma-sdk.sh: hull serve's /v1 agent service (the Claude Managed Agents wire) driven by the
# official `@anthropic-ai/sdk` from npm, once with the latest 1.x and once with 0.129.0 (cma.test.js
# against a real `hull serve` whose model is `hull mock-model`; the SDKs installed by npm-deps.sh).
# One SDK alone: CMA_SDKS=anthropic-sdk-0129 (or @anthropic-ai/sdk).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "CMA /v1 conformance with the official SDK" || exit 0
rc=0
for sdk in ${CMA_SDKS:-@anthropic-ai/sdk anthropic-sdk-0129}; do
        # TMPDIR: the cases' HULL_HOMEs and logs go under this test's own directory (removed at exit)
        TMPDIR=$TEST_TMP HULL=$HULL CMA_SDK=$sdk timeout 850 node "$conformance_dir/cma.test.js" 2>&1
        st=$?
        [ "$st" -eq 124 ] && fail "cma conformance with $sdk" "cma.test.js did not finish in 850 s"
        [ "$st" -eq 0 ] || rc=1
done
exit "$rc"
