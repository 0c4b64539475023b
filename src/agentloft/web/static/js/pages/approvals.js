// The Approvals inbox: Approve / Reject (with an optional reason) through the chat's own approvals
// endpoint, then the inbox as the server has it now (this page fetched anew, the top bar's count too):
// a call answered meanwhile by another approver goes away with the one just answered.
import { api } from '../api.js';
import { showError } from '../dom.js';
import { formatDate, t } from '../i18n.js';

const section = () => document.getElementById('approvals');

function localTimes(root) {
  for (const el of root.querySelectorAll('time[data-local-time]')) el.textContent = formatDate(el.dateTime);
}

/** Swap in the inbox and the top bar's entries from a fresh copy of this page, keeping what was said. */
async function refresh(said) {
  const response = await fetch(window.location.href, { credentials: 'same-origin', headers: { Accept: 'text/html' } });
  if (!response.ok) { window.location.reload(); return; }
  const fresh = new DOMParser().parseFromString(await response.text(), 'text/html');
  const now = fresh.getElementById('approvals');
  if (now) section().replaceWith(document.adoptNode(now));
  // The top bar's counts: the entries' own and, on a phone, the one on the user menu's button.
  for (const selector of ['[data-testid="nav-approvals"]', 'summary[data-testid="user-menu"]']) {
    const now = [...fresh.querySelectorAll(selector)];
    document.querySelectorAll(selector).forEach((el, i) => {
      if (now[i]) el.replaceChildren(...[...now[i].childNodes].map((n) => document.adoptNode(n)));
    });
  }
  localTimes(section());
  document.getElementById('approvals-status').textContent = said || '';
  wire();
}

async function answer(form, approved) {
  const item = form.closest('[data-testid="approval-item"]');
  const errorBox = section().querySelector('.form-error');
  const buttons = [...form.querySelectorAll('button')];
  const reason = form.elements.reason.value.trim();
  const body = { toolCallId: item.dataset.toolCallId, approved, ...(reason ? { reason } : {}) };
  showError(errorBox, null);
  buttons.forEach((b) => { b.disabled = true; });
  try {
    await api('POST', `/api/agent-sessions/${encodeURIComponent(item.dataset.sessionId)}/approvals`, body);
  } catch (error) {
    // Answered or gone meanwhile (409, 404): the inbox as it is now says so better than a stale item.
    const stale = error.status === 404 || error.status === 409;
    if (stale) await refresh(''); else buttons.forEach((b) => { b.disabled = false; });
    showError(section().querySelector('.form-error'), error);
    return;
  }
  const tool = form.dataset.tool;
  await refresh(t(approved ? 'approvals.approvedNote' : 'approvals.rejectedNote', { tool }));
  const next = section().querySelector('.approval-answer button');
  (next || document.getElementById('approvals-heading')).focus(); // the answered item is gone
}

function wire() {
  for (const form of section().querySelectorAll('form.approval-answer')) {
    // Enter in the reason would press the first button, Approve: a call is approved by pressing it only.
    form.elements.reason.addEventListener('keydown', (event) => { if (event.key === 'Enter') event.preventDefault(); });
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      answer(form, event.submitter ? event.submitter.value !== 'reject' : true);
    });
  }
}

localTimes(section());
wire();
