// events.js: one session's events in the page: the model (events by sequence number, tool calls
// joined with their results and decisions, agent.message previews), the event list rendered on
// demand (the newest PAGE items, more on request: a session of thousands of events opens at
// once), and the timeline of each turn.
import { h, fill, clear, append, pretty, fmtMs, fmtTime } from './dom.js';

const PAGE = 150;
const USE_TYPES = new Set(['agent.tool_use', 'agent.mcp_tool_use', 'agent.custom_tool_use']);
// Folded into the card of the tool call they belong to, or shown elsewhere (timeline, header).
const FOLDED = new Set(['agent.tool_result', 'agent.mcp_tool_result', 'user.tool_confirmation', 'user.custom_tool_result',
  'hull.tool_progress', 'hull.network', 'span.model_request_start', 'span.model_request_end', 'session.usage',
  'span.outcome_evaluation_start', 'span.outcome_evaluation_ongoing']);

function useIdOf(e) {
  switch (e.type) {
    case 'agent.tool_result': return e.tool_use_id;
    case 'agent.mcp_tool_result': return e.mcp_tool_use_id;
    case 'user.tool_confirmation': return e.tool_use_id;
    case 'user.custom_tool_result': return e.custom_tool_use_id;
    case 'hull.tool_progress': return e.tool_use_id;
    case 'hull.network': return e.tool_use_id;
    default: return null;
  }
}

export function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? '' : pretty(content);
  return content.map((b) => (b && b.type === 'text' ? b.text : pretty(b))).join('\n');
}

const ms = (iso) => (iso ? Date.parse(iso) : NaN);

// The events of one session, in sequence order, and what joins them.
export class SessionModel {
  constructor() {
    this.events = [];
    this.bySeq = new Set();
    this.byId = new Map();
    this.items = []; // what the list shows: {key, event|null, preview|null}
    this.itemByKey = new Map();
    this.joined = new Map(); // tool use id -> {result, decision, progress}
    this.pending = new Set(); // tool use ids waiting for the user (the latest requires_action)
    this.changed = new Set(); // item keys to redraw
    this.added = 0; // items appended since the last draw
    this.listeners = new Set();
    this.scheduled = false;
  }

  onChange(fn) {
    this.listeners.add(fn);
  }

  notify() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      for (const fn of this.listeners) fn();
      this.changed.clear();
      this.added = 0;
    });
  }

  addItem(key, event, preview = null) {
    const it = { key, event, preview };
    this.items.push(it);
    this.itemByKey.set(key, it);
    this.added++;
    return it;
  }

  // One frame of the stream: {seq, event, data}.
  frame({ seq, data }) {
    if (data.type === 'event_start' && data.event && data.event.type === 'agent.message') {
      const id = data.event.id;
      if (!this.byId.has(id) && !this.itemByKey.has(id)) this.addItem(id, null, { text: '' });
    } else if (data.type === 'event_delta') {
      const it = this.itemByKey.get(data.event_id);
      if (it && it.preview && !it.event) {
        it.preview.text += (data.delta && data.delta.content && data.delta.content.text) || '';
        this.changed.add(it.key);
      }
    } else if (seq > 0) {
      this.add({ ...data, seq });
    }
    this.notify();
  }

  add(e) {
    if (this.bySeq.has(e.seq)) return;
    this.bySeq.add(e.seq);
    this.events.push(e);
    if (e.id) this.byId.set(e.id, e);
    const use = useIdOf(e);
    if (use) {
      const j = this.joined.get(use) || {};
      if (e.type === 'agent.tool_result' || e.type === 'agent.mcp_tool_result' || e.type === 'user.custom_tool_result') j.result = e;
      else if (e.type === 'user.tool_confirmation') j.decision = e;
      else if (e.type === 'hull.tool_progress') j.progress = e;
      else if (e.type === 'hull.network') j.network = (j.network || []).concat(Array.isArray(e.connections) ? e.connections : []);
      this.joined.set(use, j);
      this.pending.delete(use);
      if (this.itemByKey.has(use)) this.changed.add(use);
    }
    if (e.type === 'session.status_idle' || e.type === 'session.status_running') {
      for (const id of this.pending) this.changed.add(id);
      this.pending.clear();
      const sr = e.stop_reason;
      if (e.type === 'session.status_idle' && sr && sr.type === 'requires_action')
        for (const id of sr.event_ids || []) {
          const j = this.joined.get(id);
          if (!j || (!j.result && !j.decision)) {
            this.pending.add(id);
            this.changed.add(id);
          }
        }
    }
    if (FOLDED.has(e.type)) return;
    const prev = e.id && this.itemByKey.get(e.id);
    if (prev) { // the agent.message its preview announced
      prev.event = e;
      prev.preview = null;
      this.changed.add(e.id);
      return;
    }
    this.addItem(e.id || `seq${e.seq}`, e);
  }

  status() {
    for (let i = this.events.length - 1; i >= 0; i--) {
      const t = this.events[i].type;
      if (t === 'session.status_idle') return 'idle';
      if (t === 'session.status_running') return 'running';
      if (t === 'session.status_terminated') return 'terminated';
      if (t === 'session.status_rescheduled') return 'rescheduling';
    }
    return null;
  }
}

// ---- the list ----

function bubble(who, cls, text, extra) {
  return h('div', { class: `msg ${cls}` }, h('div', { class: 'who' }, who), h('div', { class: 'text' }, text), extra || null);
}

function toolCard(model, e, actions) {
  const j = model.joined.get(e.id) || {};
  const res = j.result;
  const dur = res ? ms(res.processed_at) - ms(e.processed_at) : NaN;
  const pending = model.pending.has(e.id);
  let state = 'running';
  if (res) state = res.is_error ? 'error' : 'done';
  else if (j.decision && j.decision.result === 'deny') state = 'denied';
  else if (pending) state = e.type === 'agent.custom_tool_use' ? 'waiting for your result' : 'waiting for approval';
  else if (model.status() === 'idle') state = 'not run';
  const name = e.type === 'agent.mcp_tool_use' ? `${e.mcp_server_name}: ${e.name}` : e.name;
  const kind = e.type === 'agent.custom_tool_use' ? 'custom tool' : e.type === 'agent.mcp_tool_use' ? 'MCP tool' : 'tool';
  const body = h('div', { class: 'card-body' },
    h('div', { class: 'label' }, 'Input'),
    h('pre', { class: 'code' }, pretty(e.input)),
    res ? [h('div', { class: 'label' }, res.is_error ? 'Output (error)' : 'Output'), h('pre', { class: 'code' }, textOf(res.content))] : null,
    j.network && j.network.length ? [h('div', { class: 'label' }, `Network (${j.network.length} connection${j.network.length === 1 ? '' : 's'})`),
      h('pre', { class: 'code net-log' }, j.network.map(String).join('\n'))] : null,
    j.decision ? h('p', { class: 'decision' }, `${j.decision.result === 'allow' ? 'Allowed' : 'Denied'}${j.decision.deny_message ? `: ${j.decision.deny_message}` : ''}`) : null,
    j.progress && !res ? h('p', { class: 'muted' }, `running ${fmtMs(j.progress.elapsed_ms)}${j.progress.note ? ` · ${j.progress.note}` : ''}`) : null);
  if (pending && e.type !== 'agent.custom_tool_use') {
    body.append(h('div', { class: 'actions', role: 'group', 'aria-label': `Decision for ${name}` },
      h('button', { class: 'primary', onclick: () => actions.confirm(e.id, 'allow') }, 'Allow'),
      h('button', { class: 'danger', onclick: () => actions.confirm(e.id, 'deny') }, 'Deny')));
  } else if (pending) {
    const ta = h('textarea', { rows: 3, id: `res-${e.id}`, 'aria-label': `Result for ${name}` });
    const err = h('input', { type: 'checkbox', id: `err-${e.id}` });
    body.append(h('form', { class: 'custom-result', onsubmit: (ev) => { ev.preventDefault(); actions.customResult(e.id, ta.value, err.checked); } },
      h('label', { for: `res-${e.id}` }, 'Result'), ta,
      h('label', { class: 'inline' }, err, ' is an error'),
      h('button', { class: 'primary', type: 'submit' }, 'Send result')));
  }
  return h('details', { class: `card tool state-${state.replace(/\s.*/, '')}`, 'data-tool': e.name, open: pending || undefined },
    h('summary', {},
      h('span', { class: 'tool-kind' }, kind), ' ',
      h('span', { class: 'tool-name' }, name), ' ',
      h('span', { class: 'badge' }, state),
      Number.isFinite(dur) ? h('span', { class: 'dur' }, fmtMs(dur)) : null),
    body);
}

export function renderItem(model, it, actions) {
  const e = it.event;
  let node;
  if (!e) {
    node = bubble('Agent', 'agent streaming', it.preview.text, h('span', { class: 'sr-only' }, ' (writing)'));
  } else switch (e.type) {
    case 'user.message': node = bubble('You', 'user', textOf(e.content)); break;
    case 'agent.message': node = bubble('Agent', 'agent', textOf(e.content)); break;
    case 'agent.thinking': node = bubble('Thinking', 'thinking', textOf(e.content)); break;
    case 'agent.tool_use': case 'agent.mcp_tool_use': case 'agent.custom_tool_use': node = toolCard(model, e, actions); break;
    case 'session.status_running': node = h('div', { class: 'status-row' }, 'running'); break;
    case 'session.status_idle': {
      const sr = e.stop_reason && e.stop_reason.type;
      node = h('div', { class: 'status-row' }, `idle${sr ? ` · ${sr.replace(/_/g, ' ')}` : ''}`);
      break;
    }
    case 'session.error': node = h('div', { class: 'error-row', role: 'note' }, `error: ${(e.error && (e.error.message || e.error.type)) || pretty(e.error)}`); break;
    case 'session.status_rescheduled': node = h('div', { class: 'status-row' }, 'rescheduling · the model request failed and is retried'); break;
    case 'session.status_terminated': node = h('div', { class: 'error-row', role: 'note' }, 'terminated · the session takes no more messages'); break;
    case 'user.define_outcome': {
      const rub = e.rubric || {};
      node = bubble('Outcome', 'user outcome', `${e.description || ''}\n\nRubric: ${rub.type === 'file' ? `file ${rub.file_id}` : (rub.content || '')}`,
        h('span', { class: 'muted' }, ` · at most ${e.max_iterations || 3} evaluations`));
      break;
    }
    case 'span.outcome_evaluation_end': {
      const res = (e.result || '').replace(/_/g, ' ');
      node = h('div', { class: e.result === 'satisfied' ? 'status-row' : 'error-row', role: 'note' },
        `grader · evaluation ${(e.iteration || 0) + 1}: ${res}${e.explanation ? ` · ${e.explanation}` : ''}`);
      break;
    }
    case 'user.interrupt': node = h('div', { class: 'status-row' }, 'you interrupted'); break;
    case 'hull.handle_created': {
      const hd = e.handle || {};
      node = h('div', { class: 'status-row' }, `handle ${hd.id || hd.name || ''} created${hd.summary ? `: ${hd.summary}` : ''}`);
      break;
    }
    default:
      node = h('details', { class: 'card other' }, h('summary', {}, e.type), h('pre', { class: 'code' }, pretty(e)));
  }
  node.classList.add('item');
  node.dataset.key = it.key;
  if (e) {
    node.dataset.seq = String(e.seq);
    node.dataset.type = e.type;
    if (e.processed_at) node.title = fmtTime(e.processed_at);
  }
  return node;
}

// The list of a session's events, drawn on demand: the newest PAGE items first, a button for
// PAGE more; items that change are redrawn in place.
export class EventList {
  constructor(model, actions) {
    this.model = model;
    this.actions = actions;
    this.start = 0; // index of the first item drawn
    this.nodes = new Map(); // key -> node
    this.more = h('button', { class: 'more', onclick: () => this.showEarlier() }, '');
    this.list = h('ol', { class: 'events', 'aria-label': 'Events', 'aria-live': 'polite', 'aria-relevant': 'additions' });
    this.el = h('div', { class: 'event-list' }, this.more, this.list);
    this.first = true;
    model.onChange(() => this.draw());
  }

  showEarlier() {
    const from = Math.max(0, this.start - PAGE);
    const frag = document.createDocumentFragment();
    for (let i = from; i < this.start; i++) frag.appendChild(this.node(this.model.items[i]));
    this.list.insertBefore(frag, this.list.firstChild);
    this.start = from;
    this.updateMore();
  }

  updateMore() {
    this.more.hidden = this.start === 0;
    this.more.textContent = `Show earlier events (${this.start} more)`;
  }

  node(it) {
    const n = h('li', {}, renderItem(this.model, it, this.actions));
    this.nodes.set(it.key, n);
    return n;
  }

  draw() {
    const items = this.model.items;
    const nearBottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
    if (this.first || this.model.added > PAGE) { // the first draw, or a burst (a replay): the newest PAGE
      this.first = false;
      clear(this.list);
      this.nodes.clear();
      this.start = Math.max(0, items.length - PAGE);
      const frag = document.createDocumentFragment();
      for (let i = this.start; i < items.length; i++) frag.appendChild(this.node(items[i]));
      this.list.appendChild(frag);
    } else {
      for (const key of this.model.changed) {
        const old = this.nodes.get(key);
        const it = this.model.itemByKey.get(key);
        if (!old || !it) continue;
        const wasOpen = old.firstChild && old.firstChild.open;
        const n = this.node(it);
        if (wasOpen && n.firstChild.tagName === 'DETAILS') n.firstChild.open = true;
        old.replaceWith(n);
      }
      const frag = document.createDocumentFragment();
      for (let i = items.length - this.model.added; i < items.length; i++)
        if (i >= this.start && !this.nodes.has(items[i].key)) frag.appendChild(this.node(items[i]));
      this.list.appendChild(frag);
    }
    this.updateMore();
    if (nearBottom) window.scrollTo(0, document.documentElement.scrollHeight);
  }
}

// ---- the timeline ----

// The turns of a session: from session.status_running to the session.status_idle after it, with
// the model requests (span.model_request_start/end) and tool calls (tool use to result) in it.
export function turnsOf(model) {
  const turns = [];
  let cur = null;
  const starts = new Map();
  for (const e of model.events) {
    const t = ms(e.processed_at);
    if (e.type === 'session.status_running' && !cur) {
      cur = { start: t, end: NaN, bars: [] };
      turns.push(cur);
    }
    if (!cur) continue;
    if (e.type === 'span.model_request_start' || e.type === 'span.outcome_evaluation_start') starts.set(e.id, e);
    else if (e.type === 'span.outcome_evaluation_end') {
      const s = starts.get(e.outcome_evaluation_start_id);
      if (s) cur.bars.push({ kind: 'grader', label: `grading, evaluation ${(e.iteration || 0) + 1}: ${(e.result || '').replace(/_/g, ' ')}`, start: ms(s.processed_at), end: t });
    }
    else if (e.type === 'span.model_request_end') {
      const s = starts.get(e.model_request_start_id);
      if (s) cur.bars.push({ kind: 'model', label: `model request${e.is_error ? ' (error)' : ''}`, start: ms(s.processed_at), end: t });
    } else if (USE_TYPES.has(e.type)) {
      // the time the tool ran: hull_duration_ms before its result (a wait for Allow is not the
      // tool's); without it, from the call to the result
      const j = model.joined.get(e.id);
      const res = j && j.result;
      const end = res ? ms(res.processed_at) : NaN;
      const start = res && typeof res.hull_duration_ms === 'number' ? end - res.hull_duration_ms : t;
      cur.bars.push({ kind: 'tool', label: `tool ${e.name}${j && j.decision && j.decision.result === 'deny' ? ' (denied)' : ''}`, start, end });
    } else if ((e.type === 'session.status_idle' && !(e.stop_reason && e.stop_reason.type === 'requires_action')) ||
      e.type === 'session.status_terminated') {
      // a pause for a decision is part of its turn
      cur.end = t;
      cur = null;
    }
  }
  return turns;
}

export function renderTimeline(model) {
  const turns = turnsOf(model);
  if (!turns.length) return h('p', { class: 'muted' }, 'No turn yet.');
  const now = Date.now();
  return h('div', { class: 'timeline' }, turns.map((turn, i) => {
    const end = Number.isFinite(turn.end) ? turn.end : now;
    const span = Math.max(end - turn.start, 1);
    return h('section', { class: 'turn', 'aria-label': `Turn ${i + 1}` },
      h('h3', {}, `Turn ${i + 1} · ${fmtMs(end - turn.start)}${Number.isFinite(turn.end) ? '' : ' (running)'}`),
      h('div', { class: 'axis', 'aria-hidden': 'true' }, h('span', {}, '0'), h('span', {}, fmtMs(span / 2)), h('span', {}, fmtMs(span))),
      h('ol', { class: 'bars' }, turn.bars.map((b) => {
        const bEnd = Math.min(Number.isFinite(b.end) ? b.end : end, end);
        const bStart = Math.min(Math.max(b.start, turn.start), bEnd);
        const d = bEnd - bStart;
        const bar = h('span', { class: `bar ${b.kind}` });
        const left = ((bStart - turn.start) / span) * 100;
        bar.style.marginLeft = `${left}%`;
        bar.style.width = `${Math.min(Math.max((d / span) * 100, 0.5), 100 - left)}%`;
        return h('li', { class: 'bar-row', 'data-kind': b.kind },
          h('span', { class: 'bar-label' }, `${b.label} · ${fmtMs(d)}${Number.isFinite(b.end) ? '' : ' (running)'}`),
          h('span', { class: 'track' }, bar));
      })));
  }));
}

export { clear, fill, append };
