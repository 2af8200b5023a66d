// vaults.js: the console's vaults page: each vault with its credentials, by name and type only
// (hull never answers a secret; this page shows neither the servers' URLs nor anything of the
// tokens), and a form to make an empty vault. Credentials are added with the API (the SDK's
// client.beta.vaults.credentials.create), so a secret never passes through the console.
import { api, enc, listAll, ApiError } from './api.js';
import { h, fill, fmtTime, announce } from './dom.js';

function errorBox(e) {
  return h('p', { class: 'error', role: 'alert' }, e instanceof ApiError || e instanceof Error ? e.message : String(e));
}

const TYPE_NAMES = { static_bearer: 'static bearer token', mcp_oauth: 'MCP OAuth' };

export async function vaultsList(main) {
  main.appendChild(h('h1', { tabindex: '-1' }, 'Vaults'));
  const name = h('input', { type: 'text', id: 'vault-name', maxlength: '255', required: '' });
  const make = h('form', { class: 'inline' }, h('label', { for: 'vault-name' }, 'New vault'), name,
    h('button', { type: 'submit', class: 'button primary' }, 'Create'));
  main.appendChild(make);
  const box = h('div', { class: 'table-wrap' }, h('p', { class: 'muted' }, 'Loading…'));
  main.appendChild(box);
  async function load() {
    try {
      const vaults = await listAll('/v1/vaults?include_archived=true');
      if (!vaults.length) return fill(box, h('p', { class: 'muted' }, 'No vault yet.'));
      const rows = [];
      for (const v of vaults) {
        const creds = await listAll(`/v1/vaults/${enc(v.id)}/credentials?include_archived=true`);
        const list = creds.length
          ? h('ul', { class: 'plain' }, creds.map((c) => h('li', {},
            `${c.display_name || c.id} — ${TYPE_NAMES[c.auth && c.auth.type] || (c.auth && c.auth.type) || '?'}`,
            c.archived_at ? ' (archived)' : '')))
          : h('span', { class: 'muted' }, 'none');
        rows.push(h('tr', {},
          h('td', {}, v.display_name, v.archived_at ? h('span', { class: 'muted' }, ' (archived)') : null),
          h('td', {}, h('code', {}, v.id)),
          h('td', {}, list),
          h('td', {}, fmtTime(v.created_at))));
      }
      fill(box, h('table', { class: 'list' },
        h('caption', { class: 'sr-only' }, 'Vaults'),
        h('thead', {}, h('tr', {}, ['Name', 'Id', 'Credentials (name — type)', 'Created'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, rows)));
    } catch (e) {
      fill(box, errorBox(e));
    }
  }
  make.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await api('POST', '/v1/vaults', { display_name: name.value });
      announce(`vault ${name.value} made`);
      name.value = '';
      await load();
    } catch (e) {
      fill(box, errorBox(e));
    }
  });
  await load();
}
