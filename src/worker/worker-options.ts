/**
 * Worker options: their validation and defaults (BullMQ's names and defaults), and the typed
 * listener map of the Worker's events (BullMQ's WorkerListener).
 */
import type { BackoffStrategy } from '../core/backoff.js';
import type { ConnectionInput } from '../core/connection.js';
import type { Job } from '../job/job.js';
import { DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, type KeepJobs } from '../core/options.js';
import type { SlotPool } from './slot-pool.js';
import { ValidationError } from '../core/errors.js';
import * as v from '../core/validate.js';
import type { SandboxedOptions } from '../sandbox/index.js';
import type { WorkerGroupOptions } from '../pro/groups.js';

export interface WorkerOptions extends SandboxedOptions {
  connection?: ConnectionInput;
  /** Key prefix. Default 'emq'. */
  prefix?: string;
  /** Jobs processed at once by this worker. Default 1. Also settable later (`worker.concurrency = n`). */
  concurrency?: number;
  /** Lease length in ms. Default 30000. */
  lockDuration?: number;
  /** How often (ms) the leases of running jobs are renewed. Default lockDuration / 2. */
  lockRenewTime?: number;
  /** Do not renew leases (a job longer than lockDuration is then recovered by the stall sweep). Default false. */
  skipLockRenewal?: boolean;
  /** Do not run the stall sweep in this worker (another worker, or startStalledCheckTimer, does). Default false. */
  skipStalledCheck?: boolean;
  /** How often (ms) this worker sweeps for expired leases. Default 30000. */
  stalledInterval?: number;
  /** Times a job may stall (lease expired) and be recovered before it fails. Default 1. */
  maxStalledCount?: number;
  /**
   * Most times a job may be started (claims, step runs included); the next start fails it with
   * "job started more than allowable limit" and a failed run is not retried past it. Default none.
   */
  maxStartedAttempts?: number;
  /** Longest wait (ms) for a rate-limit window to reopen before claiming again. Default 30000. */
  maximumRateLimitDelay?: number;
  /** Longest wait (ms) before a failed claim is tried again. Default 15000. */
  runRetryDelay?: number;
  /** Start processing at construction. Default true; otherwise call run(). */
  autorun?: boolean;
  /** Longest idle block on the wake list, in seconds (any positive number; blocks last at least 1 ms). Default 5. */
  drainDelay?: number;
  /** Retention of completed jobs that have no removeOnComplete of their own (BullMQ's forms). */
  removeOnComplete?: boolean | number | KeepJobs;
  /** Retention of failed jobs that have no removeOnFail of their own. */
  removeOnFail?: boolean | number | KeepJobs;
  /** Accepted for BullMQ compatibility: a worker always blocks on its own connection. */
  blockingConnection?: boolean;
  /** Names the worker's connections (CLIENT SETNAME, BullMQ's scheme), so Queue.getWorkers lists it by name. */
  name?: string;
  /** Record per-minute counts of completed and failed jobs (BullMQ's metrics), keeping maxDataPoints minutes. */
  metrics?: { maxDataPoints?: number };
  /** Custom backoff strategies by name, used by `backoff: { type: name }`. */
  backoffStrategies?: Record<string, BackoffStrategy>;
  /** BullMQ-compatible single custom strategy, used for any unknown backoff type. */
  settings?: { backoffStrategy?: BackoffStrategy };
  /** Largest JSON return value / progress accepted, bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Most log lines kept per job (0 = all). Default 0. */
  keepLogs?: number;
  /** Return values up to this many bytes are copied into the `completed` event. Default 16384. */
  maxEventValueBytes?: number;
  /**
   * Queue-wide rate limit: at most `max` jobs start per `duration` ms across all workers of the
   * queue. Written to the queue's meta (rlmax, rldur) when the worker starts; the last worker
   * started wins. Default none. See docs/events.md#rate-limits.
   */
  limiter?: { max: number; duration: number };
  /**
   * BullMQ Pro's group defaults: `concurrency` (most jobs of one group active at once, across
   * all workers) and `limit` ({ max, duration } per group) for every group without its own
   * setting (queue.setGroupConcurrency / setGroupRateLimit win); jobs without a group are not
   * limited by them. Stored in the queue's meta when the worker starts; the last worker started
   * with this option wins. Default none. See docs/migrating-from-bullmq.md.
   */
  group?: WorkerGroupOptions;
  /**
   * Serve a sharded queue (`new Queue(name, { shards })`): the same count as the queue's.
   * `concurrency` is then shared by all shards. See docs/scaling.md. Default: a plain queue.
   */
  shards?: number;
  /** @internal Set by sharded-worker.ts on the worker of one shard: concurrency shared with the other shards. */
  slotPool?: SlotPool;
}

/** worker.getNextJob's options. */
export interface GetNextJobOptions {
  /** Wait (up to drainDelay) for a job when none is ready. Default true. */
  block?: boolean;
}

/** The Worker's events and their arguments (BullMQ's WorkerListener). */
export interface WorkerListener<D = any, R = any, N extends string = string> {
  active: (job: Job<D, R, N>, prev: string) => void;
  closed: () => void;
  closing: (msg: string) => void;
  completed: (job: Job<D, R, N>, result: R, prev: string) => void;
  drained: () => void;
  error: (failedReason: Error) => void;
  failed: (job: Job<D, R, N> | undefined, error: Error, prev: string) => void;
  paused: () => void;
  progress: (job: Job<D, R, N>, progress: number | object) => void;
  ready: () => void;
  resumed: () => void;
  stalled: (jobId: string, prev: string) => void;
  lockRenewalFailed: (jobIds: string[]) => void;
  locksRenewed: (data: { count: number; jobIds: string[] }) => void;
}

/** The validated options a Worker runs with (BullMQ's defaults). */
export interface WorkerSettings {
  concurrency: number;
  lockDuration: number;
  lockRenewTime: number;
  stalledInterval: number;
  maxStalledCount: number;
  drainDelay: number;
  skipLockRenewal: boolean;
  skipStalledCheck: boolean;
  maxStartedAttempts: number | undefined;
  maximumRateLimitDelay: number;
  runRetryDelay: number;
  autorun: boolean;
  name: string | undefined;
  /** Data points of the per-minute metrics; 0 = none. */
  metrics: number;
  /** Worker-level retention as (count, age ms), for jobs without their own. */
  keepCompleted: [number, number] | undefined;
  keepFailed: [number, number] | undefined;
}

/** Default of metrics.maxDataPoints (BullMQ's MetricsTime.ONE_WEEK: minutes in a week). */
const DEFAULT_METRICS_POINTS = 7 * 24 * 60;

/** Runs a check; a ValidationError's message then begins with BullMQ's text for the same refusal. */
function bullmqText<T>(text: string, check: () => T): T {
  try {
    return check();
  } catch (e) {
    if (e instanceof ValidationError) e.message = `${text}: ${e.message}`;
    throw e;
  }
}

/** BullMQ's text where it refuses a concurrency (not a number, below 1, or not finite). */
const CONCURRENCY_TEXT = 'concurrency must be a finite number greater than 0';

/**
 * A concurrency setting. Where BullMQ refuses the value too, the message is BullMQ's text
 * exactly (programs compare it with ===); echomq's detail stays on the error's field, expected
 * and got. Values BullMQ takes but echomq does not (2.5, above 100000) get echomq's own text.
 */
export function validConcurrency(n: unknown): number {
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 1) {
    const e = new ValidationError('concurrency', 'an integer 1…100000', v.describe(n));
    e.message = CONCURRENCY_TEXT;
    throw e;
  }
  return v.integerIn('concurrency', n, 1, 100_000);
}

/** drainDelay in seconds: any positive number, as BullMQ (at most an hour). */
function drainDelaySeconds(value: unknown): number {
  return bullmqText('drainDelay must be greater than 0', () => {
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > 3600) {
      v.fail('drainDelay', 'a number of seconds above 0 and at most 3600', value);
    }
    return value;
  });
}

/** A retention option (BullMQ's forms) as (count, age ms); count -1 = all. */
function keepOption(field: string, value: unknown, dflt: KeepJobs): [number, number] | undefined {
  if (value === undefined) return undefined;
  if (value === true) return [0, 0];
  if (value === false) return [-1, 0];
  if (typeof value === 'number') return [v.nonNegativeInt(field, value), 0];
  const o = v.plainObject(field, value) as KeepJobs;
  const count = o.count === undefined ? dflt.count ?? -1 : v.nonNegativeInt(`${field}.count`, o.count);
  const age = o.age === undefined ? 0 : v.positiveInt(`${field}.age`, o.age) * 1000;
  return [count, age];
}

function bool(field: string, value: unknown, dflt: boolean): boolean {
  return value === undefined ? dflt : v.boolean(field, value);
}

/** Validates a Worker's options (nothing is opened or written before this passes). */
export function workerSettings(opts: WorkerOptions): WorkerSettings {
  const lockDuration = opts.lockDuration === undefined ? 30_000 : v.integerIn('lockDuration', opts.lockDuration, 10, 86_400_000);
  let metrics = 0;
  if (opts.metrics !== undefined) {
    const m = v.plainObject('metrics', opts.metrics);
    metrics = m.maxDataPoints === undefined ? DEFAULT_METRICS_POINTS : v.integerIn('metrics.maxDataPoints', m.maxDataPoints, 1, 1_000_000);
  }
  if (opts.blockingConnection !== undefined) v.boolean('blockingConnection', opts.blockingConnection);
  return {
    concurrency: opts.concurrency === undefined ? 1 : validConcurrency(opts.concurrency),
    lockDuration,
    lockRenewTime: opts.lockRenewTime === undefined ? Math.max(5, lockDuration / 2) : v.integerIn('lockRenewTime', opts.lockRenewTime, 5, 86_400_000),
    stalledInterval: opts.stalledInterval === undefined ? 30_000
      : bullmqText('stalledInterval must be greater than 0', () => v.integerIn('stalledInterval', opts.stalledInterval, 10, 86_400_000)),
    maxStalledCount: opts.maxStalledCount === undefined ? 1
      : bullmqText('maxStalledCount must be greater or equal than 0', () => v.nonNegativeInt('maxStalledCount', opts.maxStalledCount)),
    drainDelay: opts.drainDelay === undefined ? 5
      : drainDelaySeconds(opts.drainDelay),
    skipLockRenewal: bool('skipLockRenewal', opts.skipLockRenewal, false),
    skipStalledCheck: bool('skipStalledCheck', opts.skipStalledCheck, false),
    maxStartedAttempts: opts.maxStartedAttempts === undefined ? undefined
      : bullmqText('maxStartedAttempts must be greater or equal than 0', () => v.nonNegativeInt('maxStartedAttempts', opts.maxStartedAttempts)),
    maximumRateLimitDelay: opts.maximumRateLimitDelay === undefined ? 30_000 : v.integerIn('maximumRateLimitDelay', opts.maximumRateLimitDelay, 1, 86_400_000),
    runRetryDelay: opts.runRetryDelay === undefined ? 15_000 : v.integerIn('runRetryDelay', opts.runRetryDelay, 1, 86_400_000),
    autorun: bool('autorun', opts.autorun, true),
    name: opts.name === undefined ? undefined : v.string('name', opts.name, 1000),
    metrics,
    keepCompleted: keepOption('removeOnComplete', opts.removeOnComplete, DEFAULT_KEEP_COMPLETED),
    keepFailed: keepOption('removeOnFail', opts.removeOnFail, DEFAULT_KEEP_FAILED),
  };
}
