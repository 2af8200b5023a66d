// cma-memory.test.js: memory stores on hull serve's /v1 (the agent-memory-2026-07-22 beta) driven
// by the official `@anthropic-ai/sdk`, unchanged: every route of stores, memories and memory
// versions (with the SDK's own pagination helpers), preconditions and path conflicts, redaction,
// hostile paths and sizes; then stores attached to sessions whose agent (a `hull mock-model`
// script) writes and reads them with its own tools: one session writes, the next reads, a
// read-only attachment refuses, links planted in the mount are never followed, and a write that
// lost to another writer is not saved.
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, keyCreate, toolResults, Reader, MODEL } = require('./cma-lib.js');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const TAG = `cma-memory[sdk ${SDK_VERSION}]`;
const sha = (s) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');

function cma(name, script, fn) {
  return test(`${TAG}: ${name}`, script, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-cma-home-'));
    let srv = null;
    try {
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home });
      const client = new Anthropic({ baseURL: srv.url, apiKey: key, timeout: 120000, maxRetries: 0 });
      await fn({ mock, srv, key, client });
    } catch (e) {
      if (srv) e.message += ` | hull serve log: ${srv.log().split('\n').filter((l) => /level=(error|warn)/.test(l)).slice(-3).join(' / ')}`;
      throw e;
    } finally {
      if (srv) await srv.stop(true);
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
    }
  });
}

function errType(e) {
  return e.type || (e.error && e.error.error && e.error.error.type);
}

async function all(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

const TOOLS = [{
  type: 'agent_toolset_20260401', default_config: { enabled: false },
  configs: ['bash', 'read', 'write'].map((name) => ({ name, enabled: true, permission_policy: { type: 'always_allow' } })),
}];

// A session of an agent with bash, read and write and these resources; a turn with text, waited
// for until the session is idle again; the turn's tool results.
async function sessionWith(client, resources) {
  const agent = await client.beta.agents.create({ name: 'memory', model: MODEL, system: 'You remember.', tools: TOOLS });
  const env = await client.beta.environments.create({ name: 'memory', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
  return client.beta.sessions.create({ agent: agent.id, environment_id: env.id, resources });
}

async function turn(client, session, text) {
  const stream = await client.beta.sessions.events.stream(session.id);
  const reader = new Reader(stream);
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
  const evs = await reader.idle();
  reader.close();
  return evs.filter((e) => e.type === 'agent.tool_result');
}

function resultText(ev) {
  return (ev.content || []).map((b) => b.text || '').join('');
}

async function main() {
  await cma('stores: create, retrieve, update, list (SDK pagination), archive, delete', { steps: [{ text: 'unused' }] }, async ({ client }) => {
    const made = [];
    for (let i = 0; i < 5; i++)
      made.push(await client.beta.memoryStores.create({ name: `Store ${i}`, description: i ? `about ${i}` : undefined, metadata: { n: String(i) } }));
    const s0 = made[0];
    same([s0.type, /^memstore_/.test(s0.id), s0.name, s0.description, s0.metadata, s0.archived_at], ['memory_store', true, 'Store 0', '', { n: '0' }, null], 'the created store');
    same((await client.beta.memoryStores.retrieve(s0.id)).name, 'Store 0', 'retrieve');
    const up = await client.beta.memoryStores.update(s0.id, { name: 'Renamed', description: 'now described', metadata: { n: null, k: 'v' } });
    same([up.name, up.description, up.metadata], ['Renamed', 'now described', { k: 'v' }], 'update: name, description, metadata patch');
    const mine = (xs) => xs.filter((s) => made.some((m) => m.id === s.id)); // (a shared database: HULL_DB)
    const listed = mine(await all(client.beta.memoryStores.list({ limit: 2 })));
    same(listed.length, 5, 'the SDK pages through 5 stores 2 at a time');
    same(new Set(listed.map((s) => s.id)).size, 5, 'each store once');
    const page = await client.beta.memoryStores.list({ limit: 2 });
    check(page.data.length === 2 && page.hasNextPage(), 'a first page of 2 with a next page');
    const arch = await client.beta.memoryStores.archive(made[1].id);
    check(typeof arch.archived_at === 'string', 'archive sets archived_at');
    same(mine(await all(client.beta.memoryStores.list())).length, 4, 'archived stores are not listed');
    same(mine(await all(client.beta.memoryStores.list({ include_archived: true }))).length, 5, '... unless include_archived');
    const e = await rejects(client.beta.memoryStores.memories.create(made[1].id, { path: '/x.md', content: 'x' }), Anthropic.BadRequestError, 'a write to an archived store');
    check(/archived/.test(e.message), `says archived: ${e.message}`);
    const del = await client.beta.memoryStores.delete(made[2].id);
    same([del.id, del.type], [made[2].id, 'memory_store_deleted'], 'delete');
    await rejects(client.beta.memoryStores.retrieve(made[2].id), Anthropic.NotFoundError, 'a deleted store');
    await rejects(client.beta.memoryStores.create({ name: '' }), Anthropic.BadRequestError, 'an empty name');
    await rejects(client.beta.memoryStores.create({ name: 'x', bogus: 1 }), Anthropic.BadRequestError, 'an unknown field');
  });

  await cma('memories: create, retrieve, update with preconditions, list with depth and pages, delete; versions and redact', { steps: [{ text: 'unused' }] }, async ({ client }) => {
    const ms = client.beta.memoryStores;
    const store = await ms.create({ name: 'Notes' });
    const a = await ms.memories.create(store.id, { path: '/projects/a.md', content: 'alpha' });
    same([a.type, a.path, a.content, a.content_sha256, a.content_size_bytes, a.memory_store_id], ['memory', '/projects/a.md', null, sha('alpha'), 5, store.id], 'create answers the basic view');
    await ms.memories.create(store.id, { path: '/projects/deep/b.md', content: 'beta' });
    await ms.memories.create(store.id, { path: '/top.md', content: '' });
    const full = await ms.memories.retrieve(a.id, { memory_store_id: store.id });
    same(full.content, 'alpha', 'retrieve answers the full view');
    // update with the right precondition, then with a stale one
    const b = await ms.memories.update(a.id, { memory_store_id: store.id, content: 'alpha 2', precondition: { type: 'content_sha256', content_sha256: sha('alpha') } });
    same([b.content_sha256, b.id], [sha('alpha 2'), a.id], 'update with the current sha');
    const stale = await rejects(ms.memories.update(a.id, { memory_store_id: store.id, content: 'alpha 3', precondition: { type: 'content_sha256', content_sha256: sha('alpha') } }), Anthropic.ConflictError, 'a stale precondition');
    same(errType(stale), 'memory_precondition_failed_error', 'its error type');
    same((await ms.memories.retrieve(a.id, { memory_store_id: store.id })).content, 'alpha 2', 'nothing written by the stale update');
    const same2 = await ms.memories.update(a.id, { memory_store_id: store.id, content: 'alpha 2', precondition: { type: 'content_sha256', content_sha256: sha('alpha') } });
    same(same2.content_sha256, sha('alpha 2'), 'a stale precondition asking for what is there already: 200');
    const clash = await rejects(ms.memories.create(store.id, { path: '/top.md', content: 'again' }), Anthropic.ConflictError, 'a path taken');
    same(errType(clash), 'memory_path_conflict_error', 'its error type');
    const renamed = await ms.memories.update(a.id, { memory_store_id: store.id, path: '/projects/a2.md' });
    same([renamed.id, renamed.path], [a.id, '/projects/a2.md'], 'a rename keeps the id');
    // list: recursive, depth 1, prefix, pages of 1
    same((await all(ms.memories.list(store.id))).map((m) => m.path), ['/projects/a2.md', '/projects/deep/b.md', '/top.md'], 'recursive list in path order');
    same((await all(ms.memories.list(store.id, { depth: 1 }))).map((m) => [m.type, m.path]), [['memory_prefix', '/projects/'], ['memory', '/top.md']], 'depth 1 rolls up');
    same((await all(ms.memories.list(store.id, { path_prefix: '/projects/', depth: 1 }))).map((m) => [m.type, m.path]), [['memory', '/projects/a2.md'], ['memory_prefix', '/projects/deep/']], 'a prefix and depth 1');
    same((await all(ms.memories.list(store.id, { limit: 1 }))).length, 3, 'the SDK pages through memories one at a time');
    same((await ms.memories.list(store.id, { view: 'full', limit: 1000 })).data[0].content, 'alpha 2', 'view=full (its limit clamped)');
    // versions: created, modified, modified (rename), newest first
    const vers = await all(ms.memoryVersions.list(store.id, { memory_id: a.id, limit: 1 }));
    same(vers.map((v) => v.operation), ['modified', 'modified', 'created'], 'every change a version, newest first');
    same(vers[2].content, null, 'list answers the basic view');
    const v0 = await ms.memoryVersions.retrieve(vers[2].id, { memory_store_id: store.id });
    same([v0.content, v0.path, v0.created_by && v0.created_by.type], ['alpha', '/projects/a.md', 'api_actor'], 'a version keeps what it was');
    const red = await ms.memoryVersions.redact(vers[2].id, { memory_store_id: store.id });
    check(typeof red.redacted_at === 'string' && red.content === null && red.path === null && red.content_sha256 === null, `redacted: ${JSON.stringify(red)}`);
    const red2 = await ms.memoryVersions.retrieve(vers[2].id, { memory_store_id: store.id });
    same([red2.id, red2.operation, red2.content, red2.redacted_by && red2.redacted_by.type], [vers[2].id, 'created', null, 'api_actor'], 'a redacted version: 200, its record kept, its content gone');
    const cur = await rejects(ms.memoryVersions.redact(vers[0].id, { memory_store_id: store.id }), Anthropic.ConflictError, 'redacting the current version');
    check(/current/.test(cur.message), `says why: ${cur.message}`);
    // delete with a stale and the right sha
    await rejects(ms.memories.delete(a.id, { memory_store_id: store.id, expected_content_sha256: sha('nope') }), Anthropic.ConflictError, 'delete with a stale sha');
    const del = await ms.memories.delete(a.id, { memory_store_id: store.id, expected_content_sha256: sha('alpha 2') });
    same([del.id, del.type], [a.id, 'memory_deleted'], 'delete');
    await rejects(ms.memories.retrieve(a.id, { memory_store_id: store.id }), Anthropic.NotFoundError, 'a deleted memory');
    same((await all(ms.memoryVersions.list(store.id, { memory_id: a.id }))).map((v) => v.operation), ['deleted', 'modified', 'modified', 'created'], 'a delete is a version too');
    same((await all(ms.memoryVersions.list(store.id, { operation: 'created' }))).length, 3, 'versions filtered by operation');
  });

  await cma('hostile input: traversal, absolute and NUL paths, oversize content: clear 4xx, nothing stored', { steps: [{ text: 'unused' }] }, async ({ client }) => {
    const ms = client.beta.memoryStores;
    const store = await ms.create({ name: 'Hostile' });
    for (const p of ['../etc/passwd', '/a/../../etc/passwd', '/a/./b', 'relative.md', '//x', '/a//b', '/x\u0000y', '/', '/a/\u202eb', '/tab\there', `/${'x'.repeat(1100)}`]) {
      const e = await rejects(ms.memories.create(store.id, { path: p, content: 'x' }), Anthropic.BadRequestError, `path ${JSON.stringify(p).slice(0, 40)}`);
      check(/path|\\u0000/.test(e.message), `the message says what is wrong: ${e.message}`);
    }
    const big = await rejects(ms.memories.create(store.id, { path: '/big.md', content: 'x'.repeat(102401) }), Anthropic.APIError, 'content over 100 KiB');
    same(big.status, 413, 'oversize content: 413');
    check(/102400/.test(big.message), `says the bound: ${big.message}`);
    await ms.memories.create(store.id, { path: '/ok.md', content: 'x'.repeat(102400) });
    same((await all(ms.memories.list(store.id))).map((m) => m.path), ['/ok.md'], 'only the good one stored');
    same((await all(ms.memoryVersions.list(store.id))).length, 1, 'one version');
    await rejects(ms.memories.list(store.id, { path_prefix: '/no-slash' }), Anthropic.BadRequestError, 'a prefix without a trailing /');
    await rejects(ms.memories.list(store.id, { page: 'zz' }), Anthropic.BadRequestError, 'a forged cursor');
    await rejects(ms.memories.retrieve('mem_nope', { memory_store_id: store.id }), Anthropic.NotFoundError, 'an unknown memory');
    await rejects(ms.retrieve('memstore_nope'), Anthropic.NotFoundError, 'an unknown store');
  });

  const WRITE_THEN_READ = {
    then: 'error',
    steps: [
      { tool_calls: [{ name: 'write', input: { file_path: '/mnt/memory/prefs/colors.md', content: 'favourite: blue\n' }, id: 'toolu_w1' }] },
      { text: 'Noted.' },
      { tool_calls: [{ name: 'read', input: { file_path: '/mnt/memory/prefs/colors.md' }, id: 'toolu_r1' }] },
      { text: 'Blue.' },
    ],
  };
  await cma('sessions: a store the agent writes in one session and reads in the next', WRITE_THEN_READ, async ({ mock, client }) => {
    const ms = client.beta.memoryStores;
    const store = await ms.create({ name: 'Prefs', description: 'The user\'s preferences' });
    const s1 = await sessionWith(client, [{ type: 'memory_store', memory_store_id: store.id, instructions: 'Keep colors here.' }]);
    const r = s1.resources.find((x) => x.type === 'memory_store');
    same([r.memory_store_id, r.access, r.name, r.description, r.mount_path, r.instructions], [store.id, 'read_write', 'Prefs', 'The user\'s preferences', '/mnt/memory/prefs', 'Keep colors here.'], 'the resource as the session echoes it');
    const t1 = await turn(client, s1, 'Remember that I like blue.');
    check(t1.length === 1 && !t1[0].is_error, `the write ran: ${JSON.stringify(t1)}`);
    const mems = await all(ms.memories.list(store.id, { view: 'full', limit: 20 }));
    same(mems.map((m) => [m.path, m.content]), [['/colors.md', 'favourite: blue\n']], 'the write became a memory');
    const v = (await ms.memoryVersions.list(store.id, { session_id: s1.id })).data;
    same(v.map((x) => [x.operation, x.created_by && x.created_by.type, x.created_by && x.created_by.session_id]), [['created', 'session_actor', s1.id]], 'a version made by the session');
    const s2 = await sessionWith(client, [{ type: 'memory_store', memory_store_id: store.id, access: 'read_only' }]);
    const t2 = await turn(client, s2, 'What color do I like?');
    check(t2.length === 1 && resultText(t2[0]).includes('favourite: blue'), `the next session read it: ${JSON.stringify(t2)}`);
    const reqs = await mock.requests();
    check(JSON.stringify(reqs[0].body.system || '').includes('/mnt/memory/prefs'), 'the system prompt names the mount');
    same((await all(client.beta.sessions.list({ memory_store_id: store.id }))).map((x) => x.id).sort(), [s1.id, s2.id].sort(), 'sessions listed by their store');
    const other = await ms.create({ name: 'Unattached' });
    same((await all(client.beta.sessions.list({ memory_store_id: other.id }))).length, 0, 'none for a store no session has');
    const tr = toolResults(reqs[3].body);
    check(tr.length === 1 && tr[0].text.includes('favourite: blue'), 'the model got the memory');
  });

  const READ_ONLY = {
    then: 'error',
    steps: [
      { tool_calls: [{ name: 'bash', input: { command: 'echo changed > /mnt/memory/ro/a.md; echo new > /mnt/memory/ro/b.md; ls -l /mnt/memory/ro' }, id: 'toolu_b1' }] },
      { text: 'Tried.' },
    ],
  };
  await cma('sessions: a read-only attachment refuses writes', READ_ONLY, async ({ client }) => {
    const ms = client.beta.memoryStores;
    const store = await ms.create({ name: 'RO' });
    await ms.memories.create(store.id, { path: '/a.md', content: 'original' });
    const s = await sessionWith(client, [{ type: 'memory_store', memory_store_id: store.id, access: 'read_only' }]);
    const t = await turn(client, s, 'Change it.');
    check(t.length === 1, `one tool result: ${JSON.stringify(t)}`);
    const text = t.length ? resultText(t[0]) : '';
    check(/Permission denied|read-only/.test(text), `the agent is told the store is read-only: ${text.slice(-400)}`);
    same((await all(ms.memories.list(store.id, { view: 'full', limit: 20 }))).map((m) => [m.path, m.content]), [['/a.md', 'original']], 'the store is unchanged');
    same((await all(ms.memoryVersions.list(store.id))).length, 1, 'no new version');
  });

  const PLANTED = {
    then: 'error',
    steps: [
      { tool_calls: [{ name: 'bash', input: { command: 'cd /mnt/memory/trap && ln -s /etc/passwd passwd.md && ln -s / root && mkfifo pipe.md && echo fine > real.md && ls -la' }, id: 'toolu_b1' }] },
      { text: 'Done.' },
    ],
  };
  await cma('sessions: links and special files planted in a mounted store are never followed', PLANTED, async ({ client }) => {
    const ms = client.beta.memoryStores;
    const store = await ms.create({ name: 'Trap' });
    const s = await sessionWith(client, [{ type: 'memory_store', memory_store_id: store.id }]);
    const t = await turn(client, s, 'Plant things.');
    const text = t.length ? resultText(t[0]) : '';
    check(/passwd\.md: a symbolic link/.test(text), `the link is reported, not followed: ${text.slice(-600)}`);
    check(/pipe\.md: not a regular file/.test(text), `the fifo is reported: ${text.slice(-600)}`);
    const mems = await all(ms.memories.list(store.id, { view: 'full', limit: 20 }));
    same(mems.map((m) => [m.path, m.content]), [['/real.md', 'fine\n']], 'only the regular file became a memory');
    check(!mems.some((m) => /root:/.test(m.content || '')), 'nothing of the host');
  });

  const RACE = {
    then: 'error',
    steps: [
      { tool_calls: [{ name: 'bash', input: { command: 'cat /mnt/memory/shared/n.md' }, id: 'toolu_b1' }] },
      { text: 'Read.' },
      { tool_calls: [{ name: 'write', input: { file_path: '/mnt/memory/shared/n.md', content: 'from session B' }, id: 'toolu_w0' }] },
      { text: 'B wrote.' },
      { tool_calls: [{ name: 'write', input: { file_path: '/mnt/memory/shared/n.md', content: 'from session A' }, id: 'toolu_w1' }] },
      { text: 'A wrote.' },
      { tool_calls: [{ name: 'bash', input: { command: "cat /mnt/memory/shared/n.md && touch \"/mnt/memory/shared/$(printf 'bad\\tname.md')\"" }, id: 'toolu_b2' }] },
      { text: 'Looked.' },
    ],
  };
  await cma('sessions: two sessions share a store: the write that lost the race is not saved (409), the winner kept', RACE, async ({ client }) => {
    const ms = client.beta.memoryStores;
    const store = await ms.create({ name: 'Shared' });
    const m = await ms.memories.create(store.id, { path: '/n.md', content: 'first' });
    const a = await sessionWith(client, [{ type: 'memory_store', memory_store_id: store.id }]);
    const b = await sessionWith(client, [{ type: 'memory_store', memory_store_id: store.id }]);
    await turn(client, a, 'Read it.'); // A's sandbox has "first"
    const tb = await turn(client, b, 'Write it.');
    check(tb.length === 1 && /\[memory\] saved \/mnt\/memory\/shared\/n\.md/.test(resultText(tb[0])), `B's write saved: ${JSON.stringify(tb)}`);
    const t = await turn(client, a, 'Write it.');
    const text = t.length ? resultText(t[0]) : '';
    check(/not saved: \/mnt\/memory\/shared\/n\.md: changed meanwhile by another writer/.test(text), `A is told: ${text.slice(-400)}`);
    same((await ms.memories.retrieve(m.id, { memory_store_id: store.id })).content, 'from session B', 'the winner kept');
    same((await all(ms.memoryVersions.list(store.id))).map((v) => v.created_by.session_id || 'api'), [b.id, 'api'], 'no version from the loser');
    const t2 = await turn(client, a, 'Look.');
    const text2 = t2.length ? resultText(t2[0]) : '';
    check(/^from session B/.test(text2), `A's file holds the winner's version again: ${text2.slice(0, 200)}`);
    check(/not saved: \/mnt\/memory\/shared\/bad\tname\.md: path: must not hold a control/.test(text2), `a name a memory cannot have is refused: ${text2.slice(-300)}`);
    same((await all(ms.memories.list(store.id))).map((x) => x.path), ['/n.md'], 'nothing else stored');
  });

  done();
}

main();
