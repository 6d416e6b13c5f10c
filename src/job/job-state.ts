/**
 * Plain helpers of Job (src/job/job.ts): state names, BullMQ's error texts for job commands, and
 * how a BullMQ-style `queue` argument (an echomq Queue or Worker) leads to the Job context.
 */
import { Code, EchoError, InvalidStateError, refusalError } from '../core/errors.js';
import { JobStateCode } from '../core/fields.js';
import type { JobContext } from './job-context.js';
import { minimalQueueContext } from './job-json.js';
import * as v from '../core/validate.js';

export type JobState = 'waiting' | 'prioritized' | 'active' | 'delayed' | 'completed' | 'failed' | 'waiting-children' | 'unknown';

const STATE: Record<string, JobState> = {
  [JobStateCode.active]: 'active', [JobStateCode.delayed]: 'delayed', [JobStateCode.completed]: 'completed',
  [JobStateCode.failed]: 'failed', [JobStateCode.waitingChildren]: 'waiting-children',
};

/** Maps the internal state letter to BullMQ's state names (a paused queue's ready job is 'waiting', as in BullMQ). */
export function stateName(st: string | undefined, priority: number): JobState {
  if (st === undefined) return 'unknown';
  if (st === JobStateCode.ready) return priority > 0 ? 'prioritized' : 'waiting';
  return STATE[st] ?? 'unknown';
}

/**
 * Puts BullMQ's text in front of an echomq error's message (programs match BullMQ's
 * messages), keeping class and code. The stack's first line shows the new message too.
 */
export function withBullText<E extends Error>(err: E, text: string): E {
  // V8 formats `stack` lazily on first read: read it before changing the message, then swap
  // its header, so the header is never built from the new message and replaced a second time.
  const stack = err.stack;
  const header = `${err.name}: ${err.message}`;
  err.message = `${text}: ${err.message}`;
  if (stack) err.stack = stack.startsWith(header) ? `${err.name}: ${err.message}${stack.slice(header.length)}` : stack;
  return err;
}

/**
 * The typed error for a script's negative status, its message beginning with BullMQ's text
 * for that status (BullMQ's finishedErrors). `command` is the name BullMQ's message uses
 * (e.g. 'reprocessJob' for retry), `state` the state the command needed.
 */
export function jobError(code: number, op: string, jobId: string, command = op, state = ''): Error {
  return refusalError(code, { jobId, op, command, state: state || undefined });
}

/** The error of removing a job that is active (BullMQ's text, then echomq's). */
export function lockedError(jobId: string): EchoError {
  return withBullText(new InvalidStateError(jobId, 'remove', 'is active; it can be removed once it finishes'),
    `Job ${jobId} could not be removed because it is locked by another worker`);
}

/** A parent that is gone, or a job without one (BullMQ's ParentJobNotExist text). */
export function missingParentError(jobId: string, parentKey: string | undefined, op: string): Error {
  return refusalError(Code.MISSING_PARENT, { jobId, op, command: op, parentKey });
}

function isContext(x: unknown): x is JobContext {
  const c = x as Partial<JobContext> | null;
  return typeof c === 'object' && c !== null && typeof c.client === 'object' && c.client !== null
    && typeof c.keys === 'object' && c.keys !== null && typeof c.keys.jobBase === 'string' && typeof c.maxPayloadBytes === 'number';
}

/**
 * The Job context behind BullMQ's `queue` argument: an echomq Queue or Worker (their protected
 * `ctx`, reached here so it stays off their public surface), or a JobContext itself (internal
 * callers). Anything else is refused with a ValidationError.
 */
export function jobContextOf(queue: unknown, field = 'queue'): JobContext {
  // A sharded queue's own context names no shard: its jobs live in the shard queues.
  if (Array.isArray((queue as { shardQueues?: unknown } | null)?.shardQueues)) {
    return v.fail(field, 'an echomq Queue or Worker (for a sharded queue: one of its shardQueues)', queue);
  }
  const ctx = (queue as { ctx?: unknown } | null)?.ctx;
  if (isContext(ctx)) return ctx;
  if (isContext(queue)) return queue;
  return minimalQueueContext(queue) ?? v.fail(field, 'an echomq Queue or Worker, or a BullMQ MinimalQueue-shaped object (name, qualifiedName)', queue);
}
