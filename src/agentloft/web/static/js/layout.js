// Every page: sign-out, menus that close on a click elsewhere or Escape, table cells labelled for phones,
// and the theme button.
import { signOut } from './api.js';
import { t } from './i18n.js';

document.getElementById('sign-out')?.addEventListener('click', signOut);

document.addEventListener('click', (event) => {
  for (const menu of document.querySelectorAll('details.menu[open]')) {
    if (!menu.contains(event.target)) menu.removeAttribute('open');
  }
});

// Escape closes an open menu and puts the focus back on its button.
document.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape' || event.defaultPrevented) return;
  const menu = document.querySelector('details.menu[open]');
  if (!menu) return;
  event.preventDefault();
  menu.removeAttribute('open');
  menu.querySelector('summary')?.focus();
});

// On phones a table shows one card per row (CSS); each cell is labelled with its column's heading here,
// for every table the page scripts fill, so no page script has to know about it.
function labelCells(table) {
  const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent.trim());
  for (const row of table.querySelectorAll('tbody tr')) {
    [...row.cells].forEach((cell, i) => {
      if (heads[i] && !cell.hasAttribute('data-label')) cell.dataset.label = heads[i];
    });
  }
}

for (const table of document.querySelectorAll('table.table')) {
  labelCells(table);
  new MutationObserver(() => labelCells(table)).observe(table.tBodies[0] || table, { childList: true, subtree: true });
}

// Theme: as the system, dark or light. The button steps through them; the choice is kept in a cookie so
// the server renders the next page in it (no flash of the wrong colours).
const THEMES = ['system', 'dark', 'light'];
const themeButton = document.getElementById('theme-toggle');
themeButton?.addEventListener('click', () => {
  const now = themeButton.dataset.themeChoice || 'system';
  const next = THEMES[(THEMES.indexOf(now) + 1) % THEMES.length];
  themeButton.dataset.themeChoice = next;
  if (next === 'system') {
    document.documentElement.removeAttribute('data-theme');
    document.cookie = 'agentloft_theme=; Max-Age=0; Path=/; SameSite=Lax';
  } else {
    document.documentElement.dataset.theme = next;
    document.cookie = `agentloft_theme=${next}; Max-Age=31536000; Path=/; SameSite=Lax`;
  }
  const label = t(`theme.${next}`);
  themeButton.setAttribute('aria-label', label);
  themeButton.title = label;
});
