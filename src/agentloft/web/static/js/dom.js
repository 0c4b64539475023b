// Small DOM helpers shared by the page scripts: element building, forms, errors, dialogs, text boxes.
import { t } from './i18n.js';

/** h('button', {class: 'x', onclick: fn, dataset: {id: 1}}, 'text', child) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key === 'text') el.textContent = value;
    else if (key === 'html') el.innerHTML = value; // only for server-sanitised HTML
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An error in the reader's language: the words for its API code when there are some, else its message.
 * The words are general ("Some of the input is not valid."); what the API says about each field (which
 * one, the limit it broke) follows them, so the reader learns what to change. */
export function errorText(error) {
  if (!error) return '';
  if (error.code) {
    const key = `apiError.${error.code}`;
    if (t(key) !== key) {
      const detail = Object.entries(error.fields || {}).map(([path, message]) => `${path}: ${message}`);
      return detail.length ? t('error.withDetail', { text: t(key), detail: detail.join('; ') }) : t(key);
    }
  }
  return error.message || String(error);
}

export function showError(el, error) {
  if (!el) return;
  el.textContent = errorText(error);
  el.hidden = !error;
}

export function clearFieldErrors(form) {
  form.querySelectorAll('.field-error').forEach((n) => n.remove());
  form.querySelectorAll('[aria-invalid]').forEach((n) => n.removeAttribute('aria-invalid'));
}

/** Put each API field message ({"baseUrl": "..."}) under its input; answer the ones without an input. */
export function showFieldErrors(form, fields = {}) {
  clearFieldErrors(form);
  const orphans = {};
  for (const [path, message] of Object.entries(fields)) {
    const input = form.querySelector(`[name="${CSS.escape(path)}"]`)
      || form.querySelector(`[data-field="${CSS.escape(path)}"]`);
    if (!input) { orphans[path] = message; continue; }
    input.setAttribute('aria-invalid', 'true');
    const note = h('small', { class: 'field-error', text: message });
    (input.closest('.field') || input.closest('label') || input.parentElement).append(note);
  }
  return orphans;
}

/** Show an ApiError on a form, each problem once: field messages beside their inputs, and the form's
 * .form-error only for what has no input of its own. */
export function showFormError(form, error) {
  const fields = error.fields || {};
  const orphans = showFieldErrors(form, fields);
  const box = form.querySelector('.form-error');
  if (Object.keys(fields).length && !Object.keys(orphans).length) { showError(box, null); return; }
  if (Object.keys(orphans).length) {
    box.textContent = Object.entries(orphans).map(([path, message]) => `${path}: ${message}`).join(' ');
    box.hidden = false;
    return;
  }
  showError(box, error);
}

export function resetFormErrors(form) {
  clearFieldErrors(form);
  showError(form.querySelector('.form-error'), null);
}

/** Read named controls: checkboxes as booleans, data-type="int" as numbers, "int-or-null" '' as null. */
export function readForm(form) {
  const data = {};
  for (const el of form.elements) {
    if (!el.name || el.disabled || el.type === 'submit' || el.type === 'button') continue;
    if (el.type === 'checkbox') data[el.name] = el.checked;
    else if (el.dataset.type === 'int') data[el.name] = el.value === '' ? undefined : Number(el.value);
    else if (el.dataset.type === 'int-or-null') data[el.name] = el.value === '' ? null : Number(el.value);
    else data[el.name] = el.value;
  }
  return data;
}

export function fillForm(form, values) {
  for (const el of form.elements) {
    if (!el.name || !(el.name in values)) continue;
    const value = values[el.name];
    if (el.type === 'checkbox') el.checked = Boolean(value);
    else el.value = value === null || value === undefined ? '' : String(value);
  }
}

/** Disable a button while an async action runs, so a double click never sends twice. */
export async function busy(button, action) {
  if (button) button.disabled = true;
  try { return await action(); } finally { if (button) button.disabled = false; }
}

/** Wire a <dialog>: [data-close] buttons close it; returns {open, close}. */
export function dialog(el) {
  el.querySelectorAll('[data-close]').forEach((b) => b.addEventListener('click', () => el.close()));
  return { open: () => el.showModal(), close: () => el.close() };
}

export function badge(text, kind = '') {
  return h('span', { class: `badge ${kind}`.trim(), text });
}

/** Put `text` on the clipboard; answers whether it worked. The Clipboard API needs a secure origin
 * (https or localhost), so a plain-http intranet install falls back to a hidden textarea. */
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch { /* fall back below */ }
  const area = h('textarea', { class: 'visually-hidden', readonly: true, 'aria-hidden': 'true' });
  area.value = text;
  document.body.append(area);
  area.select();
  let ok = false;
  try { ok = document.execCommand('copy'); } catch { ok = false; }
  area.remove();
  return ok;
}

// --- text boxes ----------------------------------------------------------------------------------
// What a chat text box does with the keyboard and its size, shared by the composer and the editor of a
// sent message: Enter sends, Shift+Enter breaks the line, and Enter that confirms an input method's
// composition (Chinese, Japanese, Korean) only confirms it; the box grows with its text up to its CSS
// max-height, as the text boxes of everyday chat apps do, so a pasted page can be read before it is sent.
// On a touch screen (a phone's on-screen keyboard has no Shift) Enter breaks the line and the Send button
// sends, as in the phone versions of those apps.

const TOUCH = window.matchMedia('(hover: none) and (pointer: coarse)');

/** Whether Enter breaks the line here (a touch screen) rather than sending. */
export const enterBreaksLines = () => TOUCH.matches;

/** Call `onEnter()` when Enter (without Shift) is pressed in `area` outside an IME composition, unless
 * the screen is a touch screen and the box has more than one line (`singleLine`: an <input>).
 * `event.isComposing` alone misses two cases: Safari ends the composition *before* the Enter that
 * confirmed it arrives (that keydown has keyCode 229), and a composition some IMEs start without the
 * flag set; the compositionstart/compositionend pair is tracked as well. */
export function onEnterKey(area, onEnter, { singleLine = false } = {}) {
  let composing = false;
  area.addEventListener('compositionstart', () => { composing = true; });
  area.addEventListener('compositionend', () => { composing = false; });
  area.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' || event.shiftKey || (!singleLine && enterBreaksLines())) return;
    if (composing || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    onEnter();
  });
}

/** Fit `area`'s height to its text (the CSS max-height caps it; beyond that it scrolls). Set by CSSOM,
 * which the content security policy allows (it refuses only style attributes written in markup). */
export function fitHeight(area) {
  area.style.height = 'auto';
  const border = area.offsetHeight - area.clientHeight;
  area.style.height = `${area.scrollHeight + border}px`;
}

/** Keep `area` fitted to its text as it is typed, pasted or set by a script (call the returned
 * function after setting `value`, which fires no input event). */
export function autoGrow(area) {
  const fit = () => fitHeight(area);
  area.addEventListener('input', fit);
  fit();
  return fit;
}
