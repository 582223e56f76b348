// Tools: search the registry, read a tool's description and schema, and
// call it from a form generated from its schema. The result shows as the
// model sees it and as the server sent it (images included).
import { h, clear, keepFocus, pretty, splitView, matchesWords } from './dom.js';
import { api } from './net.js';
import { schemaForm } from './schemaform.js';

let query = '';
let selected = '';
let shownDef = ''; // the definition the detail pane was built for
let listEl = null;
let detailEl = null;
let offProgress = null; // stops the progress listener of the pane shown

export function renderTools(el, state) {
  if (!listEl) {
    ({ list: listEl, detail: detailEl } = splitView(el, { title: 'Tools', id: 'tool-search', noun: 'tools', navLabel: 'Tool list' },
      (q) => { query = q; drawList(state); }));
  }
  drawList(state);
  drawDetail(state);
}

function matches(t, q) {
  return matchesWords(`${t.name}\n${t.description || ''}`, q);
}

function drawList(state) {
  keepFocus(listEl, () => {
    clear(listEl);
    const shown = (state.tools || []).filter((t) => matches(t, query));
    for (const t of shown) {
      const first = (t.description || '').split('\n')[0];
      listEl.append(h('li', {},
        h('button', {
          type: 'button', class: t.name === selected ? 'tool selected' : 'tool', 'data-key': `tool-${t.name}`, 'data-tool': t.name,
          'aria-current': t.name === selected ? 'true' : null,
          onclick: () => { selected = t.name; drawList(state); drawDetail(state); detailEl.scrollIntoView({ block: 'nearest' }); focusDetail(); },
        }, h('span', { class: 'tool-name', text: t.name }), first ? h('span', { class: 'tool-first', text: first }) : null)));
    }
    if (!shown.length) listEl.append(h('li', { class: 'muted', text: (state.tools || []).length ? 'No tool matches.' : 'No tools are registered.' }));
  });
}

function focusDetail() {
  const first = detailEl.querySelector('input, select, textarea, button');
  if (first) first.focus();
}

function drawDetail(state) {
  const t = (state.tools || []).find((x) => x.name === selected);
  if (!t) {
    if (shownDef !== '') {
      shownDef = '';
      if (offProgress) offProgress();
      offProgress = null;
      clear(detailEl);
    }
    if (!detailEl.childElementCount) detailEl.append(h('p', { class: 'muted', text: selected ? `${selected} is no longer registered.` : 'Pick a tool to read it and try it.' }));
    return;
  }
  const def = JSON.stringify(t);
  if (def === shownDef) return; // unchanged: keep what was typed
  shownDef = def;
  if (offProgress) offProgress();
  clear(detailEl);
  const defn = t.definition && typeof t.definition === 'object' ? t.definition : {};
  const ann = defn.annotations || {};
  const hints = Object.entries(ann).filter(([k]) => k.endsWith('Hint')).map(([k, v]) => `${k.replace(/Hint$/, '')}: ${v}`);
  detailEl.append(h('h3', { class: 'tool-title', text: t.name }),
    defn.title || ann.title ? h('p', { class: 'muted', text: defn.title || ann.title }) : null,
    t.server ? h('p', { class: 'muted', text: `from server ${t.server}` }) : null,
    hints.length ? h('p', { class: 'muted small', text: hints.join(' · ') }) : null,
    h('p', { class: 'description', text: t.description || '(no description)' }),
    h('details', { class: 'schema' }, h('summary', { text: 'Input schema' }), h('pre', { text: pretty(t.parameters) })));

  const f = schemaForm(t.parameters, `call-${t.name}`);
  const out = h('div', { class: 'result', 'aria-live': 'polite' });
  const progress = h('p', { class: 'progress muted', role: 'status' });
  const callB = h('button', { type: 'submit', class: 'primary', 'data-key': 'call' }, 'Call');
  const cancelB = h('button', { type: 'button', hidden: true }, 'Cancel');
  const err = h('p', { class: 'error', role: 'alert' });
  let abort = null;
  const onProgress = (e) => {
    const m = e.detail;
    if (abort && m.tool === t.name) progress.textContent = progressText(m);
  };
  document.addEventListener('harness-progress', onProgress);
  offProgress = () => document.removeEventListener('harness-progress', onProgress);
  cancelB.addEventListener('click', () => { if (abort) abort.abort(); });
  const formEl = h('form', {
    class: 'call-form', novalidate: true,
    onsubmit: async (e) => {
      e.preventDefault();
      err.textContent = '';
      let args;
      try {
        args = f.read();
      } catch (x) {
        err.textContent = x.message;
        return;
      }
      abort = new AbortController();
      callB.disabled = true;
      cancelB.hidden = false;
      progress.textContent = 'calling…';
      clear(out);
      try {
        const res = await api('/api/call', { name: t.name, arguments: args }, abort.signal);
        showResult(out, res);
      } catch (x) {
        err.textContent = x.name === 'AbortError' ? 'Cancelled: the call was stopped and its server told.' : x.message;
      } finally {
        abort = null;
        callB.disabled = false;
        cancelB.hidden = true;
        progress.textContent = '';
      }
    },
  }, f.el, h('div', { class: 'row' }, callB, cancelB), progress, err);
  detailEl.append(h('h4', { text: 'Try it' }), formEl, out);
}

export function progressText(m) {
  let s = m.total ? `${m.progress}/${m.total} (${Math.round((100 * m.progress) / m.total)}%)` : `${m.progress}`;
  if (m.message) s += ` ${m.message}`;
  return s;
}

const imageTypes = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

// showResult draws a call's result: the model's text, then the server's
// content blocks.
export function showResult(out, res) {
  clear(out);
  out.append(h('h4', {}, 'As the model sees it', res.isError ? h('span', { class: 'badge failed', text: 'error' }) : null,
    h('span', { class: 'muted small', text: ` ${res.ms} ms` })),
  h('pre', { class: res.isError ? 'model-text error' : 'model-text', text: res.text }));
  const raw = res.raw;
  if (!raw || typeof raw !== 'object') return;
  out.append(h('h4', { text: 'As the server sent it' }));
  const blocks = h('div', { class: 'blocks' });
  for (const b of Array.isArray(raw.content) ? raw.content : []) blocks.append(block(b));
  if (raw.structuredContent !== undefined) {
    blocks.append(h('div', { class: 'block' }, h('p', { class: 'muted small', text: 'structuredContent' }), h('pre', { text: pretty(raw.structuredContent) })));
  }
  out.append(blocks, h('details', {}, h('summary', { text: 'Raw JSON' }), h('pre', { text: pretty(raw) })));
}

export function block(b) {
  const el = h('div', { class: 'block' }, h('p', { class: 'muted small', text: b.type || '?' }));
  switch (b.type) {
    case 'text':
      el.append(h('pre', { text: b.text || '' }));
      break;
    case 'image':
      if (imageTypes.has(b.mimeType) && typeof b.data === 'string' && /^[A-Za-z0-9+/=\s]*$/.test(b.data)) {
        el.append(h('img', { class: 'result-image', alt: `image (${b.mimeType}) from the tool`, src: `data:${b.mimeType};base64,${b.data.replace(/\s/g, '')}` }));
      } else {
        el.append(h('p', { class: 'muted', text: `an image of type ${b.mimeType || '?'}: not shown` }));
      }
      break;
    case 'audio':
      el.append(h('p', { class: 'muted', text: `audio (${b.mimeType || '?'}), ${Math.round(((b.data || '').length * 3) / 4)} bytes: not played` }));
      break;
    case 'resource': {
      const r = b.resource || {};
      el.append(h('p', { class: 'small', text: r.uri || '' }));
      if (typeof r.text === 'string') el.append(h('pre', { text: r.text }));
      else if (r.blob) el.append(h('p', { class: 'muted', text: `${r.mimeType || 'binary'}, ${Math.round((r.blob.length * 3) / 4)} bytes` }));
      break;
    }
    case 'resource_link':
      el.append(h('p', { class: 'small', text: `${b.name || ''} ${b.uri || ''}`.trim() }));
      break;
    default:
      el.append(h('pre', { text: pretty(b) }));
  }
  return el;
}
