#!/usr/bin/env bash
# test-anthropic-sdk.sh: hull mock-model's Anthropic Messages driven by the official
# `@anthropic-ai/sdk` from npm (anthropic.test.js; the SDK installed by npm-deps.sh).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "anthropic SDK against hull mock-model" || exit 0
HULL=$HULL node "$conformance_dir/anthropic.test.js" 2>&1
