/**
 * Job options: the public shape and its validation into the form the add script stores.
 */
import { normalizeBackoff, type BackoffOptions } from './backoff.js';
import * as v from './validate.js';

/** Retention of finished jobs, as in BullMQ: `age` in seconds, `count` jobs. */
export interface KeepJobs {
  age?: number;
  count?: number;
}

export interface JobOptions {
  /** Lower runs first; integer 0…2,097,151. Default 0. */
  priority?: number;
  /** Lane (tenant) the job belongs to. Default: the queue's default lane, `'default'`. */
  lane?: string;
  /** Milliseconds to wait before the job becomes ready. Default 0. */
  delay?: number;
  /** Custom id; adding an id that exists returns the existing job unchanged. Not an integer. */
  jobId?: string;
  /** Total attempts including the first. Default 1. */
  attempts?: number;
  /** Delay between attempts: ms (fixed) or `{ type, delay, jitter }`. Default none (0). */
  backoff?: number | BackoffOptions;
  /** Put the job at the front of its priority tier instead of the back. Default false. */
  lifo?: boolean;
  /** true deletes at once, a number keeps that many, `{ age, count }`. Default `{ count: 1000 }`. */
  removeOnComplete?: boolean | number | KeepJobs;
  /** Like removeOnComplete for failed jobs. Default `{ count: 10000 }`. */
  removeOnFail?: boolean | number | KeepJobs;
  /**
   * Deduplication (docs/events.md#deduplication). `{ id }`: while a job added with this id is
   * waiting, delayed or active, adding another returns that job and creates none.
   * `{ id, ttl }` (throttle, ms): for ttl ms after the first add, whatever that job does.
   */
  deduplication?: DeduplicationOptions;
  /** BullMQ Pro's group (docs/compat-notes/pro.md): the job goes to lane `id`, with `priority` inside it. */
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
  /** Throttle window in ms (a positive integer). Absent: held while the job is live. */
  ttl?: number;
}

/** Defaults when neither the job nor the queue's defaultJobOptions says otherwise. */
export const DEFAULT_KEEP_COMPLETED: KeepJobs = { count: 1000 };
export const DEFAULT_KEEP_FAILED: KeepJobs = { count: 10000 };
export const DEFAULT_LANE = 'default';
/** Largest JSON payload (data, progress, return value) in bytes, unless configured. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

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
  deduplication?: { id: string; ttl: number };
  /** group.maxSize: most waiting jobs the lane may hold for the add to go ahead. */
  groupMaxSize?: number;
}

const KNOWN = new Set(['priority', 'lane', 'delay', 'jobId', 'attempts', 'backoff', 'lifo', 'removeOnComplete', 'removeOnFail', 'deduplication', 'group']);

function keep(field: string, value: unknown, dflt: KeepJobs): [number, number] {
  if (value === undefined) value = dflt;
  if (value === true) return [0, 0];
  if (value === false) return [-1, 0];
  if (typeof value === 'number') return [v.nonNegativeInt(field, value), 0];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    v.fail(field, 'true, false, a count or { age?, count? }', value);
  }
  const o = v.plainObject(field, value);
  const count = o.count === undefined ? -1 : v.nonNegativeInt(`${field}.count`, o.count);
  const age = o.age === undefined ? 0 : v.nonNegativeInt(`${field}.age`, o.age) * 1000;
  return [count, age];
}

function deduplication(value: unknown): { id: string; ttl: number } {
  const o = v.plainObject('deduplication', value);
  for (const k of Object.keys(o)) {
    if (k !== 'id' && k !== 'ttl') v.fail(`deduplication.${k}`, 'one of the known fields (id, ttl)', k);
  }
  const id = v.nonEmptyString('deduplication.id', o.id);
  const ttl = o.ttl === undefined ? 0 : v.positiveInt('deduplication.ttl', o.ttl);
  return { id, ttl };
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
  for (const k of Object.keys(o)) {
    if (!KNOWN.has(k)) v.fail(`${field}.${k}`, `one of the known options (${[...KNOWN].join(', ')})`, k);
  }
  const out: NormalizedJobOptions = {
    priority: o.priority === undefined ? 0 : v.priority(o.priority, 'priority'),
    lane: o.lane === undefined ? DEFAULT_LANE : v.laneName(o.lane),
    delay: o.delay === undefined ? 0 : v.nonNegativeInt('delay', o.delay),
    attempts: o.attempts === undefined ? 1 : v.positiveInt('attempts', o.attempts),
    lifo: o.lifo === undefined ? false : v.boolean('lifo', o.lifo),
    keepCompleted: keep('removeOnComplete', o.removeOnComplete, DEFAULT_KEEP_COMPLETED),
    keepFailed: keep('removeOnFail', o.removeOnFail, DEFAULT_KEEP_FAILED),
  };
  if (o.jobId !== undefined) out.jobId = v.jobId(o.jobId);
  const backoff = normalizeBackoff(o.backoff);
  if (backoff) out.backoff = backoff;
  if (o.deduplication !== undefined) out.deduplication = deduplication(o.deduplication);
  if (o.group !== undefined) applyGroup(out, o.group, o.lane);
  return out;
}

/**
 * Options the job hash holds in fields of their own, which Job shows again in job.opts: not
 * repeated in the stored JSON. attempts and backoff are stored normalised.
 */
const OWN_FIELD = new Set(['priority', 'lane', 'delay', 'lifo', 'removeOnComplete', 'removeOnFail', 'attempts', 'backoff']);

/**
 * The options stored with the job as JSON (what job.opts shows besides the hash's own fields):
 * what the user set, without the options that have fields of their own (retention: kc/ka/kfc/
 * kfa, which the scripts read; priority, lane, delay, lifo), attempts when not the default 1,
 * the normalised backoff and the trace context of the add (src/tracing.ts, read by the
 * worker's process span). '' for none, so the hash then has no opts field.
 */
export function storedOptions(user: JobOptions | undefined, n: NormalizedJobOptions, telemetry?: object): string {
  // Built up only from what is kept (no copy-then-delete): this runs once per added job.
  let s: Record<string, unknown> | undefined;
  if (user) {
    for (const k in user) {
      if (!OWN_FIELD.has(k)) (s ??= {})[k] = (user as Record<string, unknown>)[k];
    }
  }
  if (telemetry) (s ??= {}).telemetry = telemetry;
  if (n.attempts !== 1) (s ??= {}).attempts = n.attempts;
  if (n.backoff) (s ??= {}).backoff = n.backoff;
  return s === undefined ? '' : JSON.stringify(s);
}
