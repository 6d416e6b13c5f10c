/**
 * Job options: the public shape (BullMQ 6's JobsOptions plus `lane`) and its validation into
 * the form the add script stores. Every option BullMQ takes is accepted; what it means on
 * echomq is documented per field (docs/migrating-from-bullmq.md lists the no-ops).
 */
import { normalizeBackoff, type BackoffOptions } from './backoff.js';
import * as v from './validate.js';
import { parseQualifiedName } from './keys.js';

/**
 * Retention of finished jobs, as in BullMQ: `age` in seconds, `count` jobs; `limit` (BullMQ:
 * most jobs removed per cleanup) is accepted — echomq trims at most 16 jobs per finish anyway.
 */
export interface KeepJobs {
  age?: number;
  count?: number;
  limit?: number;
}

/** BullMQ's parent reference: the parent's id and its queue's logical name `<prefix>:<queue>`. */
export interface ParentOptions {
  id: string;
  queue: string;
}

export interface JobOptions {
  /** Lower runs first; integer 0…2,097,151. Default 0. */
  priority?: number;
  /** Lane (tenant) the job belongs to. Default: the queue's default lane, `'default'`. */
  lane?: string;
  /** Milliseconds to wait before the job becomes ready. Default 0 (a negative delay is 0, as in BullMQ). */
  delay?: number;
  /** Custom id; adding an id that exists returns the existing job unchanged. Not an integer. */
  jobId?: string;
  /** Total attempts including the first. Default 1 (0 means 1, as in BullMQ). */
  attempts?: number;
  /** Delay between attempts: ms (fixed) or `{ type, delay, jitter }`. Default none (0). */
  backoff?: number | BackoffOptions;
  /** Put the job at the front of its priority tier instead of the back. Default false. */
  lifo?: boolean;
  /** true deletes at once, a number keeps that many, `{ age, count }`. Default: keep all (BullMQ's default). */
  removeOnComplete?: boolean | number | KeepJobs;
  /** Like removeOnComplete for failed jobs. Default: keep all. */
  removeOnFail?: boolean | number | KeepJobs;
  /**
   * Deduplication (docs/events.md#deduplication). `{ id }`: while a job added with this id is
   * waiting, delayed or active, adding another returns that job and creates none.
   * `{ id, ttl }` (throttle, ms): for ttl ms after the first add, whatever that job does.
   * `extend`, `replace`, `reschedule`, `keepLastIfActive`: BullMQ's modes.
   */
  deduplication?: DeduplicationOptions;
  /** Creation time (ms) the job reports as `timestamp`. Default: the Redis server clock at the add. */
  timestamp?: number;
  /** Most stack trace lines kept for the job (stored with its options). */
  stackTraceLimit?: number;
  /** Largest JSON encoding of `data` in bytes for this job (BullMQ's text when exceeded). */
  sizeLimit?: number;
  /** Most log entries kept for the job (stored with its options). */
  keepLogs?: number;
  /** The job's parent: it waits for this job as for a flow child (src/job/flows.ts). */
  parent?: ParentOptions;
  /** When this child fails for good, its parent fails at once. */
  failParentOnFailure?: boolean;
  /** When this child fails for good, its parent starts at once (the child is listed as failed). */
  continueParentOnFailure?: boolean;
  /** When this child fails for good, its parent counts it as done (listed as ignored). */
  ignoreDependencyOnFailure?: boolean;
  /** When this child fails for good, it is dropped from its parent's dependencies. */
  removeDependencyOnFailure?: boolean;
  /** BullMQ's telemetry: `metadata` (propagated context), `omitContext` (do not propagate the add's span). */
  telemetry?: { metadata?: string; omitContext?: boolean };
  /** BullMQ internal (repeatable jobs); stored, no effect. */
  prevMillis?: number;
  /** BullMQ internal (repeatable jobs); stored, no effect. */
  repeatJobKey?: string;
  /**
   * Deprecated in BullMQ: BullMQ 6.7's Queue.add stores it and adds one ordinary job, which
   * never repeats; echomq does the same. Use `queue.upsertJobScheduler`.
   */
  repeat?: Record<string, unknown>;
  /** BullMQ Pro's group (docs/migrating-from-bullmq.md): the job goes to lane `id`, with `priority` inside it. */
  group?: GroupOptions;
}

/** BullMQ Pro's group option. A group is a lane: `id` is its name. */
export interface GroupOptions {
  /** Group (lane) id: a non-empty string, as in BullMQ Pro v2+. */
  id: string;
  /** Priority inside the group (as the job option priority; wins over it). */
  priority?: number;
  /** Refuse the add (GroupMaxSizeExceededError) when the group already holds this many waiting jobs. */
  maxSize?: number;
}

export interface DeduplicationOptions {
  /** Deduplication id: any non-empty string up to 1024 characters. */
  id: string;
  /** Throttle window in ms. Absent or 0: held while the job is live. */
  ttl?: number;
  /** With ttl: every duplicate add starts the window again (BullMQ's `extend`). */
  extend?: boolean;
  /** A duplicate add replaces the holder while it is delayed (BullMQ's `replace`; debounce). */
  replace?: boolean;
  /** A duplicate add moves a delayed holder to the incoming delay (BullMQ's `reschedule`). */
  reschedule?: boolean;
  /**
   * While the holder is active, the newest duplicate is kept and added when the holder finishes
   * (BullMQ's `keepLastIfActive`; the ttl is then ignored).
   */
  keepLastIfActive?: boolean;
}

/** Defaults when neither the job nor the queue's defaultJobOptions says otherwise: keep all (BullMQ's). */
export const DEFAULT_KEEP_COMPLETED: KeepJobs = Object.freeze({});
export const DEFAULT_KEEP_FAILED: KeepJobs = Object.freeze({});
/** The normalised count of a default retention (-1 = keep all); the add script stores no field for it. */
export const DEFAULT_KEEP_COUNT = -1;
export const DEFAULT_LANE = 'default';
/** Largest JSON payload (data, progress, return value) in bytes, unless configured. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/**
 * Retention arguments for a new job: '' where the value is the default (keep all), so the job
 * hash does not store it (lib/retention.lua applies the same default to an absent field).
 */
export function keepArgs([count, ageMs]: [number, number]): [number | '', number | ''] {
  return [count === DEFAULT_KEEP_COUNT ? '' : count, ageMs === 0 ? '' : ageMs];
}

/** A parent as the scripts take it: id, physical job key, queue name, key prefix. */
export interface ParentRef {
  id: string;
  queue: string;
  prefix: string;
}

/** Flow failure policy letters stored in the child's `pol` field (lib/flow.lua). */
export type FailurePolicy = '' | 'f' | 'c' | 'i' | 'd';

export interface NormalizedJobOptions {
  priority: number;
  lane: string;
  delay: number;
  jobId?: string;
  attempts: number;
  backoff?: BackoffOptions;
  lifo: boolean;
  /** [count (-1 all), age ms (0 none)] */
  keepCompleted: [number, number];
  keepFailed: [number, number];
  deduplication?: NormalizedDedup;
  /** Given creation time (ms), or undefined for the Redis clock. */
  timestamp?: number;
  sizeLimit?: number;
  parent?: ParentOptions;
  policy: FailurePolicy;
  /** group.maxSize: most waiting jobs the lane may hold for the add to go ahead. */
  groupMaxSize?: number;
}

export interface NormalizedDedup {
  id: string;
  ttl: number;
  /** Mode letters: e extend, r replace, s reschedule, k keepLastIfActive ('' = plain). */
  mode: string;
}

const KNOWN = new Set([
  'priority', 'lane', 'delay', 'jobId', 'attempts', 'backoff', 'lifo', 'removeOnComplete', 'removeOnFail', 'deduplication',
  'timestamp', 'stackTraceLimit', 'sizeLimit', 'keepLogs', 'parent', 'failParentOnFailure', 'continueParentOnFailure',
  'ignoreDependencyOnFailure', 'removeDependencyOnFailure', 'telemetry', 'prevMillis', 'repeatJobKey', 'repeat', 'group',
]);
/** BullMQ's order when it names the failure policies that exclude each other. */
const EXCLUSIVE = ['removeDependencyOnFailure', 'failParentOnFailure', 'continueParentOnFailure', 'ignoreDependencyOnFailure'] as const;
const POLICY_LETTER: Record<(typeof EXCLUSIVE)[number], FailurePolicy> = {
  removeDependencyOnFailure: 'd', failParentOnFailure: 'f', continueParentOnFailure: 'c', ignoreDependencyOnFailure: 'i',
};
const DEDUP_KEYS = new Set(['id', 'ttl', 'extend', 'replace', 'reschedule', 'keepLastIfActive']);

/**
 * Retention as [count, age ms]. count -1 is the default, keep all, which the hash does not store;
 * an explicit `false` is -2, keep all too (every count < 0 keeps all in lib/retention.lua), but
 * stored, so that job.opts shows `false` as given.
 */
export const KEEP_ALL_EXPLICIT = -2;

function keep(field: string, value: unknown): [number, number] {
  if (value === undefined) return [DEFAULT_KEEP_COUNT, 0];
  if (value === false) return [KEEP_ALL_EXPLICIT, 0];
  if (value === true) return [0, 0];
  if (typeof value === 'number') return [v.nonNegativeInt(field, value), 0];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    v.fail(field, 'true, false, a count or { age?, count?, limit? }', value);
  }
  const o = v.plainObject(field, value);
  const count = o.count === undefined ? -1 : v.nonNegativeInt(`${field}.count`, o.count);
  const age = o.age === undefined ? 0 : v.nonNegativeInt(`${field}.age`, o.age) * 1000;
  if (o.limit !== undefined) v.positiveInt(`${field}.limit`, o.limit);
  return [count, age];
}

function optionalBool(field: string, value: unknown): boolean {
  return value === undefined ? false : v.boolean(field, value);
}

function deduplication(value: unknown, field: string): NormalizedDedup {
  const o = v.plainObject(field, value);
  for (const k of Object.keys(o)) {
    if (!DEDUP_KEYS.has(k)) v.fail(`${field}.${k}`, `one of the known fields (${[...DEDUP_KEYS].join(', ')})`, k);
  }
  if (o.id === undefined || o.id === '' || o.id === null) {
    v.failAs('Deduplication id must be provided', `${field}.id`, 'a non-empty string of at most 1024 characters', o.id);
  }
  const id = v.nonEmptyString(`${field}.id`, o.id);
  // ttl 0 is the simple mode, as in BullMQ (it only throttles with ttl > 0).
  const ttl = o.ttl === undefined ? 0 : v.integerIn(`${field}.ttl`, o.ttl, 0, Number.MAX_SAFE_INTEGER, 'a non-negative integer (ms; 0 = held while the job is live)');
  let mode = '';
  if (optionalBool(`${field}.extend`, o.extend)) mode += 'e';
  if (optionalBool(`${field}.replace`, o.replace)) mode += 'r';
  if (optionalBool(`${field}.reschedule`, o.reschedule)) mode += 's';
  // BullMQ ignores the ttl with keepLastIfActive: the id is held while a job is live.
  if (optionalBool(`${field}.keepLastIfActive`, o.keepLastIfActive)) return { id, ttl: 0, mode: mode + 'k' };
  return { id, ttl, mode };
}

function parentOption(value: unknown, field: string): ParentOptions {
  const o = v.plainObject(field, value);
  for (const k of Object.keys(o)) {
    if (k !== 'id' && k !== 'queue') v.fail(`${field}.${k}`, 'one of the known fields (id, queue)', k);
  }
  return { id: v.existingJobId(o.id, `${field}.id`), queue: v.nonEmptyString(`${field}.queue`, o.queue, 2048) };
}

function telemetryOption(value: unknown): void {
  const o = v.plainObject('telemetry', value);
  for (const k of Object.keys(o)) {
    if (k !== 'metadata' && k !== 'omitContext') v.fail(`telemetry.${k}`, 'one of the known fields (metadata, omitContext)', k);
  }
  if (o.metadata !== undefined) v.string('telemetry.metadata', o.metadata, Number.MAX_SAFE_INTEGER);
  if (o.omitContext !== undefined) v.boolean('telemetry.omitContext', o.omitContext);
}

/** BullMQ's rule: at most one failure policy; its text names the ones given, in its order. */
function failurePolicy(o: Record<string, unknown>, field: string): FailurePolicy {
  // The common case, none given, without the list.
  if (o.removeDependencyOnFailure === undefined && o.failParentOnFailure === undefined
    && o.continueParentOnFailure === undefined && o.ignoreDependencyOnFailure === undefined) return '';
  let policy: FailurePolicy = '';
  const on: string[] = [];
  for (const k of EXCLUSIVE) {
    if (o[k] === undefined) continue;
    if (v.boolean(k, o[k])) {
      on.push(k);
      policy = POLICY_LETTER[k];
    }
  }
  if (on.length > 1) {
    v.failAs(`The following options cannot be used together: ${on.join(', ')}`, field, 'at most one of the failure policies', on.join(', '));
  }
  return policy;
}

/** BullMQ Pro's group option onto the lane: lane = id, priority = group.priority when given. */
function applyGroup(out: NormalizedJobOptions, value: unknown, lane: unknown): void {
  const g = v.plainObject('group', value);
  for (const k of Object.keys(g)) {
    if (k !== 'id' && k !== 'priority' && k !== 'maxSize') v.fail(`group.${k}`, 'one of the known fields (id, priority, maxSize)', k);
  }
  const id = v.nonEmptyString('group.id', g.id);
  if (lane !== undefined && lane !== id) v.fail('group.id', `the same as lane (${JSON.stringify(lane)}) when both are given`, id);
  out.lane = id;
  if (g.priority !== undefined) out.priority = v.priority(g.priority, 'group.priority');
  if (g.maxSize !== undefined) out.groupMaxSize = v.positiveInt('group.maxSize', g.maxSize);
}

export function normalizeJobOptions(opts: unknown, field = 'opts'): NormalizedJobOptions {
  const o = opts === undefined ? {} : v.plainObject(field, opts);
  for (const k in o) {
    if (!KNOWN.has(k)) {
      if (k === 'debounce') {
        v.failAs('Debounce option has been removed. Use deduplication option instead', `${field}.debounce`, 'absent (use deduplication)', o[k]);
      }
      v.fail(`${field}.${k}`, `one of the known options (${[...KNOWN].join(', ')})`, k);
    }
  }
  let delay = 0;
  if (o.delay !== undefined) {
    // BullMQ runs a job with a negative delay at once (a computed `due - Date.now()` may be < 0).
    if (typeof o.delay !== 'number' || !Number.isInteger(o.delay) || Math.abs(o.delay) > Number.MAX_SAFE_INTEGER) {
      v.fail('delay', 'an integer (ms; 0 or less = now)', o.delay);
    }
    delay = o.delay > 0 ? o.delay : 0;
  }
  let attempts = 1;
  if (o.attempts !== undefined) {
    // BullMQ's default is attempts 0, which runs the job once: 0 is 1 here.
    attempts = v.integerIn('attempts', o.attempts, 0, Number.MAX_SAFE_INTEGER, 'a non-negative integer (0 and 1 = one attempt)') || 1;
  }
  const out: NormalizedJobOptions = {
    priority: o.priority === undefined ? 0 : v.priority(o.priority, 'priority'),
    lane: o.lane === undefined ? DEFAULT_LANE : v.laneName(o.lane),
    delay,
    attempts,
    lifo: o.lifo === undefined ? false : v.boolean('lifo', o.lifo),
    keepCompleted: keep('removeOnComplete', o.removeOnComplete),
    keepFailed: keep('removeOnFail', o.removeOnFail),
    policy: '',
  };
  // An empty custom id is no id: BullMQ generates one then.
  if (o.jobId !== undefined && o.jobId !== '') out.jobId = v.jobId(o.jobId);
  const b = o.backoff as { jitter?: unknown } | undefined;
  if (b && typeof b === 'object' && typeof b.jitter === 'number' && !(b.jitter >= 0 && b.jitter <= 1)) {
    v.failAs('Jitter should be between 0 and 1', 'backoff.jitter', 'a number 0…1', b.jitter);
  }
  const backoff = normalizeBackoff(o.backoff);
  if (backoff) out.backoff = backoff;
  if (o.timestamp !== undefined) out.timestamp = v.nonNegativeInt('timestamp', o.timestamp);
  if (o.stackTraceLimit !== undefined) v.nonNegativeInt('stackTraceLimit', o.stackTraceLimit);
  if (o.keepLogs !== undefined) v.nonNegativeInt('keepLogs', o.keepLogs);
  if (o.sizeLimit !== undefined) out.sizeLimit = v.nonNegativeInt('sizeLimit', o.sizeLimit);
  if (o.prevMillis !== undefined) v.nonNegativeInt('prevMillis', o.prevMillis);
  if (o.repeatJobKey !== undefined) v.string('repeatJobKey', o.repeatJobKey);
  if (o.repeat !== undefined) v.plainObject('repeat', o.repeat);
  if (o.telemetry !== undefined) telemetryOption(o.telemetry);
  out.policy = failurePolicy(o, field);
  if (o.parent !== undefined) out.parent = parentOption(o.parent, 'parent');
  if (o.deduplication !== undefined) {
    out.deduplication = deduplication(o.deduplication, 'deduplication');
    if (out.parent) {
      v.failAs('Deduplication and parent options cannot be used together', 'deduplication', 'absent on a job with a parent', o.deduplication);
    }
  }
  if (o.group !== undefined) applyGroup(out, o.group, o.lane);
  return out;
}

/**
 * BullMQ's sizeLimit: the JSON of `data` in UTF-8 bytes may not exceed it. `data` is the
 * encoded JSON (a string), measured only when a limit is set.
 */
export function checkSizeLimit(n: NormalizedJobOptions, jobName: string, data: string, field = 'data'): void {
  if (!n.sizeLimit) return;
  const bytes = Buffer.byteLength(data);
  if (bytes > n.sizeLimit) {
    throw v.bullError(`The size of job ${jobName} exceeds the limit ${n.sizeLimit} bytes`, field, `at most ${n.sizeLimit} bytes of JSON (sizeLimit)`, `${bytes} bytes`);
  }
}

/**
 * Options the job hash holds in fields of their own, which Job shows again in job.opts: not
 * repeated in the stored JSON. attempts and backoff are stored normalised.
 */
// `timestamp` is not among them: the hash's `ts` is there for every job, but job.opts shows a
// timestamp only when the add gave one (as BullMQ's), so a given one is kept in the JSON too.
const OWN_FIELD = new Set(['priority', 'lane', 'delay', 'lifo', 'removeOnComplete', 'removeOnFail', 'attempts', 'backoff']);

/**
 * The options stored with the job as JSON (what job.opts shows besides the hash's own fields):
 * what the user set, without the options that have fields of their own (retention: kc/ka/kfc/
 * kfa, which the scripts read; priority, lane, delay, lifo), attempts when not the
 * default 1, the normalised backoff and the trace context of the add (src/ops/tracing.ts, read by
 * the worker's process span; not stored when the user set `telemetry.omitContext`). '' for
 * none, so the hash then has no opts field.
 */
export function storedOptions(user: JobOptions | undefined, n: NormalizedJobOptions, telemetry?: object): string {
  // Built up only from what is kept (no copy-then-delete): this runs once per added job.
  let s: Record<string, unknown> | undefined;
  if (user) {
    for (const k in user) {
      if (!OWN_FIELD.has(k)) (s ??= {})[k] = (user as Record<string, unknown>)[k];
    }
  }
  if (telemetry && !user?.telemetry?.omitContext) (s ??= {}).telemetry = user?.telemetry ? { ...user.telemetry, ...telemetry } : telemetry;
  // Given attempts are kept as given (BullMQ's job.opts shows attempts: 1 when it was passed, 0
  // when it was not); otherwise stored only when not the default 1.
  if (user?.attempts !== undefined) (s ??= {}).attempts = user.attempts;
  else if (n.attempts !== 1) (s ??= {}).attempts = n.attempts;
  if (n.backoff) (s ??= {}).backoff = n.backoff;
  return s === undefined ? '' : JSON.stringify(s);
}

/** Resolves BullMQ's `parent: { id, queue }` (queue = `<prefix>:<queueName>`, keys.parseQualifiedName). */
export function resolveParent(parent: ParentOptions, ownPrefix: string, field = 'parent.queue'): ParentRef {
  const q = parseQualifiedName(parent.queue, ownPrefix);
  if (!q) v.fail(field, "a queue's qualified name '<prefix>:<queue name>'", parent.queue);
  return { id: parent.id, prefix: q.prefix, queue: q.queue };
}

/**
 * BullMQ's next-slot function for job schedulers (`settings.repeatStrategy`): given the time of
 * the previous slot (ms) and the repeat options, the next slot in ms (undefined: none).
 */
export type RepeatStrategy = (millis: number, opts: Record<string, unknown>, name?: string) => number | undefined | Promise<number | undefined>;

/** The QueueOptions members BullMQ 6 has besides connection, prefix and defaultJobOptions. */
export interface QueueCompatOptions {
  /** BullMQ: deprecated, not in use. Accepted, no effect. */
  blockingConnection?: boolean;
  /** BullMQ: do not read the server's version at connect (RedisConnection.redisVersion is then its minimum). */
  skipVersionCheck?: boolean;
  /**
   * BullMQ: the connection's `initializing` (and so waitUntilReady) does not wait for the client
   * to be ready. echomq never waits for ready before a command anyway (ioredis queues it).
   */
  skipWaitingForReady?: boolean;
  /**
   * BullMQ: a Telemetry object (tracer, context manager). echomq traces through
   * `@opentelemetry/api` when installed (src/ops/tracing.ts); the object is accepted and not used.
   */
  telemetry?: { tracer?: unknown; contextManager?: unknown; meter?: unknown };
  /** BullMQ: do not write the queue's meta at construction (here: the events cap, `streams`). */
  skipMetasUpdate?: boolean;
  /**
   * BullMQ's AdvancedRepeatOptions. `repeatStrategy` computes the next slot of a job scheduler
   * with a `pattern` (instead of cron-parser); `repeatKeyHashAlgorithm` is accepted, no effect
   * (schedulers are named by their id, not by a hash).
   */
  settings?: { repeatStrategy?: RepeatStrategy; repeatKeyHashAlgorithm?: string };
}

export interface NormalizedQueueOptions {
  prefix?: string;
  maxPayloadBytes: number;
  keepLogs: number;
  /** Events cap to write at construction, when given and meta updates are not skipped. */
  evmax?: number;
}

/** Validates a Queue's options (before it connects); see QueueOptions in queue.ts. */
export function normalizeQueueOptions(
  opts: Record<string, unknown>,
  defaultMaxPayload = DEFAULT_MAX_PAYLOAD,
): NormalizedQueueOptions {
  const prefix = opts.prefix === undefined ? undefined : v.prefix(opts.prefix);
  if (opts.defaultJobOptions !== undefined) normalizeJobOptions(opts.defaultJobOptions, 'defaultJobOptions');
  const maxPayloadBytes = opts.maxPayloadBytes === undefined ? defaultMaxPayload : v.positiveInt('maxPayloadBytes', opts.maxPayloadBytes);
  const keepLogs = opts.keepLogs === undefined ? 0 : v.nonNegativeInt('keepLogs', opts.keepLogs);
  for (const k of ['blockingConnection', 'skipVersionCheck', 'skipWaitingForReady', 'skipMetasUpdate']) {
    if (opts[k] !== undefined) v.boolean(k, opts[k]);
  }
  if (opts.telemetry !== undefined) v.plainObject('telemetry', opts.telemetry);
  if (opts.settings !== undefined) {
    const s = v.plainObject('settings', opts.settings);
    for (const k of Object.keys(s)) {
      if (k !== 'repeatStrategy' && k !== 'repeatKeyHashAlgorithm') v.fail(`settings.${k}`, 'one of the known options (repeatStrategy, repeatKeyHashAlgorithm)', k);
    }
    if (s.repeatStrategy !== undefined && typeof s.repeatStrategy !== 'function') v.fail('settings.repeatStrategy', 'a function (millis, opts, name) => next ms', s.repeatStrategy);
    if (s.repeatKeyHashAlgorithm !== undefined) v.nonEmptyString('settings.repeatKeyHashAlgorithm', s.repeatKeyHashAlgorithm);
  }
  let evmax: number | undefined;
  if (opts.streams !== undefined) {
    const ev = v.plainObject('streams', opts.streams).events;
    if (ev !== undefined) {
      const max = v.plainObject('streams.events', ev).maxLen;
      if (max !== undefined) evmax = v.nonNegativeInt('streams.events.maxLen', max);
    }
  }
  if (opts.skipMetasUpdate === true) evmax = undefined;
  return { prefix, maxPayloadBytes, keepLogs, evmax };
}
