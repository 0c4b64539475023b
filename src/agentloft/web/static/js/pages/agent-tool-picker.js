// The agent editor's tool picker: which tools an agent has, and per tool whether calls need approval
// (inherit the tool's setting, always ask, never ask). Saved with PUT /api/admin/agents/{id}/tools.
import { api, loadAll } from '../api.js';
import { badge, h } from '../dom.js';
import { t } from '../i18n.js';
import { editorHooks } from './agent-editor-hooks.js';
import { toolName } from '../tool-texts.js';

const box = document.querySelector('.tool-picker');
const list = box.querySelector('.tool-picker-list');
let rows = [];

function overrideSelect(tool, value) {
  const inherit = tool.needsApproval ? t('agentTools.inheritAsk') : t('agentTools.inheritAuto');
  const options = [['', inherit], ['true', t('agentTools.alwaysAsk')], ['false', t('agentTools.neverAsk')]];
  const current = value === null || value === undefined ? '' : String(value);
  return h('select', { 'aria-label': t('agentTools.approvalFor', { name: toolName(tool) }), dataset: { approval: tool.slug } },
    ...options.map(([v, text]) => h('option', { value: v, text, selected: v === current })));
}

function render(tools, links) {
  const linked = new Map(links.map((l) => [l.toolId, l]));
  // Linked tools first, in the agent's order; then the rest by name.
  const ordered = [...links.map((l) => tools.find((tool) => tool.id === l.toolId)).filter(Boolean),
    ...tools.filter((tool) => !linked.has(tool.id))];
  rows = ordered.map((tool) => {
    const link = linked.get(tool.id);
    const check = h('input', { type: 'checkbox', checked: Boolean(link), dataset: { tool: tool.slug } });
    const select = overrideSelect(tool, link ? link.needsApproval : null);
    const el = h('div', { class: 'picker-row' },
      h('label', { class: 'check' }, check, ' ', h('strong', { text: toolName(tool) }), ' ', h('code', { class: 'muted', text: tool.slug })),
      h('span', { class: 'picker-badges' },
        tool.adminOnly ? badge(t('tools.adminOnly'), 'warn') : null,
        tool.enabled ? null : badge(t('status.disabled')),
        tool.unavailable ? badge(t('tools.unavailable', { reason: tool.unavailable }), 'warn') : null),
      select);
    return { tool, check, select, el };
  });
  list.replaceChildren(...rows.map((r) => r.el));
  if (!rows.length) list.append(h('p', { class: 'muted', text: t('agentTools.none') }));
}

editorHooks.push({
  async open(agent) {
    try {
      const tools = await loadAll('/api/agent-tools');
      const links = agent ? (await api('GET', `/api/admin/agents/${agent.id}/tools`)).items : [];
      render(tools, links);
      box.hidden = false;
    } catch {
      box.hidden = true; // the tool system is unavailable: the agent form still works
    }
  },
  async save(agent) {
    if (box.hidden) return;
    const body = rows.filter((r) => r.check.checked).map((r, index) => ({
      toolId: r.tool.id,
      needsApproval: r.select.value === '' ? null : r.select.value === 'true',
      position: index,
    }));
    await api('PUT', `/api/admin/agents/${agent.id}/tools`, body);
  },
});
