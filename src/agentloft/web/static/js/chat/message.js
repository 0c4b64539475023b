// A chat message as the Vercel AI SDK's UIMessage ({id, role, parts}) built from stream chunks, and its
// view. Text is rendered to HTML by the server (POST /api/render/markdown), never parsed here.
import { h } from '../dom.js';
import { t } from '../i18n.js';
import { handleData } from './hooks.js';
import { decorateCodeBlocks, renderMarkdown } from '../markdown.js';

export function newMessage(id, role, parts = [], status = 'complete', error = null) {
  return { id, role, parts: parts.map((p) => ({ ...p })), status, error };
}

function toolPart(message, toolCallId, toolName) {
  let part = message.parts.find((p) => p.toolCallId === toolCallId);
  if (!part) {
    part = { type: `tool-${toolName || 'unknown'}`, toolCallId, state: 'input-streaming', input: null, inputText: '' };
    message.parts.push(part);
  }
  return part;
}

function openText(message, id) {
  return message.parts.find((p) => p.streamId === id);
}

/** Apply one UI-message-stream chunk to `message` (mutates it). Answers whether the stream finished. */
export function applyChunk(message, chunk) {
  switch (chunk.type) {
    case 'start': message.status = 'streaming'; message.error = null; break;
    case 'start-step': message.parts.push({ type: 'step-start' }); break;
    case 'text-start': case 'reasoning-start':
      message.parts.push({ type: chunk.type === 'text-start' ? 'text' : 'reasoning', text: '', state: 'streaming', streamId: chunk.id });
      break;
    case 'text-delta': case 'reasoning-delta': {
      const part = openText(message, chunk.id);
      if (part) part.text += chunk.delta;
      break;
    }
    case 'text-end': case 'reasoning-end': {
      const part = openText(message, chunk.id);
      if (part) { part.state = 'done'; delete part.streamId; }
      break;
    }
    case 'tool-input-start': toolPart(message, chunk.toolCallId, chunk.toolName); break;
    case 'tool-input-delta': {
      const part = toolPart(message, chunk.toolCallId);
      part.inputText = (part.inputText || '') + chunk.inputTextDelta;
      break;
    }
    case 'tool-input-available': {
      const part = toolPart(message, chunk.toolCallId, chunk.toolName);
      if (part.state === 'input-streaming' || part.state === 'approval-responded' || part.state === 'approval-requested') {
        part.state = part.state === 'input-streaming' ? 'input-available' : part.state;
      }
      part.input = chunk.input;
      break;
    }
    case 'tool-input-error':
      Object.assign(toolPart(message, chunk.toolCallId, chunk.toolName), { state: 'output-error', input: chunk.input, errorText: chunk.errorText });
      break;
    case 'tool-approval-request':
      Object.assign(toolPart(message, chunk.toolCallId), { state: 'approval-requested', approval: { id: chunk.approvalId } });
      break;
    case 'tool-output-available':
      Object.assign(toolPart(message, chunk.toolCallId), { state: 'output-available', output: chunk.output });
      break;
    case 'tool-output-error':
      Object.assign(toolPart(message, chunk.toolCallId), { state: 'output-error', errorText: chunk.errorText });
      break;
    case 'tool-output-denied':
      Object.assign(toolPart(message, chunk.toolCallId), { state: 'output-denied' });
      break;
    case 'error': message.error = chunk.errorText; message.status = 'failed'; break;
    case 'abort': message.status = 'stopped'; return true;
    case 'finish':
      if (message.status === 'streaming') {
        const waiting = message.parts.some((p) => p.state === 'approval-requested');
        message.status = waiting ? 'awaiting_approval' : 'complete';
      }
      return true;
    default:
      if (typeof chunk.type === 'string' && chunk.type.startsWith('data-') && !chunk.transient) {
        message.parts.push({ type: chunk.type, data: chunk.data, live: true });
      }
  }
  return false;
}

// --- view ------------------------------------------------------------------------------------------

const json = (value) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

// While a reply streams its text is rendered at most this often; once it ended, exactly once more.
export const RENDER_INTERVAL_MS = 250;

/** Keeps one text part's HTML in step with its text: one render request in flight, at most four a second
 * while the text still grows, and one render of the final text (skipped when that is what shows). */
export class MarkdownView {
  constructor() {
    this.el = h('div', { class: 'md' });
    this.text = null; // the latest text
    this.final = false; // no more text will come
    this.shown = null; // the text whose HTML is shown
    this.busy = false;
    this.timer = null;
    this.lastStart = -Infinity;
  }

  set(text, final = true) {
    if (text === this.text && final === this.final) return;
    this.text = text;
    this.final = final;
    if (this.shown === null && !this.busy) this.el.textContent = text; // raw until the first HTML arrives
    this.schedule();
  }

  schedule() {
    if (this.busy || this.text === this.shown) return;
    const wait = this.final ? 0 : this.lastStart + RENDER_INTERVAL_MS - performance.now();
    if (wait <= 0) {
      clearTimeout(this.timer);
      this.timer = null;
      this.render();
    } else if (!this.timer) {
      this.timer = setTimeout(() => { this.timer = null; this.schedule(); }, wait);
    }
  }

  async render() {
    const text = this.text;
    this.busy = true;
    this.lastStart = performance.now();
    try {
      this.el.innerHTML = await renderMarkdown(text); // sanitised by the server (nh3)
      decorateCodeBlocks(this.el);
    } catch {
      this.el.textContent = text;
    }
    this.shown = text;
    this.busy = false;
    this.el.dispatchEvent(new CustomEvent('rendered', { bubbles: true }));
    this.schedule();
  }
}

function stateLabel(part) {
  if (part.state === 'output-available' && part.output && part.output.success === false) return [t('chat.tool.failed'), 'danger'];
  if (part.state === 'approval-responded') {
    return part.approval && part.approval.approved === false ? [t('chat.tool.rejected'), 'danger'] : [t('chat.tool.approved'), 'accent'];
  }
  const labels = {
    'input-streaming': [t('chat.tool.preparing'), ''],
    'input-available': [t('chat.tool.running'), 'accent'],
    'approval-requested': [t('chat.tool.waiting'), 'warn'],
    'output-available': [t('chat.tool.done'), 'ok'],
    'output-error': [t('chat.tool.error'), 'danger'],
    'output-denied': [t('chat.tool.rejected'), 'danger'],
  };
  return labels[part.state] || [part.state, ''];
}

function toolCard(part, actions) {
  const name = part.type.slice(5);
  const [label, kind] = stateLabel(part);
  const input = part.input ?? (part.inputText ? part.inputText : null);
  const card = h('div', { class: `tool-card state-${part.state}`, dataset: { toolCallId: part.toolCallId, tool: name } },
    h('div', { class: 'tool-head' }, h('span', { class: 'tool-icon', 'aria-hidden': 'true', text: '⚙' }),
      h('strong', { text: name }), h('span', { class: `badge ${kind}`, dataset: { testid: 'tool-state' }, text: label })),
    input !== null ? h('details', { class: 'tool-io', open: part.state === 'approval-requested' },
      h('summary', { text: t('chat.tool.input') }), h('pre', { class: 'code', text: json(input) })) : null,
    part.state === 'output-available' ? h('details', { class: 'tool-io' },
      h('summary', { text: t('chat.tool.output') }), h('pre', { class: 'code', dataset: { testid: 'tool-output' }, text: json(part.output) })) : null,
    part.state === 'output-error' ? h('p', { class: 'tool-error', text: part.errorText || '' }) : null,
    part.approval && part.approval.reason ? h('p', { class: 'muted small-text', text: `${t('chat.tool.reason')}: ${part.approval.reason}` }) : null);
  if (part.state === 'approval-requested' && actions) {
    const reason = h('input', { type: 'text', class: 'reason', placeholder: t('chat.tool.reasonPlaceholder'), 'aria-label': t('chat.tool.reason') });
    const approve = h('button', { type: 'button', class: 'primary small', text: t('chat.tool.approve') });
    const reject = h('button', { type: 'button', class: 'danger small', text: t('chat.tool.reject') });
    approve.addEventListener('click', () => actions.answer(part, true, '', [approve, reject]));
    reject.addEventListener('click', () => actions.answer(part, false, reason.value.trim(), [approve, reject]));
    card.append(h('div', { class: 'approval' }, h('span', { text: t('chat.tool.needsApproval') }), reason, approve, reject));
  }
  return card;
}

/** The DOM of one message; `update()` re-renders its parts, reusing markdown boxes of text parts. */
export class MessageView {
  constructor(message, { actions, dataContext } = {}) {
    this.message = message;
    this.actions = actions;
    this.dataContext = dataContext;
    this.boxes = new Map();
    this.cards = new Map();
    this.dataNodes = new Map();
    this.el = h('li', { class: `message ${message.role}`, dataset: { messageId: message.id, role: message.role } });
    this.body = h('div', { class: 'bubble' });
    this.footer = h('div', { class: 'message-footer' });
    this.el.append(this.body, this.footer);
    this.update();
  }

  partNode(part, index) {
    if (part.type === 'text') {
      if (this.message.role === 'user') return h('div', { class: 'plain', text: part.text });
      let view = this.boxes.get(index);
      if (!view) { view = new MarkdownView(); this.boxes.set(index, view); }
      view.set(part.text, part.state !== 'streaming' || this.message.status !== 'streaming');
      return view.el;
    }
    if (part.type === 'reasoning') {
      return h('details', { class: 'reasoning' }, h('summary', { text: t('chat.reasoning') }), h('div', { class: 'plain', text: part.text }));
    }
    if (part.type.startsWith('tool-')) {
      // Rebuild a card only when it changed, so open <details> and a half-typed reason survive.
      const sig = JSON.stringify([part.state, part.input, part.inputText, part.output, part.errorText, part.approval]);
      const cached = this.cards.get(part.toolCallId);
      if (cached && cached.sig === sig) return cached.node;
      const node = toolCard(part, this.actions);
      this.cards.set(part.toolCallId, { sig, node });
      return node;
    }
    if (part.type.startsWith('data-')) {
      if (!this.dataNodes.has(index)) {
        const ctx = { ...(this.dataContext || {}), live: Boolean(part.live), messageId: this.message.id };
        this.dataNodes.set(index, handleData(part, ctx) || this.defaultData(part));
      }
      return this.dataNodes.get(index);
    }
    return null;
  }

  defaultData(part) {
    const data = part.data || {};
    const text = data.message || data.text || '';
    if (!text) return null;
    return h('p', { class: `notice-line ${data.level || ''}`, dataset: { part: part.type }, text });
  }

  update() {
    const m = this.message;
    this.el.dataset.status = m.status;
    const nodes = m.parts.map((p, i) => this.partNode(p, i)).filter(Boolean);
    if (m.role === 'assistant' && m.status === 'streaming' && !nodes.length) nodes.push(h('span', { class: 'typing', text: '…' }));
    this.body.replaceChildren(...nodes);
    const notes = [];
    if (m.error) notes.push(h('p', { class: 'message-error', role: 'alert', text: m.error }));
    const status = { stopped: t('chat.status.stopped'), interrupted: t('chat.status.interrupted'), failed: m.error ? null : t('chat.status.failed') }[m.status];
    if (status) notes.push(h('span', { class: 'badge', dataset: { testid: 'message-status' }, text: status }));
    this.footer.replaceChildren(...notes);
  }
}
