// Admin: create users, change roles, set a password, sign an account out everywhere, disable and enable
// accounts; each row says how the account signs in (a password, or its identity provider's slug).
import { api } from '../api.js';
import { badge, busy, h, showError } from '../dom.js';
import { formatDate, t } from '../i18n.js';
import { changeItem, onCreate, tableRefresher } from './admin-common.js';

const form = document.getElementById('user-form');
const errorBox = document.querySelector('.form-error');
const tbody = document.querySelector('#users-table tbody');
const me = JSON.parse(document.getElementById('current-user').textContent);
const status = document.getElementById('users-status');

function roleSelect(user) {
  const select = h('select', { 'aria-label': t('field.role'), dataset: { role: user.username } },
    ...['user', 'admin'].map((role) => h('option', { value: role, selected: user.role === role, text: t(`role.${role}`) })));
  select.addEventListener('change', () => update(select, user, { role: select.value }));
  return select;
}

function row(user) {
  return h('tr', { dataset: { username: user.username } },
    h('td', {}, user.username, user.id === me.id ? h('span', { class: 'muted', text: ` (${t('admin.users.you')})` }) : null),
    h('td', {}, roleSelect(user)),
    h('td', { dataset: { provider: user.authProvider },
      text: user.authProvider === 'local' ? t('admin.users.localSignIn') : user.authProvider }),
    h('td', {}, user.disabled ? badge(t('status.disabled'), 'danger') : badge(t('status.active'), 'ok')),
    h('td', { class: 'groups' }, ...(user.groups || []).map((g) => badge(g.source === 'local' ? g.name : `${g.name} (${g.source})`))),
    h('td', { text: formatDate(user.createdAt) }),
    h('td', { class: 'actions' },
      h('button', { type: 'button', class: 'small', text: t('admin.users.setPassword'),
        onclick: (e) => askPassword(e.currentTarget.closest('td'), user) }),
      h('button', { type: 'button', class: 'small', text: t('admin.users.endSessions'),
        onclick: (e) => endSessions(e.currentTarget, user) }),
      h('button', {
        type: 'button', class: user.disabled ? 'small' : 'small danger',
        text: user.disabled ? t('action.enable') : t('action.disable'),
        onclick: (e) => update(e.currentTarget, user, { disabled: !user.disabled }),
      })));
}

/** A new password for the account, typed into the row itself; the server signs its browsers out. */
function askPassword(cell, user) {
  const before = [...cell.childNodes];
  const input = h('input', { type: 'password', autocomplete: 'new-password', minlength: 8, maxlength: 256,
    'aria-label': t('admin.users.newPassword', { name: user.username }) });
  const save = h('button', { type: 'submit', class: 'small primary', text: t('action.save') });
  const cancel = h('button', { type: 'button', class: 'small', text: t('action.cancel'),
    onclick: () => cell.replaceChildren(...before) });
  const form = h('form', { class: 'inline-form' }, input, save, cancel);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    showError(errorBox, null);
    await busy(save, async () => {
      try {
        await api('PATCH', `/api/admin/users/${user.id}`, { password: input.value });
        cell.replaceChildren(...before);
        status.textContent = t('admin.users.passwordSet', { name: user.username });
        status.hidden = false;
      } catch (error) {
        showError(errorBox, error);
      }
    });
  });
  cell.replaceChildren(form);
  input.focus();
}

/** Sign the account out of every browser at once (its API tokens stay). */
async function endSessions(button, user) {
  showError(errorBox, null);
  await busy(button, async () => {
    try {
      await api('POST', `/api/admin/users/${user.id}/sessions/end`);
      status.textContent = t('admin.users.sessionsEnded', { name: user.username });
      status.hidden = false;
    } catch (error) {
      showError(errorBox, error);
    }
  });
}

const refresh = tableRefresher({ url: '/api/admin/users', tbody, row });

function update(control, user, change) {
  return changeItem({ control, method: 'PATCH', url: `/api/admin/users/${user.id}`, body: change, errorBox, refresh });
}

onCreate(form, '/api/admin/users', { errorBox, refresh });

refresh().catch((e) => showError(errorBox, e));
