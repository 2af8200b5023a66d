// deployments.test.js: hull serve's scheduled deployments (issue 23) driven by the official
// `@anthropic-ai/sdk`, unchanged, against a real `hull serve` whose model is `hull mock-model`:
// every /v1/deployments and /v1/deployment_runs route (create with a pinned agent, environment,
// initial events, metadata and a cron schedule in a time zone; retrieve with upcoming_runs_at;
// update; list with the SDK's pagination and filters; pause, unpause, run now, archive); hostile
// input answered with clear 400s; and, on the scheduler's test clock (HULL_TEST_CLOCK: a minute a
// second), a schedule that runs twice, a failed scheduled run that pauses its deployment with the
// reason, a missing agent that archives it, and a kill -9 and restart that doubles no run.
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, keyCreate, sleep, MODEL } = require('./cma-lib.js');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const TAG = `deployments[sdk ${SDK_VERSION}]`;
const SCRIPT = { steps: [{ text: 'done' }, { text: 'done' }, { text: 'done' }, { text: 'done' }, { text: 'done' }, { text: 'done' }] };
const EVENTS = [{ type: 'user.message', content: [{ type: 'text', text: 'Write the daily report.' }] }];
const PG = process.env.HULL_DB; // one PostgreSQL database shared by every case: each checks what it made
const CLOCK_START = 1796515200; // 2026-12-06T00:00:00Z

function errType(e) {
  return e.type || (e.error && e.error.error && e.error.error.type);
}

async function all(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

// One case: a mock, a hull serve (with env), a client; fn({ client, srv, home, restart }).
function dcase(name, env, fn) {
  return test(`${TAG}: ${name}`, SCRIPT, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-deploy-home-'));
    let srv = null;
    try {
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home, env });
      const ctx = { home, srv, key, client: new Anthropic({ baseURL: srv.url, apiKey: key, maxRetries: 0, timeout: 60000 }) };
      ctx.restart = async (how) => {
        if (how === 'kill') await srv.kill(); else await srv.stop(true);
        fs.renameSync(`${home}.serve.log`, `${home}.serve.log.1`); // the next one's listening line alone
        srv = await startServe(mock.url, { home, env });
        ctx.srv = srv;
        ctx.client = new Anthropic({ baseURL: srv.url, apiKey: key, maxRetries: 0, timeout: 60000 });
      };
      await fn(ctx);
    } finally {
      if (srv) await srv.stop(true);
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
      fs.rmSync(`${home}.serve.log.1`, { force: true });
    }
  });
}

async function agentAndEnv(client) {
  const agent = await client.beta.agents.create({ name: 'reporter', model: MODEL, system: 'You report.' });
  const env = await client.beta.environments.create({ name: 'reports', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
  return { agent, env };
}

async function waitFor(what, fn, ms = 60000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const mineOf = (ids) => (xs) => (PG ? xs.filter((x) => ids.includes(x.id)) : xs);
const runsOf = (client, id, q = {}) => all(client.beta.deploymentRuns.list({ deployment_id: id, limit: 50, ...q }));

(async () => {
  await dcase('every route: create, retrieve, update, list, pause, unpause, run, runs, archive', {}, async ({ client }) => {
    const { agent, env } = await agentAndEnv(client);
    const d = await client.beta.deployments.create({
      name: 'daily report', description: 'weekdays at nine', agent: agent.id, environment_id: env.id,
      initial_events: EVENTS, metadata: { team: 'ops' },
      schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'America/New_York' },
    });
    check(/^depl_/.test(d.id), `id ${d.id}`);
    same(d.type, 'deployment', 'type');
    same(d.agent, { type: 'agent', id: agent.id, version: agent.version }, 'pinned agent');
    same([d.status, d.paused_reason, d.archived_at], ['active', null, null], 'state');
    same(d.initial_events.map((e) => e.type), ['user.message'], 'initial events');
    same(d.schedule.upcoming_runs_at.length, 5, 'five upcoming runs');
    for (const t of d.schedule.upcoming_runs_at) {
      const h = new Date(t).getUTCHours(), wd = new Date(t).getUTCDay();
      check((h === 14 || h === 13) && wd >= 1 && wd <= 5, `9:00 New York on a weekday: ${t}`);
    }
    const got = await client.beta.deployments.retrieve(d.id);
    same(got.name, 'daily report', 'retrieve');
    const up = await client.beta.deployments.update(d.id, { name: 'renamed', metadata: { team: null, tier: 'gold' }, description: '' });
    same([up.name, up.metadata, up.description], ['renamed', { tier: 'gold' }, null], 'update');
    const d2 = await client.beta.deployments.create({ name: 'second', agent: { type: 'agent', id: agent.id, version: 1 }, environment_id: env.id, initial_events: EVENTS });
    same(d2.schedule, null, 'no schedule');
    const mine = mineOf([d.id, d2.id]);
    const listed = mine(await all(client.beta.deployments.list({ limit: 1 })));
    same(listed.map((x) => x.id).sort(), [d.id, d2.id].sort(), 'list over pages');
    const p = await client.beta.deployments.pause(d.id);
    same([p.status, p.paused_reason], ['paused', { type: 'manual' }], 'pause');
    check(p.schedule.upcoming_runs_at.length === 5, 'paused keeps upcoming_runs_at');
    same(mine(await all(client.beta.deployments.list({ status: 'paused' }))).map((x) => x.id), [d.id], 'status=paused');
    const e400 = await rejects(client.beta.deployments.list({ status: 'active', include_archived: true }), Anthropic.BadRequestError, 'status + include_archived');
    check(/include_archived/.test(e400.message), e400.message);
    const run = await client.beta.deployments.run(d.id); // allowed while paused
    check(/^drun_/.test(run.id) && /^sesn_/.test(run.session_id) && run.error === null, `run ${JSON.stringify(run)}`);
    same(run.trigger_context, { type: 'manual' }, 'manual trigger');
    const sess = await client.beta.sessions.retrieve(run.session_id);
    same(sess.deployment_id, d.id, 'the session names its deployment');
    const u = await client.beta.deployments.unpause(d.id);
    same([u.status, u.paused_reason], ['active', null], 'unpause');
    same((await client.beta.deploymentRuns.retrieve(run.id)).session_id, run.session_id, 'run retrieve');
    same((await runsOf(client, d.id)).map((r) => r.id), [run.id], 'runs of the deployment');
    same((await runsOf(client, d.id, { trigger_type: 'schedule' })).length, 0, 'trigger_type filter');
    same((await runsOf(client, d.id, { has_error: false })).length, 1, 'has_error filter');
    same((await all(client.beta.deploymentRuns.list({ deployment_id: 'depl_unknown' }))).length, 0, 'unknown deployment: empty');
    const a = await client.beta.deployments.archive(d.id);
    check(a.archived_at && a.schedule.upcoming_runs_at.length === 0, `archive: ${JSON.stringify(a.schedule)}`);
    same(mine(await all(client.beta.deployments.list())).map((x) => x.id), [d2.id], 'archived left out');
    same(mine(await all(client.beta.deployments.list({ include_archived: true }))).length, 2, 'include_archived');
    await rejects(client.beta.deployments.update(d.id, { name: 'x' }), Anthropic.BadRequestError, 'update archived');
    await rejects(client.beta.deployments.run(d.id), Anthropic.BadRequestError, 'run archived');
    await rejects(client.beta.deployments.retrieve('depl_nope'), Anthropic.NotFoundError, 'unknown id');
    await rejects(client.beta.deploymentRuns.retrieve('drun_nope'), Anthropic.NotFoundError, 'unknown run');
  });

  await dcase('hull deploy: create, list, run, pause, unpause, archive from the command line', {}, async ({ client, srv, key }) => {
    const { agent, env } = await agentAndEnv(client);
    const lines = (...args) => execFileSync(process.env.HULL, ['deploy', '--server', srv.url, '--api-key', key, ...args], { encoding: 'utf8' }).trim().split('\n').map((l) => JSON.parse(l));
    const hull = (...args) => lines(...args).pop();
    const d = hull('create', '--name', 'cli', '--agent', agent.id, '--environment', env.id, '--message', 'hello', '--cron', '30 6 * * *', '--timezone', 'Asia/Kolkata');
    same([d.schedule.expression, d.schedule.timezone], ['30 6 * * *', 'Asia/Kolkata'], 'created');
    check(d.schedule.upcoming_runs_at.every((t) => /T01:00:00Z$/.test(t)), `06:30 Kolkata is 01:00 UTC: ${d.schedule.upcoming_runs_at}`);
    check(lines('list').some((x) => x.id === d.id && x.schedule.upcoming_runs_at.length === 5), 'list');
    const run = hull('run', d.id);
    check(/^sesn_/.test(run.session_id), `run: ${JSON.stringify(run)}`);
    same(hull('pause', d.id).status, 'paused', 'pause');
    same(hull('unpause', d.id).status, 'active', 'unpause');
    check(hull('archive', d.id).archived_at, 'archive');
    let err = '';
    try { execFileSync(process.env.HULL, ['deploy', '--server', srv.url, '--api-key', key, 'create', '--name', 'x', '--agent', agent.id, '--environment', env.id, '--message', 'm', '--cron', '0 25 * * *', '--timezone', 'UTC'], { encoding: 'utf8', stdio: 'pipe' }); } catch (e) { err = String(e.stderr); }
    check(/hour.*25/.test(err), `a bad cron refused with the reason: ${err}`);
  });

  await dcase('hostile input: bad cron, bad time zone, unknown fields, missing parts: clear 400s', {}, async ({ client }) => {
    const { agent, env } = await agentAndEnv(client);
    const base = { name: 'x', agent: agent.id, environment_id: env.id, initial_events: EVENTS };
    const bad = [
      [{ schedule: { type: 'cron', expression: '61 * * * *', timezone: 'UTC' } }, /minute.*61/],
      [{ schedule: { type: 'cron', expression: '@daily', timezone: 'UTC' } }, /@daily/],
      [{ schedule: { type: 'cron', expression: '0 0 31 2 *', timezone: 'UTC' } }, /never fires/],
      [{ schedule: { type: 'cron', expression: '* * * *', timezone: 'UTC' } }, /5/],
      [{ schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'Mars/Olympus' } }, /time zone/],
      [{ schedule: { type: 'cron', expression: '0 9 * * *', timezone: '../../etc/passwd' } }, /IANA/],
      [{ schedule: { type: 'cron', expression: '0 9 * * *' } }, /timezone/],
      [{ schedule: { type: 'interval', expression: '0 9 * * *', timezone: 'UTC' } }, /type/],
      [{ colour: 'blue' }, /colour/],
      [{ initial_events: [] }, /initial_events/],
      [{ initial_events: [{ type: 'user.interrupt' }] }, /initial_events/],
      [{ name: '' }, /name/],
      [{ resources: [{ type: 'github_repository', url: 'https://github.com/a/b', authorization_token: 'ghp_x' }] }, /vault/],
    ];
    for (const [over, re] of bad) {
      const e = await rejects(client.beta.deployments.create({ ...base, ...over }), Anthropic.BadRequestError, JSON.stringify(over));
      check(re.test(e.message), `${JSON.stringify(over)}: ${e.message}`);
    }
    await rejects(client.beta.deployments.create({ ...base, agent: 'agent_missing' }), Anthropic.NotFoundError, 'unknown agent');
    await rejects(client.beta.deployments.create({ ...base, environment_id: 'env_missing' }), Anthropic.NotFoundError, 'unknown environment');
    await rejects(client.beta.deployments.list({ limit: 'x' }), Anthropic.BadRequestError, 'bad limit');
    await rejects(client.beta.deploymentRuns.list({ trigger_type: 'cron' }), Anthropic.BadRequestError, 'bad trigger_type');
    const d = await client.beta.deployments.create(base);
    await rejects(client.beta.deployments.update(d.id, { name: null }), Anthropic.BadRequestError, 'name cannot be cleared');
    if (!PG) same((await all(client.beta.deployments.list())).length, 1, 'nothing stored by the refusals');
  });

  const CLOCK = { HULL_TEST_CLOCK: `${CLOCK_START}:60` };
  await dcase('a one-minute schedule runs twice (test clock: a minute a second)', CLOCK, async ({ client }) => {
    const { agent, env } = await agentAndEnv(client);
    const d = await client.beta.deployments.create({ name: 'minutely', agent: agent.id, environment_id: env.id, initial_events: EVENTS,
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'Europe/Paris' } });
    const runs = await waitFor('two scheduled runs', async () => {
      const r = await runsOf(client, d.id, { trigger_type: 'schedule' });
      return r.length >= 2 ? r : null;
    });
    await client.beta.deployments.pause(d.id);
    for (const r of runs) check(r.session_id && r.error === null && r.trigger_context.type === 'schedule', JSON.stringify(r));
    const at = runs.map((r) => r.trigger_context.scheduled_at);
    same(new Set(at).size, at.length, 'distinct scheduled_at');
    for (const t of at) check(/:00Z$/.test(t), `on the minute: ${t}`);
    const s = await client.beta.sessions.retrieve(runs[0].session_id);
    same(s.deployment_id, d.id, 'session of the deployment');
    const got = await client.beta.deployments.retrieve(d.id);
    check(got.schedule.last_run_at, 'last_run_at set');
  });

  await dcase('a failed scheduled run pauses the deployment with the reason; a missing agent archives it', CLOCK, async ({ client, home }) => {
    const { agent, env } = await agentAndEnv(client);
    const d = await client.beta.deployments.create({ name: 'fails', agent: agent.id, environment_id: env.id, initial_events: EVENTS,
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' } });
    await client.beta.environments.archive(env.id);
    const paused = await waitFor('the pause', async () => {
      const x = await client.beta.deployments.retrieve(d.id);
      return x.status === 'paused' ? x : null;
    });
    same(paused.paused_reason, { type: 'error', error: { type: 'environment_archived_error' } }, 'paused_reason');
    const failed = await runsOf(client, d.id, { has_error: true });
    check(failed.length === 1 && failed[0].session_id === null && failed[0].error.type === 'environment_archived_error', JSON.stringify(failed));
    // a missing agent: its rows removed from hull.db behind the server's back
    const env2 = await client.beta.environments.create({ name: 'other', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
    const agent2 = await client.beta.agents.create({ name: 'doomed', model: MODEL, system: 'x' });
    const d2 = await client.beta.deployments.create({ name: 'orphan', agent: agent2.id, environment_id: env2.id, initial_events: EVENTS });
    check(/^agent_[A-Za-z0-9]+$/.test(agent2.id), agent2.id);
    if (PG) execFileSync('psql', ['-q', '-v', 'ON_ERROR_STOP=1', PG, '-c', `DELETE FROM agents WHERE id = '${agent2.id}'`]);
    else execFileSync('python3', ['-c', 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM agents WHERE id=?", (sys.argv[2],)); c.commit()',
      path.join(home, 'hull.db'), agent2.id]);
    const run = await client.beta.deployments.run(d2.id);
    same([run.session_id, run.error && run.error.type], [null, 'agent_not_found_error'], 'the run names the missing agent');
    const gone = await client.beta.deployments.retrieve(d2.id);
    check(gone.archived_at, 'archived');
  });

  await dcase('kill -9 with runs due, then a restart: no scheduled run is made twice, none replayed', CLOCK, async (ctx) => {
    const { agent, env } = await agentAndEnv(ctx.client);
    const d = await ctx.client.beta.deployments.create({ name: 'restart', agent: agent.id, environment_id: env.id, initial_events: EVENTS,
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' } });
    await waitFor('a first run', async () => (await runsOf(ctx.client, d.id)).length >= 2);
    await ctx.restart('kill'); // the test clock starts again from its start: every due time already claimed comes up again
    const before = await runsOf(ctx.client, d.id);
    const last = before.map((r) => r.trigger_context.scheduled_at).sort().pop();
    // the test clock starts again with the new server (a minute a second): the first run past the
    // last is due as many seconds after its start as the last one's minutes past CLOCK_START, + 1
    const dueMs = ((Date.parse(last) / 1000 - CLOCK_START) / 60 + 1) * 1000;
    const after = await waitFor('a run after the restart', async () => {
      const r = await runsOf(ctx.client, d.id);
      return r.some((x) => x.trigger_context.scheduled_at > last) ? r : null;
    }, dueMs + 60000);
    const at = after.map((r) => r.trigger_context.scheduled_at);
    same(new Set(at).size, at.length, `no doubled run (${at.sort().join(' ')})`);
    await ctx.client.beta.deployments.pause(d.id);
  });
  done();
})();
