/**
 * Text output for people: aligned tables, short times, a progress bar. User strings (queue,
 * lane, job names, data) can hold anything, including terminal escape sequences, so every
 * cell goes through `safe()` before it reaches a terminal.
 */
import type { LaneInfo } from '../ops/inspect.js';
import type { JobRow } from '../operator/operations.js';
import type { QueueStateStatus, QueueStateSummary } from '../operator/states.js';
import type { JobSchedulerJson } from '../lifecycle/schedulers.js';
import type { WorkerRow } from '../operator/schedulers.js';

/** Control characters shown as \uXXXX so a name cannot move the cursor or recolour the terminal. */
export function safe(s: unknown): string {
  return String(s).replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** Columns padded to their widest cell; numbers right-aligned. */
export function table(headers: string[], rows: Array<Array<string | number>>, maxCell = 48): string {
  const cells = rows.map((r) => r.map((c) => clip(safe(c), maxCell)));
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r.map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(headers), ...cells.map(line)].join('\n') + '\n';
}

/** 1.2s, 3m, 4h, 2d: for ages and durations. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(ms)}ms`;
  if (a < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  if (a < 3_600_000) return `${Math.round(ms / 60_000)}m`;
  if (a < 86_400_000) return `${(ms / 3_600_000).toFixed(1)}h`;
  return `${(ms / 86_400_000).toFixed(1)}d`;
}

/** BullMQ 6's states: a paused queue's jobs count as waiting and the queue is shown paused. */
const COUNT_COLUMNS = ['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed'];

/** The usual states, plus any other state (waiting-children…) that is not zero somewhere. */
function countColumns(counts: Array<Record<string, number>>): string[] {
  const extra = new Set<string>();
  for (const c of counts) for (const [k, n] of Object.entries(c)) if (n > 0 && !COUNT_COLUMNS.includes(k)) extra.add(k);
  return [...COUNT_COLUMNS, ...extra];
}

export function queuesTable(queues: QueueStateSummary[]): string {
  if (queues.length === 0) return 'no queues found\n';
  const cols = countColumns(queues.map((q) => q.counts));
  return table(
    ['QUEUE', 'STATE', ...cols.map((c) => c.toUpperCase())],
    // A sharded queue is one row with its shards indented below it.
    queues.flatMap((q): QueueStateSummary[] => [q, ...(q.shards ?? []).map((s) => ({ ...s, name: `  ${s.name}` }))]).map((q) => [
      q.shards ? `${q.name} (${q.shards.length} shards)` : q.name,
      q.paused ? 'paused' : 'running', ...cols.map((c) => (q.counts as Record<string, number>)[c] ?? 0),
    ]),
  );
}

const rate = (l: LaneInfo) => (l.rate ? `${l.rate.max}/${duration(l.rate.duration)}` : '-');

export function lanesTable(lanes: LaneInfo[]): string {
  if (lanes.length === 0) return 'no lanes\n';
  return table(
    ['LANE', 'DEPTH', 'ACTIVE', 'WEIGHT', 'LIMIT', 'PAUSED', 'RATE'],
    lanes.map((l) => [l.name, l.depth, l.active, l.weight, l.limit === null ? '-' : String(l.limit), l.paused ? 'yes' : 'no', rate(l)]),
  );
}

export function statusText(s: QueueStateStatus, maxLanes = 20): string {
  const head = `queue ${safe(s.name)}  ${s.paused ? 'PAUSED' : 'running'}` +
    (s.globalConcurrency === null ? '' : `  global concurrency ${s.globalConcurrency}`) + '\n\n';
  const cols = countColumns([s.counts]);
  const counts = table(cols.map((c) => c.toUpperCase()), [cols.map((c) => (s.counts as Record<string, number>)[c] ?? 0)]);
  // The deepest lanes are the ones an operator looks for first.
  const lanes = [...s.lanes].sort((a, b) => b.depth - a.depth || b.active - a.active || (a.name < b.name ? -1 : 1));
  const shown = lanes.slice(0, maxLanes);
  const rest = lanes.length - shown.length;
  const more = rest > 0 || s.lanesTruncated ? `… ${s.lanesTruncated ? 'more' : rest} lanes not shown (echomq lanes ${safe(s.name)})\n` : '';
  const shards = s.shards === undefined ? '' : '\n' + table(
    ['SHARD', 'STATE', ...cols.map((c) => c.toUpperCase())],
    s.shards.map((h) => [h.name, h.paused ? 'paused' : 'running', ...cols.map((c) => (h.counts as Record<string, number>)[c] ?? 0)]),
  );
  return `${head}${counts}${shards}\n${lanesTable(shown)}${more}`;
}

export function jobsTable(jobs: JobRow[], now: number): string {
  if (jobs.length === 0) return 'no jobs\n';
  return table(
    ['ID', 'NAME', 'LANE', 'STATE', 'PRIO', 'ATTEMPTS', 'AGE', 'REASON'],
    // A reason on a job that is not failed is an earlier attempt's, and says so.
    jobs.map((j) => [j.id, j.name, j.lane, j.state, j.priority, j.attemptsMade, duration(now - j.timestamp),
      j.failedReason ? (j.state === 'failed' ? j.failedReason : `earlier attempt: ${j.failedReason}`) : '']),
  );
}

/** A readable view of one job. */
export function jobText(d: Record<string, unknown>, now = Date.now()): string {
  const lines: string[] = [];
  const put = (k: string, val: unknown) => lines.push(`${k.length < 13 ? k.padEnd(13) : `${k} `}${safe(val)}`);
  const time = (ms: unknown) => (typeof ms === 'number' ? new Date(ms).toISOString() : '-');
  put('id', d.id);
  put('name', d.name);
  put('state', d.state);
  put('lane', d.lane);
  put('priority', d.priority);
  put('attempts', `${d.attemptsMade} made, ${d.attemptsStarted} started, ${d.stalledCounter} stalls`);
  put('created', time(d.timestamp));
  put('processed', time(d.processedOn));
  put('finished', time(d.finishedOn));
  if (typeof d.due === 'number') put('due', `${time(d.due)} (${d.due >= now ? `in ${duration(d.due - now)}` : `${duration(now - d.due)} ago`})`);
  put('progress', JSON.stringify(d.progress));
  lines.push('data');
  lines.push(indent(safeBlock(JSON.stringify(d.data, null, 2) ?? 'undefined')));
  // null until the job completes (as in BullMQ): shown only for a completed job.
  if (d.returnvalue !== undefined && (d.returnvalue !== null || d.state === 'completed')) {
    lines.push('returnvalue');
    lines.push(indent(safeBlock(JSON.stringify(d.returnvalue, null, 2))));
  }
  // After a retry the stored error is an earlier attempt's, not why the job is where it is now.
  const earlier = d.errorIsEarlier === true;
  if (d.failedReason) put(earlier ? 'earlier error' : 'error', earlier ? `${d.failedReason} (an earlier attempt's; the job is ${d.state} now)` : d.failedReason);
  const stack = d.stacktrace as string[] | undefined;
  if (stack && stack.length > 0) {
    lines.push(earlier ? "stacktrace (earlier attempts')" : 'stacktrace');
    for (const s of stack) lines.push(indent(safeBlock(s)));
  }
  const logs = d.logs as string[];
  lines.push(`logs (${logs.length})`);
  for (const l of logs) lines.push(indent(safe(l)));
  return lines.join('\n') + '\n';
}

/** Like safe() but keeps newlines, for multi-line blocks (stack traces, pretty JSON). */
const safeBlock = (s: string) => s.split('\n').map(safe).join('\n');
const indent = (s: string) => s.split('\n').map((l) => `  ${l}`).join('\n');

/** `[#####.....] 50/100` drawn in place (\r) on a terminal. */
export function progressBar(done: number, total: number, width = 30): string {
  const frac = total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(frac * width);
  return `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`;
}

export function schedulersTable(list: JobSchedulerJson[], now: number): string {
  if (list.length === 0) return 'no job schedulers\n';
  return table(
    ['ID', 'NAME', 'REPEAT', 'NEXT', 'JOBS MADE'],
    list.map((s) => [s.key, s.name, repeatText(s), `${new Date(s.next).toISOString()} (${next(s.next, now)})`, s.iterationCount]),
  );
}

const next = (at: number, now: number) => (at >= now ? `in ${duration(at - now)}` : `${duration(now - at)} ago`);

function repeatText(s: JobSchedulerJson): string {
  if (s.pattern !== undefined) return `cron ${s.pattern}${s.tz ? ` ${s.tz}` : ''}`;
  if (s.every !== undefined) return `every ${duration(s.every)}`;
  return '-';
}

/** A readable view of one job scheduler. */
export function schedulerText(s: JobSchedulerJson, now = Date.now()): string {
  const lines: string[] = [];
  const put = (k: string, val: unknown) => lines.push(`${k.padEnd(13)}${safe(val)}`);
  const time = (ms: number | undefined) => (typeof ms === 'number' ? new Date(ms).toISOString() : '-');
  put('id', s.key);
  put('name', s.name);
  put('repeat', repeatText(s));
  if (s.every !== undefined) put('offset', s.offset ?? 0);
  put('next', `${time(s.next)} (${next(s.next, now)})`);
  put('jobs made', s.limit === undefined ? s.iterationCount : `${s.iterationCount} of ${s.limit}`);
  put('start', time(s.startDate));
  put('end', time(s.endDate));
  if (s.template) {
    lines.push('template');
    lines.push(indent(safeBlock(JSON.stringify(s.template, null, 2))));
  }
  return lines.join('\n') + '\n';
}

export function workersTable(workers: WorkerRow[]): string {
  if (workers.length === 0) return 'no workers connected\n';
  return table(['NAME', 'ADDRESS', 'AGE', 'IDLE'], workers.map((w) => [w.name ?? '-', w.addr, duration(w.age * 1000), duration(w.idle * 1000)]));
}
