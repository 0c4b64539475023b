// Markdown from the server (markdown-it + Pygments + MathML, sanitised by nh3): the browser never parses
// markdown itself. Renders asked for in the same moment (a saved conversation opening) travel together
// in one request; code blocks get their language label and a copy button here.
import { api } from './api.js';
import { copyText, h } from './dom.js';
import { t } from './i18n.js';

const BATCH_LIMIT = 50;
let queue = [];

async function flushQueue() {
  const batch = queue;
  queue = [];
  for (let i = 0; i < batch.length; i += BATCH_LIMIT) {
    const part = batch.slice(i, i + BATCH_LIMIT);
    try {
      const html = part.length === 1
        ? [(await api('POST', '/api/render/markdown', { text: part[0].text })).html]
        : (await api('POST', '/api/render/markdown/batch', { texts: part.map((p) => p.text) })).html;
      part.forEach((p, j) => p.resolve(html[j]));
    } catch (error) {
      part.forEach((p) => p.reject(error));
    }
  }
}

/** The sanitised HTML of `text`; calls made in the same task share one request. */
export function renderMarkdown(text) {
  return new Promise((resolve, reject) => {
    if (!queue.length) queueMicrotask(flushQueue);
    queue.push({ text, resolve, reject });
  });
}

function languageOf(code) {
  const name = [...code.classList].find((c) => c.startsWith('language-'));
  return name ? name.slice('language-'.length) : '';
}

/** Give every code block under `root` a header with its language and a copy button (once). */
export function decorateCodeBlocks(root) {
  for (const pre of root.querySelectorAll('pre')) {
    if (pre.parentElement?.classList.contains('code-block')) continue;
    const code = pre.querySelector('code') || pre;
    const copy = h('button', { type: 'button', class: 'linklike small copy-code', text: t('action.copy'),
      'aria-label': t('chat.copyCode') });
    copy.addEventListener('click', async () => {
      const ok = await copyText(code.textContent);
      copy.textContent = ok ? t('action.copied') : t('chat.copyFailed');
      setTimeout(() => { copy.textContent = t('action.copy'); }, 1500);
    });
    const wrap = h('div', { class: 'code-block' },
      h('div', { class: 'code-head' }, h('span', { class: 'code-lang', text: languageOf(code) || t('chat.codeText') }), copy));
    pre.replaceWith(wrap);
    wrap.append(pre);
  }
}
