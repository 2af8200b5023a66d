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
const { startServe, keyCreate } = require('./cma-lib.js');
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
  done();
}

main();
