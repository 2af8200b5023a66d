// mcp-http.test.js: hull serve's /mcp driven by the official MCP SDK's client
// (@modelcontextprotocol/sdk, StreamableHTTPClientTransport): initialize with a session id and the
// instructions, the tools listed, run_python keeping its variables between calls, a bad call and a
// bad argument answered as errors with the session still serving, progress on a long call (an
// event-stream answer), two sessions kept apart, and DELETE ending the session (its id then 404).
// The caller starts hull serve: MCP_URL is its /mcp, MCP_TOKEN (optional) a token for it.
'use strict';
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { McpError } = require('@modelcontextprotocol/sdk/types.js');
const { check, same } = require('./lib.js');

const URL_ = process.env.MCP_URL;
const TOKEN = process.env.MCP_TOKEN || '';
const CALL = { timeout: 180000 }; // generous: the machine is shared

let failures = 0;
async function step(name, fn) {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (e) {
    failures++;
    const why = String((e && e.stack) || e).split('\n').slice(0, 4).join(' | ');
    console.log(`not ok - ${name}: ${why}`);
  }
}

function text(r) {
  return (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

function connect() {
  const headers = TOKEN ? { Authorization: `Bearer ${TOKEN}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(URL_), { requestInit: { headers } });
  const client = new Client({ name: 'hull-conformance-http', version: '1.0.0' });
  return { client, transport };
}

async function main() {
  if (!URL_) {
    console.log('not ok - mcp-http: MCP_URL must name hull serve\'s /mcp');
    process.exit(1);
  }
  const { client, transport } = connect();
  let connected = false;

  await step('mcp-http: initialize: a session id, serverInfo, the tools capability, the instructions', async () => {
    await client.connect(transport, { timeout: 120000 });
    connected = true;
    check(/^[\x21-\x7e]{16,}$/.test(transport.sessionId || ''), `Mcp-Session-Id ${transport.sessionId}`);
    same(client.getServerVersion().name, 'hull', 'serverInfo.name');
    check(client.getServerCapabilities().tools, 'the tools capability');
    check(/audit log on the host: \/.*\/session-[0-9a-f]{64}\.jsonl/.test(client.getInstructions() || ''),
      `instructions: ${client.getInstructions()}`);
  });
  if (!connected) {
    console.log('not ok - mcp-http: the rest: no connection');
    process.exit(1);
  }

  await step('mcp-http: tools/list: the sandbox tools', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const want of ['run_python', 'bash', 'read', 'write', 'edit', 'glob', 'grep', 'inspect_handle', 'query_handle'])
      check(names.includes(want), `${want} missing from ${names}`);
    same(tools.find((t) => t.name === 'run_python').inputSchema.required, ['code'], "run_python's required");
  });

  await step('mcp-http: run_python keeps its variables between calls', async () => {
    let r = await client.callTool({ name: 'run_python', arguments: { code: 'x = 41' } }, undefined, CALL);
    check(!r.isError, `isError: ${text(r)}`);
    r = await client.callTool({ name: 'run_python', arguments: { code: 'print(x + 1)' } }, undefined, CALL);
    check(!r.isError, `isError: ${text(r)}`);
    same(text(r).trim(), '42', 'stdout');
  });

  await step('mcp-http: an unknown tool is a JSON-RPC error naming the tools; the session serves on', async () => {
    let err = null;
    try {
      await client.callTool({ name: 'no_such_tool', arguments: {} }, undefined, CALL);
    } catch (e) { err = e; }
    check(err instanceof McpError, `an McpError, got ${err}`);
    same(err.code, -32602, 'the code');
    check(/run_python/.test(err.message), `the message names the tools: ${err.message}`);
    const r = await client.callTool({ name: 'run_python', arguments: { code: 'print(x * 2)' } }, undefined, CALL);
    same(text(r).trim(), '82', 'the call after it');
  });

  await step('mcp-http: bad arguments are an isError result saying why; the next call runs', async () => {
    let r = await client.callTool({ name: 'run_python', arguments: { cod: 'print(1)' } }, undefined, CALL);
    check(r.isError === true, 'isError');
    check(/code/.test(text(r)), `says what is missing: ${text(r)}`);
    r = await client.callTool({ name: 'bash', arguments: { command: 'echo hi > /workspace/f.txt && cat /workspace/f.txt' } },
      undefined, CALL);
    check(!r.isError, `isError: ${text(r)}`);
    check(/hi/.test(text(r)), `bash's output: ${text(r)}`);
  });

  await step('mcp-http: a long call sends progress (an event-stream answer), then its result', async () => {
    const seen = [];
    const r = await client.callTool({ name: 'run_python', arguments: { code: 'import time\ntime.sleep(2.5)\nprint("done")' } },
      undefined, { ...CALL, onprogress: (p) => seen.push(p) });
    check(!r.isError, `isError: ${text(r)}`);
    same(text(r).trim(), 'done', 'stdout');
    check(seen.length >= 1, `progress notifications: ${JSON.stringify(seen)}`);
    check(seen.every((p, i) => i === 0 || p.progress > seen[i - 1].progress), 'progress increases');
  });

  await step('mcp-http: a second session is another sandbox (its python has no x)', async () => {
    const two = connect();
    await two.client.connect(two.transport, { timeout: 120000 });
    try {
      check(two.transport.sessionId !== transport.sessionId, 'a different session id');
      const r = await two.client.callTool({ name: 'run_python', arguments: { code: 'print("x" in globals())' } },
        undefined, CALL);
      same(text(r).trim(), 'False', 'x in the second session');
      const f = await two.client.callTool({ name: 'bash', arguments: { command: 'ls /workspace' } }, undefined, CALL);
      check(!/f\.txt/.test(text(f)), `the first session's file: ${text(f)}`);
    } finally {
      await two.transport.terminateSession();
      await two.client.close();
    }
  });

  await step('mcp-http: DELETE ends the session; its id is then 404', async () => {
    const id = transport.sessionId;
    await transport.terminateSession();
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'Mcp-Session-Id': id, 'MCP-Protocol-Version': '2025-11-25' };
    if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
    const res = await fetch(URL_, { method: 'POST', headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list' }) });
    same(res.status, 404, 'the status after DELETE');
    const body = await res.json();
    same(body.error.code, -32001, 'the error code');
  });
  await client.close();
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.log(`not ok - mcp-http: ${e && e.stack}`);
  process.exit(1);
});
