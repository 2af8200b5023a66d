#!/usr/bin/env bash
# test-openai-sdk.sh: hull mock-model's OpenAI Chat Completions driven by the official `openai`
# SDK from npm (openai.test.js; the SDK installed by npm-deps.sh).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
npm_ready "openai SDK against hull mock-model" || exit 0
HULL=$HULL node "$conformance_dir/openai.test.js" 2>&1
