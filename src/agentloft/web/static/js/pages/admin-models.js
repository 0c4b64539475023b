// Admin: model configurations (CRUD) with a Test button. The API key is never shown, only whether one is set.
// A model is for chat or for embeddings (knowledge search), chosen when it is created: an embedding model is
// OpenAI-compatible and never the default, so the form hides what it cannot be.
import { api } from '../api.js';
import { badge, busy, dialog, fillForm, h, readForm, resetFormErrors, showError } from '../dom.js';
import { t } from '../i18n.js';
import { onSave, removeItem, tableRefresher } from './admin-common.js';

const tbody = document.querySelector('#models-table tbody');
const empty = document.querySelector('.empty');
const pageError = document.querySelector('.page-error');
const dlg = document.getElementById('model-dialog');
const form = document.getElementById('model-form');
const modal = dialog(dlg);
let editing = null;
let presets = [];
const presetSelect = document.getElementById('model-preset');
const kindSelect = document.getElementById('model-kind');

function testCell(model) {
  const result = h('span', { class: 'test-result', 'aria-live': 'polite' });
  const button = h('button', { type: 'button', class: 'small', text: t('admin.models.test') });
  button.addEventListener('click', () => runTest(button, result, model));
  return h('td', { class: 'test-cell' }, button, ' ', result);
}

async function runTest(button, result, model) {
  result.className = 'test-result muted';
  result.textContent = t('admin.models.testing');
  await busy(button, async () => {
    try {
      const outcome = await api('POST', `/api/admin/models/${model.id}/test`);
      result.className = `test-result ${outcome.ok ? 'ok' : 'danger'}`;
      if (!outcome.ok) result.textContent = t('admin.models.testFailed', { error: outcome.error || '' });
      else if (outcome.dimensions) result.textContent = t('admin.models.testOkEmbedding', { ms: outcome.latencyMs, dimensions: outcome.dimensions });
      else result.textContent = t('admin.models.testOk', { ms: outcome.latencyMs });
    } catch (error) {
      result.className = 'test-result danger';
      result.textContent = error.message;
    }
  });
}

function row(model) {
  return h('tr', { dataset: { name: model.name } },
    h('td', {}, h('strong', { text: model.name }), model.isDefault ? [' ', badge(t('admin.models.default'), 'accent')] : null,
      model.kind === 'embedding' ? [' ', badge(t('admin.models.embeddingBadge'))] : null,
      model.vision ? [' ', badge(t('admin.models.visionBadge'))] : null),
    h('td', { text: model.provider }),
    h('td', {}, h('div', { class: 'cell-stack' }, h('code', { text: model.model }),
      model.baseUrl ? h('div', { class: 'muted small-text', text: model.baseUrl }) : null)),
    h('td', {}, model.hasApiKey ? badge(t('admin.models.keySet'), 'ok') : h('span', { class: 'muted', text: t('admin.models.keyNone') })),
    h('td', {}, model.enabled ? badge(t('status.enabled'), 'ok') : badge(t('status.disabled'))),
    testCell(model),
    h('td', { class: 'actions' },
      h('button', { type: 'button', class: 'small', text: t('action.edit'), onclick: () => openEditor(model) }),
      h('button', { type: 'button', class: 'small danger', text: t('action.delete'), onclick: (e) => remove(e.currentTarget, model) })));
}

const refresh = tableRefresher({ url: '/api/admin/models', tbody, row, empty });

// Presets fill the provider and base URL, suggest a model name, and hide the key field when none is needed.
async function loadPresets() {
  presets = (await api('GET', '/api/admin/models/presets')).items;
  presetSelect.append(...presets.map((p) => h('option', { value: p.id, text: p.label })));
}

function showKeyField(needed) {
  form.querySelector('.key-field').hidden = !needed;
  form.querySelector('.no-key-needed').hidden = needed;
  if (!needed) form.apiKey.value = '';
}

function embedding() {
  return kindSelect.value === 'embedding';
}

// An embedding model: OpenAI-compatible only (presets without /v1/embeddings are greyed), never the default.
function applyKind() {
  for (const option of presetSelect.options) {
    const preset = presets.find((p) => p.id === option.value);
    option.disabled = Boolean(embedding() && preset && !preset.embeddingHint);
  }
  if (presetSelect.selectedOptions[0]?.disabled) presetSelect.value = '';
  form.provider.querySelector('option[value=anthropic]').disabled = embedding();
  if (embedding()) form.provider.value = 'openai';
  form.querySelector('.default-field').hidden = embedding();
  form.querySelector('.vision-field').hidden = embedding();
  if (embedding()) form.isDefault.checked = false;
  if (embedding()) form.vision.checked = false;
  applyPreset();
}

function applyPreset() {
  const preset = presets.find((p) => p.id === presetSelect.value);
  const hint = embedding() ? (preset && preset.embeddingHint) || 'text-embedding-3-small' : (preset && preset.modelHint) || 'gpt-4o-mini';
  form.model.placeholder = hint;
  showKeyField(!preset || preset.needsApiKey || Boolean(editing && editing.hasApiKey));
  if (!preset) return;
  form.provider.value = preset.provider;
  form.baseUrl.value = preset.baseUrl || '';
  form.vision.checked = !embedding() && preset.vision; // the preset's suggested model; the admin may change it
  const autoNamed = presets.some((p) => p.label === form.name.value);
  if (!form.name.value.trim() || autoNamed) form.name.value = preset.label;
}

function openEditor(model) {
  editing = model;
  form.reset();
  resetFormErrors(form);
  const title = form.querySelector('h2');
  title.textContent = model ? title.dataset.titleEdit : title.dataset.titleNew;
  fillForm(form, model || { enabled: true, provider: 'openai', kind: 'chat' });
  kindSelect.disabled = Boolean(model); // chosen when the model is created
  const kindHint = form.querySelector('.kind-hint');
  kindHint.textContent = model ? kindHint.dataset.edit : kindHint.dataset.new;
  form.apiKey.value = ''; // never prefilled
  const keyState = form.querySelector('.key-state');
  keyState.textContent = model && model.hasApiKey ? keyState.dataset.set : keyState.dataset.unset;
  form.apiKey.placeholder = model && model.hasApiKey ? t('admin.models.keySet') : '';
  form.querySelector('.remove-key').hidden = !(model && model.hasApiKey);
  applyKind(); // the form reset picked "Custom": every field shows
  modal.open();
}

function payload() {
  const data = readForm(form);
  const body = {
    name: data.name, provider: data.provider, model: data.model,
    baseUrl: data.baseUrl.trim() || null, enabled: data.enabled, isDefault: data.isDefault, vision: data.vision,
  };
  if (!editing) body.kind = data.kind;
  if (data.apiKey) body.apiKey = data.apiKey;
  else if (editing && data.removeKey) body.apiKey = '';
  return body;
}

onSave(form, async () => {
  if (editing) await api('PUT', `/api/admin/models/${editing.id}`, payload());
  else await api('POST', '/api/admin/models', payload());
}, { modal, refresh });

function remove(button, model) {
  return removeItem({ button, question: t('admin.models.confirmDelete', { name: model.name }),
    url: `/api/admin/models/${model.id}`, errorBox: pageError, refresh });
}

document.getElementById('new-model').addEventListener('click', () => openEditor(null));
presetSelect.addEventListener('change', applyPreset);
kindSelect.addEventListener('change', applyKind);
loadPresets().catch((e) => showError(pageError, e));
refresh().catch((e) => showError(pageError, e));
