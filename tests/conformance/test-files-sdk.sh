#!/usr/bin/env bash
# test-files-sdk.sh: hull serve's /v1/files and session resources driven by the official
# `@anthropic-ai/sdk` from npm (files.test.js against a real `hull serve`; the SDK installed by
# npm-deps.sh), with the latest 1.x and with 0.129.0.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "files /v1 conformance with the official SDK" || exit 0
rc=0
for sdk in ${CMA_SDKS:-@anthropic-ai/sdk anthropic-sdk-0129}; do
        TMPDIR=$TEST_TMP HULL=$HULL CMA_SDK=$sdk timeout 300 node "$conformance_dir/files.test.js" 2>&1
        st=$?
        [ "$st" -eq 124 ] && fail "files conformance with $sdk" "files.test.js did not finish in 300 s"
        [ "$st" -eq 0 ] || rc=1
done
exit "$rc"
