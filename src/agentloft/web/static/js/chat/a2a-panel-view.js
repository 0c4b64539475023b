// Read-only side panels for agent-invoke calls (seed 003, 3.3): when an agent hands a sub-task to another
// agent, a panel opens beside the chat and shows the callee's reply as it streams.
//
// The chat page feeds every UI-message-stream chunk of the caller's reply to `panels.handleChunk(chunk)`:
// - `tool-input-available` whose input is `{agentSlug, input}` opens a panel, waiting ("Waiting for
//   reply…" with a spinner); a `tool-approval-request` for that call closes it again until it runs;
// - `data-a2a-task-started` gives that panel its task id; it subscribes to
//   GET /api/agents/a2a/stream?taskId=… and renders the reply (markdown) as it arrives;
// - the panel shows generating / done / error, or "connection lost" with a button to follow again
//   (the stream replays from the start), and closes on request. Several calls stack;
// - a call's output before its task started (no such agent, not callable, past the depth limit) closes
//   its panel: seed 003 opens none for such a call, whose failure shows on its tool card;
// - a `tool-approval-request` in the called agent's own stream shows an approval card in the panel (the
//   called agent runs as the calling user, so they decide): Approve / Reject answer it through the called
//   agent's session (POST /api/agent-sessions/{calleeSessionId}/approvals), the panel follows the resumed
//   reply, and once it is done the chat is told (`a2a-callee-answered` on window) so it follows the
//   calling agent's reply, which goes on with the called agent's answer.

import { errorFrom, requestHeaders } from '../api.js';
import { t } from '../i18n.js';
import { MarkdownView } from './message.js';

const STYLE_URL = new URL('../../css/a2a-panel.css', import.meta.url).href;

function ensureStyles() {
  if (document.querySelector(`link[href="${STYLE_URL}"]`)) return;
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = STYLE_URL;
  document.head.append(link);
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function isInvokeInput(chunk) {
  const input = chunk.input;
  return chunk.toolName === 'agent-invoke'
    || (input && typeof input === 'object' && typeof input.agentSlug === 'string' && 'input' in input);
}

/** Parse SSE text into `data:` payloads; returns [payloads, rest-of-buffer]. */
function splitFrames(buffer) {
  const out = [];
  let idx;
  while ((idx = buffer.indexOf('\n\n')) >= 0) {
    const frame = buffer.slice(0, idx);
    buffer = buffer.slice(idx + 2);
    const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
    if (data) out.push(data);
  }
  return [out, buffer];
}

const SPINNER_CLASS = 'a2a-spinner';
const SVG = 'http://www.w3.org/2000/svg';
// Lucide's "bot" (ISC licence), the icon seed 003's panel header shows before the agent's name.
const BOT_SHAPES = [['path', { d: 'M12 8V4H8' }], ['rect', { width: 16, height: 12, x: 4, y: 8, rx: 2 }],
  ['path', { d: 'M2 14h2' }], ['path', { d: 'M20 14h2' }], ['path', { d: 'M15 13v2' }], ['path', { d: 'M9 13v2' }]];

function botIcon() {
  const svg = document.createElementNS(SVG, 'svg');
  const attrs = { class: 'a2a-panel-icon', viewBox: '0 0 24 24', width: 16, height: 16, fill: 'none',
    stroke: 'currentColor', 'stroke-width': 2, 'stroke-linecap': 'round', 'stroke-linejoin': 'round',
    'aria-hidden': 'true', focusable: 'false' };
  for (const [k, v] of Object.entries(attrs)) svg.setAttribute(k, String(v));
  for (const [tag, shape] of BOT_SHAPES) {
    const part = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(shape)) part.setAttribute(k, String(v));
    svg.append(part);
  }
  return svg;
}

class InvokePanel {
  constructor(host, { toolCallId, agentSlug, onClose }) {
    this.toolCallId = toolCallId;
    this.agentSlug = agentSlug || '';
    this.taskId = '';
    this.sessionId = '';
    this.calls = new Map(); // the called agent's tool calls seen in its stream: id → {toolName, input}
    this.asking = new Set(); // those whose approval card is shown
    this.answered = false; // an answer was sent: the chat follows the caller once this reply is done
    this.text = '';
    this.state = 'waiting';
    this.controller = null;
    this.onClose = onClose;
    this.markdown = new MarkdownView();
    this.root = el('section', 'a2a-panel');
    this.root.setAttribute('aria-live', 'polite');
    this.root.dataset.state = 'waiting';
    const header = el('header', 'a2a-panel-header');
    this.nameEl = el('strong', 'a2a-panel-name', this.agentSlug || 'agent');
    this.statusEl = el('span', 'a2a-panel-status', t('a2a.panel.waiting'));
    const close = el('button', 'a2a-panel-close', '×');
    close.type = 'button';
    close.title = t('a2a.panel.close');
    close.setAttribute('aria-label', t('a2a.panel.close'));
    close.addEventListener('click', () => this.close());
    header.append(botIcon(), this.nameEl, this.statusEl, close);
    // Until the called agent's first words: a spinner and "Waiting for reply…" (seed 003, 3.3.1).
    this.waitingEl = el('p', 'a2a-panel-waiting');
    this.waitingEl.append(el('span', SPINNER_CLASS), el('span', '', t('a2a.panel.waitingForReply')));
    this.waitingEl.setAttribute('role', 'status');
    this.body = el('div', 'a2a-panel-body md');
    this.body.append(this.markdown.el);
    this.errorEl = el('div', 'a2a-panel-error');
    this.errorEl.hidden = true;
    this.approvalsEl = el('div', 'a2a-panel-approvals');
    this.root.append(header, this.waitingEl, this.body, this.approvalsEl, this.errorEl);
    host.append(this.root);
  }

  setState(state, label) {
    this.state = state;
    this.root.dataset.state = state;
    this.statusEl.textContent = label;
    this.waitingEl.hidden = !(state === 'waiting' || (state === 'generating' && !this.text));
  }

  start(taskId, name, sessionId) {
    if (this.taskId) return;
    this.taskId = taskId;
    this.sessionId = sessionId || '';
    this.root.dataset.taskId = taskId;
    if (name) this.nameEl.textContent = name;
    this.setState('generating', t('a2a.panel.generating'));
    this.subscribe();
  }

  /** Follow the callee's reply. The server replays it from the start (X-Stream-Resume), so after a lost
   * connection subscribing again shows the whole reply, not just the rest. */
  async subscribe() {
    this.controller = new AbortController();
    this.text = '';
    let response;
    try {
      response = await fetch(`/api/agents/a2a/stream?taskId=${encodeURIComponent(this.taskId)}`, {
        credentials: 'same-origin', headers: { Accept: 'text/event-stream' }, signal: this.controller.signal,
      });
    } catch (err) {
      if (err.name !== 'AbortError') this.lost();
      return;
    }
    if (!response.ok) { this.fail(t('a2a.panel.unavailable', { status: response.status })); return; }
    if ((response.headers.get('content-type') || '').includes('application/json')) {
      // no buffer any more: the reply ended before we subscribed (the chat has it), or it waits for the
      // user: a remote agent's question comes with this answer, a called agent's approvals from its session
      const body = await response.json().catch(() => ({}));
      if (body.reason === 'input-required') {
        this.askInput(body.question || '');
        this.end();
      } else if (!(await this.askSaved())) this.finish();
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let ended = false;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        let payloads;
        [payloads, buffer] = splitFrames(buffer + decoder.decode(value, { stream: true }));
        for (const p of payloads) ended = this.handle(p) || ended;
      }
    } catch (err) {
      if (err.name !== 'AbortError' && this.state === 'generating') this.lost();
      return;
    }
    // The server always ends a reply with [DONE]; a stream that stops without it was cut.
    if (!ended && this.state === 'generating') this.lost();
  }

  /** Apply one payload; answers whether it ended the reply. */
  handle(payload) {
    if (payload === '[DONE]') { if (this.state === 'generating') this.end(); return true; }
    let chunk;
    try { chunk = JSON.parse(payload); } catch { return false; }
    if (chunk.type === 'tool-input-available') {
      this.calls.set(chunk.toolCallId, { toolName: chunk.toolName, input: chunk.input });
    } else if (chunk.type === 'tool-approval-request' && this.sessionId) {
      this.ask(chunk.toolCallId);
    } else if (chunk.type === 'data-a2a-input-required') {
      this.askInput((chunk.data && chunk.data.question) || '');
    } else if (chunk.type === 'text-delta') {
      this.text += chunk.delta || chunk.textDelta || '';
      this.waitingEl.hidden = true;
      this.markdown.set(this.text, false);
    } else if (chunk.type === 'error') {
      this.fail(chunk.errorText || t('a2a.panel.failed'));
    } else if (chunk.type === 'finish' && this.state === 'generating') {
      this.end();
    }
    return false;
  }

  /** The reply's stream ended: done, or paused until the user answers its approval cards. */
  end() {
    if (this.asking.size) this.setState('approval', t('a2a.panel.approval'));
    else this.finish();
  }

  finish() {
    this.setState('done', t('a2a.panel.done'));
    this.errorEl.hidden = true;
    if (this.text) this.markdown.set(this.text, true);
    if (this.answered) {
      this.answered = false;
      window.dispatchEvent(new CustomEvent('a2a-callee-answered', { detail: { taskId: this.taskId } }));
    }
  }

  /** A remote agent's task asks for input: its question, and a box whose answer goes to the task as
   * its next message (POST /api/agents/a2a/tasks/{taskId}/input). */
  askInput(question) {
    const key = 'input';
    if (this.asking.has(key)) return;
    this.asking.add(key);
    const card = el('form', 'a2a-approval a2a-input');
    card.append(el('p', 'a2a-approval-title', question || t('a2a.panel.inputAsk')));
    const answer = el('textarea', 'a2a-input-text');
    answer.rows = 2;
    answer.setAttribute('aria-label', t('a2a.panel.inputLabel'));
    const send = el('button', 'small', t('a2a.panel.inputSend'));
    send.type = 'submit';
    card.append(answer, send);
    card.addEventListener('submit', async (event) => {
      event.preventDefault();
      const message = answer.value.trim();
      if (!message) return;
      send.disabled = true;
      const response = await fetch(`/api/agents/a2a/tasks/${encodeURIComponent(this.taskId)}/input`, {
        method: 'POST', credentials: 'same-origin', headers: requestHeaders('POST', true),
        body: JSON.stringify({ message }),
      }).catch(() => null);
      if (!response || !response.ok) {
        send.disabled = false;
        const error = response ? await errorFrom(response) : null;
        this.errorEl.replaceChildren(el('p', '', error ? error.message : t('a2a.panel.failed')));
        this.errorEl.hidden = false;
        return;
      }
      this.asking.delete(key);
      card.remove();
      this.errorEl.hidden = true;
      this.answered = true;
      if (this.controller) this.controller.abort();
      this.setState('generating', t('a2a.panel.generating'));
      this.subscribe();
    });
    this.approvalsEl.append(card);
  }

  /** The approvals the called agent's session waits for, as cards; whether there were any. */
  async askSaved() {
    if (!this.sessionId) return false;
    let detail;
    try {
      const r = await fetch(`/api/agent-sessions/${encodeURIComponent(this.sessionId)}`, {
        credentials: 'same-origin', headers: { Accept: 'application/json' },
      });
      if (!r.ok) return false;
      detail = await r.json();
    } catch { return false; }
    const pending = detail.pendingApprovals || [];
    for (const a of pending) {
      this.calls.set(a.toolCallId, { toolName: a.toolName, input: a.input });
      this.ask(a.toolCallId);
    }
    if (pending.length) this.setState('approval', t('a2a.panel.approval'));
    return pending.length > 0;
  }

  /** The called agent's tool call waits for the calling user: its card, with the call's arguments. */
  ask(toolCallId) {
    if (this.asking.has(toolCallId)) return;
    this.asking.add(toolCallId);
    const call = this.calls.get(toolCallId) || { toolName: '', input: null };
    const card = el('div', 'a2a-approval');
    card.dataset.toolCallId = toolCallId;
    card.append(el('p', 'a2a-approval-title', t('a2a.panel.approvalAsk', { tool: call.toolName || '?' })));
    if (call.input !== null && call.input !== undefined) card.append(el('pre', 'a2a-approval-input', JSON.stringify(call.input, null, 2)));
    const reason = el('input', 'a2a-approval-reason');
    reason.type = 'text';
    reason.placeholder = t('a2a.panel.reason');
    reason.setAttribute('aria-label', t('a2a.panel.reason'));
    const approve = el('button', 'small', t('a2a.panel.approve'));
    const reject = el('button', 'small secondary', t('a2a.panel.reject'));
    const buttons = [approve, reject];
    for (const b of buttons) b.type = 'button';
    approve.addEventListener('click', () => this.answer(card, true, '', buttons));
    reject.addEventListener('click', () => this.answer(card, false, reason.value.trim(), buttons));
    const row = el('div', 'a2a-approval-actions');
    row.append(approve, reason, reject);
    card.append(row);
    this.approvalsEl.append(card);
  }

  /** Answer through the called agent's session; then follow its resumed reply (the panel's stream
   * replays the resumed run from its start). */
  async answer(card, approved, reason, buttons) {
    buttons.forEach((b) => { b.disabled = true; });
    const body = { toolCallId: card.dataset.toolCallId, approved };
    if (reason) body.reason = reason;
    let response;
    try {
      response = await fetch(`/api/agent-sessions/${encodeURIComponent(this.sessionId)}/approvals`, {
        method: 'POST', credentials: 'same-origin', headers: requestHeaders('POST', true),
        body: JSON.stringify(body),
      });
    } catch {
      buttons.forEach((b) => { b.disabled = false; });
      return;
    }
    if (!response.ok) {
      const error = await errorFrom(response);
      buttons.forEach((b) => { b.disabled = false; });
      this.errorEl.replaceChildren(el('p', '', error.message));
      this.errorEl.hidden = false;
      return;
    }
    if (response.body) response.body.cancel().catch(() => {}); // the panel's own stream follows the run
    this.asking.delete(card.dataset.toolCallId);
    card.remove();
    this.errorEl.hidden = true;
    if (response.status === 202) return; // other calls of the called agent's step still wait
    this.answered = true;
    if (this.controller) this.controller.abort();
    this.setState('generating', t('a2a.panel.generating'));
    this.subscribe();
  }

  fail(message) {
    this.setState('error', t('a2a.panel.error'));
    this.errorEl.replaceChildren(el('p', '', message));
    this.errorEl.hidden = false;
  }

  /** The connection dropped mid-reply: say so and offer to follow again. */
  lost() {
    this.setState('lost', t('a2a.panel.lost'));
    const again = el('button', 'small', t('a2a.panel.reconnect'));
    again.type = 'button';
    again.addEventListener('click', () => {
      this.errorEl.hidden = true;
      this.setState('generating', t('a2a.panel.generating'));
      this.subscribe();
    });
    this.errorEl.replaceChildren(el('p', '', t('a2a.panel.lostHint')), again);
    this.errorEl.hidden = false;
  }

  close() {
    if (this.controller) this.controller.abort();
    this.root.remove();
    this.onClose(this);
  }
}

/** Create the panel stack inside `host` (the chat page's side panel), or a floating stack on the page
 * when there is none, and return the chunk handler. `host.hidden` follows whether any panel is open. */
export function attachA2APanels(host) {
  ensureStyles();
  const stack = el('div', 'a2a-panels');
  if (host) host.append(stack);
  else { stack.classList.add('floating'); document.body.append(stack); }
  const panels = [];
  const showHost = () => { if (host) host.hidden = panels.length === 0; };
  const remove = (panel) => { panels.splice(panels.indexOf(panel), 1); showHost(); };
  const open = (toolCallId, agentSlug) => {
    const panel = new InvokePanel(stack, { toolCallId, agentSlug, onClose: remove });
    panels.push(panel);
    showHost();
    panel.root.scrollIntoView({ block: 'nearest' });
    return panel;
  };

  function handleChunk(chunk) {
    if (!chunk || typeof chunk !== 'object') return;
    if ((chunk.type === 'tool-input-available') && isInvokeInput(chunk)) {
      if (!panels.some((p) => p.toolCallId === chunk.toolCallId)) open(chunk.toolCallId, chunk.input?.agentSlug);
    } else if (chunk.type === 'data-a2a-task-started') {
      const data = chunk.data || chunk;
      if (panels.some((p) => p.taskId === data.taskId)) return;
      const panel = panels.find((p) => !p.taskId && p.agentSlug === data.calleeAgentSlug)
        || panels.find((p) => !p.taskId)
        || open(null, data.calleeAgentSlug);
      panel.start(data.taskId, data.calleeAgentName, data.calleeSessionId);
    } else if (chunk.type === 'tool-approval-request') {
      const panel = panels.find((p) => p.toolCallId === chunk.toolCallId && !p.taskId);
      if (panel) panel.close(); // it waits for the user's approval; the panel opens when the task starts
    } else if (chunk.type === 'tool-output-available' || chunk.type === 'tool-output-error') {
      // A call that ended before its task started (no such agent, not callable, past the depth limit)
      // never had a panel's worth of reply: its panel goes, and its failure shows on its tool card
      // (seed 003: "面板不打开").
      const panel = panels.find((p) => p.toolCallId === chunk.toolCallId);
      if (panel && panel.state === 'waiting' && !panel.taskId) panel.close();
    }
  }

  return {
    handleChunk,
    get panels() { return [...panels]; },
    closeAll() { [...panels].forEach((p) => p.close()); },
  };
}
