/**
 * One vocabulary of job states for the operator tools, BullMQ 6's: waiting (also called `wait`),
 * prioritized, active, delayed, completed, failed, waiting-children. BullMQ 6 has no `paused`
 * state: a paused queue's jobs are waiting and the queue is flagged paused, so counts, listings
 * and job views here say exactly what `Queue.getJobCounts()` and `Job.getState()` say.
 * The views wrap the shared operations (operations.ts) without changing them.
 */
import type { Queue } from '../queue/queue.js';
import { CLEAN_TYPES, type CleanState } from '../queue/queue-maintenance.js';
import type { JobCounts } from '../ops/inspect.js';
import * as v from '../core/validate.js';
import * as ops from './operations.js';
import { UserError, type Target } from './target.js';
import { ShardedQueue } from './shards.js';

/** BullMQ 6's job states, in the order `jobs` lists them when no state is given. */
export const STATES = ['active', 'waiting', 'prioritized', 'waiting-children', 'delayed', 'failed', 'completed'] as const;
export type StateName = (typeof STATES)[number];

/** What `jobs --state` takes: the states, `wait` (same as waiting) and `paused` (BullMQ 6: never a job). */
export const LIST_STATE_ARGS = ['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed', 'waiting-children', 'wait', 'paused'] as const;
/** What `clean --state` takes: BullMQ's clean types (waiting-children jobs are not cleaned, as in BullMQ). */
export const CLEAN_STATE_ARGS: readonly string[] = CLEAN_TYPES;

/** Said whenever `paused` is asked for as a state. */
export const PAUSED_NOTE = "no job is in state paused: a paused queue's jobs are waiting (as in BullMQ 6); use --state waiting";

/** BullMQ 6's getJobCounts() shape (the same keys, in its order). */
export type StateCounts = Record<StateName, number>;

/** The operator counts (which split a paused queue's ready jobs out as `paused`) in BullMQ 6's form. */
export function stateCounts(c: JobCounts): StateCounts {
  return {
    active: c.active, completed: c.completed, delayed: c.delayed, failed: c.failed,
    prioritized: c.prioritized, waiting: c.waiting + c.paused, 'waiting-children': c['waiting-children'],
  };
}

export interface QueueStateSummary {
  name: string;
  paused: boolean;
  counts: StateCounts;
  /** A sharded queue's shards, each with its own counts (the queue's are their sum). */
  shards?: Array<{ name: string; paused: boolean; counts: StateCounts }>;
}

/** A summary's counts, and its shards' counts, in BullMQ 6's form. */
function withStateCounts<T extends ops.QueueSummary>(q: T): Omit<T, 'counts' | 'shards'> & QueueStateSummary {
  const { shards, ...rest } = q;
  const out = { ...rest, counts: stateCounts(q.counts) };
  const all = shards === undefined ? out : { ...out, shards: shards.map((s) => ({ ...s, counts: stateCounts(s.counts) })) };
  return all as Omit<T, 'counts' | 'shards'> & QueueStateSummary;
}

/** Queues under the prefix (every master of a Cluster) with BullMQ 6 counts and their paused flag; `cursor` resumes. */
export async function queuesOverview(
  t: Target, max = 1000, cursor?: string,
): Promise<{ queues: QueueStateSummary[]; truncated: boolean; cursor: string | null }> {
  const r = await ops.overview(t, max, cursor);
  return { queues: r.queues.map(withStateCounts), truncated: r.truncated, cursor: r.cursor };
}

export type QueueStateStatus = Omit<ops.QueueStatus, 'counts' | 'shards'> & QueueStateSummary;

/** One queue's status with BullMQ 6 counts. */
export async function queueStateStatus(q: Queue): Promise<QueueStateStatus> {
  return withStateCounts(await ops.queueStatus(q));
}

/** A `--state` value in the listing vocabulary: `wait` read as waiting; anything else refused naming the choices. */
export function listState(s: unknown): StateName | 'paused' {
  if (typeof s !== 'string' || !(LIST_STATE_ARGS as readonly string[]).includes(s)) v.fail('state', `one of ${LIST_STATE_ARGS.join(', ')}`, s);
  return s === 'wait' ? 'waiting' : (s as StateName | 'paused');
}

export interface JobList {
  jobs: ops.JobRow[];
  more: boolean;
  /** Said when the answer needs a word (state paused). */
  note?: string;
}

/**
 * Jobs by state (BullMQ 6 names) and lane. A paused queue's ready jobs are listed as waiting;
 * `paused` lists nothing, with a note. `offset` needs one state: the states are separate lists.
 */
export async function listJobs(q: Queue, query: ops.JobQuery): Promise<JobList> {
  const limit = query.limit === undefined ? 50 : v.integerIn('limit', query.limit, 1, 10_000);
  const offset = query.offset === undefined ? 0 : v.nonNegativeInt('offset', query.offset);
  const lane = query.lane === undefined || query.lane === '' ? undefined : v.laneName(query.lane);
  const one = query.state === undefined || query.state === '' || query.state === 'all' ? undefined : listState(query.state);
  if (one === 'paused') return { jobs: [], more: false, note: PAUSED_NOTE };
  if (one === undefined && offset > 0) throw new UserError('--offset needs one state: add --state (for example --state failed)');
  const paused = await q.isPaused();
  const jobs: ops.JobRow[] = [];
  let more = false;
  for (const state of one === undefined ? STATES : [one]) {
    const want = limit - jobs.length;
    if (want <= 0) {
      more = true;
      break;
    }
    // The shared listing calls a paused queue's ready jobs `paused`; they are waiting.
    const asked = state === 'waiting' && paused ? 'paused' : state;
    const r = await ops.findJobs(q, { state: asked, lane, offset, limit: want });
    for (const row of r.jobs) jobs.push({ ...row, state });
    if (r.more) more = true;
  }
  return { jobs, more };
}

/** A `clean --state` value: BullMQ's clean types, `waiting-children` refused as in BullMQ. */
export function cleanState(s: unknown): CleanState {
  if (typeof s !== 'string' || !CLEAN_STATE_ARGS.includes(s)) v.fail('state', `one of ${CLEAN_STATE_ARGS.join(', ')}`, s);
  return s as CleanState;
}

/**
 * clean with the listing's vocabulary: `wait` and `waiting` are the same jobs whether or not the
 * queue is paused; `paused` removes nothing (BullMQ 6 keeps no paused jobs), with a note.
 */
export async function cleanJobs(q: Queue, grace: number, state: string, limit: number): Promise<{ ids: string[]; note?: string }> {
  const s = cleanState(state);
  v.nonNegativeInt('grace', grace);
  v.nonNegativeInt('limit', limit);
  if (s === 'paused') return { ids: [], note: PAUSED_NOTE };
  return { ids: await ops.clean(q, grace, s, limit) };
}

export interface JobView extends ops.JobDetail {
  /** When a delayed job becomes ready (ms since the epoch), else null. */
  due: number | null;
  /**
   * True when failedReason and stacktrace are an earlier attempt's (the job was retried and is
   * now completed, waiting, delayed or active), false when they are why the job failed.
   */
  errorIsEarlier: boolean;
}

/** One job, with its due time when delayed and its error told apart from an earlier attempt's. */
export async function jobView(q: Queue, id: string): Promise<JobView> {
  const d = await ops.jobDetail(q, id);
  // A sharded queue's job lives in one shard's keys.
  const home = q instanceof ShardedQueue ? q.shardQueues[(await q.shardOfJob(id)) ?? 0] : q;
  const score = d.state === 'delayed' ? await home.client.zscore(home.keys.delayed, id) : null;
  return { ...d, due: score === null ? null : Number(score), errorIsEarlier: Boolean(d.failedReason) && d.state !== 'failed' };
}
