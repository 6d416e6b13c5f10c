/**
 * A flow parent's children, as Job shows them (BullMQ's getDependencies, getDependenciesCount,
 * getChildrenValues, getIgnoredChildrenFailures, removeChildDependency,
 * removeUnprocessedChildren, remove({ removeChildren })). Plain functions over a JobContext.
 *
 * The parent's `deps:<id>` hash maps each child's job key to a status letter and a value
 * (src/lifecycle/flows.ts, docs/schedulers-and-flows.md): p pending, c<returnvalue> completed,
 * i<reason> failed and ignored, f<reason> failed and failed the parent, r removed. BullMQ keeps
 * four structures instead (processed hash, dependencies set, failed hash, unsuccessful zset);
 * here they are views of the one hash: processed = c, unprocessed = p, ignored = i,
 * failed = f; r (removed) entries appear in none, as a removed child leaves BullMQ's parent.
 * Child keys are shown as BullMQ's logical names `<prefix>:<queue>:<id>` (DESIGN §11).
 */
import type { JobContext } from './job-context.js';
import { depsKey, jobKey, queueKeys, unescapeQueueName, type QueueKeys } from '../core/keys.js';
import { drainOutbox } from './flows.js';
import { lifecycleScripts } from '../scripts/lifecycle.js';
import { jobScripts } from '../scripts/job-scripts.js';
import { scripts } from '../scripts/index.js';
import { parseJson } from './job-json.js';
import * as v from '../core/validate.js';
import { JobField } from '../core/fields.js';
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

/** Splits a physical job key `<prefix>:{<escaped queue>}:job:<id>` into its parts (undefined for anything else). */
export function splitJobKey(key: string): { keys: QueueKeys; id: string } | undefined {
  const open = key.indexOf(':{');
  const close = key.indexOf('}:', open + 2);
  if (open < 0 || close < 0) return undefined;
  const keys = queueKeys(unescapeQueueName(key.slice(open + 2, close)), key.slice(0, open));
  if (!key.startsWith(keys.jobBase)) return undefined;
  return { keys, id: key.slice(keys.jobBase.length) };
}

/** BullMQ's logical name of a job, `<prefix>:<queue>:<id>`, for a physical job key (other strings are kept). */
export function logicalJobKey(key: string): string {
  const p = splitJobKey(key);
  return p ? `${p.keys.prefix}:${p.keys.queue}:${p.id}` : key;
}

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
  const name = logicalJobKey(child);
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
 * Returns whether the child was pending; -1 no such child, -5 no such parent (or none).
 */
export async function removeChildDependency(
  ctx: JobContext, id: string, parent: { id: string; key: string; keys: QueueKeys } | undefined,
): Promise<boolean | -1 | -5> {
  const exists = await ctx.client.exists(jobKey(ctx.keys, id));
  if (!exists) return Code.NOT_FOUND;
  if (!parent) return Code.PARENT_MISSING;
  const r = await lifecycleScripts.resolveChild(contextFor(ctx, parent.keys), { parentId: parent.id, childKey: jobKey(ctx.keys, id), kind: 'r', value: '' });
  if (r.status < 0) return Code.PARENT_MISSING;
  if (r.status === 0) return false;
  const c = await jobScripts.clearParent(ctx, { id, parentKey: parent.key });
  return c === Code.NOT_FOUND ? Code.NOT_FOUND : true;
}

/** Child keys of a parent, pending ones or all that are still there (not removed). */
async function childKeys(ctx: JobContext, id: string, pendingOnly: boolean): Promise<string[]> {
  const out: string[] = [];
  await scanDeps(ctx, id, (child, status) => {
    if (pendingOnly ? status === 'p' : status[0] !== 'r') out.push(child);
  });
  return out;
}

/**
 * Removes a job and then its children, their children and so on (BullMQ's remove with
 * removeChildren). Returns the job's own result: 1 removed, -1 missing, -3 active (nothing
 * removed). Active children are left alone (BullMQ skips locked jobs too).
 */
export async function removeWithChildren(ctx: JobContext, id: string, withChildren: boolean): Promise<number> {
  const children = withChildren ? await childKeys(ctx, id, false) : [];
  const [r] = await scripts.remove(ctx, { ids: [id] });
  if (r !== 1) return r;
  await removeChildKeys(ctx, children);
  // A removed child of a parent in another queue told it through this queue's outbox: deliver
  // that now, so the parent leaves waiting-children when the call returns (as in BullMQ).
  await drainOutbox(ctx.client, ctx.keys);
  return r;
}

async function removeChildKeys(ctx: JobContext, children: string[]): Promise<void> {
  const others = new Map<string, QueueKeys>();
  for (const ck of children) {
    const p = splitJobKey(ck);
    if (!p) continue;
    await removeWithChildren(contextFor(ctx, p.keys), p.id, true);
    if (p.keys.base !== ctx.keys.base) others.set(p.keys.base, p.keys);
  }
  // A removed child in another queue reported 'removed' to its parent through that queue's
  // outbox; deliver it now rather than at the next worker sweep.
  for (const keys of others.values()) await drainOutbox(ctx.client, keys);
}

/**
 * BullMQ's removeUnprocessedChildren: removes the children that have not finished and are not
 * active (waiting, delayed, waiting for their own children; with their own children), so the
 * parent no longer waits for them. Each removal is checked against the state it was read in.
 */
export async function removeUnprocessedChildren(ctx: JobContext, id: string): Promise<void> {
  const pending = await childKeys(ctx, id, true);
  const drained = new Map<string, QueueKeys>();
  for (const ck of pending) {
    const p = splitJobKey(ck);
    if (!p) continue;
    const cctx = contextFor(ctx, p.keys);
    const st = await ctx.client.hget(jobKey(p.keys, p.id), JobField.state);
    if (st !== 'w' && st !== 'd' && st !== 'h') continue;
    const grandchildren = st === 'h' ? await childKeys(cctx, p.id, false) : [];
    const [r] = await scripts.remove(cctx, { ids: [p.id], state: st as 'w' | 'd' });
    if (r !== 1) continue;
    if (grandchildren.length > 0) await removeChildKeys(cctx, grandchildren);
    if (p.keys.base !== ctx.keys.base) drained.set(p.keys.base, p.keys);
  }
  for (const keys of drained.values()) await drainOutbox(ctx.client, keys);
}
