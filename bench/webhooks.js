// bench/webhooks.js: outbound webhook delivery (issue 23), run by bench/webhooks.sh. One hull
// serve (model: hull mock-model) and a receiver on loopback: (1) RATE events a second (vaults
// created with the official SDK) for SECONDS, each delivery's latency from the event's commit
// (its payload's created_at, stamped right after the store's commit) to its receipt; (2) beside
// it, TURNS agent turns: user.message sent to session.status_idled received, and the turn as the
// server timed it (status_run_started to status_idled).
'use strict';
const sdk = require('@anthropic-ai/sdk');
const Anthropic = sdk.Anthropic || sdk.default;
const http = require('node:http');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startMock } = require('../tests/conformance/lib.js');
const { startServe, keyCreate, sleep, MODEL } = require('../tests/conformance/cma-lib.js');

const RATE = Number(process.env.RATE || 100);
const SECONDS = Number(process.env.SECONDS_RUN || 10);
const TURNS = Number(process.env.TURNS || 20);

const pct = (a, p) => { const s = a.slice().sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]; };
const fmt = (a) => `p50 ${pct(a, 50).toFixed(1)} ms, p99 ${pct(a, 99).toFixed(1)} ms, max ${Math.max(...a).toFixed(1)} ms (n=${a.length})`;

async function main() {
  const mock = await startMock({ then: 'repeat', steps: [{ text: 'done.', usage: { input_tokens: 10, output_tokens: 2 } }] });
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-bench-webhooks-'));
  fs.writeFileSync(path.join(home, 'config.json'), JSON.stringify({ web: { allow_cidrs: ['127.0.0.0/8'] } }));
  const got = [];
  const server = http.createServer((req, res) => {
    let b = '';
    req.on('data', (d) => { b += d; });
    req.on('end', () => { got.push({ at: Date.now(), body: JSON.parse(b) }); res.writeHead(200); res.end(); });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  fs.chmodSync(home, 0o711);
  let srv = null;
  try {
    const key = keyCreate(home);
    srv = await startServe(mock.url, { home, args: ['--max-connections', '1024', '--max-connections-per-address', '1024'] });
    const client = new Anthropic({ baseURL: srv.url, apiKey: key, maxRetries: 0 });
    const res = await fetch(`${srv.url}/v1/webhooks`, {
      method: 'POST', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${server.address().port}/hook`,
        event_types: ['vault.created', 'session.status_run_started', 'session.status_idled'] }),
    });
    if (res.status !== 200) throw new Error(`subscribe: ${res.status} ${await res.text()}`);

    // (1) RATE events a second
    const n = RATE * SECONDS;
    const t0 = Date.now();
    const pending = [];
    let inflight = 0;
    for (let i = 0; i < n; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      while (inflight >= 32) await sleep(1); // a client that waits, as a real one would
      inflight++;
      pending.push(client.beta.vaults.create({ display_name: `b${i}` }).finally(() => { inflight--; }));
    }
    await Promise.all(pending);
    const sent = (Date.now() - t0) / 1000;
    const end = Date.now() + 30000;
    while (got.filter((g) => g.body.data.type === 'vault.created').length < n && Date.now() < end) await sleep(50);
    const lat = got.filter((g) => g.body.data.type === 'vault.created').map((g) => g.at - Date.parse(g.body.created_at));
    console.log(`events: ${n} vault.created in ${sent.toFixed(1)} s (${(n / sent).toFixed(0)}/s offered), ${lat.length} delivered`);
    console.log(`delivery latency, commit -> receipt: ${fmt(lat)}`);

    // (2) the turn's own latency, beside it
    const agent = await client.beta.agents.create({ name: 'bench', model: MODEL });
    const env = await client.beta.environments.create({ name: 'bench' });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const idled = () => got.filter((g) => g.body.data.type === 'session.status_idled' && g.body.data.id === session.id);
    const turn = [];
    const server_turn = [];
    for (let i = 0; i < TURNS; i++) {
      const before = idled().length;
      const s = Date.now();
      await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: `hi ${i}` }] }] });
      while (idled().length === before && Date.now() - s < 60000) await sleep(2);
      turn.push(Date.now() - s);
      const runs = got.filter((g) => g.body.data.type === 'session.status_run_started' && g.body.data.id === session.id);
      const last = idled().at(-1);
      if (runs.length && last) server_turn.push(Date.parse(last.body.created_at) - Date.parse(runs.at(-1).body.created_at));
    }
    console.log(`turn (mock model), user.message sent -> session.status_idled webhook received: ${fmt(turn)}`);
    console.log(`turn as the server stamped it (status_run_started -> status_idled): ${fmt(server_turn)}`);
  } catch (e) {
    if (srv) console.log(`hull serve: ${JSON.stringify(srv.exited)}; ${srv.log().split('\n').filter((l) => /level=(error|warn)|signal|abort/i.test(l)).slice(-5).join(' / ')}`);
    throw e;
  } finally {
    if (srv) await srv.stop();
    server.close();
    await mock.stop();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
