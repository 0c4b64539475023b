// The conversation list beside the chat: grouped by date (today, yesterday, the last 7 and 30 days, then
// by month), a badge where a tool call waits for approval, rename in place, delete from the keyboard, and
// a search over titles and message text (GET /api/agent-sessions/search?q=, the shared search index), and
// a filter that lists only the chats started from other clients through the OpenAI-compatible API
// (`source=api`), both in the list and in a search.
import { api } from '../api.js';
import { confirmDialog, h, onEnterKey } from '../dom.js';
import { lang, t } from '../i18n.js';

const SEARCH_DELAY_MS = 250;
// Chats are listed a page at a time, newest first; the next page loads as the end of the list scrolls
// into view (someone with a thousand chats waits for fifty, and a finished reply reloads only the pages
// already shown).
const PAGE_SIZE = 50;
const DAY_MS = 86_400_000;

/** `items` without a second copy of any chat (by id), in their order. */
function unique(items) {
  const seen = new Set();
  return items.filter((s) => !seen.has(s.id) && seen.add(s.id));
}

function startOfDay(date) {
  const d = new Date(date);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

/** The heading a session is listed under, by when it was last active. */
export function dateGroup(iso, now = new Date()) {
  const day = startOfDay(iso);
  const today = startOfDay(now);
  if (day >= today) return t('chat.group.today');
  if (day >= today - DAY_MS) return t('chat.group.yesterday');
  if (day >= today - 7 * DAY_MS) return t('chat.group.week');
  if (day >= today - 30 * DAY_MS) return t('chat.group.month');
  return new Intl.DateTimeFormat(lang, { year: 'numeric', month: 'long' }).format(new Date(iso));
}

/**
 * Wire the list. `currentId()` names the open session; `onTitle(session)` hears about the open session's
 * title; `onError(error)` shows failures; `onRemovedCurrent()` runs when the open session was deleted.
 */
export function sessionSidebar({ listEl, emptyEl, searchInput, apiOnlyInput, currentId, onTitle, onError,
  onRemovedCurrent }) {
  let sessions = [];
  let pages = 1; // pages of the list shown
  let hasMore = false;
  let loading = false;
  let query = '';
  let timer = null;
  let seq = 0;
  let loadSeq = 0;
  let renaming = false; // a list refresh waits until the title being typed is saved or dropped
  let deferred = false;

  /** Where a search found the session: the matching message's snippet, the terms marked. */
  function snippetNode(match) {
    if (!match || match.field !== 'message') return null;
    return h('span', { class: 'session-snippet small-text' },
      ...match.parts.map((part) => (part.hit ? h('mark', { text: part.text }) : document.createTextNode(part.text))));
  }

  /** The item's rename and delete buttons name the chat, so a screen reader says which one they act on. */
  function nameActions(li, s) {
    const [rename, remove] = li.querySelectorAll('.session-actions button');
    const title = s.title || t('chat.newChat');
    rename.setAttribute('aria-label', t('chat.renameNamed', { title }));
    remove.setAttribute('aria-label', t('chat.deleteNamed', { title }));
  }

  function item(s, { snippet = null } = {}) {
    const current = s.id === currentId();
    const link = h('a', { href: `/chat/${s.id}`, 'aria-current': current ? 'page' : null, dataset: { sessionId: s.id } },
      h('span', { class: 'session-title', text: s.title || t('chat.newChat') }),
      h('span', { class: 'session-sub muted small-text' },
        h('span', { text: s.agentName || t(s.kind === 'agent' ? 'chat.agentGone' : 'chat.plainModel') }),
        s.status === 'awaiting_approval' ? h('span', { class: 'badge warn', dataset: { testid: 'approval-badge' }, text: t('chat.needsApproval') }) : null),
      snippet);
    const rename = h('button', { type: 'button', class: 'linklike icon', title: t('chat.rename'), text: '✎' });
    const remove = h('button', { type: 'button', class: 'linklike icon', title: t('action.delete'), text: '×' });
    const li = h('li', { class: current ? 'session-item current' : 'session-item', dataset: { sessionId: s.id } },
      link, h('div', { class: 'session-actions' }, rename, remove));
    nameActions(li, s);
    rename.addEventListener('click', () => startRename(li, s));
    remove.addEventListener('click', () => removeSession(s));
    return li;
  }

  function render() {
    if (renaming) { deferred = true; return; }
    emptyEl.hidden = sessions.length > 0 || Boolean(query);
    const groups = new Map();
    for (const s of sessions) {
      const name = dateGroup(s.updatedAt);
      if (!groups.has(name)) groups.set(name, []);
      groups.get(name).push(s);
    }
    const nodes = [];
    for (const [name, members] of groups) {
      nodes.push(h('li', { class: 'session-group' },
        h('h2', { class: 'session-group-title', text: name }),
        h('ul', {}, ...members.map((s) => item(s)))));
    }
    if (hasMore) nodes.push(moreItem());
    listEl.replaceChildren(...nodes);
  }

  /** The end of the list while there are more chats: a button, pressed by itself once it scrolls into
   * view (and by hand, from the keyboard or where IntersectionObserver is missing). */
  function moreItem() {
    const button = h('button', { type: 'button', class: 'linklike small', dataset: { testid: 'more-sessions' },
      text: t('chat.moreSessions') });
    button.addEventListener('click', () => more());
    if ('IntersectionObserver' in window) {
      const seen = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) { seen.disconnect(); more(); }
      });
      seen.observe(button);
    }
    return h('li', { class: 'sessions-more' }, button);
  }

  /** The list's and the search's filter: only the chats from other clients when the box is ticked. */
  function source() {
    return apiOnlyInput?.checked ? '&source=api' : '';
  }

  async function fetchPage(number) {
    return api('GET', `/api/agent-sessions?page=${number}&pageSize=${PAGE_SIZE}${source()}`);
  }

  /** Reload the pages shown (a reply moved a chat to the top, a title changed). */
  async function refresh() {
    const mine = ++loadSeq;
    const items = [];
    let more = false;
    try {
      for (let number = 1; number <= pages; number += 1) {
        const page = await fetchPage(number);
        items.push(...page.items);
        more = page.hasMore;
        if (!more) break;
      }
    } catch { return; }
    if (mine !== loadSeq) return;
    sessions = unique(items);
    hasMore = more;
    const current = sessions.find((s) => s.id === currentId());
    if (current) onTitle(current);
    if (!query) render();
  }

  /** Add the next page to the list. */
  async function more() {
    if (loading || !hasMore) return;
    loading = true;
    const mine = loadSeq;
    try {
      const page = await fetchPage(pages + 1);
      if (mine !== loadSeq) return; // a refresh started meanwhile: it has the newer list
      pages += 1;
      sessions = unique([...sessions, ...page.items]); // a chat that moved up between pages shows once
      hasMore = page.hasMore;
      if (!query) render();
    } catch (error) {
      onError(error);
    } finally {
      loading = false;
    }
  }

  async function search(text) {
    const mine = ++seq;
    let page;
    try { page = await api('GET', `/api/agent-sessions/search?q=${encodeURIComponent(text)}&pageSize=50${source()}`); } catch (error) { onError(error); return; }
    if (mine !== seq || text !== query) return;
    if (renaming) { deferred = true; return; }
    const results = page.items.map((s) => item(s, { snippet: snippetNode(s.match) }));
    listEl.replaceChildren(results.length ? h('li', { class: 'session-group' },
      h('h2', { class: 'session-group-title', text: t('chat.searchResults', { count: page.total }) }),
      h('ul', {}, ...results)) : h('li', { class: 'muted small-text no-results', text: t('chat.noResults') }));
  }

  function startRename(li, s) {
    const link = li.querySelector('a');
    const input = h('input', { type: 'text', class: 'rename-input', maxlength: 200, 'aria-label': t('chat.rename') });
    input.value = s.title;
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      if (save && title && title !== s.title) {
        try {
          const row = await api('PATCH', `/api/agent-sessions/${s.id}`, { title });
          Object.assign(s, row);
          if (s.id === currentId()) onTitle(s);
        } catch (error) { onError(error); }
      }
      renaming = false;
      input.replaceWith(link);
      link.querySelector('.session-title').textContent = s.title;
      nameActions(li, s); // the list may not be drawn again for a while: the buttons say the new title now
      li.querySelector('.session-actions button').focus();
      if (deferred) { deferred = false; if (query) search(query); else render(); }
    };
    onEnterKey(input, () => finish(true), { singleLine: true }); // not the Enter an input method takes
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') { event.preventDefault(); event.stopPropagation(); finish(false); }
    });
    input.addEventListener('blur', () => finish(true));
    renaming = true;
    link.replaceWith(input);
    input.focus();
    input.select();
  }

  async function removeSession(s) {
    if (!(await confirmDialog(t('chat.confirmDelete', { title: s.title })))) return;
    try {
      await api('DELETE', `/api/agent-sessions/${s.id}`);
      if (s.id === currentId()) { onRemovedCurrent(); return; }
      sessions = sessions.filter((x) => x.id !== s.id);
      if (query) search(query); else render();
    } catch (error) { onError(error); }
  }

  searchInput.addEventListener('input', () => {
    clearTimeout(timer);
    query = searchInput.value.trim();
    if (!query) { seq += 1; render(); return; }
    timer = setTimeout(() => search(query), SEARCH_DELAY_MS);
  });
  apiOnlyInput?.addEventListener('change', () => {
    pages = 1; // the other list starts from its first page
    if (query) search(query); else refresh();
  });
  searchInput.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && searchInput.value) {
      event.preventDefault();
      event.stopPropagation();
      searchInput.value = '';
      searchInput.dispatchEvent(new Event('input'));
    }
  });

  return { refresh };
}
