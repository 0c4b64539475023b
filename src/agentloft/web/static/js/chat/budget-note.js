// What is left of the user's budgets, shown above the composer once one of them nears its limit (under a
// fifth left), so a reply refused for a budget comes as no surprise (`GET /api/usage/budgets`).
import { api } from '../api.js';
import { formatDate, t } from '../i18n.js';

const NEAR = 0.2;

/** The budget with the smallest share left, with that share and what is left; null when none nears its end. */
function nearest(items) {
  let found = null;
  for (const b of items) {
    const shares = [];
    if (b.maxTokens) shares.push([b.leftTokens / b.maxTokens, `${b.leftTokens.toLocaleString()} ${t('chat.budget.tokens')}`]);
    if (b.maxCost) shares.push([b.leftCost / b.maxCost, `$${b.leftCost.toFixed(2)}`]);
    for (const [share, left] of shares) {
      if (share < NEAR && (!found || share < found.share)) found = { share, left, budget: b };
    }
  }
  return found;
}

export async function refreshBudgetNote() {
  const note = document.getElementById('budget-note');
  if (!note) return;
  let items = [];
  try {
    items = (await api('GET', '/api/usage/budgets')).items;
  } catch {
    return; // a note, not a function of the chat: it waits for the next reply
  }
  const near = nearest(items);
  note.hidden = !near;
  note.textContent = near ? t(`chat.budget.left.${near.budget.period}`,
    { left: near.left, resetsAt: formatDate(near.budget.resetsAt) }) : '';
}
