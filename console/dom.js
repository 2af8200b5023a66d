// dom.js: building the page from DOM nodes. Text always goes in as text (textContent, text
// nodes): nothing a model, a tool or a user wrote is ever parsed as HTML.

// h('button', {class: 'x', onclick: fn, 'aria-label': 'y'}, 'text', child...): an element.
// Attributes: on* are listeners, class/for/... are set with setAttribute, `hidden`/`disabled`
// /`checked`/`value` as properties; children are nodes or strings (text nodes); null is skipped.
export function h(tag, attrs, ...children) {
  const el = tag.startsWith('svg:')
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4))
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'hidden' || k === 'disabled' || k === 'checked' || k === 'value' || k === 'open' || k === 'selected')
      el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

// append(el, child, [child, ...], ...): nodes, strings and arrays of them.
export function append(el, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// Replace el's children with children.
export function fill(el, ...children) {
  clear(el);
  return append(el, children);
}

// JSON as indented text (for a <pre>).
export function pretty(v) {
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function fmtInt(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : '0';
}

// A polite live region for short announcements to screen readers (and the eye).
export function announce(text) {
  const el = document.getElementById('announce');
  if (el) el.textContent = text;
}
