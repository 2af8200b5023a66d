// webhooks.test.js: hull serve's outbound webhooks (issue 23; hull's extension /v1/webhooks) with
// the official `@anthropic-ai/sdk`, unchanged: the resources are made with the SDK, each delivery
// reaches a receiver in this test that verifies its signature twice, with the Standard Webhooks
// algorithm written here from its specification (HMAC-SHA256 over "id.timestamp.body" with the
// base64-decoded whsec_ key, any "v1," entry of a space-separated list, a timestamp within five
// minutes) and with the SDK's client.beta.webhooks.unwrap(); a receiver answering 500 sees the
// retries (same webhook-id); one answering 302 gets its endpoint disabled; a rotated secret still
// verifies with the previous key during its window; hostile input (bad URLs, internal addresses
// the operator did not admit, unknown event types, an oversized body, bad ids and cursors) gets a
// clear 4xx; and a kill -9 with deliveries pending: after a restart each is delivered, with the
// same webhook-id. No secret in the log or in hull.db.
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, done } = require('./lib.js');
const { startServe, sleep, v1Headers, keyCreate, MODEL } = require('./cma-lib.js');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const util = require('node:util');

const HULL = process.env.HULL;

const TAG = `webhooks[sdk ${SDK_VERSION}]`;
const NOSCRIPT = { steps: [{ text: 'never asked' }] };

// ---- Standard Webhooks, from https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md ----
function verifyStandard(secret, headers, body) {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sigs = headers['webhook-signature'];
  if (!id || !ts || !sigs) return 'a webhook-* header is missing';
  if (!/^\d+$/.test(ts) || Math.abs(Date.now() / 1000 - Number(ts)) > 300) return `timestamp ${ts} is not within 5 minutes`;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const want = crypto.createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest();
  for (const s of sigs.split(' ')) {
    const [v, b64] = s.split(',', 2);
    if (v !== 'v1' || !b64) continue;
    const got = Buffer.from(b64, 'base64');
    if (got.length === want.length && crypto.timingSafeEqual(got, want)) return null;
  }
  return `no v1 signature of ${JSON.stringify(sigs)} matches`;
}

// A receiver: each request kept ({path, headers, body}); answer(req) decides the status.
async function receiver(port = 0) {
  const st = { got: [], answer: () => 200, server: null, port: 0 };
  const listen = (p) => new Promise((resolve, reject) => {
    st.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        const r = { path: req.url, headers: req.headers, body, at: Date.now() };
        st.got.push(r);
        const code = st.answer(r);
        res.writeHead(code, code >= 300 && code < 400 ? { location: 'http://127.0.0.1:1/elsewhere' } : {});
        res.end(code >= 400 ? 'no' : 'ok');
      });
    });
    st.server.once('error', reject);
    st.server.listen(p, '127.0.0.1', () => { st.port = st.server.address().port; resolve(); });
  });
  await listen(port);
  st.url = (p) => `http://127.0.0.1:${st.port}${p}`;
  st.close = () => new Promise((resolve) => { st.server.closeAllConnections?.(); st.server.close(() => resolve()); });
  st.reopen = () => listen(st.port);
  st.on = (p) => st.got.filter((r) => r.path === p);
  return st;
}

async function until(pred, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return;
    await sleep(50);
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

async function raw(srv, key, method, p, body) {
  const res = await fetch(`${srv.url}${p}`, {
    method, headers: v1Headers({ 'x-api-key': key }), body: typeof body === 'string' ? body : body && JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text };
}

function home() {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-webhook-home-'));
  fs.writeFileSync(path.join(h, 'config.json'), JSON.stringify({ web: { allow_cidrs: ['127.0.0.0/8'] } }));
  return h;
}

// Every delivery to p verified both ways and parsed; returns the events.
function verified(client, rcv, p, secret) {
  return rcv.on(p).map((r) => {
    const why = verifyStandard(secret, r.headers, r.body);
    check(why === null, `Standard Webhooks verification of ${r.headers['webhook-id']}: ${why}`);
    const ev = client.beta.webhooks.unwrap(r.body, { headers: r.headers, key: secret });
    check(ev.type === 'event' && /^whe_/.test(ev.id) && ev.id === r.headers['webhook-id'], `event envelope ${r.body}`);
    check(ev.data.organization_id && ev.data.workspace_id, `data names its organization and workspace: ${r.body}`);
    return ev;
  });
}

async function main() {
  await test(`${TAG}: subscribe, events of the SDK's resources signed and unwrapped, retries, redirect, rotation, hostile input`, NOSCRIPT, async (mock) => {
  const h = home();
  const rcv = await receiver();
  let srv = null;
  try {
    const key = keyCreate(h);
    srv = await startServe(mock.url, { home: h });
    const client = new Anthropic({ baseURL: srv.url, apiKey: key, maxRetries: 0 });
    const types = ['agent.created', 'agent.updated', 'environment.created', 'environment.archived', 'session.created',
      'vault.created', 'vault_credential.created', 'memory_store.created', 'session.deleted'];
    const sub = await raw(srv, key, 'POST', '/v1/webhooks', { url: rcv.url('/ok'), event_types: types, description: 'all' });
    same(sub.status, 200, `subscribe: ${sub.text}`);
    const secret = sub.json.secret;
    check(/^whsec_[A-Za-z0-9+/]+=*$/.test(secret), `a whsec_ secret once: ${secret}`);
    same([sub.json.type, sub.json.status, sub.json.event_types], ['webhook', 'enabled', types], 'the subscription');
    const got = await raw(srv, key, 'GET', `/v1/webhooks/${sub.json.id}`);
    same(got.status, 200, 'retrieve');
    check(!('secret' in got.json) && !got.text.includes(secret), 'retrieve shows no secret');

    // the resources, with the SDK
    const agent = await client.beta.agents.create({ name: 'hooked', model: MODEL });
    await client.beta.agents.update(agent.id, { version: agent.version, description: 'changed' });
    const env = await client.beta.environments.create({ name: 'hooked-env' });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    await client.beta.environments.archive(env.id);
    const vault = await client.beta.vaults.create({ display_name: 'v' });
    const cred = await client.beta.vaults.credentials.create(vault.id, {
      display_name: 'c', auth: { type: 'static_bearer', token: 'tok-Zx81', mcp_server_url: 'http://127.0.0.1:1/m' } });
    const store = await client.beta.memoryStores.create({ name: 'm' });
    await client.beta.sessions.delete(session.id);
    const want = [['agent.created', agent.id], ['agent.updated', agent.id], ['environment.created', env.id],
      ['session.created', session.id], ['environment.archived', env.id], ['vault.created', vault.id],
      ['vault_credential.created', cred.id], ['memory_store.created', store.id], ['session.deleted', session.id]];
    await until(() => rcv.on('/ok').length >= want.length, 10000, `${want.length} deliveries`);
    await sleep(300);
    const evs = verified(client, rcv, '/ok', secret);
    same(evs.map((e) => [e.data.type, e.data.id]).sort(), want.slice().sort(), 'one delivery per event, each its resource');
    same(evs.find((e) => e.data.type === 'vault_credential.created').data.vault_id, vault.id, 'a credential names its vault');
    same(new Set(evs.map((e) => e.id)).size, evs.length, 'a webhook-id per event');

    // retries: 500 twice, then 200; the same webhook-id each time
    const flaky = await raw(srv, key, 'POST', '/v1/webhooks', { url: rcv.url('/flaky'), event_types: ['vault.created'] });
    same(flaky.status, 200, 'a second subscription');
    rcv.answer = (r) => (r.path === '/flaky' && rcv.on('/flaky').length <= 2 ? 500 : r.path === '/moved' ? 302 : 200);
    const v2 = await client.beta.vaults.create({ display_name: 'v2' });
    await until(() => rcv.on('/flaky').length >= 3, 15000, 'three attempts at /flaky');
    const tries = rcv.on('/flaky');
    same(new Set(tries.map((r) => r.headers['webhook-id'])).size, 1, 'one webhook-id across the retries');
    check(tries[1].at - tries[0].at >= 500, `a backoff before the first retry (${tries[1].at - tries[0].at} ms)`);
    same(verified(client, rcv, '/flaky', flaky.json.secret).map((e) => e.data.id), [v2.id, v2.id, v2.id], 'each try verifies');
    await until(() => rcv.on('/ok').length === want.length + 1, 15000, 'the first subscription got vault.created once');
    // the third try was received, not yet answered: hull records its success after the answer
    // (10 s at most, not a fixed 300 ms)
    let f2;
    for (const end = Date.now() + 10000; ; await sleep(100)) {
      f2 = await raw(srv, key, 'GET', `/v1/webhooks/${flaky.json.id}`);
      if ((f2.json.status === 'enabled' && f2.json.consecutive_failures === 0) || Date.now() > end) break;
    }
    same([f2.json.status, f2.json.consecutive_failures], ['enabled', 0], 'failures forgotten after a delivery');

    // a redirect disables the endpoint
    const moved = await raw(srv, key, 'POST', '/v1/webhooks', { url: rcv.url('/moved'), event_types: ['agent.created'] });
    await client.beta.agents.create({ name: 'second', model: MODEL });
    await until(() => rcv.on('/moved').length >= 1, 15000, 'a delivery to /moved');
    let m2 = null;
    for (const end = Date.now() + 15000; ; await sleep(100)) {
      m2 = await raw(srv, key, 'GET', `/v1/webhooks/${moved.json.id}`);
      if (m2.json.status === 'disabled' || Date.now() > end) break;
    }
    same(m2.json.status, 'disabled', 'disabled after a redirect');
    check(/redirect/.test(m2.json.disabled_reason), `its reason says so: ${m2.json.disabled_reason}`);
    await client.beta.agents.create({ name: 'third', model: MODEL });
    await sleep(2500);
    same(rcv.on('/moved').length, 1, 'nothing more to a disabled endpoint (no retry, no new event)');

    // rotation: the old key still verifies during the window, the new one too
    const rot = await raw(srv, key, 'POST', `/v1/webhooks/${sub.json.id}/rotate_secret`, {});
    same(rot.status, 200, `rotate: ${rot.text}`);
    check(rot.json.secret && rot.json.secret !== secret, 'a new secret');
    // v3's own delivery, found by its body: the agent.created of "third" (2.5 s ago) may reach /ok
    // only now, on a slow machine
    const v3 = await client.beta.vaults.create({ display_name: 'v3' });
    const ofV3 = (r) => r.body.includes(`"${v3.id}"`);
    await until(() => rcv.on('/ok').some(ofV3), 15000, 'a delivery after rotation');
    const last = rcv.on('/ok').find(ofV3);
    same(last.headers['webhook-signature'].split(' ').length, 2, 'two signatures during the window');
    same(client.beta.webhooks.unwrap(last.body, { headers: last.headers, key: rot.json.secret }).data.id, v3.id, 'new key');
    same(client.beta.webhooks.unwrap(last.body, { headers: last.headers, key: secret }).data.id, v3.id, 'previous key');
    check(verifyStandard(rot.json.secret, last.headers, last.body) === null, 'the spec verifier with the new key');
    let threw = false;
    try { client.beta.webhooks.unwrap(last.body, { headers: last.headers, key: 'whsec_c2VjcmV0Cg==' }); } catch { threw = true; }
    check(threw, 'a wrong key does not unwrap');

    // a test delivery
    const t = await raw(srv, key, 'POST', `/v1/webhooks/${sub.json.id}/test`, { event_type: 'session.created' });
    same(t.status, 200, `test: ${t.text}`);
    await until(() => rcv.on('/ok').some((r) => r.headers['webhook-id'] === t.json.event_id), 15000, 'the test delivery');

    // list with pagination, update, delete
    const p1 = await raw(srv, key, 'GET', '/v1/webhooks?limit=2');
    same([p1.status, p1.json.data.length, typeof p1.json.next_page], [200, 2, 'string'], 'page 1');
    const p2 = await raw(srv, key, 'GET', `/v1/webhooks?limit=2&page=${p1.json.next_page}`);
    same([p2.json.data.length, p2.json.next_page], [1, null], 'page 2');
    check(!p1.text.includes('whsec_') && !p2.text.includes('whsec_'), 'no secret in a list');
    const up = await raw(srv, key, 'POST', `/v1/webhooks/${moved.json.id}`, { url: rcv.url('/ok2'), status: 'enabled' });
    same([up.status, up.json.status, up.json.disabled_reason], [200, 'enabled', null], 're-enabled at a new URL');
    const del = await raw(srv, key, 'DELETE', `/v1/webhooks/${flaky.json.id}`);
    same(del.json, { id: flaky.json.id, type: 'webhook_deleted' }, 'delete');
    same((await raw(srv, key, 'GET', `/v1/webhooks/${flaky.json.id}`)).status, 404, 'gone');

    // hull webhook: subscribe (the secret printed once), list, test delivery, delete
    const tok = path.join(h, 'token');
    fs.writeFileSync(tok, key, { mode: 0o600 });
    // run without blocking this process: while a synchronous run stops its event loop, a keep-alive
    // connection to hull serve idle through it (hull serve cuts one idle 10 s) is not seen to end,
    // and the next request, taking it, fails ("fetch failed") when the runs are slow
    const cli = async (...args) => (await util.promisify(execFile)(HULL, ['webhook', ...args, '--url', srv.url,
      '--token-file', tok, '--json'], { encoding: 'utf8', timeout: 30000 })).stdout;
    const made = JSON.parse(await cli('subscribe', rcv.url('/cli'), 'vault.created', 'agent.created'));
    check(/^whsec_/.test(made.secret) && made.status === 'enabled', `hull webhook subscribe: ${JSON.stringify(made)}`);
    check(JSON.parse(await cli('list')).data.some((w) => w.id === made.id), 'hull webhook list shows it');
    const queued = JSON.parse(await cli('test', made.id));
    await until(() => rcv.on('/cli').length >= 1, 15000, 'hull webhook test delivered');
    same(verified(client, rcv, '/cli', made.secret)[0].id, queued.event_id, 'the test delivery verifies');
    same(JSON.parse(await cli('delete', made.id)).type, 'webhook_deleted', 'hull webhook delete');
    let cliErr = null;
    try { await cli('subscribe', rcv.url('/cli'), 'nope.type'); } catch (e) { cliErr = e; }
    check(cliErr && cliErr.code === 1 && /nope\.type is not an event type/.test(cliErr.stderr), 'the CLI says why');

    // hostile input
    const bad = async (body, code, re, what) => {
      const r = await raw(srv, key, 'POST', '/v1/webhooks', body);
      same(r.status, code, `${what}: ${r.text}`);
      if (re) check(re.test(r.json.error.message), `${what}: ${r.json.error.message}`);
    };
    await bad({ url: rcv.url('/x'), event_types: ['session.exploded'] }, 400, /session\.exploded is not an event type/, 'unknown type');
    await bad({ url: rcv.url('/x'), event_types: [] }, 400, /event_types/, 'no types');
    await bad({ url: rcv.url('/x'), event_types: ['vault.created', 'vault.created'] }, 400, /twice/, 'a type twice');
    await bad({ url: 'ftp://127.0.0.1/x', event_types: ['vault.created'] }, 400, /ftp|scheme|http/, 'ftp');
    await bad({ url: 'not a url', event_types: ['vault.created'] }, 400, /url/, 'not a URL');
    await bad({ url: 'http://10.1.2.3/x', event_types: ['vault.created'] }, 400, /allow_cidrs/, 'an internal address not admitted');
    await bad({ url: 'http://169.254.169.254/latest', event_types: ['vault.created'] }, 400, /metadata/, 'cloud metadata');
    await bad({ url: 'http://user:pw@127.0.0.1/x', event_types: ['vault.created'] }, 400, null, 'credentials in the URL');
    await bad({ url: rcv.url('/x'), event_types: ['vault.created'], secret: 'mine' }, 400, /secret/, 'an unknown field');
    await bad({ event_types: ['vault.created'] }, 400, /url/, 'no url');
    await bad('{"url":', 400, null, 'not JSON');
    await bad({ url: rcv.url('/x'), event_types: ['vault.created'], description: 'x'.repeat(70000) }, 413, null, 'an oversized body');
    same((await raw(srv, key, 'GET', '/v1/webhooks/wh_nope')).status, 404, 'an unknown id');
    same((await raw(srv, key, 'GET', '/v1/webhooks?page=wh_nope')).status, 400, 'a bad cursor');
    same((await raw(srv, key, 'POST', `/v1/webhooks/${sub.json.id}/test`, { event_type: 'nope' })).status, 400, 'test of an unknown type');
    same((await raw(srv, key, 'POST', `/v1/webhooks/${sub.json.id}`, { status: 'maybe' })).status, 400, 'a bad status');

    // no secret in the log or the database
    await srv.stop(true);
    const log = srv.log();
    srv = null;
    for (const s of [secret, rot.json.secret, flaky.json.secret, moved.json.secret])
      check(!log.includes(s), 'no secret in the serve log');
    const db = fs.readFileSync(path.join(h, 'hull.db')).toString('latin1') +
      (fs.existsSync(path.join(h, 'hull.db-wal')) ? fs.readFileSync(path.join(h, 'hull.db-wal')).toString('latin1') : '');
    for (const s of [secret, rot.json.secret, flaky.json.secret])
      check(!db.includes(s) && !db.includes(s.slice(6)), 'no secret in clear in hull.db');
  } finally {
    if (srv) await srv.stop();
    await rcv.close();
    fs.rmSync(h, { recursive: true, force: true });
    fs.rmSync(`${h}.serve.log`, { force: true });
  }
});

  await test(`${TAG}: kill -9 with deliveries pending, each delivered after the restart with its webhook-id`, NOSCRIPT, async (mock) => {
  const h = home();
  const rcv = await receiver();
  let srv = null;
  try {
    const key = keyCreate(h);
    srv = await startServe(mock.url, { home: h });
    const client = new Anthropic({ baseURL: srv.url, apiKey: key, maxRetries: 0 });
    const sub = await raw(srv, key, 'POST', '/v1/webhooks', { url: rcv.url('/r'), event_types: ['vault.created'] });
    same(sub.status, 200, 'subscribe');
    rcv.answer = () => 500; // every first attempt fails: the deliveries stay in the outbox
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await client.beta.vaults.create({ display_name: `k${i}` })).id);
    await until(() => new Set(rcv.on('/r').map((r) => r.headers['webhook-id'])).size === 3, 15000, 'three first attempts');
    const ids = [...new Set(rcv.on('/r').map((r) => r.headers['webhook-id']))].sort();
    await srv.kill();
    srv = null;
    const killedAt = rcv.on('/r').length; // what came before the kill (retries too) is not counted after it
    fs.rmSync(`${h}.serve.log`, { force: true }); // startServe reads the first event=listening of it
    rcv.answer = () => 200;
    srv = await startServe(mock.url, { home: h });
    // A retry of one of them may have been in flight (claimed) when the kill came: the claim of a
    // process that died frees its row WEBHOOK_CLAIM_MS (30 s) later (docs/WEBHOOKS.md), so that
    // one is due up to 30 s after the restart, the others at once.
    await until(() => new Set(rcv.on('/r').slice(killedAt).map((r) => r.headers['webhook-id'])).size === 3, 45000,
      'the three after the restart');
    const after = rcv.on('/r').slice(killedAt);
    same([...new Set(after.map((r) => r.headers['webhook-id']))].sort(), ids, 'the same webhook-ids, each delivered');
    const evs = verified(new Anthropic({ apiKey: 'x' }), rcv, '/r', sub.json.secret);
    same([...new Set(evs.map((e) => e.data.id))].sort(), made.slice().sort(), 'each vault');
    // hull records a delivery's success after the receiver's answer, so after the test saw it:
    // the three may come at once, each answered, none yet recorded (15 s at most)
    let pend;
    for (const end = Date.now() + 15000; ; await sleep(100)) {
      pend = await raw(srv, key, 'GET', `/v1/webhooks/${sub.json.id}`);
      if (pend.json.consecutive_failures === 0 || Date.now() > end) break;
    }
    same(pend.json.consecutive_failures, 0, 'delivered: no failure left');
  } finally {
    if (srv) await srv.stop();
    await rcv.close();
    fs.rmSync(h, { recursive: true, force: true });
    fs.rmSync(`${h}.serve.log`, { force: true });
  }
});
  done();
}

main();
