/**
 * Plain helpers of Job (src/job/job.ts): reading the stored hash's values, and BullMQ's JSON shapes
 * of a job (toJSON, asJSON, the JobJson that fromJSON takes, optsFromJSON).
 */
import { isClient, type RedisClient } from '../core/redis-connection.js';
import { EchoError, ErrorCodes } from '../core/errors.js';
import type { JobContext } from './job-context.js';
import { DEFAULT_PREFIX, queueKeys } from '../core/keys.js';
import { DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, DEFAULT_LANE, DEFAULT_MAX_PAYLOAD, type JobOptions, type KeepJobs } from '../core/options.js';
import { JobField } from '../core/fields.js';
import { parseJson } from '../core/values.js';

export { parseJson } from '../core/values.js';

/** BullMQ's parent reference of a child job: the parent's id and its queue's logical name `<prefix>:<queue>`. */
export interface ParentKeys {
  id?: string;
  queueKey: string;
  /** failParentOnFailure */
  fpof?: boolean;
  /** removeDependencyOnFailure */
  rdof?: boolean;
  /** ignoreDependencyOnFailure */
  idof?: boolean;
  /** continueParentOnFailure */
  cpof?: boolean;
}

/**
 * BullMQ's JobJson: a job as asJSON() gives it and fromJSON() takes it. data, returnvalue,
 * stacktrace and failedReason are JSON-encoded strings, the rest decoded values.
 */
export interface JobJson {
  id: string;
  name: string;
  data: string;
  opts: JobOptions;
  progress: unknown;
  attemptsMade: number;
  attemptsStarted: number;
  finishedOn?: number;
  processedOn?: number;
  timestamp: number;
  delay?: number;
  priority?: number;
  failedReason: string;
  stacktrace?: string;
  returnvalue: string;
  parent?: ParentKeys;
  parentKey?: string;
  repeatJobKey?: string;
  debounceId?: string;
  deduplicationId?: string;
  deferredFailure?: string;
  processedBy?: string;
  stalledCounter: number;
  /** echomq: the job's lane (absent = the default lane). */
  lane?: string;
}

/** JobJson plus the queue's names, as BullMQ hands a job to a sandboxed processor. */
export type JobJsonSandbox = JobJson & { queueName: string; queueQualifiedName: string; prefix: string };


export const num = (s: string | undefined): number | undefined => (s === undefined || s === '' ? undefined : Number(s));

/**
 * A retention option as job.opts shows it, from the hash's count/age fields (absent = the
 * default, shown as nothing): true = keep none, false = keep all, n = keep the newest n,
 * { age (s), count? } with an age limit.
 */
export function retentionOption(count: string | undefined, ageMs: string | undefined, dflt: KeepJobs): KeepJobs | boolean | number | undefined {
  const age = num(ageMs);
  if (age !== undefined && age > 0) {
    const c = num(count) ?? dflt.count; // an absent count is the default one
    return c === undefined || c < 0 ? { age: age / 1000 } : { age: age / 1000, count: c };
  }
  if (count === undefined || count === '') return undefined;
  const c = Number(count);
  return c === 0 ? true : c < 0 ? false : c;
}

/** BullMQ's short names of stored options (its optsDecodeMap), decoded by optsFromJSON. */
const OPTS_DECODE: Record<string, string> = {
  de: 'deduplication',
  fpof: 'failParentOnFailure',
  cpof: 'continueParentOnFailure',
  idof: 'ignoreDependencyOnFailure',
  kl: 'keepLogs',
  rdof: 'removeDependencyOnFailure',
};

/**
 * Options from their stored JSON in BullMQ's compact form (Job.optsFromJSON): short names
 * expanded, `tm`/`omc` gathered under `telemetry`. '' or undefined gives {}.
 */
export function optsFromJSON(rawOpts?: string, optsDecode: Record<string, string> = OPTS_DECODE): JobOptions {
  const stored = JSON.parse(rawOpts || '{}') as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, value] of Object.entries(stored)) {
    const long = optsDecode[k];
    if (long) out[long] = value;
    else if (k === 'tm') out.telemetry = { ...(out.telemetry as object), metadata: value };
    else if (k === 'omc') out.telemetry = { ...(out.telemetry as object), omitContext: value };
    else out[k] = value;
  }
  return out as JobOptions;
}

/** Drops the keys whose value is undefined (BullMQ's asJSON leaves them out). */
export function definedOnly<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/** BullMQ's stored stacktrace: a JSON array of strings, anything else gives []. */
export function traces(s: string | undefined): string[] {
  if (!s) return [];
  try {
    const t = JSON.parse(s) as unknown;
    return Array.isArray(t) ? (t as string[]) : [];
  } catch {
    return [];
  }
}

/** A stored return value: its JSON decoded, undefined when it is not JSON (BullMQ logs and drops it). */
export function returnValue(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

/**
 * The Job context of a BullMQ MinimalQueue-shaped object (`name`, and `qualifiedName` or
 * `toKey`) that is not an echomq Queue or Worker: BullMQ builds Jobs on any such object
 * (`new Job(queue, …)`, `Job.fromJSON(queue, json)`), so echomq does too. The job's fields work;
 * a call that needs Redis uses the object's `client` when it is an ioredis client, and
 * otherwise fails with ERR_NO_CONNECTION naming the queue. Undefined for anything else.
 */
export function minimalQueueContext(queue: unknown): JobContext | undefined {
  if (typeof queue !== 'object' || queue === null) return undefined;
  const q = queue as { name?: unknown; qualifiedName?: unknown; toKey?: unknown; opts?: { prefix?: unknown } | null; client?: unknown };
  if (typeof q.name !== 'string' || q.name === '') return undefined;
  if (typeof q.qualifiedName !== 'string' && typeof q.toKey !== 'function') return undefined;
  const suffix = `:${q.name}`;
  const prefix = typeof q.qualifiedName === 'string' && q.qualifiedName.endsWith(suffix) && q.qualifiedName.length > suffix.length
    ? q.qualifiedName.slice(0, -suffix.length)
    : typeof q.opts?.prefix === 'string' && q.opts.prefix !== '' ? q.opts.prefix : DEFAULT_PREFIX;
  const name = q.name;
  const client = isClient(q.client) ? q.client : (new Proxy({}, {
    get(_t, prop) {
      if (typeof prop === 'symbol' || prop === 'then') return undefined;
      return () => {
        throw new EchoError(ErrorCodes.NO_CONNECTION, `the job's queue ${JSON.stringify(name)} is not an echomq Queue or Worker and has no ioredis client: it cannot reach Redis (${String(prop)})`);
      };
    },
  }) as RedisClient);
  return { client, keys: queueKeys(name, prefix), maxPayloadBytes: DEFAULT_MAX_PAYLOAD, keepLogs: 0 };
}

/**
 * A job's options as BullMQ shows them (job.opts), from its hash: the stored JSON plus the
 * options that have fields of their own (priority as added, lane, delay as added, lifo,
 * retention), which are not stored twice.
 */
export function storedJobOptions(h: Record<string, string>): JobOptions {
  // attempts is stored when not 1, and the options the hash has fields for are not stored
  // (options.ts storedOptions): job.opts shows them like BullMQ's.
  const o: JobOptions = { attempts: 0, ...(parseJson(h[JobField.opts]) as JobOptions | undefined) };
  // The priority given at add (opr, kept by changePriority.lua), as BullMQ's opts show it.
  const givenPrio = h[JobField.priorityAdded] ?? h[JobField.priority];
  if (givenPrio !== undefined && givenPrio !== '0') o.priority = Number(givenPrio);
  if (h[JobField.lane] !== undefined && h[JobField.lane] !== DEFAULT_LANE) o.lane = h[JobField.lane];
  const added = h[JobField.delayAdded] ?? h[JobField.delay];
  if (added !== undefined && added !== '0') o.delay = Number(added);
  if (h[JobField.lifo] === '1') o.lifo = true;
  const keepDone = retentionOption(h[JobField.keepCompletedCount], h[JobField.keepCompletedAge], DEFAULT_KEEP_COMPLETED);
  if (keepDone !== undefined) o.removeOnComplete = keepDone;
  const keepFailed = retentionOption(h[JobField.keepFailedCount], h[JobField.keepFailedAge], DEFAULT_KEEP_FAILED);
  if (keepFailed !== undefined) o.removeOnFail = keepFailed;
  return o;
}

/** BullMQ's parentKey and parent of a child job, from its hash (which has a parent id). */
export function storedParent(h: Record<string, string>): { parentKey: string; parent: ParentKeys } {
  const id = h[JobField.parentId]!;
  const queueKey = `${h[JobField.parentPrefix]}:${h[JobField.parentQueue]}`;
  const policy = h[JobField.parentPolicy];
  const parent: ParentKeys = policy === 'f' ? { id, queueKey, fpof: true } : policy === 'i' ? { id, queueKey, idof: true } : { id, queueKey };
  return { parentKey: `${queueKey}:${id}`, parent };
}

/**
 * The state fields of a Job rebuilt from BullMQ's JobJson (Job.fromJSON): what the JSON gives,
 * with BullMQ's defaults for the counters; fields it leaves out keep the constructor's values.
 */
export function jobStateFromJson(j: JobJson): Record<string, unknown> {
  const out: Record<string, unknown> = {
    progress: j.progress ?? 0, delay: j.delay, priority: j.priority, timestamp: j.timestamp,
    attemptsStarted: j.attemptsStarted ?? 0, attemptsMade: j.attemptsMade ?? 0, stalledCounter: j.stalledCounter ?? 0,
    stacktrace: traces(j.stacktrace), parentKey: j.parentKey || undefined, parent: j.parent || undefined,
  };
  if (j.lane) out.lane = j.lane;
  if (j.finishedOn) out.finishedOn = j.finishedOn;
  if (j.processedOn) out.processedOn = j.processedOn;
  if (j.repeatJobKey) out.repeatJobKey = j.repeatJobKey;
  if (j.deduplicationId || j.debounceId) out.deduplicationId = j.deduplicationId || j.debounceId;
  if (j.failedReason) out.failedReason = j.failedReason;
  if (j.deferredFailure) out.deferredFailure = j.deferredFailure;
  if (typeof j.returnvalue === 'string') out.returnvalue = returnValue(j.returnvalue);
  if (j.processedBy) out.processedBy = j.processedBy;
  return out;
}

/** BullMQ's toJSON fields in its order, plus echomq's `lane`. */
const TO_JSON_FIELDS = [
  'name', 'data', 'opts', 'id', 'progress', 'returnvalue', 'stacktrace', 'delay', 'priority', 'attemptsStarted', 'attemptsMade',
  'stalledCounter', 'repeatJobKey', 'timestamp', 'parentKey', 'parent', 'deduplicationId', 'queueQualifiedName', 'failedReason',
  'finishedOn', 'processedOn', 'processedBy', 'deferredFailure', 'token', 'lane',
] as const;

/** Job.toJSON: every field, data decoded, undefined ones kept (BullMQ's). */
export function jobToJSON(job: Partial<Record<(typeof TO_JSON_FIELDS)[number], unknown>>): Record<string, any> {
  const out: Record<string, any> = {};
  for (const k of TO_JSON_FIELDS) out[k] = job[k];
  return out;
}

type AsJsonField = 'id' | 'name' | 'opts' | 'parent' | 'parentKey' | 'progress' | 'attemptsMade' | 'attemptsStarted' | 'stalledCounter'
  | 'finishedOn' | 'processedOn' | 'timestamp' | 'failedReason' | 'stacktrace' | 'deduplicationId' | 'repeatJobKey' | 'returnvalue';

/** Job.asJSON: BullMQ's storage shape (JobJson); `data` is the job's data as JSON (job.ts holds it raw until read). */
export function jobAsJSON(j: { [K in AsJsonField]?: any }, data: string): JobJson {
  return definedOnly({
    id: j.id, name: j.name, data,
    opts: j.opts, parent: j.parent ? { ...j.parent } : undefined, parentKey: j.parentKey, progress: j.progress,
    attemptsMade: j.attemptsMade, attemptsStarted: j.attemptsStarted, stalledCounter: j.stalledCounter,
    finishedOn: j.finishedOn, processedOn: j.processedOn, timestamp: j.timestamp,
    failedReason: JSON.stringify(j.failedReason), stacktrace: JSON.stringify(j.stacktrace),
    deduplicationId: j.deduplicationId, repeatJobKey: j.repeatJobKey, returnvalue: JSON.stringify(j.returnvalue),
  }) as unknown as JobJson;
}
