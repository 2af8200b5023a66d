// event-surface.test.js: the rest of the /v1 event surface and the capability inventory (issue
// 23) driven by the official `@anthropic-ai/sdk`, unchanged, against a real `hull serve` whose
// model is `hull mock-model` speaking the Anthropic Messages wire format:
// - user.tool_result: in a self_hosted environment the caller runs the built-in tools: the turn
//   pauses on agent.tool_use (requires_action), the caller's user.tool_result (with a
//   system.message after it) reaches the model, the turn ends; refused where nothing waits;
// - system.message after a user.message reaches the model with it;
// - prompt caching: the request carries cache_control on the system prompt and the last tool,
//   and the cache tokens the model reports are in span.model_request_end and the session's usage;
// - the model object's effort and speed in the request (output_config.effort, speed);
// - threads and a multiagent roster refused by name: 400 unsupported_capability, which the SDK
//   decodes as BadRequestError;
// - GET /v1/capabilities (hull's extension) through the SDK's own client.get.
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, Reader, keyCreate, toolResults, MODEL } = require('./cma-lib.js');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const TAG = `event-surface[sdk ${SDK_VERSION}]`;
const CASE_S = 60;
const GLOB = [{ type: 'agent_toolset_20260401', default_config: { enabled: false },
  configs: [{ name: 'glob', enabled: true }] }];

function run(name, script, fn) {
  return test(`${TAG}: ${name}`, script, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-es-home-'));
    let srv = null;
    let timer;
    try {
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home });
      const client = new Anthropic({ baseURL: srv.url, apiKey: key, timeout: 60000, maxRetries: 0 });
      await Promise.race([
        fn({ mock, client }),
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
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
    }
  });
}

const gist = (events) => events.filter((e) => !e.type.startsWith('span.') && e.type !== 'session.usage' && e.type !== 'user.message');
const text = (t) => [{ type: 'text', text: t }];

// 400 unsupported_capability, decoded by the SDK
async function unsupported(promise, what) {
  const e = await rejects(promise, sdk.BadRequestError, what);
  same(e.status, 400, `${what}: status`);
  same(e.error && e.error.error && e.error.error.details && e.error.error.details.error_code, 'unsupported_capability', `${what}: error_code`);
  return e;
}

(async () => {
  await run('user.tool_result: a self_hosted session\'s built-in tool runs at the caller, its result (and a system.message) reach the model', {
    steps: [
      { tool_calls: [{ name: 'glob', input: { pattern: '*' }, id: 'toolu_sh1' }] },
      { text: 'The caller found: {{last_tool_result}}' },
    ],
  }, async ({ mock, client }) => {
    const agent = await client.beta.agents.create({ name: 'sh', model: MODEL, system: 'You list files.', tools: GLOB });
    const env = await client.beta.environments.create({ name: 'sh', config: { type: 'self_hosted' } });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: text('List the files.') }] });
    const first = gist(await reader.idle());
    const use = first.find((e) => e.type === 'agent.tool_use');
    check(use, `an agent.tool_use: [${first.map((e) => e.type)}]`);
    same([use.name, use.input], ['glob', { pattern: '*' }], 'the call');
    check(!('hull_client_run' in use), 'no internal marker on the event');
    check(!first.some((e) => e.type === 'agent.tool_result'), `hull did not run it: [${first.map((e) => e.type)}]`);
    same(first[first.length - 1].stop_reason, { type: 'requires_action', event_ids: [use.id] }, 'requires_action on the call');
    // the wrong answer for it is refused, naming the right one
    const wrong = await rejects(client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: text('x') }] }), sdk.BadRequestError, 'custom result');
    check(/user\.tool_result/.test(wrong.message), `the refusal names user.tool_result: ${wrong.message}`);
    const sent = await client.beta.sessions.events.send(session.id, {
      events: [
        { type: 'user.tool_result', tool_use_id: use.id, content: text('a.txt\nb.txt') },
        { type: 'system.message', content: text('Answer in one line.') },
      ],
    });
    same(sent.data.map((e) => e.type), ['user.tool_result', 'system.message'], 'the echo');
    same(sent.data[0].tool_use_id, use.id, 'the echo names the call');
    const rest = gist(await reader.idle());
    reader.close();
    same(rest[rest.length - 1].stop_reason, { type: 'end_turn' }, 'end_turn');
    const msg = rest.find((e) => e.type === 'agent.message');
    check(msg && /The caller found: a\.txt\nb\.txt/.test(msg.content[0].text), `the model saw the caller's result: ${JSON.stringify(msg)}`);
    const reqs = await mock.requests();
    same(reqs.length, 2, 'model requests');
    const tr = toolResults(reqs[1].body);
    same(tr.map((t) => [t.tool_use_id, t.is_error]), [['toolu_sh1', false]], 'one result, for the call');
    check(tr[0].text.includes('a.txt\nb.txt') && tr[0].text.includes('[system] Answer in one line.'),
      `the result and the system.message reached the model: ${JSON.stringify(tr[0].text)}`);
    // nothing waits now: a second result is refused
    await rejects(client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.tool_result', tool_use_id: use.id, content: text('again') }] }), sdk.BadRequestError, 'a second result');
    const types = [];
    for await (const e of client.beta.sessions.events.list(session.id)) types.push(e.type);
    check(types.includes('user.tool_result') && types.includes('system.message'), `the log has them: ${types}`);
  });

  await run('system.message, prompt caching, effort and speed: the request the model gets, the cache tokens in usage', {
    steps: [{ text: 'Hello.', usage: { input_tokens: 50, output_tokens: 3, cache_read_input_tokens: 40, cache_creation_input_tokens: 12 } }],
  }, async ({ mock, client }) => {
    const agent = await client.beta.agents.create({ name: 'c', model: { id: MODEL, effort: 'high', speed: 'fast' },
      system: 'You are terse.', tools: GLOB });
    same([agent.model.effort, agent.model.speed], [{ type: 'high' }, 'fast'], 'the model object');
    const env = await client.beta.environments.create({ name: 'c', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, { events: [
      { type: 'user.message', content: text('Hi.') },
      { type: 'system.message', content: text('The user is in a hurry.') },
    ] });
    const evs = await reader.idle();
    reader.close();
    same(evs[evs.length - 1].stop_reason, { type: 'end_turn' }, 'end_turn');
    const end = evs.find((e) => e.type === 'span.model_request_end');
    check(end, `a span.model_request_end: [${evs.map((e) => e.type)}]`);
    same([end.model_usage.cache_read_input_tokens, end.model_usage.cache_creation_input_tokens], [40, 12], 'cache tokens in the span');
    const s = await client.beta.sessions.retrieve(session.id);
    same([s.usage.cache_read_input_tokens, s.usage.cache_creation.ephemeral_5m_input_tokens], [40, 12], 'cache tokens in the session\'s usage');
    const reqs = await mock.requests();
    same(reqs.length, 1, 'model requests');
    const b = reqs[0].body;
    check(Array.isArray(b.system) && b.system.length === 1 && b.system[0].type === 'text' && b.system[0].text.includes('You are terse.'),
      `the system prompt is a text block: ${JSON.stringify(b.system).slice(0, 200)}`);
    same(b.system[0].cache_control, { type: 'ephemeral' }, 'cache_control on the system prompt');
    same(b.tools.map((t) => Boolean(t.cache_control)), b.tools.map((_, i) => i === b.tools.length - 1), 'cache_control on the last tool only');
    same(b.output_config, { effort: 'high' }, 'effort');
    same(b.speed, 'fast', 'speed');
    const beta = Object.entries(reqs[0].headers).filter(([k]) => k.toLowerCase() === 'anthropic-beta').map(([, v]) => v).join(',');
    check(beta.includes('fast-mode-2026-02-01'), `fast mode's beta header: ${JSON.stringify(reqs[0].headers)}`);
    const last = b.messages[b.messages.length - 1];
    const said = typeof last.content === 'string' ? last.content : last.content.map((c) => c.text || '').join('\n');
    check(said.includes('Hi.') && said.includes('[system] The user is in a hurry.'), `the system.message went with the user.message: ${said}`);
  });

  await run('threads and a multiagent roster refused by name (400 unsupported_capability); GET /v1/capabilities', { steps: [{ text: 'unused' }] }, async ({ mock, client }) => {
    const agent = await client.beta.agents.create({ name: 't', model: MODEL });
    const env = await client.beta.environments.create({ name: 't', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const e = await unsupported(client.beta.sessions.threads.list(session.id), 'threads.list');
    check(/thread/.test(e.message), `the message names threads: ${e.message}`);
    await unsupported(client.beta.sessions.threads.retrieve('sthr_x', { session_id: session.id }), 'threads.retrieve');
    await unsupported(client.beta.sessions.threads.archive('sthr_x', { session_id: session.id }), 'threads.archive');
    const m = await unsupported(client.beta.agents.create({ name: 'm', model: MODEL, multiagent: { type: 'coordinator', agents: [] } }),
      'an agent with a multiagent roster');
    check(/multiagent/.test(m.message), `the message names the roster: ${m.message}`);
    const caps = await client.get('/v1/capabilities');
    same(caps.type, 'capability_list', 'the list');
    const by = Object.fromEntries(caps.data.map((c) => [`${c.area}/${c.name}`, c]));
    same(by['threads/session-threads'].status, 'unsupported', 'threads are unsupported');
    check(by['threads/session-threads'].reason.length > 0, 'with a reason');
    same(by['agents/multiagent-roster'].status, 'unsupported', 'multiagent is unsupported');
    same(by['events/user-tool-result'].status, 'supported', 'user.tool_result is supported');
    same(by['models/anthropic-prompt-caching'].status, 'supported', 'prompt caching is supported');
    check(caps.data.every((c) => ['supported', 'partial', 'unsupported'].includes(c.status) && (c.status === 'supported') === (c.reason === null)),
      'each status, and a reason for each partial or unsupported');
    same((await mock.requests()).length, 0, 'no model request');
  });
  done();
})();
