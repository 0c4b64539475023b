// Personal API tokens: create (the secret is shown once), list, delete.
import { api } from '../api.js';
import { busy, h, readForm, showError, showFormError, resetFormErrors } from '../dom.js';
import { formatDate, t } from '../i18n.js';

const form = document.getElementById('token-form');
const errorBox = document.querySelector('.form-error');
const tbody = document.querySelector('#tokens-table tbody');
const empty = document.querySelector('.empty');
const secretBox = document.getElementById('token-secret');

async function refresh() {
  const tokens = (await api('GET', '/api/auth/tokens')).items;
  tbody.replaceChildren(...tokens.map((token) => h('tr', { dataset: { id: token.id } },
    h('td', { text: token.name }),
    h('td', { text: formatDate(token.createdAt) }),
    h('td', { text: token.lastUsedAt ? formatDate(token.lastUsedAt) : t('tokens.never') }),
    h('td', { class: 'actions' }, h('button', {
      type: 'button', class: 'danger small', text: t('action.delete'),
      onclick: (e) => remove(e.currentTarget, token),
    })))));
  empty.hidden = tokens.length > 0;
}

async function remove(button, token) {
  if (!window.confirm(t('tokens.confirmDelete', { name: token.name }))) return;
  await busy(button, async () => {
    try { await api('DELETE', `/api/auth/tokens/${token.id}`); await refresh(); } catch (e) { showError(errorBox, e); }
  });
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  showError(errorBox, null);
  await busy(form.querySelector('button[type=submit]'), async () => {
    try {
      const created = await api('POST', '/api/auth/tokens', { name: readForm(form).name });
      secretBox.querySelector('code').textContent = created.token;
      secretBox.hidden = false;
      form.reset();
      await refresh();
    } catch (error) {
      showFormError(form, error);
      showError(errorBox, error);
    }
  });
});

document.getElementById('copy-secret').addEventListener('click', async (event) => {
  const text = secretBox.querySelector('code').textContent;
  try { await navigator.clipboard.writeText(text); event.target.textContent = t('action.copied'); } catch { /* no clipboard */ }
});

refresh().catch((e) => showError(errorBox, e));

// The password card: the current password and a new one; other browsers are signed out by the server.
const passwordForm = document.getElementById('password-form');
const passwordChanged = passwordForm.querySelector('[data-testid="password-changed"]');
passwordForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(passwordForm);
  passwordChanged.hidden = true;
  const { currentPassword, newPassword } = readForm(passwordForm);
  await busy(passwordForm.querySelector('button[type=submit]'), async () => {
    try {
      await api('POST', '/api/auth/password', { currentPassword, newPassword });
      passwordForm.reset();
      passwordChanged.hidden = false;
    } catch (error) {
      showFormError(passwordForm, error);
    }
  });
});
