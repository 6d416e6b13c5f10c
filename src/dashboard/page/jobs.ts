/** Browser side: the jobs table (state and lane filters, paging) and one job's detail panel. */
import type { JobReply, JobsReply } from '../api.js';
import { $, ago, el, enc, time, toast } from './dom.js';
import { act, getJson } from './requests.js';
import { S, qpath } from './state.js';

/** Lists jobs by the filters. Without a state filter the list is the first page only. */
export function loadJobs(): Promise<void> {
  if (!S.queue) return Promise.resolve();
  const state = $('jobState').value;
  const lane = $('jobLane').value;
  if (!state) S.jobOffset = 0;
  const qs = new URLSearchParams({ limit: String(S.jobLimit), offset: String(S.jobOffset) });
  if (state) qs.set('state', state);
  if (lane) qs.set('lane', lane);
  return getJson<JobsReply>(qpath('/jobs?' + qs)).then(renderJobs, (e: Error) => toast(e.message, true));
}

function renderJobs(r: JobsReply): void {
  S.jobMore = r.more;
  const rows = r.jobs.map((j) => {
    const tr = document.createElement('tr');
    if (j.id === S.jobId) tr.className = 'sel';
    [j.id, j.name, j.lane, j.state].forEach((v) => tr.appendChild(el('td', v)));
    tr.appendChild(el('td', j.priority, 'num'));
    tr.appendChild(el('td', j.attemptsMade, 'num'));
    tr.appendChild(el('td', ago(j.timestamp)));
    tr.appendChild(el('td', j.failedReason || ''));
    tr.addEventListener('click', () => openJob(j.id));
    return tr;
  });
  $('jobs').tBodies[0].replaceChildren(...rows);
  const state = $('jobState').value;
  $('jobPrev').disabled = !state || S.jobOffset === 0;
  $('jobNext').disabled = !state || !r.more;
  $('jobPage').textContent = r.jobs.length ? (S.jobOffset + 1) + '–' + (S.jobOffset + r.jobs.length) : 'no jobs';
}

function openJob(id: string): void {
  S.jobId = id;
  getJson<JobReply>(qpath('/jobs/' + enc(id))).then(renderJob, (e: Error) => toast(e.message, true));
}

function renderJob(j: JobReply): void {
  S.job = j;
  $('jobDetail').hidden = false;
  $('jobId').textContent = j.id;
  const returned = j.returnvalue === undefined || (j.returnvalue === null && j.state !== 'completed') ? '—' : JSON.stringify(j.returnvalue);
  const items: [string, string | number][] = [
    ['name', j.name], ['state', j.state], ['lane', j.lane], ['priority', j.priority],
    ['attempts', j.attemptsMade + ' made, ' + j.attemptsStarted + ' started, ' + j.stalledCounter + ' stalls'],
    ['progress', JSON.stringify(j.progress)], ['created', time(j.timestamp)], ['processed', time(j.processedOn)],
    ['finished', time(j.finishedOn)], ['return value', returned],
  ];
  const nodes: HTMLElement[] = [];
  items.forEach((it) => {
    nodes.push(el('dt', it[0]));
    nodes.push(el('dd', it[1]));
  });
  $('jobFields').replaceChildren(...nodes);
  $('jobData').textContent = JSON.stringify(j.data, null, 2);
  $('jobError').textContent = j.failedReason ? j.failedReason + '\n' + (j.stacktrace || []).join('\n') : '—';
  $('jobLogs').textContent = j.logs.length ? j.logs.join('\n') : '—';
  $('jobRetry').disabled = S.config!.readOnly || (j.state !== 'failed' && j.state !== 'completed');
  $('jobRemove').disabled = S.config!.readOnly || j.state === 'active';
}

/** The filters, paging and the detail panel's buttons. */
export function wireJobs(): void {
  $('jobState').addEventListener('change', () => {
    S.jobOffset = 0;
    loadJobs();
  });
  $('jobLane').addEventListener('change', () => {
    S.jobOffset = 0;
    loadJobs();
  });
  $('jobPrev').addEventListener('click', () => {
    S.jobOffset = Math.max(0, S.jobOffset - S.jobLimit);
    loadJobs();
  });
  $('jobNext').addEventListener('click', () => {
    S.jobOffset += S.jobLimit;
    loadJobs();
  });
  $('jobClose').addEventListener('click', () => {
    S.jobId = null;
    $('jobDetail').hidden = true;
  });
  $('jobRetry').addEventListener('click', () => {
    const id = S.jobId!;
    act(qpath('/jobs/' + enc(id) + '/retry'), {}, 'Job retried').then((r) => {
      if (r) openJob(id);
    });
  });
  $('jobRemove').addEventListener('click', () => {
    if (!confirm('Remove this job?')) return;
    act(qpath('/jobs/' + enc(S.jobId!) + '/remove'), {}, 'Job removed').then((r) => {
      if (r) {
        S.jobId = null;
        $('jobDetail').hidden = true;
      }
    });
  });
}
