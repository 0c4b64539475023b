// One document: view, edit with a live preview (rendered by the server), save, delete, versions.
import { api } from '../api.js';
import { busy, dialog, fillForm, readForm, resetFormErrors, showError, showFormError } from '../dom.js';
import { formatDate, t } from '../i18n.js';
import { decorateCodeBlocks } from '../markdown.js';

const id = document.getElementById('doc-view').dataset.id;
const url = `/api/agent-documents/${encodeURIComponent(id)}`;
const view = document.getElementById('doc-view');
const edit = document.getElementById('doc-edit');
const form = document.getElementById('edit-form');
const preview = edit.querySelector('.doc-preview');
const versionsError = document.getElementById('versions-error');
const original = JSON.parse(document.getElementById('doc-data').textContent);
decorateCodeBlocks(view.querySelector('.doc-body'));

let previewTimer = null;
let previewSeq = 0;

async function renderPreview() {
  const seq = ++previewSeq;
  try {
    const { html } = await api('POST', '/api/render/markdown', { text: form.elements.content.value });
    if (seq === previewSeq) {
      preview.innerHTML = html; // sanitised by the server (markdown-it + nh3)
      decorateCodeBlocks(preview);
    }
  } catch (error) {
    if (seq === previewSeq) preview.textContent = error.message;
  }
}

function schedulePreview() {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(renderPreview, 250);
}

function openEditor() {
  fillForm(form, original);
  resetFormErrors(form);
  view.hidden = true;
  edit.hidden = false;
  renderPreview();
  form.elements.content.focus();
}

function closeEditor() {
  edit.hidden = true;
  view.hidden = false;
}

document.getElementById('edit-doc').addEventListener('click', openEditor);
document.getElementById('cancel-edit').addEventListener('click', closeEditor);
form.elements.content.addEventListener('input', schedulePreview);

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  const values = readForm(form);
  const changes = {};
  for (const key of ['title', 'type', 'tags', 'content']) {
    if (values[key] !== original[key]) changes[key] = key === 'tags' && !values[key] ? null : values[key];
  }
  // An unchanged summary is left alone, so new content gets a freshly cut one.
  if (values.summary !== original.summary) changes.summary = values.summary || null;
  if (!Object.keys(changes).length) { closeEditor(); return; }
  await busy(form.querySelector('button[type=submit]'), async () => {
    try {
      await api('PUT', url, changes);
      window.location.reload();
    } catch (error) {
      showFormError(form, error);
    }
  });
});

document.getElementById('delete-doc').addEventListener('click', async (event) => {
  if (!window.confirm(t('docs.confirmDelete', { title: original.title }))) return;
  await busy(event.currentTarget, async () => {
    try {
      await api('DELETE', url);
      window.location.assign(`/agent-documents?type=${encodeURIComponent(original.type)}`);
    } catch (error) {
      showError(versionsError, error);
    }
  });
});

const versionDialog = document.getElementById('version-dialog');
const versionModal = dialog(versionDialog);

document.querySelectorAll('[data-view-version]').forEach((button) => button.addEventListener('click', async () => {
  try {
    const version = await api('GET', `${url}/versions/${button.dataset.viewVersion}`);
    const { html } = await api('POST', '/api/render/markdown', { text: version.content });
    versionDialog.querySelector('.version-title').textContent = `#${version.version} · ${version.title}`;
    versionDialog.querySelector('.version-body').innerHTML = html; // sanitised by the server
    versionModal.open();
  } catch (error) {
    showError(versionsError, error);
  }
}));

document.querySelectorAll('[data-restore-version]').forEach((button) => button.addEventListener('click', async () => {
  const version = button.dataset.restoreVersion;
  if (!window.confirm(t('docs.confirmRestore', { version }))) return;
  await busy(button, async () => {
    try {
      await api('POST', `${url}/versions/${version}/restore`);
      window.location.reload();
    } catch (error) {
      showError(versionsError, error);
    }
  });
}));

for (const el of document.querySelectorAll('time[data-local-time]')) el.textContent = formatDate(el.dateTime);

// Edit and Delete come disabled from the server: pressed before this script ran, they did nothing.
for (const id of ['edit-doc', 'delete-doc']) document.getElementById(id).disabled = false;
