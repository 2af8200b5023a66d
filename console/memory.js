// memory.js: the console's memory stores (/v1/memory_stores): the stores, one store's memories,
// and one memory with its history of versions, each version's content, and redaction of a past
// version. Text goes in as text (dom.js): a memory's content is never parsed as HTML.
import { api, enc, listAll, ApiError } from './api.js';
import { h, fill, fmtTime, fmtInt, announce } from './dom.js';

const MS = '/v1/memory_stores';

function errorBox(e) {
  return h('p', { class: 'error', role: 'alert' }, e instanceof ApiError || e instanceof Error ? e.message : String(e));
}

function heading(main, text) {
  const h1 = h('h1', { tabindex: '-1' }, text);
  main.appendChild(h1);
  return h1;
}

function actor(a) {
  if (!a) return '';
  return a.type === 'session_actor' ? `session ${a.session_id}` : a.api_key_id ? `API key ${a.api_key_id}` : a.type;
}

function table(caption, cols, rows) {
  return h('table', { class: 'list' }, h('caption', { class: 'sr-only' }, caption),
    h('thead', {}, h('tr', {}, cols.map((t) => h('th', { scope: 'col' }, t)))), h('tbody', {}, rows));
}

export async function storesList(main) {
  heading(main, 'Memory stores');
  const box = h('div', { class: 'table-wrap' }, h('p', { class: 'muted' }, 'Loading…'));
  main.appendChild(box);
  try {
    const stores = await listAll(MS);
    if (!stores.length) return fill(box, h('p', { class: 'muted' }, 'No memory store yet (POST /v1/memory_stores makes one).'));
    fill(box, table('Memory stores', ['Name', 'Description', 'Updated'], stores.map((s) => h('tr', {},
      h('td', {}, h('a', { href: `#/memory/${enc(s.id)}` }, s.name || s.id)),
      h('td', {}, s.description || ''),
      h('td', {}, fmtTime(s.updated_at))))));
  } catch (e) {
    fill(box, errorBox(e));
  }
}

export async function storeView(main, { id }) {
  const h1 = heading(main, 'Memory store');
  const box = h('div', { class: 'table-wrap' }, h('p', { class: 'muted' }, 'Loading…'));
  main.appendChild(box);
  try {
    const store = await api('GET', `${MS}/${enc(id)}`);
    h1.textContent = `Memory store ${store.name}`;
    const mems = await listAll(`${MS}/${enc(id)}/memories`, 2000);
    if (!mems.length) return fill(box, h('p', { class: 'muted' }, 'No memory in this store yet.'));
    fill(box, table('Memories', ['Path', 'Size', 'Updated'], mems.map((m) => h('tr', {},
      h('td', {}, h('a', { href: `#/memory/${enc(id)}/${enc(m.id)}` }, m.path)),
      h('td', {}, `${fmtInt(m.content_size_bytes)} B`),
      h('td', {}, fmtTime(m.updated_at))))));
  } catch (e) {
    fill(box, errorBox(e));
  }
}

// One memory: its content, then its history (newest first); a past version can be shown or
// redacted (its content blanked, its record kept).
export async function memoryView(main, { id, mid }) {
  const h1 = heading(main, 'Memory');
  const content = h('pre', { class: 'memory-content' });
  const box = h('div', { class: 'table-wrap' }, h('p', { class: 'muted' }, 'Loading…'));
  main.append(h('p', {}, h('a', { href: `#/memory/${enc(id)}` }, '← the store')), content, h('h2', {}, 'History'), box);
  async function draw() {
    try {
      const m = await api('GET', `${MS}/${enc(id)}/memories/${enc(mid)}`).catch((e) => (e.status === 404 ? null : Promise.reject(e)));
      h1.textContent = m ? `Memory ${m.path}` : 'Memory (deleted)';
      content.textContent = m ? m.content : '';
      const vers = await listAll(`${MS}/${enc(id)}/memory_versions?memory_id=${enc(mid)}`);
      fill(box, table('Versions', ['When', 'Change', 'By', 'Path', 'Size', ''], vers.map((v) => {
        const current = m && v.id === m.memory_version_id;
        const show = h('button', { type: 'button', onclick: async () => {
          try {
            const full = await api('GET', `${MS}/${enc(id)}/memory_versions/${enc(v.id)}`);
            content.textContent = full.redacted_at ? '(redacted)' : full.content ?? '(none)';
          } catch (e) { content.textContent = e.message; }
        } }, 'Show');
        const redact = v.redacted_at || current || v.operation === 'deleted' ? null : h('button', { type: 'button', class: 'danger', onclick: async () => {
          if (!window.confirm(`Redact this version of ${v.path}? Its content is blanked for good; its record stays.`)) return;
          try {
            await api('POST', `${MS}/${enc(id)}/memory_versions/${enc(v.id)}/redact`);
            announce('Version redacted');
            await draw();
          } catch (e) { box.prepend(errorBox(e)); }
        } }, 'Redact');
        return h('tr', {},
          h('td', {}, fmtTime(v.created_at)),
          h('td', {}, v.redacted_at ? `${v.operation} (redacted)` : v.operation + (current ? ' (current)' : '')),
          h('td', {}, actor(v.created_by)),
          h('td', {}, v.path || ''),
          h('td', {}, v.content_size_bytes == null ? '' : `${fmtInt(v.content_size_bytes)} B`),
          h('td', {}, v.redacted_at ? null : show, ' ', redact));
      })));
    } catch (e) {
      fill(box, errorBox(e));
    }
  }
  await draw();
}
