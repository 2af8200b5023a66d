#!/usr/bin/env bash
# test-console-skills.sh: the console's Skills page in Debian's Chromium, driven by puppeteer-core
# from npm (console-skills.test.js against a real hull serve; never a downloaded browser).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/npm-deps.sh"
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
        skip "console skills in a browser" "no /usr/bin/chromium (scripts/install-deps.sh installs Debian's chromium)"
        exit 0
fi
npm_ready "console skills in a browser" || exit 0
TMPDIR=$TEST_TMP HULL=$HULL timeout 300 node "$conformance_dir/console-skills.test.js" 2>&1
st=$?
[ "$st" -eq 124 ] && fail "console skills in a browser" "console-skills.test.js did not finish in 300 s"
exit "$st"
