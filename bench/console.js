// bench/console.js: the web console's first load and a 5,000-event session's opening, in Debian's
// Chromium driven by puppeteer-core, against a real hull serve (bench/console.sh runs it; see
// docs/BENCHMARKS.md). Prints one line per measurement.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const puppeteer = require('puppeteer-core');
const { startMock } = require('../tests/conformance/lib.js');
const { startServe, sleep, v1Headers } = require('../tests/conformance/cma-lib.js');

const LOADS = Number(process.env.LOADS || 10);
const TURNS = Number(process.env.TURNS || 21);
const PARTS = (process.env.PARTS || 'load session').split(/\s+/);
const CALLS = 120; // tool calls per turn (AGENT_MAX_TOOL_CALLS_DEFAULT is 200)

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor((s.length - 1) / 2)]; };
const max = (a) => Math.max(...a);

async function main() {
  const steps = [];
  for (let t = 0; t < TURNS; t++) {
    steps.push({ tool_calls: Array.from({ length: CALLS }, (_, i) => ({ name: 'glob', input: { pattern: `*${i}` } })) });
    steps.push({ text: `turn ${t + 1} done.` });
  }
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-bench-console-'));
  const mock = await startMock({ steps });
  const srv = await startServe(mock.url, { home });
  const browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'], protocolTimeout: 600000 });
  const api = async (method, p, body) => (await fetch(`${srv.url}${p}`, { method, headers: v1Headers(), body: body && JSON.stringify(body) })).json();
  try {
    // ---- first load: a fresh profile each time (nothing cached), the sessions list as the view ----
    const bytes = [], tti = [], assets = [], scriptMs = [], crit = [], filesIn = [], apiSent = [], apiIn = [];
    for (let i = 0; i < (PARTS.includes('load') ? LOADS : 0); i++) {
      const ctx = await browser.createBrowserContext();
      const page = await ctx.newPage();
      const cdp = await page.createCDPSession();
      await cdp.send('Network.enable');
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
      let total = 0, files = 0;
      cdp.on('Network.loadingFinished', (e) => { total += e.encodedDataLength; files++; });
      await page.goto(srv.url, { waitUntil: 'load' });
      await page.waitForFunction(() => performance.getEntriesByName('hull-console-ready').length > 0);
      const t = await page.evaluate(() => performance.getEntriesByName('hull-console-ready')[0].startTime);
      // the critical path: what came in before the mark (index.html is the navigation, not a resource)
      const cp = await page.evaluate(() => {
        const mark = performance.getEntriesByName('hull-console-ready')[0].startTime;
        const r = performance.getEntriesByType('resource').filter((e) => e.responseEnd <= mark);
        const files = r.filter((e) => e.name.includes('/console/')), apis = r.filter((e) => e.name.includes('/v1/'));
        return { n: r.length + 1, files: Math.max(0, ...files.map((e) => e.responseEnd)),
          sent: apis.length ? Math.min(...apis.map((e) => e.startTime)) : 0, api: Math.max(0, ...apis.map((e) => e.responseEnd)) };
      });
      crit.push(cp.n); filesIn.push(cp.files); apiSent.push(cp.sent); apiIn.push(cp.api);
      await sleep(200);
      const m = await page.metrics();
      bytes.push(total);
      tti.push(t);
      assets.push(files);
      scriptMs.push(m.ScriptDuration * 1000);
      await ctx.close();
    }
    if (PARTS.includes('load')) console.log(`first load: ${LOADS} loads, transferred ${(median(bytes) / 1024).toFixed(1)} KiB (median, headers and the API's answers included; max ${(max(bytes) / 1024).toFixed(1)}), ${median(assets)} requests, interactive at ${median(tti).toFixed(0)} ms (median; max ${max(tti).toFixed(0)}), script ${median(scriptMs).toFixed(0)} ms`);
    if (PARTS.includes('load')) console.log(`first load, before interactive (medians): ${median(crit)} requests, the console's files in at ${median(filesIn).toFixed(0)} ms, the /v1 requests sent at ${median(apiSent).toFixed(0)} ms and answered at ${median(apiIn).toFixed(0)} ms`);

    // ---- a session of about 5,000 events ----
    if (!PARTS.includes('session')) return;
    const agent = await api('POST', '/v1/agents', { name: 'bench', model: 'claude-sonnet-4-6',
      tools: [{ type: 'agent_toolset_20260401', default_config: { enabled: false }, configs: [{ name: 'glob', enabled: true }] }] });
    const env = await api('POST', '/v1/environments', { name: 'bench', config: { type: 'cloud', networking: { type: 'unrestricted' } } });
    const s = await api('POST', '/v1/sessions', { agent: agent.id, environment_id: env.id });
    const t0 = Date.now();
    for (let t = 0; t < TURNS; t++) {
      await api('POST', `/v1/sessions/${s.id}/events`, { events: [{ type: 'user.message', content: [{ type: 'text', text: `turn ${t + 1}` }] }] });
      for (;;) {
        await sleep(200);
        const cur = await api('GET', `/v1/sessions/${s.id}`);
        if (cur.status === 'idle') break;
      }
    }
    let n = 0, page = null;
    for (let p = null; ;) {
      const d = await api('GET', `/v1/sessions/${s.id}/events?limit=1000${p ? `&page=${encodeURIComponent(p)}` : ''}`);
      n += d.data.length;
      p = d.next_page;
      if (!p) break;
    }
    console.log(`5,000-event session: ${n} events made in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const opens = [], longest = [], scrolls = [];
    for (let i = 0; i < 3; i++) {
      const ctx = await browser.createBrowserContext();
      page = await ctx.newPage();
      await page.setViewport({ width: 1100, height: 800 });
      await page.evaluateOnNewDocument(() => {
        window.__long = [];
        new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask', buffered: true });
      });
      const start = Date.now();
      await page.goto(`${srv.url}/#/sessions/${s.id}`, { waitUntil: 'load' });
      await page.waitForFunction((k) => window.hullConsole && window.hullConsole.model.events.length >= k && document.querySelectorAll('.events .item').length > 0, { timeout: 120000, polling: 50 }, n);
      opens.push(Date.now() - start);
      // scroll: to the top, show 10 pages of earlier events, back down
      const sc = await page.evaluate(async () => {
        const t = performance.now();
        for (let k = 0; k < 10; k++) {
          window.scrollTo(0, 0);
          const b = document.querySelector('button.more');
          if (b && !b.hidden) b.click();
          await new Promise((r) => requestAnimationFrame(() => r()));
        }
        window.scrollTo(0, document.documentElement.scrollHeight);
        await new Promise((r) => requestAnimationFrame(() => r()));
        return performance.now() - t;
      });
      scrolls.push(sc);
      longest.push(await page.evaluate(() => (window.__long.length ? Math.max(...window.__long) : 0)));
      const drawn = await page.evaluate(() => document.querySelectorAll('.events > li').length);
      if (i === 0) console.log(`5,000-event session: ${drawn} list items drawn after 10 "show earlier" pages`);
      await ctx.close();
    }
    console.log(`5,000-event session: open (every event in, the list drawn) ${median(opens)} ms (median of 3; max ${max(opens)}), longest main-thread task ${median(longest).toFixed(0)} ms (median), 10 pages of earlier events + scroll ${median(scrolls).toFixed(0)} ms`);
  } finally {
    await browser.close();
    await srv.stop();
    await mock.stop();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e); process.exitCode = 1; });
