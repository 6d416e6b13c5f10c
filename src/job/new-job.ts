/**
 * The one new-job path of every producer (Queue.add/addBulk, Job.create/createBulk/addJob,
 * FlowProducer, job schedulers, ShardedQueue): validation, encoding, size check, stored options
 * and parent resolution (`newJob`); the hash the add writes (`newJobHash`, as lib/newjob.lua),
 * so a producer returns its Job without reading it back; and the add itself (`addJobs`).
 */
import { JobField } from '../core/fields.js';
import type { QueueKeys } from '../core/keys.js';
import {
  checkSizeLimit, normalizeJobOptions, storedOptions, DEFAULT_KEEP_COUNT, type JobOptions, type NormalizedJobOptions,
} from '../core/options.js';
import * as v from '../core/validate.js';
import { scripts, type AddJobArgs, type AddReply } from '../scripts/index.js';
import type { NewJobArgs, ParentArgs } from '../scripts/args.js';
import type { ScriptContext } from '../scripts/runner.js';
import { registerCrossParents } from './cross-parents.js';
import { parentArgs } from './flows.js';

/**
 * Most jobs per add-script call; bigger bulks are split (one round trip per batch). An add
 * costs Redis ~10–20 µs a job, so 100 keeps every call near 2 ms (test/reliability-bounded).
 */
export const ADD_BATCH = 100;

/**
 * Splits an add into script calls of at most ADD_BATCH jobs, counting each lane a call touches
 * as one job more: a job that opens a lane costs Redis about twice a job of a known lane
 * (registry, ring entry), so 100 jobs into 100 new lanes would take ~5 ms a call; 50 take half.
 */
export function addBatches<J extends { lane: string }>(jobs: readonly J[]): J[][] {
  const out: J[][] = [];
  let batch: J[] = [];
  let lanes = new Set<string>();
  for (const j of jobs) {
    const opens = !lanes.has(j.lane);
    if (batch.length > 0 && batch.length + lanes.size + (opens ? 2 : 1) > ADD_BATCH + 1) {
      out.push(batch);
      batch = [];
      lanes = new Set();
    }
    batch.push(j);
    lanes.add(j.lane);
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

/** A new job validated and encoded: the add script's arguments and the normalised options they came from. */
export interface NewJob {
  args: AddJobArgs;
  n: NormalizedJobOptions;
}

/** A job's options over a queue's defaultJobOptions (ShardedQueue routes by the lane of the same merge). */
export const withDefaults = (defaults: JobOptions | undefined, opts: unknown): JobOptions | undefined =>
  (defaults ? { ...defaults, ...((opts as JobOptions | undefined) ?? {}) } : opts) as JobOptions | undefined;

/**
 * Validates and encodes one job. `defaults` (a queue's defaultJobOptions) lie under `opts`;
 * `field` prefixes the field names of errors ('' or 'jobs[3].'). Throws before anything is written.
 */
export function newJob(
  keys: QueueKeys, maxPayloadBytes: number, name: unknown, data: unknown, opts: unknown,
  defaults: JobOptions | undefined, field = '', telemetry?: object,
): NewJob {
  v.string(`${field}name`, name);
  const merged = withDefaults(defaults, opts);
  const n = normalizeJobOptions(merged, `${field}opts`);
  const json = v.encodeJson(`${field}data`, data, maxPayloadBytes);
  if (n.sizeLimit !== undefined) checkSizeLimit(n, name as string, json, `${field}data`);
  const args: AddJobArgs = {
    id: n.jobId ?? '', name: name as string, data: json, opts: storedOptions(merged, n, telemetry),
    priority: n.priority, lane: n.lane, delay: n.delay, lifo: n.lifo, keepCompleted: n.keepCompleted, keepFailed: n.keepFailed,
    dedupId: n.deduplication?.id, dedupTtl: n.deduplication?.ttl, groupMaxSize: n.groupMaxSize,
  };
  if (n.deduplication?.mode) args.dedupMode = n.deduplication.mode;
  if (n.timestamp !== undefined) args.timestamp = n.timestamp;
  if (n.parent) args.parent = parentArgs(n.parent, keys, n.policy);
  return { args, n };
}

/** A new job's parent as its hash holds it (a flow's parent in the tree has the same fields). */
export type NewJobParent = Pick<ParentArgs, 'id' | 'key' | 'queue' | 'prefix'> & { policy?: string };

/**
 * The hash an add (lib/newjob.lua) writes for a new job, in state `st` ('w', 'd', or 'h' for a
 * flow parent); the creation time is the given one or the caller's clock (the script uses the server's).
 */
export function newJobHash(a: NewJobArgs & { timestamp?: number }, st: string, parent?: NewJobParent): Record<string, string> {
  const h: Record<string, string> = {
    [JobField.name]: a.name, [JobField.data]: a.data, [JobField.opts]: a.opts, [JobField.priority]: String(a.priority),
    [JobField.lane]: a.lane, [JobField.delay]: String(a.delay), [JobField.attemptsStarted]: '0', [JobField.attemptsMade]: '0',
    [JobField.timestamp]: String(a.timestamp ?? Date.now()), [JobField.state]: st,
  };
  if (a.lifo) h[JobField.lifo] = '1';
  // Retention as the hash holds it (Job shows it as removeOnComplete / removeOnFail).
  const [kc, ka] = a.keepCompleted;
  const [kfc, kfa] = a.keepFailed;
  if (kc !== DEFAULT_KEEP_COUNT) h[JobField.keepCompletedCount] = String(kc);
  if (ka > 0) h[JobField.keepCompletedAge] = String(ka);
  if (kfc !== DEFAULT_KEEP_COUNT) h[JobField.keepFailedCount] = String(kfc);
  if (kfa > 0) h[JobField.keepFailedAge] = String(kfa);
  if (parent) {
    h[JobField.parentId] = parent.id;
    h[JobField.parentKey] = parent.key;
    h[JobField.parentQueue] = parent.queue;
    h[JobField.parentPrefix] = parent.prefix;
    if (parent.policy) h[JobField.parentPolicy] = parent.policy;
  }
  return h;
}

/** The hash of a job a plain add just created. */
export const addedJobHash = (a: AddJobArgs): Record<string, string> => newJobHash(a, a.delay > 0 ? 'd' : 'w', a.parent);

/**
 * Adds jobs in one add-script call. Jobs whose parent lives in another queue (another hash
 * slot) are first registered with their parents (cross-parents.ts); the rest is a plain add.
 */
export function addJobs(ctx: ScriptContext, jobs: readonly AddJobArgs[]): Promise<AddReply[]> {
  for (const j of jobs) {
    if (j.parent && !j.parent.same) return registerCrossParents(ctx, jobs, (js) => scripts.add(ctx, js));
  }
  return scripts.add(ctx, jobs);
}
