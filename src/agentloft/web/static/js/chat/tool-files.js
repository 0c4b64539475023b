// A tool's output in the chat: its result ({success, data, error, metadata}), or [result, file...] when the
// tool returned files (an MCP tool's images; see chat/toolset.py). The tool card shows images; a saved
// message keeps only small ones (a larger one comes back as {omitted: true, size}).
import { h } from '../dom.js';
import { t } from '../i18n.js';

// Shown inline as <img src="data:…">; other types are only named.
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** The tool's result, whether or not files came with it. */
export function toolResult(output) {
  return Array.isArray(output) ? output[0] : output;
}

/** Nodes for the files of an output: images, and a line for each file that cannot be shown. */
export function toolFiles(output, toolName) {
  return Array.isArray(output) ? output.slice(1).map((item) => fileNode(item, toolName)) : [];
}

function fileNode(item, toolName) {
  const note = (text) => h('p', { class: 'muted small-text', text });
  if (typeof item === 'string') return note(item); // the model was told why a file was left out
  if (!item || item.kind !== 'binary') return null;
  const type = String(item.media_type || '');
  if (item.omitted) return note(t('chat.tool.fileNotKept', { type, size: Math.ceil((item.size || 0) / 1024) }));
  if (!IMAGE_TYPES.has(type) || typeof item.data !== 'string') return note(t('chat.tool.fileNotShown', { type }));
  return h('img', { class: 'tool-image', src: `data:${type};base64,${item.data}`, alt: t('chat.tool.image', { name: toolName }),
    dataset: { testid: 'tool-image' } });
}
