# test-capabilities.sh: the /v1 capability inventory (issue 23): the one table in
# src/api/cmav1/api-v1-capabilities.c held against the routes hull serve mounts (`hull
# capabilities --check`: every mounted /v1 route is in the table, every route of a supported or
# partial capability is mounted), docs/COMPATIBILITY.md equal to what the table prints, and a real
# hull serve answering GET /v1/capabilities with the same table, every route the table calls
# supported or partial answering something other than the server's "no such route" 404 or a
# 405, and the threads routes refused by name (400 unsupported_capability, never a 404).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

out=$("$HULL" capabilities --check 2>&1)
check "capabilities --check: the table matches the mounted routes ($out)" test $? -eq 0

"$HULL" capabilities --markdown >"$TEST_TMP/COMPATIBILITY.md"
if cmp -s "$TEST_TMP/COMPATIBILITY.md" "$top/docs/COMPATIBILITY.md"; then
        pass "docs/COMPATIBILITY.md is what 'hull capabilities --markdown' prints"
else
        fail "docs/COMPATIBILITY.md is what 'hull capabilities --markdown' prints" \
                "it is stale: run 'build/hull capabilities --markdown > docs/COMPATIBILITY.md' ($(diff "$TEST_TMP/COMPATIBILITY.md" "$top/docs/COMPATIBILITY.md" | head -5 | tr '\n' ' '))"
fi
"$HULL" capabilities --json >"$TEST_TMP/caps.json"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
if ! mock_start '{"steps": [{"text": "ok"}]}' --log-level error; then
        fail "capabilities: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
if ! serve_v1 "$TEST_TMP/serve.log"; then
        fail "capabilities: hull serve starts" "$(tail -5 "$TEST_TMP/serve.log")"
        exit 1
fi

v1 GET /v1/capabilities
expect "GET /v1/capabilities: 200, the table hull capabilities --json prints" \
        "s == 200 and b['type'] == 'capability_list' and b['data'] == json.load(open('$TEST_TMP/caps.json'))['data'] and all(c['status'] in ('supported', 'partial', 'unsupported') for c in b['data']) and all((c['reason'] is None) == (c['status'] == 'supported') for c in b['data'])"
v1 GET '/v1/capabilities?bogus=1'
expect_error "GET /v1/capabilities?bogus=1: 400" 400 invalid_request_error

# every route of a supported or partial capability: something other than the server's own
# "no such route" 404 (a 404 for an unknown id is the route answering) or a 405
v1 GET /v1/sessions/sesn_x/threads
expect "GET /v1/sessions/{id}/threads: 400 unsupported_capability naming threads" \
        "$(envelope 400 invalid_request_error) and b['error']['details']['error_code'] == 'unsupported_capability' and 'thread' in b['error']['message']"
v1 POST /v1/sessions/sesn_x/threads/sthr_x/archive '{}'
expect "POST .../threads/{tid}/archive: 400 unsupported_capability" \
        "s == 400 and b['error']['details']['error_code'] == 'unsupported_capability'"
v1 GET /v1/nothing_here
expect "an unknown /v1 path: 404 pointing at GET /v1/capabilities" "s == 404 and '/v1/capabilities' in b['error']['message']"

pycheck "every supported or partial route is served (no route-404, no 405, no 401)" '
import json, sys, urllib.request, urllib.error
caps = json.load(open(sys.argv[1]))["data"]
routes = [r for c in caps if c["status"] != "unsupported" for r in c["routes"]]
# a key made by POST /v1/api-keys makes every later request need it: that one goes last
routes.sort(key=lambda r: r["method"] == "POST" and r["path"] == "/v1/api-keys")
bad = []
for r in routes:
    path = r["path"]
    for p in ("{id}", "{tid}", "{rid}", "{cred}", "{mid}", "{vid}", "{name}", "{version}"):
        path = path.replace(p, "x_probe")
    req = urllib.request.Request(sys.argv[2] + path, method=r["method"], data=b"{}" if r["method"] == "POST" else None,
                                 headers={"anthropic-version": "2023-06-01", "content-type": "application/json",
                                          "anthropic-beta": "managed-agents-2026-04-01,agent-memory-2026-07-22,files-api-2025-04-14,skills-2025-10-02"})
    try:
        with urllib.request.urlopen(req, timeout=30) as f:
            st, t = f.status, f.read(2000).decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        st, t = e.code, e.read(2000).decode("utf-8", "replace")
    if st in (401, 405) or (st == 404 and "no such route" in t):
        bad.append("%s %s: %s %s" % (r["method"], r["path"], st, t[:120]))
print("%d routes probed; not served: %s" % (len(routes), bad))
sys.exit(1 if bad or len(routes) < 40 else 0)
' "$TEST_TMP/caps.json" "$URL"
