// Entries: every entry of cordis.yml, its state and its server, live.
import { h, clear, keepFocus, when, ago } from './dom.js';
import { api } from './net.js';

// notes holds the last error of an action per entry (a refused restart).
const notes = new Map();
// opened holds the entries whose stderr fold is open: a live update draws
// the card again, and keeps it open.
const opened = new Set();
// logins holds each login the page started, by entry: {url} while it is
// under way, {done} or {error} once it ended.
const logins = new Map();
let redraw = () => {};

// loginEnded takes the "login" message of the stream.
export function loginEnded(m) {
  logins.set(m.id, m.ok ? { done: true } : { error: m.error || 'the login failed' });
  redraw();
}

export function renderEntries(el, state) {
  redraw = () => renderEntries(el, state);
  keepFocus(el, () => {
    clear(el);
    const entries = state.entries || [];
    const tools = (state.tools || []).length;
    const bad = entries.filter((e) => e.state === 'failed' || e.state === 'reconnecting' || e.state === 'needs-login').length;
    el.append(h('div', { class: 'summary' },
      h('h2', { text: 'Entries' }),
      h('span', { class: 'muted', text: `${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}, ${tools} ${tools === 1 ? 'tool' : 'tools'}${bad ? `, ${bad} with a problem` : ''}` })));
    const list = h('ul', { class: 'cards', 'aria-label': 'Entries' });
    for (const e of entries) list.append(card(e));
    if (!entries.length) list.append(h('li', { class: 'muted', text: 'cordis.yml has no entries.' }));
    el.append(list);
  });
}

function card(e) {
  const li = h('li', { class: `card state-${e.state}`, 'data-entry': e.id });
  const head = h('div', { class: 'card-head' },
    h('h3', { class: 'entry-id', text: e.id }),
    h('span', { class: 'muted', text: e.plugin }),
    h('span', { class: `badge ${e.state}`, 'data-state': e.state, text: stateText(e) }));
  li.append(head);

  const facts = h('dl', { class: 'facts' });
  const fact = (k, v) => {
    if (v === undefined || v === null || v === '') return;
    facts.append(h('dt', { text: k }), h('dd', { text: String(v) }));
  };
  if (e.server) fact('server', `${e.server.name || '?'} ${e.server.version || ''}`.trim());
  fact('serverName', e.serverName);
  fact('transport', e.transport);
  fact('protocol', e.protocolVersion);
  if (Array.isArray(e.tools) && e.tools.length) fact('tools', e.tools.join(', '));
  if (typeof e.toolCount === 'number') fact('tools', e.hiddenTools ? `${e.toolCount} (${e.hiddenTools} hidden by the filters)` : e.toolCount);
  for (const k of ['resourceCount', 'templateCount', 'promptCount']) {
    if (typeof e[k] === 'number') fact(k.replace('Count', 's'), e[k]);
  }
  fact('url', e.url);
  if (e.command) fact('command', [e.command, ...(e.args || [])].join(' '));
  if (e.pid) fact('pid', e.pid);
  if (e.connectedSince) fact('connected', `since ${when(e.connectedSince)}`);
  if (e.reconnects) fact('reconnects', e.reconnects);
  if (e.state === 'reconnecting' && e.attempt) {
    fact('attempt', `${e.attempt} of ${e.maxAttempts || '?'}${e.nextTry ? `, next at ${when(e.nextTry)}` : ''}`);
  }
  if (e.lastError && e.state !== 'failed') fact('last error', e.lastError);
  if (e.lastSync) fact('listed', ago(e.lastSync));
  if (e.syncError) fact('last sync failed', e.syncError);
  if (e.missing && e.missing.length) fact('waiting for', e.missing.join(', '));
  if (e.url && e.plugin === 'web') fact('page', e.url);
  if (e.note && e.plugin !== 'web' && e.plugin !== 'mcp-server') fact('note', e.note);
  if (facts.childElementCount) li.append(facts);

  if (e.error) {
    li.append(h('p', { class: 'error', role: 'note' },
      e.pos ? h('code', { class: 'pos', text: e.pos }) : null, e.pos ? ' ' : null, e.error));
  }
  if (e.note && (e.plugin === 'web' || e.plugin === 'mcp-server')) li.append(h('p', { class: 'muted', text: e.note }));
  if (e.reloading) li.append(h('p', { class: 'muted', text: 'reloading: the new instance is starting beside the one that serves' }));
  if (e.stderr && e.stderr.length) {
    const fold = h('details', { class: 'stderr', open: opened.has(e.id) },
      h('summary', { 'data-key': `stderr-${e.id}`, text: `stderr (last ${e.stderr.length} ${e.stderr.length === 1 ? 'line' : 'lines'})` }),
      h('pre', { text: e.stderr.join('\n') }));
    fold.addEventListener('toggle', () => { if (fold.open) opened.add(e.id); else opened.delete(e.id); });
    li.append(fold);
  }
  const canLogin = (e.actions || []).includes('login');
  if (e.state === 'needs-login') {
    li.append(h('p', { class: 'muted', text: canLogin ? 'This server needs a login.' : `This server needs a login: run harness login ${e.id}` }));
  }
  const actions = h('div', { class: 'actions' });
  if (canLogin) {
    actions.append(h('button', {
      type: 'button', class: e.state === 'needs-login' ? 'primary login' : 'login', 'data-key': `login-${e.id}`, 'data-login': e.id,
      'aria-label': `Log in to ${e.id}`,
      onclick: async (ev) => {
        const b = ev.currentTarget;
        b.disabled = true;
        logins.delete(e.id);
        try {
          const res = await api('/api/login', { id: e.id });
          logins.set(e.id, res.url ? { url: res.url } : { done: true });
        } catch (err) {
          logins.set(e.id, { error: err.message });
        }
        redraw();
      },
    }, e.state === 'needs-login' ? 'Log in' : 'Log in again'));
  }
  if ((e.actions || []).includes('restart')) {
    actions.append(h('button', {
      type: 'button', class: 'restart', 'data-key': `restart-${e.id}`,
      'aria-label': `Restart ${e.id}`,
      onclick: async (ev) => {
        const b = ev.currentTarget;
        b.disabled = true;
        notes.delete(e.id);
        try {
          await api('/api/restart', { id: e.id });
        } catch (err) {
          notes.set(e.id, err.message);
          const p = li.querySelector('.action-note');
          if (p) p.textContent = err.message;
        } finally {
          b.disabled = false;
        }
      },
    }, 'Restart'));
  }
  actions.append(h('p', { class: 'action-note error', role: 'status', text: notes.get(e.id) || '' }));
  li.append(actions);
  const lg = logins.get(e.id);
  if (lg) li.append(loginPane(e, lg));
  return li;
}

// loginPane is a login the page started: the authorization page to open
// (in a new tab), and a box for the address the browser ends on when it
// cannot reach the harness's machine; then how it ended.
function loginPane(e, lg) {
  const pane = h('div', { class: 'login-pane', 'data-login-pane': e.id });
  if (lg.done || lg.error) {
    pane.append(lg.done ? h('p', { class: 'muted', role: 'status', text: 'Logged in.' }) : h('p', { class: 'error', role: 'alert', text: lg.error }));
    return pane;
  }
  const input = h('input', { type: 'url', 'aria-label': 'The address the browser ended on', 'data-key': `paste-${e.id}`, placeholder: 'http://127.0.0.1:…/callback?code=…' });
  const err = h('p', { class: 'error', role: 'alert' });
  pane.append(
    h('p', {}, h('a', { href: lg.url, target: '_blank', rel: 'noopener noreferrer', 'data-login-url': e.id, text: 'Open the login page' }),
      ' in a new tab and approve; this card follows.'),
    h('form', {
      class: 'row', novalidate: true,
      onsubmit: async (ev) => {
        ev.preventDefault();
        err.textContent = '';
        try {
          await api('/api/login/paste', { id: e.id, url: input.value.trim() });
        } catch (x) {
          err.textContent = x.message;
        }
      },
    }, h('span', { class: 'muted small', text: 'Browser on another machine? Paste where it ended:' }), input, h('button', { type: 'submit' }, 'Send')),
    err);
  return pane;
}

function stateText(e) {
  if (e.reloading) return `${e.state} · reloading`;
  if (e.state === 'pending' && !e.settled) return 'pending';
  return e.state;
}
