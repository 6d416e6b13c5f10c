/**
 * Typed wrappers, one per transition script. Each takes the queue's named keys (the script's
 * `-- KEYS:` header picks which) and named arguments, and returns a parsed reply.
 */
import { DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, type KeepJobs } from '../options.js';
import { bindScript, type ScriptContext } from './runner.js';
import { LIFECYCLE_SCRIPT_NAMES } from './lifecycle.js';

export type { ScriptContext } from './runner.js';
const call = bindScript;

const raw = {
  add: call('add'),
  claim: call('claim'),
  complete: call('complete'),
  fail: call('fail'),
  extendLeases: call('extendLeases'),
  recover: call('recover'),
  promote: call('promote'),
  retry: call('retry'),
  remove: call('remove'),
  changePriority: call('changePriority'),
  moveToLane: call('moveToLane'),
  pause: call('pause'),
  pauseLane: call('pauseLane'),
  setLane: call('setLane'),
  drain: call('drain'),
  obliterate: call('obliterate'),
  progress: call('progress'),
  updateData: call('updateData'),
  addLog: call('addLog'),
  moveToWait: call('moveToWait'),
};

/** Names of every transition script (for docs and tests). */
export const SCRIPT_NAMES = [...Object.keys(raw), ...LIFECYCLE_SCRIPT_NAMES];

/** A new job as the scripts that create jobs take it (every field validated by the caller). */
export interface NewJobArgs {
  id: string; // '' = generate (add only)
  name: string;
  data: string;
  opts: string;
  priority: number;
  lane: string;
  delay: number;
  lifo: boolean;
  keepCompleted: [number, number];
  keepFailed: [number, number];
}

/** One job as the add script takes it. */
export interface AddJobArgs extends NewJobArgs {
  /** Deduplication id ('' or absent = none) and throttle ttl in ms (0 = simple mode). */
  dedupId?: string;
  dedupTtl?: number;
  /** BullMQ Pro's group.maxSize (absent = none). */
  groupMaxSize?: number;
}

/** A claimed job: its id and its hash as a field/value list. */
export interface ClaimedJob {
  id: string;
  fields: string[];
}

export interface ClaimReply {
  jobs: ClaimedJob[];
  /** When nothing was claimed: ms until delayed or rate-limited work becomes ready; -1 none. */
  wakeInMs: number;
}

/** Parses {claimed, nextWakeAt, id, fields, ...}; a negative first element is an error code. */
function parseClaim(reply: unknown): ClaimReply | number {
  const r = reply as unknown[];
  const status = Number(r[0]);
  if (status < 0) return status;
  const jobs: ClaimedJob[] = [];
  for (let i = 2; i < r.length; i += 2) jobs.push({ id: String(r[i]), fields: r[i + 1] as string[] });
  return { jobs, wakeInMs: Number(r[1]) };
}

/**
 * Retention arguments for a new job: '' where the value is the default, so the job hash does not
 * store it (lib/retention.lua applies the same defaults to an absent field).
 */
function keepArgs([count, ageMs]: [number, number], dflt: KeepJobs): [number | '', number | ''] {
  return [count === dflt.count ? '' : count, ageMs === 0 ? '' : ageMs];
}

/** Whether two jobs share every field of add.lua's option record. */
function sameOptions(a: AddJobArgs, b: AddJobArgs): boolean {
  return a.opts === b.opts && a.priority === b.priority && a.lane === b.lane && a.delay === b.delay && a.lifo === b.lifo
    && a.keepCompleted[0] === b.keepCompleted[0] && a.keepCompleted[1] === b.keepCompleted[1]
    && a.keepFailed[0] === b.keepFailed[0] && a.keepFailed[1] === b.keepFailed[1]
    && (a.dedupId ?? '') === (b.dedupId ?? '') && (a.dedupTtl ?? 0) === (b.dedupTtl ?? 0)
    && a.groupMaxSize === b.groupMaxSize;
}

export const scripts = {
  /** groupFull: not created because the job's group (lane) holds group.maxSize waiting jobs. */
  async add(ctx: ScriptContext, jobs: readonly AddJobArgs[]): Promise<Array<{ id: string; created: boolean; groupFull?: true }>> {
    // add.lua takes each run of jobs with the same options as one option record, and 4
    // arguments per job (id, name, data, record number): fewer arguments to encode and parse.
    const records: Array<string | number> = [];
    const perJob: Array<string | number> = [];
    let prev: AddJobArgs | undefined;
    let rec = 0;
    for (const j of jobs) {
      if (!prev || !sameOptions(prev, j)) {
        records.push(j.opts, j.priority, j.lane, j.delay, j.lifo ? '1' : '0',
          ...keepArgs(j.keepCompleted, DEFAULT_KEEP_COMPLETED), ...keepArgs(j.keepFailed, DEFAULT_KEEP_FAILED), j.dedupId ?? '', j.dedupTtl ?? 0, j.groupMaxSize ?? '');
        rec++;
      }
      perJob.push(j.id, j.name, j.data, rec);
      prev = j;
    }
    const args: Array<string | number> = [ctx.ids ? `${jobs.length}:${ctx.ids.step}:${ctx.ids.offset}` : jobs.length, rec, ...records, ...perJob];
    const r = (await raw.add(ctx, args)) as Array<string | number>;
    const out: Array<{ id: string; created: boolean; groupFull?: true }> = [];
    for (let i = 0; i < r.length; i += 2) {
      const c = Number(r[i + 1]);
      out.push(c === -5 ? { id: '', created: false, groupFull: true } : { id: String(r[i]), created: c === 1 });
    }
    return out;
  },

  async claim(ctx: ScriptContext, a: { count: number; leaseMs: number }): Promise<ClaimReply> {
    return parseClaim(await raw.claim(ctx, [a.count, a.leaseMs])) as ClaimReply;
  },

  /** Settles one job as completed and claims `fetch` more: completeMany for one job. */
  async complete(
    ctx: ScriptContext,
    a: { id: string; token: string; returnValue: string; fetch: number; leaseMs: number; maxEventValueBytes: number },
  ): Promise<ClaimReply | number> {
    const r = await scripts.completeMany(ctx, { ...a, jobs: [a] });
    return r.codes[0] === 1 ? r : r.codes[0]!;
  },

  /**
   * Settles several jobs as completed in one call (at most 1000) and claims `fetch` more.
   * codes[i] is 1 (completed), -1 (no such job) or -2 (stale token) for jobs[i].
   */
  async completeMany(
    ctx: ScriptContext,
    a: { jobs: ReadonlyArray<{ id: string; token: string; returnValue: string }>; fetch: number; leaseMs: number; maxEventValueBytes: number },
  ): Promise<ClaimReply & { codes: number[] }> {
    const args: Array<string | number> = [a.fetch, a.leaseMs, a.maxEventValueBytes];
    for (const j of a.jobs) args.push(j.id, j.token, j.returnValue);
    const r = (await raw.complete(ctx, args)) as unknown[];
    const m = Number(r[2]);
    const codes: number[] = new Array(m);
    for (let i = 0; i < m; i++) codes[i] = Number(r[3 + i]);
    const jobs: ClaimedJob[] = [];
    for (let i = 3 + m; i < r.length; i += 2) jobs.push({ id: String(r[i]), fields: r[i + 1] as string[] });
    return { codes, jobs, wakeInMs: Number(r[1]) };
  },

  async fail(
    ctx: ScriptContext,
    a: { id: string; token: string; reason: string; stack: string; retryDelayMs: number; exhausted: boolean; fetch: number; leaseMs: number },
  ): Promise<ClaimReply | number> {
    return parseClaim(
      await raw.fail(ctx, [a.id, a.token, a.reason, a.stack, a.retryDelayMs, a.fetch, a.leaseMs, a.exhausted ? '1' : '0']),
    );
  },

  /** Returns the ids whose lease could not be renewed. */
  async extendLeases(ctx: ScriptContext, a: { leaseMs: number; jobs: ReadonlyArray<{ id: string; token: string }> }): Promise<string[]> {
    const args: Array<string | number> = [a.leaseMs];
    for (const j of a.jobs) args.push(j.id, j.token);
    return ((await raw.extendLeases(ctx, args)) as unknown[]).map(String);
  },

  async recover(ctx: ScriptContext, a: { maxStalledCount: number; batch: number }): Promise<{ requeued: string[]; failed: string[] }> {
    const [requeued, failed] = (await raw.recover(ctx, [a.maxStalledCount, a.batch])) as [string[], string[]];
    return { requeued, failed };
  },

  promote: async (ctx: ScriptContext, id: string) => Number(await raw.promote(ctx, [id])),
  retry: async (ctx: ScriptContext, id: string, state: 'failed' | 'completed') => Number(await raw.retry(ctx, [id, state])),

  /** Per-id results: 1 removed, -1 missing, -3 active or filtered out. */
  async remove(ctx: ScriptContext, a: { ids: readonly string[]; state?: 'w' | 'd' | 'c' | 'f'; cutoffMs?: number }): Promise<number[]> {
    const r = (await raw.remove(ctx, [a.state ?? '', a.cutoffMs === undefined ? '' : a.cutoffMs, ...a.ids])) as unknown[];
    return r.map(Number);
  },

  changePriority: async (ctx: ScriptContext, a: { id: string; priority: number; lifo: boolean }) =>
    Number(await raw.changePriority(ctx, [a.id, a.priority, a.lifo ? '1' : '0'])),
  moveToLane: async (ctx: ScriptContext, a: { id: string; lane: string }) => Number(await raw.moveToLane(ctx, [a.id, a.lane])),
  pause: async (ctx: ScriptContext, paused: boolean) => Number(await raw.pause(ctx, [paused ? '1' : '0'])),
  pauseLane: async (ctx: ScriptContext, a: { lane: string; paused: boolean }) => Number(await raw.pauseLane(ctx, [a.lane, a.paused ? '1' : '0'])),
  setLane: async (ctx: ScriptContext, a: { lane: string; field: 'weight' | 'limit' | 'rate'; value: string }) =>
    Number(await raw.setLane(ctx, [a.lane, a.field, a.value])),

  async drain(ctx: ScriptContext, a: { budget: number; delayed: boolean; cursor: string; lane?: string }): Promise<{ removed: number; cursor: string; done: boolean }> {
    const [removed, cursor, done] = (await raw.drain(ctx, [a.budget, a.delayed ? '1' : '0', a.cursor, a.lane ?? ''])) as [number, string, number];
    return { removed: Number(removed), cursor: String(cursor), done: Number(done) === 1 };
  },

  async obliterate(ctx: ScriptContext, a: { budget: number; force: boolean }): Promise<{ deleted: number; done: boolean } | number> {
    const [deleted, done] = (await raw.obliterate(ctx, [a.budget, a.force ? '1' : '0'])) as [number, number];
    if (Number(deleted) < 0) return Number(deleted);
    return { deleted: Number(deleted), done: Number(done) === 1 };
  },

  progress: async (ctx: ScriptContext, a: { id: string; progress: string }) => Number(await raw.progress(ctx, [a.id, a.progress])),
  updateData: async (ctx: ScriptContext, a: { id: string; data: string }) => Number(await raw.updateData(ctx, [a.id, a.data])),
  addLog: async (ctx: ScriptContext, a: { id: string; line: string; keep: number }) => Number(await raw.addLog(ctx, [a.id, a.line, a.keep])),
  /** Hands an active job back to ready without counting an attempt: 1, or -1 missing / -2 stale. */
  moveToWait: async (ctx: ScriptContext, a: { id: string; token: string }) => Number(await raw.moveToWait(ctx, [a.id, a.token])),
};
