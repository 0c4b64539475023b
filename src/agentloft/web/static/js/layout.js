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
