// cma-skills.test.js: hull serve's /v1/skills driven by the official `@anthropic-ai/sdk`, unchanged:
// every skills route (create from files with their paths and from one zip, retrieve, list and its
// auto-pagination, delete; versions create, list, retrieve, delete; a version's content as a zip),
// hostile uploads refused with a clear 4xx and nothing kept (a zip bomb, "../" and absolute entries,
// a symlink entry, an oversized upload, no SKILL.md, a bad front matter), and an agent with a skill
// whose session's model (hull mock-model, scripted) reads /skills/<dir>/SKILL.md with bash, sees its
// body, finds the folder read-only, and had the skill named in its system prompt.
// CMA_SDK names the SDK module (default @anthropic-ai/sdk; anthropic-sdk-0129 is 0.129.0).
'use strict';
const SDK = process.env.CMA_SDK || '@anthropic-ai/sdk';
const sdk = require(SDK);
const Anthropic = sdk.Anthropic || sdk.default;
const toFile = sdk.toFile || Anthropic.toFile;
const SDK_VERSION = require(`${SDK}/version`).VERSION;
const { test, check, same, rejects, done } = require('./lib.js');
const { startServe, Reader, keyCreate, toolResults, MODEL } = require('./cma-lib.js');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const TAG = `cma-skills[sdk ${SDK_VERSION}]`;
const CASE_S = 300;
const NO_MODEL = { steps: [{ text: 'unused' }] }; // the cases that reach no model
const MD = '---\nname: pdf-tools\ndescription: Fill PDF forms with the bundled script.\n---\n# PDF tools\nThe secret word is PELICAN.\n';

function cma(name, script, fn) {
  return test(`${TAG}: ${name}`, script, async (mock) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-skills-home-'));
    let srv = null;
    let timer;
    try {
      const key = keyCreate(home);
      srv = await startServe(mock.url, { home });
      const client = new Anthropic({ baseURL: srv.url, apiKey: key, timeout: 120000, maxRetries: 0 });
      await Promise.race([
        fn({ mock, srv, key, client }),
        new Promise((_, reject) => {
          timer = setTimeout(() => { reject(new Error(`the case took over ${CASE_S} s`)); srv.kill(); }, CASE_S * 1000);
        }),
      ]);
    } catch (e) {
      if (srv) e.message += ` | hull serve log: ${srv.log().split('\n').filter((l) => /level=(error|warn)/.test(l)).slice(-3).join(' / ')}`;
      throw e;
    } finally {
      clearTimeout(timer);
      if (srv) await srv.stop(true);
      fs.rmSync(home, { recursive: true, force: true });
      fs.rmSync(`${home}.serve.log`, { force: true });
    }
  });
}

// A zip made by Python's zipfile: entries [name, text | {zeros: n} | {symlink: target}].
function zip(entries) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-skills-zip-'));
  const out = path.join(dir, 'a.zip');
  const py = `
import json, sys, zipfile
es = json.loads(sys.argv[2])
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    for name, body in es:
        if isinstance(body, dict) and 'zeros' in body:
            z.writestr(name, bytes(body['zeros']))
        elif isinstance(body, dict) and 'symlink' in body:
            i = zipfile.ZipInfo(name); i.create_system = 3; i.external_attr = (0o120777 << 16)
            z.writestr(i, body['symlink'])
        else:
            z.writestr(name, body)
`;
  execFileSync('python3', ['-c', py, out, JSON.stringify(entries)]);
  const b = fs.readFileSync(out);
  fs.rmSync(dir, { recursive: true, force: true });
  return b;
}

const filesOf = async (list) => Promise.all(list.map(([name, text]) => toFile(Buffer.from(text), name)));

async function listAll(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

// A raw GET of the server with the client's key.
async function rawGet(srv, key, p) {
  return fetch(`${srv.url}${p}`, { headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' } });
}

async function main() {
  if (!toFile || !(new Anthropic({ apiKey: 'x' })).beta.skills) {
    console.log(`skip - ${TAG}: this SDK has no client.beta.skills`);
    return;
  }

  await cma('every route: create from files and from a zip, retrieve, list pages, versions, content, delete', NO_MODEL,
    async ({ srv, key, client }) => {
      const a = await client.beta.skills.create({ files: await filesOf([['pdf/SKILL.md', MD], ['pdf/scripts/fill.py', 'print("filled")\n']]) });
      check(/^skill_/.test(a.id), `skill id ${a.id}`);
      same([a.type, a.display_name], ['skill', 'pdf-tools'], 'create from files: type, display_name from SKILL.md');
      check(typeof a.latest_version_id === 'string' && /^\d+$/.test(a.latest_version_id), `latest_version_id ${a.latest_version_id}`);
      same(a.source && (a.source.type || a.source), 'custom', 'source');
      const b = await client.beta.skills.create({ files: [await toFile(zip([['notes/SKILL.md', '---\nname: notes\ndescription: Take notes.\n---\nbody\n']]), 'notes.zip')], display_name: 'My notes' });
      same(b.display_name, 'My notes', 'create from a zip: display_name given');
      same((await client.beta.skills.retrieve(a.id)).id, a.id, 'retrieve');

      const page = await client.beta.skills.list({ limit: 1 });
      same(page.data.map((s) => s.id), [b.id], 'list limit 1: the newest first');
      check(page.hasNextPage(), 'list limit 1: a next page');
      same((await listAll(client.beta.skills.list({ limit: 1 }))).map((s) => s.id), [b.id, a.id], 'auto-pagination over pages of 1');

      const v2 = await client.beta.skills.versions.create(a.id, { files: await filesOf([['pdf/SKILL.md', MD.replace('PELICAN', 'HERON')]]) });
      same([v2.type, v2.skill_id, v2.name], ['skill_version', a.id, 'pdf-tools'], 'versions.create');
      check(/^\d+$/.test(v2.id) && BigInt(v2.id) > BigInt(a.latest_version_id), `a newer version id: ${v2.id} > ${a.latest_version_id}`);
      same(v2.description, 'Fill PDF forms with the bundled script.', 'version description from SKILL.md');
      same((await client.beta.skills.retrieve(a.id)).latest_version_id, v2.id, 'latest_version_id moved');
      const versions = await listAll(client.beta.skills.versions.list(a.id, { limit: 1 }));
      same(versions.map((v) => v.id), [v2.id, a.latest_version_id], 'versions auto-pagination, newest first');
      same((await client.beta.skills.versions.retrieve(v2.id, { skill_id: a.id })).id, v2.id, 'versions.retrieve');

      const res = await rawGet(srv, key, `/v1/skills/${a.id}/versions/${a.latest_version_id}/content`);
      same(res.status, 200, 'content: status');
      const body = Buffer.from(await res.arrayBuffer());
      same(body.subarray(0, 4).toString('latin1'), 'PK\x03\x04', 'content: a zip');
      const listing = execFileSync('python3', ['-c', 'import io,sys,zipfile; z=zipfile.ZipFile(io.BytesIO(sys.stdin.buffer.read())); print(sorted(z.namelist())); print(z.read("pdf/SKILL.md").decode())'], { input: body }).toString();
      check(listing.includes("['pdf/SKILL.md', 'pdf/scripts/fill.py']") && listing.includes('PELICAN'), `content: the files: ${listing}`);

      const del = await client.beta.skills.versions.delete(v2.id, { skill_id: a.id });
      same([del.id, del.type], [v2.id, 'skill_version_deleted'], 'versions.delete');
      same((await client.beta.skills.retrieve(a.id)).latest_version_id, a.latest_version_id, 'latest_version_id back to the one left');
      await rejects(client.beta.skills.versions.retrieve(v2.id, { skill_id: a.id }), Anthropic.NotFoundError, 'deleted version');
      const sd = await client.beta.skills.delete(a.id);
      same([sd.id, sd.type], [a.id, 'skill_deleted'], 'delete (with its versions)');
      await rejects(client.beta.skills.retrieve(a.id), Anthropic.NotFoundError, 'deleted skill');
      same((await listAll(client.beta.skills.list())).map((s) => s.id), [b.id], 'list after the delete');

      // the skills-2025-10-02 beta (sent as betas): its shapes, and versions deleted before the skill
      const betas = ['skills-2025-10-02'];
      const c = await client.beta.skills.create({ files: await filesOf([['c/SKILL.md', MD]]), betas });
      same([c.source, c.display_title, c.latest_version], ['custom', null, c.latest_version_id], 'beta shape: source, display_title, latest_version');
      const e = await rejects(client.beta.skills.delete(c.id, { betas }), Anthropic.BadRequestError, 'beta: delete with a version left');
      check(/delete its versions first/.test(e.message), `beta: says what to do: ${e.message}`);
      await client.beta.skills.versions.delete(c.latest_version, { skill_id: c.id, betas });
      same((await client.beta.skills.retrieve(c.id, { betas })).latest_version, null, 'beta: no version left');
      same((await client.beta.skills.delete(c.id, { betas })).type, 'skill_deleted', 'beta: then the skill goes');
    });

  await cma('hostile uploads: a clear 4xx each, nothing kept', NO_MODEL, async ({ client }) => {
    const cases = [
      ['a zip bomb', [await toFile(zip([['bomb/SKILL.md', MD], ['bomb/zeros', { zeros: 64 << 20 }]]), 'bomb.zip')], [400, 413], /zip bomb/],
      ['a ../ entry', [await toFile(zip([['x/SKILL.md', MD], ['../escape.sh', 'echo pwned']]), 'x.zip')], [400], /'\.\.'/],
      ['an absolute entry', [await toFile(zip([['x/SKILL.md', MD], ['/etc/cron.d/x', 'x']]), 'x.zip')], [400], /absolute|'\.\.'/],
      ['a symlink entry', [await toFile(zip([['x/SKILL.md', MD], ['x/passwd', { symlink: '/etc/passwd' }]]), 'x.zip')], [400], /links are not allowed/],
      ['a ../ file path', await filesOf([['x/SKILL.md', MD], ['x/../../evil', 'x']]), [400], /'\.\.'/],
      ['no SKILL.md', await filesOf([['x/README.md', 'hello']]), [400], /no SKILL\.md/],
      ['no front matter', await filesOf([['x/SKILL.md', '# just text']]), [400], /front matter/],
      ['two top directories', await filesOf([['x/SKILL.md', MD], ['y/other.txt', 'x']]), [400], /one top-level directory/],
      ['an oversized upload', [await toFile(Buffer.alloc(9 << 20, 7), 'big/SKILL.md')], [413], /./],
    ];
    for (const [what, files, statuses, msg] of cases) {
      const e = await rejects(client.beta.skills.create({ files }), Anthropic.APIError, what);
      check(statuses.includes(e.status), `${what}: status ${e.status}, want ${statuses}: ${e.message}`);
      check(msg.test(e.message), `${what}: the message says what was wrong: ${e.message}`);
    }
    same((await listAll(client.beta.skills.list())).length, 0, 'nothing was kept');
  });

  const READ = {
    then: 'error',
    steps: [
      { tool_calls: [{ name: 'bash', id: 'toolu_skill1', input: { command: 'cat /skills/pdf/SKILL.md; touch /skills/pdf/new 2>&1; echo "touch=$?"; ls /skills/pdf/scripts' } }] },
      { text: 'I read the skill.' },
    ],
  };
  await cma('an agent with a skill: named in the system prompt, its body read from /skills by the model, read-only', READ,
    async ({ mock, client }) => {
      const skill = await client.beta.skills.create({ files: await filesOf([['pdf/SKILL.md', MD], ['pdf/scripts/fill.py', 'print(1)\n']]) });
      const agent = await client.beta.agents.create({
        name: 'skilled', model: MODEL, system: 'You are the skills agent.',
        tools: [{ type: 'agent_toolset_20260401', default_config: { enabled: false }, configs: [{ name: 'bash', enabled: true }] }],
        skills: [{ type: 'custom', skill_id: skill.id }],
      });
      same(agent.skills.map((s) => s.skill_id), [skill.id], 'the agent keeps its skills');
      const env = await client.beta.environments.create({ name: 'skills', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
      const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
      const reader = new Reader(await client.beta.sessions.events.stream(session.id));
      await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'Use your PDF skill.' }] }] });
      const events = await reader.idle();
      reader.close();
      check(!events.some((e) => e.type === 'session.error'), `no session.error: ${JSON.stringify(events.filter((e) => e.type === 'session.error'))}`);
      const reqs = await mock.requests();
      same(reqs.length, 2, 'model requests');
      const sys = typeof reqs[0].body.system === 'string' ? reqs[0].body.system : JSON.stringify(reqs[0].body.system || '');
      check(sys.includes('You are the skills agent.'), 'the agent\'s own system prompt kept');
      check(sys.includes('<name>pdf-tools</name>') && sys.includes('Fill PDF forms with the bundled script.') &&
        sys.includes('/skills/pdf/SKILL.md'), `the skill named in the system prompt (name, description, location): ${sys.slice(-700)}`);
      check(!sys.includes('PELICAN'), 'the body is not in the prompt (loaded when the model reads it)');
      const tr = toolResults(reqs[1].body);
      const text = JSON.stringify(tr);
      check(tr.length === 1 && text.includes('The secret word is PELICAN.'), `the model read the skill's body: ${text.slice(0, 600)}`);
      check(/touch=[1-9]/.test(text) && /Read-only file system|Permission denied/.test(text), `the skill's folder is read-only: ${text.slice(0, 600)}`);
      check(text.includes('fill.py'), 'the skill\'s other files are there');
    });

  const MISSING = { then: 'error', steps: [{ text: 'never' }] };
  await cma('agents name skills hull has; a skill deleted later ends the turn with a session.error naming it', MISSING, async ({ client }) => {
    const bash = [{ type: 'agent_toolset_20260401', default_config: { enabled: false }, configs: [{ name: 'bash', enabled: true }] }];
    let e = await rejects(client.beta.agents.create({ name: 'x', model: MODEL, tools: bash, skills: [{ type: 'custom', skill_id: 'skill_doesnotexist' }] }),
      Anthropic.BadRequestError, 'an unknown skill');
    check(/skills\[0\]: .*skill_doesnotexist/.test(e.message), `names the skill: ${e.message}`);
    e = await rejects(client.beta.agents.create({ name: 'x', model: MODEL, tools: bash, skills: [{ type: 'anthropic', skill_id: 'xlsx' }] }),
      Anthropic.BadRequestError, 'an Anthropic skill');
    check(/no Anthropic-provided skills/.test(e.message), `says why: ${e.message}`);
    const skill = await client.beta.skills.create({ files: await filesOf([['gone/SKILL.md', MD]]) });
    e = await rejects(client.beta.agents.create({ name: 'x', model: MODEL, tools: bash, skills: [{ type: 'custom', skill_id: skill.id, version: '12345' }] }),
      Anthropic.BadRequestError, 'an unknown version');
    check(/12345/.test(e.message), `names the version: ${e.message}`);
    const agent = await client.beta.agents.create({ name: 'lost', model: MODEL, tools: bash, skills: [{ type: 'custom', skill_id: skill.id }] });
    await client.beta.skills.delete(skill.id);
    const env = await client.beta.environments.create({ name: 'skills', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const reader = new Reader(await client.beta.sessions.events.stream(session.id));
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] });
    const events = await reader.idle();
    reader.close();
    const err = events.find((ev) => ev.type === 'session.error');
    check(err && JSON.stringify(err).includes(skill.id), `a session.error naming the skill: ${JSON.stringify(err)}`);
  });
  done();
}

main().catch((e) => {
  console.log(`not ok - ${TAG}: ${e && e.stack}`);
  process.exitCode = 1;
});
