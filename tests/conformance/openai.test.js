// openai.test.js: hull mock-model's OpenAI Chat Completions, driven by the official `openai`
// SDK: whole and streamed answers, tool calls, usage, errors as the SDK's classes, its retries
// as the record shows them, stream errors and cut streams, writes cut anywhere.
'use strict';
const { OpenAI } = require('openai');
const { test, check, same, rejects, done } = require('./lib.js');

const MODEL = 'gpt-5.4';
const messages = [{ role: 'user', content: 'What does notes.txt say?' }];
const tools = [{
  type: 'function',
  function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
}];

function client(mock, opts = {}) {
  return new OpenAI({ apiKey: 'sk-test', baseURL: `${mock.url}/v1`, maxRetries: 2, ...opts });
}

// What a completion says, without what differs from request to request (ids, created).
function gist(c) {
  const m = c.choices[0].message;
  return {
    content: m.content,
    tool_calls: (m.tool_calls || []).map((t) => ({ type: t.type, name: t.function.name, args: JSON.parse(t.function.arguments) })),
    finish_reason: c.choices[0].finish_reason,
    usage: c.usage && { p: c.usage.prompt_tokens, c: c.usage.completion_tokens, t: c.usage.total_tokens },
  };
}

const TEXT = 'Grüße aus dem Mock: 世界 🌍 — "quoted" \\ back\nslash';
const CALLS = [
  { name: 'read_file', input: { path: 'notes.txt' } },
  { name: 'grep', input: { pattern: 'a"b\\c', path: 'src/ü' } },
];

async function main() {
  await test('openai: chat.completions.create: text, ids, model echo, usage, x-request-id',
    { steps: [{ text: 'Hello from the mock', usage: { input_tokens: 11, output_tokens: 5 } }] }, async (mock) => {
      const r = await client(mock).chat.completions.create({ model: MODEL, messages });
      check(/^chatcmpl-/.test(r.id), `id ${r.id}`);
      same(r.object, 'chat.completion', 'object');
      check(Number.isInteger(r.created) && r.created > 1600000000, `created ${r.created}`);
      same(r.model, MODEL, 'model');
      const c = r.choices[0];
      same([c.index, c.message.role, c.message.content, c.message.refusal, c.logprobs, c.finish_reason],
        [0, 'assistant', 'Hello from the mock', null, null, 'stop'], 'choice');
      same(r.usage.prompt_tokens + r.usage.completion_tokens, r.usage.total_tokens, 'total_tokens');
      same([r.usage.prompt_tokens, r.usage.completion_tokens], [11, 5], 'usage');
      check(/^req_mock\d+$/.test(r._request_id), `_request_id ${r._request_id}`);
    });

  await test('openai: parallel tool calls, whole: ids, type function, arguments a JSON string',
    { steps: [{ tool_calls: CALLS }] }, async (mock) => {
      const r = await client(mock).chat.completions.create({ model: MODEL, messages, tools });
      const m = r.choices[0].message;
      same(m.content, null, 'content');
      same(r.choices[0].finish_reason, 'tool_calls', 'finish_reason');
      same(m.tool_calls.length, 2, 'calls');
      check(m.tool_calls.every((t) => /^call_/.test(t.id) && t.type === 'function'), 'call ids and types');
      check(m.tool_calls[0].id !== m.tool_calls[1].id, 'distinct ids');
      same(m.tool_calls.map((t) => [t.function.name, JSON.parse(t.function.arguments)]),
        CALLS.map((t) => [t.name, t.input]), 'calls');
    });

  await test('openai: .stream().finalChatCompletion() equals the whole answer (text, parallel calls, usage)',
    { steps: [{ text: TEXT, tool_calls: CALLS, delta_bytes: 3, times: 2, usage: { input_tokens: 61, output_tokens: 18 } }] },
    async (mock) => {
      const oa = client(mock);
      const streamed = await oa.chat.completions.stream({ model: MODEL, messages, tools, stream_options: { include_usage: true } })
        .finalChatCompletion();
      const whole = await oa.chat.completions.create({ model: MODEL, messages, tools });
      same(gist(streamed), gist(whole), 'streamed vs whole');
      same(gist(streamed).content, TEXT, 'text');
      same(gist(streamed).usage, { p: 61, c: 18, t: 79 }, 'usage');
    });

  await test('openai: create({stream: true}): role chunk first, one id, finish chunk, usage chunk with choices []',
    { steps: [{ text: 'abcdefghij', delta_bytes: 4 }] }, async (mock) => {
      const stream = await client(mock).chat.completions.create({ model: MODEL, messages, stream: true,
        stream_options: { include_usage: true } });
      const chunks = [];
      for await (const ch of stream) chunks.push(ch);
      same(chunks[0].choices[0].delta.role, 'assistant', 'first delta');
      check(chunks.every((c) => c.id === chunks[0].id && c.object === 'chat.completion.chunk'), 'one id');
      const text = chunks.flatMap((c) => c.choices.map((x) => x.delta.content || '')).join('');
      same(text, 'abcdefghij', 'text');
      same(chunks.filter((c) => c.choices.length && c.choices[0].finish_reason).map((c) => c.choices[0].finish_reason),
        ['stop'], 'finish reasons');
      const last = chunks[chunks.length - 1];
      same(last.choices, [], 'usage chunk choices');
      check(last.usage && last.usage.total_tokens > 0, 'usage chunk');
      check(chunks.slice(0, -1).every((c) => c.usage === null), 'usage null on the others');
    });

  for (const writes of ['byte', 'utf8', 'crlf', 'escape', 5]) {
    await test(`openai: a stream cut into writes (${writes}), CRLF line ends: the same completion`,
      { steps: [{ text: TEXT, tool_calls: CALLS, writes, write_delay_ms: 1, line_ending: 'crlf', delta_bytes: 7, times: 2 }] },
      async (mock) => {
        const oa = client(mock);
        const streamed = await oa.chat.completions.stream({ model: MODEL, messages, tools }).finalChatCompletion();
        const whole = await oa.chat.completions.create({ model: MODEL, messages, tools });
        same({ ...gist(streamed), usage: null }, { ...gist(whole), usage: null }, 'streamed vs whole');
      });
  }

  await test('openai: a slow stream with keep-alive comments between events',
    { steps: [{ text: 'slowly, slowly', delta_bytes: 4, event_delay_ms: 60, ping_ms: 20 }] }, async (mock) => {
      const r = await client(mock).chat.completions.stream({ model: MODEL, messages }).finalChatCompletion();
      same(r.choices[0].message.content, 'slowly, slowly', 'text');
    });

  await test('openai: --api-key: a wrong key is AuthenticationError 401 invalid_api_key; the right one works',
    { steps: [{ text: 'in' }] }, async (mock) => {
      const e = await rejects(client(mock, { apiKey: 'sk-wrong' }).chat.completions.create({ model: MODEL, messages }),
        OpenAI.AuthenticationError, 'wrong key');
      same([e.status, e.code, e.type], [401, 'invalid_api_key', 'invalid_request_error'], 'error');
      const r = await client(mock, { apiKey: 'sk-right' }).chat.completions.create({ model: MODEL, messages });
      same(r.choices[0].message.content, 'in', 'text');
      same((await mock.requests()).length, 2, 'requests (a 401 is not retried)');
    }, ['--api-key', 'sk-right']);

  await test('openai: an unknown model is NotFoundError 404 model_not_found; a scripted 404 too',
    { models: [MODEL], steps: [{ error: { status: 404 } }] }, async (mock) => {
      const e = await rejects(client(mock).chat.completions.create({ model: 'gpt-nope', messages }), OpenAI.NotFoundError,
        'unknown model');
      same([e.status, e.code, e.type], [404, 'model_not_found', 'invalid_request_error'], 'error');
      check(e.message.includes('gpt-nope'), `message ${e.message}`);
      const s = await rejects(client(mock).chat.completions.create({ model: MODEL, messages }), OpenAI.NotFoundError,
        'scripted 404');
      same(s.code, 'model_not_found', 'code');
    });

  await test('openai: context overflow is BadRequestError 400 context_length_exceeded (param messages)',
    { steps: [{ error: { kind: 'context_overflow' } }] }, async (mock) => {
      const e = await rejects(client(mock).chat.completions.create({ model: MODEL, messages }), OpenAI.BadRequestError, '400');
      same([e.status, e.code, e.param], [400, 'context_length_exceeded', 'messages'], 'error');
      check(/maximum context length/.test(e.message), e.message);
    });

  await test('openai: 429 with retry-after-ms is retried: x-stainless-retry-count 0, 1, 2, then RateLimitError',
    { steps: [{ error: { kind: 'rate_limit', retry_after_ms: 1 }, times: 3 }, { text: 'after the storm' }] }, async (mock) => {
      const oa = client(mock);
      const e = await rejects(oa.chat.completions.create({ model: MODEL, messages }), OpenAI.RateLimitError, '429');
      same([e.status, e.code], [429, 'rate_limit_exceeded'], 'error');
      const reqs = await mock.requests();
      same(reqs.map((r) => r.headers['x-stainless-retry-count']), ['0', '1', '2'], 'retry counts');
      same(reqs.map((r) => r.status), [429, 429, 429], 'statuses');
      const r = await oa.chat.completions.create({ model: MODEL, messages });
      same(r.choices[0].message.content, 'after the storm', 'the next step');
    });

  await test('openai: one 429, then the retry succeeds',
    { steps: [{ error: { kind: 'rate_limit', retry_after: 0 } }, { text: 'ok now' }] }, async (mock) => {
      const r = await client(mock).chat.completions.create({ model: MODEL, messages });
      same(r.choices[0].message.content, 'ok now', 'text');
      same((await mock.requests()).map((x) => x.headers['x-stainless-retry-count']), ['0', '1'], 'retry counts');
    });

  await test('openai: x-should-retry: false: one request, InternalServerError 500',
    { steps: [{ error: { kind: 'server', should_retry: false } }] }, async (mock) => {
      const e = await rejects(client(mock).chat.completions.create({ model: MODEL, messages }), OpenAI.InternalServerError, '500');
      same(e.status, 500, 'status');
      same((await mock.requests()).length, 1, 'requests');
    });

  await test('openai: a 503 storm exhausts the retries',
    { steps: [{ error: { status: 503, retry_after_ms: 1 }, times: 3 }], then: 'error' }, async (mock) => {
      const e = await rejects(client(mock).chat.completions.create({ model: MODEL, messages }), OpenAI.InternalServerError, '503');
      same(e.status, 503, 'status');
      same((await mock.requests()).length, 3, 'requests');
    });

  await test('openai: an error inside the stream surfaces as APIError',
    { steps: [{ text: 'partial answer', delta_bytes: 2, stream_error: { kind: 'server', after_events: 3 } }] }, async (mock) => {
      const stream = client(mock).chat.completions.stream({ model: MODEL, messages });
      const e = await rejects(stream.finalChatCompletion(), OpenAI.APIError, 'stream error');
      check(/had an error while processing/.test(e.message), e.message);
      same((await mock.requests()).length, 1, 'not retried once the 200 came');
    });

  await test('openai: a stream cut in the middle of a data: line is rejected',
    { steps: [{ text: 'never finished', delta_bytes: 3, cut: { after_events: 3, mid_line: true } }] }, async (mock) => {
      await rejects(client(mock).chat.completions.stream({ model: MODEL, messages }).finalChatCompletion(), null, 'cut');
    });

  await test('openai: a stream ended cleanly before its finish chunk is rejected',
    { steps: [{ text: 'never finished', delta_bytes: 3, cut: { after_events: 2, clean: true } }] }, async (mock) => {
      const e = await rejects(client(mock).chat.completions.stream({ model: MODEL, messages }).finalChatCompletion(), null, 'cut');
      check(/finish_reason/.test(e.message), e.message);
    });

  await test('openai: quirks the SDK takes: usage on every chunk or on the finish chunk, one-piece calls, "stop" with calls',
    { steps: [
      { text: 'a', quirks: ['usage_every_chunk'], usage: { input_tokens: 3, output_tokens: 1 } },
      { tool_calls: CALLS, quirks: ['usage_on_finish', 'one_piece_tool_calls'], finish_reason: 'stop' },
    ] }, async (mock) => {
      const oa = client(mock);
      const a = await oa.chat.completions.stream({ model: MODEL, messages, stream_options: { include_usage: true } })
        .finalChatCompletion();
      same(gist(a).usage, { p: 3, c: 1, t: 4 }, 'usage on every chunk');
      const b = await oa.chat.completions.stream({ model: MODEL, messages, tools }).finalChatCompletion();
      same(gist(b).tool_calls.map((t) => [t.name, t.args]), CALLS.map((t) => [t.name, t.input]), 'one-piece calls');
      same(b.choices[0].finish_reason, 'stop', 'finish_reason stop with tool calls');
      check(b.usage && b.usage.total_tokens > 0, 'usage from the finish chunk');
    });

  await test('openai: quirks on the wire: reused index 0 with new ids, no index, the flat vLLM error, 200 + JSON error',
    { steps: [
      { tool_calls: CALLS, quirks: ['reuse_index'] },
      { tool_calls: CALLS, quirks: ['no_index'] },
      { error: { status: 400, shape: 'flat', message: 'bad role' } },
      { error: { status: 200, kind: 'context_overflow' } },
    ] }, async (mock) => {
      const post = (body) => fetch(`${mock.url}/v1/chat/completions`, { method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer x' }, body: JSON.stringify(body) });
      const fragments = async (res) => (await res.text()).split('\n').filter((l) => l.startsWith('data: {'))
        .map((l) => JSON.parse(l.slice(6))).flatMap((c) => (c.choices[0] && c.choices[0].delta.tool_calls) || []);
      const a = await fragments(await post({ model: MODEL, messages, stream: true }));
      same(a.filter((f) => f.id).map((f) => f.index), [0, 0], 'reused index');
      check(a[0].id !== a.filter((f) => f.id)[1].id, 'new ids');
      const b = await fragments(await post({ model: MODEL, messages, stream: true }));
      check(b.length > 0 && b.every((f) => !('index' in f)), 'no index');
      const e = await rejects(client(mock).chat.completions.create({ model: MODEL, messages }), OpenAI.BadRequestError, 'flat');
      same(e.status, 400, 'flat error status');
      const j = await post({ model: MODEL, messages, stream: true });
      same([j.status, j.headers.get('content-type')], [200, 'application/json'], '200 + JSON on a stream request');
      same((await j.json()).error.code, 'context_length_exceeded', 'the error object');
    });

  await test('openai: every request recorded (method, path, headers, body), in the record file too',
    { steps: [{ text: 'x' }] }, async (mock) => {
      await client(mock).chat.completions.create({ model: MODEL, messages, stream: false });
      const [r] = await mock.requests();
      same([r.method, r.path, r.api, r.step, r.status], ['POST', '/v1/chat/completions', 'openai', 1, 200], 'record');
      same(r.headers.authorization, 'Bearer sk-test', 'authorization');
      check(/^OpenAI\/JS 6\./.test(r.headers['user-agent']), `user-agent ${r.headers['user-agent']}`);
      same(r.body.messages, messages, 'body');
      const lines = require('node:fs').readFileSync(mock.record, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      same(lines, [r], 'the record file');
    });
  done();
}

main();
