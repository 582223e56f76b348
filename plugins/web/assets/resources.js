// Resources: every server's resources and resource templates; read one
// (a template's URI made from a field per variable, RFC 6570) and see its
// contents as the server sent them: text as text, an image as an image,
// other blobs by size.
import { h, clear, keepFocus, splitView, matchesWords, suggestions } from './dom.js';
import { api } from './net.js';

let query = '';
let selected = ''; // "r|server|uri" or "t|server|uriTemplate"
let shown = '';
let listEl = null;
let detailEl = null;

export function renderResources(el, state) {
  if (!state.features.resources) {
    clear(el).append(h('p', { class: 'muted', text: 'This harness offers no resources to the page.' }));
    listEl = null;
    return;
  }
  if (!listEl) {
    ({ list: listEl, detail: detailEl } = splitView(clear(el), { title: 'Resources', id: 'resource-search', noun: 'resources', navLabel: 'Resource list' },
      (q) => { query = q; drawList(state); }));
  }
  drawList(state);
  drawDetail(state);
}

function items(state) {
  const r = state.resources || {};
  const out = [];
  for (const x of r.resources || []) out.push({ key: `r|${x.server}|${x.uri}`, kind: 'resource', label: x.title || x.name || x.uri, sub: x.uri, x });
  for (const x of r.templates || []) out.push({ key: `t|${x.server}|${x.uriTemplate}`, kind: 'template', label: x.title || x.name || x.uriTemplate, sub: x.uriTemplate, x });
  return out;
}

function matches(it, q) {
  return matchesWords(`${it.label}\n${it.sub}\n${it.x.server}\n${it.x.description || ''}`, q);
}

function drawList(state) {
  keepFocus(listEl, () => {
    clear(listEl);
    const all = items(state);
    const list = all.filter((it) => matches(it, query));
    let server = null;
    for (const it of list) {
      if (it.x.server !== server) {
        server = it.x.server;
        listEl.append(h('li', { class: 'muted small', text: `server ${server}` }));
      }
      listEl.append(h('li', {},
        h('button', {
          type: 'button', class: it.key === selected ? 'tool selected' : 'tool', 'data-key': `res-${it.key}`, 'data-resource': it.sub,
          'aria-current': it.key === selected ? 'true' : null,
          onclick: () => { selected = it.key; drawList(state); drawDetail(state); focusDetail(); },
        }, h('span', { class: 'tool-name', text: it.label }), h('span', { class: 'tool-first', text: it.kind === 'template' ? `template ${it.sub}` : it.sub }))));
    }
    if (!list.length) listEl.append(h('li', { class: 'muted', text: all.length ? 'No resource matches.' : 'No server offers resources.' }));
  });
}

function focusDetail() {
  const first = detailEl.querySelector('input, button');
  if (first) first.focus();
}

function drawDetail(state) {
  const it = items(state).find((x) => x.key === selected);
  if (!it) {
    if (shown !== '') {
      shown = '';
      clear(detailEl);
    }
    if (!detailEl.childElementCount) detailEl.append(h('p', { class: 'muted', text: selected ? 'That resource is no longer offered.' : 'Pick a resource to read it.' }));
    return;
  }
  const def = JSON.stringify(it.x);
  if (def === shown) return; // unchanged: keep what was typed and read
  shown = def;
  clear(detailEl);
  const x = it.x;
  const uri = h('input', { type: 'text', id: 'resource-uri', 'aria-label': 'URI', 'data-key': 'uri', value: it.kind === 'template' ? x.uriTemplate : x.uri, readonly: it.kind !== 'template' });
  const out = h('div', { class: 'result', id: 'resource-contents', 'aria-live': 'polite' });
  const err = h('p', { class: 'error', id: 'resource-error', role: 'alert' });
  const readB = h('button', { type: 'submit', class: 'primary', id: 'resource-read', 'data-key': 'read' }, 'Read');
  detailEl.append(h('h3', { class: 'tool-title', text: it.label }),
    h('p', { class: 'muted', text: `from server ${x.server}${x.mimeType ? ` · ${x.mimeType}` : ''}${x.size ? ` · ${x.size} bytes` : ''}` }),
    x.description ? h('p', { class: 'description', text: x.description }) : null,
    it.kind === 'template' ? h('p', { class: 'muted small', text: 'A template: fill in its variables (or the URI itself), then read.' }) : null,
    h('form', {
      class: 'call-form', novalidate: true,
      onsubmit: async (e) => {
        e.preventDefault();
        err.textContent = '';
        readB.disabled = true;
        clear(out);
        try {
          showContents(out, await api('/api/read', { server: x.server, uri: uri.value.trim() }));
        } catch (y) {
          err.textContent = y.message;
        } finally {
          readB.disabled = false;
        }
      },
    }, it.kind === 'template' ? variableFields(x, uri) : null, h('div', { class: 'row' }, uri, readB), err), out);
}

// variableFields are a field per variable of template x; typing in them
// writes the expanded URI into uri. When x's server suggests values
// (completes), each field lists them as the person types.
function variableFields(x, uri) {
  const template = x.uriTemplate;
  const names = [...new Set(expressions(template).flatMap((e) => e.vars))];
  if (!names.length) return null;
  const values = {};
  const fields = h('div', { class: 'fields' });
  for (const n of names) {
    const id = `template-var-${n}`;
    const list = x.completes ? h('datalist', { id: `${id}-values` }) : null;
    const input = h('input', { type: 'text', id, 'data-key': id, list: list ? list.id : null, autocomplete: list ? 'off' : null,
      oninput: (e) => { values[n] = e.target.value; uri.value = expand(template, values); } });
    if (list) {
      suggestions(input, list, (value) => {
        const given = {};
        for (const [k, v] of Object.entries(values)) if (k !== n && v !== '') given[k] = v;
        return api('/api/template/complete', { server: x.server, uriTemplate: template, argument: n, value, arguments: given });
      });
    }
    fields.append(h('div', { class: 'field' }, h('label', { for: id, text: n }), input, list));
  }
  return fields;
}

// expressions are the {…} of a URI template: each its operator and the
// names of its variables (prefix and explode modifiers dropped).
function expressions(template) {
  return [...template.matchAll(/\{([+#./;?&]?)([^}]*)\}/g)].map((m) => {
    const specs = m[2].split(',').map((v) => {
      const prefix = /:(\d+)$/.exec(v.trim());
      return { name: v.replace(/[:*].*$/, '').trim(), prefix: prefix ? Number(prefix[1]) : 0 };
    }).filter((v) => v.name);
    return { op: m[1], specs, vars: specs.map((v) => v.name), text: m[0] };
  });
}

// expand fills a URI template with values (RFC 6570, levels 1 to 3, and
// level 4's prefix; a value is a string, so an explode changes nothing):
// an unset variable is left out.
export function expand(template, values) {
  let out = '';
  let at = 0;
  for (const e of expressions(template)) {
    const reserved = e.op === '+' || e.op === '#';
    const enc = (v) => (reserved ? encodeURI(v) : encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`));
    const set = e.specs.filter((v) => values[v.name] !== undefined && values[v.name] !== '');
    let s = '';
    if (set.length) {
      const named = e.op === ';' || e.op === '?' || e.op === '&';
      const value = (v) => enc(v.prefix ? [...values[v.name]].slice(0, v.prefix).join('') : values[v.name]);
      const parts = set.map((v) => (named ? `${v.name}=${value(v)}` : value(v)));
      const first = { '': '', '+': '', '#': '#', '.': '.', '/': '/', ';': ';', '?': '?', '&': '&' }[e.op];
      const sep = { '': ',', '+': ',', '#': ',', '.': '.', '/': '/', ';': ';', '?': '&', '&': '&' }[e.op];
      s = first + parts.join(sep);
    }
    // The template's text up to the expression, then its expansion: a value
    // is never read as a template or as a replacement pattern.
    const i = template.indexOf(e.text, at);
    out += template.slice(at, i) + s;
    at = i + e.text.length;
  }
  return out + template.slice(at);
}

const imageTypes = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

function showContents(out, res) {
  clear(out);
  out.append(h('h4', {}, 'Contents', h('span', { class: 'muted small', text: ` ${res.ms} ms` })));
  const blocks = h('div', { class: 'blocks' });
  for (const c of res.contents || []) {
    const el = h('div', { class: 'block' }, h('p', { class: 'muted small', text: `${c.uri}${c.mimeType ? ` · ${c.mimeType}` : ''}` }));
    if (typeof c.text === 'string') el.append(h('pre', { text: c.text }));
    else if (imageTypes.has(c.mimeType) && typeof c.blob === 'string' && /^[A-Za-z0-9+/=\s]*$/.test(c.blob)) {
      el.append(h('img', { class: 'result-image', alt: `${c.uri} (${c.mimeType})`, src: `data:${c.mimeType};base64,${c.blob.replace(/\s/g, '')}` }));
    } else el.append(h('p', { class: 'muted', text: `binary, ${Math.round(((c.blob || '').length * 3) / 4)} bytes: not shown` }));
    blocks.append(el);
  }
  if (!(res.contents || []).length) blocks.append(h('p', { class: 'muted', text: 'The server sent no contents.' }));
  out.append(blocks);
}
