// cma-outcomes.test.js: outcomes, budgets and the session's states on hull serve's /v1, driven by
// the official `@anthropic-ai/sdk`, unchanged, against a real `hull serve` whose model is a
// scripted `hull mock-model`:
// - a budget (max_list_cost, priced from config.json's "pricing") stops a turn after the model
//   request that crossed it, idles with budget_reached, and raising it resumes the turn; usage
//   carries list_cost; bad budgets and a model with no price are clear 400s;
// - an outcome whose first answer the grader sends back gets exactly one revision, then passes;
//   bad outcome fields are clear 400s;
// - a retried model failure shows `rescheduling` (session.status_rescheduled), a fatal one ends the
//   session `terminated`, and the list's statuses[] filter finds each.
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, keyCreate, Reader, MODEL, sleep, v1Headers } = require('./cma-lib.js');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const TAG = `cma-outcomes[sdk ${SDK_VERSION}]`;
// $10 per million input tokens: 1,000 input tokens are one cent.
const PRICING = { [MODEL]: { input: 10, output: 0, cache_read: 1, cache_write: 12.5 } };

// A webhook receiver on loopback subscribed to types: hooks.types() lists what it got, in order.
async function subscribe(srv, key, types) {
  const got = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => { try { got.push(JSON.parse(body).data.type); } catch { got.push(`unparsed: ${body}`); } res.end('ok'); });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const res = await fetch(`${srv.url}/v1/webhooks`, { method: 'POST', headers: v1Headers({ 'x-api-key': key }),
    body: JSON.stringify({ url: `http://127.0.0.1:${server.address().port}/hook`, event_types: types }) });
  check(res.status === 200, `a webhook subscribed: ${res.status} ${await res.text()}`);
  return {
    types: () => got.slice(),
    wait: async (type, ms = 15000) => {
      for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (got.includes(type)) return;
      throw new Error(`no ${type} delivered within ${ms} ms: [${got}]`);
    },
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
}

function cma(name, script, fn, config = { pricing: PRICING, web: { allow_cidrs: ['127.0.0.0/8'] } }) {
  return test(`${TAG}: ${name}`, script, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-cma-home-'));
    let srv = null;
    try {
      if (config) fs.writeFileSync(path.join(home, 'config.json'), JSON.stringify(config));
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home });
      const client = new Anthropic({ baseURL: srv.url, apiKey: key, timeout: 60000, maxRetries: 0 });
      await fn({ mock, srv, key, client, subscribe: (types) => subscribe(srv, key, types) });
    } catch (e) {
      if (srv) e.message += ` | hull serve log: ${srv.log().split('\n').filter((l) => /level=(error|warn)/.test(l)).slice(-3).join(' / ')}`;
      throw e;
    } finally {
      if (srv) await srv.stop(true);
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
    }
  });
}

const WEATHER = [{ type: 'custom', name: 'get_weather', description: 'The weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];

async function setup(client, tools = WEATHER, sessionExtra = {}) {
  const agent = await client.beta.agents.create({ name: 'outcomes', model: MODEL, system: 'You are the test agent.', tools });
  const env = await client.beta.environments.create({ name: 'outcomes', config: { type: 'cloud', networking: { type: 'limited' } } });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, ...sessionExtra });
  return { agent, env, session };
}

function userMessage(text) {
  return { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] };
}

function status(e) {
  return e.status || (e.response && e.response.status);
}

async function bad(promise, what, re) {
  const e = await rejects(promise, Anthropic.BadRequestError, what);
  if (re) check(re.test(e.message), `${what}: the message says why: ${e.message}`);
  return e;
}


// The console's own renderers (console/events.js) on a session's real events, with a DOM of
// plain objects (text only: enough to read what a user would see).
function fakeDocument() {
  const node = (tag) => ({
    tag, children: [], attrs: {}, dataset: {}, style: {}, classList: { add() {} },
    setAttribute(k, v) { this.attrs[k] = v; }, addEventListener() {}, appendChild(c) { this.children.push(c); return c; },
    get text() { return this.children.map((c) => (typeof c.data === 'string' ? c.data : c.text)).join(''); },
  });
  return { createElement: node, createElementNS: (_, t) => node(t), createTextNode: (data) => ({ data }) };
}

async function consoleView(client, sessionId) {
  globalThis.document = fakeDocument();
  let ev;
  // the console's modules, copied beside a package.json that makes them ES modules (Node 18 does
  // not detect the syntax by itself)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-console-'));
  try {
    fs.writeFileSync(path.join(dir, 'package.json'), '{"type": "module"}');
    for (const f of ['events.js', 'dom.js']) fs.copyFileSync(path.join(__dirname, '..', '..', 'console', f), path.join(dir, f));
    ev = await import(path.join(dir, 'events.js'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const model = new ev.SessionModel();
  let seq = 0;
  for await (const e of client.beta.sessions.events.list(sessionId)) model.add({ ...e, seq: ++seq });
  const items = model.items.map((it) => ev.renderItem(model, it, {}).text);
  const timeline = ev.renderTimeline(model).text;
  return { items, timeline, status: model.status() };
}

async function main() {
  await cma('budget: the request that crosses it is the last, budget_reached, raising it resumes', {
    then: 'error',
    steps: [
      { tool_calls: [{ name: 'get_weather', input: { city: 'Paris' } }], usage: { input_tokens: 600, output_tokens: 5 } },
      { tool_calls: [{ name: 'get_weather', input: { city: 'Rome' } }], usage: { input_tokens: 600, output_tokens: 5 } },
      { text: 'Paris and Rome: done.', usage: { input_tokens: 100, output_tokens: 5 } },
    ],
  }, async ({ mock, client, subscribe }) => {
    const hooks = await subscribe(['session.budget_reached']);
    const budget = { type: 'limit', max_list_cost: { amount: '1', currency: 'USD' } };
    const { session } = await setup(client, WEATHER, { budget });
    same(session.budget, budget, 'the budget is echoed');
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, userMessage('Weather in Paris and Rome?'));
    for (let i = 0; i < 2; i++) {
      const evs = await reader.idle();
      const use = evs.find((e) => e.type === 'agent.custom_tool_use');
      check(use, `call ${i + 1}: an agent.custom_tool_use: [${evs.map((e) => e.type)}]`);
      same(evs[evs.length - 1].stop_reason.type, 'requires_action', `call ${i + 1}: requires_action`);
      await client.beta.sessions.events.send(session.id, {
        events: [{ type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [{ type: 'text', text: 'sunny' }] }],
      });
    }
    const last = await reader.idle();
    same(last[last.length - 1].stop_reason, { type: 'budget_reached' }, 'the turn stops on the budget');
    await hooks.wait('session.budget_reached'); // the webhook of it, once it is durable
    check(!last.some((e) => e.type === 'span.model_request_start'), `no model request after the crossing one: [${last.map((e) => e.type)}]`);
    same((await mock.requests()).length, 2, 'model requests: the one that crossed the budget was the last');
    const usageEv = last.filter((e) => e.type === 'session.usage').pop();
    check(usageEv && usageEv.usage.list_cost, `session.usage carries list_cost: ${JSON.stringify(usageEv)}`);
    let s = await client.beta.sessions.retrieve(session.id);
    same(s.status, 'idle', 'idle, not terminated');
    same(s.usage.list_cost, { amount: '2', currency: 'USD' }, 'list_cost: 1,200 input tokens at $10/MTok, rounded up to 2 cents');
    same(s.usage.input_tokens, 1200, 'input tokens summed per request');
    // a new message while the budget is spent: no model request
    await client.beta.sessions.events.send(session.id, userMessage('Anything else?'));
    const again = await reader.idle();
    same(again[again.length - 1].stop_reason, { type: 'budget_reached' }, 'a message on a spent budget');
    await sleep(1000); // a second webhook would be out by now
    same(hooks.types(), ['session.budget_reached'], 'session.budget_reached once for one budget');
    await hooks.close();
    same((await mock.requests()).length, 2, 'still no model request');
    // lowering it is refused, raising it resumes
    await bad(client.beta.sessions.update(session.id, { budget: { type: 'limit', max_list_cost: { amount: '0', currency: 'USD' } } }),
      'a budget below what was spent', /already spent/);
    const up = await client.beta.sessions.update(session.id, { budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } } });
    same(up.budget.max_list_cost.amount, '100', 'the raised budget');
    const resumed = await reader.idle();
    reader.close();
    same(resumed[resumed.length - 1].stop_reason, { type: 'end_turn' }, 'the resumed turn ends');
    check(resumed.some((e) => e.type === 'agent.message' && e.content[0].text === 'Paris and Rome: done.'),
      `the resumed turn answers: [${resumed.map((e) => e.type)}]`);
    check(resumed.some((e) => e.type === 'session.updated' && e.budget), 'session.updated with the budget');
    same((await mock.requests()).length, 3, 'one more model request after the raise');
    s = await client.beta.sessions.retrieve(session.id);
    same(s.usage.list_cost, { amount: '2', currency: 'USD' }, 'list_cost after 1,300 tokens');
    // removing it
    const off = await client.beta.sessions.update(session.id, { budget: null });
    same(off.budget, null, 'budget removed');
  });

  // the model request's end is logged with what follows it (one commit): an answer paused
  // (pause_turn) goes on without a call between, and the next request's budget check must count
  // the paused one's usage all the same
  await cma('budget: a paused answer that crosses it is the last request', {
    then: 'error',
    steps: [
      { text: 'Half an answer', stop_reason: 'pause_turn', usage: { input_tokens: 1200, output_tokens: 5 } },
      { text: 'the rest', usage: { input_tokens: 100, output_tokens: 5 } },
    ],
  }, async ({ mock, client }) => {
    const budget = { type: 'limit', max_list_cost: { amount: '1', currency: 'USD' } };
    const { session } = await setup(client, WEATHER, { budget });
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, userMessage('Go on'));
    const evs = await reader.idle();
    reader.close();
    same(evs[evs.length - 1].stop_reason, { type: 'budget_reached' }, `the turn stops on the budget: [${evs.map((e) => e.type)}]`);
    same((await mock.requests()).length, 1, 'model requests: the paused one crossed the budget and was the last');
    const s = await client.beta.sessions.retrieve(session.id);
    same(s.usage.input_tokens, 1200, 'its usage counted');
  });

  await cma('budget: bad budgets, currencies and amounts are 400s that say why', {
    steps: [{ text: 'unused' }],
  }, async ({ client }) => {
    const agent = await client.beta.agents.create({ name: 'b', model: MODEL, tools: WEATHER });
    const env = await client.beta.environments.create({ name: 'b', config: { type: 'cloud', networking: { type: 'limited' } } });
    const mk = (budget) => client.beta.sessions.create({ agent: agent.id, environment_id: env.id, budget });
    const lim = (amount, currency = 'USD') => ({ type: 'limit', max_list_cost: { amount, currency } });
    for (const amount of ['25.00', '-1', '0100', 'abc', '', '1234567890123456', ' 5'])
      await bad(mk(lim(amount)), `amount ${JSON.stringify(amount)}`, /amount/);
    await bad(mk(lim(2500)), 'a number amount', /amount/);
    await bad(mk(lim('100', 'EUR')), 'currency EUR', /currency/);
    await bad(mk({ type: 'cap', max_list_cost: { amount: '1', currency: 'USD' } }), 'type cap', /type/);
    await bad(mk({ type: 'limit' }), 'no max_list_cost', /max_list_cost/);
    await bad(mk({ type: 'limit', max_list_cost: { amount: '1', currency: 'USD', extra: 1 } }), 'an unknown key', /extra/);
    const ok = await mk(lim('2500'));
    same(ok.budget, lim('2500'), 'a good budget');
    await bad(client.beta.sessions.update(ok.id, { budget: lim('1.5') }), 'update: amount 1.5', /amount/);
    const after = await client.beta.sessions.retrieve(ok.id);
    same(after.budget, lim('2500'), 'a refused update changed nothing');
  });

  await cma('budget: a session whose model has no price is refused a budget', {
    steps: [{ text: 'unused' }],
  }, async ({ client }) => {
    const agent = await client.beta.agents.create({ name: 'np', model: MODEL, tools: WEATHER });
    const env = await client.beta.environments.create({ name: 'np', config: { type: 'cloud', networking: { type: 'limited' } } });
    const e = await bad(client.beta.sessions.create({ agent: agent.id, environment_id: env.id,
      budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } } }), 'no price', /no price/);
    check(/pricing/.test(e.message), `the message names config.json's pricing: ${e.message}`);
    const s = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    await bad(client.beta.sessions.update(s.id, { budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } } }),
      'no price, on update', /no price/);
  }, { pricing: { 'another-model': { input: 1, output: 1 } } });

  await cma('outcome: a failing first answer gets exactly one revision, then the grader is satisfied', {
    then: 'error',
    steps: [
      { text: 'A haiku about rain.', usage: { input_tokens: 50, output_tokens: 7 } },
      { text: '{"result": "needs_revision", "explanation": "The poem must mention the moon."}', usage: { input_tokens: 40, output_tokens: 12 } },
      { text: 'Rain on the moon pool.', usage: { input_tokens: 70, output_tokens: 6 } },
      { text: '{"result": "satisfied", "explanation": "It mentions the moon."}', usage: { input_tokens: 45, output_tokens: 9 } },
    ],
  }, async ({ mock, client, subscribe }) => {
    const hooks = await subscribe(['session.outcome_evaluation_ended']);
    const { session } = await setup(client, []);
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    const sent = await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.define_outcome',
      description: 'Write a haiku about rain.', rubric: { type: 'text', content: 'The poem mentions the moon.' }, max_iterations: 3 }] });
    const echo = sent.data[0];
    check(/^outc_[0-9a-z]{26}$/.test(echo.outcome_id || ''), `the echo has an outcome_id: ${JSON.stringify(echo)}`);
    same([echo.description, echo.rubric, echo.max_iterations], ['Write a haiku about rain.',
      { type: 'text', content: 'The poem mentions the moon.' }, 3], 'the echo');
    const evs = await reader.idle();
    reader.close();
    const types = evs.map((e) => e.type);
    same(evs.filter((e) => e.type === 'session.status_idle').length, 1, `one idle, after the verdict: [${types}]`);
    for (const end = Date.now() + 15000; Date.now() < end && hooks.types().length < 2;) await sleep(50);
    same(hooks.types(), ['session.outcome_evaluation_ended', 'session.outcome_evaluation_ended'], 'a webhook per verdict');
    await hooks.close();
    same(evs[evs.length - 1].stop_reason, { type: 'end_turn' }, 'end_turn');
    const spans = evs.filter((e) => e.type.startsWith('span.outcome_evaluation'));
    same(spans.map((e) => [e.type, e.iteration, e.outcome_id === echo.outcome_id]), [
      ['span.outcome_evaluation_start', 0, true], ['span.outcome_evaluation_ongoing', 0, true], ['span.outcome_evaluation_end', 0, true],
      ['span.outcome_evaluation_start', 1, true], ['span.outcome_evaluation_ongoing', 1, true], ['span.outcome_evaluation_end', 1, true],
    ], 'the evaluation spans');
    const ends = spans.filter((e) => e.type === 'span.outcome_evaluation_end');
    same(ends.map((e) => [e.result, e.explanation]), [['needs_revision', 'The poem must mention the moon.'],
      ['satisfied', 'It mentions the moon.']], 'the verdicts');
    same(ends[0].outcome_evaluation_start_id, spans[0].id, 'the end names its start');
    same(ends[1].usage.input_tokens, 45, 'the grading call\'s usage');
    same(evs.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text), ['A haiku about rain.', 'Rain on the moon pool.'],
      'the answer and its one revision');
    const reqs = await mock.requests();
    same(reqs.length, 4, 'model requests: answer, grade, revision, grade');
    const sys = (b) => JSON.stringify(b.system || '');
    check(/grader/.test(sys(reqs[1].body)) && JSON.stringify(reqs[1].body.messages).includes('The poem mentions the moon.') &&
      JSON.stringify(reqs[1].body.messages).includes('A haiku about rain.'), 'the grader sees the rubric and the answer');
    check(!reqs[1].body.tools || reqs[1].body.tools.length === 0, 'the grader has no tools');
    check(JSON.stringify(reqs[2].body.messages).includes('The poem must mention the moon.'), 'the revision turn is told why');
    check(JSON.stringify(reqs[0].body.messages).includes('The poem mentions the moon.'), 'the agent is given the rubric');
    const s = await client.beta.sessions.retrieve(session.id);
    same(s.status, 'idle', 'idle');
    same(s.outcome_evaluations.length, 1, 'one outcome evaluation');
    const oe = s.outcome_evaluations[0];
    same([oe.type, oe.outcome_id, oe.result, oe.iteration, oe.explanation, oe.description],
      ['outcome_evaluation', echo.outcome_id, 'satisfied', 1, 'It mentions the moon.', 'Write a haiku about rain.'], 'outcome_evaluations[0]');
    check(typeof oe.completed_at === 'string', 'completed_at');
    same(s.usage.input_tokens, 50 + 40 + 70 + 45, 'the grader\'s tokens count in the session\'s usage');
    const view = await consoleView(client, session.id);
    check(view.items.some((t) => t.includes('Write a haiku about rain.') && t.includes('Rubric: The poem mentions the moon.')),
      `the console shows the outcome: ${JSON.stringify(view.items)}`);
    check(view.items.some((t) => t === 'grader · evaluation 1: needs revision · The poem must mention the moon.') &&
      view.items.some((t) => t === 'grader · evaluation 2: satisfied · It mentions the moon.'), `the console shows each verdict: ${JSON.stringify(view.items)}`);
    check(/grading, evaluation 1: needs revision/.test(view.timeline) && /grading, evaluation 2: satisfied/.test(view.timeline),
      `the console's timeline has a bar per grading: ${view.timeline}`);
  });

  await cma('outcome: a rubric file, in initial_events; a slow grading\'s heartbeat; max_iterations bounds the revisions', {
    then: 'error',
    steps: [
      { text: 'first' },
      // 12.5 s: hull's heartbeat is due 10 s after its worker starts waiting on the grading call,
      // and on a loaded machine that worker may run a while after the call's thread began
      { text: '{"result": "needs_revision", "explanation": "no"}', delay_ms: 12500 },
      { text: 'Still missing: the capitals.' },
    ],
  }, async ({ mock, client }) => {
    const file = await client.beta.files.upload({ file: await sdk.toFile(Buffer.from('The answer is yes, in capitals.\n'), 'rubric.md', { type: 'text/markdown' }) });
    const { session } = await setup(client, [], { initial_events: [{ type: 'user.define_outcome', description: 'Say yes.',
      rubric: { type: 'file', file_id: file.id }, max_iterations: 1 }] });
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await reader.until((e) => e.type === 'session.status_idle', 'idle');
    reader.close();
    // from the log: the stream, opened after the session (its turn starts with it), may miss the
    // first events when the turn is quick
    const evs = [];
    for await (const e of client.beta.sessions.events.list(session.id)) evs.push(e);
    const end = evs.find((e) => e.type === 'span.outcome_evaluation_end');
    same(end && end.result, 'max_iterations_reached', 'the verdict at the bound');
    same(evs.filter((e) => e.type === 'span.outcome_evaluation_ongoing').length, 2, 'the heartbeat: at the start and after 10 s');
    const reqs = await mock.requests();
    same(reqs.length, 3, 'no revision past max_iterations: one acknowledgment turn, not graded');
    check(JSON.stringify(reqs[2].body.messages).includes('reached its limit of 1 evaluations'), 'the acknowledgment turn is told why');
    same(evs.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text), ['first', 'Still missing: the capitals.'], 'the answers');
    same(evs.filter((e) => e.type === 'session.status_idle').length, 1, 'one idle');
    check(JSON.stringify(reqs[1].body.messages).includes('The answer is yes, in capitals.'), 'the grader reads the rubric file');
    const binary = await client.beta.files.upload({ file: await sdk.toFile(Buffer.from([0, 255, 1, 2]), 'r.bin', { type: 'application/octet-stream' }) });
    await bad(client.beta.sessions.events.send(session.id, { events: [{ type: 'user.define_outcome', description: 'd',
      rubric: { type: 'file', file_id: binary.id } }] }), 'a binary rubric file', /not UTF-8 text/);
    const s = await client.beta.sessions.retrieve(session.id);
    same(s.outcome_evaluations[0].result, 'max_iterations_reached', 'outcome_evaluations');
  });

  await cma('outcome and budget: a spent budget makes no grading call; raising it goes on and grades', {
    then: 'error',
    steps: [
      { text: 'draft', usage: { input_tokens: 1500, output_tokens: 1 } },
      { text: 'final', usage: { input_tokens: 10, output_tokens: 1 } },
      { text: '{"result": "satisfied", "explanation": "fine"}', usage: { input_tokens: 10, output_tokens: 1 } },
    ],
  }, async ({ mock, client }) => {
    const { session } = await setup(client, [], { budget: { type: 'limit', max_list_cost: { amount: '1', currency: 'USD' } } });
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.define_outcome', description: 'Write.',
      rubric: { type: 'text', content: 'Anything.' } }] });
    const first = await reader.idle();
    same(first[first.length - 1].stop_reason, { type: 'budget_reached' }, 'the answer crossed the budget');
    check(!first.some((e) => e.type.startsWith('span.outcome_evaluation')), `no grading: [${first.map((e) => e.type)}]`);
    same((await mock.requests()).length, 1, 'no grading call');
    same((await client.beta.sessions.retrieve(session.id)).outcome_evaluations[0].result, 'running', 'the outcome stays open');
    await client.beta.sessions.update(session.id, { budget: { type: 'limit', max_list_cost: { amount: '500', currency: 'USD' } } });
    const rest = await reader.idle();
    reader.close();
    const end = rest.find((e) => e.type === 'span.outcome_evaluation_end');
    same(end && end.result, 'satisfied', `graded after the raise: [${rest.map((e) => e.type)}]`);
    same(rest[rest.length - 1].stop_reason, { type: 'end_turn' }, 'end_turn');
    same((await mock.requests()).length, 3, 'the resumed answer and its grading');
  });

  await cma('outcome: bad outcome fields are 400s that say why', {
    steps: [{ text: 'unused' }],
  }, async ({ mock, client }) => {
    const { session } = await setup(client, []);
    const send = (ev) => client.beta.sessions.events.send(session.id, { events: [{ type: 'user.define_outcome', ...ev }] });
    const rubric = { type: 'text', content: 'ok' };
    await bad(send({ rubric }), 'no description', /description/);
    await bad(send({ description: '', rubric }), 'empty description', /description/);
    await bad(send({ description: 'd' }), 'no rubric', /rubric/);
    await bad(send({ description: 'd', rubric: { type: 'text' } }), 'rubric without content', /content/);
    await bad(send({ description: 'd', rubric: { type: 'url', url: 'x' } }), 'rubric type url', /type/);
    await bad(send({ description: 'd', rubric: 'ok' }), 'rubric a string', /rubric/);
    await bad(send({ description: 'd', rubric: { type: 'text', content: 'x'.repeat(262145) } }), 'rubric too long', /262144/);
    for (const mi of [0, 21, -1, 2.5, '3'])
      await bad(send({ description: 'd', rubric, max_iterations: mi }), `max_iterations ${JSON.stringify(mi)}`, /max_iterations/);
    await bad(send({ description: 'd', rubric, extra: true }), 'an unknown key', /extra/);
    const e = await rejects(send({ description: 'd', rubric: { type: 'file', file_id: 'file_nosuchfile' } }), Anthropic.APIError, 'an unknown rubric file');
    check(status(e) >= 400 && status(e) < 500, `an unknown file is a 4xx: ${status(e)}`);
    const list = [];
    for await (const ev of client.beta.sessions.events.list(session.id)) list.push(ev);
    same(list.length, 0, 'nothing was logged');
    same((await mock.requests()).length, 0, 'no model request');
  });

  await cma('states: rescheduling while a failed request is retried, terminated on a fatal error, statuses[] finds each', {
    then: 'error',
    steps: [
      // hull retries after retry-after: 6 s in which to see it rescheduling (a retrieve and a list
      // after the event reached the stream; seconds on a loaded machine under ASan)
      { error: { kind: 'overloaded', retry_after_ms: 6000 } },
      { text: 'back again' },
      { error: { kind: 'auth' } },
    ],
  }, async ({ client }) => {
    const { agent, env, session: a } = await setup(client, []);
    const reader = new Reader(await client.beta.sessions.events.stream(a.id));
    await client.beta.sessions.events.send(a.id, userMessage('Hello?'));
    await reader.until((e) => e.type === 'session.status_rescheduled', 'session.status_rescheduled', 20000);
    same((await client.beta.sessions.retrieve(a.id)).status, 'rescheduling', 'the session is rescheduling');
    const resched = [];
    for await (const s of client.beta.sessions.list({ statuses: ['rescheduling'] })) resched.push(s.id);
    same(resched, [a.id], 'statuses[]=rescheduling');
    const evs = await reader.idle();
    reader.close();
    const types = reader.events.map((e) => e.type);
    const iErr = reader.events.findIndex((e) => e.type === 'session.error');
    same(reader.events[iErr].error.retry_status, { type: 'retrying' }, 'session.error retrying');
    check(types.indexOf('session.status_rescheduled') > iErr, `status_rescheduled after the error: [${types}]`);
    check(types.lastIndexOf('session.status_running') > types.indexOf('session.status_rescheduled'), `running again after the retry: [${types}]`);
    same(evs[evs.length - 1].stop_reason, { type: 'end_turn' }, 'the turn ends');
    same((await client.beta.sessions.retrieve(a.id)).status, 'idle', 'idle again');

    const b = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const rb = new Reader(await client.beta.sessions.events.stream(b.id));
    await client.beta.sessions.events.send(b.id, userMessage('Hello?'));
    const bevs = await rb.until((e) => e.type === 'session.status_terminated' || e.type === 'session.status_idle', 'the end', 20000);
    rb.close();
    const err = bevs.find((e) => e.type === 'session.error');
    same(err && err.error.retry_status, { type: 'terminal' }, `a terminal session.error: [${bevs.map((e) => e.type)}]`);
    same(bevs[bevs.length - 1].type, 'session.status_terminated', 'session.status_terminated');
    same((await client.beta.sessions.retrieve(b.id)).status, 'terminated', 'the session is terminated');
    const va = await consoleView(client, a.id);
    check(va.items.some((t) => t.startsWith('rescheduling')), `the console shows the rescheduling: ${JSON.stringify(va.items)}`);
    const vb = await consoleView(client, b.id);
    same(vb.status, 'terminated', 'the console\'s status');
    check(vb.items.some((t) => t.startsWith('terminated')), `the console shows the termination: ${JSON.stringify(vb.items)}`);
    const term = [];
    for await (const s of client.beta.sessions.list({ statuses: ['terminated'] })) term.push(s.id);
    same(term, [b.id], 'statuses[]=terminated');
    const idle = [];
    for await (const s of client.beta.sessions.list({ statuses: ['idle'] })) idle.push(s.id);
    same(idle, [a.id], 'statuses[]=idle');
    const e = await rejects(client.beta.sessions.events.send(b.id, userMessage('again?')), Anthropic.ConflictError, 'a terminated session takes no events');
    check(/terminated/.test(e.message), `the 409 says why: ${e.message}`);
  });

  done();
}

main();
