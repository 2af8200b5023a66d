// work.test.js: the Work API of self_hosted environments (issue 21; docs/DEPLOY.md "Self-hosted
// workers") with the official `@anthropic-ai/sdk`, unchanged: a session in a self_hosted
// environment becomes a work item (work.stats depth 1); the SDK's own worker
// (client.beta.environments.work.worker({environmentId, environmentKey, workdir}).run()) polls it
// with an environment key from `hull key create --environment`, acknowledges it, heartbeats,
// runs the turn's bash call on this machine and posts the user.tool_result, the turn ends and the
// worker force-stops the item; then, by hand: a stale heartbeat gets 412 with the current state,
// a second stop 409 (x-should-retry: false), an empty poll JSON null; the secret's sessions token
// reaches its session and nothing else, the environment key only its environment; and bad input
// (a cloud environment's queue, block_ms out of range, an unknown work id) a clear 4xx.
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, sleep, keyCreate, toolResults, MODEL } = require('./cma-lib.js');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const util = require('node:util');

const HULL = process.env.HULL;
const TAG = `work[sdk ${SDK_VERSION}]`;
const BASH = [{ type: 'agent_toolset_20260401', default_config: { enabled: false }, configs: [{ name: 'bash', enabled: true }] }];
const text = (t) => [{ type: 'text', text: t }];

// run without blocking this process (as in webhooks.test.js: a keep-alive connection to hull serve
// idle through a slow synchronous run, which hull serve cuts after 10 s, is taken unnoticed)
async function envKey(home, envId) {
  const { stdout: out } = await util.promisify(execFile)(HULL, ['key', 'create', '--environment', envId], {
    env: { ...process.env, HULL_HOME: home }, encoding: 'utf8', timeout: 60000,
  });
  const lines = out.trim().split('\n');
  return lines[lines.length - 1].trim();
}

async function until(pred, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await pred()) return;
    await sleep(50);
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

async function status(promise) {
  try {
    await promise;
    return 200;
  } catch (e) {
    if (e instanceof sdk.APIError) return e.status;
    throw e;
  }
}

(async () => {
  const started = Date.now();
  await test(`${TAG}: the SDK's worker serves a self_hosted session; the queue's rules`, {
    steps: [
      { tool_calls: [{ name: 'bash', input: { command: 'echo worker-$((6*7)) > made.txt; cat made.txt' }, id: 'toolu_w1' }] },
      { text: 'The worker said: {{last_tool_result}}' },
      { text: 'Second turn.' },
    ],
  }, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-work-home-'));
    const workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-work-dir-'));
    let srv = null;
    const ac = new AbortController();
    try {
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home });
      const admin = new Anthropic({ baseURL: srv.url, apiKey: key, maxRetries: 0, timeout: 30000 });
      const agent = await admin.beta.agents.create({ name: 'w', model: MODEL, system: 'You run commands.', tools: BASH });
      const env = await admin.beta.environments.create({ name: 'sh', config: { type: 'self_hosted' } });
      const cloud = await admin.beta.environments.create({ name: 'cl', config: { type: 'cloud' } });
      const ekey = await envKey(home, env.id);
      check(/^hull_env_[0-9a-f]{64}$/.test(ekey), `an environment key on the last line: ${ekey.slice(0, 12)}...`);
      // The worker's polls are not cut off when it is stopped (their signal is not passed on) and
      // are kept while they run: a long poll (block_ms 999) goes on in hull serve after its client
      // hangs up, however late hull serve began it, and would hand the next item to nobody; once
      // each has its answer, none runs there.
      const polls = new Set();
      const pollFetch = (url, init = {}) => {
        if (!/\/work\/poll(\?|$)/.test(String(url.url || url))) return fetch(url, init);
        const rest = { ...init };
        delete rest.signal;
        const p = fetch(url, rest);
        polls.add(p);
        p.then(() => polls.delete(p), () => polls.delete(p));
        return p;
      };
      const worker = new Anthropic({ baseURL: srv.url, apiKey: null, authToken: ekey, maxRetries: 0, timeout: 30000, fetch: pollFetch });

      const session = await admin.beta.sessions.create({ agent: agent.id, environment_id: env.id });
      const st = await worker.beta.environments.work.stats(env.id);
      same([st.type, st.depth, st.pending], ['work_queue_stats', 1, 0], 'stats after the session was made');
      const listed = [];
      for await (const w of worker.beta.environments.work.list(env.id)) listed.push(w);
      same(listed.map((w) => [w.state, w.data.type, w.data.id, w.secret]), [['queued', 'session', session.id, null]], 'the list');

      // the environment key: its queue and sessions only
      same(await status(worker.beta.agents.list()), 403, 'the environment key on /v1/agents');
      same(await status(worker.beta.environments.work.stats(cloud.id)), 403, 'the environment key on another environment');

      await admin.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: text('Run it.') }] });
      const run = worker.beta.environments.work.worker({ environmentId: env.id, environmentKey: ekey, workdir, maxIdleMs: 300 }).run(ac.signal);
      const ran = run.catch(() => {});
      const item = listed[0];
      await until(async () => (await admin.beta.environments.work.retrieve(item.id, { environment_id: env.id })).state === 'stopped',
        60000, 'the worker served the turn and stopped the item');
      ac.abort();
      await ran;
      await Promise.allSettled([...polls]); // no poll of the worker left in hull serve
      const got = await admin.beta.environments.work.retrieve(item.id, { environment_id: env.id });
      check(got.acknowledged_at && got.started_at && got.latest_heartbeat_at && got.stopped_at && got.secret === null,
        `acknowledged, heartbeated and stopped, no secret: ${JSON.stringify(got)}`);
      const events = [];
      for await (const e of admin.beta.sessions.events.list(session.id)) events.push(e);
      const tr = events.find((e) => e.type === 'user.tool_result');
      check(tr && tr.tool_use_id && JSON.stringify(tr.content).includes('worker-42'), `the worker's result in the log: ${JSON.stringify(tr)}`);
      const msg = events.filter((e) => e.type === 'agent.message').pop();
      check(msg && /The worker said: .*worker-42/s.test(msg.content[0].text), `the turn ended on the worker's result: ${JSON.stringify(msg)}`);
      check(fs.readFileSync(path.join(workdir, 'made.txt'), 'utf8').trim() === 'worker-42', 'the command ran in the worker\'s workdir');
      const reqs = await mock.requests();
      same(toolResults(reqs[1].body).map((t) => t.tool_use_id), ['toolu_w1'], 'the model got one result');

      // a dormant session that receives an event is queued again; by hand now
      const wk = worker.beta.environments.work;
      await admin.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: text('Again.') }] });
      same((await wk.stats(env.id)).depth, 1, 'queued again');
      const w2 = await wk.poll(env.id, { block_ms: 500, 'Anthropic-Worker-ID': 'test-worker' });
      check(w2 && w2.id !== item.id && w2.data.id === session.id && typeof w2.secret === 'string', `a new item with its secret: ${JSON.stringify(w2 && { ...w2, secret: '...' })}`);
      const payload = JSON.parse(Buffer.from(w2.secret, 'base64url').toString());
      check(/^sk-ant-req-[0-9a-f]{64}$/.test(payload.sessions_token), 'a sessions token in the secret');
      check(!/[+/=]/.test(w2.secret), 'the secret is base64url, unpadded');
      same(await wk.poll(env.id), null, 'an empty poll: null');
      same((await wk.stats(env.id)).pending, 1, 'pending: handed out, not acknowledged');
      const per = new Anthropic({ baseURL: srv.url, apiKey: null, authToken: payload.sessions_token, maxRetries: 0 });
      same((await per.beta.sessions.retrieve(session.id)).id, session.id, 'the sessions token reaches its session');
      const other = await admin.beta.sessions.create({ agent: agent.id, environment_id: cloud.id });
      same(await status(per.beta.sessions.retrieve(other.id)), 403, 'the sessions token on another session');
      same(await status(per.beta.environments.work.poll(env.id)), 403, 'the sessions token polling');
      same(await status(worker.beta.sessions.retrieve(other.id)), 403, 'the environment key on another environment\'s session');
      same((await wk.ack(w2.id, { environment_id: env.id })).state, 'starting', 'ack');
      same(await status(wk.ack(w2.id, { environment_id: env.id })), 409, 'a second ack');
      const hb = await per.beta.environments.work.heartbeat(w2.id, { environment_id: env.id, expected_last_heartbeat: 'NO_HEARTBEAT' });
      same([hb.type, hb.state, hb.lease_extended, hb.ttl_seconds > 0], ['work_heartbeat', 'active', true, true], 'the first heartbeat');
      const hb2 = await per.beta.environments.work.heartbeat(w2.id, { environment_id: env.id, expected_last_heartbeat: hb.last_heartbeat });
      check(hb2.last_heartbeat !== hb.last_heartbeat, 'a new heartbeat');
      const stale = await rejects(per.beta.environments.work.heartbeat(w2.id, { environment_id: env.id, expected_last_heartbeat: hb.last_heartbeat }), sdk.APIError, 'a stale heartbeat');
      same(stale.status, 412, 'a stale heartbeat: 412');
      const cur = stale.error.error.details.current_state;
      same([stale.error.error.details.error_code, cur.state, cur.last_heartbeat], ['heartbeat_precondition_failed', 'active', hb2.last_heartbeat], 'the 412 names the current state');
      const upd = await wk.update(w2.id, { environment_id: env.id, metadata: { host: 'h1', gone: null } });
      same(upd.metadata, { host: 'h1' }, 'metadata patch');
      // a lease not renewed in time (a worker killed mid-tool): the item goes back to the queue, the
      // holder's next heartbeat gets 412, its token ends, another worker reclaims the item
      const hb3 = await per.beta.environments.work.heartbeat(w2.id, { environment_id: env.id, expected_last_heartbeat: hb2.last_heartbeat, desired_ttl_seconds: 1 });
      same(hb3.ttl_seconds, 1, 'a 1 s lease');
      await sleep(1300);
      same((await wk.stats(env.id)).depth, 1, 'the lapsed lease requeued the item');
      const lost = await rejects(per.beta.environments.work.heartbeat(w2.id, { environment_id: env.id, expected_last_heartbeat: hb3.last_heartbeat }), sdk.APIError, 'the lapsed holder');
      const lostState = lost.error.error.details.current_state;
      same([lost.status, lostState.state, lostState.last_heartbeat], [412, 'queued', null], 'the lapsed holder: 412, queued, no heartbeat');
      const w3 = await wk.poll(env.id, { block_ms: 200, 'Anthropic-Worker-ID': 'second-worker' });
      same(w3 && w3.id, w2.id, 'a second worker reclaims the item');
      const per2 = new Anthropic({ baseURL: srv.url, apiKey: null, maxRetries: 0,
        authToken: JSON.parse(Buffer.from(w3.secret, 'base64url').toString()).sessions_token });
      same(await status(per.beta.sessions.retrieve(session.id)), 401, 'the first holder\'s token ended');
      await wk.ack(w3.id, { environment_id: env.id });
      same((await per2.beta.environments.work.heartbeat(w3.id, { environment_id: env.id, expected_last_heartbeat: 'NO_HEARTBEAT' })).state, 'active', 'the second worker holds the lease');
      same((await per2.beta.environments.work.stop(w2.id, { environment_id: env.id, force: true })).state, 'stopped', 'stop');
      const again = await rejects(wk.stop(w2.id, { environment_id: env.id, force: true }), sdk.ConflictError, 'a second stop');
      same([again.status, again.headers.get('x-should-retry')], [409, 'false'], 'a second stop: 409, no retry');
      same(await status(per2.beta.sessions.retrieve(session.id)), 401, 'the sessions token ends with its item');

      // bad input
      const cl = await rejects(admin.beta.environments.work.stats(cloud.id), sdk.BadRequestError, 'a cloud environment\'s queue');
      check(/self_hosted/.test(cl.message), `the refusal says why: ${cl.message}`);
      await rejects(wk.poll(env.id, { block_ms: 0 }), sdk.BadRequestError, 'block_ms 0');
      await rejects(wk.poll(env.id, { block_ms: 1000 }), sdk.BadRequestError, 'block_ms 1000');
      await rejects(wk.retrieve('work_nope', { environment_id: env.id }), sdk.NotFoundError, 'an unknown work id');
      await rejects(admin.beta.environments.work.list('env_nope'), sdk.NotFoundError, 'an unknown environment');
      check(!srv.log().includes(payload.sessions_token) && !srv.log().includes(ekey), 'no credential in the log');
      const db = fs.readFileSync(path.join(home, 'hull.db'));
      check(!db.includes(payload.sessions_token) && !db.includes(ekey), 'no credential in hull.db');
    } catch (e) {
      if (srv) e.message += ` | exited ${JSON.stringify(srv.exited)} | hull serve log: ${srv.log().split('\n').filter((l) => /level=(error|warn)|signal|assert|Assert|abort/.test(l)).slice(-4).join(' / ')}`;
      throw e;
    } finally {
      ac.abort();
      if (srv) await srv.stop(true);
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
      fs.rmSync(workdir, { recursive: true, force: true });
    }
  });
  console.log(`# work.test.js took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  done();
})();
