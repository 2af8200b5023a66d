// views.js: the console's pages: sign-in, agents (list, create, edit, archive), sessions (list,
// filter, start) and one session (events live, handles, timeline, run records). Each view
// fills `main` and returns a function that ends what it started (a stream).
import { api, raw, key, enc, listAll, EventStream, ApiError } from './api.js';
import { h, fill, clear, append, pretty, fmtTime, fmtInt, announce } from './dom.js';
import { SessionModel, EventList, renderTimeline, textOf } from './events.js';
import { verifyRecords } from './records.js';
import { resourcesPanel } from './files.js';

export const DEFAULT_TOOLS = [{ type: 'agent_toolset_20260401', default_config: { permission_policy: { type: 'always_allow' } } }];

function errorBox(e) {
  return h('p', { class: 'error', role: 'alert' }, e instanceof ApiError || e instanceof Error ? e.message : String(e));
}

function field(label, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2)}`;
  control.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('p', { class: 'hint' }, hint) : null);
}

function heading(main, text) {
  const h1 = h('h1', { tabindex: '-1' }, text);
  main.appendChild(h1);
  return h1;
}

function agentName(a) {
  if (!a) return '';
  if (typeof a === 'string') return a;
  return `${a.name || a.id}${a.version ? ` v${a.version}` : ''}`;
}

function agentId(a) {
  return !a ? '' : typeof a === 'string' ? a : a.id;
}

function usageText(u) {
  if (!u) return '';
  return `${fmtInt(u.input_tokens || 0)} in / ${fmtInt(u.output_tokens || 0)} out`;
}

function statusBadge(s) {
  return h('span', { class: `badge status-${s || 'unknown'}` }, s || 'unknown');
}

// ---- sign-in ----

export function signIn(main, { next, go }) {
  const input = h('input', { type: 'password', autocomplete: 'off', spellcheck: 'false', required: true });
  const out = h('div', { 'aria-live': 'assertive' });
  heading(main, 'Sign in');
  main.appendChild(h('form', { class: 'panel narrow', onsubmit: async (ev) => {
    ev.preventDefault();
    key.set(input.value.trim());
    try {
      await api('GET', '/v1/agents?limit=1', undefined, { quiet: true });
      go(next || '#/sessions');
    } catch (e) {
      key.clear();
      fill(out, errorBox(e.status === 401 ? 'hull serve refused that key: check it (hull key create makes one).' : e));
      input.focus();
    }
  } },
  h('p', {}, 'hull serve has API keys: enter one. It stays in this tab\'s session storage and goes only in the x-api-key header.'),
  field('API key', input),
  h('button', { class: 'primary', type: 'submit' }, 'Sign in'),
  out));
  input.focus();
}

// ---- agents ----

export async function agentsList(main) {
  heading(main, 'Agents');
  main.appendChild(h('p', {}, h('a', { class: 'button primary', href: '#/agents/new' }, 'New agent')));
  const box = h('div', { class: 'table-wrap' }, h('p', { class: 'muted' }, 'Loading…'));
  main.appendChild(box);
  try {
    const agents = await listAll('/v1/agents');
    if (!agents.length) return fill(box, h('p', { class: 'muted' }, 'No agent yet: make one to start a session.'));
    fill(box, h('table', { class: 'list' },
      h('caption', { class: 'sr-only' }, 'Agents'),
      h('thead', {}, h('tr', {}, ['Name', 'Version', 'Model', 'Updated'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, agents.map((a) => h('tr', {},
        h('td', {}, h('a', { href: `#/agents/${enc(a.id)}` }, a.name || a.id)),
        h('td', {}, `v${a.version}`),
        h('td', {}, (a.model && a.model.id) || String(a.model || '')),
        h('td', {}, fmtTime(a.updated_at)))))));
  } catch (e) {
    fill(box, errorBox(e));
  }
}

export async function agentEdit(main, { id, go }) {
  const isNew = !id;
  const h1 = heading(main, isNew ? 'New agent' : 'Agent');
  const out = h('div', { 'aria-live': 'polite' });
  let agent = null;
  if (!isNew) {
    try {
      agent = await api('GET', `/v1/agents/${enc(id)}`);
    } catch (e) {
      main.appendChild(errorBox(e));
      return;
    }
    h1.textContent = `Agent ${agent.name}`;
  }
  const name = h('input', { type: 'text', required: true, value: agent ? agent.name : '' });
  const model = h('input', { type: 'text', required: true, value: agent ? (agent.model && agent.model.id) || '' : 'claude-sonnet-4-6' });
  const system = h('textarea', { rows: 4, value: agent ? agent.system || '' : '' });
  const tools = h('textarea', { rows: 8, class: 'mono', spellcheck: 'false', value: pretty(agent ? agent.tools || [] : DEFAULT_TOOLS) });
  const version = h('p', { class: 'version', 'aria-live': 'polite' }, agent ? `Version ${agent.version}` : '');
  const save = h('button', { class: 'primary', type: 'submit' }, isNew ? 'Create agent' : 'Save (new version)');
  const archive = isNew ? null : h('button', { type: 'button', class: 'danger', onclick: async () => {
    if (!confirm(`Archive agent ${agent.name}? Its sessions stay; no new session can use it.`)) return;
    try {
      agent = await api('POST', `/v1/agents/${enc(id)}/archive`, {});
      fill(out, h('p', { class: 'ok' }, 'Archived.'));
      announce(`Agent ${agent.name} archived`);
      showArchived();
    } catch (e) {
      fill(out, errorBox(e));
    }
  } }, 'Archive');
  // an archived agent is read only: no new version, no second archive
  function showArchived() {
    if (!agent || !agent.archived_at) return;
    version.textContent = `Version ${agent.version} · archived ${fmtTime(agent.archived_at)}`;
    save.disabled = true;
    archive.disabled = true;
    archive.textContent = 'Archived';
  }
  const form = h('form', { class: 'panel', onsubmit: async (ev) => {
    ev.preventDefault();
    let t;
    try {
      t = JSON.parse(tools.value || '[]');
    } catch (e) {
      fill(out, errorBox(`Tools: not JSON (${e.message}).`));
      tools.focus();
      return;
    }
    const body = { name: name.value, model: model.value, system: system.value, tools: t };
    try {
      if (isNew) {
        const a = await api('POST', '/v1/agents', body);
        announce(`Agent ${a.name} created, version ${a.version}`);
        go(`#/agents/${enc(a.id)}`);
      } else {
        agent = await api('POST', `/v1/agents/${enc(id)}`, { ...body, version: agent.version });
        version.textContent = `Version ${agent.version}`;
        fill(out, h('p', { class: 'ok' }, `Saved: version ${agent.version}.`));
        loadVersions();
      }
    } catch (e) {
      fill(out, errorBox(e));
    }
  } },
  version,
  field('Name', name), field('Model', model, 'The provider\'s model id (hull serve --model overrides it for all agents).'),
  field('System prompt', system),
  field('Tools (JSON)', tools, 'Toolsets and custom tools as the Managed Agents API takes them; a permission_policy of always_ask makes a tool wait for Allow / Deny.'),
  h('div', { class: 'actions' },
    save, archive),
  out);
  main.appendChild(form);
  showArchived();
  const versions = h('div', {});
  if (!isNew) main.appendChild(h('section', { 'aria-label': 'Versions' }, h('h2', {}, 'Versions'), versions));
  async function loadVersions() {
    try {
      const d = await api('GET', `/v1/agents/${enc(id)}/versions?limit=100`);
      fill(versions, h('ul', { class: 'versions' }, (d.data || []).map((v) => h('li', {}, `v${v.version} · ${fmtTime(v.updated_at || v.created_at)}`))));
    } catch (e) {
      fill(versions, errorBox(e));
    }
  }
  if (!isNew) loadVersions();
  name.focus();
}

// ---- sessions ----

const STATUSES = ['idle', 'running', 'rescheduling', 'terminated'];

export async function sessionsList(main, { query, go }) {
  heading(main, 'Sessions');
  const status = h('select', {}, h('option', { value: '' }, 'any'), STATUSES.map((s) => h('option', { value: s, selected: query.get('status') === s }, s)));
  const agentSel = h('select', {}, h('option', { value: '' }, 'any'));
  const archived = h('input', { type: 'checkbox', checked: query.get('archived') === '1' });
  const startSel = h('select', { required: true });
  const out = h('div', { 'aria-live': 'polite' });
  const box = h('div', { class: 'table-wrap' }, h('p', { class: 'muted' }, 'Loading…'));
  const applyFilter = () => {
    const q = new URLSearchParams();
    if (status.value) q.set('status', status.value);
    if (agentSel.value) q.set('agent', agentSel.value);
    if (archived.checked) q.set('archived', '1');
    go(`#/sessions${q.toString() ? `?${q}` : ''}`);
  };
  main.append(
    h('form', { class: 'panel start', onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const envs = await listAll('/v1/environments');
        let env = envs[0];
        if (!env) env = await api('POST', '/v1/environments', { name: 'console', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
        const s = await api('POST', '/v1/sessions', { agent: startSel.value, environment_id: env.id });
        go(`#/sessions/${enc(s.id)}`);
      } catch (e) {
        fill(out, errorBox(e));
      }
    } }, h('h2', {}, 'Start a session'), field('Agent', startSel), h('button', { class: 'primary', type: 'submit' }, 'Start session'), out),
    h('form', { class: 'filters', 'aria-label': 'Filter sessions', onsubmit: (ev) => { ev.preventDefault(); applyFilter(); } },
      field('Status', status), field('Agent', agentSel),
      h('label', { class: 'inline' }, archived, ' include archived'),
      h('button', { type: 'submit' }, 'Filter')),
    box);
  try {
    const q = [];
    if (query.get('status')) q.push(`statuses%5B%5D=${enc(query.get('status'))}`);
    if (query.get('agent')) q.push(`agent_id=${enc(query.get('agent'))}`);
    if (query.get('archived') === '1') q.push('include_archived=true');
    const [agents, d] = await Promise.all([listAll('/v1/agents'),
      api('GET', `/v1/sessions?limit=100${q.length ? `&${q.join('&')}` : ''}`)]);
    append(agentSel, agents.map((a) => h('option', { value: a.id, selected: query.get('agent') === a.id }, `${a.name} (${a.id})`)));
    append(startSel, agents.map((a) => h('option', { value: a.id }, `${a.name} v${a.version}`)));
    if (!agents.length) fill(out, h('p', {}, 'No agent yet: ', h('a', { href: '#/agents/new' }, 'make one'), ' first.'));
    const sessions = d.data || [];
    if (!sessions.length) return fill(box, h('p', { class: 'muted' }, 'No session matches.'));
    fill(box, h('table', { class: 'list' },
      h('caption', { class: 'sr-only' }, 'Sessions'),
      h('thead', {}, h('tr', {}, ['Session', 'Agent', 'Status', 'Usage', 'Created'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, sessions.map((s) => h('tr', {},
        h('td', {}, h('a', { href: `#/sessions/${enc(s.id)}` }, s.title || s.id)),
        h('td', {}, agentName(s.agent)),
        h('td', {}, statusBadge(s.status), s.archived_at ? ' archived' : ''),
        h('td', {}, usageText(s.usage)),
        h('td', {}, fmtTime(s.created_at)))))));
  } catch (e) {
    fill(box, errorBox(e));
  }
}

// ---- one session ----

function tabs(names, onShow) {
  const list = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Session views' });
  const panels = {};
  const buttons = {};
  const show = (name, focus) => {
    for (const n of names) {
      buttons[n].setAttribute('aria-selected', String(n === name));
      buttons[n].tabIndex = n === name ? 0 : -1;
      panels[n].hidden = n !== name;
    }
    if (focus) buttons[name].focus();
    onShow(name);
  };
  names.forEach((n, i) => {
    buttons[n] = h('button', { role: 'tab', id: `tab-${n}`, 'aria-controls': `panel-${n}`, type: 'button',
      onclick: () => show(n),
      onkeydown: (ev) => {
        const d = ev.key === 'ArrowRight' ? 1 : ev.key === 'ArrowLeft' ? -1 : 0;
        if (d) {
          ev.preventDefault();
          show(names[(i + d + names.length) % names.length], true);
        }
      } }, n[0].toUpperCase() + n.slice(1));
    panels[n] = h('section', { role: 'tabpanel', id: `panel-${n}`, 'aria-labelledby': `tab-${n}`, tabindex: '0', class: 'tabpanel' });
    list.appendChild(buttons[n]);
  });
  return { list, panels, show };
}

function cell(v) {
  if (v === null || v === undefined) return h('td', { class: 'null' }, 'null');
  if (typeof v === 'object') return h('td', {}, JSON.stringify(v));
  return h('td', {}, String(v));
}

async function handlesPanel(panel, id) {
  fill(panel, h('p', { class: 'muted' }, 'Loading…'));
  let d;
  try {
    d = await api('GET', `/v1/sessions/${enc(id)}/handles`);
  } catch (e) {
    return fill(panel, errorBox(e));
  }
  const handles = d.data || [];
  const state = d.sandbox && d.sandbox.state;
  if (!handles.length)
    return fill(panel, h('p', { class: 'muted' }, state === 'open' ? 'The sandbox holds no handle.' : 'No handle: the session\'s sandbox is not open (its next turn opens one).'));
  const view = h('div', { class: 'handle-view', 'aria-live': 'polite' });
  const open = async (hd) => {
    fill(view, h('p', { class: 'muted' }, `Loading ${hd.name}…`));
    try {
      const p = await api('GET', `/v1/sessions/${enc(id)}/handles/${enc(hd.name)}?rows=20`);
      const pv = p.preview || {};
      const parts = [h('h3', {}, `${p.name} · ${p.type}`), h('p', { class: 'summary' }, p.summary || '')];
      if (pv.columns) {
        parts.push(h('div', { class: 'table-wrap' }, h('table', { class: 'preview' },
          h('caption', {}, `First ${(pv.rows || []).length} rows${pv.truncated ? ` of ${fmtInt(p.rows)}` : ''}`),
          h('thead', {}, h('tr', {}, pv.columns.map((c) => h('th', { scope: 'col' }, c.name, h('span', { class: 'coltype' }, ` ${c.type}`))))),
          h('tbody', {}, (pv.rows || []).map((r) => h('tr', {}, r.map(cell)))))));
      }
      if (pv.shape !== undefined) parts.push(h('h4', {}, 'Shape'), h('pre', { class: 'code shape' }, pretty(pv.shape)));
      if (pv.text !== undefined) parts.push(h('h4', {}, pv.truncated ? 'Beginning' : 'Content'), h('pre', { class: 'code' }, pv.text));
      fill(view, parts);
    } catch (e) {
      fill(view, errorBox(e));
    }
  };
  fill(panel,
    h('ul', { class: 'handles' }, handles.map((hd) => h('li', {},
      h('button', { type: 'button', class: 'link', onclick: () => open(hd) }, hd.name),
      h('span', { class: 'badge' }, hd.type), ' ',
      h('span', { class: hd.error ? 'error' : 'summary' }, hd.error || hd.summary || '')))),
    view);
}

async function recordsPanel(panel, id) {
  fill(panel, h('p', { class: 'muted' }, 'Loading…'));
  const records = [];
  try {
    let page = null;
    do {
      const d = await api('GET', `/v1/sessions/${enc(id)}/records?limit=1000${page ? `&page=${enc(page)}` : ''}`);
      records.push(...(d.data || []));
      page = d.has_more ? d.next_page : null;
    } while (page && records.length < 100000);
  } catch (e) {
    return fill(panel, errorBox(e));
  }
  const download = h('button', { type: 'button', onclick: async () => {
    try {
      const res = await raw(`/v1/sessions/${enc(id)}/audit_log`);
      const cd = res.headers.get('content-disposition') || '';
      const m = /filename="([^"]+)"/.exec(cd);
      const url = URL.createObjectURL(await res.blob());
      const a = h('a', { href: url, download: m ? m[1] : 'audit.jsonl', hidden: true });
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      panel.appendChild(errorBox(e));
    }
  } }, 'Download audit log');
  if (!records.length) return fill(panel, h('p', { class: 'muted' }, 'No run record yet (a turn whose tools run in the sandbox makes them).'), download);
  const result = await verifyRecords(records);
  const verdict = result.broken
    ? h('p', { class: 'chain broken', role: 'alert' }, `Chain broken: ${result.verdicts.filter((v) => !v.ok).length} of ${records.length} records do not check.`)
    : h('p', { class: 'chain ok', role: 'status' }, `Chain verified: ${records.length} records in ${result.chains} sandbox${result.chains > 1 ? 'es' : ''}, every record's digest recomputed here.`);
  fill(panel, verdict, h('p', {}, download, ' ', h('span', { class: 'hint' }, 'This page recomputes each record\'s own digest and the chain; the request and result digests (a changed byte of code or output) only hull verify FILE checks, on the downloaded log.')),
    h('div', { class: 'table-wrap' }, h('table', { class: 'list records' },
      h('caption', { class: 'sr-only' }, 'Run records'),
      h('thead', {}, h('tr', {}, ['#', 'Operation', 'Started', 'Record digest', 'Check'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, records.map((r, i) => {
        const rec = (r.entry && r.entry.record) || {};
        const v = result.verdicts[i];
        return h('tr', { class: v.ok ? 'rec-ok' : 'rec-bad' },
          h('td', {}, String(rec.sequence || r.line)),
          h('td', {}, (r.entry && r.entry.operation) || Object.keys((r.entry && r.entry.request) || {}).filter((k) => k !== 'protocol').join(' ') || ''),
          h('td', {}, rec.startedUnixMs ? new Date(Number(rec.startedUnixMs)).toLocaleTimeString() : ''),
          h('td', { class: 'mono' }, String(rec.recordSha256 || '').slice(0, 16)),
          h('td', {}, v.ok ? 'ok' : `broken: ${v.problem}`));
      })))));
}

export function sessionView(main, { id, go }) {
  const model = new SessionModel();
  const title = heading(main, `Session ${id}`);
  const statusEl = h('span', {}, statusBadge(null));
  const usageEl = h('span', { class: 'usage' });
  const agentEl = h('span', {});
  const streamEl = h('span', { class: 'stream-state', role: 'status' }, 'connecting…');
  const out = h('div', { 'aria-live': 'assertive' });
  let session = null;
  const send = async (events) => {
    try {
      await api('POST', `/v1/sessions/${enc(id)}/events`, { events });
      fill(out);
    } catch (e) {
      fill(out, errorBox(e));
    }
  };
  const actions = {
    confirm: (toolUseId, result) => send([{ type: 'user.tool_confirmation', tool_use_id: toolUseId, result,
      ...(result === 'deny' ? { deny_message: 'denied in hull\'s console' } : {}) }]),
    customResult: (useId, text, isError) => send([{ type: 'user.custom_tool_result', custom_tool_use_id: useId,
      content: [{ type: 'text', text }], is_error: !!isError }]),
  };
  const interrupt = h('button', { type: 'button', class: 'danger', disabled: true, onclick: () => send([{ type: 'user.interrupt' }]) }, 'Interrupt');
  const archive = h('button', { type: 'button', onclick: async () => {
    if (!confirm('Archive this session? Its events stay readable; it takes no new message.')) return;
    try {
      session = await api('POST', `/v1/sessions/${enc(id)}/archive`, {});
      showSession();
    } catch (e) {
      fill(out, errorBox(e));
    }
  } }, 'Archive');
  const showSession = () => {
    if (!session) return;
    if (session.title) title.textContent = session.title;
    fill(agentEl, 'agent ', h('a', { href: `#/agents/${enc(agentId(session.agent))}` }, agentName(session.agent)));
    fill(usageEl, usageText(session.usage));
    archive.disabled = !!session.archived_at;
    if (session.archived_at) archive.textContent = 'Archived';
  };
  const showStatus = () => {
    const s = model.status() || (session && session.status);
    fill(statusEl, statusBadge(s));
    interrupt.disabled = s !== 'running';
  };
  let refresh = null;
  const refreshSession = () => {
    clearTimeout(refresh);
    refresh = setTimeout(async () => {
      try {
        session = await api('GET', `/v1/sessions/${enc(id)}`);
        showSession();
        showStatus();
      } catch { /* the stream shows the state */ }
    }, 300);
  };
  const msg = h('textarea', { rows: 3, id: 'composer', placeholder: 'Message (Ctrl+Enter sends)',
    onkeydown: (ev) => { if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); composer.requestSubmit(); } } });
  const composer = h('form', { class: 'composer', onsubmit: async (ev) => {
    ev.preventDefault();
    const text = msg.value.trim();
    if (!text) return;
    msg.value = '';
    await send([{ type: 'user.message', content: [{ type: 'text', text }] }]);
  } }, h('label', { for: 'composer', class: 'sr-only' }, 'Message'), msg, h('button', { class: 'primary', type: 'submit' }, 'Send'));
  const list = new EventList(model, actions);
  let current = 'events';
  const t = tabs(['events', 'handles', 'timeline', 'records', 'resources'], (name) => {
    current = name;
    if (name === 'resources') resourcesPanel(t.panels.resources, id);
    if (name === 'handles') handlesPanel(t.panels.handles, id);
    if (name === 'timeline') fill(t.panels.timeline, renderTimeline(model));
    if (name === 'records') recordsPanel(t.panels.records, id);
  });
  append(t.panels.events, list.el, composer);
  main.append(
    h('div', { class: 'session-head' },
      h('p', { class: 'meta' }, statusEl, ' ', agentEl, ' · ', usageEl, ' · ', streamEl),
      h('div', { class: 'actions' }, interrupt, archive)),
    out, t.list, ...Object.values(t.panels));
  t.show('events');
  let lastTimeline = 0;
  model.onChange(() => {
    showStatus();
    if (current === 'timeline' && Date.now() - lastTimeline > 500) {
      lastTimeline = Date.now();
      fill(t.panels.timeline, renderTimeline(model));
    }
  });
  const stream = new EventStream(id, {
    after: 0,
    onFrame: (f) => {
      model.frame(f);
      const ty = f.data.type;
      if (ty === 'session.status_idle' || ty === 'session.usage' || ty === 'session.updated') refreshSession();
    },
    onState: (state, detail) => {
      streamEl.textContent = state === 'live' ? 'live' : state === 'reconnecting' ? `reconnecting (${detail})` : `closed${detail ? `: ${detail}` : ''}`;
      streamEl.dataset.state = state;
    },
  });
  // For tests and the curious: the page's stream and model (never a credential).
  window.hullConsole = { stream, model };
  (async () => {
    try {
      session = await api('GET', `/v1/sessions/${enc(id)}`);
      showSession();
      showStatus();
    } catch (e) {
      fill(out, errorBox(e));
    }
  })();
  title.focus();
  return () => {
    stream.close();
    clearTimeout(refresh);
    if (window.hullConsole && window.hullConsole.stream === stream) delete window.hullConsole;
  };
}

export { clear, textOf };
