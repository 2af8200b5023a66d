#!/usr/bin/env bash
# bench/console.sh: the web console's first load on loopback (bytes transferred, compressed, and the
# time until the first view is drawn with its data: the page's hull-console-ready mark; puppeteer's
# page.metrics() for the script time), and the opening of a session of about 5,000 events (21
# turns of 120 parallel glob calls from hull mock-model), in Debian's Chromium with
# puppeteer-core (tests/conformance's lockfile, installed as the tests install it). Run by hand,
# not a test. Environment: BUILD (build), LOADS (10), PARTS ("load session"). Results: docs/BENCHMARKS.md.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
ninja -C "$BUILD" hull >/dev/null
skip() { echo "console.sh: $2" >&2; exit 1; }
fail() { echo "console.sh: $2" >&2; exit 1; }
# shellcheck source=tests/conformance/npm-deps.sh disable=SC1091
. tests/conformance/npm-deps.sh
npm_ready "console.sh"
[ -x /usr/bin/chromium ] || fail x "/usr/bin/chromium is missing (apt-get install chromium)"
D=$(mktemp -d /tmp/hull-bench-console-XXXXXX)
chmod 0711 "$D"
trap 'rm -rf "$D"' EXIT
cp "$BUILD/hull" "$D/hull" # a rebuild during the run must not swap it
echo "hull $(git rev-parse --short HEAD), $(chromium --version 2>/dev/null | head -1), node $(node --version), $(nproc) cores"
TMPDIR=$D HULL=$D/hull node bench/console.js 2>&1 | tee "$BUILD/bench-console.log"
