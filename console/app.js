// app.js: hull's web console: the router (the location's hash: #/sessions/ID opens a session, so
// a reload or a shared link opens it), sign-in when hull serve asks for a key, the pages of
// views.js. No framework, no build step: ES modules as the browser runs them.
import { key, onUnauthorized } from './api.js';
import { clear } from './dom.js';
import * as views from './views.js';
import { vaultsList } from './vaults.js';
import { skillsList } from './skills.js';
import * as memory from './memory.js';
import { filesList } from './files.js';

const main = document.getElementById('main');
const signout = document.getElementById('signout');
let end = null;
let needKey = false;

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function route() {
  if (end) {
    try { end(); } catch { /* a view's end never stops the next */ }
    end = null;
  }
  clear(main);
  const hash = location.hash || '#/sessions';
  const [path, qs] = hash.slice(1).split('?');
  const query = new URLSearchParams(qs || '');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === `#/${parts[0] || 'sessions'}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  signout.hidden = !key.get();
  if (parts[0] === 'signin') return views.signIn(main, { next: query.get('next'), go });
  if (needKey && !key.get()) return go(`#/signin?next=${encodeURIComponent(hash)}`);
  let r;
  if (parts[0] === 'agents' && parts[1] === 'new') r = views.agentEdit(main, { go });
  else if (parts[0] === 'agents' && parts[1]) r = views.agentEdit(main, { id: parts[1], go });
  else if (parts[0] === 'agents') r = views.agentsList(main, { go });
  else if (parts[0] === 'memory' && parts[2]) r = memory.memoryView(main, { id: parts[1], mid: parts[2] });
  else if (parts[0] === 'memory' && parts[1]) r = memory.storeView(main, { id: parts[1] });
  else if (parts[0] === 'memory') r = memory.storesList(main);
  else if (parts[0] === 'sessions' && parts[1]) r = views.sessionView(main, { id: parts[1], go });
  else if (parts[0] === 'vaults') r = vaultsList(main);
  else if (parts[0] === 'skills') r = skillsList(main, { go });
  else if (parts[0] === 'files') r = filesList(main);
  else r = views.sessionsList(main, { query, go });
  if (typeof r === 'function') end = r;
  // "interactive": the view drawn with its data (bench/console.sh reads this mark)
  Promise.resolve(r).finally(() => {
    if (!performance.getEntriesByName('hull-console-ready').length) performance.mark('hull-console-ready');
  });
  document.title = `hull · ${parts[0] || 'sessions'}`;
}

onUnauthorized(() => {
  needKey = true;
  key.clear();
  if (!location.hash.startsWith('#/signin')) go(`#/signin?next=${encodeURIComponent(location.hash || '#/sessions')}`);
});

signout.addEventListener('click', () => {
  key.clear();
  needKey = true;
  go('#/signin');
});

window.addEventListener('hashchange', route);

// Whether hull serve wants a key (it does once one exists) is learnt from the first view's own
// requests: a 401 sends the page to the sign-in form (onUnauthorized), no round trip first.
route();
