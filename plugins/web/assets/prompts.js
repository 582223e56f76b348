// Prompts: every server's prompts (and the native ones); fill in a
// prompt's arguments and see the messages it gives, as a model would get
// them.
import { h, clear, keepFocus, splitView, matchesWords, suggestions } from './dom.js';
import { api } from './net.js';
import { block } from './tools.js';

let query = '';
let selected = '';
let shown = '';
let listEl = null;
let detailEl = null;

let chatOn = false; // the page has a chat to put a prompt's text in

export function renderPrompts(el, state) {
  chatOn = !!state.features.chat;
  if (!state.features.prompts) {
    clear(el).append(h('p', { class: 'muted', text: 'This harness offers no prompts to the page.' }));
    listEl = null;
    return;
  }
  if (!listEl) {
    ({ list: listEl, detail: detailEl } = splitView(clear(el), { title: 'Prompts', id: 'prompt-search', noun: 'prompts', navLabel: 'Prompt list' },
      (q) => { query = q; drawList(state); }));
  }
  drawList(state);
  drawDetail(state);
}

function matches(p, q) {
  return matchesWords(`${p.name}\n${p.title || ''}\n${p.description || ''}`, q);
}

function drawList(state) {
  keepFocus(listEl, () => {
    clear(listEl);
    const all = state.prompts || [];
    const list = all.filter((p) => matches(p, query));
    for (const p of list) {
      const first = (p.title || p.description || '').split('\n')[0];
      listEl.append(h('li', {},
        h('button', {
          type: 'button', class: p.name === selected ? 'tool selected' : 'tool', 'data-key': `prompt-${p.name}`, 'data-prompt': p.name,
          'aria-current': p.name === selected ? 'true' : null,
          onclick: () => { selected = p.name; drawList(state); drawDetail(state); focusDetail(); },
        }, h('span', { class: 'tool-name', text: p.name }), first ? h('span', { class: 'tool-first', text: first }) : null)));
    }
    if (!list.length) listEl.append(h('li', { class: 'muted', text: all.length ? 'No prompt matches.' : 'No prompts are registered.' }));
  });
}

function focusDetail() {
  const first = detailEl.querySelector('input, button');
  if (first) first.focus();
}

function drawDetail(state) {
  const p = (state.prompts || []).find((x) => x.name === selected);
  if (!p) {
    if (shown !== '') {
      shown = '';
      clear(detailEl);
    }
    if (!detailEl.childElementCount) detailEl.append(h('p', { class: 'muted', text: selected ? `${selected} is no longer registered.` : 'Pick a prompt to try it.' }));
    return;
  }
  const def = JSON.stringify(p);
  if (def === shown) return;
  shown = def;
  clear(detailEl);
  const inputs = {};
  const fields = h('div', { class: 'fields' });
  for (const a of p.arguments || []) {
    const id = `prompt-arg-${a.name}`;
    // A prompt whose server suggests values gets them in a list under its
    // field as the person types (completion/complete).
    const values = p.completes ? h('datalist', { id: `${id}-values` }) : null;
    inputs[a.name] = h('input', { type: 'text', id, 'data-key': id, required: !!a.required, list: values ? values.id : null, autocomplete: 'off' });
    if (values) {
      suggestions(inputs[a.name], values, (value) => {
        const args = {};
        for (const [k, el] of Object.entries(inputs)) if (k !== a.name && el.value !== '') args[k] = el.value;
        return api('/api/prompt/complete', { name: p.name, argument: a.name, value, arguments: args });
      });
    }
    fields.append(h('div', { class: 'field' },
      h('label', { for: id, text: `${a.title || a.name}${a.required ? ' (required)' : ''}` }),
      inputs[a.name], values,
      a.description ? h('p', { class: 'muted small', text: a.description }) : null));
  }
  const out = h('div', { class: 'result', id: 'prompt-messages', 'aria-live': 'polite' });
  const err = h('p', { class: 'error', id: 'prompt-error', role: 'alert' });
  const getB = h('button', { type: 'submit', class: 'primary', id: 'prompt-get', 'data-key': 'get' }, 'Get');
  detailEl.append(h('h3', { class: 'tool-title', text: p.name }),
    p.title ? h('p', { class: 'muted', text: p.title }) : null,
    p.server ? h('p', { class: 'muted', text: `from server ${p.server}` }) : null,
    h('p', { class: 'description', text: p.description || '(no description)' }),
    h('form', {
      class: 'call-form', novalidate: true,
      onsubmit: async (e) => {
        e.preventDefault();
        err.textContent = '';
        const args = {};
        for (const [k, el] of Object.entries(inputs)) if (el.value !== '') args[k] = el.value;
        getB.disabled = true;
        clear(out);
        try {
          showMessages(out, await api('/api/prompt', { name: p.name, arguments: args }));
        } catch (y) {
          err.textContent = y.message;
        } finally {
          getB.disabled = false;
        }
      },
    }, fields, h('div', { class: 'row' }, getB), err), out);
}

function showMessages(out, res) {
  clear(out);
  out.append(h('h4', {}, 'Messages', h('span', { class: 'muted small', text: ` ${res.ms} ms` })));
  if (res.description) out.append(h('p', { class: 'muted', text: res.description }));
  const blocks = h('div', { class: 'blocks' });
  for (const m of res.messages || []) {
    const b = block(m.content || {});
    b.prepend(h('p', { class: 'small', text: m.role }));
    blocks.append(b);
  }
  out.append(blocks);
  // The text of the messages, for the chat (a model's input is text).
  const text = (res.messages || []).map((m) => {
    const c = m.content || {};
    if (c.type === 'text') return c.text || '';
    if (c.type === 'resource' && c.resource && typeof c.resource.text === 'string') return c.resource.text;
    return '';
  }).filter(Boolean).join('\n\n');
  if (text && chatOn) {
    out.append(h('div', { class: 'row' }, h('button', {
      type: 'button', id: 'prompt-to-chat',
      onclick: () => document.dispatchEvent(new CustomEvent('harness-compose', { detail: { text } })),
    }, 'Put in the chat')));
  }
}
