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
import { depsKey, jobKey, queueKeys, type QueueKeys } from '../core/keys.js';
import { resolveParent, type FailurePolicy, type ParentOptions } from '../core/options.js';
import { lifecycleScripts, type ChildOutcome } from '../scripts/lifecycle.js';
import type { ParentArgs } from '../scripts/args.js';
import { parseJson } from '../core/values.js';
import { JobField } from '../core/fields.js';

export type { ParentArgs } from '../scripts/args.js';

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

export function parentArgs(parent: ParentOptions, own: QueueKeys, policy: FailurePolicy): ParentArgs {
  const ref = resolveParent(parent, own.prefix);
  const keys = ref.queue === own.queue && ref.prefix === own.prefix ? own : queueKeys(ref.queue, ref.prefix);
  const key = jobKey(keys, ref.id);
  const same = keys.base === own.base;
  return {
    id: ref.id, key, queue: ref.queue, prefix: ref.prefix, policy, same, logicalKey: `${parent.queue}:${parent.id}`,
    // add.lua's parent record: the job hash's parent fields, plus `same` (docs/protocol.md, add)
    json: JSON.stringify({ [JobField.parentId]: ref.id, [JobField.parentKey]: key, [JobField.parentQueue]: ref.queue, [JobField.parentPrefix]: ref.prefix, [JobField.parentPolicy]: policy, same: same ? 1 : 0 }),
  };
}

/**
 * Before a finished child is retried: puts it back among its parent's pending dependencies
 * (BullMQ's job.retry does; the parent itself is not moved back). Done before the retry, so the
 * child's next outcome cannot reach the parent first. Returns an undo for a refused retry.
 */
export async function reopenChild(client: RedisClient, keys: QueueKeys, id: string): Promise<(() => Promise<void>) | undefined> {
  const childKey = jobKey(keys, id);
  const [pid, pq, ppx] = await client.hmget(childKey, JobField.parentId, JobField.parentQueue, JobField.parentPrefix);
  if (pid === null || pq === null || ppx === null || pq === '') return undefined;
  const ctx = { client, keys: queueKeys(pq, ppx) };
  const old = await lifecycleScripts.reopenChild(ctx, { parentId: pid, childKey });
  if (old === '') return undefined;
  return async () => {
    await lifecycleScripts.reopenChild(ctx, { parentId: pid, childKey, undo: old });
  };
}
