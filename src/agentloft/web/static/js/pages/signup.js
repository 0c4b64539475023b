import { api, ApiError } from '../api.js';
import { busy, readForm, resetFormErrors, showFormError } from '../dom.js';
import { t } from '../i18n.js';

const form = document.getElementById('signup-form');
form?.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  const { username, password, confirm } = readForm(form);
  if (password !== confirm) {
    showFormError(form, new ApiError(0, 'mismatch', t('signup.mismatch'), { confirm: t('signup.mismatch') }));
    return;
  }
  await busy(form.querySelector('button[type=submit]'), async () => {
    try {
      await api('POST', '/api/auth/signup', { username, password });
      window.location.assign('/');
    } catch (error) {
      showFormError(form, error);
    }
  });
});
