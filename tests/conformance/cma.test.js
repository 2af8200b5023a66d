// cma.test.js: hull serve's /v1 agent service (Claude Managed Agents wire) driven by the official
// `@anthropic-ai/sdk`, unchanged, against a real `hull serve` whose model is `hull mock-model`:
// the minimal flow of ../shared/reference/cma-api.md §7 and every case it lists as worth adding
// (pagination, version conflict, events list = stream, always_ask allow and deny, custom tool,
// interrupt, archive and delete, 404 as NotFoundError), keys, and Last-Event-ID resumption.
// CMA_SDK names the SDK module (default @anthropic-ai/sdk; anthropic-sdk-0129 is 0.129.0).
// Every case starts its own mock and server (HULL_HOME in a temp dir, a key from `hull key create`).
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, startNodes, pgCreateDb, pgDropDb, PG_HOST, sleep, countingFetch, Reader, v1Headers, readSSE, keyCreate, toolResults, MODEL } = require('./cma-lib.js');
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');

// CMA_PG_HOST (test-cma-sdk-nodes.sh): every case on three nodes on one PostgreSQL, the client's
// calls spread over them (cma-lib.js's startNodes), the database checked (`hull db check`) after.
const NODES = PG_HOST !== '';
const TAG = `cma[sdk ${SDK_VERSION}${NODES ? ', 3 nodes on PostgreSQL' : ''}]`;
const OLD_SDK = /^0\./.test(SDK_VERSION);
const CASE_S = 300; // a whole case, at most (a stuck server fails the case, never hangs the suite)

// The event types SDK 0.x (≤0.135) yields from a stream; it drops any other (cma-api.md §6).
const OLD_SDK_TYPES = new Set(['user.message', 'user.interrupt', 'user.tool_confirmation', 'user.custom_tool_result',
  'user.tool_result', 'agent.message', 'agent.thinking', 'agent.tool_use', 'agent.tool_result', 'agent.mcp_tool_use',
  'agent.mcp_tool_result', 'agent.custom_tool_use', 'agent.thread_context_compacted', 'session.status_running',
  'session.status_idle', 'session.status_rescheduled', 'session.status_terminated', 'session.error', 'session.deleted',
  'session.updated', 'span.model_request_start', 'span.model_request_end', 'span.outcome_evaluation_start',
  'span.outcome_evaluation_ongoing', 'span.outcome_evaluation_end', 'user.define_outcome', 'system.message']);
const streamable = (e) => !OLD_SDK || OLD_SDK_TYPES.has(e.type);

// One case: a mock of script, a fresh hull serve at it with a key, an SDK client with that key.
// fn({mock, srv, key, client, fetch}); fetch is the client's counting fetch.
// The cases the nodes run has (each costs a database and three nodes: seconds): those whose calls
// spread over nodes matter (a session's turns, streams, confirmations, interrupt, delete; pages);
// the rest (keys, 404s, versions) read and write one store as on one node.
const NODE_CASES = /^(§7|events\.list|Last-Event-ID|agents\.list|always_ask, allow|custom tool|user\.interrupt|archive and delete)/;

// CMA_ONLY=REGEX runs only the cases whose name matches.
function cma(name, script, fn, opts = {}) {
  if (process.env.CMA_ONLY && !new RegExp(process.env.CMA_ONLY).test(name)) return Promise.resolve();
  if (NODES && !NODE_CASES.test(name)) return Promise.resolve();
  return test(`${TAG}: ${name}`, script, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-cma-home-'));
    let srv = null;
    let timer;
    let db = null;
    const t0 = Date.now();
    try {
      db = NODES ? await pgCreateDb() : null;
      const key = opts.open ? null : keyCreate(home, db);
      srv = NODES ? await startNodes(mock.url, db, 3, opts.serve || {}) : await startServe(mock.url, { home, ...(opts.serve || {}) });
      const f = countingFetch(NODES ? srv.route : null);
      const client = new Anthropic({ baseURL: srv.url, apiKey: key || 'no-key-exists', fetch: f, timeout: 120000 });
      await Promise.race([
        fn({ mock, srv, key, client, fetch: f }),
        new Promise((_, reject) => {
          timer = setTimeout(() => { reject(new Error(`the case took over ${CASE_S} s`)); srv.kill(); }, CASE_S * 1000);
        }),
      ]);
    } catch (e) {
      if (srv) e.message += ` | hull serve log: ${srv.log().split('\n').filter((l) => /level=(error|warn)/.test(l)).slice(-3).join(' / ')}`;
      throw e;
    } finally {
      clearTimeout(timer);
      if (srv) await srv.stop(true);
      if (db) {
        // every session's events numbered 1..N, no gap, the counter at N, whichever node appended
        const r = spawnSync(process.env.HULL, ['db', 'check', '--db', db], { encoding: 'utf8', timeout: 60000 });
        pgDropDb(db);
        if (r.status !== 0) throw new Error(`hull db check: exit ${r.status}: ${(r.stdout + r.stderr).slice(0, 400)}`);
      }
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
      if (NODES) console.log(`# ${name.slice(0, 40)}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  });
}

function errorType(e) {
  return e.type || (e.error && e.error.error && e.error.error.type);
}

// The error's body (the envelope), whatever the SDK version keeps it as.
function envelope(e) {
  return e.error && e.error.type === 'error' ? e.error : null;
}

function checkEnvelope(e, status, type, what) {
  same(e.status, status, `${what}: status`);
  same(errorType(e), type, `${what}: error.type`);
  const env = envelope(e);
  check(env && typeof env.error.message === 'string' && env.error.message.length > 0, `${what}: envelope message: ${JSON.stringify(e.error)}`);
  check(env && typeof env.request_id === 'string' && env.request_id.length > 0, `${what}: envelope request_id: ${JSON.stringify(e.error)}`);
  const retry = e.headers && (typeof e.headers.get === 'function' ? e.headers.get('x-should-retry') : e.headers['x-should-retry']);
  same(retry, 'false', `${what}: x-should-retry`);
}

const GLOB_ONLY = (policy = 'always_allow') => [{
  type: 'agent_toolset_20260401', default_config: { enabled: false },
  configs: [{ name: 'glob', enabled: true, permission_policy: { type: policy } }],
}];

async function setup(client, tools = GLOB_ONLY(), extra = {}) {
  const agent = await client.beta.agents.create({ name: 'conformance', model: MODEL, system: 'You are the conformance agent.', tools, ...extra });
  const env = await client.beta.environments.create({ name: 'conformance', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  return { agent, env, session };
}

function userMessage(text) {
  return { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] };
}

// The events of a turn without spans, the usage report (session.usage, cma-api.md §5.3: the
// turn's tokens, which SDK 0.x filters out anyway), hull's own progress events (hull.*), and the
// user.message echo at its start.
function gist(events) {
  return events.filter((e) => !e.type.startsWith('span.') && !e.type.startsWith('hull.') &&
    e.type !== 'session.usage' && e.type !== 'user.message');
}

function checkEventIds(events, what) {
  for (const e of events) {
    check(typeof e.id === 'string' && /^sevt_/.test(e.id), `${what}: ${e.type} id ${JSON.stringify(e.id)}`);
    check(typeof e.processed_at === 'string' && e.processed_at.length > 0, `${what}: ${e.type} processed_at ${JSON.stringify(e.processed_at)}`);
  }
}

async function listAll(client, sessionId, params = {}) {
  const out = [];
  for await (const e of client.beta.sessions.events.list(sessionId, params)) out.push(e);
  return out;
}

const MINIMAL = {
  then: 'error',
  steps: [
    { tool_calls: [{ name: 'glob', input: { pattern: '*' }, id: 'toolu_glob1' }], usage: { input_tokens: 100, output_tokens: 10 } },
    { text: 'The workspace listing is in.', usage: { input_tokens: 150, output_tokens: 20 } },
  ],
};

// §7 steps 2-9; returns what the later cases reuse.
async function minimalFlow({ mock, client }) {
  const agent = await client.beta.agents.create({
    name: 'quickstart', model: MODEL, system: 'You are the conformance agent.', tools: GLOB_ONLY(),
  });
  check(/^agent_/.test(agent.id), `agent.id ${agent.id}`);
  same(agent.version, 1, 'agent.version');
  same(agent.type, 'agent', 'agent.type');
  check(agent.model && typeof agent.model === 'object' && agent.model.id === MODEL, `agent.model is an object: ${JSON.stringify(agent.model)}`);
  const env = await client.beta.environments.create({ name: 'quickstart', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
  check(/^env_/.test(env.id), `env.id ${env.id}`);
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  check(/^sesn_/.test(session.id), `session.id ${session.id}`);
  same(session.status, 'idle', 'a new session');

  const reader = new Reader(await client.beta.sessions.events.stream(session.id));
  const sent = await client.beta.sessions.events.send(session.id, userMessage('List the files in the workspace.'));
  check(Array.isArray(sent.data) && sent.data.length === 1 && typeof sent.data[0].id === 'string' && sent.data[0].id, `send: ${JSON.stringify(sent)}`);
  same(sent.data[0].type, 'user.message', 'send: the echo type');
  const events = await reader.idle();
  reader.close();

  checkEventIds(events, 'stream');
  const echo = events.filter((e) => e.type === 'user.message');
  check(echo.length <= 1 && (!echo.length || (events[0].type === 'user.message' && echo[0].id === sent.data[0].id)),
    `the user.message echo, if any, first and with the sent id: [${events.map((e) => e.type)}]`);
  const g = gist(events);
  same(g.map((e) => e.type), ['session.status_running', 'agent.tool_use', 'agent.tool_result', 'agent.message', 'session.status_idle'],
    'event order (spans aside)');
  const [, use, result, message, idle] = g;
  same([use.name, use.input], ['glob', { pattern: '*' }], 'agent.tool_use name and input');
  same(result.tool_use_id, use.id, 'agent.tool_result.tool_use_id is the tool_use event id');
  same(message.content, [{ type: 'text', text: 'The workspace listing is in.' }], 'agent.message content');
  same(idle.stop_reason, { type: 'end_turn' }, 'stop_reason');

  const again = await client.beta.sessions.retrieve(session.id);
  same(again.status, 'idle', 'retrieve: status');
  check(again.usage && typeof again.usage.input_tokens === 'number' && typeof again.usage.output_tokens === 'number',
    `retrieve: usage ${JSON.stringify(again.usage)}`);
  same([again.usage.input_tokens, again.usage.output_tokens], [250, 30], 'retrieve: usage, both model requests summed');

  const reqs = await mock.requests();
  same(reqs.length, 2, 'model requests');
  same(reqs.map((r) => r.status), [200, 200], 'model answers');
  same(reqs[0].body.model, MODEL, 'the agent\'s model id reaches the provider');
  const offered = (reqs[0].body.tools || []).map((t) => t.name);
  check(offered.includes('glob') && !offered.some((n) => ['bash', 'read', 'write', 'edit', 'grep', 'web_fetch', 'web_search'].includes(n)),
    `the model is offered glob and no disabled tool: ${JSON.stringify(offered)}`);
  const sys = typeof reqs[0].body.system === 'string' ? reqs[0].body.system : JSON.stringify(reqs[0].body.system || '');
  check(sys.includes('You are the conformance agent.'), 'the agent\'s system prompt reaches the model');
  same(toolResults(reqs[0].body).length, 0, 'first request: no tool result');
  const tr = toolResults(reqs[1].body);
  same(tr.map((t) => [t.tool_use_id, t.is_error]), [['toolu_glob1', false]], 'second request: the glob result');
  return { agent, env, session, events, sent };
}

async function main() {
  await cma('§7 minimal flow: create, stream before send, glob tool turn, retrieve, two model requests', MINIMAL,
    async (ctx) => {
      await minimalFlow(ctx);
      // Both SDKs: the beta header; 0.x adds ?beta=true, which the server ignores.
      const posts = ctx.fetch.seen.filter((r) => r.method === 'POST');
      check(posts.every((r) => (r.headers['anthropic-beta'] || '').split(',').includes('managed-agents-2026-04-01')), 'beta header sent');
      check(ctx.fetch.seen.every((r) => r.status >= 200 && r.status < 300), `every request 2xx: ${JSON.stringify(ctx.fetch.seen.map((r) => [r.method, r.path, r.status]))}`);
      if (NODES) { // created on node 1, sent on node 2, streamed from node 3, the rest round-robin
        const on = (m, re) => [...new Set(ctx.fetch.seen.filter((r) => r.method === m && re.test(r.path)).map((r) => r.node))];
        same(on('POST', /^\/v1\/sessions$/), [0], 'sessions.create went to node 1');
        same(on('POST', /\/events$/), [1], 'events.send went to node 2');
        same(on('GET', /\/stream$/), [2], 'the stream came from node 3');
        same(new Set(ctx.fetch.seen.map((r) => r.node)).size, 3, 'every node was called');
      }
    });

  await cma('events.list equals the stream (ids, order), also paged with limit 3', MINIMAL, async (ctx) => {
    const { session, events } = await minimalFlow(ctx);
    const listed = await listAll(ctx.client, session.id);
    checkEventIds(listed, 'list');
    same(listed.filter(streamable).map((e) => [e.id, e.type]), events.map((e) => [e.id, e.type]), 'list vs stream');
    same(listed.map((e) => e.type).includes('user.message'), true, 'the user.message is listed');
    const paged = await listAll(ctx.client, session.id, { limit: 3 });
    same(paged.map((e) => e.id), listed.map((e) => e.id), 'list with limit 3 (following next_page)');
    const page = await ctx.client.beta.sessions.events.list(session.id, { limit: 3 });
    same(page.data.length, 3, 'first page size');
    check(page.next_page, `first page has next_page: ${JSON.stringify(page.next_page)}`);
  });

  await cma('Last-Event-ID (header and query) replays seq > N, gap-free and duplicate-free, then live',
    { then: 'error', steps: [...MINIMAL.steps, { text: 'second turn' }] }, async (ctx) => {
    const { session } = await minimalFlow(ctx);
    const listed = await listAll(ctx.client, session.id);
    const n = listed.length;
    const url = `${ctx.srv.url}/v1/sessions/${session.id}/events/stream`;
    const h = v1Headers({ 'x-api-key': ctx.key });
    const all = await readSSE(url, { ...h, 'last-event-id': '0' }, (fr) => fr.filter((f) => f.event !== 'ping').length >= n);
    same(all.status, 200, 'stream status');
    check(/^text\/event-stream/.test(all.headers.get('content-type') || ''), `content-type ${all.headers.get('content-type')}`);
    const body = (r) => r.frames.filter((f) => f.event !== 'ping');
    same(body(all).map((f) => [Number(f.id), f.event, f.json && f.json.id]), listed.map((e, i) => [i + 1, e.type, e.id]),
      'Last-Event-ID 0: every event, id: = seq 1..N, event: = type, data = the listed event');
    const k = 2;
    const tail = await readSSE(url, { ...h, 'last-event-id': String(k) }, (fr) => fr.filter((f) => f.event !== 'ping').length >= n - k);
    same(body(tail).map((f) => Number(f.id)), listed.slice(k).map((e, i) => k + 1 + i), `Last-Event-ID ${k}: seq ${k + 1}..${n}`);
    const q = await readSSE(`${url}?last_event_id=${n - 1}`, h, (fr) => fr.filter((f) => f.event !== 'ping').length >= 1);
    same(body(q).map((f) => [Number(f.id), f.json && f.json.id]), [[n, listed[n - 1].id]], '?last_event_id=N-1: only the last');
    // Resume at the end, then a new turn: its events arrive live, continuing the sequence.
    const live = readSSE(url, { ...h, 'last-event-id': String(n) }, (fr) => fr.some((f) => f.event === 'session.status_idle'), 90000);
    await sleep(500);
    await ctx.client.beta.sessions.events.send(session.id, userMessage('again'));
    const got = body(await live);
    check(got.length > 0, 'live events after the resume point');
    same(got.map((f) => Number(f.id)), got.map((f, i) => n + 1 + i), 'live seqs continue N+1.. with no gap or duplicate');
    same(got[got.length - 1].event, 'session.status_idle', 'the live turn ends idle');
  });

  await cma('agents.list pages through next_page (limit 2 over 5 agents)', { steps: [{ text: 'unused' }] }, async ({ client, fetch: f }) => {
    const made = [];
    for (let i = 0; i < 5; i++) made.push((await client.beta.agents.create({ name: `pager-${i}`, model: MODEL })).id);
    const first = await client.beta.agents.list({ limit: 2 });
    same(first.data.length, 2, 'first page');
    check(first.next_page, `next_page on the first page: ${JSON.stringify(first.next_page)}`);
    const before = f.seen.length;
    const ids = [];
    for await (const a of client.beta.agents.list({ limit: 2 })) ids.push(a.id);
    same([...ids].sort(), [...made].sort(), 'all five, once each');
    const gets = f.seen.slice(before).filter((r) => r.method === 'GET' && r.path === '/v1/agents');
    same(gets.length, 3, 'pages fetched (2 + 2 + 1)');
    check(gets.slice(1).every((r) => new URLSearchParams(r.search).get('page')), 'later pages carry page=');
  });

  await cma('agents.update: version 1 -> 2; a stale version is 409 ConflictError, not retried', { steps: [{ text: 'unused' }] },
    async ({ client, fetch: f }) => {
      const a = await client.beta.agents.create({ name: 'versioned', model: MODEL, description: 'one' });
      const b = await client.beta.agents.update(a.id, { description: 'two', version: 1 });
      same([b.id, b.version, b.description], [a.id, 2, 'two'], 'updated');
      same((await client.beta.agents.retrieve(a.id, { version: 1 })).description, 'one', 'version 1 kept');
      const before = f.seen.length;
      const e = await rejects(client.beta.agents.update(a.id, { description: 'three', version: 1 }), Anthropic.ConflictError, 'stale version');
      checkEnvelope(e, 409, 'conflict_error', 'stale version');
      same(f.seen.slice(before).length, 1, 'requests for the stale update (no retry)');
      const now = await client.beta.agents.retrieve(a.id);
      same([now.version, now.description], [2, 'two'], 'nothing stored by the stale update');
    });

  await cma('always_ask, allow: requires_action names the tool_use, then tool_result and end_turn', MINIMAL, async ({ mock, client }) => {
    const { session } = await setup(client, GLOB_ONLY('always_ask'));
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, userMessage('List the files.'));
    const first = gist(await reader.idle());
    const use = first.find((e) => e.type === 'agent.tool_use');
    check(use && use.name === 'glob', `an agent.tool_use for glob: [${first.map((e) => e.type)}]`);
    same(first.filter((e) => e.type === 'agent.tool_result').length, 0, 'no tool_result before the confirmation');
    same(first[first.length - 1].stop_reason, { type: 'requires_action', event_ids: [use.id] }, 'stop_reason');
    if ('evaluated_permission' in use) same(use.evaluated_permission, 'ask', 'evaluated_permission');
    same((await client.beta.sessions.retrieve(session.id)).status, 'idle', 'waiting is idle');
    same((await mock.requests()).length, 1, 'one model request while waiting');
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' }] });
    const rest = gist(await reader.idle());
    reader.close();
    same(rest.map((e) => e.type).filter((t) => t !== 'user.tool_confirmation'),
      ['session.status_running', 'agent.tool_result', 'agent.message', 'session.status_idle'], 'after allow');
    const result = rest.find((e) => e.type === 'agent.tool_result');
    same([result.tool_use_id, result.is_error === true], [use.id, false], 'the tool ran');
    same(rest[rest.length - 1].stop_reason, { type: 'end_turn' }, 'end_turn');
    const reqs = await mock.requests();
    same(reqs.length, 2, 'model requests');
    same(toolResults(reqs[1].body).map((t) => [t.tool_use_id, t.is_error]), [['toolu_glob1', false]], 'the model got the result');
  });

  await cma('always_ask, deny: the tool does not run, the model gets an error result, end_turn', MINIMAL, async ({ mock, client }) => {
    const { session } = await setup(client, GLOB_ONLY('always_ask'));
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, userMessage('List the files.'));
    const first = gist(await reader.idle());
    const use = first.find((e) => e.type === 'agent.tool_use');
    check(use, `an agent.tool_use: [${first.map((e) => e.type)}]`);
    same(first[first.length - 1].stop_reason, { type: 'requires_action', event_ids: [use.id] }, 'stop_reason');
    await client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'deny', deny_message: 'not in this test' }],
    });
    const rest = gist(await reader.idle());
    reader.close();
    same(rest[rest.length - 1].stop_reason, { type: 'end_turn' }, 'end_turn');
    for (const r of rest.filter((e) => e.type === 'agent.tool_result')) same(r.is_error, true, 'a listed tool_result of a denied call is an error');
    const reqs = await mock.requests();
    same(reqs.length, 2, 'model requests');
    same(toolResults(reqs[1].body).map((t) => [t.tool_use_id, t.is_error]), [['toolu_glob1', true]], 'the model got an error result');
  });

  await cma('custom tool: agent.custom_tool_use, requires_action, user.custom_tool_result reaches the model, end_turn', {
    then: 'error',
    steps: [
      { tool_calls: [{ name: 'get_weather', input: { city: 'Paris' }, id: 'toolu_custom1' }] },
      { text: 'The client said: {{last_tool_result}}' },
    ],
  }, async ({ mock, client }) => {
    const tools = [{ type: 'custom', name: 'get_weather', description: 'The weather in a city.',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
    const { session } = await setup(client, tools);
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, userMessage('Weather in Paris?'));
    const first = gist(await reader.idle());
    const use = first.find((e) => e.type === 'agent.custom_tool_use');
    check(use, `an agent.custom_tool_use: [${first.map((e) => e.type)}]`);
    same([use.name, use.input], ['get_weather', { city: 'Paris' }], 'name and input');
    same(first[first.length - 1].stop_reason, { type: 'requires_action', event_ids: [use.id] }, 'stop_reason');
    const reqs1 = await mock.requests();
    const offered = (reqs1[0].body.tools || []).find((t) => t.name === 'get_weather');
    check(offered && offered.input_schema && offered.input_schema.properties && offered.input_schema.properties.city,
      `the custom tool is offered with its schema: ${JSON.stringify(reqs1[0].body.tools)}`);
    await client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [{ type: 'text', text: 'sunny, 21 C' }] }],
    });
    const rest = gist(await reader.idle());
    reader.close();
    const msg = rest.find((e) => e.type === 'agent.message');
    check(msg, `an agent.message: [${rest.map((e) => e.type)}]`);
    same(msg.content, [{ type: 'text', text: 'The client said: sunny, 21 C' }], 'the model saw the client\'s result');
    same(rest[rest.length - 1].stop_reason, { type: 'end_turn' }, 'end_turn');
    const reqs = await mock.requests();
    same(reqs.length, 2, 'model requests');
    same(toolResults(reqs[1].body).map((t) => [t.tool_use_id, t.text, t.is_error]), [['toolu_custom1', 'sunny, 21 C', false]],
      'the second request carries the client\'s result');
  });

  await cma('user.interrupt while a turn runs ends it idle', {
    steps: [{ text: 'far too late', delay_ms: 120000 }, { text: 'after the interrupt' }],
  }, async ({ mock, client }) => {
    const { session } = await setup(client);
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, userMessage('Take your time.'));
    await reader.until((e) => e.type === 'session.status_running', 'session.status_running');
    await reader.until((e) => e.type === 'span.model_request_start', 'span.model_request_start', 30000).catch(() => {});
    await sleep(300);
    same((await client.beta.sessions.retrieve(session.id)).status, 'running', 'running before the interrupt');
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] });
    const rest = await reader.idle('session.status_idle after the interrupt (the model is still delaying 120 s)', 60000);
    check(!rest.some((e) => e.type === 'agent.message'), `no agent.message from the cut request: [${reader.seen()}]`);
    same((await client.beta.sessions.retrieve(session.id)).status, 'idle', 'idle after the interrupt');
    // The session still works.
    await client.beta.sessions.events.send(session.id, userMessage('Now answer.'));
    const next = gist(await reader.idle());
    reader.close();
    const msg = next.find((e) => e.type === 'agent.message');
    check(msg, `a turn after the interrupt answers: [${next.map((e) => e.type)}]`);
    same(next[next.length - 1].stop_reason, { type: 'end_turn' }, 'end_turn');
    check((await mock.requests()).length >= 1, 'the model was asked');
  });

  await cma('archive and delete: sessions.archive (then sending is 409), sessions.delete, environments.delete, agents.archive',
    { steps: [{ text: 'unused' }] }, async ({ client, srv, key }) => {
      const { agent, env, session } = await setup(client);
      const arch = await client.beta.sessions.archive(session.id);
      same([arch.id, arch.type], [session.id, 'session'], 'archive returns the session');
      check(typeof arch.archived_at === 'string' && arch.archived_at, `archived_at ${arch.archived_at}`);
      const e = await rejects(client.beta.sessions.events.send(session.id, userMessage('hello?')), Anthropic.ConflictError, 'send to archived');
      checkEnvelope(e, 409, 'conflict_error', 'send to archived');
      same((await listAll(client, session.id)).length, 0, 'nothing stored for the archived session');

      // delete: {id, type:"session_deleted"}; an open stream gets session.deleted and ends.
      const s2 = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
      const reader = new Reader(await client.beta.sessions.events.stream(s2.id));
      await sleep(200);
      same(await client.beta.sessions.delete(s2.id), { id: s2.id, type: 'session_deleted' }, 'sessions.delete');
      if (streamable({ type: 'session.deleted' })) await reader.until((e) => e.type === 'session.deleted', 'session.deleted', 30000);
      const end = await Promise.race([reader.it.next(), sleep(30000).then(() => 'open')]);
      reader.close();
      check(end !== 'open' && end.done, `the stream ends after session.deleted: ${JSON.stringify(end)}`);
      await rejects(client.beta.sessions.retrieve(s2.id), Anthropic.NotFoundError, 'retrieve a deleted session');
      void srv; void key;

      const envDel = await client.beta.environments.create({ name: 'to-delete', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
      same(await client.beta.environments.delete(envDel.id), { id: envDel.id, type: 'environment_deleted' }, 'environments.delete');
      await rejects(client.beta.environments.retrieve(envDel.id), Anthropic.NotFoundError, 'retrieve a deleted environment');

      const aa = await client.beta.agents.archive(agent.id);
      same(aa.id, agent.id, 'agents.archive returns the agent');
      check(typeof aa.archived_at === 'string' && aa.archived_at, `agent archived_at ${aa.archived_at}`);
      const listed = [];
      for await (const a of client.beta.agents.list()) listed.push(a.id);
      check(!listed.includes(agent.id), 'an archived agent is not listed by default');
      const all = [];
      for await (const a of client.beta.agents.list({ include_archived: true })) all.push(a.id);
      check(all.includes(agent.id), 'include_archived lists it');
      same((await client.beta.agents.retrieve(agent.id)).id, agent.id, 'an archived agent is still retrievable');
    });

  await cma('unknown ids: NotFoundError, status 404, not_found_error, the envelope', { steps: [{ text: 'unused' }] }, async ({ client }) => {
    for (const [what, p] of [
      ['agents.retrieve', () => client.beta.agents.retrieve('agent_0000000000000000nothere')],
      ['environments.retrieve', () => client.beta.environments.retrieve('env_0000000000000000nothere')],
      ['sessions.retrieve', () => client.beta.sessions.retrieve('sesn_0000000000000000nothere')],
      ['sessions.events.list', () => client.beta.sessions.events.list('sesn_0000000000000000nothere')],
      ['sessions.events.send', () => client.beta.sessions.events.send('sesn_0000000000000000nothere', userMessage('x'))],
      ['sessions.events.stream', () => client.beta.sessions.events.stream('sesn_0000000000000000nothere')],
      ['agents.update', () => client.beta.agents.update('agent_0000000000000000nothere', { description: 'x' })],
      ['sessions.delete', () => client.beta.sessions.delete('sesn_0000000000000000nothere')],
    ]) {
      const e = await rejects(p(), Anthropic.NotFoundError, what);
      check(e instanceof Anthropic.APIError, `${what}: an APIError`);
      checkEnvelope(e, 404, 'not_found_error', what);
    }
  });

  // (files.upload was this case's route until hull served /v1/files: files.test.js tests it)
  await cma('a route hull does not serve: a multipart upload (64 KiB and 3 MiB) is 404 in the envelope, not a dropped connection',
    { steps: [{ text: 'unused' }] }, async ({ srv, key }) => {
      for (const size of [64 << 10, 3 << 20]) {
        const what = `a multipart POST of ${size} bytes to /v1/no_such_uploads`;
        const form = new FormData();
        form.append('file', new Blob([Buffer.alloc(size, 'u')]), 'data.bin');
        const headers = v1Headers({ 'x-api-key': key });
        delete headers['content-type']; // fetch writes the multipart one with its boundary
        const res = await fetch(`${srv.url}/v1/no_such_uploads`, { method: 'POST', headers, body: form });
        same(res.status, 404, `${what}: status`);
        const env = await res.json();
        same([env.type, env.error && env.error.type], ['error', 'not_found_error'], `${what}: the envelope`);
      }
    });

  await cma('keys: a request without a key or with a wrong one is 401 AuthenticationError; keys made over the API work until deleted',
    { steps: [{ text: 'unused' }] }, async ({ client, srv, key }) => {
      same((await client.beta.agents.list({ limit: 1 })).data.length, 0, 'the key from hull key create works');
      const bearer = new Anthropic({ baseURL: srv.url, authToken: key, maxRetries: 0 });
      same((await bearer.beta.agents.list({ limit: 1 })).data.length, 0, 'Authorization: Bearer works');
      const wrong = new Anthropic({ baseURL: srv.url, apiKey: 'hull_wrongwrongwrongwrongwrong', maxRetries: 0 });
      const e = await rejects(wrong.beta.agents.list(), Anthropic.AuthenticationError, 'wrong key');
      checkEnvelope(e, 401, 'authentication_error', 'wrong key');
      const none = await fetch(`${srv.url}/v1/agents`, { headers: v1Headers() });
      same(none.status, 401, 'no key: status');
      const nb = await none.json();
      same([nb.type, nb.error && nb.error.type], ['error', 'authentication_error'], 'no key: envelope');
      same(none.headers.get('x-should-retry'), 'false', 'no key: x-should-retry');
      // POST /v1/api-keys: a second key, usable, then deleted.
      const made = await fetch(`${srv.url}/v1/api-keys`, { method: 'POST', headers: v1Headers({ 'x-api-key': key }), body: JSON.stringify({ name: 'second' }) });
      same(made.status, 200, 'POST /v1/api-keys');
      const k2 = await made.json();
      same([k2.type, k2.name, typeof k2.key, typeof k2.id], ['api_key', 'second', 'string', 'string'], 'the new key object');
      const c2 = new Anthropic({ baseURL: srv.url, apiKey: k2.key, maxRetries: 0 });
      same((await c2.beta.agents.list({ limit: 1 })).data.length, 0, 'the second key works');
      const listed = await (await fetch(`${srv.url}/v1/api-keys`, { headers: v1Headers({ 'x-api-key': key }) })).json();
      check(Array.isArray(listed.data) && listed.data.some((k) => k.id === k2.id) && listed.data.every((k) => !('key' in k) || !k.key),
        `GET /v1/api-keys lists it without the secret: ${JSON.stringify(listed)}`);
      const del = await fetch(`${srv.url}/v1/api-keys/${k2.id}`, { method: 'DELETE', headers: v1Headers({ 'x-api-key': key }) });
      check(del.status >= 200 && del.status < 300, `DELETE /v1/api-keys/{id}: ${del.status}`);
      await rejects(c2.beta.agents.list(), Anthropic.AuthenticationError, 'a deleted key');
    });

  await cma('keys: open on loopback while no key exists', { steps: [{ text: 'unused' }] }, async ({ srv }) => {
    const res = await fetch(`${srv.url}/v1/agents`, { headers: v1Headers() });
    same(res.status, 200, 'GET /v1/agents without a key while none exists');
    same((await res.json()).data, [], 'no agents');
  }, { open: true });

  done();
}

main();
