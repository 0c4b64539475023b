import { api } from '../api.js';
import { busy, readForm, resetFormErrors, showFormError } from '../dom.js';

const form = document.getElementById('login-form');
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  const { username, password } = readForm(form);
  await busy(form.querySelector('button[type=submit]'), async () => {
    try {
      await api('POST', '/api/auth/login', { username, password });
      window.location.assign(form.dataset.next || '/');
    } catch (error) {
      showFormError(form, error);
    }
  });
});
