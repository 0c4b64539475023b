// Admin: MCP servers (add, edit, delete, refresh) and the selected server's tools. A tool's title, description
// and hints are the server's own text, shown as plain text so the admin reads exactly what the model would be
// told before enabling it. The switches change the tool row through /api/agent-tools, like any other tool.
import { api, loadAll } from '../api.js';
import { badge, busy, dialog, fillForm, h, readForm, resetFormErrors, showError } from '../dom.js';
import { formatDate, t } from '../i18n.js';
import { onSave, removeItem } from './admin-common.js';

const tbody = document.querySelector('#servers-table tbody');
const empty = document.querySelector('#servers-table + .empty');
const pageError = document.querySelector('.page-error');
const toolsCard = document.querySelector('.server-tools');
const toolsBody = document.querySelector('#mcp-tools-table tbody');
const toolsEmpty = document.querySelector('#mcp-tools-table + .empty');
const toolsError = document.querySelector('.tools-error');
const dlg = document.getElementById('server-dialog');
const form = document.getElementById('server-form');
const modal = dialog(dlg);
let editing = null;
let selected = null;

function endpoint(server) {
  if (server.transport === 'http') return server.url || '';
  return [server.command, ...(server.args || [])].join(' ');
}

function status(server) {
  if (!server.enabled) return badge(t('status.disabled'));
  if (server.lastError) return h('span', {}, badge(t('mcp.failing'), 'danger'), h('div', { class: 'muted small-text', text: server.lastError }));
  if (!server.refreshedAt) return badge(t('mcp.notRefreshed'), 'warn');
  return h('span', {}, badge(t('status.enabled'), 'ok'), h('div', { class: 'muted small-text', text: t('mcp.refreshedAt', { when: formatDate(server.refreshedAt) }) }));
}

function row(server) {
  return h('tr', { dataset: { slug: server.slug }, class: selected && selected.id === server.id ? 'selected' : null },
    h('td', {}, h('strong', { text: server.name }), h('div', { class: 'muted small-text' }, h('code', { text: server.slug }))),
    h('td', { text: t(`mcp.${server.transport}`) }),
    h('td', {}, h('code', { class: 'small-text', text: endpoint(server) })),
    h('td', { text: String(server.toolCount) }),
    h('td', {}, status(server)),
    h('td', { class: 'actions' },
      h('button', { type: 'button', class: 'small', text: t('mcp.showTools'), onclick: () => select(server) }),
      h('button', { type: 'button', class: 'small', text: t('mcp.refresh'), onclick: (e) => refreshServer(e.currentTarget, server) }),
      h('button', { type: 'button', class: 'small', text: t('action.edit'), onclick: () => openEditor(server) }),
      h('button', { type: 'button', class: 'small danger', text: t('action.delete'), onclick: (e) => remove(e.currentTarget, server) })));
}

async function refreshList() {
  const servers = await loadAll('/api/admin/mcp-servers');
  tbody.replaceChildren(...servers.map(row));
  empty.hidden = servers.length > 0;
  if (selected) selected = servers.find((s) => s.id === selected.id) || null;
  return servers;
}

// --- tools of one server -----------------------------------------------------------------------------

function toolSwitch(tool, field, label) {
  const input = h('input', { type: 'checkbox', 'aria-label': `${label}: ${tool.name}`, checked: tool[field], disabled: field === 'enabled' && tool.missing });
  input.addEventListener('change', async () => {
    showError(toolsError, null);
    input.disabled = true;
    try {
      await api('PUT', `/api/agent-tools/${tool.toolId}`, { [field]: input.checked });
      tool[field] = input.checked;
      await showTools();
    } catch (error) {
      input.checked = !input.checked;
      showError(toolsError, error);
    } finally {
      input.disabled = field === 'enabled' && tool.missing;
    }
  });
  return h('td', {}, input);
}

function toolRow(tool) {
  const marks = [];
  if (tool.missing) marks.push(badge(t('mcp.missing'), 'danger'));
  if (tool.changed) marks.push(badge(t('mcp.changed'), 'warn'));
  return h('tr', { dataset: { tool: tool.name } },
    h('td', {}, h('strong', { text: tool.title || tool.name }), ' ', ...marks,
      h('div', { class: 'muted small-text' }, h('code', { text: tool.slug }))),
    h('td', { class: 'mcp-description' }, h('div', { class: 'small-text pre-wrap', text: tool.description || t('mcp.noDescription') }),
      h('details', {}, h('summary', { class: 'muted small-text', text: t('mcp.inputSchema') }),
        h('pre', { class: 'result-json small-text', text: JSON.stringify(tool.inputSchema, null, 2) })),
      Object.keys(tool.annotations || {}).length
        ? h('details', {}, h('summary', { class: 'muted small-text', text: t('mcp.hints') }),
          h('pre', { class: 'result-json small-text', text: JSON.stringify(tool.annotations, null, 2) }))
        : null),
    toolSwitch(tool, 'enabled', t('field.enabled')),
    toolSwitch(tool, 'adminOnly', t('tools.adminOnly')),
    toolSwitch(tool, 'needsApproval', t('tools.needsApprovalShort')));
}

function renderTools(tools) {
  toolsBody.replaceChildren(...tools.map(toolRow));
  toolsEmpty.hidden = tools.length > 0;
}

async function showTools() {
  if (!selected) return;
  const page = await api('GET', `/api/admin/mcp-servers/${selected.id}/tools`);
  renderTools(page.items);
}

async function select(server) {
  selected = server;
  toolsCard.hidden = false;
  toolsCard.querySelector('.server-tools-name').textContent = server.name;
  showError(toolsError, null);
  await refreshList();
  await showTools().catch((e) => showError(toolsError, e));
}

async function refreshServer(button, server) {
  showError(pageError, null);
  await busy(button, async () => {
    try {
      const page = await api('POST', `/api/admin/mcp-servers/${server.id}/refresh`);
      selected = server;
      toolsCard.hidden = false;
      toolsCard.querySelector('.server-tools-name').textContent = server.name;
      showError(toolsError, null);
      renderTools(page.items);
    } catch (error) {
      showError(pageError, error);
    }
    await refreshList();
  });
}

// --- the editor ---------------------------------------------------------------------------------------

function mapLines(map, sep) {
  return Object.entries(map || {}).map(([k, v]) => `${k}${sep}${v}`).join('\n');
}

function parseLines(text, sep) {
  const out = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf(sep);
    if (at <= 0) continue;
    out[line.slice(0, at).trim()] = line.slice(at + sep.length).trim();
  }
  return out;
}

function showTransport() {
  const http = form.transport.value === 'http';
  form.querySelector('.only-http').hidden = !http;
  form.querySelector('.only-stdio').hidden = http;
}

function openEditor(server) {
  editing = server;
  form.reset();
  resetFormErrors(form);
  const title = form.querySelector('h2');
  title.textContent = server ? title.dataset.titleEdit : title.dataset.titleNew;
  fillForm(form, server ? { ...server, headers: '', args: '', env: '' } : { transport: 'http', enabled: true });
  if (server) {
    form.headers.value = mapLines(server.headers, ': ');
    form.env.value = mapLines(server.env, '=');
    form.args.value = (server.args || []).join('\n');
  }
  form.secret.value = '';
  const state = form.querySelector('.secret-state');
  state.textContent = server && server.secretSet ? state.dataset.set : state.dataset.unset;
  form.querySelector('.remove-secret').hidden = !(server && server.secretSet);
  showTransport();
  modal.open();
}

function payload() {
  const data = readForm(form);
  const body = { slug: data.slug.trim(), name: data.name, transport: data.transport, enabled: data.enabled };
  if (data.transport === 'http') {
    body.url = data.url.trim();
    body.headers = parseLines(data.headers, ':');
  } else {
    body.command = data.command.trim();
    body.args = data.args.split('\n').map((a) => a.trim()).filter(Boolean);
    body.env = parseLines(data.env, '=');
    body.network = data.network;
  }
  if (data.secret) body.secret = data.secret;
  else if (editing && data.removeSecret) body.secret = '';
  return body;
}

let created = null; // a server just added: its tools are listed once the table has reloaded
onSave(form, async () => {
  created = null;
  const saved = editing ? await api('PUT', `/api/admin/mcp-servers/${editing.id}`, payload())
    : await api('POST', '/api/admin/mcp-servers', payload());
  if (!editing) created = saved;
}, {
  modal,
  refresh: async () => {
    await refreshList();
    if (created) await refreshServer(null, created);
  },
});

function remove(button, server) {
  return removeItem({
    button, question: t('mcp.confirmDelete', { name: server.name }), url: `/api/admin/mcp-servers/${server.id}`,
    errorBox: pageError,
    refresh: async () => {
      if (selected && selected.id === server.id) { selected = null; toolsCard.hidden = true; }
      await refreshList();
    },
  });
}

form.transport.addEventListener('change', showTransport);
document.getElementById('new-server').addEventListener('click', () => openEditor(null));
document.getElementById('refresh-tools').addEventListener('click', (e) => selected && refreshServer(e.currentTarget, selected));
refreshList().catch((e) => showError(pageError, e));
