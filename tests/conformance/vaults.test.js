// vaults.test.js: hull serve's /v1 vaults and credentials (issue 22) driven by the official
// `@anthropic-ai/sdk`, unchanged, against a real `hull serve` whose model is `hull mock-model`:
// every vault and credential route (create, retrieve, update, list with the SDK's own pagination
// helpers, archive, delete, mcp_oauth_validate), hostile input (bad ids, wrong types, unknown
// fields, an oversized body, a bad cursor) answered with clear 4xx; an MCP server in this test that
// demands a bearer token and gets it from the session's vault; the same server without a matching
// credential (mcp_authentication_failed_error naming it); an MCP OAuth credential whose stale
// access token is refused (401) and refreshed against a scripted token endpoint (client_secret_basic,
// the refresh token rotated and stored); and, at the end of every case, no secret's plaintext in
// any answer, event, log line, run record, or file under HULL_HOME (the database included).
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, Reader, v1Headers, keyCreate, MODEL } = require('./cma-lib.js');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const TAG = `vaults[sdk ${SDK_VERSION}]`;
const CASE_S = 240;
const rej = (p, what) => rejects(p, null, what);
const NOSCRIPT = { steps: [{ text: 'never asked' }] };

// ---- the MCP server that wants a bearer token, and the OAuth token endpoint ----

function mcpAndTokenServer() {
  const st = { accept: new Set(), seen: [], tokenRequests: [], refresh: null, issued: 0, basic: null };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      const auth = req.headers.authorization || '';
      if (req.url === '/token' && req.method === 'POST') {
        const form = Object.fromEntries(new URLSearchParams(body));
        st.tokenRequests.push({ form, auth });
        const okClient = !st.basic || auth === `Basic ${Buffer.from(st.basic).toString('base64')}`;
        if (form.grant_type !== 'refresh_token' || form.refresh_token !== st.refresh || !okClient) {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: okClient ? 'invalid_grant' : 'invalid_client' }));
          return;
        }
        st.issued++;
        const access = `fresh-access-${st.issued}-Qz8`;
        st.accept.add(access);
        st.refresh = `rotated-refresh-${st.issued}-Wq3`;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ access_token: access, token_type: 'Bearer', expires_in: 3600, refresh_token: st.refresh }));
        return;
      }
      if (req.url !== '/mcp') { res.writeHead(404); res.end(); return; }
      st.seen.push({ method: req.method, auth });
      const tok = auth.startsWith('Bearer ') ? auth.slice(7) : null;
      if (!tok || !st.accept.has(tok)) {
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
        res.end(JSON.stringify({ error: 'unauthorized' }));
        return;
      }
      if (req.method === 'DELETE') { res.writeHead(200); res.end(); return; }
      if (req.method !== 'POST') { res.writeHead(405); res.end(); return; }
      let msg;
      try { msg = JSON.parse(body); } catch { res.writeHead(400); res.end(); return; }
      if (msg.id === undefined) { res.writeHead(202); res.end(); return; }
      let result;
      if (msg.method === 'initialize')
        result = { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'secure', version: '1.0.0' } };
      else if (msg.method === 'tools/list')
        result = { tools: [{ name: 'whoami', description: 'Says who you are.', inputSchema: { type: 'object', properties: {} } }] };
      else if (msg.method === 'tools/call')
        result = { content: [{ type: 'text', text: 'you are authorized' }], isError: false };
      else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no such method' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'sess-secure-1' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const port = server.address().port;
    resolve({ st, mcpUrl: `http://127.0.0.1:${port}/mcp`, tokenUrl: `http://127.0.0.1:${port}/token`,
      close: () => new Promise((r) => { server.closeAllConnections && server.closeAllConnections(); server.close(r); }) });
  }));
}

// ---- the secrets sweep ----

// Every file under dir, read as bytes (the database, its WAL, run records, logs).
function filesUnder(dir, out = []) {
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) filesUnder(p, out);
    else if (ent.isFile()) out.push(p);
  }
  return out;
}

// found: strings that must be found somewhere under home (the sweep reads what it should: the
// database holds the vaults' ids).
function sweep(secrets, found, { answers, home, log }) {
  const places = [['answers', answers.join('\n')], ['hull serve log', log]];
  for (const f of filesUnder(home)) places.push([path.relative(home, f), fs.readFileSync(f).toString('latin1')]);
  for (const s of secrets)
    for (const [where, text] of places)
      check(!text.includes(s), `the secret ${s.slice(0, 6)}... is in ${where}`);
  for (const s of found)
    check(places.some(([where, text]) => where !== 'answers' && text.includes(s)), `the sweep did not find ${s} under HULL_HOME`);
}

// A fetch that keeps the text of every answer (for the sweep).
function keepingFetch(answers) {
  return async (url, init) => {
    const res = await fetch(url, init);
    const type = res.headers.get('content-type') || '';
    if (!type.includes('event-stream')) answers.push(await res.clone().text());
    return res;
  };
}

// One case: a mock, a hull serve (loopback admitted for MCP URLs), the MCP/token server, a client
// whose answers are kept; then the secrets sweep.
function vcase(name, script, fn) {
  return test(`${TAG}: ${name}`, script, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-vault-home-'));
    fs.writeFileSync(path.join(home, 'config.json'), JSON.stringify({ web: { allow_cidrs: ['127.0.0.0/8'] } }));
    const secrets = [];
    const answers = [];
    const found = [];
    let srv = null;
    let ext = null;
    let timer;
    try {
      const key = keyCreate(home);
      ext = await mcpAndTokenServer();
      srv = await startServe(mock.url, { home });
      const client = new Anthropic({ baseURL: srv.url, apiKey: key, fetch: keepingFetch(answers), timeout: 120000, maxRetries: 0 });
      await Promise.race([
        fn({ mock, srv, client, ext, secrets, answers, key, found }),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`the case took over ${CASE_S} s`)), CASE_S * 1000); }),
      ]);
      await srv.stop(true);
      check(secrets.length === 0 || found.length > 0, 'a case with secrets names what the sweep must find');
      sweep(secrets, found, { answers, home, log: srv.log() });
      srv = null;
    } catch (e) {
      if (srv) e.message += ` | hull serve log: ${srv.log().split('\n').filter((l) => /level=(error|warn)/.test(l)).slice(-3).join(' / ')}`;
      throw e;
    } finally {
      clearTimeout(timer);
      if (srv) await srv.stop(true);
      if (ext) await ext.close();
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
    }
  });
}

function status(e) {
  return e && e.status;
}

async function raw(srv, key, method, p, body, headers = {}) {
  const res = await fetch(`${srv.url}${p}`, { method, headers: v1Headers({ 'x-api-key': key, ...headers }), body });
  return { status: res.status, body: await res.text() };
}

async function agentWithServer(client, url) {
  const agent = await client.beta.agents.create({
    name: 'vaulted', model: MODEL, system: 'You use the secure server.',
    mcp_servers: [{ type: 'url', name: 'secure', url }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'secure', default_config: { permission_policy: { type: 'always_allow' } } }],
  });
  const env = await client.beta.environments.create({ name: 'vaulted', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
  return { agent, env };
}

async function turn(client, sessionId, text) {
  const reader = new Reader(await client.beta.sessions.events.stream(sessionId));
  await client.beta.sessions.events.send(sessionId, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
  const events = await reader.idle();
  reader.close();
  // every event of the session, listed as JSON: the sweep reads them among the answers
  let n = 0;
  for await (const e of client.beta.sessions.events.list(sessionId, { limit: 100 })) n += e ? 1 : 0;
  check(n >= events.length - 1, `the events list has the turn's events (${n})`);
  return events;
}

const TOOL_TURN = {
  steps: [
    { tool_calls: [{ name: 'secure__whoami', input: {}, id: 'toolu_who1' }] },
    { text: 'The server knows me.' },
  ],
};

async function main() {
  await vcase('vaults: create, retrieve, update, list with the SDK\'s pagination, archive, delete', NOSCRIPT, async ({ client, srv }) => {
    const made = [];
    for (let i = 0; i < 5; i++)
      made.push(await client.beta.vaults.create({ display_name: `vault ${i}`, metadata: { n: String(i) } }));
    const v = made[0];
    check(/^vlt_/.test(v.id), `vault id ${v.id}`);
    same([v.type, v.display_name, v.metadata, v.archived_at], ['vault', 'vault 0', { n: '0' }, null], 'the vault');
    check(typeof v.created_at === 'string' && typeof v.updated_at === 'string', 'times');
    same((await client.beta.vaults.retrieve(v.id)).display_name, 'vault 0', 'retrieve');
    const u = await client.beta.vaults.update(v.id, { display_name: 'renamed', metadata: { n: null, k: 'v' } });
    same([u.display_name, u.metadata], ['renamed', { k: 'v' }], 'update: name and metadata patch');

    const all = [];
    for await (const x of client.beta.vaults.list({ limit: 2 })) all.push(x.id);
    same(all.sort(), made.map((x) => x.id).sort(), 'for await over every page');
    const page = await client.beta.vaults.list({ limit: 2 });
    same(page.data.length, 2, 'a first page of 2');
    check(page.hasNextPage(), 'hasNextPage');
    const next = await page.getNextPage();
    same(next.data.length, 2, 'getNextPage');
    check(!next.data.some((x) => page.data.some((y) => y.id === x.id)), 'no vault twice');

    const a = await client.beta.vaults.archive(made[1].id);
    check(typeof a.archived_at === 'string', 'archive sets archived_at');
    const active = [];
    for await (const x of client.beta.vaults.list()) active.push(x.id);
    check(!active.includes(made[1].id) && active.length === 4, 'archived vaults are left out');
    const withArchived = [];
    for await (const x of client.beta.vaults.list({ include_archived: true })) withArchived.push(x.id);
    same(withArchived.length, 5, 'include_archived');
    const d = await client.beta.vaults.delete(made[2].id);
    same(d, { id: made[2].id, type: 'vault_deleted' }, 'delete');
    const page2 = await fetch(`${srv.url}/console/vaults.js`);
    const js = await page2.text();
    check(page2.status === 200 && js.includes('export async function vaultsList'), 'the console serves its vaults page');
    const nf = await rej(client.beta.vaults.retrieve(made[2].id), 'a deleted vault');
    check(nf instanceof Anthropic.NotFoundError, `NotFoundError: ${nf}`);
  });

  await vcase('credentials: every route, write-only secrets, one per URL, the pagination helper, mcp_oauth_validate', NOSCRIPT, async ({ client, ext, secrets, found }) => {
    const vault = await client.beta.vaults.create({ display_name: 'creds' });
    found.push(vault.id);
    const TOKEN = 'static-secret-Hk29xLq';
    secrets.push(TOKEN);
    const c = await client.beta.vaults.credentials.create(vault.id, {
      display_name: 'bearer', auth: { type: 'static_bearer', token: TOKEN, mcp_server_url: 'http://127.0.0.1:1/a' } });
    check(/^vcrd_/.test(c.id), `credential id ${c.id}`);
    same([c.type, c.vault_id, c.display_name, c.auth], ['vault_credential', vault.id, 'bearer',
      { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:1/a' }], 'the credential, no token in it');
    const dup = await rej(client.beta.vaults.credentials.create(vault.id, {
      auth: { type: 'static_bearer', token: 'x-dup-token-1', mcp_server_url: 'http://127.0.0.1:1/a' } }), 'a second for one URL');
    secrets.push('x-dup-token-1');
    same(status(dup), 409, 'one active credential per URL: 409');
    check(dup instanceof Anthropic.ConflictError, 'ConflictError');

    const ACCESS = 'oauth-access-Zr81mVe', REFRESH = 'oauth-refresh-Pq55tTn', CSECRET = 'client-secret-Lm03kAa';
    secrets.push(ACCESS, REFRESH, CSECRET);
    ext.st.refresh = REFRESH;
    ext.st.basic = `cli-1:${CSECRET}`;
    const o = await client.beta.vaults.credentials.create(vault.id, {
      auth: { type: 'mcp_oauth', access_token: ACCESS, mcp_server_url: ext.mcpUrl, expires_at: '2099-01-01T00:00:00Z',
        refresh: { client_id: 'cli-1', refresh_token: REFRESH, token_endpoint: ext.tokenUrl, scope: 'mcp',
          token_endpoint_auth: { type: 'client_secret_basic', client_secret: CSECRET } } } });
    same(o.auth.refresh, { client_id: 'cli-1', token_endpoint: ext.tokenUrl, token_endpoint_auth: { type: 'client_secret_basic' },
      resource: null, scope: 'mcp' }, 'the refresh shown, no refresh token, no client secret');
    same(o.auth.expires_at, '2099-01-01T00:00:00Z', 'expires_at');
    for (let i = 0; i < 3; i++) {
      secrets.push(`more-token-${i}-Yx`);
      await client.beta.vaults.credentials.create(vault.id, { auth: { type: 'static_bearer', token: `more-token-${i}-Yx`, mcp_server_url: `http://127.0.0.1:1/m${i}` } });
    }
    const ids = [];
    for await (const x of client.beta.vaults.credentials.list(vault.id, { limit: 2 })) ids.push(x.id);
    same(ids.length, 5, 'for await over the credentials\' pages');
    const p1 = await client.beta.vaults.credentials.list(vault.id, { limit: 3 });
    check(p1.hasNextPage() && (await p1.getNextPage()).data.length === 2, 'getNextPage of credentials');

    const got = await client.beta.vaults.credentials.retrieve(c.id, { vault_id: vault.id });
    same(got.auth, c.auth, 'retrieve');
    const NEWTOKEN = 'static-secret-new-Vb7';
    secrets.push(NEWTOKEN);
    const up = await client.beta.vaults.credentials.update(c.id, { vault_id: vault.id, display_name: 'renamed',
      metadata: { team: 'x' }, auth: { type: 'static_bearer', token: NEWTOKEN } });
    same([up.display_name, up.metadata, up.auth], ['renamed', { team: 'x' }, c.auth], 'update: token replaced, never shown');
    const tc = await rej(client.beta.vaults.credentials.update(c.id, { vault_id: vault.id, auth: { type: 'mcp_oauth', access_token: 'zz-x' } }), 'a type change');
    same(status(tc), 400, 'auth.type cannot change');
    const uc = await rej(client.beta.vaults.credentials.update(c.id, { vault_id: vault.id,
      auth: { type: 'static_bearer', mcp_server_url: 'http://elsewhere/' } }), 'a URL change');
    same(status(uc), 400, 'mcp_server_url is immutable');
    check(/mcp_server_url/.test(uc.message), `the message names the field: ${uc.message}`);

    const sv = await rej(client.beta.vaults.credentials.mcpOAuthValidate(c.id, { vault_id: vault.id }), 'validate a bearer');
    same(status(sv), 400, 'mcp_oauth_validate of a static_bearer: 400');
    const val = await client.beta.vaults.credentials.mcpOAuthValidate(o.id, { vault_id: vault.id });
    same([val.type, val.credential_id, val.vault_id, val.status, val.has_refresh_token],
      ['vault_credential_validation', o.id, vault.id, 'valid', true], 'validate: refreshed, then initialize took the token');
    same(val.refresh && val.refresh.status, 'succeeded', 'validate: refresh succeeded');
    same(val.refresh.http_response.status_code, 200, 'validate: the token endpoint\'s status');
    check(!JSON.stringify(val).includes('fresh-access') && !JSON.stringify(val).includes('rotated-refresh'), 'no new token shown');
    same(val.mcp_probe.method, 'initialize', 'the probe');
    same(ext.st.tokenRequests.length, 1, 'one token request');
    same(ext.st.tokenRequests[0].form.refresh_token, REFRESH, 'the refresh token sent');
    secrets.push('fresh-access-1-Qz8', 'rotated-refresh-1-Wq3');

    const ar = await client.beta.vaults.credentials.archive(c.id, { vault_id: vault.id });
    check(typeof ar.archived_at === 'string', 'archive');
    const again = await client.beta.vaults.credentials.create(vault.id, {
      auth: { type: 'static_bearer', token: 'after-archive-Tt1', mcp_server_url: 'http://127.0.0.1:1/a' } });
    secrets.push('after-archive-Tt1');
    check(/^vcrd_/.test(again.id), 'an archived credential frees its URL');
    same(await client.beta.vaults.credentials.delete(c.id, { vault_id: vault.id }), { id: c.id, type: 'vault_credential_deleted' }, 'delete');
    same(status(await rej(client.beta.vaults.credentials.retrieve(c.id, { vault_id: vault.id }), 'gone')), 404, 'then 404');
    same(status(await rej(client.beta.vaults.credentials.retrieve(o.id, { vault_id: 'vlt_other' }), 'other vault')), 404,
      'a credential is found only in its own vault');
  });

  await vcase('hostile input: bad ids, wrong types, unknown fields, oversized bodies, bad cursors: clear 4xx', NOSCRIPT, async ({ client, srv, key, found, secrets }) => {
    same(status(await rej(client.beta.vaults.retrieve('vlt_nope'), 'unknown')), 404, 'unknown vault');
    for (const bad of ['%00x', '%ff%fe', 'a'.repeat(300)]) {
      const r = await raw(srv, key, 'GET', `/v1/vaults/${bad}`);
      check(r.status === 404 || r.status === 400, `bad id ${bad.slice(0, 12)}: ${r.status}`);
    }
    const r1 = await raw(srv, key, 'GET', '/v1/vaults/vlt_x/credentials/%01');
    same(r1.status, 404, 'a credential id with a control character');
    const w = await rej(client.beta.vaults.create({ display_name: 5 }), 'a number name');
    same(status(w), 400, 'display_name: 5');
    check(/display_name/.test(w.message), `names the field: ${w.message}`);
    same(status(await rej(client.beta.vaults.create({}), 'no name')), 400, 'display_name required');
    same(status(await rej(client.beta.vaults.create({ display_name: 'x'.repeat(256) }), 'long')), 400, 'display_name over 255');
    same(status(await rej(client.beta.vaults.create({ display_name: 'a', colour: 'red' }), 'unknown field')), 400, 'unknown field');
    const v = await client.beta.vaults.create({ display_name: 'h' });
    found.push(v.id);
    const cases = [
      [{ auth: { type: 'static_bearer', token: 'x-only-tok', mcp_server_url: 'ftp://x' } }, /mcp_server_url/],
      [{ auth: { type: 'static_bearer', mcp_server_url: 'http://x/' } }, /token: required/],
      [{ auth: { type: 'static_bearer', token: 7, mcp_server_url: 'http://x/' } }, /token: must be a string/],
      [{ auth: { type: 'environment_variable', secret_name: 'A', secret_value: 'b-val-q', networking: { type: 'unrestricted' } } }, /environment_variable/],
      [{ auth: { type: 'mcp_oauth', access_token: 'ab-tok', mcp_server_url: 'http://x/', expires_at: 'soon' } }, /expires_at/],
      [{ auth: { type: 'mcp_oauth', access_token: 'ab-tok', mcp_server_url: 'http://x/', refresh: { client_id: 'c', refresh_token: 'r-tok-q',
        token_endpoint: 'http://t/', token_endpoint_auth: { type: 'client_secret_post' } } } }, /client_secret: required/],
      [{ auth: 'bearer' }, /auth: must be an object/],
    ];
    for (const [body, why] of cases) {
      const e = await rej(client.beta.vaults.credentials.create(v.id, body), JSON.stringify(body).slice(0, 40));
      same(status(e), 400, `400 for ${JSON.stringify(body).slice(0, 60)}`);
      check(why.test(e.message), `the message says why: ${e.message}`);
      check(!/x-only-tok|r-tok-q|b-val-q|ab-tok/.test(e.message), 'no secret in the message');
    }
    // a token endpoint at a cloud metadata address: the egress guard refuses it, nothing is fetched
    const meta = await client.beta.vaults.credentials.create(v.id, { auth: { type: 'mcp_oauth', access_token: 'meta-acc-Ee4',
      mcp_server_url: 'http://127.0.0.1:1/meta', refresh: { client_id: 'c', refresh_token: 'meta-ref-Ee5',
        token_endpoint: 'http://169.254.169.254/latest/meta-data/', token_endpoint_auth: { type: 'none' } } } });
    secrets.push('meta-acc-Ee4', 'meta-ref-Ee5');
    const mv = await client.beta.vaults.credentials.mcpOAuthValidate(meta.id, { vault_id: v.id });
    same([mv.status, mv.refresh && mv.refresh.status, mv.mcp_probe], ['invalid', 'connect_error', null],
      'validate: a metadata token endpoint is refused by the egress guard');
    const big = await raw(srv, key, 'POST', '/v1/vaults', JSON.stringify({ display_name: 'x'.repeat(9 << 20) }));
    same(big.status, 413, 'a body over 8 MiB');
    same((await raw(srv, key, 'POST', '/v1/vaults', '{"display_name":')).status, 400, 'not JSON');
    same((await raw(srv, key, 'GET', '/v1/vaults?page=Vnot-a-cursor')).status, 400, 'a bad cursor');
    same((await raw(srv, key, 'GET', '/v1/vaults?limit=abc')).status, 400, 'a limit that is not a number');
    same((await raw(srv, key, 'GET', '/v1/vaults?limit=50000')).status, 200, 'a large limit is clamped');
    same((await raw(srv, key, 'GET', '/v1/vaults?colour=red')).status, 400, 'an unknown query parameter');
    same((await raw(srv, key, 'POST', `/v1/vaults/${v.id}/archive`, '{"x":1}')).status, 400, 'archive takes no body');
    same((await raw(srv, key, 'GET', '/v1/vaults', undefined, { 'anthropic-beta': 'other-beta' })).status, 400, 'the beta is required');
    const { agent, env } = await agentWithServer(client, 'http://127.0.0.1:9/mcp');
    same(status(await rej(client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: ['vlt_missing'] }), 'a missing vault')), 404, 'vault_ids: unknown vault');
    same(status(await rej(client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: [v.id, v.id] }), 'twice')), 400, 'vault_ids: twice');
    await client.beta.vaults.archive(v.id);
    same(status(await rej(client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: [v.id] }), 'archived')), 400, 'vault_ids: archived');
    same(status(await rej(client.beta.vaults.update(v.id, { display_name: 'z' }), 'archived update')), 400, 'an archived vault cannot change');
  });

  await vcase('injection: an MCP server that demands a bearer token gets it from the session\'s vault', TOOL_TURN, async ({ mock, client, ext, secrets, found }) => {
    const TOKEN = 'mcp-bearer-Ju77pQs';
    secrets.push(TOKEN);
    ext.st.accept.add(TOKEN);
    const vault = await client.beta.vaults.create({ display_name: 'mcp' });
    found.push(vault.id);
    await client.beta.vaults.credentials.create(vault.id, { auth: { type: 'static_bearer', token: TOKEN, mcp_server_url: ext.mcpUrl } });
    const { agent, env } = await agentWithServer(client, ext.mcpUrl);
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: [vault.id] });
    same(session.vault_ids, [vault.id], 'session.vault_ids');
    const events = await turn(client, session.id, 'Who am I?');
    const res = events.find((e) => e.type === 'agent.mcp_tool_result');
    check(res && !res.is_error && JSON.stringify(res.content).includes('you are authorized'), `the tool ran with the token: ${events.map((e) => e.type)}`);
    check(ext.st.seen.length > 0 && ext.st.seen.every((s) => s.auth === `Bearer ${TOKEN}`), 'every MCP request carried the vault\'s token');
    const reqs = await mock.requests();
    check(!JSON.stringify(reqs).includes(TOKEN), 'the model never sees the token');
  });

  await vcase('injection: no matching credential: mcp_authentication_failed_error naming the server, never a secret', TOOL_TURN, async ({ client, ext, secrets, found }) => {
    const OTHER = 'other-server-tok-Rr4';
    secrets.push(OTHER);
    const vault = await client.beta.vaults.create({ display_name: 'elsewhere' });
    found.push(vault.id);
    await client.beta.vaults.credentials.create(vault.id, { auth: { type: 'static_bearer', token: OTHER, mcp_server_url: 'http://127.0.0.1:1/other' } });
    const { agent, env } = await agentWithServer(client, ext.mcpUrl);
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: [vault.id] });
    const events = await turn(client, session.id, 'Who am I?');
    const err = events.find((e) => e.type === 'session.error');
    check(err, `a session.error: ${events.map((e) => e.type)}`);
    same(err.error.type, 'mcp_authentication_failed_error', 'its type');
    same(err.error.mcp_server_name, 'secure', 'it names the server');
    check(/secure/.test(err.error.message) && /no credential/.test(err.error.message), `the message: ${err.error.message}`);
    check(ext.st.seen.every((s) => s.auth === ''), 'no token was sent to the server');
  });

  await vcase('injection: an OAuth token refused (401) is refreshed at the token endpoint, stored, and used', TOOL_TURN, async ({ client, ext, secrets, found }) => {
    const STALE = 'stale-access-Kd02', REFRESH = 'first-refresh-Nn61', CSECRET = 'basic-secret-Ao19';
    secrets.push(STALE, REFRESH, CSECRET, 'fresh-access-1-Qz8', 'rotated-refresh-1-Wq3');
    ext.st.refresh = REFRESH;
    ext.st.basic = `cli-9:${CSECRET}`;
    const vault = await client.beta.vaults.create({ display_name: 'oauth' });
    found.push(vault.id);
    const cred = await client.beta.vaults.credentials.create(vault.id, {
      auth: { type: 'mcp_oauth', access_token: STALE, mcp_server_url: ext.mcpUrl, expires_at: '2099-01-01T00:00:00Z',
        refresh: { client_id: 'cli-9', refresh_token: REFRESH, token_endpoint: ext.tokenUrl,
          token_endpoint_auth: { type: 'client_secret_basic', client_secret: CSECRET } } } });
    const { agent, env } = await agentWithServer(client, ext.mcpUrl);
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: [vault.id] });
    const events = await turn(client, session.id, 'Who am I?');
    const res = events.find((e) => e.type === 'agent.mcp_tool_result');
    check(res && !res.is_error, `the tool ran after the refresh: ${events.map((e) => e.type + (e.error ? `(${e.error.message})` : ''))}`);
    check(ext.st.seen.some((s) => s.auth === `Bearer ${STALE}`), 'the stale token was tried first');
    check(ext.st.seen.some((s) => s.auth === 'Bearer fresh-access-1-Qz8'), 'then the refreshed one');
    same(ext.st.tokenRequests.length, 1, 'one refresh');
    same(ext.st.tokenRequests[0].auth, `Basic ${Buffer.from(`cli-9:${CSECRET}`).toString('base64')}`, 'client_secret_basic');
    const after = await client.beta.vaults.credentials.retrieve(cred.id, { vault_id: vault.id });
    check(after.auth.expires_at !== '2099-01-01T00:00:00Z' && typeof after.auth.expires_at === 'string', `expires_at renewed: ${after.auth.expires_at}`);
    // the rotated refresh token was stored: a validate refreshes again with it
    const val = await client.beta.vaults.credentials.mcpOAuthValidate(cred.id, { vault_id: vault.id });
    same(val.status, 'valid', 'validate with the stored, rotated refresh token');
    same(ext.st.tokenRequests[1] && ext.st.tokenRequests[1].form.refresh_token, 'rotated-refresh-1-Wq3', 'the rotated refresh token was kept');
    secrets.push('fresh-access-2-Qz8', 'rotated-refresh-2-Wq3');
    // a refresh that fails ends the turn with the server named and no secret
    ext.st.refresh = 'nothing-matches';
    ext.st.accept.clear();
    await client.beta.sessions.delete(session.id);
    const s2 = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: [vault.id] });
    const ev2 = await turn(client, s2.id, 'Again?');
    const err = ev2.find((e) => e.type === 'session.error');
    check(err && err.error.type === 'mcp_authentication_failed_error' && err.error.mcp_server_name === 'secure',
      `a failed refresh: ${JSON.stringify(err && err.error)}`);
    check(err && /refused the refresh|cannot be used/.test(err.error.message), `the message says why: ${err && err.error.message}`);
  });

  await vcase('injection: an expired OAuth token is refreshed before use (the server never sees it)', TOOL_TURN, async ({ client, ext, secrets, found }) => {
    const OLD = 'expired-access-Gg31', REFRESH = 'post-refresh-Gg32', CSECRET = 'post-secret-Gg33';
    secrets.push(OLD, REFRESH, CSECRET, 'fresh-access-1-Qz8', 'rotated-refresh-1-Wq3');
    ext.st.refresh = REFRESH;
    ext.st.accept.add(OLD); // it would still be taken: only the expiry makes hull refresh
    const vault = await client.beta.vaults.create({ display_name: 'expired' });
    found.push(vault.id);
    await client.beta.vaults.credentials.create(vault.id, {
      auth: { type: 'mcp_oauth', access_token: OLD, mcp_server_url: ext.mcpUrl, expires_at: '2020-01-01T00:00:00Z',
        refresh: { client_id: 'cli-p', refresh_token: REFRESH, token_endpoint: ext.tokenUrl,
          token_endpoint_auth: { type: 'client_secret_post', client_secret: CSECRET } } } });
    const { agent, env } = await agentWithServer(client, ext.mcpUrl);
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: [vault.id] });
    const events = await turn(client, session.id, 'Who am I?');
    check(events.some((e) => e.type === 'agent.mcp_tool_result' && !e.is_error), `the tool ran: ${events.map((e) => e.type)}`);
    same(ext.st.tokenRequests.length, 1, 'refreshed once, before the first connection');
    same([ext.st.tokenRequests[0].form.client_id, ext.st.tokenRequests[0].form.client_secret], ['cli-p', CSECRET], 'client_secret_post');
    check(ext.st.seen.length > 0 && ext.st.seen.every((x) => x.auth === 'Bearer fresh-access-1-Qz8'), 'the expired token was never sent');
  });

  await vcase('key rotation without downtime: rotate-key while serving, old secrets still open, rekey, the old key dropped', NOSCRIPT, async ({ srv, client, secrets, found }) => {
    // run without blocking this process (as in webhooks.test.js: a keep-alive connection to hull
    // serve idle through slow synchronous runs, which hull serve cuts after 10 s, is taken unnoticed)
    const { execFile } = require('node:child_process');
    const hull = async (...args) => (await require('node:util').promisify(execFile)(process.env.HULL,
      ['vault', ...args, '--home', srv.home], { encoding: 'utf8' })).stdout;
    const vault = await client.beta.vaults.create({ display_name: 'rotation' });
    found.push(vault.id);
    const ids = [];
    for (let i = 0; i < 3; i++) {
      secrets.push(`rot-token-${i}-Hh5`);
      ids.push((await client.beta.vaults.credentials.create(vault.id, { auth: { type: 'static_bearer', token: `rot-token-${i}-Hh5`, mcp_server_url: `http://127.0.0.1:1/r${i}` } })).id);
    }
    const keyFile = path.join(srv.home, 'vault.key');
    same(fs.statSync(keyFile).mode & 0o777, 0o600, 'vault.key is 0600');
    const before = fs.readFileSync(keyFile, 'utf8').trim().split('\n');
    same(before.length, 1, 'one key at first');
    const out = await hull('rotate-key');
    check(/^new key [0-9a-f]{16} first in /.test(out), `rotate-key: ${out}`);
    const after = fs.readFileSync(keyFile, 'utf8').trim().split('\n');
    same([after.length, after[1]], [2, before[0]], 'the new key first, the old one kept');
    check(!out.includes(after[0]) && !out.includes(before[0]), 'no key printed');
    // the running server seals with the new key and still opens the old envelopes
    const up = await client.beta.vaults.credentials.update(ids[0], { vault_id: vault.id, display_name: 'resealed' });
    same(up.display_name, 'resealed', 'an old credential updated (opened with the old key, sealed with the new)');
    secrets.push('rot-token-new-Hh5');
    await client.beta.vaults.credentials.create(vault.id, { auth: { type: 'static_bearer', token: 'rot-token-new-Hh5', mcp_server_url: 'http://127.0.0.1:1/rn' } });
    const rk = await hull('rekey');
    same(rk.trim(), '2 credentials sealed again with the current key', 'rekey seals the two left on the old key');
    same((await hull('rekey')).trim(), '0 credentials sealed again with the current key', 'then none');
    fs.writeFileSync(keyFile, `${after[0]}\n`, { mode: 0o600 });
    for (const id of ids) {
      const u = await client.beta.vaults.credentials.update(id, { vault_id: vault.id, metadata: { checked: 'yes' } });
      same(u.metadata, { checked: 'yes' }, `${id} opens with the new key alone`);
    }
  });

  done();
}

main().catch((e) => {
  console.log(`not ok - ${TAG}: ${e.stack || e}`);
  process.exit(1);
});
