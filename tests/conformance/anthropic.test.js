// anthropic.test.js: hull mock-model's Anthropic Messages, driven by the official
// `@anthropic-ai/sdk`: whole and streamed messages, tool use, usage, errors as the SDK's classes,
// its retries as the record shows them, stream errors and cut streams, writes cut anywhere.
'use strict';
const { Anthropic } = require('@anthropic-ai/sdk');
const { test, check, same, rejects, done } = require('./lib.js');

const MODEL = 'claude-sonnet-4-6';
const messages = [{ role: 'user', content: 'What does notes.txt say?' }];
const tools = [{ name: 'read_file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }];

function client(mock, opts = {}) {
  return new Anthropic({ apiKey: 'sk-ant-test', baseURL: mock.url, maxRetries: 2, ...opts });
}

// What a message says, without its ids.
function gist(m) {
  return {
    role: m.role,
    content: m.content.map((b) => (b.type === 'text' ? { type: 'text', text: b.text } : { type: b.type, name: b.name, input: b.input })),
    stop_reason: m.stop_reason,
    stop_sequence: m.stop_sequence,
    usage: { input: m.usage.input_tokens, output: m.usage.output_tokens },
  };
}

function errorType(e) {
  return e.type || (e.error && e.error.error && e.error.error.type);
}

const TEXT = 'Grüße aus dem Mock: 世界 🌍 — "quoted" \\ back\nslash';
const CALLS = [
  { name: 'read_file', input: { path: 'notes.txt' } },
  { name: 'grep', input: { pattern: 'a"b\\c', path: 'src/ü' } },
];

async function main() {
  await test('anthropic: messages.create: text, ids, model echo, usage with cache fields, request-id',
    { steps: [{ text: 'Hello from the mock', usage: { input_tokens: 412, output_tokens: 12, cache_read_input_tokens: 7 } }] },
    async (mock) => {
      const m = await client(mock).messages.create({ model: MODEL, max_tokens: 1024, messages });
      check(/^msg_/.test(m.id), `id ${m.id}`);
      same([m.type, m.role, m.model, m.stop_reason, m.stop_sequence], ['message', 'assistant', MODEL, 'end_turn', null], 'message');
      same(m.content, [{ type: 'text', text: 'Hello from the mock' }], 'content');
      same(m.usage, { input_tokens: 412, output_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 7 }, 'usage');
      check(/^req_mock\d+$/.test(m._request_id), `_request_id ${m._request_id}`);
    });

  await test('anthropic: text and parallel tool_use blocks, whole: toolu_ ids, input objects, stop_reason tool_use',
    { steps: [{ text: "I'll read it.", tool_calls: CALLS }] }, async (mock) => {
      const m = await client(mock).messages.create({ model: MODEL, max_tokens: 1024, messages, tools });
      same(m.stop_reason, 'tool_use', 'stop_reason');
      same(m.content.map((b) => b.type), ['text', 'tool_use', 'tool_use'], 'blocks');
      check(m.content.slice(1).every((b) => /^toolu_/.test(b.id)), 'tool ids');
      same(m.content.slice(1).map((b) => [b.name, b.input]), CALLS.map((c) => [c.name, c.input]), 'calls');
    });

  await test('anthropic: messages.stream().finalMessage() equals the whole message (text, tool_use, usage)',
    { steps: [{ text: TEXT, tool_calls: CALLS, delta_bytes: 3, times: 2, usage: { input_tokens: 412, output_tokens: 55 } }] },
    async (mock) => {
      const an = client(mock);
      const streamed = await an.messages.stream({ model: MODEL, max_tokens: 1024, messages, tools }).finalMessage();
      const whole = await an.messages.create({ model: MODEL, max_tokens: 1024, messages, tools });
      same(gist(streamed), gist(whole), 'streamed vs whole');
      same(gist(streamed).usage, { input: 412, output: 55 }, 'usage');
    });

  await test('anthropic: create({stream: true}): the event grammar, input_json_delta pieces that make the input',
    { steps: [{ text: 'abc', tool_calls: [CALLS[1]], delta_bytes: 4 }] }, async (mock) => {
      const stream = await client(mock).messages.create({ model: MODEL, max_tokens: 1024, messages, stream: true });
      const events = [];
      for await (const ev of stream) events.push(ev);
      const types = events.map((e) => e.type);
      same(types[0], 'message_start', 'first');
      same(types[types.length - 1], 'message_stop', 'last');
      same(types[types.length - 2], 'message_delta', 'message_delta before message_stop');
      same(events[0].message.content, [], 'message_start content');
      check(events[0].message.usage && events[0].message.usage.input_tokens > 0, 'message_start usage');
      const json = events.filter((e) => e.type === 'content_block_delta' && e.delta.type === 'input_json_delta')
        .map((e) => e.delta.partial_json).join('');
      same(JSON.parse(json), CALLS[1].input, 'partial_json concatenated');
      same(events[types.length - 2].delta.stop_reason, 'tool_use', 'stop_reason');
      check(events[types.length - 2].usage.output_tokens > 0, 'output_tokens');
    });

  for (const writes of ['byte', 'utf8', 'crlf', 'escape', 5]) {
    await test(`anthropic: a stream cut into writes (${writes}), CRLF line ends, a ping between events: the same message`,
      { steps: [{ text: TEXT, tool_calls: CALLS, writes, write_delay_ms: 1, line_ending: 'crlf', delta_bytes: 7, times: 2,
        event_delay_ms: 2, ping_ms: 1, usage: { input_tokens: 30, output_tokens: 20 } }] },
      async (mock) => {
        const an = client(mock);
        const streamed = await an.messages.stream({ model: MODEL, max_tokens: 1024, messages, tools }).finalMessage();
        const whole = await an.messages.create({ model: MODEL, max_tokens: 1024, messages, tools });
        same(gist(streamed), gist(whole), 'streamed vs whole');
      });
  }

  await test('anthropic: --api-key: a wrong key is AuthenticationError 401 authentication_error; x-api-key and Bearer work',
    { steps: [{ text: 'in' }] }, async (mock) => {
      const e = await rejects(client(mock, { apiKey: 'sk-wrong' }).messages.create({ model: MODEL, max_tokens: 5, messages }),
        Anthropic.AuthenticationError, 'wrong key');
      same([e.status, errorType(e)], [401, 'authentication_error'], 'error');
      const m = await client(mock, { apiKey: 'sk-right' }).messages.create({ model: MODEL, max_tokens: 5, messages });
      same(m.content[0].text, 'in', 'text');
      const res = await fetch(`${mock.url}/v1/messages`, { method: 'POST', body: JSON.stringify({ model: MODEL, max_tokens: 5, messages }),
        headers: { 'x-api-key': 'sk-right', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' } });
      same(res.status, 200, 'x-api-key');
    }, ['--api-key', 'sk-right']);

  await test('anthropic: anthropic-version is required (400 invalid_request_error), both versions accepted',
    { steps: [{ text: 'v' }] }, async (mock) => {
      const post = (v) => fetch(`${mock.url}/v1/messages`, { method: 'POST', body: JSON.stringify({ model: MODEL, max_tokens: 5, messages }),
        headers: { 'content-type': 'application/json', ...(v ? { 'anthropic-version': v } : {}) } });
      const none = await post(null);
      same(none.status, 400, 'without');
      const body = await none.json();
      same([body.type, body.error.type], ['error', 'invalid_request_error'], 'envelope');
      check(/^req_/.test(body.request_id), 'request_id');
      same((await post('2023-06-01')).status, 200, '2023-06-01');
      same((await post('2026-10-21')).status, 200, '2026-10-21');
      same((await post('2024-01-01')).status, 400, 'unknown');
      const [sdk] = [await client(mock).messages.create({ model: MODEL, max_tokens: 5, messages })];
      same(sdk.content[0].text, 'v', 'the SDK');
      const reqs = await mock.requests();
      check(['2023-06-01', '2026-10-21'].includes(reqs[reqs.length - 1].headers['anthropic-version']), 'the SDK sent a version');
    });

  await test('anthropic: an unknown model is NotFoundError 404 not_found_error; context overflow is 400 "prompt is too long"',
    { models: [MODEL], steps: [{ error: { kind: 'context_overflow' } }] }, async (mock) => {
      const e = await rejects(client(mock).messages.create({ model: 'claude-nope', max_tokens: 5, messages }),
        Anthropic.NotFoundError, '404');
      same([e.status, errorType(e)], [404, 'not_found_error'], 'error');
      check(e.message.includes('claude-nope'), e.message);
      const c = await rejects(client(mock).messages.create({ model: MODEL, max_tokens: 5, messages }), Anthropic.BadRequestError, '400');
      same([c.status, errorType(c)], [400, 'invalid_request_error'], 'error');
      check(/prompt is too long/.test(c.message), c.message);
    });

  await test('anthropic: 529 overloaded is retried: x-stainless-retry-count 0, 1, 2, then OverloadedError',
    { steps: [{ error: { kind: 'overloaded', retry_after_ms: 1 }, times: 3 }, { text: 'calm again' }] }, async (mock) => {
      const an = client(mock);
      const e = await rejects(an.messages.create({ model: MODEL, max_tokens: 5, messages }), Anthropic.APIError, '529');
      same([e.status, errorType(e)], [529, 'overloaded_error'], 'error');
      check(!Anthropic.OverloadedError || e instanceof Anthropic.OverloadedError, `class ${e.constructor.name}`);
      same((await mock.requests()).map((r) => r.headers['x-stainless-retry-count']), ['0', '1', '2'], 'retry counts');
      same((await an.messages.create({ model: MODEL, max_tokens: 5, messages })).content[0].text, 'calm again', 'next step');
    });

  await test('anthropic: 429 then success; x-should-retry: false: one request',
    { steps: [{ error: { kind: 'rate_limit', retry_after_ms: 1 } }, { text: 'ok now' },
      { error: { kind: 'rate_limit', should_retry: false } }] }, async (mock) => {
      const an = client(mock);
      same((await an.messages.create({ model: MODEL, max_tokens: 5, messages })).content[0].text, 'ok now', 'after a 429');
      const e = await rejects(an.messages.create({ model: MODEL, max_tokens: 5, messages }), Anthropic.RateLimitError, '429');
      same([e.status, errorType(e)], [429, 'rate_limit_error'], 'error');
      same((await mock.requests()).map((r) => r.headers['x-stainless-retry-count']), ['0', '1', '0'], 'retry counts');
    });

  await test('anthropic: an error event inside the stream surfaces as APIError (overloaded_error)',
    { steps: [{ text: 'partial answer', delta_bytes: 2, stream_error: { kind: 'overloaded', after_events: 4 } }] }, async (mock) => {
      const e = await rejects(client(mock).messages.stream({ model: MODEL, max_tokens: 5, messages }).finalMessage(),
        Anthropic.APIError, 'stream error');
      check(errorType(e) === 'overloaded_error' || /overloaded_error|Overloaded/.test(e.message), `${errorType(e)}: ${e.message}`);
      same((await mock.requests()).length, 1, 'not retried once the 200 came');
    });

  await test('anthropic: a stream cut in the middle of a data: line is rejected',
    { steps: [{ text: 'never finished', delta_bytes: 3, cut: { after_events: 4, mid_line: true } }] }, async (mock) => {
      await rejects(client(mock).messages.stream({ model: MODEL, max_tokens: 5, messages }).finalMessage(), null, 'cut');
    });

  await test('anthropic: a stream ended cleanly before message_stop is rejected',
    { steps: [{ text: 'never finished', cut: { clean: true } }] }, async (mock) => {
      await rejects(client(mock).messages.stream({ model: MODEL, max_tokens: 5, messages }).finalMessage(), null, 'cut');
    });

  await test('anthropic: every request recorded (method, path, headers, body)',
    { steps: [{ text: 'x' }] }, async (mock) => {
      await client(mock).messages.create({ model: MODEL, max_tokens: 7, messages });
      const [r] = await mock.requests();
      same([r.method, r.path, r.api, r.step, r.status], ['POST', '/v1/messages', 'anthropic', 1, 200], 'record');
      check(r.headers.authorization === 'Bearer sk-ant-test' || r.headers['x-api-key'] === 'sk-ant-test', 'credential');
      check(/^Anthropic\/JS 1\./.test(r.headers['user-agent']), `user-agent ${r.headers['user-agent']}`);
      same([r.body.max_tokens, r.body.messages], [7, messages], 'body');
    });
  done();
}

main();
