// Linkbase Site Explorer: a page over the public API (POST /api/json, or the sandbox's),
// with the user's own key. No build step, no dependencies; API data is only ever written
// with textContent, never parsed as HTML.
'use strict';

const $ = (selector) => document.querySelector(selector);
const number = new Intl.NumberFormat('en');
const PAGE = 100;
const SVG = 'http://www.w3.org/2000/svg';

const state = { item: '', index: 'historic', rows: 1000, tab: 'overview', info: null, cache: {}, tables: {} };

class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// One API call. The key travels in the POST body, never in a URL.
async function call(cmd, params) {
  const key = $('#key').value.trim();
  if (!key) throw new ApiError('MissingKey', 'enter an API key (or a sandbox key) first');
  const base = $('#sandbox').checked ? '/sandbox/api/json' : '/api/json';
  const body = new URLSearchParams({ cmd, datasource: state.index, ...params });
  body.set('app_api_key', key);
  let reply;
  try {
    const response = await fetch(base, { method: 'POST', body });
    reply = await response.json();
  } catch (e) {
    throw new ApiError('NetworkError', String(e));
  }
  showUnits(reply);
  if (reply.Code !== 'OK') throw new ApiError(reply.Code, reply.ErrorMessage);
  return reply;
}

function showUnits(reply) {
  const units = $('#units');
  if (reply.Sandbox === 1) {
    units.textContent = 'Sandbox: nothing is charged';
    units.dataset.sandbox = '1';
    return;
  }
  if (reply.RemainingAnalysisResUnits === undefined) return;
  delete units.dataset.sandbox;
  units.dataset.analysis = reply.RemainingAnalysisResUnits;
  units.dataset.retrieval = reply.RemainingRetrievalResUnits;
  units.dataset.indexItemInfo = reply.RemainingIndexItemInfoResUnits;
  units.textContent = `Remaining units: item info ${number.format(reply.RemainingIndexItemInfoResUnits)} · ` +
    `analysis ${number.format(reply.RemainingAnalysisResUnits)} · retrieval ${number.format(reply.RemainingRetrievalResUnits)}`;
}

function status(message, isError) {
  const s = $('#status');
  s.textContent = message;
  s.classList.toggle('error', Boolean(isError));
  s.setAttribute('role', isError ? 'alert' : 'status');
}

function fail(e) {
  status(`${e.code || 'Error'}: ${e.message}`, true);
}

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function share(part, total) {
  const t = Number(total);
  if (!t) return '—';
  return `${(100 * Number(part) / t).toFixed(1)}%`;
}

function renderSummary(r) {
  const values = {
    TrustFlow: r.TrustFlow,
    CitationFlow: r.CitationFlow,
    ExtBackLinks: number.format(r.ExtBackLinks),
    RefDomains: number.format(r.RefDomains),
    RefIPs: number.format(r.RefIPs),
    DeletedShare: share(r.NonUniqueLinkTypeDeleted, r.TotalNonUniqueLinks),
    NoFollowShare: share(r.NonUniqueLinkTypeNoFollow, r.TotalNonUniqueLinks),
  };
  for (const dd of document.querySelectorAll('#summary dd')) {
    dd.textContent = values[dd.dataset.field];
  }
  $('#title').textContent = `${r.Item} — ${state.index} index`;
}

// The topics of the item, from GetIndexItemInfo's TopicalTrustFlow columns.
function topicsOf(r) {
  const topics = [];
  for (let i = 0; r[`TopicalTrustFlow_Topic_${i}`] !== undefined; i++) {
    const topic = r[`TopicalTrustFlow_Topic_${i}`];
    if (topic) topics.push([topic, Number(r[`TopicalTrustFlow_Value_${i}`])]);
  }
  return topics;
}

function topicChart(topics) {
  const fig = el('figure', { id: 'topics-chart' });
  fig.append(el('figcaption', {}, 'Topical Trust Flow'));
  if (!topics.length) {
    fig.append(el('p', { class: 'empty' }, 'No topics: no trusted links reach this item.'));
    return fig;
  }
  const row = 22, label = 190, width = 420;
  const chart = svg('svg', { width, height: topics.length * row + 4, role: 'img', 'aria-label': 'Topical Trust Flow by topic' });
  topics.forEach(([topic, value], i) => {
    const y = i * row;
    chart.append(svg('text', { x: 0, y: y + 15 }, topic));
    chart.append(svg('rect', { x: label, y: y + 4, width: Math.max(1, (width - label - 40) * value / 100), height: row - 8, fill: 'var(--tf)', class: 'bar' }));
    chart.append(svg('text', { x: width - 32, y: y + 15 }, String(value)));
  });
  fig.append(chart);
  return fig;
}

// Trust Flow against Citation Flow, one point per referring domain.
function flowChart(domains) {
  const fig = el('figure', { id: 'flow-chart' });
  fig.append(el('figcaption', {}, 'Referring domains: Trust Flow vs Citation Flow'));
  const size = 300, pad = 30;
  const chart = svg('svg', { width: size + pad + 20, height: size + pad + 16, role: 'img', 'aria-label': 'Trust Flow against Citation Flow of referring domains' });
  chart.append(svg('rect', { x: pad, y: 5, width: size, height: size, fill: 'none', stroke: 'var(--line)' }));
  chart.append(svg('line', { x1: pad, y1: size + 5, x2: pad + size, y2: 5, stroke: 'var(--line)' }));
  for (const v of [0, 50, 100]) {
    chart.append(svg('text', { x: pad + v * size / 100 - 6, y: size + 20 }, String(v)));
    chart.append(svg('text', { x: 4, y: size + 9 - v * size / 100 }, String(v)));
  }
  chart.append(svg('text', { x: pad + size / 2 - 30, y: size + 36 }, 'Citation Flow'));
  chart.append(svg('text', { x: pad + 6, y: 18 }, 'Trust Flow'));
  const points = domains.slice(0, 5000);
  for (const d of points) {
    const dot = svg('circle', {
      cx: pad + Number(d.CitationFlow) * size / 100,
      cy: 5 + size - Number(d.TrustFlow) * size / 100,
      r: 3, fill: 'var(--accent)', 'fill-opacity': 0.5, class: 'point',
    });
    dot.append(svg('title', {}, `${d.Domain}: Trust Flow ${d.TrustFlow}, Citation Flow ${d.CitationFlow}`));
    chart.append(dot);
  }
  fig.append(chart);
  return fig;
}

// New and lost links per day, or per week over long ranges.
function newLostChart(days) {
  const fig = el('figure', { id: 'newlost-chart' });
  fig.append(el('figcaption', {}, 'Links found and lost'));
  if (!days.length) {
    fig.append(el('p', { class: 'empty' }, 'No links found or lost in this index.'));
    return fig;
  }
  let buckets = days.map((d) => ({ date: d.Date, added: Number(d.NewLinks), lost: Number(d.LostLinks) }));
  if (buckets.length > 120) {
    const weeks = new Map();
    for (const b of buckets) {
      const t = Date.parse(b.date);
      const monday = new Date(t - ((new Date(t).getUTCDay() + 6) % 7) * 86400000).toISOString().slice(0, 10);
      const w = weeks.get(monday) || { date: monday, added: 0, lost: 0 };
      w.added += b.added;
      w.lost += b.lost;
      weeks.set(monday, w);
    }
    buckets = [...weeks.values()];
  }
  const width = 760, height = 220, mid = 110, pad = 40;
  const most = Math.max(1, ...buckets.map((b) => Math.max(b.added, b.lost)));
  const step = Math.min(40, (width - pad) / buckets.length);
  const chart = svg('svg', { width, height: height + 20, role: 'img', 'aria-label': 'Links found and lost over time' });
  chart.append(svg('line', { x1: pad, y1: mid, x2: width, y2: mid, stroke: 'var(--line)' }));
  chart.append(svg('text', { x: 0, y: 12 }, number.format(most)));
  chart.append(svg('text', { x: 0, y: mid + 4 }, '0'));
  buckets.forEach((b, i) => {
    const x = pad + i * step, w = Math.max(1, step - 1);
    const up = (mid - 10) * b.added / most, down = (mid - 10) * b.lost / most;
    const a = svg('rect', { x, y: mid - up, width: w, height: up, fill: 'var(--new)', class: 'new' });
    a.append(svg('title', {}, `${b.date}: ${b.added} new`));
    const l = svg('rect', { x, y: mid, width: w, height: down, fill: 'var(--lost)', class: 'lost' });
    l.append(svg('title', {}, `${b.date}: ${b.lost} lost`));
    chart.append(a, l);
  });
  chart.append(svg('text', { x: pad, y: height + 14 }, buckets[0].date));
  chart.append(svg('text', { x: Math.max(pad + 80, pad + buckets.length * step - 70), y: height + 14 }, buckets[buckets.length - 1].date));
  fig.append(chart);
  return fig;
}

// A sortable, paged table over rows already loaded: only one page is ever in the DOM.
class Table {
  constructor(kind, columns, rows) {
    Object.assign(this, { kind, columns, rows, page: 0, sortKey: null, descending: false });
    this.node = el('div', { class: 'table', 'data-kind': kind });
  }

  sortBy(key) {
    this.descending = this.sortKey === key ? !this.descending : this.columns.find((c) => c.key === key).num;
    this.sortKey = key;
    const num = this.columns.find((c) => c.key === key).num;
    const dir = this.descending ? -1 : 1;
    const keyed = this.rows.map((r, i) => [num ? Number(r[key]) || 0 : String(r[key] ?? ''), i, r]);
    keyed.sort((a, b) => (a[0] < b[0] ? -dir : a[0] > b[0] ? dir : a[1] - b[1]));
    this.rows = keyed.map((k) => k[2]);
    this.page = 0;
    this.render();
  }

  render() {
    const pages = Math.max(1, Math.ceil(this.rows.length / PAGE));
    this.page = Math.min(this.page, pages - 1);
    const start = this.page * PAGE, end = Math.min(this.rows.length, start + PAGE);
    const bar = el('div', { class: 'toolbar' });
    bar.append(el('span', { class: 'info' }, this.rows.length
      ? `rows ${number.format(start + 1)}–${number.format(end)} of ${number.format(this.rows.length)}`
      : 'no rows'));
    const prev = el('button', { type: 'button', class: 'prev' }, '‹ Previous');
    const next = el('button', { type: 'button', class: 'next' }, 'Next ›');
    prev.disabled = this.page === 0;
    next.disabled = this.page >= pages - 1;
    prev.onclick = () => { this.page--; this.render(); };
    next.onclick = () => { this.page++; this.render(); };
    const exp = el('button', { type: 'button', class: 'export' }, 'Export CSV');
    exp.onclick = () => download(`${state.item}-${this.kind}.csv`, toCsv(this.rows));
    bar.append(prev, next, exp);
    const table = el('table');
    const head = el('tr');
    for (const c of this.columns) {
      const th = el('th', { 'data-key': c.key, class: c.num ? 'num' : '' }, c.label);
      // Through the CSSOM: the page's content security policy refuses style attributes.
      if (c.width) th.style.width = c.width;
      if (this.sortKey === c.key) th.setAttribute('aria-sort', this.descending ? 'descending' : 'ascending');
      th.onclick = () => this.sortBy(c.key);
      head.append(th);
    }
    const thead = el('thead');
    thead.append(head);
    table.append(thead);
    const body = el('tbody');
    for (const r of this.rows.slice(start, end)) {
      const tr = el('tr');
      for (const c of this.columns) {
        const v = r[c.key];
        tr.append(el('td', { class: c.num ? 'num' : '', title: String(v ?? '') }, c.num && v !== '' ? number.format(Number(v)) : String(v ?? '')));
      }
      body.append(tr);
    }
    table.append(body);
    this.node.replaceChildren(bar, table);
  }
}

function toCsv(rows) {
  if (!rows.length) return '';
  const columns = Object.keys(rows[0]);
  const cell = (v) => {
    const s = String(v ?? '');
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [columns.map(cell).join(','), ...rows.map((r) => columns.map((c) => cell(r[c])).join(','))].join('\r\n') + '\r\n';
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
  const a = el('a', { href: url, download: name.replace(/[^\w.-]+/g, '_') });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// What each tab loads, once per search.
const loaders = {
  backlinks: async () => (await call('GetBackLinkData', { item: state.item, Count: state.rows })).DataTables.BackLinks.Data,
  refdomains: async () => (await call('GetRefDomains', { item0: state.item, Count: state.rows, AnalysisDepth: state.rows })).DataTables.Results.Data,
  anchors: async () => (await call('GetAnchorText', { item: state.item, Count: Math.min(state.rows, 1000) })).DataTables.AnchorText.Data,
  newlost: async () => (await call('GetNewLostBackLinkCalendar', { item: state.item })).DataTables.Calendar.Data,
};

function load(kind) {
  if (!state.cache[kind]) {
    state.cache[kind] = loaders[kind]();
    state.cache[kind].catch(() => delete state.cache[kind]);
  }
  return state.cache[kind];
}

const columns = {
  backlinks: [
    { key: 'SourceURL', label: 'Source URL', width: '24%' },
    { key: 'TargetURL', label: 'Target URL', width: '20%' },
    { key: 'AnchorText', label: 'Anchor text', width: '14%' },
    { key: 'SourceTrustFlow', label: 'Source TF', num: true },
    { key: 'SourceCitationFlow', label: 'Source CF', num: true },
    { key: 'LinkType', label: 'Type' },
    { key: 'FlagNoFollow', label: 'Nofollow', num: true },
    { key: 'FlagDeleted', label: 'Deleted', num: true },
    { key: 'FirstIndexedDate', label: 'First seen' },
    { key: 'LastSeenDate', label: 'Last seen' },
  ],
  refdomains: (rows) => {
    const links = rows.length ? Object.keys(rows[0]).find((k) => k.startsWith('BackLinks_')) : null;
    const cols = [
      { key: 'Domain', label: 'Domain', width: '30%' },
      { key: 'TrustFlow', label: 'Trust Flow', num: true },
      { key: 'CitationFlow', label: 'Citation Flow', num: true },
    ];
    if (links) cols.push({ key: links, label: 'Links to item', num: true });
    cols.push({ key: 'ExtBackLinks', label: 'Its backlinks', num: true }, { key: 'RefDomains', label: 'Its ref. domains', num: true });
    return cols;
  },
  anchors: [
    { key: 'AnchorText', label: 'Anchor text', width: '40%' },
    { key: 'RefDomains', label: 'Referring domains', num: true },
    { key: 'TotalLinks', label: 'Links', num: true },
    { key: 'DeletedLinks', label: 'Deleted', num: true },
    { key: 'NoFollowLinks', label: 'Nofollow', num: true },
    { key: 'EstimatedLinkTrustFlow', label: 'Est. TF', num: true },
  ],
  newlost: [
    { key: 'Date', label: 'Date' },
    { key: 'NewLinks', label: 'New links', num: true },
    { key: 'LostLinks', label: 'Lost links', num: true },
  ],
};

function showTable(kind, rows) {
  const cols = typeof columns[kind] === 'function' ? columns[kind](rows) : columns[kind];
  const t = new Table(kind, cols, rows);
  state.tables[kind] = t;
  t.render();
  return t.node;
}

async function showTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll('#tabs button')) {
    b.setAttribute('aria-selected', String(b.dataset.tab === tab));
  }
  const panel = $('#panel');
  panel.dataset.tab = tab;
  panel.dataset.ready = '0';
  panel.replaceChildren(el('p', { class: 'empty' }, 'Loading…'));
  try {
    let content;
    if (tab === 'overview') {
      const domains = await load('refdomains');
      content = el('div', { class: 'charts' });
      content.append(topicChart(topicsOf(state.info)), flowChart(domains));
    } else if (tab === 'newlost') {
      const days = await load('newlost');
      content = el('div');
      content.append(newLostChart(days), showTable('newlost', days));
    } else {
      content = showTable(tab, await load(tab));
    }
    if (state.tab === tab) panel.replaceChildren(content);
  } catch (e) {
    panel.replaceChildren(el('p', { class: 'empty' }, 'Nothing to show.'));
    fail(e);
  } finally {
    if (state.tab === tab) panel.dataset.ready = '1';
  }
}

async function search(event) {
  event.preventDefault();
  state.item = $('#item').value.trim();
  state.index = $('#index').value;
  state.rows = Number($('#rows').value);
  state.cache = {};
  state.tables = {};
  sessionStorage.setItem('linkbase-key', $('#key').value.trim());
  sessionStorage.setItem('linkbase-sandbox', $('#sandbox').checked ? '1' : '');
  status('Loading…');
  $('#result').dataset.ready = '0';
  try {
    const reply = await call('GetIndexItemInfo', { items: 1, item0: state.item, DesiredTopics: 10 });
    state.info = reply.DataTables.Results.Data[0];
    renderSummary(state.info);
    $('#result').hidden = false;
    status(`${state.info.Item}: ${state.info.Status === 'Found' ? 'found' : 'not found'} in the ${state.index} index`);
    await showTab(state.tab);
  } catch (e) {
    $('#result').hidden = true;
    fail(e);
  } finally {
    $('#result').dataset.ready = '1';
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('#key').value = sessionStorage.getItem('linkbase-key') || '';
  $('#sandbox').checked = Boolean(sessionStorage.getItem('linkbase-sandbox'));
  $('#search').addEventListener('submit', search);
  $('#signin').addEventListener('submit', (e) => e.preventDefault());
  for (const b of document.querySelectorAll('#tabs button')) {
    b.addEventListener('click', () => showTab(b.dataset.tab));
  }
});

// For scripted use and the browser tests: the loaded tables and their CSV.
window.explorer = {
  csv: (kind) => toCsv(state.tables[kind] ? state.tables[kind].rows : []),
  table: (kind, rows) => showTable(kind, rows),
  Table,
};
