// A chat message as the Vercel AI SDK's UIMessage ({id, role, parts}) built from stream chunks, and its
// view. Text is rendered to HTML by the server (POST /api/render/markdown), never parsed here.
import { autoGrow, copyText, h, onEnterKey } from '../dom.js';
import { lang, t } from '../i18n.js';
import { handleData } from './hooks.js';
import { decorateCodeBlocks, renderMarkdown } from '../markdown.js';
import { toolFiles, toolResult } from './tool-files.js';

export function newMessage(id, role, parts = [], status = 'complete', error = null, meta = {}) {
  return { id, role, parts: parts.map((p) => ({ ...p })), status, error, meta };
}

/** A message of the chat API (`MessageRead`) as the page keeps it. */
export function fromApi(m) {
  const message = newMessage(m.id, m.role, m.parts, m.status, m.error,
    { createdAt: m.createdAt, modelName: m.modelName, inputTokens: m.inputTokens, outputTokens: m.outputTokens });
  message.attachments = m.attachments || [];
  return message;
}

const IMAGE = /^image\/(png|jpeg|gif|webp)$/;

/** The files a user message was sent with: images as thumbnails, other files as chips; both download
 * the file (`/api/files/{id}/content`). A file deleted since keeps its chip, which says so. */
function attachmentList(files) {
  if (!files || !files.length) return null;
  return h('ul', { class: 'message-attachments', 'aria-label': t('chat.attach.sent') }, ...files.map((f) => {
    if (f.deleted) {
      return h('li', { class: 'attach-chip deleted', dataset: { name: f.name } },
        h('span', { class: 'attach-name', text: f.name }), h('span', { class: 'muted', text: t('chat.attach.deleted') }));
    }
    const url = `/api/files/${encodeURIComponent(f.id)}/content`;
    const label = t('chat.attach.download', { name: f.name });
    const inner = IMAGE.test(f.mediaType)
      ? [h('img', { class: 'attach-image', src: url, alt: f.name, loading: 'lazy' })]
      : [h('span', { class: 'attach-name', text: f.name })];
    return h('li', { class: 'attach-chip', dataset: { name: f.name } },
      h('a', { href: url, download: f.name, title: label, 'aria-label': label }, ...inner));
  }));
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
    case 'start': message.status = 'streaming'; message.error = null; message.failure = null; break;
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
 * while the text still grows, and one render of the final text (skipped when that is what shows).
 * The element is aria-busy until the final text shows as HTML: a screen reader reads the finished
 * rendering once, not the raw text and then the rendering (the message's own aria-busy ends with the
 * stream, a render before the HTML lands). */
export class MarkdownView {
  constructor() {
    this.el = h('div', { class: 'md', 'aria-busy': 'true' });
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
    this.markBusy();
  }

  markBusy() {
    const settled = this.final && !this.busy && this.text === this.shown;
    this.el.setAttribute('aria-busy', settled ? 'false' : 'true');
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
    this.schedule();
    this.markBusy();
  }
}

function stateLabel(part) {
  if (part.state === 'output-available' && toolResult(part.output)?.success === false) return [t('chat.tool.failed'), 'danger'];
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

/** A same-site page a tool result points to (`metadata.link`, e.g. the document it wrote), or null. */
function resultLink(part) {
  const result = toolResult(part.output);
  const meta = result && result.metadata;
  const link = meta && typeof meta.link === 'string' ? meta.link : '';
  if (!link.startsWith('/') || link.startsWith('//')) return null;
  const title = result.data && result.data.title;
  const text = link.startsWith('/agent-documents/') && title ? t('chat.tool.openDocument', { title }) : t('chat.tool.openLink');
  return h('a', { class: 'tool-link', href: link, dataset: { testid: 'tool-link' }, text });
}

/** The names of the tools this user's chats may call, by slug (a call names its tool by slug), in the
 * reader's language for a default tool. */
const toolRows = JSON.parse(document.getElementById('chat-tools')?.textContent || '{}');
/** The approver groups' names of the tools that have some, by slug (`pages/chat.py`): a call that pauses
 * live says who is to approve before the page has read the session's `pendingApprovals`, which then win
 * (`part.approverGroups`, `[]` for a call its requester answers). */
const toolApprovers = JSON.parse(document.getElementById('chat-tool-approvers')?.textContent || '{}');

function toolCard(part, actions) {
  const name = part.type.slice(5);
  const title = toolRows[name] || name; // people read the tool's name, not its slug
  const [label, kind] = stateLabel(part);
  const input = part.input ?? (part.inputText ? part.inputText : null);
  const card = h('div', { class: `tool-card state-${part.state}`, dataset: { toolCallId: part.toolCallId, tool: name } },
    h('div', { class: 'tool-head' }, h('span', { class: 'tool-icon', 'aria-hidden': 'true', text: '⚙' }),
      h('strong', { class: 'tool-name', text: title }), h('span', { class: `badge ${kind}`, dataset: { testid: 'tool-state' }, text: label })),
    part.state === 'output-available' ? resultLink(part) : null,
    part.state === 'output-available' ? toolFiles(part.output, name) : null,
    input !== null ? h('details', { class: 'tool-io', open: part.state === 'approval-requested' },
      h('summary', { text: t('chat.tool.input') }), h('pre', { class: 'code', text: json(input) })) : null,
    part.state === 'output-available' ? h('details', { class: 'tool-io' },
      h('summary', { text: t('chat.tool.output') }), h('pre', { class: 'code', dataset: { testid: 'tool-output' }, text: json(toolResult(part.output)) })) : null,
    part.state === 'output-error' ? toolError(part) : null,
    part.approval && part.approval.reason ? h('p', { class: 'muted small-text', text: `${t('chat.tool.reason')}: ${part.approval.reason}` }) : null,
    decidedBy(part));
  const approvers = part.approverGroups ?? toolApprovers[name] ?? [];
  if (part.state === 'approval-requested' && approvers.length) {
    // The tool's approvers answer this call, not the person chatting (`chat.approvals`): no buttons,
    // but who is to answer; the page waits for them (chat.js `watchApprovers`).
    card.append(h('p', { class: 'approval waiting-for', dataset: { testid: 'waiting-for' },
      text: t('chat.tool.waitingFor', { groups: approvers.join(', ') }) }));
  } else if (part.state === 'approval-requested' && actions) {
    // Named by the tool: with two calls waiting, a screen reader says which one a button answers.
    const reason = h('input', { type: 'text', class: 'reason', placeholder: t('chat.tool.reasonPlaceholder'),
      'aria-label': t('chat.tool.reasonNamed', { tool: title }) });
    const approve = h('button', { type: 'button', class: 'primary small', text: t('chat.tool.approve'),
      'aria-label': t('chat.tool.approveNamed', { tool: title }) });
    const reject = h('button', { type: 'button', class: 'danger small', text: t('chat.tool.reject'),
      'aria-label': t('chat.tool.rejectNamed', { tool: title }) });
    approve.addEventListener('click', () => actions.answer(part, true, '', [approve, reject]));
    reject.addEventListener('click', () => actions.answer(part, false, reason.value.trim(), [approve, reject]));
    onEnterKey(reason, () => reject.click(), { singleLine: true }); // a reason is given to say no
    card.append(h('div', { class: 'approval' }, h('span', { text: t('chat.tool.needsApproval') }), reason,
      h('span', { class: 'approval-buttons' }, approve, reject)));
  }
  return card;
}

/** Who answered a call someone other than the person chatting answered (a tool's approver), or null. */
function decidedBy(part) {
  const by = part.approval && part.approval.decidedBy;
  if (!by) return null;
  const key = part.approval.approved === false ? 'chat.tool.rejectedBy' : 'chat.tool.approvedBy';
  return h('p', { class: 'muted small-text tool-decider', dataset: { testid: 'decided-by' }, text: t(key, { user: by }) });
}

/** A tool's failure in the reader's language when its code is known, with the tool's own words beneath
 * (they name what failed: a path, a status); the tool's words alone otherwise. Shown, not in a tooltip:
 * a phone has no hover. */
function toolError(part) {
  const key = part.errorCode ? `toolError.${part.errorCode}` : '';
  const detail = part.errorText || '';
  if (!key || t(key) === key) return h('p', { class: 'tool-error', text: detail });
  return [h('p', { class: 'tool-error', text: t(key) }),
    detail && detail !== t(key) ? h('p', { class: 'tool-error-detail', dataset: { testid: 'tool-error-detail' }, text: detail }) : null];
}

/** Why a reply failed, in words, with what to check: the server sends a `data-error` part with a code. */
function failureNote(message, actions) {
  const info = message.failure || {};
  const code = info.code || (message.status === 'interrupted' ? 'interrupted' : 'failed');
  const status = info.status ? String(info.status) : '';
  const specific = status && t(`chat.error.model_http_${status}`) !== `chat.error.model_http_${status}`;
  const base = specific ? `chat.error.model_http_${status}` : `chat.error.${code}`;
  // a failure worded by one of its values (a budget's `day_tokens`, `month_cost`, …), else by its code
  const key = info.variant && t(`${base}.${info.variant}`) !== `${base}.${info.variant}` ? `${base}.${info.variant}` : base;
  const known = t(key) !== key;
  const title = known ? t(key, { ...info, status }) : t('chat.error.failed');
  const hintKeys = [...(actions && actions.isAdmin ? [`${key}.hintAdmin`] : []), `${key}.hint`];
  const hintKey = hintKeys.find((k) => t(k) !== k);
  const hint = hintKey ? t(hintKey) : '';
  // Below the words in the reader's language: what the provider itself said (its words, untranslatable),
  // never our English sentence for a failure the title already names; that only for one it cannot name.
  const detail = 'detail' in info ? info.detail : (known && code !== 'failed' ? '' : message.error);
  const box = h('div', { class: 'message-error', role: 'alert', dataset: { testid: 'message-error', code } },
    h('strong', { text: title }),
    hint ? h('p', { class: 'error-hint', text: hint }) : null,
    detail ? h('p', { class: 'error-detail small-text', dataset: { testid: 'error-detail' }, text: detail }) : null,
    // the id of the request that started the reply, as in the server's log lines: what a report quotes
    info.requestId ? h('p', { class: 'error-reference small-text', dataset: { testid: 'error-reference' },
      text: t('error.reference', { id: info.requestId }) }) : null);
  return box;
}

function formatTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const today = new Date().toDateString() === date.toDateString();
  return new Intl.DateTimeFormat(lang, today ? { timeStyle: 'short' } : { dateStyle: 'medium', timeStyle: 'short' }).format(date);
}

/** The quiet line under a reply: when, which model, how many tokens. */
function metaLine(message) {
  const meta = message.meta || {};
  const bits = [];
  if (meta.createdAt) {
    bits.push(h('time', { datetime: meta.createdAt, title: new Date(meta.createdAt).toLocaleString(lang), text: formatTime(meta.createdAt) }));
  }
  if (meta.modelName) bits.push(h('span', { class: 'meta-model', text: meta.modelName }));
  if (meta.inputTokens || meta.outputTokens) {
    bits.push(h('span', { class: 'meta-tokens', title: t('chat.meta.tokensTitle'),
      text: t('chat.meta.tokens', { input: meta.inputTokens || 0, output: meta.outputTokens || 0 }) }));
  }
  return bits.length ? h('span', { class: 'message-meta', dataset: { testid: 'message-meta' } }, ...bits) : null;
}

/** The plain text of a message, as Copy puts it on the clipboard (the markdown source of a reply). */
export function messageText(message) {
  return message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('\n\n');
}

/** The DOM of one message; `update()` re-renders its parts, reusing markdown views of text parts. */
export class MessageView {
  constructor(message, { actions, dataContext } = {}) {
    this.message = message;
    this.actions = actions;
    this.dataContext = dataContext;
    this.boxes = new Map();
    this.cards = new Map();
    this.dataNodes = new Map();
    this.editing = null;
    this.el = h('li', { class: `message ${message.role}`, dataset: { messageId: message.id, role: message.role } });
    this.body = h('div', { class: 'bubble' });
    this.footer = h('div', { class: 'message-footer' });
    this.el.append(this.body, this.footer);
    this.update();
  }

  partNode(part, index) {
    if (part.type === 'text' && !part.text) return null; // a reply that failed before its first word
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
      part.errorCode = this.message.toolErrors?.[part.toolCallId] || part.errorCode;
      // Rebuild a card only when it changed, so open <details> and a half-typed reason survive.
      const sig = JSON.stringify([part.state, part.input, part.inputText, part.output, part.errorText, part.errorCode, part.approval, part.approverGroups]);
      const cached = this.cards.get(part.toolCallId);
      if (cached && cached.sig === sig) return cached.node;
      const node = toolCard(part, this.actions);
      this.cards.set(part.toolCallId, { sig, node });
      return node;
    }
    if (part.type === 'data-error' || part.type === 'data-tool-error') return null; // read by the footer / cards
    if (part.type.startsWith('data-')) {
      if (!this.dataNodes.has(index)) {
        const ctx = { ...(this.dataContext || {}), live: Boolean(part.live), messageId: this.message.id,
          waiting: this.message.status === 'awaiting_approval' };
        this.dataNodes.set(index, handleData(part, ctx) || this.defaultData(part));
      }
      return this.dataNodes.get(index);
    }
    return null;
  }

  /** A notice with a known code is worded in the reader's language (`chat.notice.<code>`, with the
   * part's data as its values); any other shows the message the server wrote. */
  defaultData(part) {
    const data = part.data || {};
    const key = data.code ? `chat.notice.${data.code}` : '';
    const text = (key && t(key, data) !== key) ? t(key, data) : (data.message || data.text || '');
    if (!text) return null;
    return h('p', { class: `notice-line ${data.level || ''}`, dataset: { part: part.type }, text });
  }

  /** Read what `data-error` / `data-tool-error` parts say into the message (they are not shown as such). */
  readDataParts() {
    const m = this.message;
    m.toolErrors = m.toolErrors || {};
    for (const p of m.parts) {
      if (p.type === 'data-error') m.failure = p.data || {};
      else if (p.type === 'data-tool-error' && p.data && p.data.toolCallId) m.toolErrors[p.data.toolCallId] = p.data.code;
    }
  }

  update() {
    const m = this.message;
    this.el.dataset.status = m.status;
    this.el.dataset.messageId = m.id;
    // The list is a live region: while a reply grows, a screen reader waits for it instead of reading
    // every few words as they arrive.
    this.el.setAttribute('aria-busy', m.status === 'streaming' ? 'true' : 'false');
    if (this.editing) return; // the editor stays until sent or cancelled
    this.readDataParts();
    const nodes = m.parts.map((p, i) => this.partNode(p, i)).filter(Boolean);
    if (m.role === 'assistant' && m.status === 'streaming' && !nodes.length) {
      nodes.push(h('span', { class: 'typing', role: 'status', 'aria-label': t('chat.writing'), text: '…' }));
    }
    const files = attachmentList(m.attachments);
    if (files) nodes.push(files);
    this.body.replaceChildren(...nodes);
    this.body.hidden = !nodes.length; // no empty bubble above a failed reply's error box
    this.footer.replaceChildren(...this.footerNodes());
  }

  footerNodes() {
    const m = this.message;
    const failed = m.status === 'failed' || m.status === 'interrupted';
    const out = [];
    if (failed) out.push(failureNote(m, this.actions));
    if (m.status === 'stopped') out.push(h('span', { class: 'badge', dataset: { testid: 'message-status' }, text: t('chat.status.stopped') }));
    if (m.status !== 'streaming') {
      const meta = metaLine(m); // a sent message shows its time, a reply also its model and usage
      if (meta) out.push(meta);
    }
    if (m.status !== 'streaming') out.push(this.actionBar(failed));
    return out;
  }

  actionBar(failed) {
    const m = this.message;
    const a = this.actions || {};
    const bar = h('div', { class: 'msg-actions', role: 'group', 'aria-label': t('chat.messageActions') });
    const button = (label, onclick, extra = {}) => h('button', { type: 'button', class: 'linklike small', text: label, onclick, ...extra });
    if (messageText(m)) {
      const copy = button(t('action.copy'), async () => {
        const ok = await copyText(messageText(m));
        copy.textContent = ok ? t('action.copied') : t('chat.copyFailed');
        setTimeout(() => { copy.textContent = t('action.copy'); }, 1500);
      }, { 'aria-label': t('chat.copyMessage') });
      bar.append(copy);
    }
    if (m.role === 'user' && a.resend && !m.id.startsWith('local-')) {
      bar.append(button(t('action.edit'), () => this.startEdit(), { class: 'linklike small needs-idle', dataset: { action: 'edit' } }));
    }
    if (failed && m.failure?.code === 'connection_lost' && a.reconnect) {
      // The reply may still be being written on the server: follow it again rather than start over.
      bar.append(button(t('chat.action.reconnect'), () => a.reconnect(), { class: 'primary small needs-idle', dataset: { testid: 'reconnect' } }));
      return bar;
    }
    if (m.role === 'assistant' && m.status !== 'awaiting_approval' && a.regenerate && a.isLast && a.isLast(this)) {
      const label = failed ? t('chat.action.retry') : t('chat.action.regenerate');
      bar.append(button(label, () => a.regenerate(), { class: `${failed ? 'primary' : 'linklike'} small needs-idle`, dataset: { testid: failed ? 'retry' : 'regenerate' } }));
    }
    return bar;
  }

  startEdit() {
    const text = messageText(this.message);
    const area = h('textarea', { class: 'edit-input', rows: Math.min(10, text.split('\n').length + 1), 'aria-label': t('chat.editMessage') });
    area.value = text;
    const cancel = h('button', { type: 'button', class: 'small', text: t('action.cancel') });
    const save = h('button', { type: 'button', class: 'primary small', text: t('chat.edit.send') });
    const stop = () => { // cancelled: the focus goes back to the Edit button that opened the editor
      this.editing = null;
      this.update();
      this.footer.querySelector('[data-action="edit"]')?.focus();
    };
    cancel.addEventListener('click', stop);
    save.addEventListener('click', async () => {
      const value = area.value.trim();
      if (!value) return;
      save.disabled = true;
      const ok = await this.actions.resend(this, value);
      if (ok) this.editing = null; else save.disabled = false;
    });
    area.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') { event.preventDefault(); stop(); }
    });
    onEnterKey(area, () => save.click());
    this.editing = h('div', { class: 'editor' }, area, h('div', { class: 'editor-actions' }, cancel, save));
    this.body.replaceChildren(this.editing);
    this.footer.replaceChildren();
    autoGrow(area);
    area.focus();
  }
}
