// files.test.js: hull serve's /v1/files and a session's resources driven by the official
// `@anthropic-ai/sdk`, unchanged: uploads with the SDK's toFile (text and binary), metadata, the
// list walked with the SDK's own pagination (for await, getNextPage) and its ids[] filter, the
// bytes downloaded back equal, delete and the 404 after it; and hostile uploads (over --file-max,
// malformed multipart, no file part, not multipart) refused with a clear 4xx, nothing kept and no
// stray file left on disk. CMA_SDK names the SDK module (default @anthropic-ai/sdk).
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const toFile = sdk.toFile;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, keyCreate, Reader, toolResults, MODEL } = require('./cma-lib.js');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const TAG = `files[sdk ${SDK_VERSION}]`;
const FILES_BETA = 'files-api-2025-04-14';
const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');

// One case: a fresh hull serve (its own HULL_HOME, a key) and an SDK client; fn({srv, client, key}).
function files(name, fn, opts = {}) {
  return test(`${TAG}: ${name}`, opts.script || { steps: [{ text: 'unused' }] }, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-files-home-'));
    let srv = null;
    try {
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home, args: opts.args || [] });
      const client = new Anthropic({ baseURL: srv.url, apiKey: key, timeout: 120000, maxRetries: 0 });
      await fn({ srv, client, key, home, mock });
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

function checkEnvelope(e, status, what) {
  same(e.status, status, `${what}: status`);
  const env = e.error;
  check(env && env.type === 'error' && typeof env.error.message === 'string' && env.error.message.length > 0,
    `${what}: envelope ${JSON.stringify(env)}`);
}

// Files on disk below home that are not a finished blob (an upload's or a copy's leftovers).
function strays(home) {
  const out = [];
  for (const d of ['blobs', 'hull.db-blobs']) {
    const dir = path.join(home, d);
    if (!fs.existsSync(dir)) continue;
    for (const f of fs.readdirSync(dir)) if (!/^[0-9a-f]{64}$/.test(f)) out.push(`${d}/${f}`);
  }
  return out;
}

async function main() {
  await files('upload, metadata, list with the SDK pagination, download, delete', async ({ client, home }) => {
    const text = Buffer.from('hello from the files conformance test\n');
    const bin = crypto.randomBytes(3 * 1024 * 1024 + 17);
    const a = await client.beta.files.upload({ file: await toFile(text, 'hello.txt', { type: 'text/plain' }) });
    check(/^file_/.test(a.id), `upload: id ${a.id}`);
    same([a.type, a.filename, a.mime_type, a.size_bytes], ['file', 'hello.txt', 'text/plain', text.length], 'upload: fields');
    check(typeof a.created_at === 'string' && !Number.isNaN(Date.parse(a.created_at)), `upload: created_at ${a.created_at}`);
    const b = await client.beta.files.upload({ file: await toFile(bin, 'data.bin') });
    same(b.size_bytes, bin.length, 'binary upload: size_bytes');
    const c = await client.beta.files.upload({ file: await toFile(text, 'same-bytes.txt') });
    same((await client.beta.files.retrieveMetadata(a.id)).filename, 'hello.txt', 'retrieveMetadata');

    // every file once, newest first, through the SDK's auto-pagination over pages of 1
    const seen = [];
    for await (const f of client.beta.files.list({ limit: 1 })) seen.push(f.id);
    same(seen, [c.id, b.id, a.id], 'list: for await over limit=1 pages');
    const page = await client.beta.files.list({ limit: 2 });
    same(page.data.map((f) => f.id), [c.id, b.id], 'list: first page');
    check(page.hasNextPage(), 'list: a next page');
    const next = await page.getNextPage();
    same(next.data.map((f) => f.id), [a.id], 'list: getNextPage');
    check(!next.hasNextPage(), 'list: no page after the last');
    const byIds = await client.beta.files.list({ ids: [a.id, 'file_nope'] });
    same(byIds.data.map((f) => f.id), [a.id], 'list: ids[] (an unknown id left out)');

    const got = Buffer.from(await (await client.beta.files.download(b.id)).arrayBuffer());
    same(sha(got), sha(bin), 'download: the binary bytes');
    same(await (await client.beta.files.download(a.id)).text(), text.toString(), 'download: the text');

    // two files of one blob: deleting one keeps the other's bytes
    same(await client.beta.files.delete(a.id), { id: a.id, type: 'file_deleted' }, 'delete');
    same(await (await client.beta.files.download(c.id)).text(), text.toString(), 'download after the twin went');
    const e = await rejects(client.beta.files.retrieveMetadata(a.id), sdk.NotFoundError, 'retrieve a deleted file');
    checkEnvelope(e, 404, 'retrieve a deleted file');
    await rejects(client.beta.files.download(a.id), sdk.NotFoundError, 'download a deleted file');
    await rejects(client.beta.files.delete(a.id), sdk.NotFoundError, 'delete twice');
    await client.beta.files.delete(b.id);
    await client.beta.files.delete(c.id);
    same((await client.beta.files.list()).data, [], 'list: empty at the end');
    same(strays(home), [], 'no stray file on disk');
    const left = fs.readdirSync(path.join(home, 'hull.db-blobs'));
    same(left, [], 'the last file of some bytes takes them along');
  });

  await files('hostile uploads: too large, malformed, no file part, not multipart', async ({ srv, client, key, home }) => {
    const big = crypto.randomBytes(2 * 1024 * 1024);
    const e = await rejects(client.beta.files.upload({ file: await toFile(big, 'big.bin') }), sdk.APIError, 'over --file-max');
    checkEnvelope(e, 413, 'over --file-max');
    check(/--file-max/.test(e.error.error.message), `over --file-max: message names the option: ${e.error.error.message}`);
    const h = { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'anthropic-beta': FILES_BETA };
    const post = (ct, body) => fetch(`${srv.url}/v1/files`, { method: 'POST', headers: { ...h, 'content-type': ct }, body });
    const cases = [
      ['multipart/form-data; boundary=XX', '--XX\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nno closing boundary', /closing boundary/],
      ['multipart/form-data; boundary=XX', '--XX\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nx\r\n--XX--\r\n', /no part named 'file'/],
      ['multipart/form-data; boundary=XX', '--XX\r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n--XX--\r\n', /no filename/],
      ['multipart/form-data; boundary=XX', '--XX\r\nno colon\r\n\r\nx\r\n--XX--\r\n', /malformed/],
      ['application/json', '{"file": "x"}', /multipart\/form-data/],
      ['multipart/form-data', '--XX--', /boundary/],
    ];
    for (const [ct, body, why] of cases) {
      const res = await post(ct, body);
      const j = await res.json();
      same(res.status, 400, `${JSON.stringify(body).slice(0, 40)}: status`);
      check(why.test(j.error.message), `${JSON.stringify(body).slice(0, 40)}: message ${j.error.message}`);
    }
    const noVersion = await fetch(`${srv.url}/v1/files`, { headers: { 'x-api-key': key } });
    same(noVersion.status, 400, 'a request without anthropic-version');
    same((await client.beta.files.list()).data, [], 'nothing was kept');
    same(strays(home), [], 'no stray file on disk');
    // the daemon goes on serving
    const ok = await client.beta.files.upload({ file: await toFile(Buffer.from('fine'), 'ok.txt') });
    same(ok.size_bytes, 4, 'an upload within the bound after the refusals');
  }, { args: ['--file-max', '1M'] });

  // The agent's bash reads the file mounted at its mount path, cannot write there, and sees a
  // file added after the sandbox was made, and not one deleted.
  const READ = 'cat /mnt/session/uploads/data/notes.txt; echo; cat /mnt/session/extra.txt; echo; ' +
    'ls /mnt/session/uploads/; (echo x > /mnt/session/uploads/data/notes.txt) 2>&1 | grep -q Read-only && echo READ-ONLY';
  const script = {
    then: 'error',
    steps: [
      { tool_calls: [{ name: 'bash', input: { command: READ }, id: 'toolu_read1' }] },
      { text: 'Read it.' },
      { tool_calls: [{ name: 'bash', input: { command: 'ls /mnt/session/uploads/ /mnt/session/; cat /mnt/session/extra.txt' }, id: 'toolu_read2' }] },
      { text: 'Looked again.' },
    ],
  };
  await files('a session with file resources: the agent reads them, read-only; resources routes', async ({ client, mock, home }) => {
    const notes = await client.beta.files.upload({ file: await toFile(Buffer.from('the secret word is quartz'), 'notes.txt') });
    const extra = await client.beta.files.upload({ file: await toFile(Buffer.from('added later'), 'extra.txt') });
    const other = await client.beta.files.upload({ file: await toFile(Buffer.from('default path'), 'o.txt') });
    const agent = await client.beta.agents.create({
      name: 'files', model: MODEL, tools: [{ type: 'agent_toolset_20260401', default_config: { enabled: false },
        configs: [{ name: 'bash', enabled: true, permission_policy: { type: 'always_allow' } }] }],
    });
    const env = await client.beta.environments.create({ name: 'files', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id,
      resources: [{ type: 'file', file_id: notes.id, mount_path: 'data/notes.txt' }, { type: 'file', file_id: other.id }] });
    same(session.resources.length, 2, 'session.resources');
    const [r0, r1] = session.resources;
    check(/^sesrsc_/.test(r0.id), `resource id ${r0.id}`);
    same([r0.type, r0.file_id, r0.mount_path], ['file', notes.id, '/mnt/session/uploads/data/notes.txt'], 'a relative mount_path');
    same(r1.mount_path, `/mnt/session/uploads/${other.id}`, 'the default mount_path');

    // hostile mount paths and unknown files: 4xx, nothing added
    for (const mp of ['../../etc/passwd', '/etc/passwd', '/mnt/session/../x', '/mnt/session/a\u0000b', '/workspace/x', 'a//b', 'dir/']) {
      const e = await rejects(client.beta.sessions.resources.add(session.id, { type: 'file', file_id: extra.id, mount_path: mp }),
        sdk.BadRequestError, `mount_path ${JSON.stringify(mp)}`);
      check(/mount_path|u0000/.test(e.error.error.message), `mount_path ${JSON.stringify(mp)}: ${e.error.error.message}`);
    }
    await rejects(client.beta.sessions.resources.add(session.id, { type: 'file', file_id: 'file_nope' }), sdk.NotFoundError, 'an unknown file');
    await rejects(client.beta.sessions.resources.add(session.id, { type: 'file', file_id: extra.id, mount_path: 'data/notes.txt' }),
      sdk.ConflictError, 'a mount path taken');
    check(!fs.existsSync('/etc/passwd.part') && !fs.existsSync(path.join(home, 'etc')), 'nothing written outside');

    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'Read the notes.' }] }] });
    // added while the session runs its first turn or after: placed in its directory either way
    const added = await client.beta.sessions.resources.add(session.id, { type: 'file', file_id: extra.id, mount_path: '/mnt/session/extra.txt' });
    same([added.type, added.mount_path], ['file', '/mnt/session/extra.txt'], 'resources.add');
    await reader.idle();
    let reqs = await mock.requests();
    const first = toolResults(reqs[1].body)[0];
    check(first && /the secret word is quartz/.test(first.text), `the agent read the file: ${JSON.stringify(first)}`);
    check(/READ-ONLY/.test(first.text), `the mount is read-only: ${JSON.stringify(first.text)}`);
    check(first.text.includes(other.id), `the default path is there: ${JSON.stringify(first.text)}`);

    same((await client.beta.sessions.resources.retrieve(added.id, { session_id: session.id })).file_id, extra.id, 'resources.retrieve');
    const all = [];
    for await (const r of client.beta.sessions.resources.list(session.id, { limit: 1 })) all.push(r.id);
    same(all, [r0.id, r1.id, added.id], 'resources.list over pages of 1');
    await rejects(client.beta.sessions.resources.update(added.id, { session_id: session.id, authorization_token: 'ghp_x' }),
      sdk.BadRequestError, 'update of a file resource');
    same(await client.beta.sessions.resources.delete(r1.id, { session_id: session.id }), { id: r1.id, type: 'session_resource_deleted' }, 'resources.delete');
    await rejects(client.beta.sessions.resources.retrieve(r1.id, { session_id: session.id }), sdk.NotFoundError, 'a deleted resource');
    same((await client.beta.sessions.retrieve(session.id)).resources.map((r) => r.id), [r0.id, added.id], 'session.resources after');

    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'Again.' }] }] });
    await reader.idle();
    reader.close();
    reqs = await mock.requests();
    const second = toolResults(reqs[reqs.length - 1].body).pop();
    check(/added later/.test(second.text), `the file added at runtime shows in the sandbox: ${JSON.stringify(second.text)}`);
    check(!second.text.includes(other.id), `the deleted resource is gone from the sandbox: ${JSON.stringify(second.text)}`);
    await client.beta.sessions.archive(session.id);
    await rejects(client.beta.sessions.resources.add(session.id, { type: 'file', file_id: other.id }), sdk.BadRequestError,
      'an archived session takes no new resource');
  }, { script });
  done();
}

main();
