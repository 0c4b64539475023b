// Sign-up: each field's problem is said once, beside the field, in the reader's language. The rules are
// the API's (auth/schemas.py); they are checked here first so nobody reads a validator's wording.
import { api } from '../api.js';
import { busy, readForm, resetFormErrors, showError, showFieldErrors } from '../dom.js';
import { t } from '../i18n.js';

const USERNAME = /^[A-Za-z0-9_.-]+$/;

/** The problems of the form's values, by field, as sentences. */
function problems({ username, password, confirm }) {
  const found = {};
  const name = username.trim();
  if (!name) found.username = t('signup.error.usernameMissing');
  else if (name.length < 3 || name.length > 32) found.username = t('signup.error.usernameLength');
  else if (!USERNAME.test(name)) found.username = t('signup.error.usernameChars');
  if (!password) found.password = t('signup.error.passwordMissing');
  else if (password.length < 8) found.password = t('signup.error.passwordShort');
  else if (password.length > 256) found.password = t('signup.error.passwordLong');
  if (password && confirm !== password) found.confirm = t('signup.mismatch');
  return found;
}

const form = document.getElementById('signup-form');
form?.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  const values = readForm(form);
  const found = problems(values);
  if (Object.keys(found).length) {
    showFieldErrors(form, found);
    form.querySelector('[aria-invalid="true"]')?.focus();
    return;
  }
  await busy(form.querySelector('button[type=submit]'), async () => {
    try {
      await api('POST', '/api/auth/signup', { username: values.username.trim(), password: values.password });
      window.location.assign('/');
    } catch (error) {
      if (error.code === 'username_taken') showFieldErrors(form, { username: t('apiError.username_taken') });
      else if (error.fields && Object.keys(error.fields).length) showFieldErrors(form, problems(values));
      else showError(form.querySelector('.form-error'), error);
    }
  });
});
