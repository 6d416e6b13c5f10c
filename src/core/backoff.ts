/**
 * Retry backoff. Pure functions: no Redis, no clock.
 *
 *   fixed:        delay
 *   exponential:  delay × 2^(attemptsMade − 1)
 *   jitter (0…1): the computed delay is reduced by a random share of up to `jitter`,
 *                 spreading retries of jobs that failed together.
 *   custom:       a strategy registered on the Worker by name (`backoffStrategies`), or
 *                 BullMQ's single `settings.backoffStrategy`.
 */
import { UnrecoverableError } from './errors.js';
import { fail, integerIn, nonNegativeInt, plainObject } from './validate.js';

export interface BackoffOptions {
  /** 'fixed', 'exponential', or the name of a custom strategy registered on the Worker. */
  type: string;
  /** Base delay in ms. Default 0 for fixed, 1000 for exponential. */
  delay?: number;
  /** Share (0…1) of the delay that may be taken off at random. Default 0. */
  jitter?: number;
}

/**
 * A custom strategy: the delay in ms, or a promise of it (BullMQ awaits it). `job` is the failed
 * Job; typed `any` because core/ cannot name Job, so strategies typed with Job or MinimalJob fit.
 */
export type BackoffStrategy = (attemptsMade: number, type: string, err: Error, job: any) => number | Promise<number>;

/** Validates and normalises `backoff` (a number is a fixed delay in ms). */
export function normalizeBackoff(value: unknown, field = 'backoff'): BackoffOptions | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number') return { type: 'fixed', delay: nonNegativeInt(field, value) };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(field, 'a delay in ms or { type, delay?, jitter? }', value);
  }
  const o = plainObject(field, value);
  if (typeof o.type !== 'string' || o.type.length === 0) fail(`${field}.type`, "'fixed', 'exponential' or a strategy name", o.type);
  const out: BackoffOptions = { type: o.type };
  if (o.delay !== undefined) out.delay = nonNegativeInt(`${field}.delay`, o.delay);
  if (o.jitter !== undefined) {
    if (typeof o.jitter !== 'number' || !(o.jitter >= 0 && o.jitter <= 1)) fail(`${field}.jitter`, 'a number 0…1', o.jitter);
    out.jitter = o.jitter;
  }
  return out;
}

/**
 * Delay in ms before the next attempt, after `attemptsMade` attempts (>= 1) have failed.
 * Returns undefined when a custom strategy name is unknown (the job then fails for good with
 * a reason that says so).
 */
export function backoffDelay(
  backoff: BackoffOptions | undefined,
  attemptsMade: number,
  err: Error,
  job: unknown,
  strategies: Record<string, BackoffStrategy> = {},
  fallback?: BackoffStrategy,
  random: () => number = Math.random,
): number | undefined | Promise<number | undefined> {
  integerIn('attemptsMade', attemptsMade, 1, Number.MAX_SAFE_INTEGER);
  if (!backoff) return 0;
  let d: number;
  if (backoff.type === 'fixed') d = backoff.delay ?? 0;
  else if (backoff.type === 'exponential') d = (backoff.delay ?? 1000) * 2 ** (attemptsMade - 1);
  else {
    const fn = strategies[backoff.type] ?? fallback;
    if (!fn) return undefined;
    const got: unknown = fn(attemptsMade, backoff.type, err, job);
    // An async strategy: only this case pays for a promise; built-in types stay synchronous.
    if (got instanceof Promise) return got.then((ms: unknown) => withJitter(backoff, ms, random));
    return withJitter(backoff, got, random);
  }
  return withJitter(backoff, d, random);
}

function withJitter(backoff: BackoffOptions, d: unknown, random: () => number): number | undefined {
  if (typeof d !== 'number' || !Number.isFinite(d)) return undefined;
  if (backoff.jitter) d = d * (1 - backoff.jitter * random());
  return Math.max(0, Math.round(d as number));
}

/** What a failed attempt leads to (see retryPlan). */
export interface RetryPlan {
  /** ms until the retry; -1 = the job fails for good. */
  retryDelay: number;
  /** The failed reason to store (the error's message, plus why it is not retried when a strategy is unknown). */
  reason: string;
  /** Attempts finished, this one included. */
  made: number;
  /** Failed for good with attemptsMade >= attempts (BullMQ's retries-exhausted). */
  exhausted: boolean;
}

/**
 * Decides what happens to a job whose attempt threw `err`: retried after its backoff while
 * attempts remain and the error is not unrecoverable, otherwise failed for good.
 */
export function retryPlan(
  job: { attemptsMade: number; opts: { attempts?: number; backoff?: unknown } },
  err: Error,
  strategies: Record<string, BackoffStrategy>,
  fallback?: BackoffStrategy,
): RetryPlan | Promise<RetryPlan> {
  const attempts = Number(job.opts.attempts ?? 1);
  const made = job.attemptsMade + 1;
  const unrecoverable = err instanceof UnrecoverableError || err.name === 'UnrecoverableError';
  if (unrecoverable || made >= attempts) return planOf(-1, err.message, made, attempts);
  let backoff;
  try {
    backoff = normalizeBackoff(job.opts.backoff);
  } catch {
    backoff = undefined;
  }
  const d = backoffDelay(backoff, made, err, job, strategies, fallback);
  if (d instanceof Promise) return d.then((ms) => retryOf(ms, backoff, err, made, attempts));
  return retryOf(d, backoff, err, made, attempts);
}

function retryOf(d: number | undefined, backoff: BackoffOptions | undefined, err: Error, made: number, attempts: number): RetryPlan {
  if (d === undefined) return planOf(-1, `${err.message} (unknown backoff strategy ${JSON.stringify(backoff?.type)}; not retried)`, made, attempts);
  return planOf(d, err.message, made, attempts);
}

function planOf(retryDelay: number, reason: string, made: number, attempts: number): RetryPlan {
  // BullMQ's rule for retries-exhausted: failed for good with every attempt used (attempts 1 too).
  return { retryDelay, reason, made, exhausted: retryDelay < 0 && made >= attempts };
}

/** BullMQ's built-in strategy makers: `(delay, jitter) => (attemptsMade) => ms`. */
export interface BuiltInStrategies {
  [type: string]: (delay: number, jitter?: number) => (attemptsMade: number) => number;
}

/**
 * BullMQ's `Backoffs` class for programs that call it: `normalize` (a number is a fixed delay)
 * and `calculate`, on the same rules as the worker's retries (backoffDelay).
 */
export class Backoffs {
  static builtinStrategies: BuiltInStrategies = {
    fixed: (delay, jitter = 0) => (made) => backoffDelay({ type: 'fixed', delay, jitter }, Math.max(1, made), new Error(), undefined) as number,
    exponential: (delay, jitter = 0) => (made) => backoffDelay({ type: 'exponential', delay, jitter }, Math.max(1, made), new Error(), undefined) as number,
  };

  /** A number is a fixed delay in ms; an options object is kept; anything else is no backoff. */
  static normalize(backoff: number | BackoffOptions | undefined): BackoffOptions | undefined {
    if (typeof backoff === 'number' && Number.isFinite(backoff)) return { type: 'fixed', delay: backoff };
    return backoff && typeof backoff === 'object' ? backoff : undefined;
  }

  /**
   * The delay before the next attempt after `attemptsMade` failures. A type that is neither
   * built in nor given as `customStrategy` throws BullMQ's error.
   */
  static calculate(
    backoff: BackoffOptions, attemptsMade: number, err: Error, job: unknown, customStrategy?: BackoffStrategy,
  ): number | undefined | Promise<number | undefined> {
    if (!backoff) return undefined;
    if (backoff.type !== 'fixed' && backoff.type !== 'exponential' && !customStrategy) {
      throw new Error(`Unknown backoff strategy ${backoff.type}.\n      If a custom backoff strategy is used, specify it when the queue is created.`);
    }
    return backoffDelay(backoff, Math.max(1, attemptsMade), err, job, {}, customStrategy);
  }
}
