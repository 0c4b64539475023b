// The agent editor's remote-agent section: kind, agent card URL, the write-only bearer token, and the card as
// fetched (name, description, skills, transports). A remote agent has no prompt, model or tools of its own.
import { api } from '../api.js';
import { badge, busy, h, showError } from '../dom.js';
import { t } from '../i18n.js';
import { editorHooks } from './agent-editor-hooks.js';

const form = document.getElementById('agent-form');
const section = form.querySelector('.remote-agent');
const preview = section.querySelector('.card-preview');
const refreshButton = section.querySelector('.card-refresh');
let current = null;

// The stylesheet hides what only a local agent has (prompt, model, tools) while data-kind is "remote".
function showKind() {
  form.dataset.kind = form.kind.value;
  section.hidden = form.kind.value !== 'remote';
}

function renderCard(agent) {
  const card = agent && agent.card;
  const error = agent && agent.cardError ? h('p', { class: 'danger small-text', role: 'alert', text: agent.cardError }) : null;
  if (!card) {
    preview.replaceChildren(h('p', { class: 'muted small-text', text: t('agents.cardNone') }), error || '');
    return;
  }
  const skills = (card.skills || []).map((s) => s.name || s.id);
  const transports = (card.supportedInterfaces || []).map((i) => i.protocolBinding);
  preview.replaceChildren(
    h('h3', { text: t('agents.card') }),
    h('p', {}, h('strong', { text: card.name || '' }), ' ',
      card.capabilities && card.capabilities.streaming ? badge(t('agents.streams'), 'ok') : null),
    card.description ? h('p', { class: 'muted small-text pre-wrap', text: card.description }) : null,
    h('p', { class: 'small-text' }, `${t('agents.skills')}: `, skills.join(', ') || '—'),
    h('p', { class: 'small-text' }, `${t('agents.transports')}: `, transports.join(', ') || '—'),
    error || '');
}

async function refreshCard() {
  if (!current) return;
  const errorBox = form.querySelector('.form-error');
  showError(errorBox, null);
  await busy(refreshButton, async () => {
    try {
      current = await api('POST', `/api/admin/agents/${current.id}/card/refresh`);
      renderCard(current);
    } catch (error) {
      showError(errorBox, error);
    }
  });
}

editorHooks.push({
  async open(agent) {
    current = agent;
    form.kind.value = agent && agent.kind === 'remote' ? 'remote' : 'local';
    form.remoteToken.value = '';
    form.remoteToken.placeholder = agent && agent.remoteTokenSet ? t('tools.secretKept') : '';
    form.querySelector('.remove-token').hidden = !(agent && agent.remoteTokenSet);
    refreshButton.hidden = !(agent && agent.kind === 'remote');
    renderCard(agent);
    showKind();
  },
  payload(data) {
    if (data.kind !== 'remote') return { kind: 'local' };
    const body = { kind: 'remote', cardUrl: data.cardUrl.trim() || null };
    if (data.remoteToken) body.remoteToken = data.remoteToken;
    else if (current && data.removeToken) body.remoteToken = '';
    return body;
  },
  async save(saved) {
    current = saved;
    renderCard(saved);
  },
});

form.kind.addEventListener('change', showKind);
refreshButton.addEventListener('click', refreshCard);
