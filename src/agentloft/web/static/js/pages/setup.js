// First-run setup: pick a preset, name the model, Save and test, Done → the chat.
// Saving goes through the admin model API (POST once, then PUT, so retrying never leaves duplicates).
// The model is saved switched off and tested with `activate`: the server switches it on and makes it the
// default only when it answered, so a failed test never leaves the chats on a model that cannot reply.
import { api } from '../api.js';
import { busy, readForm, resetFormErrors, showFormError } from '../dom.js';
import { t } from '../i18n.js';

const form = document.getElementById('setup-form');
const keyField = form.querySelector('[data-key-field]');
const noKey = form.querySelector('[data-no-key]');
const baseHint = form.querySelector('[data-base-hint]');
const presetNote = form.querySelector('[data-preset-note]');
const keyHint = form.querySelector('[data-key-hint]');
const hadModel = form.dataset.hasModel === 'true';
const modelHint = form.querySelector('[data-model-hint]');
const result = form.querySelector('[data-testid="setup-result"]');
const saveButton = document.getElementById('save-test');
const doneButton = document.getElementById('setup-done');
let savedId = null;
let keySaved = false; // the saved model has a key (it is never shown again, so the field stays empty)

function selectedPreset() {
  const input = form.querySelector('input[name="preset"]:checked');
  return {
    id: input.value,
    label: input.dataset.label,
    provider: input.dataset.provider,
    baseUrl: input.dataset.baseUrl,
    needsKey: input.dataset.needsKey === 'true',
    offersKey: input.dataset.offersKey === 'true',
    vision: input.dataset.vision === 'true',
    hint: input.dataset.hint,
  };
}

/** Fill the base URL from the preset and show only the fields this provider needs. */
function applyPreset() {
  const preset = selectedPreset();
  form.baseUrl.value = preset.baseUrl;
  const custom = preset.offersKey && !preset.baseUrl;
  baseHint.textContent = custom ? baseHint.dataset.custom
    : preset.baseUrl ? baseHint.dataset.preset : baseHint.dataset.default;
  const note = `setup.note.${preset.id}`;
  presetNote.hidden = t(note) === note;
  presetNote.textContent = presetNote.hidden ? '' : t(note);
  form.model.placeholder = preset.hint;
  form.vision.checked = preset.vision; // the preset's suggested model; the admin may change it
  modelHint.textContent = t('setup.modelHint', { hint: preset.hint });
  const showsKey = preset.needsKey || preset.offersKey;
  keyField.hidden = !showsKey;
  keyHint.textContent = preset.needsKey ? keyHint.dataset.required : keyHint.dataset.optional;
  noKey.hidden = showsKey;
  if (!showsKey) form.apiKey.value = '';
}

/** What the form lacks before anything is saved: a preset that needs a key (OpenAI, Anthropic…) without
 * one would only fail its test, and a custom server without its URL has nowhere to go. */
function missingFields() {
  const preset = selectedPreset();
  const data = readForm(form);
  const missing = {};
  if (!data.baseUrl.trim() && preset.offersKey) missing.baseUrl = t('setup.baseUrlRequired');
  if (!data.model.trim()) missing.model = t('setup.modelRequired');
  if (preset.needsKey && !data.apiKey && !keySaved) {
    missing.apiKey = t('setup.apiKeyRequired', { provider: preset.label });
  }
  return missing;
}

function payload() {
  const preset = selectedPreset();
  const data = readForm(form);
  const body = {
    name: preset.label, provider: preset.provider, model: data.model,
    baseUrl: data.baseUrl.trim() || null, enabled: false, isDefault: false, vision: data.vision,
  };
  const showsKey = preset.needsKey || preset.offersKey;
  if (showsKey && data.apiKey) body.apiKey = data.apiKey;
  else if (!showsKey && savedId) body.apiKey = ''; // switched to a keyless preset: drop the old key
  return body;
}

function showResult(kind, message, detail = '') {
  result.hidden = false;
  result.className = `setup-result ${kind}`;
  result.replaceChildren(document.createTextNode(message));
  if (detail) {
    const note = document.createElement('small');
    note.className = 'muted';
    note.textContent = detail;
    result.append(note);
  }
}

async function save() {
  const model = savedId
    ? await api('PUT', `/api/admin/models/${savedId}`, payload())
    : await api('POST', '/api/admin/models', payload());
  savedId = model.id;
  keySaved = model.hasApiKey;
}

async function test() {
  showResult('', t('setup.testing'));
  let outcome;
  try {
    outcome = await api('POST', `/api/admin/models/${savedId}/test`, { activate: true });
  } catch (error) {
    outcome = { ok: false, error: error.message };
  }
  if (outcome.ok) showResult('ok', t('setup.testOk', { ms: outcome.latencyMs }));
  else showResult('failed', t('setup.testFailed', { error: outcome.error || '' }), t('setup.testFailedHint'));
  doneButton.hidden = !outcome.ok && !hadModel; // a failed model stays off: the chat could not answer yet
  doneButton.classList.toggle('primary', outcome.ok);
  saveButton.classList.toggle('primary', !outcome.ok); // one main action at a time
  if (outcome.ok) doneButton.focus();
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  const missing = missingFields();
  if (Object.keys(missing).length) {
    showFormError(form, { fields: missing }); // beside each field, the first one focused
    return;
  }
  await busy(saveButton, async () => {
    try {
      await save();
    } catch (error) {
      result.hidden = true;
      showFormError(form, error);
      return;
    }
    await test();
  });
});

form.querySelectorAll('input[name="preset"]').forEach((input) => input.addEventListener('change', applyPreset));
doneButton.addEventListener('click', () => window.location.assign('/chat'));
applyPreset();
