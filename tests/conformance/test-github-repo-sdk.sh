#!/usr/bin/env bash
# test-github-repo-sdk.sh: a session's github_repository resources driven by the official
# `@anthropic-ai/sdk` (github-repo.test.js against a real `hull serve` and a local git
# http-backend on loopback that wants a bearer token).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "github_repository /v1 conformance with the official SDK" || exit 0
command -v git >/dev/null || { skip "github_repository conformance" "git is not installed"; exit 0; }
TMPDIR=$TEST_TMP HULL=$HULL CMA_SDK=${CMA_SDK:-@anthropic-ai/sdk} timeout 300 node "$conformance_dir/github-repo.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "github_repository conformance" "github-repo.test.js did not finish in 300 s"
exit "$st"
