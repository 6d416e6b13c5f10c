/// <reference lib="dom" />
/**
 * Browser side: the overview. Every queue with its counts, workers, failure rate over a chosen
 * window and the flags an operator acts on (ready work and no worker, paused with work, paused
 * lanes holding work, failures), totals, sorting and a filter by name.
 */
import { useState } from 'preact/hooks';
import type { OverviewReply } from '../api.js';
import { go } from './route.js';
import { Num, age, rowKeys, usePoll } from './ui.js';

type Q = OverviewReply['queues'][number];
type Key = 'name' | 'workers' | 'ready' | 'active' | 'delayed' | 'failed' | 'completed' | 'rate' | 'oldest' | 'tput';

const ready = (q: Q) => q.counts.waiting + q.counts.prioritized + q.counts.paused;
const value = (q: Q, k: Key): number | string =>
  k === 'tput' ? q.health.completed + q.health.failed : k === 'name' ? q.name : k === 'workers' ? q.workers : k === 'ready' ? ready(q) : k === 'rate' ? q.health.failureRate
    : k === 'oldest' ? (q.health.oldestWaiting === null ? Infinity : q.health.oldestWaiting) : q.counts[k];

/** What needs attention, worst first; the row is coloured by the first. */
export function flags(q: Q): Array<{ text: string; level: 'bad' | 'warn' }> {
  const h = q.health;
  const out: Array<{ text: string; level: 'bad' | 'warn' }> = [];
  if (h.noWorker) out.push({ text: `${ready(q).toLocaleString('en-US')} ready, no worker`, level: 'bad' });
  if (h.failureRate >= 0.1 && h.failed > 0) out.push({ text: `${Math.round(h.failureRate * 100)}% failing`, level: 'bad' });
  if (h.pausedWithWork) out.push({ text: `paused with ${ready(q).toLocaleString('en-US')} ready`, level: 'warn' });
  if (h.pausedLanesWithWork > 0) out.push({ text: `${h.pausedLanesWithWork} paused lane${h.pausedLanesWithWork > 1 ? 's' : ''} holding work`, level: 'warn' });
  return out;
}

/** One queue; a sharded queue's row sums its shards, listed under it (each opens as a queue). */
function QueueRow({ q, shard, win }: { q: Q; shard?: boolean; win: number }) {
  const perMin = ((q.health.completed + q.health.failed) * 60) / win;
  const f = flags(q);
  const open = () => go({ queue: q.name, tab: 'jobs', state: '', lane: '', id: '', cursor: '', job: null, jobQueue: null });
  return (
    <tr key={q.name} class={(f.length ? 'attn-' + f[0].level : '') + (shard ? ' shard' : '') + (q.shards ? ' sharded' : '')} onClick={q.shards ? undefined : open} {...(q.shards ? {} : rowKeys(open))}>
      <td class="cut name" title={q.name}>{shard ? '└ ' : ''}{q.name}{q.shards && <span class="pill ok">{q.shards.length} shards</span>}</td>
      <td>{q.paused ? <span class="pill warn">paused</span> : 'running'}</td>
      <Num n={q.workers} cls={q.health.noWorker ? 'bad-text' : ''} />
      <Num n={ready(q)} /><Num n={q.counts.active} /><Num n={q.counts.delayed} />
      <Num n={q.counts.failed} cls={q.counts.failed > 0 ? 'bad-text' : ''} /><Num n={q.counts.completed} />
      <td class="num tput" title={`${q.health.completed + q.health.failed} finished in the window`}>{perMin === 0 ? '—' : perMin < 10 ? perMin.toFixed(1) : Math.round(perMin).toLocaleString('en-US')}</td>
      <td class="num" title={`${q.health.failed} failed, ${q.health.completed} completed in the window`}>
        {q.health.completed + q.health.failed === 0 ? '—' : (q.health.failureRate * 100).toFixed(1) + '%'}
      </td>
      <td class="num">{q.health.oldestWaiting === null ? '—' : age(Date.now() - q.health.oldestWaiting)}</td>
      <td class="cut flags" title={f.map((x) => x.text).join('; ')}>{f.map((x) => <span class={'pill ' + x.level}>{x.text}</span>)}</td>
    </tr>
  );
}

const WINDOWS: Array<[number, string]> = [[300, '5 min'], [900, '15 min'], [3600, '1 hour']];

export function Overview() {
  const [win, setWin] = useState(300);
  const [filter, setFilter] = useState('');
  const [sort, setSort] = useState<{ key: Key; dir: 1 | -1 }>({ key: 'name', dir: 1 });
  const { data, error } = usePoll<OverviewReply>('api/queues?window=' + win);
  const rows = (data?.queues ?? [])
    .filter((q) => q.name.toLowerCase().includes(filter.toLowerCase()))
    .sort((a, b) => {
      const x = value(a, sort.key);
      const y = value(b, sort.key);
      return (x < y ? -1 : x > y ? 1 : 0) * sort.dir;
    });
  const total = (f: (q: Q) => number) => rows.reduce((s, q) => s + f(q), 0);
  const th = (key: Key, label: string, num = true) => (
    <th data-key={key} class={(num ? 'num ' : '') + (sort.key === key ? (sort.dir === 1 ? 'asc' : 'desc') : '')}
      onClick={() => setSort({ key, dir: sort.key === key ? (-sort.dir as 1 | -1) : key === 'name' ? 1 : -1 })}>{label}</th>
  );
  const attention = rows.filter((q) => flags(q).length > 0).length;
  return (
    <section id="overview">
      <div class="titlebar">
        <h2>Queues</h2>
        {data && <span class={'badge ' + (attention ? 'bad' : 'ok')} id="attention">{attention ? `${attention} need attention` : 'all healthy'}</span>}
        <input id="queueFilter" placeholder="filter by name" value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
        <label>Window <select id="window" value={win} onChange={(e) => setWin(Number((e.target as HTMLSelectElement).value))}>
          {WINDOWS.map(([s, l]) => <option value={s}>{l}</option>)}
        </select></label>
      </div>
      {error && !data && <p class="bad-text">{error}</p>}
      <div class="scroll">
        <table id="queues" class="grid sortable">
          <thead><tr>
            {th('name', 'Queue', false)}<th>State</th>{th('workers', 'Workers')}{th('ready', 'Ready')}{th('active', 'Active')}
            {th('delayed', 'Delayed')}{th('failed', 'Failed')}{th('completed', 'Done')}{th('tput', 'Done/min')}{th('rate', 'Failing')}{th('oldest', 'Oldest waiting')}<th>Needs attention</th>
          </tr></thead>
          <tbody>
            {rows.flatMap((q) => [<QueueRow q={q} win={win} />, ...(q.shards ?? []).map((x) => <QueueRow q={x} shard win={win} />)])}
          </tbody>
          {rows.length > 1 && (
            <tfoot><tr>
              <td>{rows.length} queues</td><td></td><Num n={total((q) => q.workers)} /><Num n={total(ready)} /><Num n={total((q) => q.counts.active)} />
              <Num n={total((q) => q.counts.delayed)} /><Num n={total((q) => q.counts.failed)} /><Num n={total((q) => q.counts.completed)} /><td></td><td></td><td></td><td></td>
            </tr></tfoot>
          )}
        </table>
      </div>
      {data && data.queues.length === 0 && <p class="muted" id="noQueues">No queues under this prefix yet.</p>}
      {data?.truncated && <p class="muted">Showing the first {data.queues.length} queues.</p>}
    </section>
  );
}
