// cma-lib.js: what the /v1 (Claude Managed Agents) conformance test shares: `hull serve` started
// on a free port with its state in a temp HULL_HOME and its model at a `hull mock-model`, a reader
// of an SDK event stream that never waits forever, a raw SSE reader (for Last-Event-ID, which the
// SDK does not send), and a fetch that counts what reached the server.
'use strict';
const { spawn, execFile, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const HULL = process.env.HULL;
const MODEL = 'claude-sonnet-4-6';
// Extra `hull serve` arguments, e.g. HULL_SERVE_ARGS='--no-cgroup --log-level debug'.
const EXTRA = (process.env.HULL_SERVE_ARGS || '').split(/\s+/).filter(Boolean);
const BETA = 'managed-agents-2026-04-01';

// Start `hull serve --listen 127.0.0.1:0` with HULL_HOME a new temp dir (or opts.home) and the
// model at mockUrl (Anthropic Messages). Resolves once its log says event=listening.
async function startServe(mockUrl, opts = {}) {
  const home = opts.home || fs.mkdtempSync(path.join(os.tmpdir(), 'hull-cma-home-'));
  fs.chmodSync(home, 0o711);
  const logFile = path.join(home, '..', `${path.basename(home)}.serve.log`);
  const args = ['serve', '--listen', opts.listen || '127.0.0.1:0', '--model', MODEL, '--provider', 'anthropic',
    '--base-url', mockUrl, '--api-key', 'sk-mock', ...EXTRA, ...(opts.args || [])];
  const env = { ...process.env, HULL_HOME: home, ...(opts.env || {}) };
  for (const k of ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'HULL_MODEL', 'HULL_BASE_URL', 'HULL_PROVIDER'])
    delete env[k];
  if (!(opts.env && 'HULL_API_KEY' in opts.env)) delete env.HULL_API_KEY;
  const out = fs.openSync(logFile, 'a');
  const proc = spawn(HULL, args, { env, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  let exited = null;
  const exit = new Promise((resolve) => proc.on('exit', (code, signal) => { exited = { code, signal }; resolve(exited); }));
  const log = () => { try { return fs.readFileSync(logFile, 'utf8'); } catch { return ''; } };
  const deadline = Date.now() + 30000;
  let addr = null;
  while (!addr) {
    const m = /event=listening\b.*?\baddr=(127\.0\.0\.1:\d+)/.exec(log());
    if (m) addr = m[1];
    else if (exited) throw new Error(`hull serve exited ${JSON.stringify(exited)}: ${log().slice(-600)}`);
    else if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`hull serve did not listen in 30 s: ${log().slice(-600)}`); }
    else await sleep(50);
  }
  return {
    url: `http://${addr}`,
    home,
    log,
    pid: proc.pid,
    get exited() { return exited; },
    // SIGTERM, then SIGKILL after 30 s; removes the home unless keep.
    async stop(keep = false) {
      if (!exited) proc.kill('SIGTERM');
      const t = setTimeout(() => { if (!exited) proc.kill('SIGKILL'); }, 30000);
      const how = await exit;
      clearTimeout(t);
      if (!keep && !opts.home) {
        fs.rmSync(home, { recursive: true, force: true });
        fs.rmSync(logFile, { force: true });
      }
      return how;
    },
    async kill() { if (!exited) proc.kill('SIGKILL'); return exit; },
  };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// A fetch that records each request (method, path, headers) and its status, for the SDK's `fetch`
// option: how many requests reached the server (no retries behind the SDK's back).
// route(method, path), when given, names the base URL the request goes to (the nodes mode: the
// client's calls spread over several nodes); rec.node is the index route returned.
function countingFetch(route = null) {
  const seen = [];
  const f = async (url, init = {}) => {
    const u = new URL(typeof url === 'string' ? url : url.url);
    const h = new Headers(init.headers || {});
    const rec = { method: (init.method || 'GET').toUpperCase(), path: u.pathname, search: u.search,
      headers: Object.fromEntries(h.entries()), status: null, node: null };
    seen.push(rec);
    if (route) {
      const r = route(rec.method, u.pathname);
      rec.node = r.node;
      url = new URL(u.pathname + u.search, r.url).toString();
    }
    const res = await fetch(url, init);
    rec.status = res.status;
    return res;
  };
  f.seen = seen;
  return f;
}

// Reads an SDK event stream one event at a time, so a test can wait for one event, act, and read
// on; every wait has a deadline and says what it saw when it runs out.
class Reader {
  constructor(stream) {
    this.stream = stream;
    this.it = stream[Symbol.asyncIterator]();
    this.events = [];
  }

  seen(from = 0) {
    return this.events.slice(from).map((e) => e.type + (e.type === 'session.status_idle' && e.stop_reason ? `{${e.stop_reason.type}}` : '')).join(', ');
  }

  // Reads until pred(event) holds; returns the events read by this call (the matching one last).
  async until(pred, what, ms = 120000) {
    const start = this.events.length;
    const deadline = Date.now() + ms;
    for (;;) {
      let timer;
      const left = deadline - Date.now();
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`stream: no ${what} in ${ms / 1000} s; saw [${this.seen(start)}]`)), Math.max(left, 0));
      });
      let r;
      try {
        r = await Promise.race([this.it.next(), timeout]);
      } finally {
        clearTimeout(timer);
      }
      if (r.done) throw new Error(`stream ended before ${what}; saw [${this.seen(start)}]`);
      this.events.push(r.value);
      if (pred(r.value)) return this.events.slice(start);
    }
  }

  idle(what = 'session.status_idle', ms = 120000) {
    return this.until((e) => e.type === 'session.status_idle', what, ms);
  }

  close() {
    try { this.stream.controller.abort(); } catch { /* already closed */ }
  }
}

// Raw headers of a /v1 request (what SDK 1.x sends), plus extra.
function v1Headers(extra = {}) {
  return { 'anthropic-version': '2026-10-21', 'anthropic-beta': BETA, 'content-type': 'application/json', ...extra };
}

// Open GET url as an SSE stream with raw fetch and read frames ({id, event, data}) until pred holds
// for the frames so far, the stream ends, or ms pass; then abort. Returns {status, headers, frames,
// ended, timedOut}.
async function readSSE(url, headers, pred, ms = 30000) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  const frames = [];
  let ended = false;
  let timedOut = false;
  let res;
  try {
    res = await fetch(url, { headers, signal: ac.signal });
    if (res.status !== 200) {
      const body = await res.text();
      return { status: res.status, headers: res.headers, frames, body, ended: true, timedOut };
    }
    const dec = new TextDecoder();
    let buf = '';
    let cur = { id: null, event: null, data: [] };
    const reader = res.body.getReader();
    outer: for (;;) {
      const { value, done } = await reader.read();
      if (done) { ended = true; break; }
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.search(/\r\n|\n|\r/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
        if (line === '') {
          if (cur.event !== null || cur.data.length) {
            const f = { id: cur.id, event: cur.event, data: cur.data.join('\n') };
            try { f.json = JSON.parse(f.data); } catch { f.json = null; }
            frames.push(f);
            if (pred(frames)) break outer;
          }
          cur = { id: null, event: null, data: [] };
          continue;
        }
        if (line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const field = c < 0 ? line : line.slice(0, c);
        let val = c < 0 ? '' : line.slice(c + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'id') cur.id = val;
        else if (field === 'event') cur.event = val;
        else if (field === 'data') cur.data.push(val);
      }
    }
  } catch (e) {
    if (ac.signal.aborted) timedOut = true;
    else throw e;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return { status: res ? res.status : null, headers: res ? res.headers : null, frames, ended, timedOut };
}

// `hull key create` against home (or the database db when given): the key it printed on stdout.
function keyCreate(home, db = null) {
  const out = execFileSync(HULL, ['key', 'create', '--name', 'conformance', ...(db ? ['--db', db] : [])], {
    env: { ...process.env, HULL_HOME: home }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000,
  });
  const m = /\bhull_[A-Za-z0-9_-]+/.exec(out) || /^\s*(\S+)\s*$/.exec(out);
  if (!m) throw new Error(`hull key create printed no key: ${JSON.stringify(out)}`);
  return m[1] || m[0];
}

// The tool_result blocks of an Anthropic Messages request body, in order: {tool_use_id, text, is_error}.
function toolResults(body) {
  const out = [];
  for (const m of body.messages || []) {
    if (m.role !== 'user' || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type !== 'tool_result') continue;
      const text = typeof b.content === 'string' ? b.content
        : (b.content || []).filter((p) => p.type === 'text').map((p) => p.text).join('\n');
      out.push({ tool_use_id: b.tool_use_id, text, is_error: b.is_error === true });
    }
  }
  return out;
}

// The nodes mode (CMA_PG_HOST set: a PostgreSQL cluster's socket directory, trusting local
// connections, e.g. tests/lib-pg.sh's): a new database per case in that cluster, three `hull serve
// --node-id` on it, and a router spreading a client's calls over them: a session is created on
// node 1, its events sent on node 2, its streams read from node 3, every other call round-robin.
const PG_HOST = process.env.CMA_PG_HOST || '';
const PG_BIN = process.env.PG_BIN || '/usr/lib/postgresql/15/bin';
let dbCount = 0;

// A new database's URL; the next one is made meanwhile (createdb takes seconds on a busy machine).
let nextDb = null;
function createDb() {
  const name = `cma_${process.pid}_${++dbCount}`;
  return new Promise((resolve, reject) => {
    execFile(`${PG_BIN}/createdb`, ['-h', PG_HOST, '-U', 'postgres', name], { timeout: 60000 }, (err, out, errOut) => {
      if (err) reject(new Error(`createdb ${name}: ${errOut || err.message}`));
      else resolve(`postgresql:///${name}?host=${PG_HOST}&user=postgres`);
    });
  });
}
async function pgCreateDb() {
  const db = nextDb || createDb();
  nextDb = createDb();
  nextDb.catch(() => {}); // its failure is reported when it is taken
  return db;
}

function pgDropDb(url) {
  const name = /^postgresql:\/\/\/([a-z0-9_]+)\?/.exec(url)[1];
  // not waited for: the cluster goes at the end of the run anyway
  spawn(`${PG_BIN}/dropdb`, ['-h', PG_HOST, '-U', 'postgres', '--if-exists', name], { stdio: 'ignore' }).unref();
}

// Start n nodes on db (the first alone: it makes the tables); returns a facade like startServe's
// (url: node 1's, log: every node's, stop/kill: all) with nodes (each startServe's).
async function startNodes(mockUrl, db, n = 3, opts = {}) {
  const nodes = [await startServe(mockUrl, { ...opts, home: undefined, args: [...(opts.args || []), '--db', db, '--node-id', 'n1'] })];
  const rest = [];
  for (let i = 2; i <= n; i++) rest.push(startServe(mockUrl, { ...opts, home: undefined, args: [...(opts.args || []), '--db', db, '--node-id', `n${i}`] }));
  const settled = await Promise.allSettled(rest);
  for (const s of settled) if (s.status === 'fulfilled') nodes.push(s.value);
  const bad = settled.find((s) => s.status === 'rejected');
  if (bad) {
    await Promise.all(nodes.map((x) => x.stop()));
    throw bad.reason;
  }
  let rr = 0;
  return {
    nodes,
    url: nodes[0].url,
    home: nodes[0].home,
    log: () => nodes.map((x, i) => x.log().split('\n').map((l) => (l ? `[n${i + 1}] ${l}` : l)).join('\n')).join('\n'),
    get exited() { return nodes.find((x) => x.exited) ? nodes.find((x) => x.exited).exited : null; },
    async stop() { return (await Promise.all(nodes.map((x) => x.stop())))[0]; },
    async kill() { return (await Promise.all(nodes.map((x) => x.kill())))[0]; },
    // where a call goes: {node, url}
    route(method, p) {
      let i;
      if (method === 'GET' && /^\/v1\/sessions\/[^/]+\/(events\/)?stream$/.test(p)) i = nodes.length - 1;
      else if (method === 'POST' && /^\/v1\/sessions\/[^/]+\/events$/.test(p)) i = 1 % nodes.length;
      else if (method === 'POST' && p === '/v1/sessions') i = 0;
      else i = rr++ % nodes.length;
      return { node: i, url: nodes[i].url };
    },
  };
}

module.exports = { startServe, startNodes, pgCreateDb, pgDropDb, PG_HOST, sleep, countingFetch, Reader, v1Headers, readSSE, keyCreate, toolResults, MODEL, BETA };
