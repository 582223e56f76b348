// Events: the reload lines of the host and the log records, as they come.
import { h, clear, when } from './dom.js';

const maxLines = 1000;
let level = 'INFO';
let eventsEl = null;
let logsEl = null;

const rank = { DEBUG: 0, INFO: 1, WARN: 2, ERROR: 3 };

export function renderEvents(el, state) {
  if (!eventsEl) {
    const pick = h('select', { id: 'log-level', 'aria-label': 'Log level' },
      ['DEBUG', 'INFO', 'WARN', 'ERROR'].map((l) => h('option', { value: l, text: `${l.toLowerCase()} and above` })));
    pick.value = level;
    pick.addEventListener('change', () => { level = pick.value; drawLogs(state); });
    eventsEl = h('ol', { class: 'lines', id: 'event-lines', 'aria-label': 'Reloads and entry changes' });
    logsEl = h('ol', { class: 'lines', id: 'log-lines', 'aria-label': 'Log records' });
    el.append(h('div', { class: 'summary' }, h('h2', { text: 'Events' })),
      h('h3', { text: 'Reloads and entries' }), eventsEl,
      h('div', { class: 'summary' }, h('h3', { text: 'Logs' }), pick), logsEl);
  }
  clear(eventsEl);
  for (const e of state.events || []) eventsEl.append(eventLine(e));
  if (!(state.events || []).length) eventsEl.append(h('li', { class: 'muted', text: 'Nothing yet: edit cordis.yml and its reload shows here.' }));
  drawLogs(state);
}

function drawLogs(state) {
  clear(logsEl);
  for (const r of state.logs || []) if (shown(r)) logsEl.append(logLine(r));
}

function shown(r) {
  return (rank[r.level] ?? 1) >= rank[level];
}

function eventLine(e) {
  return h('li', { class: `line ev-${e.kind}` }, h('time', { text: when(e.time) }), ' ', h('span', { text: e.text }));
}

function logLine(r) {
  const attrs = Object.entries(r.attrs || {}).map(([k, v]) => `${k}=${v}`).join(' ');
  return h('li', { class: `line lv-${(r.level || '').toLowerCase()}` },
    h('time', { text: when(r.time) }), ' ', h('span', { class: 'level', text: r.level }), ' ',
    r.entry ? h('span', { class: 'entry', text: `[${r.entry}] ` }) : null,
    h('span', { text: r.msg }), attrs ? h('span', { class: 'muted', text: ` ${attrs}` }) : null);
}

function push(list, arr, item, node) {
  arr.push(item);
  if (arr.length > maxLines) arr.splice(0, arr.length - maxLines);
  if (!node) return;
  const stick = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  if (list.firstElementChild && list.firstElementChild.classList.contains('muted')) list.firstElementChild.remove();
  list.append(node);
  while (list.childElementCount > maxLines) list.firstElementChild.remove();
  if (stick) list.scrollTop = list.scrollHeight;
}

export function addEvent(el, state, e) {
  push(eventsEl, state.events, e, eventLine(e));
}

export function addLog(el, state, r) {
  push(logsEl, state.logs, r, shown(r) ? logLine(r) : null);
}
