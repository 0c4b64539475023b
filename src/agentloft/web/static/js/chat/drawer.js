// The conversation list as a drawer on narrow screens (below 800 px, where it has no room beside the
// chat): ☰ opens it over the chat, the backdrop, Escape or picking a chat closes it, and focus moves in
// and back out so a keyboard or screen-reader user is never left behind it.

const NARROW = window.matchMedia('(max-width: 800px)');

// While the drawer is open, what lies behind it is inert: Tab stays in the drawer, and a screen reader's
// reading does not wander off to a chat the backdrop covers.
const BEHIND = ['.skip-link', 'header.topbar', '#chat', '#chat-side-panel'];

export function sessionDrawer({ drawer, toggle, backdrop }) {
  const isOpen = () => drawer.classList.contains('open');

  function set(open, { focus = true } = {}) {
    drawer.classList.toggle('open', open);
    backdrop.hidden = !open;
    for (const el of document.querySelectorAll(BEHIND.join(', '))) el.inert = open;
    toggle.setAttribute('aria-expanded', open ? 'true' : 'false');
    document.body.classList.toggle('drawer-open', open);
    if (!focus) return;
    if (open) (drawer.querySelector('#session-search') || drawer.querySelector('button, a, input, select'))?.focus();
    else toggle.focus();
  }

  toggle.addEventListener('click', () => set(!isOpen()));
  backdrop.addEventListener('click', () => set(false));
  // On the document, not the drawer: Tab from the drawer's last control moves focus out to the browser and
  // back to the page's body (what lies behind is inert), and Escape pressed there must close it too.
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && isOpen() && !event.defaultPrevented) { event.preventDefault(); set(false); }
  });
  drawer.addEventListener('click', (event) => {
    if (event.target.closest('a[href]') && isOpen()) set(false, { focus: false });
  });
  NARROW.addEventListener('change', () => { if (!NARROW.matches && isOpen()) set(false, { focus: false }); });
  return { close: () => set(false, { focus: false }) };
}
