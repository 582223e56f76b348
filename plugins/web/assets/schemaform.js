// A form for a tool's arguments, generated from its input schema: a field
// per property for the types a form can take (text, numbers, yes/no,
// choices, lists of those), JSON for the rest; and, for every schema, the
// whole arguments as JSON.
import { h, pretty } from './dom.js';

let seq = 0;

// schemaForm returns {el, read}: read() gives the arguments object, or
// throws an Error naming the field that does not fit.
export function schemaForm(schema, key) {
  const props = (schema && typeof schema === 'object' && schema.properties && typeof schema.properties === 'object') ? schema.properties : {};
  const required = new Set(Array.isArray(schema && schema.required) ? schema.required : []);
  const fields = [];
  const box = h('div', { class: 'fields' });
  for (const [name, prop] of Object.entries(props)) {
    const f = field(name, prop || {}, required.has(name), key);
    fields.push(f);
    box.append(f.el);
  }
  // The JSON editor: all of the arguments at once, for any schema.
  const id = `args-json-${++seq}`;
  const json = h('textarea', { id, class: 'json', rows: 6, spellcheck: 'false', 'data-key': `${key}-json` });
  const useJSON = h('input', { type: 'checkbox', id: `${id}-on`, 'data-key': `${key}-json-on` });
  const jsonBox = h('div', { class: 'json-box', hidden: true }, h('label', { for: id, text: 'Arguments (JSON)' }), json);
  useJSON.addEventListener('change', () => {
    if (useJSON.checked) {
      try {
        json.value = pretty(readFields());
      } catch {
        json.value = json.value || '{}';
      }
    }
    jsonBox.hidden = !useJSON.checked;
    box.hidden = useJSON.checked;
  });
  if (!fields.length) {
    useJSON.checked = true;
    json.value = '{}';
    jsonBox.hidden = false;
  }
  const el = h('div', { class: 'schema-form' }, box,
    h('div', { class: 'row small' }, useJSON, h('label', { for: `${id}-on`, text: 'Edit the arguments as JSON' })),
    jsonBox);

  function readFields() {
    const out = {};
    for (const f of fields) {
      const v = f.read();
      if (v !== undefined) out[f.name] = v;
    }
    return out;
  }
  function read() {
    if (useJSON.checked) {
      let v;
      try {
        v = JSON.parse(json.value.trim() || '{}');
      } catch (err) {
        throw new Error(`the arguments are not valid JSON: ${err.message}`);
      }
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('the arguments must be one JSON object');
      return v;
    }
    return readFields();
  }
  return { el, read };
}

function typeOf(prop) {
  let t = prop.type;
  if (Array.isArray(t)) t = t.find((x) => x !== 'null');
  if (!t && Array.isArray(prop.enum)) t = 'string';
  return t;
}

// field makes one property's input.
function field(name, prop, required, key) {
  const id = `field-${++seq}`;
  const t = typeOf(prop);
  const label = h('label', { for: id }, h('span', { class: 'name', text: prop.title || name }), required ? h('span', { class: 'req', text: ' required' }) : null);
  const help = prop.description ? h('p', { class: 'help', text: prop.description }) : null;
  const hasDefault = prop.default !== undefined;
  let input;
  let read;

  const text = (v) => (v === undefined ? '' : (typeof v === 'string' ? v : JSON.stringify(v)));
  const attrs = { id, name, 'data-key': `${key}-${name}`, 'data-field': name };
  if (Array.isArray(prop.enum) && prop.enum.length) {
    input = h('select', attrs, h('option', { value: '', text: required ? '— choose —' : '(not set)' }),
      prop.enum.map((v, i) => h('option', { value: String(i), text: text(v) })));
    if (hasDefault) {
      const i = prop.enum.findIndex((v) => JSON.stringify(v) === JSON.stringify(prop.default));
      if (i >= 0) input.value = String(i);
    }
    read = () => (input.value === '' ? miss() : prop.enum[Number(input.value)]);
  } else if (t === 'boolean') {
    input = h('select', attrs, h('option', { value: '', text: '(not set)' }), h('option', { value: 'true', text: 'true' }), h('option', { value: 'false', text: 'false' }));
    if (hasDefault) input.value = String(!!prop.default);
    read = () => (input.value === '' ? miss() : input.value === 'true');
  } else if (t === 'integer' || t === 'number') {
    input = h('input', { ...attrs, type: 'number', step: t === 'integer' ? '1' : 'any', min: prop.minimum, max: prop.maximum, placeholder: hasDefault ? `default ${text(prop.default)}` : null });
    read = () => {
      const s = input.value.trim();
      if (s === '') return miss();
      const n = Number(s);
      if (!isFinite(n)) throw new Error(`${name}: ${s} is not a number`);
      if (t === 'integer' && !Number.isInteger(n)) throw new Error(`${name}: ${s} is not a whole number`);
      return n;
    };
  } else if (t === 'string') {
    const long = (prop.maxLength || 0) > 200 || /text|content|body|query|code|script|prompt|description|message/i.test(name);
    input = long ? h('textarea', { ...attrs, rows: 3 }) : h('input', { ...attrs, type: 'text', spellcheck: 'false' });
    if (hasDefault) input.placeholder = `default ${text(prop.default)}`;
    read = () => (input.value === '' ? miss() : input.value);
  } else if (t === 'array' && prop.items && ['string', 'number', 'integer'].includes(typeOf(prop.items))) {
    const it = typeOf(prop.items);
    input = h('textarea', { ...attrs, rows: 3, placeholder: 'one per line' });
    read = () => {
      const lines = input.value.split('\n').map((l) => l.trim()).filter((l) => l !== '');
      if (!lines.length) return miss();
      return lines.map((l) => {
        if (it === 'string') return l;
        const n = Number(l);
        if (!isFinite(n)) throw new Error(`${name}: ${l} is not a number`);
        return n;
      });
    };
  } else {
    // An object, a list of objects, a union: JSON.
    input = h('textarea', { ...attrs, rows: 3, class: 'json', spellcheck: 'false', placeholder: 'JSON' });
    read = () => {
      const s = input.value.trim();
      if (s === '') return miss();
      try {
        return JSON.parse(s);
      } catch (err) {
        throw new Error(`${name}: not valid JSON (${err.message})`);
      }
    };
  }
  function miss() {
    if (required && !hasDefault) throw new Error(`${prop.title || name} is required`);
    return undefined;
  }
  const hint = hintOf(prop, t);
  const el = h('div', { class: 'field' }, label, input, hint ? h('p', { class: 'hint', text: hint }) : null, help);
  return { name, el, read };
}

function hintOf(prop, t) {
  const parts = [];
  if (t) parts.push(t === 'array' && prop.items ? `list of ${typeOf(prop.items) || 'values'}` : t);
  if (prop.format) parts.push(prop.format);
  if (prop.minimum !== undefined) parts.push(`≥ ${prop.minimum}`);
  if (prop.maximum !== undefined) parts.push(`≤ ${prop.maximum}`);
  if (prop.default !== undefined) parts.push(`default ${JSON.stringify(prop.default)}`);
  return parts.join(' · ');
}
