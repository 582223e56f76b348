// Chat: talk to an agent. The answer streams in; each tool call folds open
// to its arguments and result; reasoning folds; Cancel stops the turn (its
// tool calls are cancelled and their servers told); usage per turn.
import { h, clear, pretty } from './dom.js';
import { api } from './net.js';
import { progressText } from './tools.js';

export class Chat {
  constructor(el) {
    this.el = el;
    this.running = false;
    this.turns = new Map(); // turn number → its elements
    this.pick = h('select', { id: 'chat-agent', 'aria-label': 'Agent', 'data-key': 'agent' });
    this.log = h('div', { class: 'transcript', id: 'chat-log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation' });
    this.input = h('textarea', { id: 'chat-input', rows: 2, placeholder: 'Message the agent (Enter sends, Shift+Enter for a new line)', 'aria-label': 'Message' });
    this.send = h('button', { type: 'submit', class: 'primary', id: 'chat-send' }, 'Send');
    this.cancel = h('button', { type: 'button', id: 'chat-cancel', hidden: true }, 'Cancel');
    this.fresh = h('button', { type: 'button', id: 'chat-new' }, 'New conversation');
    this.err = h('p', { class: 'error', role: 'alert', id: 'chat-error' });
    this.none = h('p', { class: 'muted', hidden: true, text: 'No agent entry in cordis.yml: add an entry with name: agent to talk to a model.' });
    const form = h('form', { class: 'composer', onsubmit: (e) => { e.preventDefault(); this.submit(); } },
      this.input, h('div', { class: 'row' }, this.send, this.cancel));
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.submit();
      }
    });
    this.cancel.addEventListener('click', () => api('/api/chat/cancel', {}).catch((x) => { this.err.textContent = x.message; }));
    this.fresh.addEventListener('click', () => api('/api/chat/new', {}).catch((x) => { this.err.textContent = x.message; }));
    el.append(h('div', { class: 'summary' }, h('h2', { text: 'Chat' }),
      h('label', { for: 'chat-agent', class: 'small', text: 'Agent' }), this.pick, this.fresh),
    this.none, this.log, form, this.err);
    document.addEventListener('harness-progress', (e) => this.progress(e.detail));
  }

  agents(list, features) {
    const keep = this.pick.value;
    clear(this.pick);
    for (const a of list || []) {
      const info = a.info;
      const label = info ? `${a.id} — ${info.model}${info.note ? ' (' + info.note + ')' : ''}` : `${a.id} — ${a.state}${a.error ? ': ' + a.error : ''}`;
      this.pick.append(h('option', { value: a.id, text: label }));
    }
    if ([...this.pick.options].some((o) => o.value === keep)) this.pick.value = keep;
    const none = !(list || []).length || features.chat === false;
    this.none.hidden = !none;
    this.send.disabled = none || this.running;
  }

  async submit() {
    const text = this.input.value;
    if (!text.trim() || this.running) return;
    this.err.textContent = '';
    try {
      await api('/api/chat', { agent: this.pick.value, message: text });
      this.input.value = '';
    } catch (x) {
      this.err.textContent = x.message;
    }
  }

  setRunning(on) {
    this.running = on;
    this.cancel.hidden = !on;
    this.send.disabled = on || !this.pick.options.length;
    this.fresh.disabled = on;
    this.log.setAttribute('aria-busy', on ? 'true' : 'false');
  }

  // restore draws a whole conversation, as a snapshot holds it.
  restore(c) {
    clear(this.log);
    this.turns.clear();
    for (const it of (c && c.items) || []) this.item(it.turn, it.event);
    if (c && c.agent && [...this.pick.options].some((o) => o.value === c.agent)) this.pick.value = c.agent;
    this.setRunning(!!(c && c.running));
  }

  turn(n) {
    let t = this.turns.get(n);
    if (!t) {
      const el = h('div', { class: 'turn', 'data-turn': n });
      t = { el, text: null, reasoning: null, calls: new Map() };
      this.turns.set(n, t);
      this.log.append(el);
    }
    return t;
  }

  // item adds one event of a turn (§ agent events: text, reasoning,
  // tool_call, tool_result, retry, usage, done, error; user and end are
  // the page's own).
  item(n, e) {
    const t = this.turn(n);
    const stick = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 40;
    switch (e.type) {
      case 'user':
        t.el.append(h('div', { class: 'msg user' }, h('p', { class: 'who', text: 'you' }), h('p', { class: 'text', text: e.text })));
        this.setRunning(true);
        break;
      case 'text':
        if (!t.text) {
          t.text = h('p', { class: 'text answer' });
          t.el.append(h('div', { class: 'msg assistant' }, h('p', { class: 'who', text: 'agent' }), t.text));
          t.reasoning = null;
        }
        t.text.append(e.delta);
        break;
      case 'reasoning':
        if (!t.reasoning) {
          t.reasoning = h('pre', { class: 'reasoning' });
          t.el.append(h('details', { class: 'fold reasoning-fold' }, h('summary', { text: 'Reasoning' }), t.reasoning));
          t.text = null;
        }
        t.reasoning.append(e.delta);
        break;
      case 'tool_call': {
        const body = h('div', { class: 'call-body' }, h('p', { class: 'muted small', text: 'arguments' }), h('pre', { text: pretty(e.arguments) }));
        const status = h('span', { class: 'badge starting', text: 'running' });
        const progress = h('p', { class: 'progress muted small' });
        const fold = h('details', { class: 'fold call', 'data-call': e.id }, h('summary', {}, h('span', { class: 'tool-name', text: `→ ${e.name}` }), ' ', status), body, progress);
        t.calls.set(e.id, { fold, body, status, progress, name: e.name });
        t.el.append(fold);
        t.text = null;
        t.reasoning = null;
        break;
      }
      case 'tool_result': {
        const c = t.calls.get(e.id);
        if (!c) break;
        c.status.textContent = e.isError ? `error · ${e.ms} ms` : `${e.ms} ms`;
        c.status.className = e.isError ? 'badge failed' : 'badge ready';
        c.progress.textContent = '';
        c.body.append(h('p', { class: 'muted small', text: 'result' }), h('pre', { class: e.isError ? 'error' : '', text: e.text }));
        c.done = true;
        break;
      }
      case 'tool_search':
        t.el.append(h('p', { class: 'muted small', text: `tool search: ${e.sent} of ${e.available} tools sent, ${e.loaded} loaded` }));
        break;
      case 'retry':
        t.el.append(h('p', { class: 'muted small', text: `retrying (attempt ${e.attempt}, in ${e.waitMs} ms): ${e.message}` }));
        break;
      case 'usage':
        t.el.append(h('p', { class: 'usage muted small', text: usageText(e) }));
        break;
      case 'done':
        if (e.finishReason === 'length') t.el.append(h('p', { class: 'muted small', text: 'The answer was cut: the model reached its token limit (maxTokens).' }));
        break;
      case 'error':
        t.el.append(h('p', { class: 'error', role: 'alert', text: e.message }));
        break;
      case 'end':
        if (e.cancelled) t.el.append(h('p', { class: 'muted cancelled', text: `Cancelled${e.why ? ` (${e.why})` : ''}.` }));
        for (const c of t.calls.values()) {
          if (!c.done) {
            c.status.textContent = 'cancelled';
            c.status.className = 'badge failed';
          }
        }
        this.setRunning(false);
        break;
    }
    if (stick) this.log.scrollTop = this.log.scrollHeight;
  }

  // progress shows a running tool call's progress under it.
  progress(m) {
    for (const t of this.turns.values()) {
      for (const c of t.calls.values()) {
        if (!c.done && c.name === m.tool) c.progress.textContent = progressText(m);
      }
    }
  }
}

function usageText(u) {
  const parts = [];
  if (u.promptTokens || u.completionTokens) {
    parts.push(`${u.promptTokens} prompt tokens${u.cacheHitTokens ? ` (${u.cacheHitTokens} cached)` : ''}, ${u.completionTokens} completion`);
  }
  parts.push(`${u.steps} ${u.steps === 1 ? 'step' : 'steps'}`, `${u.toolCalls} ${u.toolCalls === 1 ? 'tool call' : 'tool calls'}`, `${(u.ms / 1000).toFixed(2)} s`);
  return parts.join(', ');
}
