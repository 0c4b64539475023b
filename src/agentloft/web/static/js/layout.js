// Every page: sign-out, and menus that close when clicking elsewhere.
import { api } from './api.js';

document.getElementById('sign-out')?.addEventListener('click', async () => {
  try { await api('POST', '/api/auth/logout'); } finally { window.location.assign('/login'); }
});

document.addEventListener('click', (event) => {
  for (const menu of document.querySelectorAll('details.menu[open]')) {
    if (!menu.contains(event.target)) menu.removeAttribute('open');
  }
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
