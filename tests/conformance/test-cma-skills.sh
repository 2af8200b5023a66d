#!/usr/bin/env bash
# test-cma-skills.sh: hull serve's /v1/skills and an agent's skills in its session's sandbox,
# driven by the official `@anthropic-ai/sdk` from npm, once with the latest 1.x and once with
# 0.129.0 (cma-skills.test.js against a real `hull serve` whose model is `hull mock-model`).
# One SDK alone: CMA_SDKS=anthropic-sdk-0129 (or @anthropic-ai/sdk).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "CMA /v1/skills conformance with the official SDK" || exit 0
rc=0
for sdk in ${CMA_SDKS:-@anthropic-ai/sdk anthropic-sdk-0129}; do
        TMPDIR=$TEST_TMP HULL=$HULL CMA_SDK=$sdk timeout 600 node "$conformance_dir/cma-skills.test.js" 2>&1
        st=$?
        [ "$st" -eq 124 ] && fail "cma skills conformance with $sdk" "cma-skills.test.js did not finish in 600 s"
        [ "$st" -eq 0 ] || rc=1
done
exit "$rc"
