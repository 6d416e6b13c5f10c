/// <reference lib="dom" />
/**
 * Browser side: one job's panel. It is fixed to the right of the window, so it opens where the
 * user is whatever they scrolled, and its job is in the URL (`job=`, plus `jobQueue=` for a
 * parent or child in another queue). It shows every timestamp, options, data, progress, return
 * value, the stack trace of each failed attempt, logs, parent and children, and the actions
 * that apply to the job's state.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { JobReply } from '../api.js';
import { qpath } from './requests.js';
import { go } from './route.js';
import { Button, time, useApp, usePoll } from './ui.js';

const json = (v: unknown) => (v === undefined ? '—' : JSON.stringify(v, null, 2));

function JobLink({ queue, id, here }: { queue: string; id: string; here: string }) {
  const label = queue === here ? id : `${queue} / ${id}`;
  return (
    <a href={'?queue=' + encodeURIComponent(here) + '&job=' + encodeURIComponent(id) + (queue === here ? '' : '&jobQueue=' + encodeURIComponent(queue))}
      onClick={(e) => { e.preventDefault(); go({ job: id, jobQueue: queue === here ? null : queue }); }}>{label}</a>
  );
}

export function JobPanel({ queue, id }: { queue: string; id: string }) {
  const { act } = useApp();
  const { data: j, error } = usePoll<JobReply>(qpath(queue, '/jobs/' + encodeURIComponent(id)));
  const close = () => go({ job: null, jobQueue: null });
  const box = useRef<HTMLElement>(null);
  // Focus moves into the panel when it opens (keyboard users land on it); Escape closes it.
  useEffect(() => {
    box.current?.focus();
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && close();
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [queue, id]);
  const path = (a: string) => qpath(queue, '/jobs/' + encodeURIComponent(id) + '/' + a);
  const fields: Array<[string, string | number]> = j ? [
    ['queue', j.queue], ['state', j.state], ['name', j.name], ['lane', j.lane], ['priority', j.priority],
    ['attempts', `${j.attemptsMade} made, ${j.attemptsStarted} started, ${j.stalledCounter} stalls` + (j.opts?.attempts ? ` (of ${j.opts.attempts})` : '')],
    ['progress', JSON.stringify(j.progress)],
    ['created', time(j.timestamp)],
    ['due', j.due !== null ? time(j.due) : j.delay ? time(j.timestamp + j.delay) + ' (delay ' + j.delay + ' ms)' : '—'],
    ['processed', time(j.processedOn)], ['finished', time(j.finishedOn)], ['worker', j.processedBy || '—'],
  ] : [];
  const traces = j?.stacktrace ?? [];
  const [prio, setPrio] = useState('');
  const [lane, setLane] = useState('');
  const ready = j?.state === 'waiting' || j?.state === 'prioritized' || j?.state === 'paused';
  return (
    <aside id="jobDetail" class="drawer" aria-label={'job ' + id} tabIndex={-1} ref={box}>
      <div class="titlebar">
        <strong class="cut" title={id}>Job <span id="jobId">{id}</span></strong>
        {j && <>
          <Button id="jobRetry" disabled={j.state !== 'failed' && j.state !== 'completed'} onClick={() => act(path('retry'), {}, 'Job retried')}>Retry</Button>
          <Button id="jobPromote" disabled={j.state !== 'delayed'} onClick={() => act(path('promote'), {}, 'Job promoted')}>Promote</Button>
          <Button id="jobRemove" danger disabled={j.state === 'active'} onClick={() => confirm('Remove this job?') && act(path('remove'), {}, 'Job removed').then((r) => r && close())}>Remove</Button>
        </>}
        <button id="jobClose" class="close" onClick={close} aria-label="close">✕</button>
      </div>
      {error && <p class="bad-text">{error}</p>}
      {j && (
        <>
          {ready && (
            <div class="panel" id="jobMove">
              <label>Priority <input id="jobPriority" type="number" min="0" placeholder={String(j.priority)} value={prio} onInput={(e) => setPrio((e.target as HTMLInputElement).value)} /></label>
              <Button id="jobPrioritySet" disabled={prio === ''} onClick={() => act(path('priority'), { value: Number(prio) }, 'Priority changed').then((r) => r && setPrio(''))}>Set</Button>
              <label>Lane <input id="jobLaneMove" placeholder={j.lane} value={lane} onInput={(e) => setLane((e.target as HTMLInputElement).value)} /></label>
              <Button id="jobLaneSet" disabled={lane === ''} onClick={() => act(path('lane'), { value: lane }, 'Moved to lane ' + lane).then((r) => r && setLane(''))}>Move</Button>
            </div>
          )}
          <dl id="jobFields">{fields.map(([k, v]) => <><dt>{k}</dt><dd title={String(v)}>{v}</dd></>)}</dl>
          {(j.parent || j.children.length > 0) && (
            <div id="jobFamily">
              <h4>Flow</h4>
              {j.parent && <p>Parent: {j.parent.local ? <JobLink queue={j.parent.queue} id={j.parent.id} here={queue} /> : `${j.parent.queue} / ${j.parent.id}`}</p>}
              {j.children.length > 0 && (
                <ul class="tree" id="jobChildren">
                  {j.children.map((c) => <li><span class={'pill ' + (c.status === 'failed' ? 'bad' : c.status === 'pending' ? 'warn' : 'ok')}>{c.status}</span> {c.ref.local ? <JobLink queue={c.ref.queue} id={c.ref.id} here={queue} /> : `${c.ref.queue} / ${c.ref.id}`}</li>)}
                </ul>
              )}
            </div>
          )}
          <h4>Data</h4><pre id="jobData">{json(j.data)}</pre>
          <h4>Options</h4><pre id="jobOpts">{json(j.opts)}</pre>
          {j.state === 'completed' && <><h4>Return value</h4><pre id="jobReturn">{json(j.returnvalue)}</pre></>}
          <h4>Error</h4>
          <pre id="jobError">{j.failedReason || '—'}</pre>
          {traces.map((t, i) => <><h4>Stack trace, attempt {traces.length - i > 0 ? i + 1 : ''}</h4><pre class="trace">{t}</pre></>)}
          <h4>Logs</h4><pre id="jobLogs">{j.logs.length ? j.logs.join('\n') : '—'}</pre>
        </>
      )}
    </aside>
  );
}
