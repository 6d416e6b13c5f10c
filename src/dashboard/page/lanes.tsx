/// <reference lib="dom" />
/**
 * Browser side: the lanes table (sortable, searchable, with a depth sparkline per lane) and the
 * lane panel (pause/resume, weight, limit, its jobs).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { FairnessReply, LanesReply } from '../api.js';
import { qpath } from './requests.js';
import { go, type Route } from './route.js';
import { Button, Cut, age, rowKeys, useApp, usePoll } from './ui.js';

type Lane = LanesReply['lanes'][number];
type SortKey = 'name' | 'depth' | 'active' | 'weight' | 'limit' | 'paused' | 'rate' | 'share' | 'oldest';
const SORT_KEYS: SortKey[] = ['name', 'depth', 'active', 'weight', 'limit', 'paused', 'rate', 'share', 'oldest'];
type Fair = { share: Map<string, number>; oldest: Record<string, number | null> };
/** Depth samples kept per lane (about 2 minutes at 1.5 s). */
const HIST = 80;
/** Lanes per page. */
const PAGE = 200;

function sortValue(l: Lane, key: SortKey, f: Fair): string | number {
  if (key === 'share') return f.share.get(l.name) ?? 0;
  if (key === 'oldest') return f.oldest[l.name] ?? Infinity;
  if (key === 'name') return l.name;
  if (key === 'limit') return l.limit === null ? Infinity : l.limit;
  if (key === 'paused') return l.paused ? 1 : 0;
  if (key === 'rate') return l.rate ? l.rate.max / l.rate.duration : Infinity;
  return l[key];
}

/**
 * Recent depths across the whole width (so it is readable from the first samples on); an
 * emptied lane draws a flat line at zero rather than nothing.
 */
function Spark({ values }: { values: number[] }) {
  const vals = values.length === 1 ? [values[0], values[0]] : values;
  const max = Math.max(...vals, 1);
  const pts = vals.map((v, i) => ((i * 120) / (vals.length - 1)).toFixed(1) + ',' + (20.5 - (v / max) * 19).toFixed(1)).join(' ');
  return (
    <svg class="spark" viewBox="0 0 120 22" preserveAspectRatio="none" aria-label={`depth ${values.join(', ')}`}>
      <polyline points={pts} fill="none" stroke="#2563eb" stroke-width={1.5} />
    </svg>
  );
}

/** Depth history per queue and lane, kept while the page is open (tab switches keep it). */
const HISTORY = new Map<string, Map<string, number[]>>();

function LanePanel({ queue, lane, onClose }: { queue: string; lane: Lane; onClose: () => void }) {
  const { act } = useApp();
  const [weight, setWeight] = useState(String(lane.weight));
  const [limit, setLimit] = useState(lane.limit === null ? '' : String(lane.limit));
  const base = qpath(queue, '/lanes/' + encodeURIComponent(lane.name));
  return (
    <div id="lanePanel" class="panel">
      <strong class="cut" title={lane.name}>Lane <span id="laneName">{lane.name}</span></strong>
      <Button id="lanePause" onClick={() => act(base + (lane.paused ? '/resume' : '/pause'), {}, lane.paused ? 'Lane resumed' : 'Lane paused')}>{lane.paused ? 'Resume lane' : 'Pause lane'}</Button>
      <label>Weight <input id="laneWeight" type="number" min="1" step="1" value={weight} onInput={(e) => setWeight((e.target as HTMLInputElement).value)} /></label>
      <Button id="laneWeightSet" onClick={() => act(base + '/weight', { value: Number(weight) }, 'Weight set')}>Set</Button>
      <label>Limit <input id="laneLimit" type="number" min="0" step="1" placeholder="none" value={limit} onInput={(e) => setLimit((e.target as HTMLInputElement).value)} /></label>
      <Button id="laneLimitSet" onClick={() => act(base + '/limit', { value: limit === '' ? null : Number(limit) }, 'Limit set')}>Set</Button>
      <button id="laneJobs" onClick={() => go({ tab: 'jobs', lane: lane.name, cursor: '', id: '' })}>Show its jobs</button>
      <button id="laneClose" onClick={onClose}>Close</button>
    </div>
  );
}

export function Lanes({ queue, route }: { queue: string; route: Route }) {
  // Sorting is in the URL; largest first by depth, active or weight is asked of the server, over all lanes.
  const sortText = route.sort.replace(/^-/, '');
  const sort: { key: SortKey; dir: 1 | -1 } = SORT_KEYS.includes(sortText as SortKey)
    ? { key: sortText as SortKey, dir: route.sort.startsWith('-') ? -1 : 1 } : { key: 'name', dir: 1 };
  const whole = sort.dir === -1 && (sort.key === 'depth' || sort.key === 'active' || sort.key === 'weight');
  const [open, setOpen] = useState<string | null>(null);
  const [search, setSearch] = useState(route.find);
  const back = useRef<string[]>([]);
  useEffect(() => setSearch(route.find), [route.find]);
  const qs = new URLSearchParams({ limit: String(PAGE) });
  if (whole) qs.set('sort', sort.key);
  else {
    if (route.find) qs.set('prefix', route.find);
    if (route.after) qs.set('after', route.after);
  }
  const { data: status } = usePoll<LanesReply>(qpath(queue, '/lanes?' + qs));
  if (!HISTORY.has(queue)) HISTORY.set(queue, new Map());
  const hist = { current: HISTORY.get(queue)! };
  const seen = useRef<LanesReply | null>(null);
  // One depth sample per poll reply.
  useEffect(() => {
    if (!status || seen.current === status) return;
    seen.current = status;
    for (const l of status.lanes) {
      const h = hist.current.get(l.name) ?? [];
      h.push(l.depth);
      if (h.length > HIST) h.shift();
      hist.current.set(l.name, h);
    }
  }, [status]);
  const { data: fr } = usePoll<FairnessReply>(qpath(queue, '/fairness'));
  const fair: Fair = { share: new Map((fr?.share.lanes ?? []).map((l) => [l.lane, l.share])), oldest: fr?.oldest ?? {} };
  if (!status) return null;
  const lanes = status.lanes
    .slice()
    .sort((a, b) => {
      const x = sortValue(a, sort.key, fair);
      const y = sortValue(b, sort.key, fair);
      return (x < y ? -1 : x > y ? 1 : 0) * sort.dir;
    });
  const lane = open === null ? undefined : status.lanes.find((l) => l.name === open);
  const th = (key: SortKey, label: string) => (
    <th data-key={key} class={sort.key === key ? (sort.dir === 1 ? 'asc' : 'desc') : ''}
      onClick={() => {
        const dir = sort.key === key ? -sort.dir : key === 'name' ? 1 : -1;
        go({ sort: key === 'name' && dir === 1 ? '' : (dir === -1 ? '-' : '') + key, after: '' }, true);
      }}>{label}</th>
  );
  return (
    <div id="lanesBox">
      <div class="filters">
        <form onSubmit={(e) => { e.preventDefault(); back.current = []; go({ find: search.trim(), after: '', sort: whole ? '' : route.sort }); }}>
          <input id="laneSearch" placeholder="lanes starting with…" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
          <button type="submit" id="laneSearchGo">Find</button>
        </form>
        <button id="lanePrev" disabled={whole || !route.after} onClick={() => go({ after: back.current.pop() ?? '' })}>‹ Prev</button>
        <button id="laneNext" disabled={whole || !status.next} onClick={() => { back.current.push(route.after); go({ after: status.next! }); }}>Next ›</button>
        <span id="laneNote" class="muted">{whole
          ? `the ${status.lanes.length} lanes with the most ${sort.key === 'depth' ? 'jobs' : sort.key === 'active' ? 'active jobs' : 'weight'} of all ${(status.scanned ?? 0).toLocaleString('en-US')}`
          : status.lanes.length ? `${status.lanes.length} lanes by name` + (route.after ? ` after “${route.after}”` : '') + (status.next ? ', more on the next page (sorting is within the page)' : '') : 'no lanes'}</span>
        {fr && <span id="shareNote" class="muted" title="share of service: each lane's part of the queue's most recent job starts (events stream)">
          {fr.share.started === 0 ? 'share: no recent starts' : `share of the last ${fr.share.started.toLocaleString('en-US')} starts, over ${age(fr.share.to! - fr.share.from!)}` + (fr.share.unknown ? ` (${fr.share.unknown} of removed jobs)` : '')}
        </span>}
      </div>
      {lane && <LanePanel key={lane.name} queue={queue} lane={lane} onClose={() => setOpen(null)} />}
      <div class="scroll">
        <table id="lanes" class="grid sortable">
          <thead><tr>
            {th('name', 'Lane')}{th('depth', 'Depth')}<th>Depth, last 2 min</th>{th('active', 'Active')}
            {th('share', 'Share')}{th('oldest', 'Oldest')}
            {th('weight', 'Weight')}{th('limit', 'Limit')}{th('paused', 'Paused')}{th('rate', 'Rate limit')}
          </tr></thead>
          <tbody>
            {lanes.map((l) => (
              <tr key={l.name} class={(l.name === open ? 'sel ' : '') + (l.paused && l.depth > 0 ? 'attn-warn' : '')} onClick={() => setOpen(l.name)} {...rowKeys(() => setOpen(l.name))}>
                <Cut text={l.name} cls="name" />
                <td class="num">{l.depth}</td>
                <td><Spark values={hist.current.get(l.name) ?? [l.depth]} /></td>
                <td class="num">{l.active}</td>
                <td class="num share">{fair.share.has(l.name) ? (fair.share.get(l.name)! * 100).toFixed(1) + '%' : '—'}</td>
                <td class="num oldest">{fair.oldest[l.name] ? age(Date.now() - fair.oldest[l.name]!) : '—'}</td>
                <td class="num">{l.weight}</td>
                <td class="num">{l.limit === null ? '—' : l.limit}</td>
                <td>{l.paused ? (l.depth > 0 ? `yes, holding ${l.depth}` : 'yes') : ''}</td>
                <td>{l.rate ? `${l.rate.max} / ${l.rate.duration} ms` : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
