/**
 * Browser side, the entry: the queue list, the mode badge and token form, and the poll that
 * redraws everything every 1.5 s. server.ts serves this module and the ones it imports as one
 * script, /app.js (see ../script.ts for how it is built).
 */
import type { ConfigReply, OverviewReply, QueueReply, ThroughputReply } from '../api.js';
import { renderChart } from './chart.js';
import { $, el, enc } from './dom.js';
import { loadJobs, wireJobs } from './jobs.js';
import { wireLanes } from './lanes.js';
import { renderQueue, wireQueueActions } from './queue.js';
import { getJson, onActionDone } from './requests.js';
import { S, qpath, readFragment } from './state.js';

// ---- mode and token ----
function showMode(): void {
  const mode = $('mode');
  if (!S.config) return;
  if (S.config.readOnly) {
    mode.textContent = 'read-only';
    mode.className = 'badge';
  } else if (S.token) {
    mode.textContent = 'actions enabled';
    mode.className = 'badge ok';
  } else {
    mode.textContent = 'token needed for actions';
    mode.className = 'badge warn';
  }
  $('tokenForm').hidden = S.config.readOnly;
  const readOnly = S.config.readOnly;
  document.querySelectorAll<HTMLButtonElement>('button.action').forEach((b) => {
    if (b.id === 'jobRetry' || b.id === 'jobRemove') return; // these follow the job's state (jobs.ts)
    b.disabled = readOnly;
    b.title = readOnly ? 'read-only dashboard (start it with --token)' : '';
  });
}

function wireToken(): void {
  $('tokenForm').addEventListener('submit', (ev) => {
    ev.preventDefault();
    S.token = $('tokenInput').value;
    $('tokenInput').value = '';
    if (S.token) sessionStorage.setItem('echomq.token', S.token);
    else sessionStorage.removeItem('echomq.token');
    showMode();
  });
}

// ---- queues ----
function renderQueues(data: OverviewReply): void {
  const rows = data.queues.map((q) => {
    const tr = document.createElement('tr');
    if (q.name === S.queue) tr.className = 'sel';
    tr.appendChild(el('td', q.name));
    tr.appendChild(el('td', q.paused ? 'paused' : 'running'));
    const c = q.counts;
    [c.waiting + c.prioritized + c.paused, c.active, c.delayed, c.failed, c.completed].forEach((n) => {
      tr.appendChild(el('td', n, 'num'));
    });
    tr.addEventListener('click', () => selectQueue(q.name));
    return tr;
  });
  $('queues').tBodies[0].replaceChildren(...rows);
  $('noQueues').hidden = data.queues.length > 0;
}

function selectQueue(name: string): void {
  S.queue = name;
  S.lane = null;
  S.hist = new Map();
  S.jobOffset = 0;
  S.jobId = null;
  $('lanePanel').hidden = true;
  $('jobDetail').hidden = true;
  $('jobLane').value = '';
  history.replaceState(null, '', '#queue=' + enc(name));
  refresh();
}

// ---- polling ----
/** Reads everything shown; skipped while the previous refresh is still running. */
function refresh(): Promise<void> {
  if (S.busy) return Promise.resolve();
  S.busy = true;
  const work: Promise<void>[] = [getJson<OverviewReply>('/api/queues').then(renderQueues)];
  if (S.queue) {
    work.push(getJson<QueueReply>(qpath()).then(renderQueue));
    work.push(getJson<ThroughputReply>(qpath('/throughput')).then(renderChart));
    work.push(loadJobs());
  }
  return Promise.all(work)
    .then(
      () => {
        $('conn').textContent = 'live';
        $('conn').className = 'badge ok';
      },
      (e: Error) => {
        $('conn').textContent = 'error: ' + e.message;
        $('conn').className = 'badge bad';
      },
    )
    .then(() => {
      S.busy = false;
      showMode();
    });
}

readFragment();
wireToken();
wireLanes();
wireQueueActions();
wireJobs();
onActionDone(refresh);

getJson<ConfigReply>('/api/config').then(
  (c) => {
    S.config = c;
    showMode();
    refresh();
    setInterval(refresh, 1500);
  },
  (e: Error) => {
    $('conn').textContent = 'error: ' + e.message;
    $('conn').className = 'badge bad';
  },
);
