// Admin: create local groups, choose their members, delete groups. Groups synced from a sign-in provider
// are shown with their source and cannot be edited here (the provider decides at each sign-in).
import { api, loadAll } from '../api.js';
import { badge, busy, h, showError } from '../dom.js';
import { t } from '../i18n.js';
import { onCreate, removeItem, tableRefresher } from './admin-common.js';

const form = document.getElementById('group-form');
const errorBox = document.querySelector('.form-error');
const tbody = document.querySelector('#groups-table tbody');
const empty = document.querySelector('#groups-table + .empty');

function row(group) {
  const local = group.source === 'local';
  return h('tr', { dataset: { group: group.name } },
    h('td', {}, group.name, group.description ? h('div', { class: 'muted', text: group.description }) : null),
    h('td', {}, local ? badge(t('admin.groups.local')) : badge(group.source, 'accent')),
    h('td', { class: 'member-count', text: String(group.memberCount) }),
    h('td', { class: 'actions' },
      local ? h('button', { type: 'button', class: 'small', text: t('admin.groups.editMembers'),
        onclick: (e) => editMembers(e.currentTarget.closest('td'), group) }) : null,
      h('button', { type: 'button', class: 'small danger', text: t('action.delete'),
        onclick: (e) => removeItem({ button: e.currentTarget, question: t('admin.groups.confirmDelete', { name: group.name }),
          url: `/api/admin/groups/${group.id}`, errorBox, refresh }) })));
}

/** The group's members as a list of every account to tick, typed into the row itself. */
async function editMembers(cell, group) {
  showError(errorBox, null);
  const before = [...cell.childNodes];
  const [users, members] = await Promise.all([loadAll('/api/admin/users'), api('GET', `/api/admin/groups/${group.id}/members`)]);
  const chosen = new Set(members.userIds);
  const boxes = users.map((u) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', value: String(u.id), checked: chosen.has(u.id) }), ` ${u.username}`));
  const save = h('button', { type: 'submit', class: 'small primary', text: t('action.save') });
  const cancel = h('button', { type: 'button', class: 'small', text: t('action.cancel'),
    onclick: () => cell.replaceChildren(...before) });
  const editor = h('form', { class: 'stack', 'aria-label': t('admin.groups.membersOf', { name: group.name }) },
    h('fieldset', {}, h('legend', { text: t('admin.groups.membersOf', { name: group.name }) }), ...boxes),
    h('div', { class: 'inline-form' }, save, cancel));
  editor.addEventListener('submit', async (event) => {
    event.preventDefault();
    showError(errorBox, null);
    const ids = [...editor.querySelectorAll('input[type=checkbox]:checked')].map((b) => Number(b.value));
    await busy(save, async () => {
      try {
        await api('PUT', `/api/admin/groups/${group.id}/members`, ids);
        await refresh();
      } catch (error) {
        showError(errorBox, error);
      }
    });
  });
  cell.replaceChildren(editor);
}

const refresh = tableRefresher({ url: '/api/admin/groups', tbody, row, empty });

onCreate(form, '/api/admin/groups', { errorBox, refresh });

refresh().catch((e) => showError(errorBox, e));
