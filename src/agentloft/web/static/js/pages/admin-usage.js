// Admin → Usage and My usage: tokens and cost per day as charts (the vendored uPlot, global `uPlot`), and
// the usage of the chosen range grouped as chosen, as a table: everyone's (`/api/admin/usage`), or the
// reader's own where the form names `/api/usage` (`data-api`).
import { api } from '../api.js';
import { h, showError } from '../dom.js';
import { t } from '../i18n.js';

const form = document.getElementById('usage-form');
const errorBox = document.querySelector('.form-error');
const tbody = document.querySelector('#usage-table tbody');
const csv = document.getElementById('usage-csv');
const charts = [];
const source = form.dataset.api || '/api/admin/usage';

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

function drawTable(report) {
  tbody.replaceChildren(...report.items.map((i) => h('tr', { dataset: { key: i.key ?? '' } },
    h('td', { text: i.label ?? (i.key ? `#${i.key}` : t('admin.usage.none')) }),
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
  try {
    const [report, perDay] = await Promise.all([api('GET', `${source}?${params}`), api('GET', `${source}?${days}`)]);
    drawTable(report);
    drawCharts(perDay);
  } catch (err) {
    showError(errorBox, err);
  }
}

form.addEventListener('submit', (event) => { event.preventDefault(); load(); });
load();
