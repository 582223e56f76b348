// The page builds every element with h(): text goes in as text nodes
// (textContent), never as HTML, so nothing a server or a model says can
// become markup or script (docs/rfc/0009-web.md, "Escaping").

// h creates an element: attrs sets attributes (class, text, on<event>
// listeners, booleans), children are nodes or text.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

// append adds children (nested arrays, nodes, text; null skipped).
export function append(el, children) {
  for (const c of [children].flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// clear empties an element.
export function clear(el) {
  el.replaceChildren();
  return el;
}

// keepFocus re-renders el with render() and gives the focus back to the
// element with the same data-key, so a live update never takes the focus
// from a person using the keyboard.
export function keepFocus(el, render) {
  const active = document.activeElement;
  const key = active && el.contains(active) ? active.dataset.key : undefined;
  render();
  if (key !== undefined) {
    const again = el.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (again) again.focus();
  }
}

// pretty is JSON for people.
export function pretty(v) {
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

// when is a time for people: the clock time, and the date when not today.
export function when(t) {
  if (!t) return '';
  const d = new Date(t);
  if (isNaN(d)) return '';
  const today = new Date();
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return d.toDateString() === today.toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}

// ago is how long ago t was, roughly.
export function ago(t) {
  const s = Math.round((Date.now() - new Date(t)) / 1000);
  if (!isFinite(s)) return '';
  if (s < 60) return `${Math.max(s, 0)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

// splitView lays out, in el, a title and a search box above a list beside
// a detail pane (the Tools, Resources and Prompts views); onSearch gets the
// search's text as it is typed. It returns the list and the pane.
export function splitView(el, { title, id, noun, navLabel }, onSearch) {
  const search = h('input', {
    type: 'search', id, placeholder: `Search ${noun}`, 'aria-label': `Search ${noun}`, 'data-key': 'search',
    oninput: (e) => onSearch(e.target.value),
  });
  const list = h('ul', { class: 'tool-list', 'aria-label': title });
  const detail = h('div', { class: 'tool-detail', 'aria-live': 'polite' });
  el.append(h('div', { class: 'summary' }, h('h2', { text: title }), search),
    h('div', { class: 'split' }, h('nav', { class: 'tool-nav', 'aria-label': navLabel }, list), detail));
  return { list, detail };
}

// matchesWords reports whether every word of q is in text, in any case.
export function matchesWords(text, q) {
  if (!q) return true;
  const hay = text.toLowerCase();
  return q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
}

// suggestions keeps list (a <datalist> of input's) filled with the values
// ask(value) answers ({values}) for what input holds: asked when the field
// gets the focus and after each pause in typing (150 ms). An answer to an
// older value is dropped; a failure leaves the list empty.
export function suggestions(input, list, ask) {
  let timer = 0;
  let asked = 0;
  const fill = async () => {
    const n = ++asked;
    let res;
    try {
      res = await ask(input.value);
    } catch {
      res = { values: [] };
    }
    if (n !== asked) return;
    clear(list);
    for (const v of res.values || []) list.append(h('option', { value: v }));
  };
  input.addEventListener('focus', fill);
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(fill, 150);
  });
}
