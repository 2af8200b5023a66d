// lib.js: what the conformance tests share: `hull mock-model` started with a script and stopped,
// its record read, and a runner printing "ok - NAME" / "not ok - NAME: why" lines (tests/lib.sh's).
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const util = require('node:util');

const HULL = process.env.HULL;
if (!HULL) {
  console.log('not ok - conformance: HULL must point at the built hull binary');
  process.exit(1);
}

// Start `hull mock-model --script` with script (an object) and extra arguments; resolves once it
// printed its URL. The caller stops it (stop()).
async function startMock(script, args = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-conformance-'));
  const file = path.join(dir, 'script.json');
  const record = path.join(dir, 'record.jsonl');
  fs.writeFileSync(file, JSON.stringify(script));
  const proc = spawn(HULL, ['mock-model', '--script', file, '--listen', '127.0.0.1:0', '--record', record,
    '--log-level', 'error', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let exited = null;
  const exit = new Promise((resolve) => proc.on('exit', (code, signal) => { exited = { code, signal }; resolve(exited); }));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('hull mock-model printed no URL in 30 s')), 30000);
    proc.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(out.slice(0, nl));
      if (m) resolve(m[1]);
      else reject(new Error(`unexpected first line: ${JSON.stringify(out.slice(0, nl))}`));
    });
    exit.then(() => { clearTimeout(timer); reject(new Error(`hull mock-model exited: ${JSON.stringify(exited)}`)); });
  });
  const key = args.includes('--api-key') ? args[args.indexOf('--api-key') + 1] : null;
  return {
    url,
    record,
    // every request the mock saw, from GET /_mock/requests
    async requests() {
      const res = await fetch(`${url}/_mock/requests`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
      if (res.status !== 200) throw new Error(`GET /_mock/requests: ${res.status}`);
      return res.json();
    },
    async stop() {
      if (!exited) proc.kill('SIGTERM');
      const how = await exit;
      fs.rmSync(dir, { recursive: true, force: true });
      if (how.code !== 0) throw new Error(`hull mock-model ended with ${JSON.stringify(how)} after SIGTERM`);
    },
  };
}

let failures = 0;

// Run fn with a mock of script; print one line. fn(mock) may throw.
async function test(name, script, fn, args = []) {
  let mock = null;
  try {
    mock = await startMock(script, args);
    await fn(mock);
    await mock.stop();
    mock = null;
    console.log(`ok - ${name}`);
  } catch (e) {
    failures++;
    const why = String((e && e.stack) || e).split('\n').slice(0, 4).join(' | ');
    console.log(`not ok - ${name}: ${why}`);
  } finally {
    if (mock) await mock.stop().catch(() => {});
  }
}

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

function same(got, want, what) {
  if (!util.isDeepStrictEqual(got, want))
    throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

// The promise must reject with an instance of cls; returns the error.
async function rejects(promise, cls, what) {
  try {
    await promise;
  } catch (e) {
    if (cls && !(e instanceof cls))
      throw new Error(`${what}: want ${cls.name}, got ${e && e.constructor && e.constructor.name}: ${e && e.message}`);
    return e;
  }
  throw new Error(`${what}: resolved; want a rejection${cls ? ` (${cls.name})` : ''}`);
}

function done() {
  process.exitCode = failures ? 1 : 0;
}

module.exports = { startMock, test, check, same, rejects, done };
