// Admin: instance settings (open sign-up, generated chat titles, internal hosts that tools may reach).
import { api } from '../api.js';
import { busy, resetFormErrors, showError, showFormError } from '../dom.js';

const form = document.getElementById('settings-form');
const saved = form.querySelector('.saved');

function fill(settings) {
  form.signupOpen.checked = settings.signupOpen;
  form.generateTitles.checked = settings.generateTitles;
  form.allowedInternalHosts.value = settings.allowedInternalHosts.join('\n');
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  saved.hidden = true;
  const body = {
    signupOpen: form.signupOpen.checked,
    generateTitles: form.generateTitles.checked,
    allowedInternalHosts: form.allowedInternalHosts.value.split(/[\n,]/).map((s) => s.trim()).filter(Boolean),
  };
  await busy(form.querySelector('button[type=submit]'), async () => {
    try { fill(await api('PUT', '/api/admin/settings', body)); saved.hidden = false; } catch (e) { showFormError(form, e); }
  });
});

api('GET', '/api/admin/settings').then(fill).catch((e) => showError(form.querySelector('.form-error'), e));
