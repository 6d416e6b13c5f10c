/// <reference lib="dom" />
/**
 * Browser side: a queue's workers (name, address, age, idle) with the active jobs each holds,
 * and its job schedulers (remove).
 */
import { useState } from 'preact/hooks';
import type { SchedulersReply, WorkersReply } from '../api.js';
import { qpath } from './requests.js';
import { go } from './route.js';
import { Button, Cut, age, rowKeys, time, useApp, usePoll } from './ui.js';

export function Workers({ queue }: { queue: string }) {
  const { data } = usePoll<WorkersReply>(qpath(queue, '/workers'));
  if (!data) return null;
  return (
    <div class="scroll">
      <table id="workers" class="grid">
        <thead><tr><th>Name</th><th>Address</th><th class="num">Connected for</th><th class="num">Idle</th></tr></thead>
        <tbody>
          {data.workers.map((w) => (
            <tr><Cut text={w.name || '(unnamed)'} /><Cut text={w.addr} /><td class="num">{age(w.age * 1000)}</td><td class="num">{age(w.idle * 1000)}</td></tr>
          ))}
        </tbody>
      </table>
      {data.workers.length === 0 && <p class="muted" id="noWorkers">No worker is connected to this queue.</p>}
      <h3>Running now</h3>
      <table id="held" class="grid">
        <thead><tr><th>Worker</th><th>Job</th><th>Name</th><th>Lane</th><th class="num">Running for</th></tr></thead>
        <tbody>
          {Object.keys(data.held).sort().flatMap((by) => data.held[by].map((j) => (
            <tr key={j.id} onClick={() => go({ job: j.id, jobQueue: null })} {...rowKeys(() => go({ job: j.id, jobQueue: null }))}>
              <Cut text={by || '(unnamed)'} /><Cut text={j.id} /><Cut text={j.name} /><Cut text={j.lane} />
              <td class="num">{j.since === null ? '—' : age(Date.now() - j.since)}</td>
            </tr>
          )))}
        </tbody>
      </table>
      <p class="muted" id="heldNote">{data.active === 0 ? 'No job is active.' : `${data.active} active jobs` + (data.truncated ? ` shown, the first ${data.active} by lease deadline` : '')}</p>
    </div>
  );
}

const PAGE = 20;

export function Schedulers({ queue }: { queue: string }) {
  const { act } = useApp();
  const [offset, setOffset] = useState(0);
  const { data } = usePoll<SchedulersReply>(qpath(queue, `/schedulers?offset=${offset}&limit=${PAGE}`));
  if (!data) return null;
  return (
    <div class="scroll">
      <table id="schedulers" class="grid">
        <thead><tr><th>Id</th><th>Repeats</th><th>Time zone</th><th>Next run</th><th class="num">Made</th><th>Template</th><th></th></tr></thead>
        <tbody>
          {data.schedulers.map((s) => (
            <tr key={s.key}>
              <Cut text={s.key} />
              <Cut text={s.pattern ? s.pattern : s.every !== undefined ? `every ${age(s.every)}` : '—'} />
              <Cut text={s.tz ?? '—'} />
              <td>{time(s.next)}</td>
              <td class="num">{s.iterationCount}{s.limit ? ` / ${s.limit}` : ''}</td>
              <Cut text={`${s.name} ${s.template ? JSON.stringify(s.template) : ''}`} />
              <td><Button onClick={() => confirm(`Remove job scheduler ${s.key}?`) && act(qpath(queue, '/schedulers/' + encodeURIComponent(s.key) + '/remove'), {}, 'Job scheduler removed')}>Remove</Button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {data.total === 0 && <p class="muted">No job schedulers.</p>}
      {data.total > PAGE && (
        <div class="filters">
          <button disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>‹ Prev</button>
          <button disabled={offset + PAGE >= data.total} onClick={() => setOffset(offset + PAGE)}>Next ›</button>
          <span class="muted">{offset + 1}–{Math.min(offset + PAGE, data.total)} of {data.total}</span>
        </div>
      )}
    </div>
  );
}
