// The chat page: agent picker, session sidebar, streaming replies, tool approvals, stop, and resuming a
// reply that is still running when the page (re)loads.
import { api, ApiError, errorFrom, requestHeaders } from '../api.js';
import { autoGrow, enterBreaksLines, h, onEnterKey, showError } from '../dom.js';
import { t } from '../i18n.js';
import { notifyChunk } from './hooks.js';
import { attachmentTray, knowledgePicker } from './attach.js';
import { refreshBudgetNote } from './budget-note.js';
import { applyChunk, fromApi, MessageView, newMessage } from './message.js';
import { sessionDrawer } from './drawer.js';
import { followBottom } from './follow.js';
import { sessionSidebar } from './sessions.js';
import { readUIStream } from './stream.js';

const root = document.getElementById('chat');
const list = document.getElementById('messages');
const scroller = document.getElementById('chat-scroll');
const emptyHint = document.getElementById('chat-empty');
const errorBox = document.querySelector('.chat-error');
const form = document.getElementById('composer');
const input = document.getElementById('message-input');
const sendButton = document.getElementById('send');
const stopButton = document.getElementById('stop');
const agentSelect = document.getElementById('agent-select');
const sessionList = document.getElementById('session-list');
const sidePanel = document.getElementById('chat-side-panel');

// Everything the page keeps between events, in one place.
const state = {
  sessionId: root.dataset.sessionId || null,
  kind: agentSelect.value ? 'agent' : 'llm',
  agentSlug: agentSelect.value || null,
  views: new Map(), // message id -> MessageView
  lastView: null, // the view that offers Regenerate / Retry (see refreshLastActions)
  started: false, // the form is handled by this script (until then Send stays disabled)
  streaming: false,
  link: null, // the AbortController of the stream being followed
  stopWanted: false, // Stop pressed before the server named the new session
  closed: false, // the chat's agent was deleted: nothing can answer in it
  offlineCut: false, // the network went away mid-stream: pick the reply up when it is back
  approversTimer: null, // the next poll for a tool's approvers' answer
};

const files = attachmentTray({
  tray: document.getElementById('attach-tray'),
  button: document.getElementById('attach-button'),
  picker: document.getElementById('attach-input'),
  dropZone: root,
  pasteTarget: input,
  maxBytes: Number(form.dataset.maxBytes),
  maxFiles: Number(form.dataset.maxFiles),
  onChange: () => updateSend(),
});
const collections = knowledgePicker({
  tray: document.getElementById('kb-tray'),
  button: document.getElementById('kb-button'),
  menu: document.getElementById('kb-menu'),
  max: Number(form.dataset.maxCollections),
});

/** Send waits for the files: none may be uploading, being read, or unable to be sent. */
function updateSend() {
  const waiting = files.blocking();
  sendButton.disabled = state.closed || waiting || !state.started;
  sendButton.title = waiting ? t('chat.attach.wait') : '';
}

const currentUser = JSON.parse(document.getElementById('current-user')?.textContent || '{}');
const agentIntros = JSON.parse(document.getElementById('chat-agents')?.textContent || '{}');
const intro = document.getElementById('agent-intro');

// --- rendering -------------------------------------------------------------------------------------

sessionDrawer({
  drawer: document.getElementById('chat-sidebar'),
  toggle: document.getElementById('drawer-toggle'),
  backdrop: document.getElementById('drawer-backdrop'),
});
const follower = followBottom(scroller, list, document.getElementById('to-bottom'));
const fitInput = autoGrow(input);
if (enterBreaksLines()) input.placeholder = t('chat.placeholderTouch'); // the hint names keys it has not

const actions = {
  answer: (part, approved, reason, buttons) => answerApproval(part, approved, reason, buttons),
  regenerate: () => regenerate(),
  reconnect: () => reconnect(),
  resend: (view, text) => resend(view, text),
  isLast: (view) => list.lastElementChild === view.el,
  isAdmin: currentUser.role === 'admin',
};

/** A new chat with an agent shows what the agent is for and, where the admin wrote some, prompts to
 * start from: pressing one sends it, as in the chat apps people know. */
function showIntro() {
  if (!intro) return;
  const about = agentIntros[agentSelect.value];
  const prompts = (about && about.starterPrompts) || [];
  intro.hidden = !about || state.sessionId !== null || (!about.description && !prompts.length);
  if (intro.hidden) return;
  intro.querySelector('.agent-description').textContent = about.description;
  intro.querySelector('.starter-prompts').replaceChildren(...prompts.map((prompt) => h('button', {
    type: 'button', class: 'starter-prompt', text: prompt,
    onclick: () => { if (!state.streaming) send(prompt); },
  })));
}

function addMessage(message) {
  const view = new MessageView(message, { actions, dataContext: { panel: sidePanel, sessionId: state.sessionId } });
  state.views.set(message.id, view);
  list.append(view.el);
  emptyHint.hidden = true;
  refreshLastActions();
  return view;
}

/** Views in the order they are shown. */
function views() {
  return [...list.children].map((el) => state.views.get(el.dataset.messageId)).filter(Boolean);
}

/** Only the last reply offers Regenerate / Retry: repaint the one that stopped being last. While a
 * tool call waits for approval, Edit and Regenerate are hidden too: the server refuses both until it
 * is answered. */
function refreshLastActions() {
  const last = views().at(-1) || null;
  const before = state.lastView;
  if (before && before !== last && before.el.isConnected) before.update();
  if (last && last !== before) last.update();
  state.lastView = last;
  root.dataset.approvalPending = views().some((v) => v.message.status === 'awaiting_approval') ? 'true' : 'false';
}

/** Remove every message shown after `view` (the server cut them when it accepted an edit or a retry). */
function dropAfter(view) {
  for (const later of views().slice(views().indexOf(view) + 1)) {
    state.views.delete(later.message.id);
    later.el.remove();
  }
  refreshLastActions();
}

/** The chat as the server has it now. */
const fetchSession = (id) => api('GET', `/api/agent-sessions/${id}`);

/** After a turn: take the saved ids, times, model and usage (the stream does not carry them). An answer
 * that comes back once the next turn started is older than what the page shows (it may lack the new
 * message): that turn's own sync follows. */
async function syncFromServer() {
  if (!state.sessionId) return;
  let detail;
  try { detail = await fetchSession(state.sessionId); } catch { return; }
  if (state.streaming) return;
  nameSession(detail);
  const shown = views();
  if (shown.length !== detail.messages.length) { renderMessages(detail.messages); watchApprovers(detail); return; }
  detail.messages.forEach((m, i) => {
    const view = shown[i];
    if (view.message.id !== m.id) {
      state.views.delete(view.message.id);
      view.message.id = m.id;
      state.views.set(m.id, view);
    }
    view.message.meta = fromApi(m).meta;
    if (view.message.status !== m.status && m.status !== 'streaming') view.message.status = m.status;
    if (!view.editing) view.update();
  });
  refreshLastActions();
  watchApprovers(detail);
}

function renderMessages(messages) {
  list.replaceChildren();
  state.views.clear();
  state.lastView = null;
  for (const m of messages) addMessage(fromApi(m));
}

/** When the control that had the focus (`from`) went away (Send or Stop hid, an answered approval card
 * was rebuilt), put the focus where the reader goes next: the next tool call waiting for an answer, or
 * the message box. Focus anywhere else stays put (on a phone, focusing the box would raise the keyboard
 * over the reply). */
function keepFocus(from) {
  if (!from || from === document.body) return;
  const active = document.activeElement;
  const shown = (el) => el.isConnected && !el.disabled && el.getClientRects().length > 0; // not display:none
  if (active && active !== document.body && shown(active)) return;
  const waiting = list.querySelector('.tool-card.state-approval-requested .approval button.primary');
  (waiting || input).focus();
}

function setStreaming(on) {
  const from = document.activeElement;
  state.streaming = on;
  if (!on) state.stopWanted = false;
  sendButton.hidden = on;
  stopButton.hidden = !on;
  stopButton.disabled = false;
  input.disabled = state.closed;
  root.dataset.streaming = on ? 'true' : 'false';
  keepFocus(from);
}

function setHeader(title, agentName) {
  document.getElementById('chat-title').textContent = title || t('chat.newChat');
  document.getElementById('chat-agent').textContent = agentName || '';
}

// --- streams ---------------------------------------------------------------------------------------

/** Follow a UI-message stream; chunks go to the message named by its `start` chunk (new or existing). */
async function follow(response) {
  setStreaming(true);
  let view = null;
  let frame = 0;
  const repaint = () => {
    frame = 0;
    if (!view) return;
    view.update();
  };
  const link = new AbortController();
  state.link = link;
  let ended = false; // a finish, abort or error chunk came: the reply's end, even if [DONE] did not
  try {
    const whole = await readUIStream(response, (chunk) => {
      ended = ended || ['finish', 'abort', 'error'].includes(chunk.type);
      if (chunk.type === 'start' || !view) {
        const id = chunk.messageId || `local-${Date.now()}`;
        view = state.views.get(id) || addMessage(newMessage(id, 'assistant', [], 'streaming'));
      }
      applyChunk(view.message, chunk);
      notifyChunk(chunk, { panel: sidePanel, sessionId: state.sessionId, live: true, messageId: view.message.id });
      if (!frame) frame = requestAnimationFrame(repaint);
    }, link.signal);
    if (!whole && !ended) throw new Error('the stream was cut'); // a network gone quiet can end a body early
    if (view && view.message.status === 'streaming') view.message.status = 'complete';
  } catch (error) {
    // The stream broke (network, server gone); the run may go on: Reconnect (or the network coming
    // back) picks it up.
    if (view) { view.message.failure = { code: 'connection_lost' }; view.message.status = 'failed'; }
  } finally {
    if (state.link === link) state.link = null;
    if (frame) cancelAnimationFrame(frame);
    repaint();
    setStreaming(false);
    refreshSessions();
    refreshBudgetNote();
  }
  if (!link.signal.aborted) await syncFromServer(); // cut off: what the server saved comes on reconnecting
}

// The server stores a run's end (pending approvals, the idle session) before it sends the last chunk,
// so an answer or a message sent right after it is accepted; a refusal is real and is shown as is.
async function post(url, body) {
  try {
    return await fetch(url, {
      method: 'POST', credentials: 'same-origin',
      headers: requestHeaders('POST', true, { Accept: 'text/event-stream' }), body: JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, 'network', error.message); // worded by its code, not the browser's "Failed to fetch"
  }
}

/** Ask for a turn (a message, a retry, an answer): the streaming response once the server accepted, or
 * null when it did not, after `undo()` put back what the page changed for it and the reason is shown
 * (`onRefused`: by default `refused`, which also catches up with a chat the page was behind). */
async function postTurn(url, body, undo, onRefused = refused) {
  let response;
  try {
    response = await post(url, body);
  } catch (error) {
    undo();
    showError(errorBox, error);
    return null;
  }
  if (response.ok) return response;
  undo();
  await onRefused(response);
  return null;
}

async function send(text) {
  showError(errorBox, null);
  const url = state.kind === 'llm' ? '/api/llm/chat' : `/api/agents/${encodeURIComponent(state.agentSlug)}/chat`;
  const attached = files.ready();
  const body = { message: text, attachments: attached.map((f) => f.id) };
  if (state.sessionId) body.sessionId = state.sessionId;
  const knowledgeIds = collections.pending();
  if (knowledgeIds) body.knowledgeIds = knowledgeIds;
  setStreaming(true);
  const response = await postTurn(url, body, () => setStreaming(false));
  if (!response) return;
  input.value = '';
  fitInput();
  files.clear();
  collections.sent();
  const sent = newMessage(`local-user-${Date.now()}`, 'user', [{ type: 'text', text }]);
  sent.attachments = attached;
  addMessage(sent);
  follower.jump();
  const sessionId = response.headers.get('X-Session-Id');
  if (sessionId && sessionId !== state.sessionId) {
    state.sessionId = sessionId;
    history.pushState({}, '', `/chat/${sessionId}`);
    agentSelect.disabled = true;
    setHeader(t('chat.newChat'), agentSelect.selectedOptions[0]?.textContent); // the title comes with the list
    refreshSessions(); // stored with its first message: listed now, not once the reply has ended
  }
  if (state.stopWanted) stop();
  await follow(response);
}

// Refusals that mean this page is behind the chat: another tab or device started a reply in it, or a
// tool call there waits for an answer. The page shows the chat as it is now (following the reply, with
// Stop) so the words of the refusal match what the reader sees; what they typed stays in the box.
const STALE = new Set(['session_busy', 'approval_pending']);

/** Say why the server refused a turn; catch up with the chat when the page was behind it. */
async function refused(response) {
  const error = await errorFrom(response);
  showError(errorBox, error);
  if (!STALE.has(error.code) || !state.sessionId) return;
  if (error.code === 'approval_pending' && root.dataset.approvalPending === 'true') return; // shown here
  loadSession(state.sessionId).catch((e) => showError(errorBox, e)); // follows the reply: not awaited
}

/** Start a turn again (regenerate / retry / edit): the page changes only once the server accepted. */
async function restart(url, body, before) {
  const from = document.activeElement; // Regenerate, or the editor: both go away once accepted
  showError(errorBox, null);
  if (state.streaming) return false;
  setStreaming(true);
  const response = await postTurn(url, body, () => setStreaming(false));
  if (!response) return false;
  before();
  keepFocus(from);
  follow(response);
  return true;
}

function regenerate() {
  const lastUser = views().filter((v) => v.message.role === 'user').at(-1);
  if (!lastUser) return Promise.resolve(false);
  return restart(`/api/agent-sessions/${state.sessionId}/regenerate`, {}, () => dropAfter(lastUser));
}

function resend(view, text) {
  const url = `/api/agent-sessions/${state.sessionId}/messages/${encodeURIComponent(view.message.id)}/resend`;
  return restart(url, { message: text }, () => {
    view.message.parts = [{ type: 'text', text }];
    view.editing = null;
    view.update();
    dropAfter(view);
  });
}

async function answerApproval(part, approved, reason, buttons) {
  const from = document.activeElement;
  showError(errorBox, null);
  buttons.forEach((b) => { b.disabled = true; });
  const body = { toolCallId: part.toolCallId, approved };
  if (reason) body.reason = reason;
  const enable = () => buttons.forEach((b) => { b.disabled = false; });
  const said = async (refusal) => showError(errorBox, await errorFrom(refusal)); // the card shows the chat as it is
  const response = await postTurn(`/api/agent-sessions/${state.sessionId}/approvals`, body, enable, said);
  if (!response) return;
  part.state = 'approval-responded';
  part.approval = { ...(part.approval || {}), approved, ...(reason ? { reason } : {}) };
  for (const view of state.views.values()) if (view.message.parts.includes(part)) view.update();
  keepFocus(from);
  if (response.status === 202) return; // other calls of this step still wait for an answer
  await follow(response);
}

async function stop() {
  stopButton.disabled = true;
  // Pressed before the server named the new session: stop as soon as it has (see send()).
  if (!state.sessionId) { state.stopWanted = true; return; }
  state.stopWanted = false;
  try { await api('POST', `/api/agent-sessions/${state.sessionId}/stop`); } catch (error) { showError(errorBox, error); }
  input.focus(); // the Stop button goes away: the keyboard goes on where the next message is written
}

/** Show the open chat as the server has it now and follow its reply if one is still being written: what
 * a reload does, without one. */
async function reconnect() {
  if (!state.sessionId || state.streaming) return;
  showError(errorBox, null);
  try { await loadSession(state.sessionId); } catch (error) { showError(errorBox, error); }
}

/** Back on this tab: show what happened in the chat meanwhile (another tab or device wrote in it, a
 * reply ended or started there) and refresh the list. Nothing is redrawn when nothing changed. */
async function catchUp() {
  refreshSessions();
  if (!state.sessionId || state.streaming) return;
  let detail;
  try { detail = await fetchSession(state.sessionId); } catch { return; }
  const shown = views().map((v) => `${v.message.id}:${v.message.status}`).join();
  const saved = detail.messages.map((m) => `${m.id}:${m.status}`).join();
  if (state.streaming || (!detail.active && shown === saved)) return;
  try { await loadSession(state.sessionId); } catch (error) { showError(errorBox, error); }
}
document.addEventListener('visibilitychange', () => { if (!document.hidden) catchUp(); });
// Two windows side by side are both visible: going back to one of them is a focus, not a visibility change.
window.addEventListener('focus', () => catchUp());

// The browser knows when the network went away: stop waiting on a stream that cannot deliver (the reply
// goes on on the server), say so, and pick the reply up again as soon as the network is back.
window.addEventListener('offline', () => {
  showError(errorBox, new Error(t('chat.offline')));
  if (!state.link) return;
  state.offlineCut = true;
  state.link.abort(new Error('offline'));
});
window.addEventListener('online', () => {
  showError(errorBox, null);
  if (!state.offlineCut) return;
  state.offlineCut = false;
  reconnect();
});

// --- sessions --------------------------------------------------------------------------------------

const sidebar = sessionSidebar({
  listEl: sessionList,
  emptyEl: document.querySelector('.sessions-empty'),
  searchInput: document.getElementById('session-search'),
  apiOnlyInput: document.getElementById('session-api-only'),
  currentId: () => state.sessionId,
  onTitle: (s) => { document.getElementById('chat-title').textContent = s.title; },
  onError: (error) => showError(errorBox, error),
  onRemovedCurrent: () => window.location.assign('/chat'),
});
const refreshSessions = () => sidebar.refresh();

/** After the first complete reply, ask the server to name the chat (one short call to its model). */
async function nameSession(detail) {
  if (!detail || detail.titleSource !== 'auto') return;
  if (!detail.messages.some((m) => m.role === 'assistant' && m.status === 'complete')) return;
  try {
    const row = await api('POST', `/api/agent-sessions/${detail.id}/title`);
    if (row.title !== detail.title) refreshSessions();
  } catch { /* the first words stay */ }
}

async function loadSession(id) {
  const detail = await fetchSession(id);
  state.kind = detail.kind;
  state.agentSlug = detail.agentSlug;
  if (detail.agentSlug) agentSelect.value = detail.agentSlug;
  else agentSelect.value = '';
  agentSelect.disabled = true;
  const agentGone = detail.kind === 'agent' && !detail.agentSlug;
  setHeader(detail.title, agentGone ? t('chat.agentGone') : detail.agentName || t('chat.plainModel'));
  if (agentGone) closeChat();
  renderMessages(detail.active ? detail.messages.map(beforeRun) : detail.messages);
  collections.show(detail.knowledge || []);
  follower.jump();
  watchApprovers(detail);
  if (detail.active) await resume(id);
}

// --- calls that a tool's approvers answer ---------------------------------------------------------------

// How often the page asks whether the approvers answered: often enough that the reply goes on soon after
// they do, rarely enough that a chat left open for hours costs the server little.
const APPROVERS_POLL_MS = 3000;

/** Calls of this chat waiting for a tool's approvers (`pendingApprovals[].approverGroups`): their cards
 * say who is to answer instead of offering Approve / Reject, and while any waits the page asks for the
 * chat every few seconds; once one is answered it shows the chat as the server has it (the reply goes on,
 * with who answered on the call). Nothing is asked while the tab is hidden (coming back catches up) nor
 * once the page is left. */
function watchApprovers(detail) {
  clearTimeout(state.approversTimer);
  state.approversTimer = null;
  // Every pending call, [] for one its requester answers: the server's word wins over the page's guess.
  const byCall = new Map((detail.pendingApprovals || []).map((a) => [a.toolCallId, (a.approverGroups || []).map((g) => g.name)]));
  for (const view of views()) {
    let changed = false;
    for (const part of view.message.parts) {
      const names = byCall.get(part.toolCallId);
      if (names && JSON.stringify(part.approverGroups) !== JSON.stringify(names)) { part.approverGroups = names; changed = true; }
    }
    if (changed && !view.editing) view.update();
  }
  const theirs = [...byCall].filter(([, names]) => names.length).map(([call]) => call);
  if (theirs.length && !detail.active) state.approversTimer = setTimeout(() => pollApprovers(detail.id, theirs), APPROVERS_POLL_MS);
}

// An answer is stored a moment before its run starts: until then the chat has no call pending and no run.
// The page asks again this soon, this many times, before it shows the chat as it is.
const RESUME_POLL_MS = 250;
const RESUME_TRIES = 20;

async function pollApprovers(id, calls, tries = 0) {
  state.approversTimer = null;
  if (id !== state.sessionId || state.streaming) return;
  const again = (ms, n = tries) => { state.approversTimer = setTimeout(() => pollApprovers(id, calls, n), ms); };
  if (document.hidden) { again(APPROVERS_POLL_MS); return; }
  let detail;
  try { detail = await fetchSession(id); } catch { again(APPROVERS_POLL_MS); return; } // a blip
  if (id !== state.sessionId || state.streaming) return;
  const waiting = new Set((detail.pendingApprovals || []).map((a) => a.toolCallId));
  if (!detail.active && calls.every((c) => waiting.has(c))) { watchApprovers(detail); return; }
  const starting = !detail.active && !waiting.size && detail.messages.some((m) => m.status === 'awaiting_approval');
  if (starting && tries < RESUME_TRIES) { again(RESUME_POLL_MS, tries + 1); return; }
  try { await loadSession(id); } catch (error) { showError(errorBox, error); }
  refreshSessions(); // the list's "needs approval" badge goes too (a reply that already ended has no stream)
}
window.addEventListener('pagehide', () => { clearTimeout(state.approversTimer); state.approversTimer = null; });

// The user answered a called agent's approval in the side panel and its reply is done: the calling agent's
// reply goes on in the background a moment later. Ask for the chat until it runs (or ended), then follow it.
async function followCaller(id, tries = 0) {
  if (id !== state.sessionId || state.streaming) return;
  let detail;
  try { detail = await fetchSession(id); } catch { detail = null; }
  const waiting = detail && !detail.active && detail.messages.some((m) => m.status === 'awaiting_approval');
  if ((!detail || waiting) && tries < RESUME_TRIES * 2) {
    setTimeout(() => followCaller(id, tries + 1), RESUME_POLL_MS);
    return;
  }
  try { await loadSession(id); } catch (error) { showError(errorBox, error); }
}
window.addEventListener('a2a-callee-answered', () => { if (state.sessionId) followCaller(state.sessionId); });

/** The chat's agent was deleted: the conversation can still be read, copied, searched and deleted, but
 * nothing can answer in it any more (the server refuses new messages, Edit and Regenerate), so the
 * message box says so instead of offering them. */
function closeChat() {
  state.closed = true;
  input.disabled = true;
  input.placeholder = t('chat.agentGoneHint');
  sendButton.disabled = true;
  actions.regenerate = null;
  actions.resend = null;
}

/** A reply still being written, as it was when its run began: the replay (`resume`) brings back the rest
 * from the run's first chunk, and the run's own checkpoints of it would otherwise show twice. A run
 * starts with the reply or after the user answered its tool calls, so what came before it ends with the
 * last call that has an answer. */
function beforeRun(m) {
  if (m.role !== 'assistant' || m.status !== 'streaming') return m;
  let end = 0;
  m.parts.forEach((p, i) => { if (typeof p.approval?.approved === 'boolean') end = i + 1; });
  return { ...m, parts: m.parts.slice(0, end) };
}

/** Pick up a reply that is still streaming: replay its run from the start, then follow live. */
async function resume(id) {
  let response;
  try {
    response = await fetch(`/api/agent-sessions/${id}/stream`, {
      credentials: 'same-origin', headers: { Accept: 'text/event-stream' },
    });
  } catch (error) {
    throw new ApiError(0, 'network', error.message);
  }
  if (!response.ok) { showError(errorBox, await errorFrom(response)); return; }
  if ((response.headers.get('content-type') || '').includes('application/json')) {
    const body = await response.json();
    if (body.active === false) return loadSession(id); // finished meanwhile: show what was saved
    return undefined;
  }
  // The message shows what was there before this run (`beforeRun`); the replay adds the run's chunks on
  // top, in order.
  await follow(response);
}

// --- wiring ----------------------------------------------------------------------------------------

form.addEventListener('submit', (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text || state.streaming || files.blocking()) return;
  if (state.kind === 'agent' && !state.agentSlug) { showError(errorBox, new Error(t('chat.pickAgent'))); return; }
  send(text);
});

onEnterKey(input, () => form.requestSubmit());

stopButton.addEventListener('click', stop);

agentSelect.addEventListener('change', () => {
  state.agentSlug = agentSelect.value || null;
  state.kind = agentSelect.value ? 'agent' : 'llm';
  showIntro();
});

document.getElementById('new-chat').addEventListener('click', () => {
  const slug = agentSelect.value;
  window.location.assign(slug ? `/chat?agent=${encodeURIComponent(slug)}` : '/chat?agent=');
});

window.addEventListener('popstate', () => window.location.reload());

async function start() {
  state.started = true; // the form is handled from here on
  updateSend();
  refreshSessions();
  showIntro();
  if (state.sessionId) {
    try { await loadSession(state.sessionId); } catch (error) { showError(errorBox, error); }
  }
  input.focus();
}
start();
refreshBudgetNote();
