# npm-deps.sh: sourced by the conformance tests: the official SDKs (package-lock.json here) installed
# with `npm ci` into $BUILD/conformance-npm, once per lockfile and node version (a stamp says
# which). npm_ready NAME sets NODE_PATH and returns 0; without npm it prints a skip line (./build.sh
# installs Debian's nodejs and npm), and a failed install is a "not ok" line; both return 1.
conformance_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

npm_ready() {
        local name=$1 dest stamp
        if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
                skip "$name" "npm is missing (./build.sh installs Debian's nodejs and npm; or: apt-get install nodejs npm)"
                return 1
        fi
        dest=$(cd "$BUILD" && pwd)/conformance-npm
        mkdir -p "$dest"
        stamp="$(sha256sum "$conformance_dir/package-lock.json" | cut -d' ' -f1) node-$(node --version)"
        (
                flock 9
                [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$stamp" ] && [ -d "$dest/node_modules" ] && exit 0
                rm -rf "$dest/node_modules" "$dest/.stamp"
                cp "$conformance_dir/package.json" "$conformance_dir/package-lock.json" "$conformance_dir/.npmrc" "$dest/"
                cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >"$dest/npm-ci.log" 2>&1 || exit 1
                printf '%s\n' "$stamp" >"$dest/.stamp"
        ) 9>"$dest/.lock"
        if [ ! -f "$dest/.stamp" ]; then
                fail "$name" "npm ci of tests/conformance/package-lock.json failed: $(tail -3 "$dest/npm-ci.log" | tr '\n' ' ')"
                return 1
        fi
        export NODE_PATH=$dest/node_modules
        # Debian 12's Node.js is 18: the Web Crypto global that the MCP SDK's Streamable HTTP
        # server uses (globalThis.crypto) is behind a flag there, on by default from Node 19.
        case $(node --version) in
        v18.*) export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--experimental-global-webcrypto" ;;
        esac
        return 0
}
