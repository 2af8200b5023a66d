// console-skills.test.js: the console's Skills page in a real Chromium (Debian's, puppeteer-core)
// against a real `hull serve`: a skill made over the API is listed with its name and latest
// version, its versions open with their description and /skills/<directory>/, a zip uploaded
// through the page becomes a skill, a bad one shows the server's message, a plant in a
// description is shown as text; no console error.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const puppeteer = require('puppeteer-core');
const { startMock } = require('./lib.js');
const { startServe, keyCreate } = require('./cma-lib.js');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const T = Number(process.env.CONSOLE_WAIT_MS || 60000);

function zipOf(dir, entries) {
  const out = path.join(dir, `${entries[0][0].split('/')[0]}.zip`);
  execFileSync('python3', ['-c', 'import json,sys,zipfile\nz=zipfile.ZipFile(sys.argv[1],"w")\nfor n,b in json.loads(sys.argv[2]): z.writestr(n,b)\nz.close()', out, JSON.stringify(entries)]);
  return out;
}

async function main() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-console-skills-'));
  let mock = null;
  let srv = null;
  let browser = null;
  let failures = 0;
  const errors = [];
  const step = async (name, fn) => {
    try {
      await fn();
      console.log(`ok - console skills: ${name}`);
    } catch (e) {
      failures++;
      console.log(`not ok - console skills: ${name}: ${String((e && e.stack) || e).split('\n').slice(0, 3).join(' | ')}`);
    }
  };
  const check = (cond, msg) => { if (!cond) throw new Error(msg); };
  try {
    mock = await startMock({ steps: [{ text: 'unused' }] });
    const key = keyCreate(home);
    srv = await startServe(mock.url, { home });
    const plant = '<img src=x onerror="window.__xss = 1">';
    const form = new FormData();
    form.append('files[]', new Blob([`---\nname: pdf-tools\ndescription: Fill PDF forms ${plant}\n---\nbody\n`]), 'pdf/SKILL.md');
    const made = await (await fetch(`${srv.url}/v1/skills`, { method: 'POST', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, body: form })).json();
    check(/^skill_/.test(made.id), `a skill over the API: ${JSON.stringify(made)}`);
    browser = await puppeteer.launch({
      executablePath: CHROMIUM, headless: true, protocolTimeout: 180000,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
    });
    const page = await browser.newPage();
    page.setDefaultTimeout(T);
    page.on('console', (m) => { if (m.type() === 'error' && !/status of 400/.test(m.text())) errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('dialog', (d) => d.accept());
    // signed in before the console's first script runs (the sign-in page has its own test)
    await page.evaluateOnNewDocument((k) => sessionStorage.setItem('hull.apiKey', k), key);
    const text = () => page.evaluate(() => document.body.innerText);

    await step('the Skills page lists the skill with its latest version', async () => {
      await page.goto(`${srv.url}/#/skills`, { waitUntil: 'load' });
      await page.waitForFunction((id) => document.body.innerText.includes(id), {}, made.id);
      const t = await text();
      check(t.includes('pdf-tools') && t.includes(made.latest_version_id), `name and version shown: ${t.slice(0, 400)}`);
    });
    await step('a skill\'s versions: description as text, where it lands', async () => {
      await page.click('details summary');
      await page.waitForFunction(() => document.body.innerText.includes('/skills/pdf/'));
      const t = await text();
      check(t.includes(`Fill PDF forms ${plant}`), 'the description, plant and all, as text');
      check(await page.evaluate(() => window.__xss === undefined), 'no plant ran');
    });
    await step('a zip uploaded through the page becomes a skill', async () => {
      const z = zipOf(home, [['notes/SKILL.md', '---\nname: notes\ndescription: Take notes.\n---\n']]);
      const input = await page.$('input[type=file]');
      await input.uploadFile(z);
      await page.click('form button[type=submit]');
      await page.waitForFunction(() => document.body.innerText.includes('notes ·'));
    });
    await step('a bad upload shows the server\'s message', async () => {
      const z = zipOf(home, [['bad/README.md', 'no skill here']]);
      const input = await page.$('input[type=file]');
      await input.uploadFile(z);
      await page.click('form button[type=submit]');
      await page.waitForFunction(() => /no SKILL\.md/.test(document.body.innerText));
    });
    await step('no console error', async () => check(errors.length === 0, `errors: ${errors.join(' / ')}`));
  } catch (e) {
    failures++;
    console.log(`not ok - console skills: ${String((e && e.stack) || e).split('\n').slice(0, 3).join(' | ')}`);
  } finally {
    if (browser) await browser.close().catch(() => {});
    if (srv) await srv.stop(true).catch(() => {});
    if (mock) await mock.stop().catch(() => {});
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(`${home}.serve.log`, { force: true });
  }
  process.exitCode = failures ? 1 : 0;
}

main();
