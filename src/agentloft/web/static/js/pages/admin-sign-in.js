// Admin → Settings → Sign-in: the identity providers (OpenID Connect and LDAP), listed, added and edited.
// One form for both kinds; only the chosen kind's fields are sent. A secret field left empty on an edit
// is not sent, so the stored secret stays (the API never returns it).
import { api } from '../api.js';
import { badge, busy, h, resetFormErrors, showError, showFormError } from '../dom.js';
import { t } from '../i18n.js';
import { tableRefresher } from './admin-common.js';

const form = document.getElementById('provider-form');
const section = document.getElementById('sign-in-providers');
const errorBox = section.querySelector('.providers-error');
const title = form.querySelector('.provider-form-title');
const cancel = form.querySelector('.cancel-edit');
const defaults = Object.fromEntries([...form.elements].filter((el) => el.name)
  .map((el) => [el.name, el.type === 'checkbox' ? el.checked : el.value]));

function showKind() {
  for (const set of form.querySelectorAll('fieldset[data-kind]')) set.hidden = set.dataset.kind !== form.kind.value;
}

/** The fields of the chosen kind (and the common ones) as the API's body. */
function body(editing) {
  const data = {};
  for (const el of form.elements) {
    const set = el.closest('fieldset[data-kind]');
    if (!el.name || (set && set.hidden)) continue;
    if (el.type === 'checkbox') data[el.name] = el.checked;
    else if ('list' in el.dataset) data[el.name] = el.value.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
    else if ('secret' in el.dataset && editing && el.value === '') continue;
    else data[el.name] = el.value.trim();
  }
  if (editing) delete data.kind;
  return data;
}

function fill(provider) {
  for (const el of form.elements) {
    if (!el.name) continue;
    const value = provider ? provider[el.name] : defaults[el.name];
    if (el.type === 'checkbox') el.checked = Boolean(value ?? defaults[el.name]);
    else if (Array.isArray(value)) el.value = value.join(', ');
    else el.value = 'secret' in el.dataset ? '' : (value ?? defaults[el.name] ?? '');
  }
  form.kind.disabled = Boolean(provider);
  form.dataset.id = provider ? provider.id : '';
  title.textContent = provider ? t('admin.signIn.edit', { name: provider.name }) : t('admin.signIn.add');
  cancel.hidden = !provider;
  showKind();
}

function row(provider) {
  return h('tr', { dataset: { slug: provider.slug } },
    h('td', { text: provider.slug }), h('td', { text: provider.name }),
    h('td', { text: provider.kind === 'oidc' ? 'OpenID Connect' : 'LDAP' }),
    h('td', {}, provider.enabled ? badge(t('status.active'), 'ok') : badge(t('status.disabled'), 'danger')),
    h('td', { class: 'actions' }, h('button', { type: 'button', class: 'small', text: t('action.edit'),
      onclick: () => { fill(provider); form.scrollIntoView(); } })));
}

const refresh = tableRefresher({ url: '/api/admin/auth-providers', tbody: section.querySelector('tbody'), row,
  empty: section.querySelector('.empty') });

form.kind.addEventListener('change', showKind);
cancel.addEventListener('click', () => fill(null));
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  const id = form.dataset.id;
  await busy(form.querySelector('button[type=submit]'), async () => {
    try {
      await api(id ? 'PUT' : 'POST', id ? `/api/admin/auth-providers/${id}` : '/api/admin/auth-providers', body(Boolean(id)));
      fill(null);
      await refresh();
    } catch (error) {
      showFormError(form, error);
    }
  });
});

showKind();
refresh().catch((e) => showError(errorBox, e));
