/**
 * Flow runtime: what workers and jobs need from flows, without the FlowProducer.
 *
 * The cross-queue completion path is eventually consistent and loses nothing:
 *  1. the child's settle script (complete/fail/recover/remove, in the child's queue) writes the
 *     outcome into that queue's `outbox` in the same atomic call;
 *  2. `drainOutbox` (run by the worker right after settling a child whose parent lives in
 *     another queue, and by every worker's periodic sweep) calls `resolveChild.lua` on the
 *     parent's queue, and only then deletes the outbox entry.
 * A crash between 1 and 2 leaves the entry, which the next sweep delivers. Delivering an entry
 * twice is harmless: resolveChild counts a child only while it is pending.
 */
import type { RedisClient } from '../core/connection.js';
import { InvalidStateError, JobNotFoundError } from '../core/errors.js';
import { depsKey, jobKey, queueKeys, type QueueKeys } from '../core/keys.js';
import { resolveParent, type FailurePolicy, type ParentOptions } from '../core/options.js';
import { lifecycleScripts, type ChildOutcome } from '../scripts/lifecycle.js';
import type { AddJobArgs, AddReply, ScriptContext } from '../scripts/index.js';

/** Outbox entries moved per drainOutbox call (one Redis call each, plus one read). */
export const OUTBOX_BATCH = 100;
/** How far a cascade (a failed parent failing its own parent in a third queue) is followed at once. */
const MAX_CASCADE_HOPS = 8;

const CHILD_OUTCOMES: readonly string[] = ['c', 'i', 'f', 'r', 'x', 'd'];

interface OutboxEntry {
  pid: string;
  pk: string;
  pq: string;
  ppx: string;
  c: string;
  k: ChildOutcome;
  v: string;
}

function parseEntry(raw: string): OutboxEntry | undefined {
  try {
    const e = JSON.parse(raw) as Partial<OutboxEntry>;
    if (typeof e.pid !== 'string' || typeof e.pk !== 'string' || typeof e.pq !== 'string' || typeof e.ppx !== 'string'
      || typeof e.c !== 'string' || typeof e.k !== 'string' || !CHILD_OUTCOMES.includes(e.k)) return undefined;
    return { ...e, v: typeof e.v === 'string' ? e.v : '' } as OutboxEntry;
  } catch {
    return undefined;
  }
}

/**
 * Delivers up to `budget` outbox entries of a queue to their parents' queues. Returns how many
 * entries were handled. Entries that cannot be parsed, or whose parent key does not match the
 * queue they name, are dropped (they can only come from a foreign writer).
 */
export async function drainOutbox(client: RedisClient, keys: QueueKeys, budget = OUTBOX_BATCH, hops = 0): Promise<number> {
  const entries = await client.zrange(keys.outbox, 0, budget - 1);
  for (const raw of entries) {
    const e = parseEntry(raw);
    let parentKeys: QueueKeys | undefined;
    if (e) {
      parentKeys = queueKeys(e.pq, e.ppx);
      if (jobKey(parentKeys, e.pid) !== e.pk) parentKeys = undefined;
    }
    if (e && parentKeys) {
      const r = await lifecycleScripts.resolveChild({ client, keys: parentKeys }, { parentId: e.pid, childKey: e.c, kind: e.k, value: e.v });
      // The parent failed and its own parent lives in a third queue: follow the cascade now.
      if (r.outboxWritten && hops < MAX_CASCADE_HOPS) await drainOutbox(client, parentKeys, budget, hops + 1);
    }
    await client.zrem(keys.outbox, raw);
  }
  return entries.length;
}

/**
 * Whether settling a job may have written this queue's outbox: its parent lives in another
 * queue, or (any flow child) a failure cascaded to a parent whose own parent does.
 */
export function mayWriteOutbox(parentKey: string | undefined): boolean {
  return parentKey !== undefined;
}

/** A parent's view of its children (BullMQ's getDependencies shape, plus ignored/failed). */
export interface Dependencies {
  /** Completed children: child job key → return value. */
  processed: Record<string, unknown>;
  /** Children not finished yet (or failed without a policy: they may still be retried). */
  unprocessed: string[];
  /** Children that failed with `ignoreDependencyOnFailure`: child job key → failed reason. */
  ignored: Record<string, string>;
  /** Children that failed with `failParentOnFailure`: child job key → failed reason. */
  failed: Record<string, string>;
  /** Children removed before they finished. */
  removed: string[];
}

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

/** Reads a parent's deps hash (HSCAN in pages, so a huge flow never blocks Redis). */
export async function readDependencies(client: RedisClient, keys: QueueKeys, id: string): Promise<Dependencies> {
  const out: Dependencies = { processed: {}, unprocessed: [], ignored: {}, failed: {}, removed: [] };
  const key = depsKey(keys, id);
  const pending = new Set<string>(); // HSCAN may repeat a field while the hash is resized
  let cursor = '0';
  do {
    const [next, flat] = await client.hscan(key, cursor, 'COUNT', 500);
    cursor = next;
    for (let i = 0; i < flat.length; i += 2) {
      const child = flat[i];
      const v = flat[i + 1];
      const kind = v[0];
      const rest = v.slice(1);
      if (kind === 'p') pending.add(child);
      else if (kind === 'c') out.processed[child] = parseJson(rest);
      else if (kind === 'i') out.ignored[child] = rest;
      else if (kind === 'f') out.failed[child] = rest;
      else if (kind === 'r') out.removed.push(child);
    }
  } while (cursor !== '0');
  out.unprocessed = [...pending];
  return out;
}

/**
 * BullMQ's `parent` option of Queue.add, resolved for the add script: the parent's id, its
 * physical job key, queue name and prefix, the child's failure policy, whether it lives in the
 * adding queue (then add.lua checks it and registers the child atomically), the logical parent
 * key for BullMQ's error text, and the JSON add.lua reads (made once per job options).
 */
export interface ParentArgs {
  id: string;
  key: string;
  queue: string;
  prefix: string;
  policy: FailurePolicy;
  same: boolean;
  /** BullMQ's parent key: `<parent.queue>:<id>`. */
  logicalKey: string;
  json: string;
}

export function parentArgs(parent: ParentOptions, own: QueueKeys, policy: FailurePolicy): ParentArgs {
  const ref = resolveParent(parent, own.prefix);
  const keys = ref.queue === own.queue && ref.prefix === own.prefix ? own : queueKeys(ref.queue, ref.prefix);
  const key = jobKey(keys, ref.id);
  const same = keys.base === own.base;
  return {
    id: ref.id, key, queue: ref.queue, prefix: ref.prefix, policy, same, logicalKey: `${parent.queue}:${parent.id}`,
    json: JSON.stringify({ pid: ref.id, pk: key, pq: ref.queue, ppx: ref.prefix, pol: policy, same: same ? 1 : 0 }),
  };
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

/**
 * Adds jobs of which some name a parent in another queue (another hash slot, so not in the
 * add's own atomic call). Parents before children, as for flows: each such parent is checked
 * (a missing one fails its jobs with BullMQ's error and they are not sent), the children get
 * their generated ids first (one HINCRBY per call), are registered as pending dependencies of
 * their parents (addDependency.lua), and only then added; a child id that turns out to exist
 * already is withdrawn from its parent again. A crash between registration and add leaves the
 * parent waiting for a child that never came, as a crash in the middle of a cross-queue flow
 * does (docs/schedulers-and-flows.md).
 */
export async function registerCrossParents(
  ctx: ScriptContext,
  jobs: readonly AddJobArgs[],
  add: (jobs: readonly AddJobArgs[]) => Promise<AddReply[]>,
): Promise<AddReply[]> {
  const client = ctx.client;
  const cross = (j: AddJobArgs) => j.parent !== undefined && !j.parent.same;
  const parents = [...new Set(jobs.filter(cross).map((j) => j.parent!.key))];
  const exists = await Promise.all(parents.map((k) => client.exists(k)));
  const missing = new Set(parents.filter((_k, i) => exists[i] === 0));
  const errors = new Map<number, Error>();
  const send: AddJobArgs[] = [];
  const sentAt: number[] = [];
  const registered = new Set<number>();
  const needIds = jobs.filter((j) => cross(j) && !missing.has(j.parent!.key) && j.id === '').length;
  let next = needIds > 0 ? (await client.hincrby(ctx.keys.meta, 'id', needIds)) - needIds + 1 : 0;
  const step = ctx.ids?.step ?? 1;
  const offset = ctx.ids?.offset ?? 0;
  const parentCtx = (p: ParentArgs) => ({ client, keys: queueKeys(p.queue, p.prefix) });
  for (let i = 0; i < jobs.length; i++) {
    let j = jobs[i]!;
    const p = j.parent;
    if (p && cross(j)) {
      if (missing.has(p.key)) {
        errors.set(i, missingParentError(p));
        continue;
      }
      if (j.id === '') j = { ...j, id: String((next++ - 1) * step + offset + 1) };
      const r = await lifecycleScripts.addDependency(parentCtx(p), { parentId: p.id, childKey: jobKey(ctx.keys, j.id) });
      if (r === -1) {
        errors.set(i, missingParentError(p));
        continue;
      }
      if (r === 1) registered.add(send.length);
    }
    send.push(j);
    sentAt.push(i);
  }
  const replies = send.length > 0 ? await add(send) : [];
  const out: AddReply[] = jobs.map((_j, i) => ({ id: '', created: false, error: errors.get(i) }));
  for (let k = 0; k < send.length; k++) {
    const j = send[k]!;
    const reply = replies[k]!;
    out[sentAt[k]!] = reply;
    // An existing job was returned, not added: it is no dependency of the parent after all.
    if (!reply.created && registered.has(k)) {
      await lifecycleScripts.resolveChild(parentCtx(j.parent!), { parentId: j.parent!.id, childKey: jobKey(ctx.keys, j.id), kind: 'd', value: '' });
    }
  }
  return out;
}

/**
 * Before a finished child is retried: puts it back among its parent's pending dependencies
 * (BullMQ's job.retry does; the parent itself is not moved back). Done before the retry, so the
 * child's next outcome cannot reach the parent first. Returns an undo for a refused retry.
 */
export async function reopenChild(client: RedisClient, keys: QueueKeys, id: string): Promise<(() => Promise<void>) | undefined> {
  const childKey = jobKey(keys, id);
  const [pid, pq, ppx] = await client.hmget(childKey, 'pid', 'pq', 'ppx');
  if (pid === null || pq === null || ppx === null || pq === '') return undefined;
  const ctx = { client, keys: queueKeys(pq, ppx) };
  const old = await lifecycleScripts.reopenChild(ctx, { parentId: pid, childKey });
  if (old === '') return undefined;
  return async () => {
    await lifecycleScripts.reopenChild(ctx, { parentId: pid, childKey, undo: old });
  };
}
