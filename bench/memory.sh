#!/usr/bin/env bash
# bench/memory.sh: issue 22's benchmark of memory stores, run by hand (not a test), side by side
# in one run on loopback against one `hull serve` whose model is `hull mock-model`:
#   1. a write-then-read round trip through a session's tools: a turn whose agent writes
#      /mnt/memory/bench/note.md (the write tool; the file becomes a new version of the store's
#      memory when the call ends), then a turn that reads it back (the read tool; the content is
#      checked), each from the POST of its user.message to its session.status_idle; beside the
#      same two turns on /workspace/note.md (no memory store: the yardstick), interleaved
#   2. the same round trip over the API: POST .../memories/{id} (a new version) then GET it,
#      beside GET /healthz
# Medians and p90 of ROUNDS rounds; the load average before and after.
#
#   bench/memory.sh                 # about a minute
#   ROUNDS=20 bench/memory.sh
#
# Environment: BUILD (default build), ROUNDS (50). Needs root (the sessions' sandboxes), node and
# the official SDK as tests/conformance installs it ($BUILD/conformance-npm: run
# tests/conformance/test-cma-memory.sh once). See docs/BENCHMARKS.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-50}
die() {
        echo "memory.sh: $*" >&2
        exit 1
}
[ "$(id -u)" = 0 ] || die "needs root (the sessions' sandboxes)"
command -v node >/dev/null || die "node is not installed"
NODE_PATH=$(cd "$BUILD" && pwd)/conformance-npm/node_modules
[ -d "$NODE_PATH/@anthropic-ai/sdk" ] || die "no SDK in $NODE_PATH: run tests/conformance/test-cma-memory.sh once"
export NODE_PATH
ninja -C "$BUILD" hull >/dev/null

D=$(mktemp -d /tmp/hull-bench-memory-XXXXXX)
chmod 0711 "$D"
pids=()
cleanup() {
        for p in "${pids[@]}"; do
                kill "$p" 2>/dev/null || true
                wait "$p" 2>/dev/null || true
        done
        rm -rf "$D"
}
trap cleanup EXIT
cp "$BUILD/hull" "$D/hull"
export HULL_HOME=$D/home
mkdir -m 0711 "$HULL_HOME"
unset HULL_API_KEY HULL_TOKEN OPENAI_API_KEY ANTHROPIC_API_KEY HULL_MODEL HULL_BASE_URL HULL_PROVIDER 2>/dev/null || true

# The mock: per round, a memory write turn, a memory read turn, then the same on /workspace.
/usr/bin/python3 - "$ROUNDS" >"$D/mock.json" <<'PY'
import json, sys
steps = []
for i in range(int(sys.argv[1])):
    for where in ("/mnt/memory/bench/note.md", "/workspace/note.md"):
        steps.append({"tool_calls": [{"name": "write", "input": {"file_path": where, "content": "round %d\n" % i}}]})
        steps.append({"text": "written"})
        steps.append({"tool_calls": [{"name": "read", "input": {"file_path": where}}]})
        steps.append({"text": "read"})
print(json.dumps({"then": "error", "steps": steps}))
PY
"$D/hull" mock-model --script "$D/mock.json" --listen 127.0.0.1:0 --log-level error >"$D/mock.out" &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening on' "$D/mock.out" 2>/dev/null && break; sleep 0.1; done
mock=$(sed -n 's/^listening on //p' "$D/mock.out")
[ -n "$mock" ] || die "hull mock-model did not start"
"$D/hull" serve --listen 127.0.0.1:0 --model claude-sonnet-4-6 --provider anthropic --base-url "$mock" \
        --api-key sk-mock >"$D/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q 'event=listening' "$D/serve.log" && break; sleep 0.1; done
url=http://$(sed -n 's/.*event=listening.* addr=\(127\.0\.0\.1:[0-9]*\).*/\1/p' "$D/serve.log" | head -1)
[ "$url" != "http://" ] || die "hull serve did not start: $(tail -3 "$D/serve.log")"

echo "# bench/memory.sh at $(git rev-parse --short HEAD) $(date -u '+%Y-%m-%d %H:%M UTC'), ROUNDS=$ROUNDS"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
URL=$url ROUNDS=$ROUNDS node - <<'JS'
const sdk = require('@anthropic-ai/sdk');
const Anthropic = sdk.Anthropic || sdk.default;
const client = new Anthropic({ baseURL: process.env.URL, apiKey: 'none', maxRetries: 0, timeout: 120000 });
const ROUNDS = Number(process.env.ROUNDS);
const stats = (xs) => { const s = [...xs].sort((a, b) => a - b); const q = (p) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]; return `${q(0.5).toFixed(2)} ms median (p90 ${q(0.9).toFixed(2)})`; };
async function turn(session, text) {
  const stream = await client.beta.sessions.events.stream(session.id);
  const t0 = performance.now();
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
  let result = '';
  for await (const e of stream) {
    if (e.type === 'agent.tool_result') result += (e.content || []).map((b) => b.text || '').join('');
    if (e.type === 'session.status_idle' || e.type === 'session.error') break;
  }
  const ms = performance.now() - t0;
  stream.controller.abort();
  return { ms, result };
}
(async () => {
  const store = await client.beta.memoryStores.create({ name: 'bench' });
  const agent = await client.beta.agents.create({ name: 'bench', model: 'claude-sonnet-4-6', tools: [{ type: 'agent_toolset_20260401', default_config: { enabled: false },
    configs: ['read', 'write'].map((name) => ({ name, enabled: true, permission_policy: { type: 'always_allow' } })) }] });
  const env = await client.beta.environments.create({ name: 'bench', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, resources: [{ type: 'memory_store', memory_store_id: store.id }] });
  const mem = [], ws = [];
  for (let i = 0; i < ROUNDS; i++) {
    for (const out of [mem, ws]) {
      const w = await turn(session, 'write');
      const r = await turn(session, 'read');
      if (!r.result.includes(`round ${i}`)) throw new Error(`round ${i}: read back ${JSON.stringify(r.result.slice(0, 200))}`);
      if (i > 0) out.push(w.ms + r.ms); // the first round opens the sandbox
    }
  }
  const vers = [];
  for await (const v of client.beta.memoryStores.memoryVersions.list(store.id)) vers.push(v);
  if (vers.length !== ROUNDS) throw new Error(`${vers.length} versions for ${ROUNDS} writes`);
  const m = (await client.beta.memoryStores.memories.list(store.id)).data[0];
  const api = [], health = [];
  for (let i = 0; i < ROUNDS; i++) {
    let t0 = performance.now();
    await client.beta.memoryStores.memories.update(m.id, { memory_store_id: store.id, content: `api ${i}` });
    const got = await client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: store.id });
    api.push(performance.now() - t0);
    if (got.content !== `api ${i}`) throw new Error('api round trip read back something else');
    t0 = performance.now();
    await (await fetch(`${process.env.URL}/healthz`)).text();
    health.push(performance.now() - t0);
  }
  console.log('| what | hull | beside |');
  console.log('| --- | --- | --- |');
  console.log(`| write turn + read turn through the tools, /mnt/memory (a memory store) vs /workspace | ${stats(mem)} | ${stats(ws)} |`);
  console.log(`| API: POST .../memories/{id} + GET it vs GET /healthz | ${stats(api)} | ${stats(health)} |`);
  console.log(`# ${vers.length} versions made by ${ROUNDS} writes through the tools; n=${mem.length} tool rounds, ${api.length} API rounds`);
})().catch((e) => { console.error(`memory.sh: ${e.stack || e}`); process.exit(1); });
JS
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
