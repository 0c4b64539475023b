// The page's interface strings (rendered by the server into #i18n-strings), for scripts.

const node = document.getElementById('i18n-strings');
const strings = node ? JSON.parse(node.textContent) : {};

export const lang = document.documentElement.lang || 'en';

export function t(key, values = {}) {
  let text = Object.prototype.hasOwnProperty.call(strings, key) ? strings[key] : key;
  for (const [name, value] of Object.entries(values)) text = text.replaceAll(`{${name}}`, String(value));
  return text;
}

export function formatDate(iso) {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso
    : new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeStyle: 'short' }).format(date);
}
