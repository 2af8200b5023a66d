// bench/v1-client.mjs: the client side of bench/v1.sh (node, no packages): a /v1 session's turns
// timed from the POST of a user.message to its session.status_idle, and many SSE subscribers on
// one session while turns run (every event, in order, and the delay from an event's
// processed_at to its receipt). Prints one JSON object on stdout.
//
//   node bench/v1-client.mjs turns URL SESSION N
//   node bench/v1-client.mjs fanout URL SESSION SUBSCRIBERS TURNS
//
// Subscribers connect from 127.0.0.1, 127.0.0.2, ... (ADDRS of them, default 16): hull serve
// bounds the connections of one address.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const V1 = {
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'managed-agents-2026-04-01',
};
if (process.env.HULL_API_KEY) V1['x-api-key'] = process.env.HULL_API_KEY;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 4 });
const now = () => performance.timeOrigin + performance.now(); // wall clock, sub-millisecond

function request(url, method, body) {
  return new Promise((resolve, reject) => {
    const data = body ? JSON.stringify(body) : null;
    const req = http.request(url, {
      method, agent: keepAlive,
      headers: { ...V1, ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => (res.statusCode >= 200 && res.statusCode < 300
        ? resolve(text) : reject(new Error(`${method} ${url}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`))));
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

const message = (text) => ({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });

// An SSE subscription: onEvent({seq, type, data, at}) for each frame with data; resolves once the
// answer's head came (the server has registered it).
function subscribe(base, session, localAddress, onEvent, onEnd) {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/v1/sessions/${session}/events/stream`, {
      agent: false, localAddress, headers: { ...V1, accept: 'text/event-stream' },
    }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`stream: HTTP ${res.statusCode}`));
        return;
      }
      let buf = '';
      let frame = { id: null, event: '', data: [] };
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        const at = now();
        buf += chunk;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          let line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.endsWith('\r')) line = line.slice(0, -1);
          if (line === '') {
            if (frame.data.length && frame.event !== 'ping') {
              onEvent({ seq: frame.id === null ? null : Number(frame.id), type: frame.event, data: frame.data.join('\n'), at });
            }
            frame = { id: null, event: '', data: [] };
            continue;
          }
          if (line.startsWith(':')) continue;
          const c = line.indexOf(':');
          const field = c < 0 ? line : line.slice(0, c);
          let value = c < 0 ? '' : line.slice(c + 1);
          if (value.startsWith(' ')) value = value.slice(1);
          if (field === 'id') frame.id = value;
          else if (field === 'event') frame.event = value;
          else if (field === 'data') frame.data.push(value);
        }
      });
      res.on('end', () => onEnd && onEnd());
      res.on('error', () => onEnd && onEnd());
      resolve(req);
    });
    req.on('error', reject);
  });
}

const pct = (v, p) => {
  if (!v.length) return null;
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const round = (x) => (x === null ? null : Math.round(x * 1000) / 1000);

// The turns: each from the POST to the idle that ends it (not requires_action).
async function turns(base, session, n) {
  let waiter = null;
  let marks = null; // this turn's events: [type, ms since its POST]
  let t0 = 0;
  const stream = await subscribe(base, session, undefined, (ev) => {
    if (marks && waiter) marks.push([ev.type, ev.at - t0]);
    if (ev.type !== 'session.status_idle' || !waiter) return;
    const stop = JSON.parse(ev.data).stop_reason || {};
    if (stop.type === 'requires_action') return;
    const w = waiter;
    waiter = null;
    w.resolve({ at: ev.at, stop: stop.type });
  });
  const times = [];
  const health = [];
  const timelines = [];
  for (let i = 0; i < n; i++) {
    const done = new Promise((resolve, reject) => { waiter = { resolve, reject }; });
    marks = [];
    t0 = now();
    await request(`${base}/v1/sessions/${session}/events`, 'POST', message(`turn ${i}`));
    const { at, stop } = await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error(`turn ${i}: no session.status_idle in 60 s`)), 60000))]);
    if (stop !== 'end_turn') throw new Error(`turn ${i} ended with ${stop}`);
    times.push(at - t0);
    timelines.push(marks);
    const h0 = now();
    await request(`${base}/healthz`, 'GET');
    health.push(now() - h0);
  }
  stream.destroy();
  // where a turn's time goes: each event's arrival after the POST, the median over the turns of
  // the same shape (the events' own times, as a streaming client sees them)
  const shape = (m) => m.map((x) => x[0]).join(',');
  const common = timelines.length ? shape(timelines[timelines.length - 1]) : '';
  const same = timelines.filter((m) => shape(m) === common);
  const events = same.length ? same[0].map((x, k) => [x[0], round(pct(same.map((m) => m[k][1]), 50))]) : [];
  return { turns: n, median_ms: round(pct(times, 50)), p90_ms: round(pct(times, 90)), max_ms: round(Math.max(...times)), healthz_median_ms: round(pct(health, 50)), timeline: events, times_ms: times.map(round) };
}

async function fanout(base, session, nsubs, nturns) {
  const addrs = Number(process.env.ADDRS || 16);
  const subs = [];
  const refused = [];
  const opening = [];
  // opened in batches of 32 (hull serve cuts the oldest of more than 128 connections still
  // sending their request head at once: its defence against slow clients)
  for (let i = 0; i < nsubs; i++) {
    if (i > 0 && i % 32 === 0) await Promise.all(opening);
    const s = { seqs: [], lat: [], ended: false };
    subs.push(s);
    opening.push(subscribe(base, session, `127.0.0.${1 + (i % addrs)}`, (ev) => {
      s.seqs.push(ev.seq);
      const p = Date.parse(JSON.parse(ev.data).processed_at);
      if (!Number.isNaN(p)) s.lat.push(ev.at - p);
    }, () => { s.ended = true; }).then((req) => { s.req = req; }, (e) => { refused.push(e.message); s.ended = true; }));
  }
  await Promise.all(opening);
  const connected = subs.filter((s) => s.req).length;
  // the turns, one after another, each to its end (a stream of the driver's own)
  // TURN_BASE: the turns sent to another node than the subscribers' (bench/nodes.sh)
  const t = await turns(process.env.TURN_BASE || base, session, nturns);
  const last = JSON.parse(await request(`${base}/v1/sessions/${session}/events?limit=1&order=desc`, 'GET')).data;
  // wait until every live subscriber has the last event or 60 s passed
  const deadline = Date.now() + 60000;
  const lastId = last && last[0] ? last[0].id : null;
  const maxSeq = () => Math.max(...subs.filter((s) => s.req).map((s) => (s.seqs.length ? s.seqs[s.seqs.length - 1] : 0)));
  let target = maxSeq();
  while (Date.now() < deadline && subs.some((s) => s.req && !s.ended && (s.seqs[s.seqs.length - 1] || 0) < target)) {
    await new Promise((r) => setTimeout(r, 50));
    target = maxSeq();
  }
  let inOrder = 0;
  let complete = 0;
  const first = Math.min(...subs.filter((s) => s.seqs.length).map((s) => s.seqs[0]));
  const lat = [];
  for (const s of subs) {
    if (!s.req) continue;
    if (s.seqs.every((q, i) => q !== null && (i === 0 || q === s.seqs[i - 1] + 1))) inOrder++;
    if (s.seqs.length && s.seqs[0] === first && s.seqs[s.seqs.length - 1] === target) complete++;
    for (const x of s.lat) lat.push(x);
    s.req.destroy();
  }
  return {
    subscribers: nsubs, connected, refused: refused.length, refused_first: refused[0] || null,
    turns: nturns, events_each: target - first + 1, last_event_id: lastId,
    in_order: inOrder, complete, deliveries: lat.length,
    p50_ms: round(pct(lat, 50)), p99_ms: round(pct(lat, 99)), max_ms: round(lat.length ? Math.max(...lat) : null),
    turn_median_ms: t.median_ms,
  };
}

const [mode, base, session, a, b] = process.argv.slice(2);
try {
  let out;
  if (mode === 'turns') out = await turns(base, session, Number(a));
  else if (mode === 'fanout') out = await fanout(base, session, Number(a), Number(b));
  else throw new Error('usage: v1-client.mjs turns URL SESSION N | fanout URL SESSION SUBSCRIBERS TURNS');
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
} catch (e) {
  process.stderr.write(`v1-client: ${e.message}\n`);
  process.exit(1);
}
