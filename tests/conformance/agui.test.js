// agui.test.js: hull serve's AG-UI endpoint (POST /agui) driven by the official `@ag-ui/client`
// (HttpAgent), unchanged, against a real `hull serve` whose model is `hull mock-model`: a run with a
// tool call (run_python saving a table handle) and a streamed text answer, a second run on the same
// thread (the same /v1 session), a tool that needs a confirmation (RUN_FINISHED with an interrupt,
// then a run that resumes it), a frontend tool (RunAgentInput.tools, as CopilotKit's
// useCopilotAction sends it) called by the model and answered by the client with a role "tool"
// message, with `context` reaching the model, and bad input. Every event received must validate against
// @ag-ui/core's EventSchemas and come in a valid order (RUN_STARTED first, RUN_FINISHED or RUN_ERROR
// last, TEXT_MESSAGE_* and TOOL_CALL_* nested per id; the client's own verifier runs too).
'use strict';
const { HttpAgent } = require('@ag-ui/client');
const { EventSchemas } = require('@ag-ui/core/schemas');
const { test, check, same, done } = require('./lib.js');
const { startServe, v1Headers, keyCreate, MODEL } = require('./cma-lib.js');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const AGUI_VERSION = require('@ag-ui/client/package.json').version;
const TAG = `agui[@ag-ui/client ${AGUI_VERSION}]`;
const CASE_S = 300;

// A mock, a hull serve with a key, an agent and an environment made over /v1.
function agui(name, script, agentBody, fn) {
  return test(`${TAG}: ${name}`, script, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-agui-home-'));
    let srv = null;
    let timer;
    try {
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home });
      const v1 = async (method, p, body) => {
        const res = await fetch(`${srv.url}${p}`, {
          method, headers: v1Headers({ 'x-api-key': key }), body: body ? JSON.stringify(body) : undefined,
        });
        const b = await res.json();
        if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(b)}`);
        return b;
      };
      const agent = await v1('POST', '/v1/agents', { name: 'agui', model: MODEL, ...agentBody });
      await v1('POST', '/v1/environments', { name: 'agui' });
      await Promise.race([
        fn({ srv, key, v1, agentId: agent.id, mock }),
        new Promise((_, reject) => {
          timer = setTimeout(() => { reject(new Error(`the case took over ${CASE_S} s`)); srv.kill(); }, CASE_S * 1000);
        }),
      ]);
      // hull serve ends cleanly on SIGTERM (under ASan: no sanitizer report)
      const s = srv;
      srv = null;
      const how = await s.stop(true);
      const bad = s.log().split('\n').filter((l) => /Sanitizer|runtime error/.test(l));
      check(how.code === 0 && bad.length === 0, `hull serve ended ${JSON.stringify(how)} ${bad.slice(0, 3).join(' / ')}`);
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

// Run agent (an HttpAgent) once; every event it receives, in order.
async function run(agent, params) {
  const events = [];
  await agent.runAgent(params, { onEvent: ({ event }) => { events.push(event); } });
  return events;
}

// Each event validates against @ag-ui/core's schemas; the order is a valid run's. prior: the ids of
// calls an earlier run of the thread ended (a resumed run answers them).
function checkEvents(events, prior = []) {
  check(events.length >= 2, `too few events: ${JSON.stringify(events)}`);
  for (const [i, e] of events.entries()) {
    const r = EventSchemas.safeParse(e);
    check(r.success, `event ${i} (${e.type}) does not validate: ${r.error && r.error.message} ${JSON.stringify(e)}`);
  }
  const types = events.map((e) => e.type);
  same(types[0], 'RUN_STARTED', 'the first event');
  check(['RUN_FINISHED', 'RUN_ERROR'].includes(types[types.length - 1]), `the last event is ${types[types.length - 1]}`);
  check(types.filter((t) => t === 'RUN_STARTED' || t === 'RUN_FINISHED' || t === 'RUN_ERROR').length === 2,
    `one RUN_STARTED and one end: ${types}`);
  let text = null;
  const calls = new Map(prior.map((id) => [id, 'ended'])); // id -> 'started' | 'args' | 'ended' | 'result'
  const texts = new Set();
  for (const e of events) {
    switch (e.type) {
      case 'TEXT_MESSAGE_START':
        check(text === null, `TEXT_MESSAGE_START ${e.messageId} inside ${text}`);
        check(!texts.has(e.messageId), `message ${e.messageId} started twice`);
        text = e.messageId;
        texts.add(text);
        break;
      case 'TEXT_MESSAGE_CONTENT':
        check(text === e.messageId, `TEXT_MESSAGE_CONTENT for ${e.messageId} while ${text} is open`);
        check(e.delta.length > 0, 'an empty delta');
        break;
      case 'TEXT_MESSAGE_END':
        check(text === e.messageId, `TEXT_MESSAGE_END for ${e.messageId} while ${text} is open`);
        text = null;
        break;
      case 'TOOL_CALL_START':
        check(text === null, `TOOL_CALL_START inside text ${text}`);
        check(!calls.has(e.toolCallId), `tool call ${e.toolCallId} started twice`);
        calls.set(e.toolCallId, 'started');
        break;
      case 'TOOL_CALL_ARGS':
        check(['started', 'args'].includes(calls.get(e.toolCallId)), `TOOL_CALL_ARGS for ${e.toolCallId} in state ${calls.get(e.toolCallId)}`);
        calls.set(e.toolCallId, 'args');
        break;
      case 'TOOL_CALL_END':
        check(['started', 'args'].includes(calls.get(e.toolCallId)), `TOOL_CALL_END for ${e.toolCallId} in state ${calls.get(e.toolCallId)}`);
        calls.set(e.toolCallId, 'ended');
        break;
      case 'TOOL_CALL_RESULT':
        check(calls.get(e.toolCallId) === 'ended', `TOOL_CALL_RESULT for ${e.toolCallId} in state ${calls.get(e.toolCallId)}`);
        calls.set(e.toolCallId, 'result');
        break;
      case 'RUN_FINISHED':
      case 'RUN_ERROR':
        check(text === null, `the run ended with text ${text} open`);
        break;
      default:
        break;
    }
  }
  return { types, texts, calls };
}

const textOf = (events) => events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta).join('');

const CODE = 'import hull\nhull.save("cities", [{"city": "Oslo", "n": 3}, {"city": "Lima", "n": 7}])\nprint("saved 2 rows")';

async function main() {
  await agui('a tool call and a streamed text answer, then a second run on the same thread', {
    then: 'repeat',
    steps: [
      { tool_calls: [{ name: 'run_python', input: { code: CODE }, id: 'toolu_py1' }] },
      { text: ['The ', 'table ', 'has 2 rows'] },
      { text: 'second run' },
    ],
  }, { tools: [{ type: 'hull_toolset_20261201' }] }, async ({ srv, key, v1, agentId }) => {
    const agent = new HttpAgent({ url: `${srv.url}/agui`, headers: { 'x-api-key': key }, threadId: 'thread-1' });
    agent.addMessage({ id: 'u1', role: 'user', content: 'make a table' });
    const ev = await run(agent, { forwardedProps: { agent_id: agentId } });
    const { types, calls } = checkEvents(ev);
    same(types[types.length - 1], 'RUN_FINISHED', 'the run ends');
    const start = ev.find((e) => e.type === 'TOOL_CALL_START');
    check(start && start.toolCallName === 'run_python', `TOOL_CALL_START names run_python: ${JSON.stringify(start)}`);
    same([...calls.values()], ['result'], 'one tool call, answered');
    const args = ev.filter((e) => e.type === 'TOOL_CALL_ARGS').map((e) => e.delta).join('');
    same(JSON.parse(args), { code: CODE }, 'the tool call arguments');
    const result = ev.find((e) => e.type === 'TOOL_CALL_RESULT');
    check(/saved 2 rows/.test(result.content), `the tool result: ${JSON.stringify(result)}`);
    same(textOf(ev), 'The table has 2 rows', 'the streamed text');
    const snaps = ev.filter((e) => e.type === 'STATE_SNAPSHOT');
    check(snaps.length >= 2, `a snapshot at the start and after the handle: ${types}`);
    const last = snaps[snaps.length - 1].snapshot;
    check(last.handles.some((h) => h.name === 'cities' && h.type === 'table' && h.rows === 2),
      `the snapshot lists the table: ${JSON.stringify(last)}`);
    // the client's own view: the assistant message and the tool call are in its messages
    check(agent.messages.some((m) => m.role === 'assistant' && m.content === 'The table has 2 rows'),
      `the agent's messages: ${JSON.stringify(agent.messages)}`);
    check(agent.messages.some((m) => m.role === 'tool' && m.toolCallId === start.toolCallId), 'the tool message');
    same(agent.state.session_id, last.session_id, 'the state is the snapshot');

    // a second run on the thread: the same /v1 session goes on
    agent.addMessage({ id: 'u2', role: 'user', content: 'and again' });
    const ev2 = await run(agent, {});
    checkEvents(ev2);
    same(textOf(ev2), 'second run', 'the second answer');
    const sess = await v1('GET', `/v1/sessions/${last.session_id}`);
    same(sess.metadata.agui_thread_id, 'thread-1', "the session's thread");
    const evs = await v1('GET', `/v1/sessions/${last.session_id}/events?limit=1000`);
    same(evs.data.filter((e) => e.type === 'user.message').map((e) => e.content[0].text), ['make a table', 'and again'],
      'both runs in one session');
    // a frontend tool named like one of the agent's own tools is refused, saying which
    const clash = await fetch(`${srv.url}/agui`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ threadId: 'thread-clash', runId: 'r1', messages: [{ id: 'm', role: 'user', content: 'hi' }],
        tools: [{ name: 'run_python', description: 'mine' }], context: [], state: {}, forwardedProps: { agent_id: agentId } }),
    });
    const cb = await clash.json();
    check(clash.status === 400 && /run_python/.test(cb.error.message) && /already exists/.test(cb.error.message),
      `a clashing frontend tool: ${clash.status} ${JSON.stringify(cb)}`);
  });

  await agui('a tool that asks: RUN_FINISHED with an interrupt, then a resumed run', {
    then: 'repeat',
    steps: [
      { tool_calls: [{ name: 'run_python', input: { code: 'print(6 * 7)' }, id: 'toolu_ask' }] },
      { text: 'python said {{last_tool_result}}' },
    ],
  }, {
    tools: [{ type: 'hull_toolset_20261201', configs: [{ name: 'run_python', permission_policy: { type: 'always_ask' } }] }],
  }, async ({ srv, key, agentId }) => {
    const agent = new HttpAgent({ url: `${srv.url}/agui`, headers: { authorization: `Bearer ${key}` }, threadId: 'thread-ask' });
    agent.addMessage({ id: 'u1', role: 'user', content: 'compute' });
    const ev = await run(agent, { forwardedProps: { agent_id: agentId } });
    checkEvents(ev);
    const fin = ev[ev.length - 1];
    check(fin.type === 'RUN_FINISHED' && fin.outcome && fin.outcome.type === 'interrupt', `an interrupt: ${JSON.stringify(fin)}`);
    const call = ev.find((e) => e.type === 'TOOL_CALL_START');
    same(fin.outcome.interrupts[0].toolCallId, call.toolCallId, 'the interrupt names the call');
    same(agent.pendingInterrupts.length, 1, "the client's pending interrupts");
    const ev2 = await run(agent, { resume: [{ interruptId: fin.outcome.interrupts[0].id, status: 'resolved' }] });
    checkEvents(ev2, [call.toolCallId]);
    const res = ev2.find((e) => e.type === 'TOOL_CALL_RESULT');
    check(res && /42/.test(res.content), `the allowed call ran: ${JSON.stringify(ev2)}`);
    check(/python said .*42/.test(textOf(ev2)), `the answer: ${textOf(ev2)}`);
    same(ev2[ev2.length - 1].type, 'RUN_FINISHED', 'the resumed run ends');
  });

  await agui('a frontend tool: offered to the model, called, answered by the client, the turn goes on', {
    then: 'repeat',
    steps: [
      { tool_calls: [{ name: 'pickColor', input: { hint: 'sea' }, id: 'toolu_fe1' }] },
      { text: 'you chose {{last_tool_result}}' },
      { text: 'no tools now' },
    ],
  }, {}, async ({ srv, key, v1, agentId, mock }) => {
    const pickColor = {
      name: 'pickColor', description: 'Ask the user to pick a color',
      parameters: { type: 'object', properties: { hint: { type: 'string' } }, required: ['hint'] },
    };
    const context = [{ description: 'the page', value: 'the palette editor' }];
    const agent = new HttpAgent({ url: `${srv.url}/agui`, headers: { 'x-api-key': key }, threadId: 'thread-fe' });
    agent.addMessage({ id: 'u1', role: 'user', content: 'choose a color' });
    const ev = await run(agent, { tools: [pickColor], context, forwardedProps: { agent_id: agentId } });
    const { types, calls } = checkEvents(ev);
    const start = ev.find((e) => e.type === 'TOOL_CALL_START');
    check(start && start.toolCallName === 'pickColor', `TOOL_CALL_START names pickColor: ${JSON.stringify(ev)}`);
    same([...calls.values()], ['ended'], 'one call, left for the client to answer');
    same(JSON.parse(ev.filter((e) => e.type === 'TOOL_CALL_ARGS').map((e) => e.delta).join('')), { hint: 'sea' },
      'the call arguments');
    const fin = ev[ev.length - 1];
    check(fin.type === 'RUN_FINISHED' && !fin.outcome, `RUN_FINISHED without an interrupt: ${JSON.stringify(fin)} ${types}`);
    same(agent.pendingInterrupts.length, 0, "the client's pending interrupts");
    // the model was offered the tool, and the context came with the user's message
    const reqs = await mock.requests();
    const first = JSON.stringify(reqs[0].body);
    const tools0 = JSON.stringify(reqs[0].body.tools || []);
    check(/pickColor/.test(tools0) && /Ask the user to pick a color/.test(tools0), `the model's tools: ${tools0.slice(0, 800)}`);
    check(/<agui_context>.*the page: the palette editor.*<\/agui_context>.*choose a color/.test(first),
      `the context before the message: ${first.slice(0, 800)}`);
    // the client answers its tool (as CopilotKit does after running the action): the turn goes on
    agent.addMessage({ id: 't1', role: 'tool', toolCallId: start.toolCallId, content: 'teal' });
    const ev2 = await run(agent, { tools: [pickColor], context });
    checkEvents(ev2, [start.toolCallId]);
    same(textOf(ev2), 'you chose teal', 'the answer after the tool result');
    same(ev2[ev2.length - 1].type, 'RUN_FINISHED', 'the run ends');
    const sid = ev.find((e) => e.type === 'STATE_SNAPSHOT').snapshot.session_id;
    const evs = await v1('GET', `/v1/sessions/${sid}/events?limit=1000`);
    const res = evs.data.find((e) => e.type === 'user.custom_tool_result');
    check(res && res.custom_tool_use_id === start.toolCallId && res.content[0].text === 'teal',
      `the tool message became user.custom_tool_result: ${JSON.stringify(res)}`);
    // a later run without the tool: the session's tools follow the client's (a session.updated)
    agent.addMessage({ id: 'u2', role: 'user', content: 'again' });
    const ev3 = await run(agent, { tools: [] });
    checkEvents(ev3);
    same(textOf(ev3), 'no tools now', 'the third answer');
    const last = JSON.stringify((await mock.requests()).slice(-1)[0].body.tools || []);
    check(!/pickColor/.test(last), `the tool is gone from the model's tools: ${last.slice(0, 600)}`);
    const sess = await v1('GET', `/v1/sessions/${sid}`);
    check(!JSON.stringify(sess.agent.tools).includes('pickColor'), `the session's tools: ${JSON.stringify(sess.agent.tools)}`);
    const own = JSON.stringify((await v1('GET', `/v1/agents/${agentId}`)).tools);
    check(!own.includes('pickColor'), `the agent itself is unchanged: ${own}`);
  });

  await agui('bad input: clear 400s, 401 without the key, 404 for an unknown agent', { steps: [{ text: 'x' }] }, {},
    async ({ srv, key, agentId }) => {
      const post = async (body, headers = { 'x-api-key': key }) => {
        const res = await fetch(`${srv.url}/agui`, {
          method: 'POST', headers: { 'content-type': 'application/json', ...headers },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        });
        return { status: res.status, body: await res.json() };
      };
      const input = (over) => ({ threadId: 't-bad', runId: 'r1', messages: [{ id: 'm', role: 'user', content: 'hi' }],
        tools: [], context: [], state: {}, forwardedProps: { agent_id: agentId }, ...over });
      const cases = [
        ['{not json', 400, /not JSON/],
        [{}, 400, /threadId/],
        [input({ threadId: 'has space' }), 400, /threadId/],
        [input({ runId: '' }), 400, /runId/],
        [input({ messages: 'hi' }), 400, /messages/],
        [input({ messages: [] }), 400, /last of messages/],
        [input({ messages: [{ id: 'm', role: 'assistant', content: 'x' }] }), 400, /last of messages/],
        [input({ messages: [{ id: 'm', role: 'user', content: [{ type: 'image', url: 'x' }] }] }), 400, /text parts/],
        [input({ messages: [{ id: 'm', role: 'wizard' }] }), 400, /role/],
        [input({ tools: [{ name: 'x' }] }), 400, /tools\[0\]/],
        [input({ tools: [{ name: 'has space', description: 'd' }] }), 400, /tools\[0\]\.name/],
        [input({ tools: [{ name: 'x', description: 'd', parameters: { type: 'string' } }] }), 400, /parameters/],
        [input({ messages: [{ id: 'm', role: 'tool', toolCallId: 'a b', content: 'x' }] }), 400, /toolCallId/],
        [input({ forwardedProps: {} }), 400, /agent/],
        [input({ forwardedProps: { agent_id: 'agent_nosuch' } }), 404, /agent_nosuch/],
      ];
      for (const [body, status, re] of cases) {
        const r = await post(body);
        check(r.status === status && r.body.type === 'error' && re.test(r.body.error.message),
          `${JSON.stringify(body).slice(0, 120)}: want ${status} ${re}, got ${r.status} ${JSON.stringify(r.body)}`);
      }
      const r = await post(input({}), {});
      same(r.status, 401, 'without the key');
    });

  done();
}

main();
