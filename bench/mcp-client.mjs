// bench/mcp-client.mjs: the official MCP SDK's client (@modelcontextprotocol/sdk, from
// tests/conformance's lockfile) timed on the same tools/call round trips as bench/bench-mcp.c, for
// bench/mcp-client.sh; run by hand, never a test.
//
//   node bench/mcp-client.mjs stdio CALLS WARMUP COMMAND [ARGS...]
//   node bench/mcp-client.mjs http CALLS WARMUP URL
//
// SDK is the path of the SDK's package directory (node_modules/@modelcontextprotocol/sdk). Each
// call of the server's "echo" tool is timed with performance.now() around client.callTool(); the
// answer must be "Echo: ping". Prints each call's time in microseconds, one per line.
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = process.env.SDK;
if (!sdk) throw new Error('SDK must name node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdk, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');

const [mode, callsArg, warmupArg, ...rest] = process.argv.slice(2);
const calls = Number(callsArg), warmup = Number(warmupArg);
let transport;
if (mode === 'stdio') {
  const { StdioClientTransport } = await load('client/stdio.js');
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: 'ignore' });
} else if (mode === 'http') {
  const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else {
  console.error('usage: mcp-client.mjs stdio|http CALLS WARMUP COMMAND ARGS...|URL');
  process.exit(2);
}
const client = new Client({ name: 'bench', version: '1.0.0' });
await client.connect(transport);
const us = [];
for (let i = 0; i < warmup + calls; i++) {
  const t0 = performance.now();
  const res = await client.callTool({ name: 'echo', arguments: { message: 'ping' } });
  const t1 = performance.now();
  if (res.content?.[0]?.text !== 'Echo: ping') throw new Error(`echo answered ${JSON.stringify(res)}`);
  if (i >= warmup) us.push(Math.round((t1 - t0) * 1000));
}
process.stdout.write(us.join('\n') + '\n');
await client.close();
