// Config: cordis.yml as it is now, and the problems of the last load that
// was refused (with file:line:column).
import { h, clear } from './dom.js';

export function renderConfig(el, state) {
  clear(el);
  const f = state.file || {};
  el.append(h('div', { class: 'summary' }, h('h2', { text: 'Config' }), h('code', { text: f.path || state.config || '' })));
  const problems = f.problems || [];
  if (problems.length) {
    el.append(h('h3', { class: 'error', text: 'The last edit was refused; the entries run as before' }),
      h('ul', { class: 'problems', id: 'problems' }, problems.map((p) => h('li', { class: 'error' }, p.msg))));
  } else {
    el.append(h('p', { class: 'muted', id: 'problems-none', text: 'The last load applied: no problems.' }));
  }
  if (f.error) el.append(h('p', { class: 'error', text: f.error }));
  if (typeof f.text === 'string') {
    const lines = f.text.split('\n');
    if (lines.length && lines[lines.length - 1] === '') lines.pop();
    const pre = h('ol', { class: 'file', id: 'file-text', 'aria-label': 'cordis.yml' });
    for (const l of lines) pre.append(h('li', { text: l }));
    el.append(pre);
  }
}
