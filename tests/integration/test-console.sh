# test-console.sh: hull serve's web console as HTTP sees it: / and every embedded file served open
# (no key, even once keys exist), with its content type, the strict Content-Security-Policy,
# nosniff and no referrer; gzip when Accept-Encoding allows it (and the same bytes once
# decompressed), plain otherwise; ETag and Cache-Control no-cache, a 304 for a matching
# If-None-Match; HEAD; 404 for an unknown file; the API's own paths still the API's (the console
# shadows none of them).
source "$(dirname "$0")/../lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
if ! start_server "$TEST_TMP/serve.log"; then
        fail "console: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi
CSP="default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

# get NAME PATH [CURL-ARGS...]: headers in $TEST_TMP/h, body in $TEST_TMP/b, status in $ST
get() {
        local path=$1
        shift
        rm -f "$TEST_TMP/b" "$TEST_TMP/h"
        ST=$(curl -s -o "$TEST_TMP/b" -D "$TEST_TMP/h" -w '%{http_code}' "$@" "$URL$path")
}
header() { grep -i "^$1:" "$TEST_TMP/h" | head -1 | cut -d: -f2- | sed 's/^ *//; s/\r$//'; }

get /
check "console: / is index.html, 200" test "$ST" = 200
check "console: / is text/html" test "$(header content-type)" = "text/html; charset=utf-8"
check "console: / carries the strict CSP" test "$(header content-security-policy)" = "$CSP"
check "console: nosniff" test "$(header x-content-type-options)" = nosniff
check "console: no referrer" test "$(header referrer-policy)" = no-referrer
check "console: index.html is revalidated every time" test "$(header cache-control)" = no-cache
check "console: plain without Accept-Encoding" test -z "$(header content-encoding)"
check "console: index.html loads the app as a module, from /console/" grep -q '<script type="module" src="/console/app.js"></script>' "$TEST_TMP/b"
if grep -qiE '<script>|<style|\sstyle=|\son[a-z]+=' "$TEST_TMP/b"; then
        fail "console: no inline script, style or handler in index.html" "$(grep -iE '<script>|<style|\sstyle=|\son[a-z]+=' "$TEST_TMP/b" | head -2)"
else
        pass "console: no inline script, style or handler in index.html"
fi

top=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$top"/console/*; do
        name=$(basename "$f")
        case $name in
        *.js) type="text/javascript; charset=utf-8" ;;
        *.css) type="text/css; charset=utf-8" ;;
        *.svg) type="image/svg+xml" ;;
        *.html) type="text/html; charset=utf-8" ;;
        *) type="?" ;;
        esac
        get "/console/$name" -H 'Accept-Encoding: gzip, deflate, br'
        if [ "$ST" = 200 ] && [ "$(header content-type)" = "$type" ] && [ "$(header content-encoding)" = gzip ] &&
                [ "$(header vary)" = Accept-Encoding ] && [ "$(header content-security-policy)" = "$CSP" ] &&
                gzip -dc "$TEST_TMP/b" | cmp -s - "$f"; then
                pass "console: $name gzip, $type, the file's bytes"
        else
                fail "console: $name gzip, $type, the file's bytes" "status $ST type '$(header content-type)' encoding '$(header content-encoding)'"
        fi
done

get /console/app.js
check "console: app.js plain without Accept-Encoding, the file's bytes" cmp -s "$TEST_TMP/b" "$top/console/app.js"
etag=$(header etag)
check "console: an ETag" test -n "$etag"
get /console/app.js -H "If-None-Match: $etag"
check "console: If-None-Match with the ETag: 304" test "$ST" = 304
check "console: the 304 has no body" test ! -s "$TEST_TMP/b"
get /console/app.js -H 'Accept-Encoding: gzip'
gz_etag=$(header etag)
check "console: the gzip bytes have a tag of their own" test -n "$gz_etag" -a "$gz_etag" != "$etag"
get /console/app.js -H 'Accept-Encoding: gzip' -H "If-None-Match: $gz_etag"
check "console: gzip revalidation: 304" test "$ST" = 304
get /console/app.js -H 'Accept-Encoding: gzip;q=0, identity'
check "console: gzip;q=0 gets the plain file" test -z "$(header content-encoding)"
get /console/app.js -H 'If-None-Match: "0000000000000000"'
check "console: another ETag: 200" test "$ST" = 200
get /console/app.js -I
check "console: HEAD: 200 with the type" test "$ST" = 200 -a "$(header content-type)" = "text/javascript; charset=utf-8"

get /console/nothing.js
check "console: an unknown file: 404" test "$ST" = 404
check "console: the 404 carries the CSP too" test "$(header content-security-policy)" = "$CSP"
get /console/../v1/agents
check "console: /console/../v1/agents is not a file" test "$ST" != 200 -o "$(header content-type)" = application/json
get /console/
check "console: /console/ is no file: 404" test "$ST" = 404
get / -X POST
check "console: POST / is 405" test "$ST" = 405

# The API keeps its paths.
get /v1/agents -H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: managed-agents-2026-04-01'
check "console: /v1/agents is still the API (200 JSON)" test "$ST" = 200 -a "$(header content-type)" = application/json
get /v1/nothing -H 'anthropic-version: 2023-06-01'
check "console: an unknown /v1 path is the API's 404 (JSON)" test "$ST" = 404 -a "$(header content-type)" = application/json
get /healthz
check "console: /healthz is still served" test "$ST" = 200
get /plimsoll.v1.SandboxService/Describe -X POST -H 'content-type: application/json' --data '{}'
check "console: plimsoll's Describe is still served" test "$ST" = 200

# Once a key exists the API wants it; the console's files do not.
get /v1/api-keys -X POST -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' --data '{"name": "console"}'
check "console: a key made (POST /v1/api-keys)" test "$ST" = 200
get /v1/agents -H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: managed-agents-2026-04-01'
check "console: with a key, /v1 wants it (401)" test "$ST" = 401
get /
check "console: with a key, / is still open" test "$ST" = 200
get /console/app.js
check "console: with a key, the files are still open" test "$ST" = 200
stop_server
