/** Browser side: the lanes table (sortable, with a depth sparkline per lane) and the lane panel. */
import { $, el, enc, svg } from './dom.js';
import { loadJobs } from './jobs.js';
import { act } from './requests.js';
import { HIST, S, qpath, type Lane, type SortKey } from './state.js';

function sortValue(l: Lane, key: SortKey): string | number {
  if (key === 'name') return l.name;
  if (key === 'limit') return l.limit === null ? Infinity : l.limit;
  if (key === 'paused') return l.paused ? 1 : 0;
  if (key === 'rate') return l.rate ? l.rate.max / l.rate.duration : Infinity;
  return l[key];
}

/** Recent depths as a line, newest sample at the right edge. */
function spark(values: number[]): SVGSVGElement {
  const s = svg('svg', { viewBox: '0 0 120 22', class: 'spark', preserveAspectRatio: 'none' });
  if (values.length < 2) return s;
  const max = Math.max(...values, 1);
  const skip = HIST - values.length;
  const pts = values.map((v, i) => ((skip + i) * 120 / (HIST - 1)).toFixed(1) + ',' + (21 - v / max * 20).toFixed(1)).join(' ');
  s.appendChild(svg('polyline', { points: pts, fill: 'none', stroke: '#2563eb', 'stroke-width': 1.5 }));
  return s;
}

function headerCells(): HTMLTableCellElement[] {
  return Array.from($('lanes').tHead!.rows[0].cells);
}

export function renderLanes(): void {
  const { key, dir } = S.sort;
  const lanes = S.lanes.slice().sort((a, b) => {
    const x = sortValue(a, key);
    const y = sortValue(b, key);
    return (x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : 1) * dir;
  });
  const rows = lanes.map((l) => {
    const tr = document.createElement('tr');
    if (S.lane === l.name) tr.className = 'sel';
    tr.dataset.lane = l.name;
    tr.appendChild(el('td', l.name));
    tr.appendChild(el('td', l.depth, 'num'));
    const sp = el('td');
    sp.appendChild(spark(S.hist.get(l.name) || []));
    tr.appendChild(sp);
    tr.appendChild(el('td', l.active, 'num'));
    tr.appendChild(el('td', l.weight, 'num'));
    tr.appendChild(el('td', l.limit === null ? '—' : l.limit, 'num'));
    tr.appendChild(el('td', l.paused ? 'yes' : 'no'));
    tr.appendChild(el('td', l.rate ? l.rate.max + ' / ' + l.rate.duration + ' ms' : '—'));
    tr.addEventListener('click', () => openLane(l.name));
    return tr;
  });
  $('lanes').tBodies[0].replaceChildren(...rows);
  for (const th of headerCells()) th.className = th.dataset.key === key ? (dir > 0 ? 'asc' : 'desc') : '';
  const cur = currentLane();
  if (cur) $('lanePause').textContent = cur.paused ? 'Resume lane' : 'Pause lane';
}

function currentLane(): Lane | null {
  for (const l of S.lanes) if (l.name === S.lane) return l;
  return null;
}

function openLane(name: string): void {
  S.lane = name;
  const l = currentLane();
  $('laneName').textContent = name;
  $('laneWeight').value = String(l ? l.weight : 1);
  $('laneLimit').value = String(l && l.limit !== null ? l.limit : '');
  $('lanePanel').hidden = false;
  renderLanes();
}

function lanePath(action: string): string {
  return qpath('/lanes/' + enc(S.lane!) + '/' + action);
}

/** Sorting by a header click, and the lane panel's buttons. */
export function wireLanes(): void {
  for (const th of headerCells()) {
    if (!th.dataset.key) continue;
    th.addEventListener('click', () => {
      const key = th.dataset.key as SortKey;
      S.sort = { key, dir: S.sort.key === key ? (-S.sort.dir as 1 | -1) : key === 'name' ? 1 : -1 };
      renderLanes();
    });
  }
  $('laneClose').addEventListener('click', () => {
    S.lane = null;
    $('lanePanel').hidden = true;
    renderLanes();
  });
  $('lanePause').addEventListener('click', () => {
    const l = currentLane();
    const pause = !(l && l.paused);
    act(lanePath(pause ? 'pause' : 'resume'), {}, (pause ? 'Paused' : 'Resumed') + ' lane ' + S.lane);
  });
  $('laneWeightSet').addEventListener('click', () => {
    act(lanePath('weight'), { value: Number($('laneWeight').value) }, 'Weight set');
  });
  $('laneLimitSet').addEventListener('click', () => {
    const v = $('laneLimit').value;
    act(lanePath('limit'), { value: v === '' ? null : Number(v) }, v === '' ? 'Limit removed' : 'Limit set');
  });
  $('laneJobs').addEventListener('click', () => {
    $('jobLane').value = S.lane!;
    S.jobOffset = 0;
    loadJobs();
  });
}
