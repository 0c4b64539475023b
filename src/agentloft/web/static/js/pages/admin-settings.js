// Admin: instance settings (open sign-up, generated chat titles, internal hosts that tools may reach, the
// embedding model knowledge search uses: only embedding models are offered).
import { api, loadAll } from '../api.js';
import { busy, h, resetFormErrors, showError, showFormError } from '../dom.js';
import { t } from '../i18n.js';

const form = document.getElementById('settings-form');
const saved = form.querySelector('.saved');

function fill(settings) {
  form.signupOpen.checked = settings.signupOpen;
  form.generateTitles.checked = settings.generateTitles;
  form.allowedInternalHosts.value = settings.allowedInternalHosts.join('\n');
  form.embeddingModelId.value = settings.embeddingModelId === null ? '' : String(settings.embeddingModelId);
}

async function loadEmbeddingModels() {
  const models = await loadAll('/api/admin/models?kind=embedding');
  form.embeddingModelId.append(...models.map((m) => h('option', { value: m.id,
    text: m.enabled ? m.name : `${m.name} (${t('status.disabled')})` })));
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  saved.hidden = true;
  const body = {
    signupOpen: form.signupOpen.checked,
    generateTitles: form.generateTitles.checked,
    allowedInternalHosts: form.allowedInternalHosts.value.split(/[\n,]/).map((s) => s.trim()).filter(Boolean),
    embeddingModelId: form.embeddingModelId.value === '' ? null : Number(form.embeddingModelId.value),
  };
  await busy(form.querySelector('button[type=submit]'), async () => {
    try { fill(await api('PUT', '/api/admin/settings', body)); saved.hidden = false; } catch (e) { showFormError(form, e); }
  });
});

loadEmbeddingModels().then(() => api('GET', '/api/admin/settings')).then(fill)
  .catch((e) => showError(form.querySelector('.form-error'), e));
