// mcp-server.test.js: `hull mcp` driven by the official MCP SDK's client (@modelcontextprotocol/sdk,
// stdio transport): initialize, the tools listed, a DataFrame saved as a handle by run_python and
// queried with SQL, the session persisting between calls, files written, read, edited and found,
// a path escape and a link to a host file refused, bad calls answered as errors with the server
// still serving, progress on a long call, and the audit log the calls left verified at the end.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { McpError } = require('@modelcontextprotocol/sdk/types.js');
const { check, same } = require('./lib.js');

const HULL = process.env.HULL;
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

async function main() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-mcp-'));
  fs.chmodSync(home, 0o711);
  const secret = path.join(home, 'host-secret.txt');
  fs.writeFileSync(secret, 'HOST-ONLY-SECRET\n');
  fs.chmodSync(secret, 0o644);
  const transport = new StdioClientTransport({ command: HULL, args: ['mcp', '--home', home], stderr: 'pipe' });
  let stderr = '';
  transport.stderr.on('data', (d) => { stderr += d; });
  const client = new Client({ name: 'hull-conformance', version: '1.0.0' });
  let connected = false;

  await step('mcp: initialize: serverInfo, tools capability, instructions naming the audit log', async () => {
    await client.connect(transport, { timeout: 120000 });
    connected = true;
    const info = client.getServerVersion();
    same(info.name, 'hull', 'serverInfo.name');
    check(typeof info.version === 'string' && info.version.length > 0, `serverInfo.version ${info.version}`);
    check(client.getServerCapabilities().tools, 'the tools capability');
    check(/audit log on the host: \/.*\/audit\/session-[0-9a-f]{64}\.jsonl/.test(client.getInstructions() || ''),
      `instructions: ${client.getInstructions()}`);
  });
  if (!connected) {
    console.log(`not ok - mcp: the rest: no connection (stderr: ${stderr.slice(-500)})`);
    process.exit(1);
  }

  await step('mcp: tools/list: the sandbox tools with object input schemas', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const want of ['run_python', 'bash', 'read', 'write', 'edit', 'glob', 'grep', 'inspect_handle', 'query_handle'])
      check(names.includes(want), `${want} missing from ${names}`);
    for (const t of tools) {
      same(t.inputSchema.type, 'object', `${t.name}'s inputSchema.type`);
      check(t.description && t.description.length > 20, `${t.name}'s description`);
    }
    same(tools.find((t) => t.name === 'run_python').inputSchema.required, ['code'], "run_python's required");
  });

  await step('mcp: run_python saves a DataFrame as a table handle', async () => {
    const r = await client.callTool({
      name: 'run_python',
      arguments: { code: "import pandas as pd\ndf = pd.DataFrame({'region': ['north', 'south', 'north'], 'amount': [10, 20, 5]})\nsave('sales', df)\nprint(len(df))" },
    }, undefined, CALL);
    check(!r.isError, `isError: ${text(r)}`);
    check(/^3$/m.test(text(r)), `stdout: ${text(r)}`);
    const h = (r.structuredContent && r.structuredContent.handles || []).find((x) => x.id === 'sales');
    check(h, `no handle sales in ${JSON.stringify(r.structuredContent)}`);
    same([h.kind, h.n_rows, h.n_cols], ['table', 3, 2], 'the handle');
  });

  await step('mcp: query_handle runs SQL over the handle', async () => {
    const r = await client.callTool({
      name: 'query_handle',
      arguments: { sql: 'SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY region' },
    }, undefined, CALL);
    check(!r.isError, `isError: ${text(r)}`);
    const q = JSON.parse(text(r));
    same(q.columns, ['region', 'total'], 'columns');
    same(q.rows, [['north', 15], ['south', 20]], 'rows');
  });

  await step('mcp: inspect_handle describes it', async () => {
    const r = await client.callTool({ name: 'inspect_handle', arguments: { handle_id: 'sales', stats: true } }, undefined, CALL);
    check(!r.isError, `isError: ${text(r)}`);
    check(/region/.test(text(r)) && /amount/.test(text(r)), text(r));
  });

  await step('mcp: the interpreter persists between calls (variables, load of the handle)', async () => {
    await client.callTool({ name: 'run_python', arguments: { code: 'counter = 41' } }, undefined, CALL);
    const r = await client.callTool({ name: 'run_python', arguments: { code: "counter + 1" } }, undefined, CALL);
    same(text(r).trim(), '42', 'counter + 1');
    const l = await client.callTool({ name: 'run_python', arguments: { code: "int(load('sales')['amount'].sum())" } }, undefined, CALL);
    same(text(l).trim(), '35', "load('sales') summed");
  });

  await step('mcp: run_javascript keeps its context between calls (when node is there)', async () => {
    const { tools } = await client.listTools();
    if (!tools.some((t) => t.name === 'run_javascript')) {
      check(!fs.existsSync('/usr/bin/node'), 'run_javascript is not offered though /usr/bin/node is there');
      return;
    }
    let r = await client.callTool({ name: 'run_javascript', arguments: { code: 'let total = 40; process.cwd()' } }, undefined, CALL);
    check(!r.isError && /\/workspace/.test(text(r)), `first call: ${text(r)}`);
    r = await client.callTool({ name: 'run_javascript', arguments: { code: 'total + 2' } }, undefined, CALL);
    same(text(r).trim(), '42', 'total + 2');
    r = await client.callTool({ name: 'run_javascript', arguments: { code: "throw new Error('boom')" } }, undefined, CALL);
    check(r.isError === true && /boom/.test(text(r)), `a throw: ${text(r)}`);
  });

  await step('mcp: write, read, edit, glob and grep a file of the workspace', async () => {
    let r = await client.callTool({ name: 'write', arguments: { file_path: 'notes/a.txt', content: 'alpha\nbeta\n' } }, undefined, CALL);
    check(!r.isError, `write: ${text(r)}`);
    r = await client.callTool({ name: 'read', arguments: { file_path: '/workspace/notes/a.txt' } }, undefined, CALL);
    check(!r.isError && /1\s+alpha/.test(text(r)) && /2\s+beta/.test(text(r)), `read: ${text(r)}`);
    r = await client.callTool({ name: 'edit', arguments: { file_path: 'notes/a.txt', old_string: 'beta', new_string: 'gamma' } }, undefined, CALL);
    check(!r.isError, `edit: ${text(r)}`);
    r = await client.callTool({ name: 'bash', arguments: { command: 'cat notes/a.txt' } }, undefined, CALL);
    check(/alpha\ngamma/.test(text(r)), `bash cat: ${text(r)}`);
    r = await client.callTool({ name: 'glob', arguments: { pattern: '**/*.txt' } }, undefined, CALL);
    check(/notes\/a\.txt/.test(text(r)), `glob: ${text(r)}`);
    r = await client.callTool({ name: 'grep', arguments: { pattern: 'gam+a', output_mode: 'content' } }, undefined, CALL);
    check(/a\.txt:2:gamma/.test(text(r)), `grep: ${text(r)}`);
  });

  await step('mcp: a path out of the workspace is refused', async () => {
    for (const p of ['../../etc/passwd', '/etc/passwd', secret]) {
      const r = await client.callTool({ name: 'read', arguments: { file_path: p } }, undefined, CALL);
      check(r.isError === true, `read ${p} was not refused: ${text(r)}`);
      check(!/root:|HOST-ONLY-SECRET/.test(text(r)), `read ${p} leaked: ${text(r)}`);
    }
    const w = await client.callTool({ name: 'write', arguments: { file_path: '../escape.txt', content: 'x' } }, undefined, CALL);
    check(w.isError === true, `write ../escape.txt was not refused: ${text(w)}`);
  });

  await step('mcp: a symlink to a host file is refused', async () => {
    const l = await client.callTool({ name: 'bash', arguments: { command: `ln -s ${secret} link && ln -s /etc/hostname link2 && ls -l link` } }, undefined, CALL);
    check(!l.isError, `ln: ${text(l)}`);
    for (const name of ['link', 'link2']) {
      const r = await client.callTool({ name: 'read', arguments: { file_path: name } }, undefined, CALL);
      check(r.isError === true, `read ${name} was not refused: ${text(r)}`);
      check(!/HOST-ONLY-SECRET/.test(text(r)), `read ${name} leaked the host file: ${text(r)}`);
    }
    // a write never goes through the link: it is refused, or it replaces the link with a file
    const w = await client.callTool({ name: 'write', arguments: { file_path: 'link', content: 'overwritten' } }, undefined, CALL);
    same(fs.readFileSync(secret, 'utf8'), 'HOST-ONLY-SECRET\n', 'the host file after a write to the link');
    if (!w.isError) {
      const t = await client.callTool({ name: 'bash', arguments: { command: 'test -f link && ! test -L link && cat link' } }, undefined, CALL);
      same(text(t).split('\n')[0], 'overwritten', 'link replaced by a regular file');
    }
  });

  await step('mcp: bad arguments are an error result, an unknown tool a JSON-RPC error; the server serves on', async () => {
    const r = await client.callTool({ name: 'read', arguments: { file_path: 7, bogus: true } }, undefined, CALL);
    same(r.isError, true, 'isError');
    check(/file_path/.test(text(r)) && /bogus/.test(text(r)), `the message names the fields: ${text(r)}`);
    let err = null;
    try {
      await client.callTool({ name: 'no_such_tool', arguments: {} }, undefined, CALL);
    } catch (e) {
      err = e;
    }
    check(err instanceof McpError, `unknown tool: ${err}`);
    same(err.code, -32602, 'code');
    await client.ping();
    const again = await client.callTool({ name: 'run_python', arguments: { code: 'counter' } }, undefined, CALL);
    same(text(again).trim(), '41', 'the session after the errors');
  });

  await step('mcp: progress notifications on a long call', async () => {
    const seen = [];
    const r = await client.callTool({ name: 'bash', arguments: { command: 'sleep 3; echo slept' } }, undefined,
      { ...CALL, onprogress: (p) => seen.push(p) });
    check(!r.isError && /slept/.test(text(r)), text(r));
    check(seen.length >= 1, `${seen.length} progress notifications`);
    for (let i = 1; i < seen.length; i++)
      check(seen[i].progress > seen[i - 1].progress, `progress went from ${seen[i - 1].progress} to ${seen[i].progress}`);
    check(/running for/.test(seen[0].message || ''), `message: ${seen[0].message}`);
  });

  const pid = transport.pid;
  await step('mcp: close ends the server cleanly, and the audit log verifies', async () => {
    await client.close();
    let alive = true;
    for (let i = 0; i < 300 && alive; i++) {
      try {
        process.kill(pid, 0);
        await new Promise((res) => setTimeout(res, 100));
      } catch (e) {
        alive = false;
      }
    }
    check(!alive, `hull mcp (pid ${pid}) still runs 30 s after close`);
    check(/the session ended/.test(stderr), `stderr: ${stderr.slice(-300)}`);
    const m = /audit log: (\S+\.jsonl)/.exec(stderr);
    check(m && fs.existsSync(m[1]), 'the audit log is there');
    const lines = fs.readFileSync(m[1], 'utf8').trim().split('\n');
    check(lines.length >= 8, `${lines.length} records`);
    const out = execFileSync(HULL, ['verify', m[1]], { encoding: 'utf8' });
    check(/^ok: /.test(out), out);
    // every call on the record, the read-only ones too (hull's read-only kinds)
    const ops = new Set(lines.map((l) => JSON.parse(l).operation));
    for (const op of ['read', 'glob', 'grep', 'inspect_handle', 'query_handle', 'write', 'edit', 'exec'])
      check(ops.has(op), `no ${op} record in the audit log`);
  });

  fs.rmSync(home, { recursive: true, force: true });
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.log(`not ok - mcp: ${e && e.stack}`);
  process.exit(1);
});
