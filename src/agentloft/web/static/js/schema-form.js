// A form generated from a JSON Schema (a tool type's Config), and the config object read back from it.
//
// Handles what tool configs use: strings (enum → select, secret → password with keep/clear), integers and
// numbers, booleans, arrays of strings (one per line) or of enum values (checkboxes), string maps
// ("Name: value" per line). Anything richer (arrays of objects, $ref) is edited as JSON, never dropped.
import { h } from './dom.js';
import { t } from './i18n.js';

const ACRONYMS = new Set(['url', 'urls', 'api', 'id', 'ms', 'mb', 'json', 'sql', 'rss', 'http', 'uuid', 'a2a']);

/** "maxRedirects" → "Max redirects", "baseUrl" → "Base URL" (generated schema titles read badly). */
export function humanize(key) {
  const words = key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[-_]+/g, ' ').toLowerCase().split(' ')
    .map((w) => (ACRONYMS.has(w) ? (w === 'ms' ? w : w.toUpperCase()) : w));
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function resolve(schema, root) {
  if (schema && schema.$ref && schema.$ref.startsWith('#/$defs/')) {
    return root.$defs?.[schema.$ref.slice(8)] || schema;
  }
  if (schema && Array.isArray(schema.anyOf)) {
    const real = schema.anyOf.filter((s) => s.type !== 'null');
    if (real.length === 1) return { ...resolve(real[0], root), nullable: true, default: schema.default, description: schema.description };
  }
  return schema || {};
}

function kindOf(prop, isSecret) {
  if (isSecret) return 'secret';
  if (Array.isArray(prop.enum)) return 'enum';
  if (prop.type === 'boolean') return 'boolean';
  if (prop.type === 'integer' || prop.type === 'number') return 'number';
  if (prop.type === 'string') return (prop.maxLength || 0) > 300 || /template|hint|prompt/i.test(prop.title || '') ? 'text' : 'string';
  if (prop.type === 'array' && prop.items?.type === 'string' && Array.isArray(prop.items.enum)) return 'multi';
  if (prop.type === 'array' && prop.items?.type === 'string') return 'lines';
  if (prop.type === 'object' && prop.additionalProperties?.type === 'string' && !prop.properties) return 'map';
  return 'json';
}

function control(name, kind, prop, value, secretSet) {
  const id = `cfg-${name}`;
  const field = `config.${name}`;
  switch (kind) {
    case 'boolean':
      return h('input', { type: 'checkbox', id, name: field, checked: Boolean(value) });
    case 'enum':
      return h('select', { id, name: field },
        ...prop.enum.map((v) => h('option', { value: String(v), selected: v === value, text: String(v) })));
    case 'number':
      return h('input', {
        type: 'number', id, name: field, value: value ?? '', min: prop.minimum, max: prop.maximum,
        step: prop.type === 'integer' ? '1' : 'any',
      });
    case 'secret':
      return h('input', {
        type: 'password', id, name: field, autocomplete: 'new-password',
        placeholder: secretSet ? t('tools.secretKept') : '',
      });
    case 'text':
      return h('textarea', { id, name: field, rows: 3, class: 'mono' }, value ?? '');
    case 'lines':
      return h('textarea', { id, name: field, rows: 3, class: 'mono', placeholder: t('tools.onePerLine') }, (value || []).join('\n'));
    case 'map':
      return h('textarea', { id, name: field, rows: 3, class: 'mono', placeholder: 'Name: value' },
        Object.entries(value || {}).map(([k, v]) => `${k}: ${v}`).join('\n'));
    case 'multi':
      return h('div', { class: 'checks', id, 'data-field': field },
        ...prop.items.enum.map((v) => h('label', { class: 'check' },
          h('input', { type: 'checkbox', value: v, checked: (value || []).includes(v) }), ` ${v}`)));
    case 'json':
      return h('textarea', { id, name: field, rows: 4, class: 'mono' }, JSON.stringify(value ?? prop.default ?? null, null, 2));
    default:
      return h('input', { id, name: field, value: value ?? '' });
  }
}

/**
 * Render `schema` into `container` with `values` (falling back to schema defaults).
 * `secrets` = {fields: [...secret field names], set: [...names holding a stored value]}.
 * Returns {read(): config | throws {fields}}.
 */
export function renderSchemaForm(container, schema, values = {}, secrets = { fields: [], set: [] }) {
  const props = schema?.properties || {};
  const entries = [];
  container.replaceChildren();
  for (const [name, raw] of Object.entries(props)) {
    const prop = resolve(raw, schema);
    const isSecret = secrets.fields.includes(name);
    const kind = kindOf(prop, isSecret);
    const value = name in values ? values[name] : prop.default;
    const input = control(name, kind, prop, value, secrets.set.includes(name));
    const hint = prop.description ? h('small', { class: 'muted', text: prop.description }) : null;
    let clear = null;
    if (isSecret && secrets.set.includes(name)) {
      clear = h('input', { type: 'checkbox' });
    }
    let label;
    if (kind === 'boolean') label = h('label', { class: 'check' }, input, ` ${humanize(name)}`);
    else if (kind === 'multi') label = h('div', { class: 'group' }, h('span', { class: 'group-title', text: humanize(name) }), input);
    else label = h('label', {}, humanize(name), input);
    container.append(h('div', { class: 'field', dataset: { config: name } }, label, hint,
      clear ? h('label', { class: 'check' }, clear, ` ${t('tools.clearSecret')}`) : null));
    entries.push({ name, kind, prop, input, clear });
  }
  if (!entries.length) container.append(h('p', { class: 'muted', text: t('tools.noConfig') }));

  function read() {
    const config = {};
    const errors = {};
    for (const { name, kind, prop, input, clear } of entries) {
      const text = input.value;
      switch (kind) {
        case 'boolean': config[name] = input.checked; break;
        case 'enum': config[name] = prop.type === 'integer' || prop.type === 'number' ? Number(text) : text; break;
        case 'number': if (text !== '') config[name] = Number(text); break;
        case 'secret':
          if (clear && clear.checked) config[name] = '';
          else if (text !== '') config[name] = text;
          break;
        case 'lines': config[name] = text.split('\n').map((s) => s.trim()).filter(Boolean); break;
        case 'multi': config[name] = [...input.querySelectorAll('input:checked')].map((c) => c.value); break;
        case 'map': {
          const map = {};
          for (const line of text.split('\n')) {
            if (!line.trim()) continue;
            const at = line.indexOf(':');
            if (at < 1) { errors[`config.${name}`] = t('tools.mapLine'); break; }
            map[line.slice(0, at).trim()] = line.slice(at + 1).trim();
          }
          config[name] = map;
          break;
        }
        case 'json':
          try { if (text.trim()) config[name] = JSON.parse(text); } catch (e) { errors[`config.${name}`] = t('tools.badJson'); }
          break;
        default: config[name] = text;
      }
    }
    if (Object.keys(errors).length) {
      const error = new Error(Object.values(errors)[0]);
      error.fields = errors;
      throw error;
    }
    return config;
  }

  return { read };
}

/** A starting JSON for the debug panel: each input property with its default or an empty value. */
export function sampleInput(schema) {
  const out = {};
  for (const [name, raw] of Object.entries(schema?.properties || {})) {
    const prop = resolve(raw, schema);
    if ('default' in prop) { out[name] = prop.default; continue; }
    if (!(schema.required || []).includes(name)) continue;
    if (Array.isArray(prop.enum)) out[name] = prop.enum[0];
    else if (prop.type === 'integer' || prop.type === 'number') out[name] = 0;
    else if (prop.type === 'boolean') out[name] = false;
    else if (prop.type === 'array') out[name] = [];
    else if (prop.type === 'object') out[name] = {};
    else out[name] = '';
  }
  return out;
}
