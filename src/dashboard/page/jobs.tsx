/// <reference lib="dom" />
/**
 * Browser side: the jobs list. Filters (state, "all" included; lane; an exact id), paging by the
 * server's cursor, bulk select with retry, remove and promote. The list stops refreshing while
 * the pointer is over it, so a row never moves under the pointer; clicking a row opens the job's
 * panel (job-panel.tsx) and puts the job in the URL.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { BulkReply, JobsReply } from '../api.js';
import { qpath } from './requests.js';
import { go, type Route } from './route.js';
import { Button, Cut, ago, rowKeys, useApp, usePoll } from './ui.js';

const STATES = ['all', 'waiting', 'prioritized', 'paused', 'waiting-children', 'active', 'delayed', 'failed', 'completed'];
const LIMIT = 50;

export function Jobs({ route }: { route: Route }) {
  const { act } = useApp();
  const queue = route.queue!;
  const [hover, setHover] = useState(false);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [laneText, setLaneText] = useState(route.lane);
  const [idText, setIdText] = useState(route.id);
  const [nameText, setNameText] = useState(route.name);
  useEffect(() => setNameText(route.name), [route.name]);
  // Cursors of the pages before this one, for ‹ Prev (a pasted link starts a fresh stack).
  const back = useRef<string[]>([]);
  useEffect(() => setLaneText(route.lane), [route.lane]);
  useEffect(() => setIdText(route.id), [route.id]);
  useEffect(() => setSelected(new Set()), [queue, route.state, route.lane, route.cursor, route.id, route.name]);

  const qs = new URLSearchParams({ limit: String(LIMIT) });
  if (route.id) qs.set('id', route.id);
  else if (route.name) {
    qs.set('name', route.name);
    if (route.state) qs.set('state', route.state);
    if (route.cursor) qs.set('cursor', route.cursor);
  } else {
    if (route.state) qs.set('state', route.state);
    if (route.lane) qs.set('lane', route.lane);
    if (route.cursor) qs.set('cursor', route.cursor);
  }
  const { data, error } = usePoll<JobsReply>(qpath(queue, '/jobs?' + qs), !hover);
  const page = back.current.length * LIMIT;

  const bulk = (action: 'retry' | 'remove' | 'promote') => {
    const ids = [...selected];
    if (action === 'remove' && !confirm(`Remove ${ids.length} jobs?`)) return;
    act<BulkReply>(qpath(queue, '/jobs/bulk'), { action, ids }, (r) => `${action}: ${r.done.length} done` + (r.failed.length ? `, ${r.failed.length} refused (${r.failed[0].error})` : ''))
      .then((r) => r && setSelected(new Set()));
  };
  const toggle = (id: string) => {
    const s = new Set(selected);
    if (s.has(id)) s.delete(id);
    else s.add(id);
    setSelected(s);
  };
  const jobs = data?.jobs ?? [];
  return (
    <div id="jobsBox">
      <div class="filters">
        <label>State <select id="jobState" value={route.state || 'all'} onChange={(e) => {
          back.current = [];
          const v = (e.target as HTMLSelectElement).value;
          go({ state: v === 'all' ? '' : v, cursor: '', id: '' });
        }}>{STATES.map((s) => <option value={s}>{s}</option>)}</select></label>
        <form onSubmit={(e) => { e.preventDefault(); back.current = []; go({ lane: laneText.trim(), cursor: '', id: '' }); }}>
          <label>Lane <input id="jobLane" placeholder="any lane" value={laneText} onInput={(e) => setLaneText((e.target as HTMLInputElement).value)}
            onChange={() => { back.current = []; go({ lane: laneText.trim(), cursor: '', id: '' }); }} /></label>
        </form>
        <form onSubmit={(e) => { e.preventDefault(); back.current = []; go({ id: idText.trim(), cursor: '' }); }}>
          <label>Id <input id="jobSearch" placeholder="find a job by id" value={idText} onInput={(e) => setIdText((e.target as HTMLInputElement).value)} /></label>
          <button type="submit" id="jobSearchGo">Find</button>
          {route.id && <button type="button" onClick={() => go({ id: '' })}>Clear</button>}
        </form>
        <form onSubmit={(e) => { e.preventDefault(); back.current = []; go({ name: nameText.trim(), id: '', cursor: '' }); }}>
          <label>Name <input id="jobNameSearch" placeholder="name contains" value={nameText} onInput={(e) => setNameText((e.target as HTMLInputElement).value)} /></label>
          <button type="submit" id="jobNameGo">Search</button>
          {route.name && <button type="button" id="jobNameClear" onClick={() => go({ name: '', cursor: '' })}>Clear</button>}
        </form>
        <button id="jobPrev" disabled={!route.cursor} onClick={() => go({ cursor: back.current.pop() ?? '' })}>‹ Prev</button>
        <button id="jobNext" disabled={!data?.next} onClick={() => { back.current.push(route.cursor); go({ cursor: data!.next! }); }}>Next ›</button>
        <span id="jobPage" class="muted">{route.name && data ? `${jobs.length} found in ${(data.scanned ?? 0).toLocaleString('en-US')} jobs scanned` + (data.next ? ' (Next › scans on)' : ', scan complete') : jobs.length ? (route.cursor && !back.current.length ? 'from ' + route.cursor : `${page + 1}–${page + jobs.length}`) : data ? (route.id ? `no job "${route.id}"` : 'no jobs') : ''}</span>
        {hover && <span class="muted" id="paused-refresh" title="the list refreshes again when the pointer leaves it">refresh held</span>}
      </div>
      {selected.size > 0 && (
        <div class="panel" id="bulkBar">
          <strong>{selected.size} selected</strong>
          <Button id="bulkRetry" onClick={() => bulk('retry')}>Retry</Button>
          <Button id="bulkPromote" onClick={() => bulk('promote')}>Promote</Button>
          <Button id="bulkRemove" danger onClick={() => bulk('remove')}>Remove</Button>
          <button onClick={() => setSelected(new Set())}>Clear</button>
        </div>
      )}
      {error && <p class="bad-text">{error}</p>}
      <div class="scroll">
        <table id="jobs" class="grid" onMouseEnter={() => setHover(true)} onMouseLeave={() => setHover(false)}>
          <thead><tr>
            <th class="check"><input type="checkbox" aria-label="select all" checked={jobs.length > 0 && jobs.every((j) => selected.has(j.id))}
              onChange={(e) => setSelected((e.target as HTMLInputElement).checked ? new Set(jobs.map((j) => j.id)) : new Set())} /></th>
            <th>Id</th><th>Name</th><th>Lane</th><th>State</th><th class="num">Priority</th><th class="num">Attempts</th><th>Created</th><th>Reason</th>
          </tr></thead>
          <tbody>
            {jobs.map((j) => (
              <tr key={j.id} class={route.job === j.id ? 'sel' : ''} onClick={() => go({ job: j.id, jobQueue: null })} {...rowKeys(() => go({ job: j.id, jobQueue: null }))}>
                <td class="check" onClick={(e) => e.stopPropagation()}><input type="checkbox" aria-label={'select ' + j.id} checked={selected.has(j.id)} onChange={() => toggle(j.id)} /></td>
                <Cut text={j.id} cls="id" /><Cut text={j.name} cls="name" /><Cut text={j.lane} cls="name" />
                <td class={'state ' + j.state}>{j.state}</td>
                <td class="num">{j.priority}</td><td class="num">{j.attemptsMade}</td>
                <td title={new Date(j.timestamp).toLocaleString()}>{ago(j.timestamp)}</td>
                <Cut text={j.failedReason ?? ''} cls="reason" />
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
