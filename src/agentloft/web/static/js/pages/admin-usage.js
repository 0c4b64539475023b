// Admin → Usage and My usage: tokens and cost per day as charts (the vendored uPlot, global `uPlot`), and
// the usage of the chosen range grouped as chosen, as a table: everyone's (`/api/admin/usage`), or the
// reader's own where the form names `/api/usage` (`data-api`). Admin → Usage also ranks the ten users and
// agents that used the most tokens in the range (`ol[data-group]`): an ordered list of names with a plain
// CSS bar, not a uPlot chart. A ranking is read as text (a screen reader says "1. alice, 1,200 tokens"),
// uPlot has no bar series of its own and draws to a canvas that says nothing to assistive technology, and
// the list costs no script beyond this one.
import { api } from '../api.js';
import { h, showError } from '../dom.js';
import { t } from '../i18n.js';

const form = document.getElementById('usage-form');
const errorBox = document.querySelector('.form-error');
const tbody = document.querySelector('#usage-table tbody');
const csv = document.getElementById('usage-csv');
const charts = [];
const source = form.dataset.api || '/api/admin/usage';
const tops = [...document.querySelectorAll('ol[data-group]')];
const TOP = 10;

function query() {
  const data = new FormData(form);
  const params = new URLSearchParams();
  for (const key of ['from', 'to', 'groupBy']) if (data.get(key)) params.set(key, data.get(key));
  return params;
}

/** A day's key as the chart's x value: seconds since the epoch of its UTC midnight. */
const epoch = (day) => Date.parse(`${day}T00:00:00Z`) / 1000;

function chart(el, label, series) {
  const width = Math.max(320, el.clientWidth || 640);
  return new uPlot({ width, height: 220, series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2 }))],
    axes: [{}, { label }], scales: { x: { time: true } } }, [series[0].x, ...series.map((s) => s.y)], el);
}

function drawCharts(days) {
  charts.splice(0).forEach((c) => c.destroy());
  const x = days.items.map((i) => epoch(i.key));
  const tokens = document.getElementById('usage-tokens-chart');
  const cost = document.getElementById('usage-cost-chart');
  charts.push(chart(tokens, t('admin.usage.tokens'), [
    { label: t('admin.usage.input'), color: '#2563eb', x, y: days.items.map((i) => i.inputTokens) },
    { label: t('admin.usage.output'), color: '#16a34a', x, y: days.items.map((i) => i.outputTokens) }]));
  charts.push(chart(cost, t('admin.usage.cost'), [
    { label: t('admin.usage.cost'), color: '#d97706', x, y: days.items.map((i) => i.cost ?? 0) }]));
}

const money = (value) => (value === null || value === undefined ? '—' : `$${value.toFixed(4)}`);
const named = (i) => i.label ?? (i.key ? `#${i.key}` : t('admin.usage.none'));
const tokensOf = (i) => i.inputTokens + i.outputTokens;

/** One ranking: the report's first ten items (the API sorts them by tokens, most first), each with its
 * tokens and cost, and a bar as long as its share of the first's. */
function drawTop(list, report) {
  const items = report.items.slice(0, TOP);
  const most = Math.max(1, ...items.map(tokensOf));
  list.replaceChildren(...items.map((i) => {
    const bar = h('span', { class: 'usage-bar', 'aria-hidden': 'true' });
    bar.style.width = `${(100 * tokensOf(i)) / most}%`;
    return h('li', { dataset: { key: i.key ?? '' } },
      h('span', { class: 'usage-top-name', text: named(i) }),
      h('span', { class: 'usage-top-figures' },
        h('span', { class: 'usage-top-tokens', text: t('admin.usage.top.tokens', { tokens: tokensOf(i).toLocaleString() }) }),
        h('span', { class: 'usage-top-cost muted', text: money(i.cost) })),
      h('span', { class: 'usage-bar-track', 'aria-hidden': 'true' }, bar));
  }));
  list.nextElementSibling.hidden = items.length > 0;
}

function drawTable(report) {
  tbody.replaceChildren(...report.items.map((i) => h('tr', { dataset: { key: i.key ?? '' } },
    h('td', { text: named(i) }),
    h('td', { text: i.inputTokens.toLocaleString() }), h('td', { text: i.outputTokens.toLocaleString() }),
    h('td', { text: money(i.cost) }), h('td', { text: String(i.turns) }))),
  h('tr', { class: 'total' }, h('th', { text: t('admin.usage.total') }),
    h('th', { text: report.total.inputTokens.toLocaleString() }), h('th', { text: report.total.outputTokens.toLocaleString() }),
    h('th', { text: money(report.total.cost) }), h('th', { text: String(report.total.turns) })));
}

async function load() {
  showError(errorBox, null);
  const params = query();
  if (csv) csv.href = `/api/admin/usage.csv?${params}`;
  const days = new URLSearchParams(params);
  days.set('groupBy', 'day');
  const grouped = (group) => { const p = new URLSearchParams(params); p.set('groupBy', group); return p; };
  const table = api('GET', `${source}?${params}`);
  // a ranking by what the table is grouped by already is the table's own answer: not asked twice
  const ranked = tops.map((list) => (list.dataset.group === params.get('groupBy') ? table
    : api('GET', `${source}?${grouped(list.dataset.group)}`)));
  try {
    const [report, perDay, ...rankings] = await Promise.all([table, api('GET', `${source}?${days}`), ...ranked]);
    drawTable(report);
    drawCharts(perDay);
    tops.forEach((list, n) => drawTop(list, rankings[n]));
  } catch (err) {
    showError(errorBox, err);
  }
}

form.addEventListener('submit', (event) => { event.preventDefault(); load(); });
load();
