// Small DOM helpers shared by the page scripts: element building, forms, errors, dialogs, text boxes.
import { lang, t } from './i18n.js';

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

function known(key) {
  return t(key) !== key;
}

/** A field problem's values as the reader writes them (100,000 / 100.000). */
function localParams(params = {}) {
  return Object.fromEntries(Object.entries(params).map(([name, value]) => [name,
    typeof value === 'number' ? value.toLocaleString(lang) : value]));
}

/** One field's problem in the reader's language: the words for its code (`fieldCodes`, e.g.
 * "at most 100,000 characters") when there are some, else what the API said (a check's own English words,
 * or a problem a page found itself and worded already). */
export function fieldText(error, path) {
  const problem = (error.fieldCodes || {})[path];
  if (problem) {
    const params = problem.params || {};
    // "at least 1 character" is what an empty value breaks: say that it is empty
    const code = problem.code === 'string_too_short' && params.min_length === 1 ? 'empty' : problem.code;
    // a problem worded differently by one of its values (a budget's `day_tokens`, `month_cost`, …)
    const variant = params.variant && `fieldError.${code}.${params.variant}`;
    const key = variant && known(variant) ? variant : `fieldError.${code}`;
    if (known(key)) return t(key, localParams(params));
  }
  return (error.fields || {})[path];
}

/** "message: at most 100,000 characters", the field named as the page names it where it has a name. */
function fieldDetail(error, path) {
  const name = known(`fieldName.${path}`) ? t(`fieldName.${path}`) : path;
  return t('error.fieldDetail', { field: name, text: fieldText(error, path) });
}

/** An error in the reader's language: the words for its API code when there are some, else its message.
 * The words are general ("Some of the input is not valid."); what is wrong with each field (which one,
 * the limit it broke) follows them, so the reader learns what to change. */
export function errorText(error) {
  if (!error) return '';
  if (error.code) {
    const key = `apiError.${error.code}`;
    if (known(key)) {
      const detail = Object.keys(error.fields || {}).map((path) => fieldDetail(error, path));
      return detail.length
        ? t('error.withDetail', { text: t(key), detail: detail.join(t('error.detailSeparator')) }) : t(key);
    }
  }
  return error.message || String(error);
}

// Refusals whose words already say what the reader can do (bad input, a wrong password, no access, not
// found, a conflict): there is nothing to report, so they go without a reference.
const OWN_TO_MEND = new Set([400, 401, 403, 404, 409, 422]);

/** Show `error` (or nothing, for null) in the error box `el`, with the request's reference when it has
 * one and is worth a report (a server failure, a limit hit): the reader can quote it, and it finds the
 * request's log lines. */
export function showError(el, error) {
  if (!el) return;
  el.textContent = errorText(error);
  if (error && error.requestId && !OWN_TO_MEND.has(error.status)) {
    el.append(' ', h('span', { class: 'error-reference small-text', dataset: { testid: 'error-reference' },
      text: t('error.reference', { id: error.requestId }) }));
  }
  el.hidden = !error;
}

export function clearFieldErrors(form) {
  form.querySelectorAll('.field-error').forEach((n) => n.remove());
  form.querySelectorAll('[aria-invalid]').forEach((n) => n.removeAttribute('aria-invalid'));
}

/** Put each field's problem ({"baseUrl": "..."}, worded by its code when `fieldCodes` has one) under
 * its input; answer the paths without an input. */
export function showFieldErrors(form, fields = {}, fieldCodes = {}) {
  clearFieldErrors(form);
  const orphans = [];
  for (const path of Object.keys(fields)) {
    const input = form.querySelector(`[name="${CSS.escape(path)}"]`)
      || form.querySelector(`[data-field="${CSS.escape(path)}"]`);
    if (!input) { orphans.push(path); continue; }
    input.setAttribute('aria-invalid', 'true');
    const note = h('small', { class: 'field-error', text: fieldText({ fields, fieldCodes }, path) });
    (input.closest('.field') || input.closest('label') || input.parentElement).append(note);
  }
  return orphans;
}

/** Show an ApiError on a form, each problem once: field messages beside their inputs, and the error box
 * (the form's .form-error unless `box` names another) only for what has no input of its own. The first
 * invalid input takes the focus, which also scrolls a long dialog to it: the reader is at the Save
 * button, the empty Name field may be a screen above. */
export function showFormError(form, error, box = form.querySelector('.form-error')) {
  const fields = error.fields || {};
  const orphans = showFieldErrors(form, fields, error.fieldCodes);
  const firstInvalid = form.querySelector('[aria-invalid="true"]');
  if (firstInvalid) firstInvalid.focus();
  if (Object.keys(fields).length && !orphans.length) { showError(box, null); return; }
  if (orphans.length) {
    box.textContent = orphans.map((path) => fieldDetail(error, path)).join(t('error.detailSeparator'));
    box.hidden = false;
  } else {
    showError(box, error);
  }
  if (!firstInvalid && box) box.scrollIntoView({ block: 'nearest' });
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

/** Ask `question` in the page's own dialog (styled like the page and in its language, unlike the
 * browser's confirm()); resolves true when `confirmLabel` was pressed, false on Cancel or Escape. Cancel
 * has the focus first, so a stray Enter keeps what was about to be deleted. */
export function confirmDialog(question, { confirmLabel = t('action.delete'), danger = true } = {}) {
  const cancel = h('button', { type: 'button', text: t('action.cancel') });
  const ok = h('button', { type: 'button', class: danger ? 'danger' : 'primary', text: confirmLabel });
  const box = h('dialog', { class: 'dialog confirm-dialog', 'aria-labelledby': 'confirm-question' },
    h('p', { id: 'confirm-question', text: question }), h('footer', { class: 'dialog-actions' }, cancel, ok));
  document.body.append(box);
  return new Promise((resolve) => {
    let answer = false;
    cancel.addEventListener('click', () => box.close());
    ok.addEventListener('click', () => { answer = true; box.close(); });
    box.addEventListener('close', () => { box.remove(); resolve(answer); });
    box.showModal();
    cancel.focus();
  });
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
