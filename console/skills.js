// skills.js: the console's skills page: every skill (name, id, latest version, updated), each
// with its versions (name, description, directory) and a download of a version's files as a zip,
// and an upload of a skill (a zip of its directory with its SKILL.md) as a new skill or a new
// version of one. The server checks every upload (docs/API.md "Skills").
import { api, raw, key, enc, listAll, ApiError } from './api.js';
import { h, fill, fmtTime, announce } from './dom.js';

function errorBox(e) {
  return h('p', { class: 'error', role: 'alert' }, e instanceof ApiError || e instanceof Error ? e.message : String(e));
}

async function download(skill, version, out) {
  try {
    const res = await raw(`/v1/skills/${enc(skill)}/versions/${enc(version)}/content`);
    const url = URL.createObjectURL(await res.blob());
    const a = h('a', { href: url, download: `${skill}-${version}.zip`, hidden: true });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    out.appendChild(errorBox(e));
  }
}

// POST the file as files[] (a new skill, or a version of `to`).
async function upload(file, to) {
  const form = new FormData();
  form.append('files[]', file, file.name);
  const headers = { 'anthropic-version': '2023-06-01' };
  if (key.get()) headers['x-api-key'] = key.get();
  const res = await fetch(to ? `/v1/skills/${enc(to)}/versions` : '/v1/skills', { method: 'POST', headers, body: form });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, (data.error && data.error.type) || 'http_error', (data.error && data.error.message) || `${res.status}`);
  return data;
}

async function versionsOf(skill, box) {
  try {
    const versions = await listAll(`/v1/skills/${enc(skill.id)}/versions`);
    fill(box, h('table', { class: 'list' },
      h('caption', { class: 'sr-only' }, `Versions of ${skill.display_name || skill.id}`),
      h('thead', {}, h('tr', {}, ['Version', 'Name', 'Description', 'Directory', 'Created', ''].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, versions.map((v) => h('tr', {},
        h('td', {}, v.id), h('td', {}, v.name || ''), h('td', {}, v.description || ''),
        h('td', {}, v.directory ? `/skills/${v.directory}/` : ''), h('td', {}, fmtTime(v.created_at)),
        h('td', {}, h('button', { type: 'button', onclick: () => download(skill.id, v.id, box) }, 'Download')))))));
  } catch (e) {
    fill(box, errorBox(e));
  }
}

export async function skillsList(main, { go }) {
  main.appendChild(h('h1', { tabindex: '-1' }, 'Skills'));
  const file = h('input', { type: 'file', accept: '.zip,.tar,.tgz,.tar.gz,application/zip', required: true });
  const to = h('select', {}, h('option', { value: '' }, 'a new skill'));
  const out = h('div', { 'aria-live': 'assertive' });
  main.appendChild(h('form', { class: 'panel', onsubmit: async (ev) => {
    ev.preventDefault();
    if (!file.files[0]) return;
    try {
      const r = await upload(file.files[0], to.value);
      announce(`Uploaded ${r.display_name || r.name || r.id}`);
      go('#/skills', true);
    } catch (e) {
      fill(out, errorBox(e));
    }
  } },
  h('p', {}, 'A skill is a directory with a SKILL.md (front matter: name, description). Upload a zip of it; an agent that lists the skill gets it read-only at /skills/<directory>/ in its sessions.'),
  h('div', { class: 'field' }, h('label', {}, 'Zip of the skill\'s directory ', file)),
  h('div', { class: 'field' }, h('label', {}, 'Upload as ', to)),
  h('button', { class: 'primary', type: 'submit' }, 'Upload'),
  out));
  const box = h('div', { class: 'table-wrap' }, h('p', { class: 'muted' }, 'Loading…'));
  main.appendChild(box);
  try {
    const skills = await listAll('/v1/skills');
    for (const s of skills) to.appendChild(h('option', { value: s.id }, `a new version of ${s.display_name || s.id}`));
    if (!skills.length) return fill(box, h('p', { class: 'muted' }, 'No skill yet: upload one, or run hull skill add DIR.'));
    fill(box, skills.map((s) => {
      const versions = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
      const details = h('details', { class: 'panel', ontoggle: () => { if (details.open) versionsOf(s, versions); } },
        h('summary', {}, `${s.display_name || s.id} · ${s.id} · latest ${s.latest_version_id || 'none'} · updated ${fmtTime(s.updated_at)}`),
        versions,
        h('button', { type: 'button', onclick: async () => {
          try {
            await api('DELETE', `/v1/skills/${enc(s.id)}`);
            announce(`Deleted ${s.display_name || s.id}`);
            go('#/skills', true);
          } catch (e) {
            versions.appendChild(errorBox(e));
          }
        } }, 'Delete the skill and its versions'));
      return details;
    }));
  } catch (e) {
    fill(box, errorBox(e));
  }
}
