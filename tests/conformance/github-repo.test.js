// github-repo.test.js: a session's github_repository resources driven by the official
// `@anthropic-ai/sdk`: a local git smart-HTTP server (git-http-server.py: Debian's git
// http-backend behind a bearer token, on loopback, admitted by config.json's web.allow_cidrs) serves
// a repository; the session clones it at create (its commit frozen: a later push is not seen), the
// agent's bash reads a file of the clone read-only at its mount path; resources.add clones a branch,
// update rotates the token, delete removes the copy; a bad URL, a refused address, an unreachable
// server and a wrong token are clear 400s; the token is never in an answer, the model's requests,
// the log or any file below HULL_HOME. CMA_SDK names the SDK module (default @anthropic-ai/sdk).
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, keyCreate, Reader, toolResults, MODEL } = require('./cma-lib.js');
const { spawn, execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const TAG = `github-repo[sdk ${SDK_VERSION}]`;
const TOKEN = `ghp_${crypto.randomBytes(16).toString('hex')}`;

function git(cwd, ...args) {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

// A bare repository root/repo.git with a main branch (README) and a branch "feature" (FEATURE).
function makeRepo(root) {
  git(root, 'init', '-q', '--bare', '-b', 'main', 'repo.git');
  const w = path.join(root, 'w');
  git(root, 'clone', '-q', 'repo.git', w);
  fs.writeFileSync(path.join(w, 'README'), 'the repo word is obsidian\n');
  git(w, 'add', 'README');
  git(w, 'commit', '-qm', 'one');
  git(w, 'push', '-q', 'origin', 'main');
  git(w, 'checkout', '-qb', 'feature');
  fs.writeFileSync(path.join(w, 'FEATURE'), 'on the feature branch\n');
  git(w, 'add', 'FEATURE');
  git(w, 'commit', '-qm', 'feature');
  git(w, 'push', '-q', 'origin', 'feature');
  git(w, 'checkout', '-q', 'main');
  return w;
}

async function gitServer(root) {
  const proc = spawn('python3', [path.join(__dirname, 'git-http-server.py'), root, TOKEN], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let buf = '';
    proc.stdout.on('data', (d) => { buf += d; const m = /port=(\d+)/.exec(buf); if (m) resolve(m[1]); });
    proc.on('exit', (c) => reject(new Error(`git-http-server.py exited ${c}`)));
  });
  return { url: `http://127.0.0.1:${port}`, stop: () => proc.kill() };
}

// Every file below dir holding s.
function filesHolding(dir, s) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && fs.readFileSync(p).includes(s)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

// the checkout is the agent's, in its workspace: read, written, a git repository at the frozen
// commit, owned by the sandbox's user, its .git/config without the token
const READ = 'cat /workspace/repo/README; ls -a /workspace/repo; echo mine > /workspace/repo/NEW && cat /workspace/repo/NEW; ' +
  '[ -O /workspace/repo/README ] && [ -O /workspace/repo/.git/HEAD ] && echo OWNED; ' +
  'echo "HEAD=$(git -C /workspace/repo log -1 --format=%H)"; echo CONFIG; cat /workspace/repo/.git/config';
const script = {
  then: 'error',
  steps: [
    { tool_calls: [{ name: 'bash', input: { command: READ }, id: 'toolu_repo1' }] },
    { text: 'Read it.' },
    { tool_calls: [{ name: 'bash', input: { command: 'cat /mnt/session/feat/FEATURE; ls -a /mnt/session/feat; (echo x > /mnt/session/feat/FEATURE) 2>&1 | grep -q Read-only && echo READ-ONLY; ' +
      'cat /workspace/work/feat/FEATURE /workspace/repo/NEW; git -C /workspace/work/feat status --short; echo END' }, id: 'toolu_repo2' }] },
    { text: 'Read the branch.' },
  ],
};

async function main() {
  await test(`${TAG}: clone with a bearer token, frozen, read by the agent; errors; the token nowhere`, script, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-repo-home-'));
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-repo-git-'));
    fs.writeFileSync(path.join(home, 'config.json'), JSON.stringify({ web: { allow_cidrs: ['127.0.0.0/8', '::1/128'] } }));
    const answers = [];
    const keep = async (url, init) => {
      const res = await fetch(url, init);
      if (!(res.headers.get('content-type') || '').includes('event-stream')) answers.push(await res.clone().text());
      return res;
    };
    let srv = null;
    let gs = null;
    try {
      const w = makeRepo(root);
      gs = await gitServer(root);
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home });
      const client = new Anthropic({ baseURL: srv.url, apiKey: key, fetch: keep, timeout: 120000, maxRetries: 0 });
      const agent = await client.beta.agents.create({
        name: 'repo', model: MODEL, tools: [{ type: 'agent_toolset_20260401', default_config: { enabled: false },
          configs: [{ name: 'bash', enabled: true, permission_policy: { type: 'always_allow' } }] }],
      });
      const env = await client.beta.environments.create({ name: 'repo', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
      const url = `${gs.url}/repo.git`;
      const first = git(w, 'rev-parse', 'HEAD').trim();

      // errors: each a clear 400, no session made
      const bad = [
        [{ type: 'github_repository', url: 'ftp://example.com/r.git', authorization_token: TOKEN }, /https:\/\//],
        [{ type: 'github_repository', url: 'http://169.254.169.254/r.git', authorization_token: TOKEN }, /refused/],
        [{ type: 'github_repository', url: 'http://127.0.0.1:1/r.git', authorization_token: TOKEN }, /cloning .* failed/],
        [{ type: 'github_repository', url, authorization_token: 'ghp_wrong' }, /cloning .* failed.*check authorization_token/],
        [{ type: 'github_repository', url, authorization_token: TOKEN, checkout: { type: 'branch', name: 'nope' } }, /cloning .* failed.*nope/],
        [{ type: 'github_repository', url, authorization_token: TOKEN, mount_path: '/etc/x' }, /mount_path/],
        [{ type: 'github_repository', url, authorization_token: TOKEN, mount_path: '/workspace/a/../b' }, /mount_path.*plain path/],
        [{ type: 'github_repository', url, authorization_token: TOKEN, mount_path: '/workspace/' }, /mount_path/],
        [{ type: 'github_repository', url, authorization_token: TOKEN, mount_path: '/workspace/r/' }, /mount_path.*ends with/],
        [{ type: 'github_repository', url, authorization_token: TOKEN, mount_path: '/workspace/a\u0001b' }, /mount_path.*control/],
        [{ type: 'github_repository', url, authorization_token: TOKEN, checkout: { type: 'tag', name: 'v1' } }, /checkout/],
      ];
      for (const [res, why] of bad) {
        const e = await rejects(client.beta.sessions.create({ agent: agent.id, environment_id: env.id, resources: [res] }),
          sdk.BadRequestError, `create with ${JSON.stringify(res).slice(0, 120)}`);
        check(why.test(e.error.error.message), `${JSON.stringify(res).slice(0, 100)}: message ${e.error.error.message}`);
      }
      same((await client.beta.sessions.list()).data.length, 0, 'no session was made by the refused creates');

      const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id,
        resources: [{ type: 'github_repository', url, authorization_token: TOKEN }] });
      const r0 = session.resources[0];
      check(/^sesrsc_/.test(r0.id), `resource id ${r0.id}`);
      same([r0.type, r0.url, r0.mount_path, r0.checkout_sha], ['github_repository', url, '/workspace/repo', first],
        'the resource: default mount path, the commit frozen');
      check(!('authorization_token' in r0), 'the resource shows no token');
      // a push after the clone is not seen: the commit is frozen
      fs.writeFileSync(path.join(w, 'README'), 'changed later\n');
      git(w, 'commit', '-qam', 'two');
      git(w, 'push', '-q', 'origin', 'main');

      const reader = new Reader(await client.beta.sessions.events.stream(session.id));
      await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'Read the repo.' }] }] });
      await reader.idle();
      let reqs = await mock.requests();
      const out1 = toolResults(reqs[1].body)[0];
      check(out1 && /the repo word is obsidian/.test(out1.text), `the agent read the clone: ${JSON.stringify(out1)}`);
      check(/\.git/.test(out1.text) && /\bmine\b/.test(out1.text) && /OWNED/.test(out1.text),
        `writable, with its .git, the sandbox user's: ${JSON.stringify(out1.text)}`);
      check(out1.text.includes(`HEAD=${first}`), `git log shows the frozen commit ${first}: ${JSON.stringify(out1.text)}`);
      const config = out1.text.slice(out1.text.indexOf('CONFIG'));
      check(/\[remote "origin"\]/.test(config) && !config.includes(TOKEN) && !/extraheader|Bearer/i.test(config),
        `.git/config has the remote, no token: ${JSON.stringify(config)}`);

      // resources.add: a branch at a relative mount path; update rotates the token; delete
      // by host name: the guard's addresses pinned for git (http.curloptResolve)
      const byName = url.replace('127.0.0.1', 'localhost');
      const added = await client.beta.sessions.resources.add(session.id,
        { type: 'github_repository', url: byName, authorization_token: TOKEN, checkout: { type: 'branch', name: 'feature' }, mount_path: '/mnt/session/feat' });
      same([added.mount_path, added.checkout], ['/mnt/session/feat', { type: 'branch', name: 'feature' }], 'resources.add of a branch');
      const inWs = await client.beta.sessions.resources.add(session.id,
        { type: 'github_repository', url: byName, authorization_token: TOKEN, checkout: { type: 'branch', name: 'feature' }, mount_path: 'work/feat' });
      same(inWs.mount_path, '/workspace/work/feat', 'a relative mount path is below /workspace/');
      const upd = await client.beta.sessions.resources.update(added.id, { session_id: session.id, authorization_token: `${TOKEN}-2` });
      same([upd.id, 'authorization_token' in upd], [added.id, false], 'update rotates the token, shows none');
      await rejects(client.beta.sessions.resources.add(session.id, { type: 'github_repository', url, authorization_token: TOKEN }),
        sdk.ConflictError, 'a second clone at the same mount path');
      await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'The branch.' }] }] });
      await reader.idle();
      reqs = await mock.requests();
      const out2 = toolResults(reqs[reqs.length - 1].body).pop();
      check(/on the feature branch/.test(out2.text) && /READ-ONLY/.test(out2.text) && /\.git/.test(out2.text),
        `the added branch clone, read-only below /mnt/session/: ${JSON.stringify(out2.text)}`);
      check(/on the feature branch[^]*on the feature branch\s+mine\s+END/.test(out2.text),
        `one added below /workspace/ reached the open sandbox, clean, the agent's file kept: ${JSON.stringify(out2.text)}`);
      const events = [];
      for await (const ev of client.beta.sessions.events.list(session.id)) events.push(ev);
      reader.close();
      same(await client.beta.sessions.resources.delete(added.id, { session_id: session.id }),
        { id: added.id, type: 'session_resource_deleted' }, 'resources.delete');
      check(!fs.existsSync(path.join(home, 'mnt', session.id, 'session', 'feat')), 'the deleted clone is gone');

      // the token: in no answer, model request, event, log line or file below HULL_HOME
      check(!answers.join('\n').includes(TOKEN), 'no answer holds the token');
      check(!JSON.stringify(reqs).includes(TOKEN), 'no model request holds the token');
      check(!JSON.stringify(events).includes(TOKEN), 'no event holds the token');
      check(!srv.log().includes(TOKEN), 'the log does not hold the token');
      same(filesHolding(home, TOKEN), [], 'no file below HULL_HOME holds the token');
      check(fs.readdirSync(path.join(home, 'mnt', '.repos')).some((f) => f.endsWith('.token')), 'the token is kept sealed');
      same(await client.beta.sessions.delete(session.id), { id: session.id, type: 'session_deleted' }, 'sessions.delete');
      same(fs.readdirSync(path.join(home, 'mnt', '.repos')), [], 'a deleted session leaves no clone or token behind');
    } catch (e) {
      if (srv) e.message += ` | hull serve log: ${srv.log().split('\n').filter((l) => /level=(error|warn)/.test(l)).slice(-3).join(' / ')}`;
      throw e;
    } finally {
      if (srv) await srv.stop(true);
      if (gs) gs.stop();
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
  // Without the operator's web.allow_cidrs, a loopback repository is refused before any clone.
  await test(`${TAG}: a loopback URL refused by the egress guard unless the operator admits it`, { steps: [{ text: 'unused' }] }, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-repo-home-'));
    let srv = null;
    try {
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home });
      const client = new Anthropic({ baseURL: srv.url, apiKey: key, timeout: 120000, maxRetries: 0 });
      const agent = await client.beta.agents.create({ name: 'repo', model: MODEL });
      const env = await client.beta.environments.create({ name: 'repo', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
      const e = await rejects(client.beta.sessions.create({ agent: agent.id, environment_id: env.id,
        resources: [{ type: 'github_repository', url: 'http://127.0.0.1:9/r.git', authorization_token: TOKEN }] }),
      sdk.BadRequestError, 'a loopback repository without web.allow_cidrs');
      check(/refused.*web\.allow_cidrs/.test(e.error.error.message), `the message names the remedy: ${e.error.error.message}`);
      check(!fs.existsSync(path.join(home, 'mnt', '.repos')) || fs.readdirSync(path.join(home, 'mnt', '.repos')).length === 0, 'no clone kept');
    } finally {
      if (srv) await srv.stop(true);
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
    }
  });
  done();
}

main();
