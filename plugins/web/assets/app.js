// The harness's page: it trades the token in the URL's fragment for a
// session, opens one event stream, and keeps the views up to date from it.
// docs/rfc/0009-web.md describes the protocol.
import { renderEntries, loginEnded } from './entries.js';
import { renderTools } from './tools.js';
import { renderResources } from './resources.js';
import { renderPrompts } from './prompts.js';
import { Chat } from './chat.js';
import { renderEvents, addEvent, addLog } from './events.js';
import { renderConfig } from './config.js';
import { showQuestion, endQuestion } from './question.js';
import { setCSRF } from './net.js';

const $ = (id) => document.getElementById(id);

// state is what the last snapshot and the changes since said.
export const state = {
  entries: [], tools: [], agents: [], file: null, events: [], logs: [], resources: {}, prompts: [],
  question: null, features: {}, config: '', version: '',
};

const chat = new Chat($('view-chat'));

// The views, by the tab that shows them.
const views = ['entries', 'tools', 'resources', 'prompts', 'chat', 'events', 'config'];
let current = 'entries';

function showView(name, focus) {
  current = name;
  for (const v of views) {
    const tab = $(`tab-${v}`);
    const on = v === name;
    tab.setAttribute('aria-selected', on ? 'true' : 'false');
    tab.tabIndex = on ? 0 : -1;
    $(`view-${v}`).hidden = !on;
  }
  if (focus) $(`tab-${name}`).focus();
  if (location.hash !== `#${name}`) history.replaceState(null, '', `#${name}`);
}

function setupTabs() {
  const tabs = $('tabs');
  tabs.addEventListener('click', (e) => {
    const b = e.target.closest('[role=tab]');
    if (b) showView(b.dataset.view, false);
  });
  // Arrow keys move between tabs, as in every tab list.
  tabs.addEventListener('keydown', (e) => {
    const i = views.indexOf(current);
    let next = null;
    if (e.key === 'ArrowRight') next = views[(i + 1) % views.length];
    if (e.key === 'ArrowLeft') next = views[(i + views.length - 1) % views.length];
    if (e.key === 'Home') next = views[0];
    if (e.key === 'End') next = views[views.length - 1];
    if (next) {
      e.preventDefault();
      showView(next, true);
    }
  });
}

function setConn(text, cls) {
  const c = $('conn');
  c.textContent = text;
  c.className = `conn ${cls}`;
}

function renderAll() {
  $('where').textContent = `${state.config}${state.version ? ' · ' + state.version : ''}`;
  renderEntries($('view-entries'), state);
  renderTools($('view-tools'), state);
  renderResources($('view-resources'), state);
  renderPrompts($('view-prompts'), state);
  chat.agents(state.agents, state.features);
  renderEvents($('view-events'), state);
  renderConfig($('view-config'), state);
}

// handle applies one message of the event stream.
function handle(m) {
  switch (m.type) {
    case 'snapshot':
      Object.assign(state, {
        entries: m.entries || [], tools: m.tools || [], agents: m.agents || [], file: m.file,
        events: m.events || [], logs: m.logs || [], features: m.features || {},
        resources: m.resources || {}, prompts: m.prompts || [],
        config: m.config || '', version: m.version || '',
      });
      renderAll();
      chat.restore(m.chat);
      if (m.question) showQuestion(m.question);
      else endQuestion();
      break;
    case 'entries':
      state.entries = m.entries || [];
      renderEntries($('view-entries'), state);
      break;
    case 'tools':
      state.tools = m.tools || [];
      renderTools($('view-tools'), state);
      renderEntries($('view-entries'), state); // its summary counts them
      break;
    case 'login':
      loginEnded(m.login);
      break;
    case 'resources':
      state.resources = m.resources || {};
      renderResources($('view-resources'), state);
      break;
    case 'prompts':
      state.prompts = m.prompts || [];
      renderPrompts($('view-prompts'), state);
      break;
    case 'agents':
      state.agents = m.agents || [];
      chat.agents(state.agents, state.features);
      break;
    case 'file':
      state.file = m.file;
      renderConfig($('view-config'), state);
      break;
    case 'event':
      addEvent($('view-events'), state, m.event);
      break;
    case 'log':
      addLog($('view-events'), state, m.log);
      break;
    case 'chat':
      chat.item(m.turn, m.event);
      break;
    case 'chat-new':
      chat.restore({ items: [], running: false });
      break;
    case 'question':
      showQuestion(m.question);
      break;
    case 'question-end':
      endQuestion(m.id);
      break;
    case 'progress':
      document.dispatchEvent(new CustomEvent('harness-progress', { detail: m }));
      break;
  }
}

let source = null;

function connect() {
  if (source) source.close();
  source = new EventSource('/api/events');
  source.onopen = () => setConn('live', 'live');
  source.onmessage = (e) => {
    let m;
    try {
      m = JSON.parse(e.data);
    } catch {
      return;
    }
    handle(m);
  };
  source.onerror = async () => {
    if (source.readyState === EventSource.CONNECTING) {
      setConn('reconnecting…', 'down');
      return;
    }
    // The stream was refused: the session may have ended (a restarted
    // harness has a new token).
    setConn('disconnected', 'down');
    const res = await fetch('/api/session', { credentials: 'same-origin' }).catch(() => null);
    if (res && res.status === 401) signedOut('The session ended (the harness restarted, or its page was restarted): open the new URL it printed.');
    else setTimeout(connect, 2000);
  };
}

function signedOut(why) {
  if (source) source.close();
  $('tabs').hidden = true;
  for (const v of views) $(`view-${v}`).hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = why || '';
  setConn('signed out', 'down');
}

function signedIn(data) {
  setCSRF(data.csrf);
  state.config = data.config || '';
  state.version = data.version || '';
  $('signin').hidden = true;
  $('tabs').hidden = false;
  const want = location.hash.slice(1);
  showView(views.includes(want) ? want : 'entries', false);
  connect();
}

async function trade(token) {
  const res = await fetch('/api/session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ token }),
    credentials: 'same-origin',
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error || `HTTP ${res.status}`);
  return data;
}

// fromFragment trades a token in the URL's fragment, which the browser
// never sends, for a session cookie, and takes it out of the address bar.
// It reports whether there was one.
async function fromFragment() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return false;
  history.replaceState(null, '', location.pathname);
  try {
    signedIn(await trade(decodeURIComponent(m[1])));
  } catch (err) {
    signedOut(err.message);
  }
  return true;
}

async function boot() {
  setupTabs();
  // A prompt's text, put in the chat's message box to edit and send.
  document.addEventListener('harness-compose', (e) => {
    showView('chat', false);
    const input = document.getElementById('chat-input');
    input.value = e.detail.text;
    input.focus();
  });
  $('signin-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      signedIn(await trade($('signin-token').value.trim()));
      $('signin-token').value = '';
    } catch (err) {
      $('signin-error').textContent = err.message;
    }
  });
  // A URL with the token pasted into a tab that shows the page already
  // changes only the fragment: no new load.
  window.addEventListener('hashchange', () => { fromFragment(); });
  if (await fromFragment()) return;
  const res = await fetch('/api/session', { credentials: 'same-origin' }).catch(() => null);
  if (res && res.ok) signedIn(await res.json());
  else signedOut('');
}

boot();
