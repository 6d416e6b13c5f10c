/// <reference lib="dom" />
/**
 * Browser side: one queue. Its state and counts, the queue actions (pause/resume, retry all
 * failed, promote all delayed, drain, clean by state and age, obliterate with the name typed),
 * the throughput chart, and the tabs: jobs, lanes, workers, job schedulers.
 */
import { useState } from 'preact/hooks';
import type { LatencyReply, SummaryReply, ThroughputReply } from '../api.js';
import { qpath } from './requests.js';
import { go, type Route, type Tab, TABS } from './route.js';
import { Button, age, useApp, usePoll } from './ui.js';
import { Chart } from './chart.js';
import { Jobs } from './jobs.js';
import { Lanes } from './lanes.js';
import { Schedulers, Workers } from './workers.js';

const CARDS: Array<[string, string]> = [
  ['waiting', 'waiting'], ['prioritized', 'prioritized'], ['paused', 'paused'], ['active', 'active'], ['delayed', 'delayed'],
  ['waiting-children', 'waiting children'], ['failed', 'failed'], ['completed', 'completed'],
];
const CLEAN_STATES = ['completed', 'failed', 'delayed', 'wait', 'prioritized', 'paused'];

function QueueActions({ queue, paused }: { queue: string; paused: boolean }) {
  const { act } = useApp();
  const [clean, setClean] = useState({ state: 'completed', hours: '24' });
  const [open, setOpen] = useState<'clean' | 'obliterate' | null>(null);
  const [typed, setTyped] = useState('');
  return (
    <>
      <div class="titlebar actions">
        <Button id="queuePause" onClick={() => act(qpath(queue, paused ? '/resume' : '/pause'), {}, paused ? 'Queue resumed' : 'Queue paused')}>
          {paused ? 'Resume queue' : 'Pause queue'}
        </Button>
        <Button id="retryFailed" onClick={() => confirm('Retry every failed job of this queue?') && act<{ retried: number }>(qpath(queue, '/retry-failed'), {}, (r) => `${r.retried} failed jobs retried`)}>Retry all failed</Button>
        <Button id="promoteAll" onClick={() => act<{ promoted: number }>(qpath(queue, '/promote-all'), {}, (r) => `${r.promoted} delayed jobs promoted`)}>Promote all delayed</Button>
        <Button id="drain" onClick={() => confirm('Remove every waiting and prioritized job of this queue?') && act<{ removed: number }>(qpath(queue, '/drain'), {}, (r) => `${r.removed} jobs drained`)}>Drain</Button>
        <Button id="cleanOpen" onClick={() => setOpen(open === 'clean' ? null : 'clean')}>Clean…</Button>
        <Button id="obliterateOpen" danger onClick={() => setOpen(open === 'obliterate' ? null : 'obliterate')}>Obliterate…</Button>
      </div>
      {open === 'clean' && (
        <div class="panel" id="cleanPanel">
          Remove up to 1,000 <select id="cleanState" value={clean.state} onChange={(e) => setClean({ ...clean, state: (e.target as HTMLSelectElement).value })}>
            {CLEAN_STATES.map((s) => <option>{s}</option>)}
          </select> jobs older than <input id="cleanHours" type="number" min="0" value={clean.hours} onInput={(e) => setClean({ ...clean, hours: (e.target as HTMLInputElement).value })} /> hours
          <Button id="cleanGo" onClick={() => act<{ removed: number }>(qpath(queue, '/clean'), { state: clean.state, graceMs: Math.round(Number(clean.hours) * 3600_000), limit: 1000 }, (r) => `${r.removed} jobs cleaned`)}>Clean</Button>
        </div>
      )}
      {open === 'obliterate' && (
        <div class="panel danger" id="obliteratePanel">
          Deletes the queue and every job in it. Type the queue's name to confirm:
          <input id="obliterateName" value={typed} onInput={(e) => setTyped((e.target as HTMLInputElement).value)} />
          <Button id="obliterateGo" danger disabled={typed !== queue} onClick={() => act(qpath(queue, '/obliterate'), { confirm: typed }, 'Queue obliterated').then((r) => r && go({ queue: null, job: null }))}>Obliterate</Button>
        </div>
      )}
    </>
  );
}

const ms = (n: number) => (n < 1000 ? Math.round(n) + ' ms' : n < 60_000 ? (n / 1000).toFixed(1) + ' s' : age(n));

/** Time waiting and processing, p50 / p90 / p99, over a chosen window (latency.ts). */
function Latency({ queue }: { queue: string }) {
  const [win, setWin] = useState(300);
  const { data } = usePoll<LatencyReply>(qpath(queue, '/latency?window=' + win));
  const line = (p: LatencyReply['wait']) => (p ? `p50 ${ms(p.p50)} · p90 ${ms(p.p90)} · p99 ${ms(p.p99)}` : '—');
  return (
    <div id="latency" class="filters">
      <strong>Latency</strong>
      <select id="latencyWindow" value={win} onChange={(e) => setWin(Number((e.target as HTMLSelectElement).value))}>
        <option value={300}>5 min</option><option value={900}>15 min</option><option value={3600}>1 hour</option>
      </select>
      {data && <>
        <span>waiting <b id="latWait">{line(data.wait)}</b></span>
        <span>processing <b id="latProc">{line(data.processing)}</b></span>
        <span class="muted" id="latNote">{data.jobs ? `from the newest ${data.jobs.toLocaleString('en-US')} finished jobs` : 'no finished jobs in the window'}</span>
      </>}
    </div>
  );
}

export function QueueView({ route }: { route: Route }) {
  const queue = route.queue!;
  const { data: status, error } = usePoll<SummaryReply>(qpath(queue, '?lanes=0'));
  const { data: tp } = usePoll<ThroughputReply>(qpath(queue, '/throughput'));
  return (
    <section id="queueBox">
      <div class="titlebar">
        <h2 id="queueTitle" class="cut" title={queue}>{queue}</h2>
        {status && <span id="queueState" class={'badge ' + (status.paused ? 'warn' : 'ok')}>{status.paused ? 'paused' : 'running'}</span>}
        {error && !status && <span class="bad-text">{error}</span>}
      </div>
      {status && <QueueActions queue={queue} paused={status.paused} />}
      {status && (
        <div id="counts" class="cards">
          {CARDS.map(([state, label]) => (
            <a class={'card' + (route.tab === 'jobs' && route.state === state ? ' sel' : '') + (state === 'failed' && status.counts.failed > 0 ? ' bad' : '')}
              href={'?queue=' + encodeURIComponent(queue) + '&state=' + state}
              onClick={(e) => { e.preventDefault(); go({ tab: 'jobs', state, cursor: '', id: '' }); }}>
              <b>{status.counts[state as keyof typeof status.counts].toLocaleString('en-US')}</b><span>{label}</span>
            </a>
          ))}
        </div>
      )}
      {tp && <Chart tp={tp} />}
      <Latency queue={queue} />
      <nav class="tabs" role="tablist">
        {TABS.map((t: Tab) => (
          <a role="tab" id={'tab-' + t} aria-selected={route.tab === t} href={'?queue=' + encodeURIComponent(queue) + '&tab=' + t}
            onClick={(e) => { e.preventDefault(); go({ tab: t }); }}>{t === 'schedulers' ? 'job schedulers' : t}</a>
        ))}
      </nav>
      {route.tab === 'jobs' && <Jobs route={route} />}
      {route.tab === 'lanes' && <Lanes queue={queue} route={route} />}
      {route.tab === 'workers' && <Workers queue={queue} />}
      {route.tab === 'schedulers' && <Schedulers queue={queue} />}
    </section>
  );
}
