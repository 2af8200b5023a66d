// console.test.js: hull's web console in a real Chromium (Debian's /usr/bin/chromium, driven by
// puppeteer-core) against a real `hull serve` whose model is `hull mock-model`: sign in with a
// key, create an agent, start a session, send a message and watch the answer stream, a tool
// card, Allow an always_ask tool and Deny another, a custom tool's result typed in, interrupt a
// turn, reload and see the history, a dropped event stream resumed with nothing missing or
// doubled, a handle's table preview and a JSON handle's shape, the timeline, the run records' chain (and a tampered record shown broken), XSS plants in model
// text, tool output and a handle shown as text, the 390 px layout without horizontal scroll, and
// no console error. One "ok - console: STEP" line per step; after a failed step the rest are
// reported as not run (CONSOLE_KEEP_GOING=1 runs them anyway). CONSOLE_SCREENSHOTS=DIR saves the
// main views as PNG there; CONSOLE_WAIT_MS bounds each wait (60000).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const puppeteer = require('puppeteer-core');
const { startMock } = require('./lib.js');
const { startServe, keyCreate, sleep, v1Headers } = require('./cma-lib.js');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.CONSOLE_SCREENSHOTS || '';
const T = Number(process.env.CONSOLE_WAIT_MS || 60000); // a wait, at most (generous: a shared 2-core machine)

const XSS_TEXT = '<script>window.__xss = 1</script>';
const XSS_IMG = '<img src=x onerror="window.__xss = 2">';
const SCRIPT = {
  steps: [
    // turn 1: a tool card, then the answer streamed in pieces with the plants
    { tool_calls: [{ name: 'glob', input: { pattern: '*' }, id: 'toolu_glob1' }] },
    { text: ['Hello ', 'from the ', 'mock: ', XSS_TEXT, ' and ', XSS_IMG, ' end of answer.'], event_delay_ms: 250 },
    // turn 2: bash asks; Allow; its output carries a plant
    { tool_calls: [{ name: 'bash', input: { command: "echo '<img src=y onerror=\"window.__xss = 3\">'" }, id: 'toolu_bash1' }] },
    { text: 'bash ran.' },
    // turn 3: bash asks; Deny
    { tool_calls: [{ name: 'bash', input: { command: 'echo never' }, id: 'toolu_bash2' }] },
    { text: 'denied, fine.' },
    // turn 4: a table handle whose cell is a plant
    { tool_calls: [{ name: 'run_python', id: 'toolu_py1', input: { code: "save('cities', [{'city': '<script>window.__xss = 4</script>', 'n': 1}, {'city': 'Oslo', 'n': 2}, {'city': 'Lima', 'n': 3}])\nsave('doc', {'items': [1, 2, 3], 'note': '<img src=z onerror=\"window.__xss = 5\">'})\nprint('saved')" } }] },
    { text: 'saved the table.' },
    // turn 5: a slow answer, interrupted
    { text: 'far too late', delay_ms: 120000 },
    // turn 6: while the stream is cut
    { text: ['written ', 'while ', 'the stream ', 'was down.'], delay_ms: 1500, event_delay_ms: 200 },
    // turn 7: a custom tool, its result typed in the page
    { tool_calls: [{ name: 'get_weather', input: { city: 'Oslo' }, id: 'toolu_custom1' }] },
    { text: 'The page said: {{last_tool_result}}' },
    // turn 8, in a session of a limited environment: a connection the proxy refuses (logged when
    // it ends: in this call's hull.network event or the next one's)
    { tool_calls: [{ name: 'run_python', id: 'toolu_net1', input: { code: "import socket\ns = socket.create_connection(('127.0.0.1', 3128))\ns.sendall(b'CONNECT blocked.invalid:443 HTTP/1.1\\r\\n\\r\\n')\nprint(s.recv(12).decode())" } }] },
    { tool_calls: [{ name: 'run_python', id: 'toolu_net2', input: { code: "print('again')" } }] },
    { text: 'network done.' },
  ],
};
const TOOLS = [
  { type: 'agent_toolset_20260401', default_config: { enabled: false },
    configs: [{ name: 'glob', enabled: true, permission_policy: { type: 'always_allow' } },
      { name: 'bash', enabled: true, permission_policy: { type: 'always_ask' } }] },
  { type: 'hull_toolset_20261201', default_config: { enabled: false },
    configs: [{ name: 'run_python', enabled: true, permission_policy: { type: 'always_allow' } }] },
  { type: 'custom', name: 'get_weather', description: 'The weather in a city.',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
];

let failed = null;
let failures = 0;
async function step(name, fn) {
  if (failed) {
    console.log(`not ok - console: ${name}: not run (after "${failed}" failed)`);
    failures++;
    return;
  }
  try {
    await fn();
    console.log(`ok - console: ${name}`);
  } catch (e) {
    failures++;
    if (!process.env.CONSOLE_KEEP_GOING) failed = name;
    const why = String((e && e.stack) || e).split('\n').slice(0, 3).join(' | ');
    console.log(`not ok - console: ${name}: ${why}`);
  }
}

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function main() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hull-console-home-'));
  let mock = null;
  let srv = null;
  let browser = null;
  const errors = [];
  let allowNet = null; // a pattern of network errors expected now
  try {
    mock = await startMock(SCRIPT);
    const key = keyCreate(home);
    srv = await startServe(mock.url, { home });
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
      protocolTimeout: 180000,
    });
    const page = await browser.newPage();
    page.setDefaultTimeout(T);
    await page.setViewport({ width: 1100, height: 800 });
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const text = m.text();
      if (allowNet && allowNet.test(text)) return;
      errors.push(text);
    });
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('dialog', (d) => d.accept());
    const shot = async (name) => {
      if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `console-${name}.png`) });
    };
    const text = () => page.evaluate(() => document.body.innerText);
    const api = async (method, p, body) => {
      const res = await fetch(`${srv.url}${p}`, { method, headers: { ...v1Headers(), 'x-api-key': key }, body: body && JSON.stringify(body) });
      return res.json();
    };
    const noHScroll = async (what) => {
      const w = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      check(w[0] <= w[1], `${what}: the page is ${w[0]} px wide in a ${w[1]} px window`);
    };
    let sessionId = null;

    await step('sign in with an API key (kept in session storage, never in the URL)', async () => {
      allowNet = /status of 401/; // the console's probe: does hull serve want a key?
      await page.goto(srv.url, { waitUntil: 'load' });
      await page.waitForSelector('input[type=password]');
      await page.type('input[type=password]', key);
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => location.hash.startsWith('#/sessions') && document.querySelector('h1') && document.querySelector('h1').textContent === 'Sessions');
      allowNet = null;
      const stored = await page.evaluate(() => sessionStorage.getItem('hull.apiKey'));
      check(stored === key, 'the key is in session storage');
      check(!page.url().includes(key), 'the key is not in the URL');
    });

    await step('create an agent, edit it: a new version shown', async () => {
      await page.goto(`${srv.url}/#/agents/new`);
      await page.waitForSelector('form textarea.mono');
      await page.type('form input[type=text]', 'console agent');
      await page.evaluate((tools) => { document.querySelector('form textarea.mono').value = tools; }, JSON.stringify(TOOLS));
      await page.click('form button[type=submit]');
      await page.waitForFunction(() => /^#\/agents\/agent_/.test(location.hash) && /Version 1/.test(document.body.innerText));
      const sys = await page.$('form textarea:not(.mono)');
      await sys.type('You are tested by a browser.');
      await page.click('form button[type=submit]');
      await page.waitForFunction(() => /Saved: version 2/.test(document.body.innerText) && /Version 2/.test(document.querySelector('.version').textContent));
      await page.waitForFunction(() => document.querySelectorAll('.versions li').length === 2);
      await shot('agent');
    });

    await step('start a session with the agent (its own URL)', async () => {
      await page.goto(`${srv.url}/#/sessions`);
      await page.waitForFunction(() => document.querySelectorAll('form.start select option').length === 1);
      await page.click('form.start button[type=submit]');
      await page.waitForFunction(() => /^#\/sessions\/sesn_/.test(location.hash));
      sessionId = decodeURIComponent((await page.evaluate(() => location.hash)).split('/')[2]);
      await page.waitForFunction(() => document.querySelector('.stream-state') && document.querySelector('.stream-state').dataset.state === 'live');
    });

    await step('send a message (keyboard), see the tool card and the answer streamed', async () => {
      await page.focus('#composer');
      await page.keyboard.type('hello');
      await page.keyboard.down('Control');
      await page.keyboard.press('Enter');
      await page.keyboard.up('Control');
      // the preview, while the pieces still come
      await page.waitForFunction(() => { const s = document.querySelector('.msg.streaming .text'); return s && /Hello/.test(s.textContent) && !/end of answer/.test(s.textContent); }, { timeout: T, polling: 20 });
      await page.waitForFunction(() => [...document.querySelectorAll('.msg.agent:not(.streaming) .text')].some((t) => /end of answer\.$/.test(t.textContent)));
      const card = await page.$('details.card.tool[data-tool="glob"]');
      check(card, 'a tool card for glob');
      const summary = await page.evaluate((c) => c.querySelector('summary').textContent, card);
      check(/glob/.test(summary) && /done/.test(summary) && /\d+ ms|\d+\.\d+ s/.test(summary), `the card's summary: ${summary}`);
      await page.evaluate((c) => c.querySelector('summary').click(), card);
      const body = await page.evaluate((c) => c.querySelector('.card-body').innerText, card);
      check(/"pattern": "\*"/.test(body) && /Output/.test(body), `the card shows input and output: ${body.slice(0, 200)}`);
      await page.waitForFunction(() => document.querySelector('.badge.status-idle'));
    });

    await step('XSS plants in the model\'s text are shown as text', async () => {
      const t = await text();
      check(t.includes(XSS_TEXT) && t.includes(XSS_IMG), 'the plants appear literally');
      check(await page.evaluate(() => window.__xss === undefined && document.querySelectorAll('main script, main img').length === 0), 'no plant ran or became an element');
    });

    const sendMsg = async (m) => {
      await page.focus('#composer');
      await page.keyboard.type(m);
      await page.click('form.composer button[type=submit]');
    };

    await step('an always_ask tool: Allow runs it; its output (a plant) shown as text', async () => {
      await sendMsg('run bash');
      await page.waitForFunction(() => { const c = document.querySelector('details.card.tool[data-tool="bash"]'); return c && c.open && [...c.querySelectorAll('button')].some((b) => b.textContent === 'Allow'); });
      await shot('approval');
      await page.evaluate(() => [...document.querySelectorAll('details.card.tool[data-tool="bash"] button')].find((b) => b.textContent === 'Allow').click());
      await page.waitForFunction(() => [...document.querySelectorAll('.msg.agent .text')].some((t) => t.textContent === 'bash ran.'));
      const out = await page.evaluate(() => document.querySelector('details.card.tool[data-tool="bash"]').innerText);
      check(/Allowed/.test(out) && out.includes('<img src=y onerror="window.__xss = 3">'), `the card: allowed, the output as text: ${out.slice(0, 300)}`);
      check(await page.evaluate(() => window.__xss === undefined), 'the tool output\'s plant did not run');
    });

    await step('an always_ask tool: Deny, the tool does not run', async () => {
      await sendMsg('run bash again');
      await page.waitForFunction(() => document.querySelectorAll('details.card.tool[data-tool="bash"]').length === 2 && [...document.querySelectorAll('details.card.tool[data-tool="bash"]')][1].querySelector('button.danger'));
      await page.evaluate(() => [...document.querySelectorAll('details.card.tool[data-tool="bash"]')][1].querySelector('button.danger').click());
      await page.waitForFunction(() => [...document.querySelectorAll('.msg.agent .text')].some((t) => t.textContent === 'denied, fine.'));
      const card = await page.evaluate(() => [...document.querySelectorAll('details.card.tool[data-tool="bash"]')][1].innerText);
      check(/Denied/.test(card), `the card says denied: ${card.slice(0, 200)}`);
    });

    await step('handles (run_python): a table\'s first rows as a table, a JSON handle\'s shape, the plants as text', async () => {
      await sendMsg('make a table');
      await page.waitForFunction(() => [...document.querySelectorAll('.msg.agent .text')].some((t) => t.textContent === 'saved the table.'));
      await page.click('#tab-handles');
      await page.waitForFunction(() => [...document.querySelectorAll('.handles button')].some((b) => b.textContent === 'cities'));
      await page.evaluate(() => [...document.querySelectorAll('.handles button')].find((b) => b.textContent === 'cities').click());
      await page.waitForSelector('table.preview tbody tr');
      const rows = await page.evaluate(() => [...document.querySelectorAll('table.preview tbody tr')].map((r) => [...r.cells].map((c) => c.textContent)));
      check(rows.length === 3 && rows[0][0] === '<script>window.__xss = 4</script>' && rows[1][0] === 'Oslo', `rows: ${JSON.stringify(rows)}`);
      check(await page.evaluate(() => window.__xss === undefined), 'the handle\'s plant did not run');
      await shot('handles');
      await page.evaluate(() => [...document.querySelectorAll('.handles button')].find((b) => b.textContent === 'doc').click());
      await page.waitForSelector('pre.shape');
      const j = await page.evaluate(() => [document.querySelector('pre.shape').textContent, document.querySelector('.handle-view').innerText]);
      check(/items/.test(j[0]) && j[1].includes('<img src=z onerror=') && await page.evaluate(() => window.__xss === undefined && !document.querySelector('main img')),
        `a JSON handle's shape, its text as text: ${j[1].slice(0, 300)}`);
    });

    await step('the timeline: each turn\'s model requests and tool calls as bars', async () => {
      await page.click('#tab-timeline');
      await page.waitForSelector('.timeline .turn');
      const t = await page.evaluate(() => ({
        turns: document.querySelectorAll('.timeline .turn').length,
        model: document.querySelectorAll('.timeline .bar-row[data-kind=model]').length,
        tool: document.querySelectorAll('.timeline .bar-row[data-kind=tool]').length,
        widths: [...document.querySelectorAll('.timeline .bar')].map((b) => b.style.width),
      }));
      check(t.turns === 4 && t.model === 8 && t.tool === 4, `turns, model bars, tool bars: ${JSON.stringify(t)}`);
      check(t.widths.every((w) => /%$/.test(w)), 'every bar has a width');
      await shot('timeline');
    });

    await step('the run records\' chain verified in the page', async () => {
      await page.click('#tab-records');
      try {
        await page.waitForSelector('.chain');
      } catch (e) { // say what the panel shows instead, and what the page logged
        const shown = await page.evaluate(() => (document.querySelector('#panel-records') || {}).textContent || '');
        throw new Error(`no verdict; the records panel shows: ${shown.slice(0, 300)}; page errors: ${errors.join(' / ').slice(0, 600)}`);
      }
      const v = await page.evaluate(() => document.querySelector('.chain').textContent);
      check(/^Chain verified: \d+ records/.test(v), `the verdict: ${v}`);
      await shot('records');
    });

    await step('a tampered record shows as broken', async () => {
      await page.setRequestInterception(true);
      const onReq = async (req) => {
        if (!req.url().includes(`/v1/sessions/${sessionId}/records`)) return req.continue();
        try {
          const res = await fetch(req.url(), { headers: req.headers() });
          const d = await res.json();
          const rec = d.data[0].entry.record; // the first record's end time, one ms later
          rec.endedUnixMs = String(Number(rec.endedUnixMs || 0) + 1);
          return req.respond({ status: 200, contentType: 'application/json', body: JSON.stringify(d) });
        } catch (e) {
          return req.respond({ status: 500, contentType: 'text/plain', body: `the test's tampering failed: ${e.message}` });
        }
      };
      page.on('request', onReq);
      try {
        await page.click('#tab-events');
        await page.click('#tab-records');
        await page.waitForFunction(() => /^Chain broken/.test((document.querySelector('.chain') || {}).textContent || ''));
        const bad = await page.evaluate(() => document.querySelectorAll('tr.rec-bad').length);
        check(bad >= 1, 'a broken row');
      } finally {
        page.off('request', onReq);
        await page.setRequestInterception(false);
      }
      await page.click('#tab-events');
    });

    await step('interrupt a running turn', async () => {
      await sendMsg('take your time');
      await page.waitForFunction(() => document.querySelector('.badge.status-running') && !document.querySelector('.session-head button.danger').disabled);
      await sleep(500);
      await page.click('.session-head button.danger');
      await page.waitForFunction(() => document.querySelector('.badge.status-idle') && [...document.querySelectorAll('.status-row')].some((r) => r.textContent === 'you interrupted'));
      check(!(await text()).includes('far too late'), 'no answer from the cut request');
    });

    await step('a dropped event stream resumes with nothing missing or doubled', async () => {
      // Chromium's offline emulation refuses new connections but leaves a response that is
      // already streaming alone: the page's hook cuts the stream (an aborted fetch, so hull serve
      // sees the hang-up) while offline keeps the page from reconnecting until the turn is over.
      const cdp = await page.createCDPSession();
      const offline = (on) => cdp.send('Network.emulateNetworkConditions', { offline: on, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
      const before = await page.evaluate(() => window.hullConsole.stream.connects);
      allowNet = /ERR_INTERNET_DISCONNECTED|ERR_NETWORK|net::/;
      await cdp.send('Network.enable');
      try {
        await offline(true);
        await page.evaluate(() => window.hullConsole.stream.drop());
        await page.waitForFunction(() => document.querySelector('.stream-state').dataset.state === 'reconnecting');
        // the turn runs while the page is cut off
        await api('POST', `/v1/sessions/${sessionId}/events`, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'while down' }] }] });
        // the turn's end in the server's log (its answer, then an idle), not an idle status, which
        // a turn that has not started yet also shows
        const over = async () => {
          const evs = (await api('GET', `/v1/sessions/${sessionId}/events?limit=1000`)).data || [];
          const k = evs.findIndex((e) => e.type === 'agent.message' && JSON.stringify(e.content).includes('written while the stream was down.'));
          return k >= 0 && evs.slice(k).some((e) => e.type === 'session.status_idle');
        };
        for (let i = 0; i < 600 && !(await over()); i++) await sleep(100);
        check(!(await text()).includes('written while the stream was down.'), 'the page saw nothing while cut off');
      } finally {
        await offline(false);
      }
      await page.waitForFunction((n) => window.hullConsole.stream.connects > n && document.querySelector('.stream-state').dataset.state === 'live', {}, before);
      await page.waitForFunction(() => [...document.querySelectorAll('.msg.agent .text')].some((t) => t.textContent === 'written while the stream was down.'));
      allowNet = null;
      await cdp.detach();
      const server = (await api('GET', `/v1/sessions/${sessionId}/events?limit=1000`)).data.map((e) => e.id);
      // the page shows the answer as its frame comes: the replay's last frames may still be on their way
      await page.waitForFunction((k) => window.hullConsole.model.events.length >= k, {}, server.length);
      const seen = await page.evaluate(() => window.hullConsole.model.events.map((e) => e.id));
      check(new Set(seen).size === seen.length, 'no event twice in the page');
      check(JSON.stringify(seen) === JSON.stringify(server), `the page's events are the server's, in order (${seen.length} vs ${server.length})`);
      const dom = await page.evaluate(() => [...document.querySelectorAll('.events [data-seq]')].map((n) => n.dataset.seq));
      check(new Set(dom).size === dom.length, 'no event drawn twice');
    });

    await step('reload: the session\'s URL opens it with its history', async () => {
      const n = await page.evaluate(() => document.querySelectorAll('.events .item').length);
      await page.reload({ waitUntil: 'load' });
      await page.waitForFunction((k) => document.querySelectorAll('.events .item').length === k && document.querySelector('.stream-state').dataset.state === 'live', {}, n);
      const t = await text();
      check(t.includes('hello') && t.includes('end of answer.') && t.includes('written while the stream was down.'), 'the history is there');
      await shot('session');
    });

    await step('a custom tool: its result entered by hand reaches the model', async () => {
      await sendMsg('weather?');
      await page.waitForSelector('details.card.tool[data-tool="get_weather"] form.custom-result textarea');
      await page.type('details.card.tool[data-tool="get_weather"] form.custom-result textarea', 'sunny, 21 C');
      await page.click('details.card.tool[data-tool="get_weather"] form.custom-result button[type=submit]');
      await page.waitForFunction(() => [...document.querySelectorAll('.msg.agent .text')].some((t) => t.textContent === 'The page said: sunny, 21 C'));
    });

    await step('a limited environment\'s session: the tool card lists its network connections', async () => {
      const env = await api('POST', '/v1/environments', { name: 'console-limited', config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['example.invalid'] } } });
      check(env && /^env_/.test(env.id), `an environment made: ${JSON.stringify(env)}`);
      const agents = await api('GET', '/v1/agents');
      const agent = (agents.data || []).find((a) => a.name === 'console agent');
      check(agent, 'the console agent is listed');
      const s = await api('POST', '/v1/sessions', { agent: agent.id, environment_id: env.id });
      check(s && /^sesn_/.test(s.id), `a session made: ${JSON.stringify(s)}`);
      await api('POST', `/v1/sessions/${s.id}/events`, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'connect' }] }] });
      await page.goto(`${srv.url}/#/sessions/${encodeURIComponent(s.id)}`);
      await page.waitForFunction(() => [...document.querySelectorAll('.msg.agent .text')].some((t) => t.textContent === 'network done.'));
      await page.waitForFunction(() => [...document.querySelectorAll('details.card.tool[data-tool="run_python"] pre.net-log')]
        .some((p) => /net refused CONNECT blocked\.invalid:443 .*reason=not on the allowed hosts/.test(p.textContent)));
      const label = await page.evaluate(() => [...document.querySelectorAll('details.card.tool .label')].map((l) => l.textContent).find((t) => /^Network/.test(t)));
      check(/^Network \(1 connection\)$/.test(label || ''), `the card's network label: ${label}`);
    });

    await step('the sessions list: status and usage; a status filter', async () => {
      await page.goto(`${srv.url}/#/sessions`);
      await page.waitForSelector('table.list tbody tr');
      const row = await page.evaluate(() => document.querySelector('table.list tbody tr').innerText);
      check(/idle/.test(row) && /\d+ in \/ \d+ out/.test(row), `a row: ${row}`);
      await shot('sessions');
      await page.goto(`${srv.url}/#/sessions?status=running`);
      await page.waitForFunction(() => /No session matches/.test(document.body.innerText));
    });

    await step('390 px wide: no horizontal scroll (sessions, a session, its cards, handles, timeline, records)', async () => {
      await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
      await page.goto(`${srv.url}/#/sessions`);
      await page.waitForSelector('table.list tbody tr');
      await noHScroll('sessions');
      await page.goto(`${srv.url}/#/sessions/${encodeURIComponent(sessionId)}`);
      await page.waitForFunction(() => document.querySelectorAll('.events .item').length > 10);
      await page.evaluate(() => document.querySelectorAll('details.card').forEach((d) => { d.open = true; }));
      await noHScroll('a session with its cards open');
      await shot('phone');
      for (const tab of ['handles', 'timeline', 'records']) {
        await page.click(`#tab-${tab}`);
        await sleep(800);
        await noHScroll(tab);
      }
      await page.goto(`${srv.url}/#/agents`);
      await page.waitForSelector('table.list');
      await noHScroll('agents');
      await page.setViewport({ width: 1100, height: 800 });
    });

    await step('archive the session', async () => {
      await page.goto(`${srv.url}/#/sessions/${encodeURIComponent(sessionId)}`);
      await page.waitForFunction(() => [...document.querySelectorAll('.session-head button')].some((b) => b.textContent === 'Archive' && !b.disabled));
      await page.evaluate(() => [...document.querySelectorAll('.session-head button')].find((b) => b.textContent === 'Archive').click());
      await page.waitForFunction(() => [...document.querySelectorAll('.session-head button')].some((b) => b.textContent === 'Archived'));
      const s = await api('GET', `/v1/sessions/${sessionId}`);
      check(s.archived_at, 'archived on the server');
    });

    await step('archive an agent from its page: read only after, gone from the lists', async () => {
      const a = await api('POST', '/v1/agents', { name: 'agent to archive', model: 'claude-sonnet-4-6' });
      check(a && /^agent_/.test(a.id), `an agent made: ${JSON.stringify(a)}`);
      const buttons = () => [...document.querySelectorAll('form .actions button')].map((b) => [b.textContent, b.disabled]);
      await page.goto(`${srv.url}/#/agents/${encodeURIComponent(a.id)}`);
      await page.waitForFunction(() => [...document.querySelectorAll('form .actions button')].some((b) => b.textContent === 'Archive' && !b.disabled));
      await page.evaluate(() => [...document.querySelectorAll('form .actions button')].find((b) => b.textContent === 'Archive').click());
      await page.waitForFunction(() => [...document.querySelectorAll('form .actions button')].some((b) => b.textContent === 'Archived' && b.disabled));
      const after = await page.evaluate(buttons);
      check(after.every(([, disabled]) => disabled), `save and archive disabled: ${JSON.stringify(after)}`);
      check(/archived/.test(await page.evaluate(() => document.querySelector('.version').textContent)), 'the version line says archived');
      const got = await api('GET', `/v1/agents/${a.id}`);
      check(typeof got.archived_at === 'string', `archived on the server: ${JSON.stringify(got)}`);
      await page.reload();
      await page.waitForFunction(() => [...document.querySelectorAll('form .actions button')].some((b) => b.textContent === 'Archived' && b.disabled));
      await page.goto(`${srv.url}/#/agents`);
      await page.waitForSelector('table.list');
      const list = await text();
      check(!list.includes('agent to archive') && list.includes('console agent'), `the agents list: ${list.slice(0, 300)}`);
      await page.goto(`${srv.url}/#/sessions`);
      await page.waitForFunction(() => document.querySelectorAll('form.start select option').length >= 1);
      const offered = await page.evaluate(() => [...document.querySelectorAll('form.start select option')].map((o) => o.textContent));
      check(!offered.some((t) => t.includes('agent to archive')), `a new session cannot use it: ${offered}`);
    });

    await step('memory stores: browse a store, a memory\'s history (a plant shown as text), redact a past version', async () => {
      const store = await api('POST', '/v1/memory_stores', { name: 'Console store', description: 'for the console' });
      const m = await api('POST', `/v1/memory_stores/${store.id}/memories`, { path: '/notes/plant.md', content: '<img src=x onerror="window.__xss = 9">' });
      await api('POST', `/v1/memory_stores/${store.id}/memories/${m.id}`, { content: 'second version' });
      check(store && store.id && m && m.id, `the store and its memory are made: ${JSON.stringify([store, m])}`);
      // the page once never showed the store in a full suite run (not reproduced alone): the
      // second try after a reload says what the first one saw
      for (let tries = 0; ; tries++) {
        await page.goto(`${srv.url}/#/memory`, { waitUntil: 'load' });
        try {
          await page.waitForFunction(() => /Console store/.test(document.body.innerText), { timeout: 20000 });
          break;
        } catch (e) {
          const seen = await page.evaluate(() => document.body.innerText.slice(0, 400)).catch(() => '?');
          if (tries >= 1) throw new Error(`the memory page never listed the store; it showed: ${JSON.stringify(seen)}`);
          console.error(`# the memory page, first try: ${e.message}; it showed: ${JSON.stringify(seen)}`);
          await page.goto(`${srv.url}/#/agents`, { waitUntil: 'load' });
          await page.reload({ waitUntil: 'load' });
        }
      }
      // each wait names what it waited for and what the page showed (its hash, its text, its
      // last requests); once in a CI run one of them waited its whole minute, never seen alone:
      // the browsing is tried a second time from a reload, the first failure printed
      const waitFor = async (what, fn) => {
        try {
          await page.waitForFunction(fn, { timeout: 20000 });
        } catch (e) {
          const seen = await page.evaluate(() => ({
            hash: location.hash,
            text: document.body.innerText.slice(0, 400),
            requests: performance.getEntriesByType('resource').slice(-6).map((r) => `${r.name.replace(location.origin, '')} ${Math.round(r.duration)} ms`),
          })).catch((e2) => `? (${e2.message})`);
          throw new Error(`${what}: ${e.message}; the page showed ${JSON.stringify(seen)}`);
        }
      };
      for (let tries = 0; ; tries++) {
        try {
          await page.click(`a[href="#/memory/${store.id}"]`);
          await waitFor('the store lists its memory', () => /\/notes\/plant\.md/.test(document.body.innerText));
          await page.click(`a[href="#/memory/${store.id}/${m.id}"]`);
          await waitFor('the memory shows its content and history', () => /second version/.test((document.querySelector('pre.memory-content') || {}).textContent) && /modified \(current\)/.test(document.body.innerText));
          const shown = await page.$$eval('table.list tbody tr', (rows) => rows.length);
          check(shown === 2, `two versions listed: ${shown}`);
          await page.evaluate(() => [...document.querySelectorAll('table.list tbody tr')][1].querySelector('button').click());
          await waitFor('a past version shown', () => /onerror/.test((document.querySelector('pre.memory-content') || {}).textContent));
          break;
        } catch (e) {
          if (tries >= 1) throw e;
          console.error(`# the memory pages, first try: ${e.message}`);
          await page.goto(`${srv.url}/#/memory`, { waitUntil: 'load' });
          await page.reload({ waitUntil: 'load' });
          await waitFor('the memory page lists the store after a reload', () => /Console store/.test(document.body.innerText));
        }
      }
      check(await page.evaluate(() => window.__xss === undefined && !document.querySelector('pre.memory-content img')), 'the plant is text');
      await page.click('table.list button.danger');
      await waitFor('the past version shown redacted', () => /created \(redacted\)/.test(document.body.innerText));
      const vers = await api('GET', `/v1/memory_stores/${store.id}/memory_versions?memory_id=${m.id}&view=full`);
      const old = vers.data.find((v) => v.operation === 'created');
      check(old && old.redacted_at && old.content === null, `the version is redacted: ${JSON.stringify(old)}`);
      await shot('memory');
    });

    await step('files: upload from the page, listed, downloaded, mounted in a session, deleted', async () => {
      const local = path.join(home, 'console-upload.txt');
      fs.writeFileSync(local, 'uploaded from the console');
      await page.goto(`${srv.url}/#/files`, { waitUntil: 'load' });
      await page.waitForFunction(() => document.querySelector('h1') && document.querySelector('h1').textContent === 'Files');
      const input = await page.waitForSelector('input[type=file]');
      await input.uploadFile(local);
      await page.evaluate(() => [...document.querySelectorAll('button')].find((b) => b.textContent === 'Upload').click());
      await page.waitForFunction(() => document.body.innerText.includes('console-upload.txt'));
      const files = await api('GET', '/v1/files');
      const f = files.data.find((x) => x.filename === 'console-upload.txt');
      check(f && f.size_bytes === 25, `the upload is a file: ${JSON.stringify(files)}`);
      const bytes = await page.evaluate(async (id) => {
        const res = await fetch(`/v1/files/${id}/content`, { headers: { 'x-api-key': sessionStorage.getItem('hull.apiKey'), 'anthropic-version': '2023-06-01' } });
        return res.text();
      }, f.id);
      check(bytes === 'uploaded from the console', `the download: ${JSON.stringify(bytes)}`);
      if (sessionId) { // that one is archived by now: a new session of its agent, with the file
        const old = await api('GET', `/v1/sessions/${sessionId}`);
        const s = await api('POST', '/v1/sessions', { agent: old.agent.id, environment_id: old.environment_id,
          resources: [{ type: 'file', file_id: f.id }] });
        check(s.id, `a session with the file: ${JSON.stringify(s)}`);
        await page.goto(`${srv.url}/#/sessions/${encodeURIComponent(s.id)}`, { waitUntil: 'load' });
        await page.waitForSelector('#tab-resources');
        await page.click('#tab-resources');
        await page.waitForFunction((id) => document.querySelector('#panel-resources').innerText.includes(`/mnt/session/uploads/${id}`), {}, f.id);
        await shot('session-resources');
        await page.goto(`${srv.url}/#/files`, { waitUntil: 'load' });
        // the Files page itself, drawn with its list: the session page just left shows the
        // file's name too, and a hash change is drawn a moment after goto returns (once in CI
        // the wait below found that page and there was no Delete to click)
        await page.waitForFunction(() => document.querySelector('h1') && document.querySelector('h1').textContent === 'Files' &&
          document.body.innerText.includes('console-upload.txt') && [...document.querySelectorAll('button')].some((b) => b.textContent === 'Delete'));
      }
      await page.evaluate(() => [...document.querySelectorAll('button')].find((b) => b.textContent === 'Delete').click());
      await page.waitForFunction(() => document.body.innerText.includes('No files yet.'));
      await shot('files');
    });

    await step('no JavaScript console error', async () => {
      check(errors.length === 0, `errors: ${JSON.stringify(errors.slice(0, 5))}`);
    });

    await step('hull serve ends cleanly, no sanitizer report in its log', async () => {
      await browser.close();
      browser = null;
      const how = await srv.stop(true);
      const log = srv.log();
      srv = null;
      check(how.code === 0, `hull serve's exit: ${JSON.stringify(how)}`);
      check(!/AddressSanitizer|LeakSanitizer|runtime error:/.test(log), `a sanitizer report: ${log.slice(log.search(/AddressSanitizer|LeakSanitizer|runtime error:/), 600)}`);
    });
  } catch (e) {
    failures++;
    console.log(`not ok - console: set-up: ${String((e && e.stack) || e).split('\n').slice(0, 3).join(' | ')}`);
  } finally {
    if (browser) await browser.close().catch(() => {});
    if (srv) await srv.stop(true);
    if (mock) await mock.stop().catch(() => {});
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(`${home}.serve.log`, { force: true });
  }
  process.exitCode = failures ? 1 : 0;
}

main();
