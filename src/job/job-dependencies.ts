/**
 * A flow parent's children, as Job shows them (BullMQ's getDependencies, getDependenciesCount,
 * getChildrenValues, getIgnoredChildrenFailures, removeChildDependency,
 * removeUnprocessedChildren, remove({ removeChildren })). Plain functions over a JobContext.
 *
 * The parent's `deps:<id>` hash maps each child's job key to a status letter and a value
 * (src/job/flows.ts, docs/schedulers-and-flows.md): p pending, c<returnvalue> completed,
 * i<reason> failed and ignored, f<reason> failed and failed the parent, r removed. BullMQ keeps
 * four structures instead (processed hash, dependencies set, failed hash, unsuccessful zset);
 * here they are views of the one hash: processed = c, unprocessed = p, ignored = i,
 * failed = f; r (removed) entries appear in none, as a removed child leaves BullMQ's parent.
 * Child keys are shown as BullMQ's logical names `<prefix>:<queue>:<id>`.
 */
import type { JobContext } from './job-context.js';
import { depsKey, jobKey, logicalJobName, parseJobKey, type QueueKeys } from '../core/keys.js';
import { redisTimeMs } from '../core/values.js';
import { drainOutbox } from './flows.js';
import { lifecycleScripts } from '../scripts/lifecycle.js';
import { jobScripts } from '../scripts/job-scripts.js';
import { scripts } from '../scripts/index.js';
import { parseJson } from './job-json.js';
import * as v from '../core/validate.js';
import { JobField, JobStateCode } from '../core/fields.js';
import { Code } from '../core/errors.js';

/** BullMQ's page options of one kind of child: HSCAN cursor (0 = start) and a count hint (default 20). */
export interface DependencyOpts {
  cursor?: number;
  count?: number;
}

export interface DependenciesOpts {
  failed?: DependencyOpts;
  ignored?: DependencyOpts;
  processed?: DependencyOpts;
  unprocessed?: DependencyOpts;
}

/** BullMQ's getDependencies result; the next…Cursor fields come only with paging options (0 = done). */
export interface JobDependencies {
  processed?: Record<string, any>;
  nextProcessedCursor?: number;
  unprocessed?: string[];
  nextUnprocessedCursor?: number;
  ignored?: Record<string, any>;
  nextIgnoredCursor?: number;
  failed?: string[];
  nextFailedCursor?: number;
}

export interface DependencyCounts {
  processed?: number;
  unprocessed?: number;
  ignored?: number;
  failed?: number;
}

type Kind = 'processed' | 'unprocessed' | 'ignored' | 'failed';
const LETTER: Record<Kind, string> = { processed: 'c', unprocessed: 'p', ignored: 'i', failed: 'f' };
const KINDS: Kind[] = ['processed', 'unprocessed', 'ignored', 'failed'];
/** HSCAN page size when reading a whole deps hash. */
const SCAN_COUNT = 500;

/** The context of another queue on the same connection. */
function contextFor(ctx: JobContext, keys: QueueKeys): JobContext {
  return keys.base === ctx.keys.base ? ctx : { client: ctx.client, keys, maxPayloadBytes: ctx.maxPayloadBytes, keepLogs: ctx.keepLogs };
}

/** Calls fn(childKey, status) for every entry of a deps hash, in HSCAN pages (a repeated field is seen once). */
async function scanDeps(ctx: JobContext, id: string, fn: (child: string, status: string) => void): Promise<void> {
  const key = depsKey(ctx.keys, id);
  const seen = new Set<string>();
  let cursor = '0';
  do {
    const [next, flat] = await ctx.client.hscan(key, cursor, 'COUNT', SCAN_COUNT);
    cursor = next;
    for (let i = 0; i < flat.length; i += 2) {
      if (seen.has(flat[i])) continue;
      seen.add(flat[i]);
      fn(flat[i], flat[i + 1]);
    }
  } while (cursor !== '0');
}

function add(out: JobDependencies, kind: Kind, child: string, status: string): void {
  const name = logicalJobName(child);
  if (kind === 'processed') (out.processed ??= {})[name] = parseJson(status.slice(1));
  else if (kind === 'ignored') (out.ignored ??= {})[name] = status.slice(1);
  else (out[kind] ??= []).push(name);
}

function pageOpts(field: string, o: unknown): { cursor: number; count: number } {
  const p = v.plainObject(field, o);
  return {
    cursor: p.cursor === undefined ? 0 : v.nonNegativeInt(`${field}.cursor`, p.cursor),
    count: p.count === undefined ? 20 : v.positiveInt(`${field}.count`, p.count),
  };
}

/**
 * BullMQ's getDependencies. Without paging options: every child by kind. With them: one HSCAN
 * page of the deps hash per kind asked for (cursor and count as given, count 20 by default),
 * filtered to that kind, with its next cursor (0 when the scan is done). As with BullMQ on
 * Redis 7.2+, a small hash comes back whole whatever the count; a page may hold fewer entries
 * of a kind than `count` (the hash holds every kind).
 */
export async function getDependencies(ctx: JobContext, id: string, opts: DependenciesOpts = {}): Promise<JobDependencies> {
  const o = v.plainObject('opts', opts) as DependenciesOpts;
  const asked = KINDS.filter((k) => o[k]);
  if (asked.length === 0) {
    const out: JobDependencies = { processed: {}, unprocessed: [], failed: [], ignored: {} };
    await scanDeps(ctx, id, (child, status) => {
      const kind = KINDS.find((k) => LETTER[k] === status[0]);
      if (kind) add(out, kind, child, status);
    });
    return out;
  }
  const pages = asked.map((k) => [k, pageOpts(`opts.${k}`, o[k])] as const);
  const key = depsKey(ctx.keys, id);
  const replies = await Promise.all(pages.map(([, p]) => ctx.client.hscan(key, p.cursor, 'COUNT', p.count)));
  const out: JobDependencies = {};
  pages.forEach(([kind], i) => {
    const [next, flat] = replies[i];
    if (kind === 'processed') out.processed = {};
    else if (kind === 'ignored') out.ignored = {};
    else out[kind] = [];
    for (let j = 0; j < flat.length; j += 2) if (flat[j + 1][0] === LETTER[kind]) add(out, kind, flat[j], flat[j + 1]);
    const cursorField = `next${kind[0].toUpperCase()}${kind.slice(1)}Cursor` as
      'nextProcessedCursor' | 'nextUnprocessedCursor' | 'nextIgnoredCursor' | 'nextFailedCursor';
    out[cursorField] = Number(next);
  });
  return out;
}

/** BullMQ's getDependenciesCount: the kinds set to true (all four when none is), each counted. */
export async function getDependenciesCount(ctx: JobContext, id: string, opts: Partial<Record<Kind, boolean>> = {}): Promise<DependencyCounts> {
  const o = v.plainObject('opts', opts);
  const asked = KINDS.filter((k) => o[k]);
  const kinds = asked.length > 0 ? asked : KINDS;
  const counts: DependencyCounts = {};
  for (const k of kinds) counts[k] = 0;
  await scanDeps(ctx, id, (_child, status) => {
    const kind = kinds.find((k) => LETTER[k] === status[0]);
    if (kind) counts[kind]! += 1;
  });
  return counts;
}

/** Completed children → return value (processed) or ignored failures → reason, by logical name. */
export async function childrenOf(ctx: JobContext, id: string, kind: 'processed' | 'ignored'): Promise<Record<string, any>> {
  const out: JobDependencies = {};
  await scanDeps(ctx, id, (child, status) => {
    if (status[0] === LETTER[kind]) add(out, kind, child, status);
  });
  return out[kind] ?? {};
}

/**
 * BullMQ's removeChildDependency: the parent stops waiting for this child if it is still
 * pending there (the parent may become ready), then the child forgets its parent. Two calls
 * when the parent lives in another queue (another hash slot): a crash in between leaves a
 * child that names a parent which no longer waits for it, and its outcome then changes nothing.
 * Returns whether the child was pending; Code.NOT_FOUND no such child, Code.MISSING_PARENT no such parent (or none).
 */
export async function removeChildDependency(
  ctx: JobContext, id: string, parent: { id: string; key: string; keys: QueueKeys } | undefined,
): Promise<boolean | typeof Code.NOT_FOUND | typeof Code.MISSING_PARENT> {
  const exists = await ctx.client.exists(jobKey(ctx.keys, id));
  if (!exists) return Code.NOT_FOUND;
  if (!parent) return Code.MISSING_PARENT;
  const r = await lifecycleScripts.resolveChild(contextFor(ctx, parent.keys), { parentId: parent.id, childKey: jobKey(ctx.keys, id), kind: 'r', value: '' });
  if (r.status < 0) return Code.MISSING_PARENT;
  if (r.status === 0) return false;
  const c = await jobScripts.clearParent(ctx, { id, parentKey: parent.key });
  return c === Code.NOT_FOUND ? Code.NOT_FOUND : true;
}

/** A parent's children (in any queue) that are still there; `pendingOnly`: those it still waits for. */
async function childJobs(ctx: JobContext, id: string, pendingOnly: boolean): Promise<Array<{ keys: QueueKeys; id: string }>> {
  const out: Array<{ keys: QueueKeys; id: string }> = [];
  await scanDeps(ctx, id, (child, status) => {
    if (pendingOnly ? status !== 'p' : status[0] === 'r') return;
    const p = parseJobKey(child);
    if (p) out.push({ keys: p.keys, id: p.id });
  });
  return out;
}

/** Whether a job, or with `children` a job it waits for (recursively), is active under a live lease. */
export async function isHeld(ctx: JobContext, id: string, children: boolean, depth = 0): Promise<boolean> {
  // Once the lease expired nobody holds the job and it can be removed, as BullMQ removes an
  // active job whose lock is gone (lib/removal.lua).
  const { keys } = ctx;
  const reply = await ctx.client.multi().hget(jobKey(keys, id), JobField.state).zscore(keys.active, id).time().exec();
  const [[, st], [, deadline], [, time]] = reply as [[unknown, string | null], [unknown, string | null], [unknown, [string, string]]];
  if (st === JobStateCode.active && (deadline === null || Number(deadline) >= redisTimeMs(time))) return true;
  if (!children || depth > MAX_DEPTH) return false;
  for (const c of await childJobs(ctx, id, true)) {
    if (await isHeld(contextFor(ctx, c.keys), c.id, true, depth + 1)) return true;
  }
  return false;
}

/** Levels of a flow tree that a removal descends (a bound, not a limit any real flow meets). */
const MAX_DEPTH = 64;

/**
 * Queue.remove and Job.remove: deletes a job and, with `withChildren`, its children in every
 * queue, level by level. Returns 1 removed, -1 missing, -3 when the job or a child it waits for
 * is held (nothing removed). The job goes first, so no child's removal makes it ready on the
 * way; an active child found later stays (BullMQ skips locked jobs too).
 */
export async function removeWithChildren(ctx: JobContext, id: string, withChildren: boolean): Promise<number> {
  if (await isHeld(ctx, id, withChildren)) return Code.BAD_STATE;
  const children = withChildren ? await childJobs(ctx, id, false) : [];
  const [r] = await scripts.remove(ctx, { ids: [id] });
  if (r !== 1) return r;
  await removeDescendants(ctx, children);
  return r;
}

/** Removes the given jobs and their descendants, then delivers what they told parents in other queues. */
async function removeDescendants(ctx: JobContext, level: Array<{ keys: QueueKeys; id: string }>, touched: QueueKeys[] = []): Promise<void> {
  const queues = new Map<string, QueueKeys>([ctx.keys, ...touched].map((k) => [k.base, k]));
  for (let depth = 0; level.length > 0 && depth < MAX_DEPTH; depth++) {
    const next: Array<{ keys: QueueKeys; id: string }> = [];
    for (const c of level) {
      const cctx = contextFor(ctx, c.keys);
      const below = await childJobs(cctx, c.id, false);
      const [r] = await scripts.remove(cctx, { ids: [c.id] });
      if (r === 1) next.push(...below);
      queues.set(c.keys.base, c.keys);
    }
    level = next;
  }
  // A removed child told its parent through its queue's outbox: deliver that now, so a parent
  // in another queue leaves waiting-children when the call returns (as in BullMQ).
  for (const keys of queues.values()) await drainOutbox(ctx.client, keys);
}

/**
 * BullMQ's removeUnprocessedChildren: removes the children that have not finished and are not
 * active (waiting, delayed, waiting for their own children; with their own children), so the
 * parent no longer waits for them. Each removal is checked against the state it was read in.
 */
export async function removeUnprocessedChildren(ctx: JobContext, id: string): Promise<void> {
  const grandchildren: Array<{ keys: QueueKeys; id: string }> = [];
  const touched: QueueKeys[] = [];
  for (const c of await childJobs(ctx, id, true)) {
    const cctx = contextFor(ctx, c.keys);
    const st = await ctx.client.hget(jobKey(c.keys, c.id), JobField.state);
    if (st !== JobStateCode.ready && st !== JobStateCode.delayed && st !== JobStateCode.waitingChildren) continue;
    const below = st === JobStateCode.waitingChildren ? await childJobs(cctx, c.id, false) : [];
    const [r] = await scripts.remove(cctx, { ids: [c.id], state: st as 'w' | 'd' });
    if (r !== 1) continue;
    grandchildren.push(...below);
    touched.push(c.keys);
  }
  await removeDescendants(ctx, grandchildren, touched);
}
