// First-run setup: pick a preset, name the model, Save and test, Done → the chat.
// Saving goes through the admin model API (POST once, then PUT, so retrying never leaves duplicates).
import { api } from '../api.js';
import { busy, readForm, resetFormErrors, showFormError } from '../dom.js';
import { t } from '../i18n.js';

const form = document.getElementById('setup-form');
const keyField = form.querySelector('[data-key-field]');
const noKey = form.querySelector('[data-no-key]');
const baseHint = form.querySelector('[data-base-hint]');
const modelHint = form.querySelector('[data-model-hint]');
const result = form.querySelector('[data-testid="setup-result"]');
const saveButton = document.getElementById('save-test');
const doneButton = document.getElementById('setup-done');
let savedId = null;

function selectedPreset() {
  const input = form.querySelector('input[name="preset"]:checked');
  return {
    label: input.dataset.label,
    provider: input.dataset.provider,
    baseUrl: input.dataset.baseUrl,
    needsKey: input.dataset.needsKey === 'true',
    hint: input.dataset.hint,
  };
}

/** Fill the base URL from the preset and show only the fields this provider needs. */
function applyPreset() {
  const preset = selectedPreset();
  form.baseUrl.value = preset.baseUrl;
  baseHint.textContent = preset.baseUrl ? baseHint.dataset.preset : baseHint.dataset.default;
  form.model.placeholder = preset.hint;
  modelHint.textContent = t('setup.modelHint', { hint: preset.hint });
  keyField.hidden = !preset.needsKey;
  noKey.hidden = preset.needsKey;
  if (!preset.needsKey) form.apiKey.value = '';
}

function payload() {
  const preset = selectedPreset();
  const data = readForm(form);
  const body = {
    name: preset.label, provider: preset.provider, model: data.model,
    baseUrl: data.baseUrl.trim() || null, enabled: true, isDefault: true,
  };
  if (preset.needsKey && data.apiKey) body.apiKey = data.apiKey;
  else if (!preset.needsKey && savedId) body.apiKey = ''; // switched to a keyless preset: drop the old key
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
}

async function test() {
  showResult('', t('setup.testing'));
  let outcome;
  try {
    outcome = await api('POST', `/api/admin/models/${savedId}/test`);
  } catch (error) {
    outcome = { ok: false, error: error.message };
  }
  if (outcome.ok) showResult('ok', t('setup.testOk', { ms: outcome.latencyMs }));
  else showResult('failed', t('setup.testFailed', { error: outcome.error || '' }), t('setup.testFailedHint'));
  doneButton.hidden = false;
  doneButton.classList.toggle('primary', outcome.ok);
  saveButton.classList.toggle('primary', !outcome.ok); // one main action at a time
  if (outcome.ok) doneButton.focus();
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
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
