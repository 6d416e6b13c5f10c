/**
 * The maintenance commands of a Queue (BullMQ's names): retryJobs, promoteJobs, clean, drain,
 * obliterate, remove (with children), removeOrphanedJobs, trimEvents. Plain functions over a
 * queue's JobContext; Queue (queue.ts) validates nothing twice, calls them and emits its
 * instance events. Every Redis call is bounded: the loops here repeat bounded script calls.
 */
import { masterNodes } from '../core/connection.js';
import { ActiveJobsError, EchoError, ErrorCodes, JobNotFoundError, Code, refusalError } from '../core/errors.js';
import { drainOutbox } from '../job/flows.js';
import type { JobContext } from '../job/job-context.js';
import { removeWithChildren } from '../job/job-dependencies.js';
import { queueKeyPattern } from '../core/keys.js';
import { laneReadyIds } from '../ops/inspect.js';
import { laneCounts } from '../ops/lane-ready.js';
import { scripts } from '../scripts/index.js';
import { forgetLayout } from '../scripts/runner.js';
import * as v from '../core/validate.js';
import { JobStateCode, MetaField, SchedulerField } from '../core/fields.js';
import { redisNowMs } from '../core/values.js';

/**
 * Jobs per obliterate call by default. 3–8 µs a job was measured with 80,000 completed jobs
 * (test/reliability-bounded.test.ts), up to twice that on a busy machine: 250 keeps a call
 * well under 5 ms.
 */
export const BATCH = 250;
/** Most jobs per retryJobs/promoteJobs/clean script call, whatever `count` asks (~5–10 µs a job). */
const MOVE_BATCH = 500;
const CLEAN_BATCH = 100;
/** BullMQ's clean reports (and emits `cleaned`) per call of up to 10,000 jobs. */
const BULLMQ_CLEAN_CHUNK = 10_000;
/** Candidate ids per removeOrphans call. */
const ORPHAN_BATCH = 100;

/** BullMQ's clean types; 'waiting' is reported as 'wait', as BullMQ does. */
export const CLEAN_TYPES = ['completed', 'wait', 'waiting', 'active', 'paused', 'prioritized', 'delayed', 'failed'] as const;
export type CleanState = (typeof CLEAN_TYPES)[number];

const redisNow = (ctx: JobContext): Promise<number> => redisNowMs(ctx.client);

/** BullMQ's text for a missing job (`Missing key for job <id>. <command>`), then echomq's detail. */
export function missingJob(id: string, command: string): JobNotFoundError {
  const e = new JobNotFoundError(id, command);
  e.message = `Missing key for job ${id}. ${command}: job ${JSON.stringify(id)} does not exist`;
  return e;
}

/** The job of a job scheduler's next slot (`repeat:<scheduler>:<ms>`), which BullMQ will not remove directly. */
async function isSchedulerSlotJob(ctx: JobContext, id: string): Promise<boolean> {
  const m = /^repeat:(.+):(\d+)$/s.exec(id);
  if (!m) return false;
  return (await ctx.client.hget(ctx.keys.schedBase + m[1], SchedulerField.next)) === m[2];
}

export interface RetryJobsOptions {
  /** Jobs moved per Redis call (a batching knob). Default 1000, as BullMQ; echomq caps a call at 500. */
  count?: number;
  /** 'failed' (default) or 'completed'. */
  state?: 'failed' | 'completed';
  /** Only jobs finished at or before this time (ms). Default: now on the Redis clock, read once. */
  timestamp?: number;
}

export function checkRetryJobs(opts: unknown): { count: number; state: 'failed' | 'completed'; timestamp?: number } {
  const o = v.plainObject('opts', opts);
  const count = o.count === undefined ? 1000 : v.positiveInt('count', o.count);
  const state = o.state === undefined ? 'failed' : o.state;
  if (state !== 'failed' && state !== 'completed') v.fail('state', "'failed' or 'completed'", state);
  let timestamp: number | undefined;
  if (o.timestamp !== undefined) {
    if (typeof o.timestamp !== 'number' || !Number.isFinite(o.timestamp) || o.timestamp < 0) v.fail('timestamp', 'a time in ms (a non-negative number)', o.timestamp);
    timestamp = Math.floor(o.timestamp);
  }
  return { count, state, timestamp };
}

/** Moves finished jobs back to ready, oldest first, in bounded batches until none is left. */
export async function retryJobs(ctx: JobContext, o: ReturnType<typeof checkRetryJobs>): Promise<number> {
  // Fixed once, so a job that finishes again during the run is not retried twice.
  const timestamp = o.timestamp ?? (await redisNow(ctx));
  const count = Math.min(o.count, MOVE_BATCH);
  let moved = 0;
  for (;;) {
    const r = await scripts.retryJobs(ctx, { state: o.state, count, timestamp });
    moved += r.moved;
    if (!r.more) return moved;
  }
}

export async function promoteJobs(ctx: JobContext, count: number): Promise<number> {
  let moved = 0;
  for (;;) {
    const r = await scripts.promoteJobs(ctx, Math.min(count, MOVE_BATCH));
    moved += r.moved;
    if (!r.more) return moved;
  }
}

/** BullMQ's report type of a clean ('waiting' → 'wait'). */
export const cleanReportType = (type: CleanState): string => (type === 'waiting' ? 'wait' : type);

export function checkClean(grace: unknown, limit: unknown, type: unknown): CleanState {
  v.nonNegativeInt('grace', grace);
  v.nonNegativeInt('limit', limit);
  if (typeof type !== 'string' || !(CLEAN_TYPES as readonly string[]).includes(type)) v.fail('type', `one of ${CLEAN_TYPES.join(', ')}`, type);
  return type as CleanState;
}

/** Candidate ids of a clean page (read-only). `skip` = candidates already seen and kept. */
async function cleanCandidates(
  ctx: JobContext, type: CleanState, cutoff: number, now: number, skip: number, count: number, paused: boolean,
): Promise<string[]> {
  const { client, keys } = ctx;
  if (type === 'completed' || type === 'failed') {
    return client.zrangebyscore(type === 'completed' ? keys.completed : keys.failed, '-inf', cutoff, 'LIMIT', skip, count);
  }
  if (type === 'delayed') return client.zrange(keys.delayed, skip, skip + count - 1);
  if (type === 'active') return client.zrangebyscore(keys.active, '-inf', `(${now}`, 'LIMIT', skip, count); // leases that ran out
  // Ready jobs: priority 0 for wait/waiting/paused, > 0 for prioritized, lane by lane. 'wait'
  // finds them whether or not the queue is paused (as BullMQ 6); 'paused' only on a paused
  // queue, where echomq reports them as paused (BullMQ 6 keeps no paused list: always none).
  if (type === 'paused' && !paused) return [];
  const which = type === 'prioritized' ? 'prioritized' : 'waiting';
  const out: string[] = [];
  let cursor = '-';
  let left = skip;
  while (out.length < count) {
    const lanes = await client.zrangebylex(keys.lanes, cursor, '+', 'LIMIT', 0, 100);
    for (const lane of lanes) {
      const [depth] = await laneCounts(client, keys, [lane], which === 'waiting' ? '0' : '(0', which === 'waiting' ? '0' : '+inf');
      if (left >= depth) {
        left -= depth;
        continue;
      }
      out.push(...(await laneReadyIds(client, keys, lane, which, left, count - out.length)));
      left = 0;
      if (out.length >= count) break;
    }
    if (lanes.length < 100) break;
    cursor = `(${lanes[lanes.length - 1]}`;
  }
  return out;
}

/**
 * Removes up to `limit` jobs (0 = no limit) of a type older than `grace` ms, in batches of 100.
 * `report` gets the removed ids as BullMQ emits `cleaned`: per chunk of up to 10,000, at least
 * once (an empty list when nothing was removed).
 */
export async function clean(
  ctx: JobContext, grace: number, limit: number, type: CleanState, onChunk: (ids: string[]) => void,
): Promise<string[]> {
  const now = await redisNow(ctx);
  const cutoff = now - grace;
  const max = limit === 0 ? Infinity : limit;
  const chunkSize = Math.min(BULLMQ_CLEAN_CHUNK, max);
  const codes: Partial<Record<CleanState, 'c' | 'f' | 'd' | 'a'>> = {
    completed: JobStateCode.completed, failed: JobStateCode.failed, delayed: JobStateCode.delayed, active: JobStateCode.active,
  };
  const state: 'w' | 'c' | 'f' | 'd' | 'a' = codes[type] ?? JobStateCode.ready;
  const paused = (await ctx.client.hget(ctx.keys.meta, MetaField.paused)) === '1';
  const removed: string[] = [];
  let chunk: string[] = [];
  // BullMQ reads its wait list from the oldest end and lists those jobs newest first.
  const report = (ids: string[]) => onChunk(state === JobStateCode.ready ? [...ids].reverse() : ids);
  let skip = 0;
  let calls = 0;
  while (removed.length < max) {
    const want = Math.min(CLEAN_BATCH, max - removed.length);
    const candidates = await cleanCandidates(ctx, type, cutoff, now, skip, want, paused);
    // One call even without candidates: BullMQ writes a `cleaned` event with count 0.
    if (candidates.length === 0 && calls > 0) break;
    const gone = await scripts.clean(ctx, { state, cutoffMs: cutoff, ids: candidates });
    calls++;
    skip += candidates.length - gone.length; // candidates that stayed are skipped next page
    for (const id of gone) {
      removed.push(id);
      chunk.push(id);
      if (chunk.length === chunkSize) {
        report(chunk);
        chunk = [];
      }
    }
    if (candidates.length < want) break;
  }
  if (chunk.length > 0 || removed.length < max) report(chunk);
  // Parents in other queues learn now that their cleaned children are gone (they move to
  // wait, as BullMQ's clean moves them), not when a worker next drains the outbox.
  if (removed.length > 0) while ((await drainOutbox(ctx.client, ctx.keys)) > 0);
  if (state === JobStateCode.ready) removed.reverse();
  return removed;
}

/** Removes waiting jobs (and delayed ones with `delayed`), across flows; returns how many. */
export async function drain(ctx: JobContext, delayed: boolean): Promise<number> {
  let cursor = '';
  let kept = 0;
  let removed = 0;
  let outbox = false;
  for (;;) {
    const r = await scripts.drain(ctx, { delayed, cursor, kept });
    removed += r.removed;
    cursor = r.cursor;
    kept = r.kept;
    outbox ||= r.outbox;
    if (r.done) break;
  }
  // Parents in other queues learn that their drained children are gone.
  if (outbox) while ((await drainOutbox(ctx.client, ctx.keys)) > 0);
  return removed;
}

/** BullMQ's refusal text, then echomq's detail (ActiveJobsError). */
export const obliterateRefused = (queue: string) => new ActiveJobsError(queue);

/**
 * Deletes the whole queue in bounded calls (the caller has paused it and checked for active
 * jobs). No keyspace SCAN: obliterate.lua knows every key family of a queue, and a SCAN would
 * cost a pass over the whole database, however small the queue.
 */
export async function obliterate(ctx: JobContext, name: string, budget: number, force: boolean): Promise<void> {
  for (;;) {
    const r = await scripts.obliterate(ctx, { budget, force });
    if (typeof r === 'number') throw obliterateRefused(name);
    if (r.done) {
      forgetLayout(ctx.client, ctx.keys); // meta is gone: the next write checks again (and stamps lv)
      return;
    }
    // Flow children of parents in other queues were reported through the outbox: deliver them
    // (the last call waits for an empty outbox).
    while ((await drainOutbox(ctx.client, ctx.keys)) > 0);
  }
}

/**
 * Queue.upgradeLayout: one upgradeLayout.lua call (layout 1 → LAYOUT_VERSION, atomic; `apply`
 * false only reports). Returns the version stored before it, 0 for none. After an upgrade the
 * client forgets its layout check, so its next write checks again and goes ahead.
 */
export async function upgradeLayout(ctx: JobContext, name: string, apply: boolean): Promise<number> {
  const r = await scripts.upgradeLayout(ctx, apply);
  if (r === Code.UNKNOWN_LAYOUT) {
    const stored = (await ctx.client.hget(ctx.keys.meta, MetaField.layoutVersion)) ?? '';
    throw refusalError(r, { jobId: '', queue: name, layout: stored });
  }
  if (apply) forgetLayout(ctx.client, ctx.keys);
  return r;
}

/**
 * Queue.remove: 1 when the job (and with removeChildren its children, recursively) is gone —
 * also when it did not exist, as BullMQ — and 0 when it or a child it waits for is active.
 */
export async function removeJob(ctx: JobContext, id: string, removeChildren: boolean): Promise<number> {
  if (await isSchedulerSlotJob(ctx, id)) {
    throw new EchoError(ErrorCodes.SCHEDULER_JOB,
      `Job ${id} belongs to a job scheduler and cannot be removed directly. removeJob: remove the scheduler with removeJobScheduler`);
  }
  return (await removeWithChildren(ctx, id, removeChildren)) === Code.BAD_STATE ? 0 : 1;
}

/**
 * Deletes job hashes (with logs and deps) that no state structure references, scanning the
 * queue's keys `count` at a time; stops once `limit` (> 0) jobs were removed. Returns how many.
 */
export async function removeOrphanedJobs(ctx: JobContext, count: number, limit: number): Promise<number> {
  const { keys } = ctx;
  const families = [keys.jobBase, keys.logsBase, keys.depsBase];
  let removed = 0;
  for (const node of await masterNodes(ctx.client)) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', queueKeyPattern(keys), 'COUNT', count);
      cursor = next;
      const ids = new Set<string>();
      for (const k of found) {
        const base = families.find((b) => k.startsWith(b));
        if (base) ids.add(k.slice(base.length));
      }
      const list = [...ids];
      for (let i = 0; i < list.length; i += ORPHAN_BATCH) {
        removed += await scripts.removeOrphans(ctx, list.slice(i, i + ORPHAN_BATCH));
        if (limit > 0 && removed >= limit) return removed;
      }
    } while (cursor !== '0');
  }
  return removed;
}
