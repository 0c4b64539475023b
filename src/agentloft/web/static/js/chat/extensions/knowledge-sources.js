// Chat extension: the "Sources" of a reply that searched knowledge collections. The knowledge tool sends
// `data-knowledge-sources` ({toolCallId, sources: [{chunkId, fileName, page, text}]}); it is kept with the
// reply, so the list shows again on reload. Each source opens the chunk's text in place.

import { dataHandlers } from '../hooks.js';
import { h } from '../../dom.js';
import { t } from '../../i18n.js';

function source(item) {
  const where = item.page === null || item.page === undefined ? item.fileName
    : t('chat.sources.page', { name: item.fileName, page: item.page });
  return h('li', { dataset: { chunkId: item.chunkId } },
    h('details', {}, h('summary', { text: where }), h('p', { class: 'kb-chunk', text: item.text })));
}

dataHandlers['data-knowledge-sources'] = (data) => {
  const sources = (data && Array.isArray(data.sources)) ? data.sources : [];
  if (!sources.length) return null;
  return h('div', { class: 'kb-sources', dataset: { testid: 'sources' } },
    h('strong', { text: t('chat.sources.title') }), h('ol', {}, ...sources.map(source)));
};
