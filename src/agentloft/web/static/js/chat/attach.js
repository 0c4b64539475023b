// The composer's files: attached by the button, by dropping them on the chat or by pasting them. Each one
// uploads at once (POST /api/files, with its progress), a document is then read by the server (its chip
// says so until it is ready), and a file that cannot be sent says why on its own chip: too large, a type
// the server cannot read, or reading it failed. Sending waits until every upload is done and every chip
// that cannot be sent is removed. A chip removed before sending deletes its upload: it was made for this
// message only.
//
// Beside them, the chat's knowledge collections (`knowledgePicker`, below): one module, so an empty chat
// loads no more than it did.
import { api, upload as uploadFile } from '../api.js';
import { errorText, h } from '../dom.js';
import { t } from '../i18n.js';

const POLL_MS = 1000; // how often a document being read is asked about
const IMAGE = /^image\/(png|jpeg|gif|webp)$/;

function mib(bytes) {
  return Math.round((bytes / 1048576) * 10) / 10;
}

/** A tray of files for the next message; `onChange` is called whenever what can be sent changes. */
export function attachmentTray({ tray, button, picker, dropZone, pasteTarget, maxBytes, maxFiles, onChange }) {
  const items = [];

  const changed = () => { render(); onChange(); };

  function add(files) {
    for (const file of files) {
      const item = { file, state: 'uploading', progress: 0, id: null, error: null, abort: null };
      items.push(item);
      if (items.length > maxFiles) fail(item, t('chat.attach.tooMany', { max: maxFiles }));
      else if (file.size > maxBytes) fail(item, t('chat.attach.tooLarge', { max: mib(maxBytes) }));
      else upload(item);
    }
    changed();
  }

  function fail(item, text) {
    item.state = 'error';
    item.error = text;
  }

  function upload(item) {
    const controller = new AbortController();
    item.abort = () => controller.abort();
    const onProgress = (fraction) => {
      item.progress = fraction;
      render();
    };
    uploadFile(item.file, { onProgress, signal: controller.signal })
      .then((row) => settle(item, row))
      .catch((error) => {
        if (error.name === 'AbortError') return; // removed by the user
        fail(item, errorText(error));
        changed();
      });
  }

  function settle(item, row) {
    item.id = row.id;
    item.row = row;
    if (row.status === 'ready') item.state = 'ready';
    else if (row.status === 'failed') fail(item, t('chat.attach.failed', { reason: row.error || '' }));
    else { item.state = 'processing'; setTimeout(() => poll(item), POLL_MS); }
    changed();
  }

  async function poll(item) {
    if (!items.includes(item) || item.state !== 'processing') return;
    try {
      const row = await api('GET', `/api/files/${encodeURIComponent(item.id)}`);
      if (row.status === 'processing') { setTimeout(() => poll(item), POLL_MS); return; }
      settle(item, row);
    } catch (error) {
      fail(item, errorText(error));
      changed();
    }
  }

  function remove(item) {
    items.splice(items.indexOf(item), 1);
    if (item.abort && item.state === 'uploading') item.abort();
    if (item.id) api('DELETE', `/api/files/${encodeURIComponent(item.id)}`).catch(() => {});
    if (item.preview) URL.revokeObjectURL(item.preview);
    changed();
    button.focus();
  }

  function chip(item) {
    const name = item.file.name || t('chat.attach.pasted');
    const status = {
      uploading: t('chat.attach.uploading', { percent: Math.round(item.progress * 100) }),
      processing: t('chat.attach.reading'),
      ready: '',
      error: item.error,
    }[item.state];
    if (!item.preview && IMAGE.test(item.file.type)) item.preview = URL.createObjectURL(item.file);
    return h('li', { class: `attach-chip state-${item.state}`, dataset: { state: item.state, name } },
      item.preview ? h('img', { class: 'attach-thumb', src: item.preview, alt: '' }) : null,
      h('span', { class: 'attach-name', text: name }),
      item.state === 'uploading' ? h('progress', { max: '1', value: String(item.progress), 'aria-label': status }) : null,
      status ? h('span', { class: item.state === 'error' ? 'attach-error' : 'attach-status muted', role: item.state === 'error' ? 'alert' : null, text: status }) : null,
      h('button', { type: 'button', class: 'linklike small attach-remove', text: '×',
        'aria-label': t('chat.attach.remove', { name }), onclick: () => remove(item) }));
  }

  function render() {
    tray.replaceChildren(...items.map(chip));
    tray.hidden = !items.length;
  }

  button.addEventListener('click', () => picker.click());
  picker.addEventListener('change', () => { add([...picker.files]); picker.value = ''; });
  dropZone.addEventListener('dragover', (event) => {
    if (![...(event.dataTransfer?.types || [])].includes('Files')) return;
    event.preventDefault();
    dropZone.classList.add('dropping');
  });
  dropZone.addEventListener('dragleave', (event) => {
    if (!dropZone.contains(event.relatedTarget)) dropZone.classList.remove('dropping');
  });
  dropZone.addEventListener('drop', (event) => {
    dropZone.classList.remove('dropping');
    if (!event.dataTransfer?.files.length) return;
    event.preventDefault();
    add([...event.dataTransfer.files]);
  });
  pasteTarget.addEventListener('paste', (event) => {
    const files = [...(event.clipboardData?.files || [])];
    if (!files.length) return;
    event.preventDefault(); // a pasted screenshot is a file, not text
    add(files);
  });

  return {
    /** An upload runs, a document is being read, or a chip cannot be sent: Send waits. */
    blocking: () => items.some((i) => i.state !== 'ready'),
    /** What the message sends and then shows: `{id, name, mediaType, size}` of each file. */
    ready: () => items.map((i) => ({ id: i.id, name: i.row.name, mediaType: i.row.mediaType, size: i.row.size })),
    /** Sent: the chips go (their files now belong to the message). */
    clear: () => {
      for (const item of items) if (item.preview) URL.revokeObjectURL(item.preview);
      items.length = 0;
      changed();
    },
  };
}

// The composer's knowledge collections: the reader's own collections this chat searches (`knowledgeIds`,
// kept on the session by the server). "Knowledge" opens the list of their collections; picking one adds
// its chip above the message box, × removes it. The set goes with the next message only when it changed,
// so a chat opened again searches what it searched before without the page sending it anew.
/** The picker; `max` is the most collections one chat may search. */
export function knowledgePicker({ tray, button, menu, max }) {
  let chosen = []; // [{id, name}]
  let changed = false;

  function remove(item) {
    chosen = chosen.filter((c) => c.id !== item.id);
    changed = true;
    render();
    button.focus();
  }

  function chip(item) {
    return h('li', { class: 'attach-chip kb-chip', dataset: { id: item.id } },
      h('span', { class: 'attach-name', text: item.name }),
      h('button', { type: 'button', class: 'linklike small attach-remove', text: '×',
        'aria-label': t('chat.kb.remove', { name: item.name }), onclick: () => remove(item) }));
  }

  function render() {
    tray.replaceChildren(...chosen.map(chip));
    tray.hidden = !chosen.length;
  }

  function close() {
    menu.hidden = true;
    button.setAttribute('aria-expanded', 'false');
  }

  function pick(item) {
    chosen = [...chosen, { id: item.id, name: item.name }];
    changed = true;
    render();
    close();
    button.focus();
  }

  function entries(items) {
    const left = items.filter((c) => !chosen.some((k) => k.id === c.id));
    if (!items.length) {
      return [h('p', { class: 'muted small-text', text: t('chat.kb.none') }),
        h('a', { href: '/knowledge', text: t('chat.kb.create') })];
    }
    if (chosen.length >= max) return [h('p', { class: 'muted small-text', text: t('chat.kb.tooMany', { max }) })];
    if (!left.length) return [h('p', { class: 'muted small-text', text: t('chat.kb.allChosen') })];
    return [h('ul', {}, ...left.map((c) => h('li', {},
      h('button', { type: 'button', class: 'linklike kb-option', text: c.name, onclick: () => pick(c) }))))];
  }

  async function open() {
    menu.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    menu.replaceChildren(h('p', { class: 'muted small-text', text: t('chat.kb.loading') }));
    try {
      const page = await api('GET', '/api/knowledge?pageSize=100');
      menu.replaceChildren(...entries(page.items));
    } catch (error) {
      menu.replaceChildren(h('p', { class: 'form-error', role: 'alert', text: errorText(error) }));
    }
    menu.querySelector('button, a')?.focus();
  }

  button.addEventListener('click', () => (menu.hidden ? open() : close()));
  menu.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') { close(); button.focus(); }
  });
  document.addEventListener('click', (event) => {
    if (!menu.hidden && !menu.contains(event.target) && !button.contains(event.target)) close();
  });

  return {
    /** The session's collections as the server has them (a chat opened): nothing to send. */
    show: (items) => { chosen = items.map((k) => ({ id: k.id, name: k.name })); changed = false; render(); },
    /** The ids to send with the next message, or null when the set is as the chat has it. */
    pending: () => (changed ? chosen.map((k) => k.id) : null),
    /** The server took the set. */
    sent: () => { changed = false; },
  };
}
