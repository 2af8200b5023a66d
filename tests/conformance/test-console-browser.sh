#!/usr/bin/env bash
# test-console-browser.sh: hull's web console in Debian's Chromium, driven by puppeteer-core from npm
# (console.test.js against a real hull serve and hull mock-model; puppeteer-core installed by
# npm-deps.sh from the committed lockfile, never a downloaded browser).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
        skip "console in a browser" "no /usr/bin/chromium (scripts/install-deps.sh installs Debian's chromium)"
        exit 0
fi
npm_ready "console in a browser" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 900 node "$conformance_dir/console.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "console in a browser" "console.test.js did not finish in 900 s"
exit "$st"
