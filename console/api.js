// api.js: hull serve's /v1 API from the page: the key (session storage only, never in a URL),
// JSON requests, and a session's event stream read with fetch() so the key can go as a header
// (EventSource cannot send one), resumed with Last-Event-ID after a drop.

const KEY = 'hull.apiKey';
const BASE_HEADERS = {
  'anthropic-version': '2026-10-21',
  'anthropic-beta': 'managed-agents-2026-04-01',
};

export const key = {
  get: () => sessionStorage.getItem(KEY) || '',
  set: (k) => sessionStorage.setItem(KEY, k),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

function headers(extra = {}) {
  const hd = { ...BASE_HEADERS, ...extra };
  const k = key.get();
  if (k) hd['x-api-key'] = k;
  return hd;
}

// Listeners told when the server asks for a key (401).
const authListeners = new Set();
export function onUnauthorized(fn) {
  authListeners.add(fn);
}

// A request; resolves to the parsed JSON (null for an empty body), rejects with an ApiError
// that carries the server's message.
export async function api(method, path, body, opts = {}) {
  const init = { method, headers: headers(body !== undefined ? { 'content-type': 'application/json' } : {}), signal: opts.signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'network_error', `hull serve cannot be reached (${e.message}); is it running?`);
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { text };
    }
  }
  if (!res.ok) {
    if (res.status === 401 && !opts.quiet) for (const fn of authListeners) fn();
    const err = data && data.error ? data.error : {};
    throw new ApiError(res.status, err.type || 'http_error', err.message || (data && data.text) || `${res.status} ${res.statusText}`);
  }
  return data;
}

// The raw answer (for downloads: the audit log).
export async function raw(path) {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw new ApiError(res.status, 'http_error', `${res.status} ${(await res.text()).slice(0, 200)}`);
  return res;
}

export const enc = encodeURIComponent;

// Every page of a list (at most max items).
export async function listAll(path, max = 1000) {
  const out = [];
  let page = null;
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const d = await api('GET', `${path}${sep}limit=100${page ? `&page=${enc(page)}` : ''}`);
    out.push(...(d.data || []));
    page = d.next_page;
    if (!page || out.length >= max) return out;
  }
}

// Parse server-sent events out of text chunks: push(chunk) returns the complete frames
// ({id, event, data}) so far and keeps the rest.
export class SSEParser {
  constructor() {
    this.buf = '';
  }

  push(chunk) {
    this.buf += chunk.replace(/\r\n?/g, '\n');
    const frames = [];
    let pos = 0; // the buffer is cut once, after the loop: a replay of thousands of frames in one chunk stays linear
    let i;
    while ((i = this.buf.indexOf('\n\n', pos)) >= 0) {
      const block = this.buf.slice(pos, i);
      pos = i + 2;
      const f = { id: null, event: 'message', data: '' };
      const data = [];
      for (const line of block.split('\n')) {
        if (!line || line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const name = c < 0 ? line : line.slice(0, c);
        let value = c < 0 ? '' : line.slice(c + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (name === 'id') f.id = value;
        else if (name === 'event') f.event = value;
        else if (name === 'data') data.push(value);
      }
      if (!data.length && f.id === null) continue;
      f.data = data.join('\n');
      frames.push(f);
    }
    this.buf = this.buf.slice(pos);
    return frames;
  }
}

// A session's event stream: every stored event after `after` (a sequence number), then live,
// with agent.message previews. onFrame({seq, event, data}) gets each frame (seq 0 for previews);
// onState('live' | 'reconnecting' | 'closed', detail). After a drop it reconnects with
// Last-Event-ID set to the last sequence number seen, so nothing is missed, and frames at or
// below it are dropped, so nothing comes twice. close() ends it.
export class EventStream {
  constructor(sessionId, { after = 0, onFrame, onState }) {
    this.id = sessionId;
    this.last = after;
    this.onFrame = onFrame;
    this.onState = onState || (() => {});
    this.closed = false;
    this.ctrl = null;
    this.connects = 0;
    this.run();
  }

  close() {
    this.closed = true;
    if (this.ctrl) this.ctrl.abort();
    this.onState('closed');
  }

  // Cut the current connection as a network failure would (the stream then resumes).
  drop() {
    if (this.ctrl) this.ctrl.abort('drop');
  }

  async run() {
    let delay = 250;
    while (!this.closed) {
      this.ctrl = new AbortController();
      const url = `/v1/sessions/${enc(this.id)}/events/stream?event_deltas%5B%5D=agent.message`;
      try {
        const res = await fetch(url, { headers: headers({ 'last-event-id': String(this.last) }), signal: this.ctrl.signal, cache: 'no-store' });
        if (res.status === 401) {
          for (const fn of authListeners) fn();
          this.onState('closed', 'the key was refused');
          return;
        }
        if (res.status === 404) {
          this.onState('closed', 'no such session');
          return;
        }
        if (!res.ok || !res.body) throw new Error(`status ${res.status}`);
        this.connects++;
        this.onState('live');
        delay = 250;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        const parser = new SSEParser();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const f of parser.push(value)) this.deliver(f);
        }
      } catch (e) {
        if (this.closed) return;
      }
      if (this.closed) return;
      this.onState('reconnecting', `resuming after event ${this.last}`);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5000);
    }
  }

  deliver(f) {
    if (f.event === 'ping') return;
    const seq = f.id !== null && /^\d+$/.test(f.id) ? Number(f.id) : 0;
    if (seq > 0) {
      if (seq <= this.last) return; // seen already: a resumed stream never doubles an event
      this.last = seq;
    }
    let data;
    try {
      data = JSON.parse(f.data);
    } catch {
      return;
    }
    this.onFrame({ seq, event: f.event, data });
  }
}
