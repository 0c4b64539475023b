// One knowledge collection: its files (uploaded here, then added; their state polled while they are
// indexed), removing them, deleting the collection, and searching it.
import { api, upload } from '../api.js';
import { badge, busy, confirmDialog, errorText, h } from '../dom.js';
import { t } from '../i18n.js';

const view = document.getElementById('kb-view');
const base = `/api/knowledge/${encodeURIComponent(view.dataset.id)}`;
const rows = document.getElementById('kb-file-rows');
const noFiles = document.getElementById('kb-no-files');
const counts = document.getElementById('kb-counts');
const fileInput = document.getElementById('kb-file');
const uploadErrors = document.getElementById('upload-errors');
const POLL_MS = 1000;
let polling = null;

const STATUS_KIND = { ready: 'ok', processing: 'warn', failed: 'danger' };

function fileRow(file) {
  const remove = h('button', { type: 'button', class: 'linklike', text: t('kb.remove'), dataset: { testid: 'remove-file' } });
  remove.addEventListener('click', async () => {
    if (!(await confirmDialog(t('kb.confirmRemove', { name: file.name }), { confirmLabel: t('kb.remove') }))) return;
    await busy(remove, async () => {
      try { await api('DELETE', `${base}/files/${encodeURIComponent(file.id)}`); } catch (error) { showUploadError(file.name, error); }
      await refresh();
    });
  });
  const status = h('td', {}, badge(t(`kb.status.${file.status}`), STATUS_KIND[file.status]));
  if (file.error) status.append(h('span', { class: 'kb-error', text: file.error }));
  return h('tr', { dataset: { fileId: file.id, status: file.status } },
    h('td', {}, h('a', { href: `/api/files/${encodeURIComponent(file.id)}/content`, text: file.name })),
    status, h('td', { text: String(file.chunks) }), h('td', {}, remove));
}

function render(collection) {
  rows.replaceChildren(...collection.files.map(fileRow));
  noFiles.hidden = collection.files.length > 0;
  counts.textContent = t('kb.counts', { files: collection.fileCount, chunks: collection.chunkCount });
  clearTimeout(polling);
  if (collection.status === 'processing') polling = setTimeout(refresh, POLL_MS);
}

async function refresh() {
  try { render(await api('GET', base)); } catch { polling = setTimeout(refresh, POLL_MS * 5); }
}

function showUploadError(name, error) {
  uploadErrors.append(h('li', { text: t('error.withDetail', { text: errorText(error), detail: name }) }));
}

document.getElementById('add-files').addEventListener('click', () => fileInput.click());
fileInput.addEventListener('change', async () => {
  uploadErrors.replaceChildren();
  for (const file of fileInput.files) {
    try {
      const stored = await upload(file);
      await api('POST', `${base}/files`, { fileId: stored.id });
    } catch (error) {
      showUploadError(file.name, error);
    }
  }
  fileInput.value = '';
  await refresh();
});

document.getElementById('delete-kb').addEventListener('click', async () => {
  if (!(await confirmDialog(t('kb.confirmDelete')))) return;
  await api('DELETE', base);
  window.location.assign('/knowledge');
});

const searchForm = document.getElementById('kb-search');
const results = document.getElementById('kb-results');
const searchError = document.getElementById('search-error');
const searchMode = document.getElementById('search-mode');

function resultItem(hit) {
  const where = hit.page === null ? hit.fileName : t('kb.filePage', { name: hit.fileName, page: hit.page });
  return h('li', { dataset: { chunkId: hit.chunkId } }, h('span', { class: 'kb-source', text: where }),
    h('p', { class: 'kb-text', text: hit.text }));
}

searchForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  searchError.hidden = true;
  const q = searchForm.elements.q.value.trim();
  if (!q) return;
  await busy(searchForm.querySelector('button[type=submit]'), async () => {
    try {
      const found = await api('GET', `${base}/search?${new URLSearchParams({ q, topK: '10' })}`);
      results.replaceChildren(...found.items.map(resultItem));
      searchMode.hidden = false;
      searchMode.textContent = found.items.length ? t(`kb.mode.${found.mode}`) : t('kb.noResults');
    } catch (error) {
      searchError.textContent = errorText(error);
      searchError.hidden = false;
    }
  });
});

render(JSON.parse(document.getElementById('kb-data').textContent));
