/**
 * Typed wrappers, one per transition script. Each takes the queue's named keys (the script's
 * `-- KEYS:` header picks which) and named arguments, and returns a parsed reply.
 */
import { keepArgs } from '../core/options.js';
import type { AddJobArgs, AddReply, ClaimedJob, ClaimReply, ParentArgs, SettleHint } from './args.js';
import { bindScript, type ScriptContext } from './runner.js';
import { LIFECYCLE_SCRIPT_NAMES } from './lifecycle.js';
import { JOB_SCRIPT_NAMES } from './job-scripts.js';
import { Code, guardRefusal, InvalidStateError, JobNotFoundError } from '../core/errors.js';
import { bindOnceScript, newRequestId, onceCall as once } from './request-id.js';

export type { ScriptContext } from './runner.js';
export type { NewJobArgs, AddJobArgs, AddReply, ClaimedJob, ClaimReply, ParentArgs, SettleHint } from './args.js';
export { settleHint } from './args.js';
const call = bindScript;

// Scripts applied once: the request id is their last ARGV (docs/protocol.md "Applied once").
const applied = {
  add: bindOnceScript('add'),
  claim: bindOnceScript('claim'),
  complete: bindOnceScript('complete'),
  fail: bindOnceScript('fail'),
  promote: bindOnceScript('promote'),
  retry: bindOnceScript('retry'),
  remove: bindOnceScript('remove'),
  changePriority: bindOnceScript('changePriority'),
  addLog: bindOnceScript('addLog'),
  moveToWait: bindOnceScript('moveToWait'),
  moveToDelayed: bindOnceScript('moveToDelayed'),
  moveToWaitingChildren: bindOnceScript('moveToWaitingChildren'),
};

const raw = {
  extendLeases: call('extendLeases'),
  recover: call('recover'),
  clean: call('clean'),
  retryJobs: call('retryJobs'),
  promoteJobs: call('promoteJobs'),
  removeOrphans: call('removeOrphans'),
  moveToLane: call('moveToLane'),
  pause: call('pause'),
  pauseLane: call('pauseLane'),
  setLane: call('setLane'),
  drain: call('drain'),
  obliterate: call('obliterate'),
  progress: call('progress'),
  updateData: call('updateData'),
  releaseClaim: call('releaseClaim'),
  publishEvent: call('publishEvent'),
  extendLocks: call('extendLocks'),
  upgradeLayout: call('upgradeLayout', { layoutCheck: false }),
};

/** Jobs per drain call (Queue.drain, lanes.drain): each also checks its flow parent, ~5–15 µs a job, so a call stays under ~2.5 ms. */
export const DRAIN_BUDGET = 150;

/** Names of every transition script (for docs and tests). */
export const SCRIPT_NAMES = [...Object.keys(applied), ...Object.keys(raw), ...LIFECYCLE_SCRIPT_NAMES, ...JOB_SCRIPT_NAMES];

/** Parses {claimed, nextWakeAt, id, fields, ...}; a negative first element is an error code. */
function parseClaim(reply: unknown): ClaimReply | number {
  const r = reply as unknown[];
  const status = Number(r[0]);
  if (status < 0) return status;
  const jobs: ClaimedJob[] = [];
  for (let i = 2; i < r.length; i += 2) jobs.push({ id: String(r[i]), fields: r[i + 1] as string[] });
  return { jobs, wakeInMs: Number(r[1]) };
}

/** Whether two jobs share every field of add.lua's option record but the lane (compared by the caller). */
function sameOptions(a: AddJobArgs, b: AddJobArgs): boolean {
  return a.opts === b.opts && a.priority === b.priority && a.delay === b.delay && a.lifo === b.lifo
    && a.keepCompleted[0] === b.keepCompleted[0] && a.keepCompleted[1] === b.keepCompleted[1]
    && a.keepFailed[0] === b.keepFailed[0] && a.keepFailed[1] === b.keepFailed[1]
    && (a.dedupId ?? '') === (b.dedupId ?? '') && (a.dedupTtl ?? 0) === (b.dedupTtl ?? 0)
    && a.dedupMode === b.dedupMode && a.timestamp === b.timestamp && a.parent === b.parent
    && a.groupMaxSize === b.groupMaxSize;
}

/**
 * The jobs of a settle grouped by their settle hint, groups and the jobs in each in the order
 * they first appear (indexes into jobs); undefined when groups would not take fewer arguments
 * than 7 per job (5 per group + 3 per job: jobs of many lanes), or more than MAX_SETTLE_GROUPS
 * groups would be needed (each job is compared with each group). docs/protocol.md, complete.
 */
const MAX_SETTLE_GROUPS = 16;
const sameHint = (a: SettleHint, b: SettleHint): boolean => a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3];
function settleGroups(jobs: ReadonlyArray<{ claimed?: SettleHint }>): number[][] | undefined {
  const groups: number[][] = [];
  let last: SettleHint | undefined;
  let lastGroup: number[] | undefined;
  for (let i = 0; i < jobs.length; i++) {
    const h = jobs[i]!.claimed!;
    // A run of one group (the usual batch) costs one comparison a job.
    let g = last && sameHint(h, last) ? lastGroup : groups.find((o) => sameHint(h, jobs[o[0]!]!.claimed!));
    if (!g) {
      if (groups.length === MAX_SETTLE_GROUPS || groups.length * 5 + 5 >= jobs.length * 4) return undefined;
      g = [];
      groups.push(g);
    }
    g.push(i);
    last = h;
    lastGroup = g;
  }
  return groups;
}

/** Whether add.lua may take a job's option record with names and data alone (its 2-field form). */
function isPlain(j: AddJobArgs): boolean {
  return !j.dedupId && !j.parent && j.groupMaxSize === undefined && j.delay === 0 && !j.lifo;
}

const ADD_RECORD = ['opts', 'priority', 'lane', 'delay', 'lifo', 'keepCompletedCount', 'keepCompletedAgeMs', 'keepFailedCount',
  'keepFailedAgeMs', 'dedupId', 'dedupTtlMs', 'timestamp', 'parent', 'dedupMode', 'groupMaxSize'];

/** add.lua's name of ARGV position pos (1-based) in a call of m option records and k fields per job. */
export function addArgName(pos: number, m: number, k: number): string {
  if (pos <= 3) return ['job count', 'option record count', 'fields per job'][pos - 1]!;
  const o = pos - 4;
  if (o < 15 * m) return `records[${Math.floor(o / 15)}].${ADD_RECORD[o % 15]}`;
  const fields = k === 2 ? ['name', 'data'] : ['id', 'name', 'data', 'record', 'lane'];
  return `jobs[${Math.floor((o - 15 * m) / k)}].${fields[(o - 15 * m) % k]}`;
}

/** BullMQ's error when an add names a parent that does not exist (its text, then echomq's). */
export function missingParentError(p: ParentArgs): JobNotFoundError {
  const e = new JobNotFoundError(p.id, 'add (parent)');
  e.message = `Missing key for parent job ${p.logicalKey}. addJob: ${e.message} in queue ${JSON.stringify(p.queue)}`;
  return e;
}

/** BullMQ's error when an add gives an existing child of another (existing) parent a new parent. */
export function parentReplacedAddError(p: ParentArgs, childId: string): InvalidStateError {
  return new InvalidStateError(childId, 'add', '',
    `The parent job ${p.logicalKey} cannot be replaced. addJob: job ${JSON.stringify(childId)} already exists as the child of another parent that still exists`);
}

export const scripts = {
  /**
   * One add call. A parent in another queue must be registered first (src/job/new-job.ts addJobs).
   * requestId: the call's request id (docs/protocol.md "Applied once"); a new one when absent — pass the
   * same one to retry the same logical call.
   */
  async add(ctx: ScriptContext, jobs: readonly AddJobArgs[], requestId = newRequestId(ctx.client)): Promise<AddReply[]> {
    // add.lua takes each run of jobs with the same options as one option record, and 4
    // arguments per job (id, name, data, record number): fewer arguments to encode and parse.
    // A call whose jobs are in several lanes (a lane per user) sends each job's lane as a 5th
    // argument instead of a record per lane. A plain call (one record, generated ids, ready
    // FIFO jobs, no dedup, parent or group limit) sends each job's name and data alone.
    const lane0 = jobs[0]?.lane;
    const lanePerJob = jobs.some((j) => j.lane !== lane0);
    const args: Array<string | number> = [ctx.ids ? `${jobs.length}:${ctx.ids.step}:${ctx.ids.offset}` : jobs.length, 0, 0];
    let prev: AddJobArgs | undefined;
    let rec = 0;
    let generated = true;
    const recOf: number[] = []; // each job's record number
    for (const j of jobs) {
      if (!prev || !sameOptions(prev, j)) {
        const p = j.parent;
        args.push(j.opts, j.priority, lanePerJob ? '' : j.lane, j.delay, j.lifo ? '1' : '0',
          ...keepArgs(j.keepCompleted), ...keepArgs(j.keepFailed), j.dedupId ?? '', j.dedupTtl ?? 0,
          j.timestamp ?? '', p ? p.json : '', j.dedupMode ?? '', j.groupMaxSize ?? '');
        rec++;
      }
      if (j.id !== '') generated = false;
      recOf.push(rec);
      prev = j;
    }
    const plain = rec === 1 && !lanePerJob && generated && isPlain(jobs[0]!);
    args[1] = rec;
    args[2] = plain ? 2 : lanePerJob ? 5 : 4;
    if (plain) {
      for (const j of jobs) args.push(j.name, j.data);
    } else {
      for (let i = 0; i < jobs.length; i++) {
        const j = jobs[i]!;
        if (lanePerJob) args.push(j.id, j.name, j.data, recOf[i]!, j.lane);
        else args.push(j.id, j.name, j.data, recOf[i]!);
      }
    }
    const r = (await applied.add(ctx, args, requestId)) as Array<string | number>;
    const refused = guardRefusal(r, args, 'add', (pos) => addArgName(pos, rec, Number(args[2])));
    if (refused) throw refused;
    const out: AddReply[] = [];
    if (plain) {
      // {first id, n}: every job created, ids consecutive in steps of the shard count.
      const first = Number(r[0]), step = ctx.ids?.step ?? 1;
      for (let i = 0; i < jobs.length; i++) out.push({ id: String(first + i * step), created: true });
      return out;
    }
    for (let i = 0; i < r.length; i += 2) {
      const code = Number(r[i + 1]);
      if (code === Code.MISSING_PARENT) out.push({ id: '', created: false, error: missingParentError(jobs[i / 2]!.parent!), missingParent: true });
      else if (code === Code.OTHER_PARENT) out.push({ id: '', created: false, error: parentReplacedAddError(jobs[i / 2]!.parent!, jobs[i / 2]!.id) });
      else if (code === Code.GROUP_FULL) out.push({ id: '', created: false, groupFull: true });
      else out.push({ id: String(r[i]), created: code === 1 });
    }
    return out;
  },

  /**
   * owner: manual processing, the caller's token stored as each claimed job's lock owner; name:
   * the worker's name, stored as processedBy; requestId: see add (a retry of a claim whose reply
   * was lost passes the same one and gets its jobs).
   */
  async claim(ctx: ScriptContext, a: { count: number; leaseMs: number; owner?: string; name?: string; requestId?: string }): Promise<ClaimReply> {
    return parseClaim(await applied.claim(ctx, [a.count, a.leaseMs, a.owner ?? '', a.name ?? ''], a.requestId)) as ClaimReply;
  },

  /** Settles one job as completed and claims `fetch` more: completeMany for one job. */
  async complete(
    ctx: ScriptContext,
    a: {
      id: string; token: string; returnValue: string; fetch: number; leaseMs: number; maxEventValueBytes: number;
      owner?: string; metrics?: number; keep?: [number, number]; name?: string;
    },
  ): Promise<ClaimReply | number> {
    const r = await scripts.completeMany(ctx, { ...a, jobs: [a] });
    return r.codes[0] === 1 ? r : r.codes[0]!;
  },

  /**
   * Settles several jobs as completed in one call (at most 1000) and claims `fetch` more.
   * codes[i] is 1 (completed), -1 (no such job) or -2 (stale token) for jobs[i]; with `owner`
   * (manual processing: tokens are then the jobs' fences) also -6 (lock mismatch).
   * metrics: data points kept by the per-minute counts (0 or absent = none). keep: the worker's
   * removeOnComplete (count, age ms) for jobs without their own. name: the worker's name, stored
   * as the claimed jobs' processedBy.
   */
  async completeMany(
    ctx: ScriptContext,
    a: {
      jobs: ReadonlyArray<{ id: string; token: string; returnValue: string; claimed?: SettleHint }>; fetch: number; leaseMs: number;
      maxEventValueBytes: number; owner?: string; metrics?: number; keep?: [number, number]; name?: string; requestId?: string;
    },
  ): Promise<ClaimReply & { codes: number[] }> {
    // With every job's fields from its claim reply the script reads fewer fields per job; jobs
    // that share those fields send them once per group (settleGroups).
    const hinted = a.jobs.every((j) => j.claimed !== undefined);
    const groups = hinted ? settleGroups(a.jobs) : undefined;
    const args: Array<string | number> = [a.fetch, a.leaseMs, a.maxEventValueBytes, a.owner ?? '', a.metrics ?? 0, a.keep?.[0] ?? '', a.keep?.[1] ?? '',
      a.name ?? '', groups ? 'g' : hinted ? 7 : 3];
    // order[k]: the index in a.jobs of the k-th job sent (the codes come back in that order)
    let order: number[] | undefined;
    if (groups) {
      order = [];
      for (const g of groups) {
        const h = a.jobs[g[0]!]!.claimed!;
        args.push(h[0], h[1], h[2], h[3], g.length);
        for (const i of g) {
          const j = a.jobs[i]!;
          args.push(j.id, j.token, j.returnValue);
          order.push(i);
        }
      }
    } else {
      for (const j of a.jobs) {
        args.push(j.id, j.token, j.returnValue);
        if (hinted) args.push(...j.claimed!);
      }
    }
    const r = (await applied.complete(ctx, args, a.requestId)) as unknown[];
    const m = Number(r[2]);
    const codes: number[] = new Array(m);
    for (let k = 0; k < m; k++) codes[order ? order[k]! : k] = Number(r[3 + k]);
    const jobs: ClaimedJob[] = [];
    for (let i = 3 + m; i < r.length; i += 2) jobs.push({ id: String(r[i]), fields: r[i + 1] as string[] });
    return { codes, jobs, wakeInMs: Number(r[1]) };
  },

  async fail(
    ctx: ScriptContext,
    a: {
      id: string; token: string; reason: string; stack: string; retryDelayMs: number; exhausted: boolean; fetch: number; leaseMs: number;
      owner?: string; metrics?: number; keep?: [number, number]; name?: string; requestId?: string;
    },
  ): Promise<ClaimReply | number> {
    const args: Array<string | number> = [a.id, a.token, a.reason, a.stack, a.retryDelayMs, a.fetch, a.leaseMs, a.exhausted ? '1' : '0',
      a.owner ?? '', a.metrics ?? 0, a.keep?.[0] ?? '', a.keep?.[1] ?? '', a.name ?? ''];
    return parseClaim(await applied.fail(ctx, args, a.requestId));
  },

  /** Returns the ids whose lease could not be renewed. */
  async extendLeases(ctx: ScriptContext, a: { leaseMs: number; jobs: ReadonlyArray<{ id: string; token: string }> }): Promise<string[]> {
    const args: Array<string | number> = [a.leaseMs];
    for (const j of a.jobs) args.push(j.id, j.token);
    return ((await raw.extendLeases(ctx, args)) as unknown[]).map(String);
  },

  /** failed[i] comes with hashes[i], its job hash as a field list when it failed (for the worker's 'failed' event). */
  async recover(ctx: ScriptContext, a: { maxStalledCount: number; batch: number }): Promise<{ requeued: string[]; failed: string[]; hashes: string[][] }> {
    const [requeued, failed, hashes] = (await raw.recover(ctx, [a.maxStalledCount, a.batch])) as [string[], string[], string[][]];
    return { requeued, failed, hashes: hashes ?? [] };
  },

  /** requestId: see add (a resent promote would find the job no longer delayed). */
  promote: async (ctx: ScriptContext, id: string, requestId?: string) =>
    Number(await applied.promote(ctx, [id], requestId)),
  /** Back to ready from failed/completed; the attempt counts are reset only when asked (as BullMQ's retry). */
  retry: async (ctx: ScriptContext, id: string, state: 'failed' | 'completed', reset: { made?: boolean; started?: boolean } = {}, requestId?: string) =>
    Number(await applied.retry(ctx, [id, state, reset.made ? '1' : '0', reset.started ? '1' : '0'], requestId)),

  /** Per-id results: 1 removed, -1 missing, -3 active or filtered out. requestId: see add (a resent remove would reply -1). */
  async remove(ctx: ScriptContext, a: { ids: readonly string[]; state?: 'w' | 'd' | 'c' | 'f'; cutoffMs?: number; requestId?: string }): Promise<number[]> {
    const r = (await applied.remove(ctx, [a.state ?? '', a.cutoffMs === undefined ? '' : a.cutoffMs, ...a.ids], a.requestId)) as unknown[];
    return r.map(Number);
  },

  /** requestId: see add (a resent change would move the job back in its tier again). */
  changePriority: async (ctx: ScriptContext, a: { id: string; priority: number; lifo: boolean; requestId?: string }) => {
    return Number(await applied.changePriority(ctx, [a.id, a.priority, a.lifo ? '1' : '0'], a.requestId));
  },
  moveToLane: async (ctx: ScriptContext, a: { id: string; lane: string }) => Number(await raw.moveToLane(ctx, [a.id, a.lane])),
  pause: async (ctx: ScriptContext, paused: boolean) => Number(await raw.pause(ctx, [paused ? '1' : '0'])),
  pauseLane: async (ctx: ScriptContext, a: { lane: string; paused: boolean }) => Number(await raw.pauseLane(ctx, [a.lane, a.paused ? '1' : '0'])),
  setLane: async (ctx: ScriptContext, a: { lane: string; field: 'weight' | 'limit' | 'rate'; value: string }) =>
    Number(await raw.setLane(ctx, [a.lane, a.field, a.value])),

  /**
   * One bounded drain step of at most `budget` jobs (default DRAIN_BUDGET). `kept`: scheduler jobs kept at the head
   * of the delayed set so far (pass the previous reply's); `outbox`: a parent in another queue was
   * told through the outbox.
   */
  async drain(
    ctx: ScriptContext,
    a: { budget?: number; delayed: boolean; cursor: string; lane?: string; kept?: number },
  ): Promise<{ removed: number; cursor: string; done: boolean; kept: number; outbox: boolean }> {
    const r = (await raw.drain(ctx, [a.budget ?? DRAIN_BUDGET, a.delayed ? '1' : '0', a.cursor, a.lane ?? '', a.kept ?? 0])) as unknown[];
    return { removed: Number(r[0]), cursor: String(r[1]), done: Number(r[2]) === 1, kept: Number(r[3]), outbox: Number(r[4]) === 1 };
  },

  /** One clean batch: removes those of `ids` still in state `state` and not younger than `cutoffMs`; returns their ids. */
  async clean(ctx: ScriptContext, a: { state: 'w' | 'd' | 'c' | 'f' | 'a'; cutoffMs: number; ids: readonly string[] }): Promise<string[]> {
    return ((await raw.clean(ctx, [a.state, a.cutoffMs, ...a.ids])) as unknown[]).map(String);
  },

  /** One retryJobs batch (count ≤ a few hundred): finished jobs → ready. */
  async retryJobs(ctx: ScriptContext, a: { state: 'failed' | 'completed'; count: number; timestamp: number }): Promise<{ moved: number; more: boolean }> {
    const [moved, more] = (await raw.retryJobs(ctx, [a.state, a.count, a.timestamp])) as [number, number];
    return { moved: Number(moved), more: Number(more) === 1 };
  },

  /** One promoteJobs batch: delayed → ready. */
  async promoteJobs(ctx: ScriptContext, count: number): Promise<{ moved: number; more: boolean }> {
    const [moved, more] = (await raw.promoteJobs(ctx, [count])) as [number, number];
    return { moved: Number(moved), more: Number(more) === 1 };
  },

  /** Deletes those of `ids` whose job no state structure references; returns how many. */
  removeOrphans: async (ctx: ScriptContext, ids: readonly string[]) => Number(await raw.removeOrphans(ctx, [...ids])),

  async obliterate(ctx: ScriptContext, a: { budget: number; force: boolean }): Promise<{ deleted: number; done: boolean } | number> {
    const [deleted, done] = (await raw.obliterate(ctx, [a.budget, a.force ? '1' : '0'])) as [number, number];
    if (Number(deleted) < 0) return Number(deleted);
    return { deleted: Number(deleted), done: Number(done) === 1 };
  },

  /**
   * upgradeLayout.lua, without the client's layout check (it runs on the queues the check
   * refuses): the stored layout version before the call (0 none), or -13 (Code.UNKNOWN_LAYOUT).
   * apply false only reports it.
   */
  upgradeLayout: async (ctx: ScriptContext, apply: boolean) => Number(await raw.upgradeLayout(ctx, [apply ? '1' : '0'])),

  progress: async (ctx: ScriptContext, a: { id: string; progress: string }) => Number(await raw.progress(ctx, [a.id, a.progress])),
  updateData: async (ctx: ScriptContext, a: { id: string; data: string }) => Number(await raw.updateData(ctx, [a.id, a.data])),
  /** requestId: see add (a resent RPUSH would log the line twice). */
  addLog: async (ctx: ScriptContext, a: { id: string; line: string; keep: number; requestId?: string }) => {
    return Number(await applied.addLog(ctx, [a.id, a.line, a.keep], a.requestId));
  },
  /** A custom event into the events stream (QueueEventsProducer), applied once; returns the entry id. */
  async publishEvent(ctx: ScriptContext, a: { maxEvents: number; fields: readonly string[]; requestId?: string }): Promise<string> {
    const rid = a.requestId ?? newRequestId(ctx.client);
    return String(await once('publishEvent', rid, raw.publishEvent(ctx, [a.maxEvents, rid, ...a.fields])));
  },

  /**
   * Hands back the jobs of claims (claim, complete or fail calls) whose reply never came and
   * that will not be retried: those still active under the attempt the claim gave them go back
   * to the front of their tier, no stall counted. Returns their ids.
   */
  async releaseClaims(ctx: ScriptContext, requestIds: readonly string[]): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < requestIds.length; i += 100) {
      out.push(...((await raw.releaseClaim(ctx, requestIds.slice(i, i + 100))) as unknown[]).map(String));
    }
    return out;
  },

  /**
   * Hands an active job back to ready without counting an attempt: 1, or -1 missing / -2 stale.
   * requestId: see add (a resent hand-back would report a stale token).
   */
  moveToWait: async (ctx: ScriptContext, a: { id: string; token: string; requestId?: string }) => {
    return Number(await applied.moveToWait(ctx, [a.id, a.token, '', '1'], a.requestId));
  },

  /**
   * Lock-holder calls (manual processing, step jobs; src/job/job-moves.ts). owner: the caller's
   * token ('' = not checked); fence: the att the caller's Job was claimed under ('' = unknown).
   * Negative replies are lib/lock.lua's codes (-1, -2, -3, -6).
   */
  moveToWaitAs: async (ctx: ScriptContext, a: { id: string; owner: string; fence: string }, requestId?: string) =>
    Number(await applied.moveToWait(ctx, [a.id, a.fence, a.owner, ''], requestId)),
  /** Due time (ms, Redis clock), or a negative code. */
  moveToDelayed: async (ctx: ScriptContext, a: { id: string; owner: string; fence: string; delayMs: number }, requestId?: string) =>
    Number(await applied.moveToDelayed(ctx, [a.id, a.owner, a.fence, a.delayMs], requestId)),
  /** 1 moved, 0 nothing pending, or a negative code. */
  moveToWaitingChildren: async (ctx: ScriptContext, a: { id: string; owner: string; fence: string; childKey: string }, requestId?: string) =>
    Number(await applied.moveToWaitingChildren(ctx, [a.id, a.owner, a.fence, a.childKey], requestId)),
  /** Ids whose lease was not renewed. */
  async extendLocks(ctx: ScriptContext, a: { leaseMs: number; jobs: ReadonlyArray<{ id: string; owner: string; fence: string }> }): Promise<string[]> {
    const args: Array<string | number> = [a.leaseMs];
    for (const j of a.jobs) args.push(j.id, j.owner, j.fence);
    return ((await raw.extendLocks(ctx, args)) as unknown[]).map(String);
  },
};
