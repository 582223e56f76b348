// Questions: what a tool asks during a call this page made — a form (its
// fields from the server's flat schema, defaults filled in, checked by the
// harness with the console's rules) or a page to open (shown with its host,
// opened only after a yes). One at a time; it goes when its call ends.
import { h, clear } from './dom.js';
import { api } from './net.js';

const box = () => document.getElementById('question');
let shown = null; // the id of the question shown
let before = null; // what had the focus before it

export function showQuestion(q) {
  const el = box();
  if (shown === q.id) return;
  if (!shown) before = document.activeElement;
  shown = q.id;
  clear(el);
  const err = h('p', { class: 'error', role: 'alert' });
  el.append(h('h2', { id: 'question-title', text: `${q.who} asks` }), h('p', { class: 'q-message', text: q.message || '' }));
  const reply = async (action, fields) => {
    err.textContent = '';
    for (const p of el.querySelectorAll('.field-problem')) p.textContent = '';
    for (const i of el.querySelectorAll('[aria-invalid]')) i.removeAttribute('aria-invalid');
    try {
      await api('/api/answer', { id: q.id, action, fields });
    } catch (x) {
      err.textContent = x.message;
      for (const [name, msg] of Object.entries(x.problems || {})) {
        const p = el.querySelector(`[data-problem="${CSS.escape(name)}"]`);
        if (p) p.textContent = msg;
        const i = el.querySelector(`[name="${CSS.escape(name)}"], #q-${CSS.escape(name)}`);
        if (i) i.setAttribute('aria-invalid', 'true');
      }
      const bad = el.querySelector('[aria-invalid=true]');
      if (bad) bad.focus();
    }
  };
  if (q.mode === 'url') {
    el.append(h('p', { class: 'q-url' }, h('code', { text: q.url })),
      h('p', {}, 'host: ', h('strong', { class: 'q-host', text: q.host })),
      h('div', { class: 'row' },
        h('button', {
          type: 'button', class: 'primary', id: 'q-open',
          onclick: () => {
            // Opened only now, after the person's yes; a web address only.
            if (/^https?:\/\//i.test(q.url)) window.open(q.url, '_blank', 'noopener,noreferrer');
            reply('accept');
          },
        }, 'Open the page'),
        h('button', { type: 'button', onclick: () => reply('decline') }, 'Decline'),
        h('button', { type: 'button', onclick: () => reply('cancel') }, 'Cancel')), err);
  } else {
    const inputs = [];
    const form = h('form', {
      class: 'q-form', novalidate: true,
      onsubmit: (e) => {
        e.preventDefault();
        const fields = {};
        for (const i of inputs) fields[i.name] = i.read();
        reply('accept', fields);
      },
    });
    for (const f of q.fields || []) {
      const i = input(f);
      inputs.push(i);
      form.append(i.el);
    }
    form.append(h('div', { class: 'row' },
      h('button', { type: 'submit', class: 'primary', id: 'q-send' }, 'Send'),
      h('button', { type: 'button', id: 'q-decline', onclick: () => reply('decline') }, 'Decline'),
      h('button', { type: 'button', id: 'q-cancel', onclick: () => reply('cancel') }, 'Cancel')), err);
    el.append(form);
  }
  el.hidden = false;
  const first = el.querySelector('input, select, textarea, button');
  if (first) first.focus();
}

export function endQuestion(id) {
  if (id && id !== shown) return;
  const el = box();
  shown = null;
  el.hidden = true;
  clear(el);
  if (before && document.contains(before)) before.focus();
  before = null;
}

// input draws one field; read() returns the text the harness checks (a
// choice's value, several joined by commas).
function input(f) {
  const id = `q-${f.name}`;
  const problem = h('p', { class: 'field-problem error', 'data-problem': f.name, id: `${id}-problem`, role: 'status' });
  const label = h('label', { for: id }, h('span', { class: 'name', text: f.label }), f.required ? h('span', { class: 'req', text: ' required' }) : null);
  const hint = h('p', { class: 'hint', text: f.hint });
  const help = f.description && f.description !== f.label ? h('p', { class: 'help', text: f.description }) : null;
  let el;
  let read;
  if (f.kind === 'choice') {
    el = h('select', { id, name: f.name }, f.required && !f.default ? h('option', { value: '', text: '— choose —' }) : h('option', { value: '', text: '(not set)' }),
      (f.options || []).map((o) => h('option', { value: o.value, text: o.title })));
    if (f.default) el.value = f.default;
    read = () => el.value;
  } else if (f.kind === 'choices') {
    el = h('fieldset', { id, class: 'choices' }, h('legend', { class: 'sr-only', text: f.label }));
    const boxes = (f.options || []).map((o, i) => {
      const cb = h('input', { type: 'checkbox', id: `${id}-${i}`, value: o.value });
      if ((f.defaultList || []).includes(o.value)) cb.checked = true;
      el.append(h('div', { class: 'row small' }, cb, h('label', { for: `${id}-${i}`, text: o.title })));
      return cb;
    });
    read = () => boxes.filter((b) => b.checked).map((b) => b.value).join(',');
  } else if (f.kind === 'boolean') {
    el = h('select', { id, name: f.name }, h('option', { value: '', text: '(not set)' }), h('option', { value: 'yes', text: 'yes' }), h('option', { value: 'no', text: 'no' }));
    if (f.default) el.value = f.default;
    read = () => el.value;
  } else {
    const type = f.kind === 'number' || f.kind === 'integer' ? 'number' : (f.format === 'email' ? 'email' : (f.format === 'date' ? 'date' : 'text'));
    el = h('input', { id, name: f.name, type, 'aria-describedby': `${id}-problem`, step: f.kind === 'integer' ? '1' : (f.kind === 'number' ? 'any' : null), min: f.min, max: f.max, maxlength: f.maxLength || null, spellcheck: 'false' });
    if (f.default) el.value = f.default;
    read = () => el.value;
  }
  return { name: f.name, el: h('div', { class: 'field' }, label, el, hint, help, problem), read };
}
