# test-v1-elide.sh: a /v1 session's conversation kept right across an in-place elision. The store
# keeps a base text and the parts later turns appended; the whole text is written again when an
# older message changed in place (the agent, past its context budget, replaces old tool results by
# their short forms: agent.thread_context_compacted) and after V1_CONVERSATION_PARTS_MAX appends,
# and writing it drops the parts. Driven against hull mock-model: after every turn the stored
# conversation must be the one the agent sent the model (v1_turns.py), and after hull serve
# restarts, the next model request must carry it whole: nothing lost, twice, or stale.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/v1-lib.sh"

export HULL_HOME=$TEST_TMP/home
mkdir -m 0711 "$HULL_HOME"
TURNS="$(cd "$(dirname "$0")" && pwd)/v1_turns.py"
REC=$TEST_TMP/requests.jsonl
DB=$HULL_HOME/hull.db

# 80 lines of 60 characters: a read of it is ~5.4 KB, well over its short form (300 characters)
# and under a handle's threshold (8 KB)
BIG=$("$PY" -c 'print("".join("line %02d %s\n" % (i, "abcdefghij" * 5) for i in range(1, 81)), end="")')
SCRIPT=$("$PY" - "$BIG" <<'PYEOF'
import json, sys
read = lambda n: {"tool_calls": [{"name": "read", "input": {"file_path": "big.txt", "offset": n}}]}
write = {"tool_calls": [{"name": "write", "input": {"file_path": "big.txt", "content": sys.argv[1]}}]}
# (written again in turn two: a session's workspace does not outlive hull serve)
steps = [write, read(1), {"text": "done one"}, write, read(2), {"text": "done two"}, {"text": "done two b"},
         {"text": "done two c"}, read(3), {"text": "done three"}, read(4), {"text": "done four"}]
steps += [{"text": "done " + t} for t in ("five", "six", "seven", "eight")]
print(json.dumps({"then": "repeat", "steps": steps + [{"text": "ok"}]}))
PYEOF
)
if ! mock_start "$SCRIPT" --log-level error --record "$REC"; then
        fail "v1 elide: hull mock-model starts" "$(cat "$TEST_TMP/mock.err")"
        exit 1
fi
# no budget yet: turn one tells how big a read makes the conversation (the budget is set from it)
if ! serve_v1 "$TEST_TMP/serve0.log"; then
        fail "v1 elide: hull serve starts" "$(tail -5 "$TEST_TMP/serve0.log")"
        exit 1
fi
v1 POST /v1/agents "{\"name\": \"t\", \"model\": \"$MODEL\", \"tools\": [{\"type\": \"agent_toolset_20260401\", \"default_config\": {\"enabled\": false}, \"configs\": [{\"name\": \"read\", \"enabled\": true}, {\"name\": \"write\", \"enabled\": true}]}]}"
AGENT=$(field id 2>/dev/null)
v1 POST /v1/environments '{"name": "t", "config": {"type": "cloud", "networking": {"type": "unrestricted"}}}'
ENV=$(field id 2>/dev/null)
v1 POST /v1/sessions "{\"agent\": \"$AGENT\", \"environment_id\": \"$ENV\"}"
SESSION=$(field id 2>/dev/null)
if [ -z "$AGENT" ] || [ -z "$ENV" ] || [ -z "$SESSION" ]; then
        fail "v1 elide: an agent, an environment and a session" "$(cat "$O")"
        exit 1
fi

ROWS=$TEST_TMP/turns.jsonl
: >"$ROWS"
# a conversation is written whole again after this many appends (src/basic/limits.h)
PARTS_MAX=$(sed -n 's/^#define V1_CONVERSATION_PARTS_MAX \([0-9]*\)U.*/\1/p' "$(dirname "$0")/../../src/basic/limits.h")
if [ -z "$PARTS_MAX" ]; then
        fail "v1 elide: V1_CONVERSATION_PARTS_MAX read from src/basic/limits.h" "not found"
        exit 1
fi

# turns TEXT...: a turn each, checked by v1_turns.py; its lines appended to $ROWS. The first that
# fails ends the test (the mock's steps would no longer fit the turns after it).
turns() {
        "$PY" "$TURNS" "$URL" "$SESSION" "$REC" "$DB" "$@" >>"$ROWS" 2>"$TEST_TMP/turns.err" && return 0
        fail "v1 elide: turns $1..., each checked" "$(tail -c 300 "$TEST_TMP/turns.err"; tail -1 "$ROWS" | cut -c1-1500)"
        exit 1
}

# restart N [BUDGET]: hull serve stopped (SIGTERM) and started again on the same home, with
# context_tokens BUDGET (none: the default); {"restart": N} in $ROWS
restart() {
        stop_server TERM 30
        local rc=$?
        [ "$rc" -eq 0 ] || fail "v1 elide: hull serve ends cleanly on SIGTERM ($1)" "exit $rc"
        rm -f "$HULL_HOME/config.json"
        [ -n "${2:-}" ] && printf '{"context_tokens": %s}' "$2" >"$HULL_HOME/config.json"
        printf '{"restart": %s}\n' "$1" >>"$ROWS"
        serve_v1 "$TEST_TMP/serve$1.log" || fail "v1 elide: hull serve starts again ($1)" "$(tail -5 "$TEST_TMP/serve$1.log")"
}

# restart_check NAME: the first model request of the last turn carries what the turn before it left
# (its last request and its answer) and the turn's own message, nothing else
restart_check() {
        pycheck "$1" '
import json, sys
sys.path.insert(0, sys.argv[3])
from v1_turns import norm
reqs = {r["seq"]: r for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip())}
rows = [r for r in (json.loads(l) for l in open(sys.argv[2])) if "text" in r]
before, now = rows[-2], rows[-1]
held = [norm(m) for m in reqs[before["last_seq"]]["body"]["messages"]]
held += [{"role": "assistant", "content": before["answer"]},
         {"role": "user", "content": [{"type": "text", "text": now["text"]}]}]
sent = [norm(m) for m in reqs[now["first_seq"]]["body"]["messages"]]
sent == held or print(len(sent), "messages sent,", len(held), "held; they differ at",
                      [i for i in range(min(len(sent), len(held))) if sent[i] != held[i]][:3])
sys.exit(0 if sent == held and now["same"] else 1)' "$REC" "$ROWS" "$(dirname "$TURNS")"
}

turns one
# the budget, from what turn one left, as the agent estimates it (model_estimate_tokens: the bytes
# of the system, of the messages' and tools' strings and keys, 4 a number or literal, 1 an array
# element; / 4, and 4 a message): that, turn two's write, and x, where with R a read (its call and
# result, the result's short form beside it), S what eliding one saves and G a turn's message and
# answer, 2R + 4G > x (turn three's read goes past it, after the two short turns "two b" and "two
# c"), 2R + 4G - S <= x (eliding the oldest read brings it back), 3R + 5G - S > x (so does turn
# four's) and 3R + 8G - 2S <= x (and eliding the next one, for it and the three short turns after
# it): x halfway between the bounds
BUDGET=$("$PY" - "$DB" "$SESSION" "$REC" <<'PYEOF'
import json, sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
conv = json.loads(con.execute("SELECT body FROM conversations WHERE session_id = ?", (sys.argv[2],)).fetchone()[0])
body = [json.loads(l) for l in open(sys.argv[3]) if l.strip()][-1]["body"]
def size(v):  # model_json_text_bytes
    if isinstance(v, str):
        return len(v.encode())
    if isinstance(v, dict):
        return sum(len(k.encode()) + 2 + size(x) for k, x in v.items())
    if isinstance(v, list):
        return sum(1 + size(x) for x in v)
    return 4
tools = [{k: x for k, x in t.items() if k != "cache_control"} for t in body["tools"]]  # (the wire's)
est = (len(body["system"][0]["text"].encode()) + size(conv) + size(tools)) / 4 + 4 * len(conv)
tokens = lambda *ms: (size(list(ms))) / 4 + 4 * len(ms)
result = conv[4]["content"][0]
w, r, g = tokens(conv[1], conv[2]), tokens(conv[3], conv[4]), tokens(conv[0], conv[5])
s = (size(result["content"]) - size(result["hull_short"])) / 4
lo, hi = 3 * r + 8 * g - 2 * s, 2 * r + 4 * g
print(int(est + w + (lo + hi) / 2) if lo < hi else 0)
PYEOF
)
if [ "${BUDGET:-0}" -le 0 ]; then
        fail "v1 elide: a budget that elides one read at a time" "none: ${BUDGET:-}"
        exit 1
fi
restart 1 "$BUDGET"
turns two
restart_check "v1 elide: after a restart, the next model request carries the conversation as the agent had it"
turns "two b" "two c" three four five six seven
restart 2
turns eight
restart_check "v1 elide: after a restart that followed an elision and appends, the next model request carries the conversation as the agent had it"
SHORT=()
for i in $(seq 1 $((PARTS_MAX + 3))); do SHORT+=("s$i"); done
turns "${SHORT[@]}"
restart 3
turns last
restart_check "v1 elide: after $((PARTS_MAX + 3)) more turns and a restart, the next model request carries the conversation as the agent had it"

pycheck "v1 elide: after every turn the store keeps the conversation the agent sent the model" '
import json, sys
rows = [r for r in (json.loads(l) for l in open(sys.argv[1])) if "text" in r]
bad = [(r["text"], r["why"]) for r in rows if not r["same"]]
bad and print(bad[:2])
len(rows) == 11 + int(sys.argv[2]) or print(len(rows), "turns")
sys.exit(1 if bad or len(rows) != 11 + int(sys.argv[2]) else 0)' "$ROWS" "$((PARTS_MAX + 3))"
# a turn's end appends its messages, unless an older one changed in place (an elision), the last
# full text was written by another hull serve, or it has had PARTS_MAX appends: then the whole text
# is written and the parts dropped
pycheck "v1 elide: old results elided in place in turns three and four (after two appends), appends after; the whole text written after each elision, each restart and $PARTS_MAX appends" '
import json, sys
most = int(sys.argv[2])
prev, got, want, comp = None, [], [], {}
for r in (json.loads(l) for l in open(sys.argv[1])):
    if "restart" in r:
        prev = None
        continue
    comp[r["text"]] = r["compacted"]
    got.append(r["parts"])
    want.append(0 if prev is None or r["compacted"] or prev == most else prev + 1)
    prev = r["parts"]
ok = (got == want and comp["three"] >= 1 and comp["four"] >= 1 and
      not any(comp[t] for t in ("one", "two", "two b", "two c", "five", "six", "seven")) and max(got) == most)
i = next((i for i in range(len(got)) if got[i] != want[i]), len(got))
ok or print("parts after each turn", got[max(0, i - 3):i + 3], "from turn", max(0, i - 3) + 1, "want",
            want[max(0, i - 3):i + 3], "most", max(got), "compacted", {t: n for t, n in comp.items() if n})
sys.exit(0 if ok else 1)' "$ROWS" "$PARTS_MAX"

# what the agent sent at the end of turn seven: each message once, in order, the oldest reads in
# their short form (as many as were elided), the others whole
pycheck "v1 elide: turn seven's last request holds every message once, in order, the oldest reads in their short form" '
import json, sys
sys.path.insert(0, sys.argv[3])
from v1_turns import norm
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = {r["text"]: r for r in (json.loads(l) for l in open(sys.argv[2])) if "text" in r}
msgs = [norm(m) for m in next(r for r in reqs if r["seq"] == rows["seven"]["last_seq"])["body"]["messages"]]
whole = {}  # each result as the model saw it first (whole: the budget was not reached yet)
for r in reqs:
    for m in r["body"]["messages"]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b.get("type") == "tool_result":
                whole.setdefault(b["tool_use_id"], b["content"])
def shape(m):
    b = m["content"][0]
    if b["type"] == "text":
        return (m["role"], b["text"])
    if b["type"] == "tool_use":
        return (m["role"], b["name"], b["input"].get("offset"))
    full, now = whole[b["tool_use_id"]], b["content"]
    short = (now != full and full.startswith(now.split("\n[... elided")[0]) and
             "elided to keep the context small: the result had %d bytes" % len(full.encode()) in now)
    return (m["role"], "result", "short" if short else "whole" if now == full else "?")
k = sum(rows[t]["compacted"] for t in ("three", "four"))
want = [("user", "one"), ("assistant", "write", None), ("user", "result", "whole")]
for i, t in enumerate(("one", "two", "three", "four")):
    if i:
        want.append(("user", t))
    if i == 1:
        want += [("assistant", "write", None), ("user", "result", "whole")]
    want += [("assistant", "read", i + 1), ("user", "result", "short" if i < k else "whole"), ("assistant", "done " + t)]
    if i == 1:
        want += [("user", "two b"), ("assistant", "done two b"), ("user", "two c"), ("assistant", "done two c")]
want += sum([[("user", t), ("assistant", "done " + t)] for t in ("five", "six")], []) + [("user", "seven")]
got = [shape(m) for m in msgs]
got == want or print(k, "elided;", got)
sys.exit(0 if got == want and k >= 2 else 1)' "$REC" "$ROWS" "$(dirname "$TURNS")"

stop_server TERM 30
rc=$?
[ "$rc" -eq 0 ] && pass "v1 elide: hull serve ends cleanly on SIGTERM" ||
        fail "v1 elide: hull serve ends cleanly on SIGTERM" "exit $rc: $(tail -5 "$TEST_TMP/serve3.log")"
if grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error:' "$TEST_TMP"/serve*.log; then
        fail "v1 elide: no sanitizer report in hull serve's logs" "$(grep -E -A5 'Sanitizer|runtime error:' "$TEST_TMP"/serve*.log | head -20)"
else
        pass "v1 elide: no sanitizer report in hull serve's logs"
fi
