#!/usr/bin/env bash
# install-deps.sh: install what hull needs to build, run and test on Debian 12 (as root).
# Idempotent: does nothing when every package is already installed.
set -euo pipefail

packages=(
        # build
        build-essential pkg-config meson ninja-build
        # libraries (shared/reference/c-stack.md)
        libjansson-dev libseccomp-dev libcap-dev libssl-dev
        libpcre2-dev libarchive-dev
        libmicrohttpd-dev
        # hull session's HTTP client: headers at build time; libcurl.so.4 is loaded when it runs
        libcurl4-openssl-dev
        # data handles: SQLite's headers at build time (libsqlite3.so.0 is loaded when a handle is
        # used); the sqlite3 shell is the ingest benchmark's peer and builds test databases
        libsqlite3-dev sqlite3
        # web_fetch's HTML to text: libxml2's headers at build time (libxml2.so.2 is loaded when a
        # page is converted)
        libxml2-dev
        # hull chat's line editing and history: libedit's headers at build time (libedit.so.2 is
        # loaded when a chat runs on a terminal)
        libedit-dev
        # the store's PostgreSQL backend (hull serve --db postgres://..., hull db): libpq's headers at
        # build time (libpq.so.5 is loaded only when a PostgreSQL URL is used); the server's
        # binaries (/usr/lib/postgresql/15/bin: initdb, pg_ctl) for test-store-pg and
        # test-db-postgres, which make their own throwaway cluster (see below)
        libpq-dev postgresql
        # sanitizers and fuzzing; the format check of the test suite
        clang libclang-rt-14-dev clang-format
        # what the sandbox and its tests run: Debian's python3 with the data libraries, setpriv
        python3 python3-numpy python3-pandas util-linux procps
        # what builds an environment's pip packages (python3 -m pip install --target, issue 13)
        python3-pip
        # what hull serve runs javascript payloads with (/usr/bin/node)
        nodejs
        # benchmark peers
        bubblewrap hyperfine
        # the regression tests that count system calls and commits (test-exec, test-handles,
        # test-v1-commits, test-mock-model, ...) trace with strace; without it they skip
        strace
        # the web console's browser tests (tests/conformance/console.test.js, puppeteer-core)
        chromium
        # the limited network's tests and benchmark: the client in the sandbox and the test's
        # throwaway certificate
        curl openssl
        # the unrestricted network mode (pasta), and its test's network namespace and veth pair
        passt iproute2
        # read_document's parser, hull-docread (src/docread/): poppler for PDF, tesseract and
        # leptonica for OCR (with English; more languages: tesseract-ocr-LANG), cairo to render a
        # scanned page; poppler-utils (pdftoppm, pdftotext) make the tests' scanned page and are
        # the benchmark's peer
        libpoppler-glib-dev libcairo2-dev libtesseract-dev libleptonica-dev tesseract-ocr tesseract-ocr-eng
        poppler-utils
        # the kernel tier (gVisor): hull exec --tier kernel, plimsoll's kernel floor
        runsc
        # /v1 github_repository resources are cloned with git (and its test serves a repository
        # with git http-backend)
        git
)

missing=()
for p in "${packages[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
                missing+=("$p")
        fi
done
# The conformance suite (tests/conformance) installs the official model SDKs with npm. A node
# from elsewhere (NodeSource's nodejs ships its own npm) is kept; only where no npm is found are
# Debian's nodejs and npm installed (Debian's nodejs 18 runs the pinned SDKs).
if ! command -v npm >/dev/null 2>&1; then
        for p in nodejs npm; do
                [[ " ${missing[*]} " == *" $p "* ]] || missing+=("$p")
        done
fi
if [ ${#missing[@]} -eq 0 ]; then
        exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: missing packages: ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
        exit 1
fi
echo "install-deps: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian's postgresql package makes a cluster "main" and starts it where an init system runs (port
# 5432, its socket in /var/run/postgresql). hull's tests never use it and cannot collide with it:
# each makes its own cluster with initdb in a temporary directory, listening on a unix socket in
# that directory only (listen_addresses='', no TCP port), and stops and removes it at exit
# (tests/lib-pg.sh). So "main" is left as the package leaves it, running or not.
