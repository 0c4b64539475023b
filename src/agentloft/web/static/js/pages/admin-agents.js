// Admin: agents (CRUD). Extra sections of the editor (e.g. the tool picker) plug in through agent-editor-hooks.js.
import { api, loadAll } from '../api.js';
import { badge, dialog, fillForm, h, readForm, resetFormErrors, showError } from '../dom.js';
import { t } from '../i18n.js';
import { onSave, removeItem, tableRefresher } from './admin-common.js';
import { editorHooks } from './agent-editor-hooks.js';

const tbody = document.querySelector('#agents-table tbody');
const empty = document.querySelector('.empty');
const pageError = document.querySelector('.page-error');
const cardWarning = document.querySelector('.card-warning');
const dlg = document.getElementById('agent-dialog');
const form = document.getElementById('agent-form');
const modal = dialog(dlg);
let editing = null;
let models = [];

// Warnings about the prompt (e.g. it names an admin-only tool), checked while the admin types.
const promptWarnings = h('div', { class: 'notice prompt-warnings', role: 'status', hidden: true });
form.systemPrompt.closest('label').after(promptWarnings);
let promptTimer = null;
let promptCheck = 0;

async function checkPrompt() {
  const mine = ++promptCheck;
  try {
    const { warnings } = await api('POST', '/api/admin/agents/prompt-check', { systemPrompt: form.systemPrompt.value });
    if (mine !== promptCheck) return; // a newer check is on its way
    promptWarnings.replaceChildren(...warnings.map((text) => h('p', { text })));
    promptWarnings.hidden = warnings.length === 0;
  } catch {
    promptWarnings.hidden = true; // only advice: the form works without it
  }
}
form.systemPrompt.addEventListener('input', () => {
  clearTimeout(promptTimer);
  promptTimer = setTimeout(checkPrompt, 400);
});


function modelName(id) {
  if (id === null || id === undefined) return t('admin.agents.defaultModel');
  const model = models.find((m) => m.id === id);
  return model ? model.name : `#${id}`;
}

/** A remote agent whose card could not be fetched: calls to it fail until it can be. */
function cardUnfetched(agent) {
  return agent.kind === 'remote' && Boolean(agent.cardError);
}

function cardMark(agent) {
  if (!cardUnfetched(agent)) return null;
  const mark = badge(t('agents.cardUnfetched'), 'warn');
  mark.title = agent.cardError;
  return mark;
}

/** Say on the page, once the dialog has closed, that a saved remote agent has no card. */
function warnOfCard(agent) {
  cardWarning.hidden = !cardUnfetched(agent);
  cardWarning.textContent = cardUnfetched(agent)
    ? t('agents.cardSavedUnfetched', { name: agent.name, error: agent.cardError }) : '';
}

function row(agent) {
  return h('tr', { dataset: { slug: agent.slug } },
    h('td', {}, h('strong', { text: agent.name }), agent.description ? h('div', { class: 'muted small-text', text: agent.description }) : null),
    h('td', {}, h('code', { text: agent.slug })),
    h('td', {}, agent.kind === 'remote' ? badge(t('agents.remote'), 'accent') : modelName(agent.modelId)),
    h('td', {}, agent.enabled ? badge(t('status.enabled'), 'ok') : badge(t('status.disabled')), cardMark(agent)),
    h('td', {}, agent.a2aCallable || agent.kind === 'remote' ? badge(t('status.yes'), 'accent') : h('span', { class: 'muted', text: '—' })),
    h('td', { class: 'actions' },
      h('button', { type: 'button', class: 'small', text: t('action.edit'), onclick: () => openEditor(agent) }),
      h('button', { type: 'button', class: 'small danger', text: t('action.delete'), onclick: (e) => remove(e.currentTarget, agent) })));
}

const refresh = tableRefresher({ url: '/api/admin/agents', tbody, row, empty });

function fillModels() {
  const select = form.modelId;
  select.replaceChildren(h('option', { value: '', text: t('admin.agents.defaultModel') }),
    ...models.map((m) => h('option', { value: m.id, text: m.enabled ? m.name : `${m.name} (${t('status.disabled')})` })));
}

async function openEditor(agent) {
  editing = agent;
  form.reset();
  resetFormErrors(form);
  const title = form.querySelector('h2');
  title.textContent = agent ? title.dataset.titleEdit : title.dataset.titleNew;
  fillModels();
  fillForm(form, agent || { enabled: true, maxSteps: 10, maxOutputTokens: 4096, modelId: null });
  form.starterPrompts.value = (agent ? agent.starterPrompts : []).join('\n');
  slugFollowsName = !agent; // a new agent's slug comes from its name until the admin types one
  promptWarnings.hidden = true;
  checkPrompt();
  // The sections fill themselves before the form shows: opened first, a choice made while the tool list
  // loaded (say, kind "remote") was reset under the user's hand when the remote section filled in.
  await Promise.all(editorHooks.map((hook) => hook.open(agent)));
  modal.open();
}

/** "Team Notes 2" → "team-notes-2": letters without their accents, anything else a dash. A name with
 * no such letters (Chinese) leaves the slug for the admin to type. */
function slugOf(name) {
  return name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase()
    .replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64).replace(/-+$/, '');
}

let slugFollowsName = false;
form.name.addEventListener('input', () => { if (slugFollowsName) form.slug.value = slugOf(form.name.value); });
form.slug.addEventListener('input', () => { slugFollowsName = false; });

onSave(form, async () => {
  const data = readForm(form);
  const body = {
    slug: data.slug.trim(), name: data.name, description: data.description, systemPrompt: data.systemPrompt,
    starterPrompts: data.starterPrompts.split('\n').map((line) => line.trim()).filter(Boolean),
    modelId: data.modelId, maxSteps: data.maxSteps, maxOutputTokens: data.maxOutputTokens,
    enabled: data.enabled, a2aCallable: data.a2aCallable,
  };
  for (const hook of editorHooks) if (hook.payload) Object.assign(body, hook.payload(data));
  const saved = editing ? await api('PUT', `/api/admin/agents/${editing.id}`, body)
    : await api('POST', '/api/admin/agents', body);
  editing = saved;
  for (const hook of editorHooks) await hook.save(saved);
  warnOfCard(saved);
}, { modal, refresh });

function remove(button, agent) {
  return removeItem({ button, question: t('admin.agents.confirmDelete', { name: agent.name }),
    url: `/api/admin/agents/${agent.id}`, errorBox: pageError, refresh });
}

document.getElementById('new-agent').addEventListener('click', () => openEditor(null));

async function start() {
  models = await loadAll('/api/admin/models?kind=chat'); // an embedding model never runs an agent
  await refresh();
  document.getElementById('new-agent').disabled = false;
}
start().catch((e) => showError(pageError, e));
