// Admin: tools. Table with the seed's one-click permission toggle, a create/edit dialog whose config form
// comes from the type's JSON Schema, and a debug panel that runs a tool on JSON input. A call that needs
// approval is confirmed as a second step: the first run answers needsApproval and does nothing; "Approve
// and run" sends the same input again with approved: true. A tool that asks for approval may name approver
// groups (`approverGroupIds`): their members answer its calls instead of the person chatting.
import { api, loadAll } from '../api.js';
import { badge, busy, dialog, fillForm, h, readForm, resetFormErrors, showError, showFormError } from '../dom.js';
import { t } from '../i18n.js';
import { renderSchemaForm, sampleInput } from '../schema-form.js';
import { toolDescription, toolName, typeName } from '../tool-texts.js';
import { changeItem, onSave, removeItem, tableRefresher } from './admin-common.js';

const tbody = document.querySelector('#tools-table tbody');
const empty = document.querySelector('.empty');
const pageError = document.querySelector('.page-error');
const form = document.getElementById('tool-form');
const modal = dialog(document.getElementById('tool-dialog'));
const debugForm = document.getElementById('debug-form');
const debugModal = dialog(document.getElementById('debug-dialog'));
const approval = debugForm.querySelector('.debug-approval');
let types = [];
let groups = []; // every group, for the approvers' choice and the table's names
let editing = null;
let configForm = null;
let debugging = null;
let awaitingApproval = null; // the input of a call that answered needsApproval, until approved or dropped

const typeOf = (slug) => types.find((ty) => ty.slug === slug);

function permissionToggle(tool) {
  const label = tool.adminOnly ? t('tools.adminOnly') : t('tools.everyone');
  return h('button', {
    type: 'button', class: `toggle ${tool.adminOnly ? 'warn' : 'ok'}`, text: label,
    title: t('tools.togglePermission'), 'aria-pressed': String(tool.adminOnly), dataset: { testid: 'permission' },
    onclick: (e) => update(e.currentTarget, tool, { adminOnly: !tool.adminOnly }),
  });
}

function row(tool) {
  const type = typeOf(tool.type);
  return h('tr', { dataset: { slug: tool.slug } },
    h('td', {}, h('div', { class: 'cell-stack' }, h('strong', { text: toolName(tool) }), ' ',
      h('code', { class: 'muted', text: tool.slug }),
      tool.description ? h('div', { class: 'muted small-text', text: toolDescription(tool) }) : null)),
    h('td', { text: type ? typeName(type) : tool.type }),
    h('td', {}, tool.enabled ? badge(t('status.enabled'), 'ok') : badge(t('status.disabled')),
      tool.unavailable ? h('div', {}, badge(t('tools.unavailable', { reason: tool.unavailable }), 'warn')) : null),
    h('td', {}, tool.needsApproval ? badge(t('tools.needsApprovalShort'), 'warn') : h('span', { class: 'muted', text: t('tools.automatic') }),
      approverNames(tool) ? h('div', { class: 'muted small-text', dataset: { testid: 'approvers' }, text: t('tools.approvedBy', { groups: approverNames(tool) }) }) : null),
    h('td', { class: 'permission' }, permissionToggle(tool)),
    h('td', { class: 'actions' },
      h('button', { type: 'button', class: 'small', text: t('tools.debug'), onclick: () => openDebug(tool) }),
      h('button', { type: 'button', class: 'small', text: t('action.edit'), onclick: () => openEditor(tool) }),
      h('button', { type: 'button', class: 'small danger', text: t('action.delete'), onclick: (e) => remove(e.currentTarget, tool) })));
}

/** The names of the tool's approver groups, or '' when the person chatting approves. */
function approverNames(tool) {
  const names = new Map(groups.map((g) => [g.id, g.name]));
  return (tool.approverGroupIds || []).map((id) => names.get(id) || `#${id}`).join(', ');
}

const approversField = document.getElementById('approvers-field');

/** One checkbox per group, ticked for the tool's approvers (none for a new tool). */
function renderApprovers(chosen) {
  const box = approversField.querySelector('.approver-groups');
  box.replaceChildren(...groups.map((g) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', class: 'approver-group', value: String(g.id), checked: chosen.includes(g.id) }), ` ${g.name}`)));
  approversField.querySelector('.approvers-none').hidden = groups.length > 0;
  showApprovers();
}

function showApprovers() { approversField.hidden = !form.needsApproval.checked; }

const chosenApprovers = () => [...approversField.querySelectorAll('input.approver-group:checked')].map((el) => Number(el.value));

form.needsApproval.addEventListener('change', showApprovers);

const refresh = tableRefresher({ url: '/api/agent-tools', tbody, row, empty });

function update(control, tool, change) {
  return changeItem({ control, method: 'PUT', url: `/api/agent-tools/${tool.id}`, body: change, errorBox: pageError,
    refresh });
}

function renderConfig(type, values, secretsSet = []) {
  form.querySelector('.type-description').textContent = type ? type.description : '';
  configForm = renderSchemaForm(form.querySelector('.config-fields'), type ? type.configSchema : {},
    values, { fields: type ? type.secretFields : [], set: secretsSet });
}

function openEditor(tool) {
  editing = tool;
  form.reset();
  resetFormErrors(form);
  const title = form.querySelector('h2');
  title.textContent = tool ? title.dataset.titleEdit : title.dataset.titleNew;
  // Types whose tools come from elsewhere (MCP: a server's refresh) are offered only to the tools they made.
  const offered = types.filter((ty) => ty.creatable || (tool && ty.slug === tool.type));
  form.type.replaceChildren(...offered.map((ty) => h('option', { value: ty.slug, text: `${typeName(ty)} (${ty.slug})` })));
  if (tool) {
    fillForm(form, tool);
    renderConfig(typeOf(tool.type), tool.config, tool.secretsSet);
  } else {
    applyType(offered[0]);
  }
  renderApprovers(tool ? tool.approverGroupIds || [] : []);
  modal.open();
}

function applyType(type) {
  if (!type) return;
  form.type.value = type.slug;
  form.needsApproval.checked = type.defaultNeedsApproval;
  form.adminOnly.checked = type.defaultAdminOnly;
  showApprovers();
  renderConfig(type, type.defaults);
}

form.type.addEventListener('change', () => {
  const type = typeOf(form.type.value);
  if (editing) renderConfig(type, type.defaults); else applyType(type);
});

onSave(form, async () => {
  const config = configForm.read(); // a value the schema refuses throws with its fields, shown on the form
  const data = readForm(form);
  const body = {
    type: data.type, slug: data.slug.trim(), name: data.name, description: data.description,
    enabled: data.enabled, needsApproval: data.needsApproval, adminOnly: data.adminOnly, config,
    approverGroupIds: chosenApprovers(), // kept while hidden: an agent may ask for approval of this tool
  };
  if (editing) await api('PUT', `/api/agent-tools/${editing.id}`, body);
  else await api('POST', '/api/agent-tools', body);
}, { modal, refresh });

function remove(button, tool) {
  return removeItem({ button, question: t('tools.confirmDelete', { name: tool.name }),
    url: `/api/agent-tools/${tool.id}`, errorBox: pageError, refresh });
}

function openDebug(tool) {
  debugging = tool;
  resetFormErrors(debugForm);
  dropApproval();
  debugForm.querySelector('.debug-slug').textContent = tool.slug;
  debugForm.input.value = JSON.stringify(sampleInput(typeOf(tool.type)?.inputSchema), null, 2);
  debugForm.querySelector('.debug-result').hidden = true;
  debugModal.open();
}

function dropApproval() {
  awaitingApproval = null;
  approval.hidden = true;
}

function showResult(result) {
  const status = debugForm.querySelector('.debug-status');
  status.className = `badge debug-status ${result.success ? 'ok' : 'danger'}`;
  status.textContent = result.success ? t('tools.success') : t('tools.failed');
  const ms = result.metadata?.durationMs;
  debugForm.querySelector('.debug-duration').textContent = ms === undefined ? '' : `${ms} ms`;
  debugForm.querySelector('.result-json').textContent = JSON.stringify(result.success ? result.data : result.error, null, 2);
  debugForm.querySelector('.debug-result').hidden = false;
}

async function runDebug(button, input, approved) {
  await busy(button, async () => {
    try {
      const result = await api('POST', `/api/agent-tools/${debugging.id}/execute`, { input, approved });
      if (!approved && !result.success && result.metadata?.needsApproval) {
        awaitingApproval = input;
        debugForm.querySelector('.debug-result').hidden = true;
        approval.hidden = false;
        approval.querySelector('.debug-approve').focus();
        return;
      }
      showResult(result);
    } catch (error) {
      showFormError(debugForm, error);
    }
  });
}

debugForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(debugForm);
  dropApproval();
  let input;
  try { input = JSON.parse(debugForm.input.value || '{}'); } catch {
    showFormError(debugForm, { message: t('tools.badJson'), fields: { input: t('tools.badJson') } });
    return;
  }
  await runDebug(debugForm.querySelector('button[type=submit]'), input, false);
});

approval.querySelector('.debug-approve').addEventListener('click', async (event) => {
  const input = awaitingApproval;
  if (input === null) return;
  dropApproval();
  await runDebug(event.currentTarget, input, true);
});
approval.querySelector('.debug-reject').addEventListener('click', dropApproval);
// The confirmation is for the input that was sent; editing it asks again on the next run.
debugForm.input.addEventListener('input', dropApproval);

document.getElementById('new-tool').addEventListener('click', () => openEditor(null));

async function start() {
  [types, groups] = await Promise.all([loadAll('/api/agent-tools/types'), loadAll('/api/admin/groups')]);
  await refresh();
  document.getElementById('new-tool').disabled = false;
}
start().catch((e) => showError(pageError, e));
