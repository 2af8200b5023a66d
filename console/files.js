// files.js: the console's files page (/v1/files): upload a file, list them (newest first), download
// one, delete one; and a session's resources (the files mounted in its sandbox) for the session
// page. Names and types are shown as text, never parsed as HTML.
import { api, raw, key, enc, listAll, ApiError } from './api.js';
import { h, fill, fmtTime, fmtInt, announce } from './dom.js';

function errorBox(e) {
  return h('p', { class: 'error', role: 'alert' }, e instanceof ApiError || e instanceof Error ? e.message : String(e));
}

// POST /v1/files as multipart/form-data (the browser writes the boundary).
async function upload(file) {
  const form = new FormData();
  form.append('file', file, file.name);
  const headers = { 'anthropic-version': '2026-10-21' };
  if (key.get()) headers['x-api-key'] = key.get();
  const res = await fetch('/v1/files', { method: 'POST', headers, body: form });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, (data.error && data.error.type) || 'http_error', (data.error && data.error.message) || `${res.status}`);
  return data;
}

async function download(f) {
  const res = await raw(`/v1/files/${enc(f.id)}/content`);
  const url = URL.createObjectURL(await res.blob());
  const a = h('a', { href: url, download: f.filename });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export function filesList(main) {
  main.appendChild(h('h1', { tabindex: '-1' }, 'Files'));
  const out = h('div', { 'aria-live': 'assertive' });
  const input = h('input', { type: 'file', id: 'file-upload' });
  const body = h('tbody');
  const load = async () => {
    try {
      const files = await listAll('/v1/files');
      fill(body, files.length ? files.map((f) => h('tr', {},
        h('td', {}, f.filename), h('td', {}, h('code', {}, f.id)), h('td', {}, f.mime_type),
        h('td', { class: 'num' }, fmtInt(f.size_bytes)), h('td', {}, fmtTime(f.created_at)),
        h('td', {},
          h('button', { type: 'button', onclick: () => download(f).catch((e) => fill(out, errorBox(e))) }, 'Download'),
          ' ',
          h('button', { type: 'button', class: 'danger', onclick: async () => {
            if (!confirm(`Delete ${f.filename}? Sessions that mount it keep their copy.`)) return;
            try {
              await api('DELETE', `/v1/files/${enc(f.id)}`);
              announce(`${f.filename} deleted`);
              load();
            } catch (e) {
              fill(out, errorBox(e));
            }
          } }, 'Delete'))))
        : [h('tr', {}, h('td', { colspan: '6', class: 'muted' }, 'No files yet.'))]);
    } catch (e) {
      fill(out, errorBox(e));
    }
  };
  const send = h('button', { type: 'button', onclick: async () => {
    if (!input.files || !input.files[0]) return fill(out, errorBox('Choose a file first.'));
    send.disabled = true;
    try {
      const f = await upload(input.files[0]);
      announce(`${f.filename} uploaded`);
      fill(out);
      input.value = '';
      load();
    } catch (e) {
      fill(out, errorBox(e));
    } finally {
      send.disabled = false;
    }
  } }, 'Upload');
  main.appendChild(h('div', { class: 'field' }, h('label', { for: 'file-upload' }, 'Upload a file'), input, ' ', send));
  main.appendChild(out);
  main.appendChild(h('table', {}, h('thead', {}, h('tr', {}, ['Name', 'Id', 'Type', 'Bytes', 'Created', ''].map((t) => h('th', {}, t)))), body));
  return load();
}

// A session's resources, for its page: each file and where its sandbox sees it.
export async function resourcesPanel(panel, id) {
  try {
    const res = await listAll(`/v1/sessions/${enc(id)}/resources`);
    fill(panel, res.length ? h('table', {},
      h('thead', {}, h('tr', {}, ['Type', 'File', 'Mounted at'].map((t) => h('th', {}, t)))),
      h('tbody', {}, res.map((r) => h('tr', {}, h('td', {}, r.type), h('td', {}, h('code', {}, r.file_id || '')),
        h('td', {}, h('code', {}, r.mount_path || ''))))))
      : h('p', { class: 'muted' }, 'No resources: files given at the session\'s start or added later show here.'));
  } catch (e) {
    fill(panel, errorBox(e));
  }
}
