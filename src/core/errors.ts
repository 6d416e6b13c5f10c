/**
 * Typed errors. Scripts reply with negative status codes; `errorFromCode` is the one place
 * that turns them into these classes.
 */
import { LAYOUT_VERSION, UPGRADES_FROM } from './layout.js';

/**
 * Every `code` an EchoError carries: the one list, so a program can switch on them and no
 * call site makes up its own (EchoError's constructor takes only these).
 */
export const ErrorCodes = {
  /** Bad input to a public method; nothing was written (ValidationError). */
  VALIDATION: 'ERR_VALIDATION',
  /** No such job (JobNotFoundError). */
  JOB_NOT_FOUND: 'ERR_JOB_NOT_FOUND',
  /** The call's attempt token or lock is not the job's current one (StaleJobError). */
  STALE_TOKEN: 'ERR_STALE_TOKEN',
  /** The job's state does not allow the call (InvalidStateError). */
  INVALID_STATE: 'ERR_INVALID_STATE',
  /** obliterate without force while jobs are active (ActiveJobsError). */
  ACTIVE_JOBS: 'ERR_ACTIVE_JOBS',
  /** The Queue, Worker or connection is closed (ClosedError). */
  CLOSED: 'ERR_CLOSED',
  /** The queue is stored in another layout version (IncompatibleLayoutError). */
  LAYOUT: 'ERR_LAYOUT',
  /** A reply no table names (a script and its caller disagree). */
  UNKNOWN: 'ERR_UNKNOWN',
  /** Worker.run() without a processor (BullMQ's "No process function is defined."). */
  NO_PROCESSOR: 'ERR_NO_PROCESSOR',
  /** Worker.run() while it runs (BullMQ's "Worker is already running."). */
  RUNNING: 'ERR_RUNNING',
  /** Removing a job scheduler's next job directly. */
  SCHEDULER_JOB: 'ERR_SCHEDULER_JOB',
  /** A call a sharded queue cannot serve as one queue. */
  SHARDED: 'ERR_SHARDED',
  /** A job moved to a lane of another shard (CrossShardError). */
  CROSS_SHARD: 'ERR_CROSS_SHARD',
  /** A sharded queue opened with another shard count than its jobs were written under (ShardCountError). */
  SHARD_COUNT: 'ERR_SHARD_COUNT',
  /** A call whose reply was lost and not answered by a retry: its outcome is unknown (RequestOutcomeUnknownError). */
  OUTCOME_UNKNOWN: 'ERR_OUTCOME_UNKNOWN',
  /** Redis refused the call (OOM, READONLY, NOPERM; RedisRefusedError): nothing was written. */
  REDIS_REFUSED: 'ERR_REDIS_REFUSED',
  /** A Job whose queue object has no ioredis client. */
  NO_CONNECTION: 'ERR_NO_CONNECTION',
  /** BullMQ Pro: the lane holds group.maxSize waiting jobs (GroupMaxSizeExceededError). */
  GROUP_MAX_SIZE: 'ERR_GROUP_MAX_SIZE',
  /** A sandboxed processor file that does not exist (ProcessorFileError). */
  PROCESSOR_FILE: 'ERR_PROCESSOR_FILE',
  /** migrateFromBullMQ refused before writing (MigrationRefusedError): BullMQ workers run, keys could collide, … */
  MIGRATION_REFUSED: 'ERR_MIGRATION_REFUSED',
} as const;
export type EchoErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** Base class of every error echomq throws. `code` is stable and safe to switch on (ErrorCodes). */
export class EchoError extends Error {
  readonly code: EchoErrorCode;
  constructor(code: EchoErrorCode, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad input to a public method. Nothing was written to Redis. */
export class ValidationError extends EchoError {
  readonly field: string;
  readonly expected: string;
  readonly got: string;
  constructor(field: string, expected: string, got: string) {
    super(ErrorCodes.VALIDATION, `${field} must be ${expected}, got ${got}`);
    this.field = field;
    this.expected = expected;
    this.got = got;
  }
}

/** The job does not exist (never added, removed, or trimmed by retention). */
export class JobNotFoundError extends EchoError {
  readonly jobId: string;
  constructor(jobId: string, op: string, message = `${op}: job ${JSON.stringify(jobId)} does not exist`) {
    super(ErrorCodes.JOB_NOT_FOUND, message);
    this.jobId = jobId;
  }
}

/**
 * A settle or renew call presented a fencing token that is no longer current: the lease
 * expired and the job was recovered, re-claimed under a newer token, or already finished.
 * The call changed nothing.
 */
export class StaleJobError extends EchoError {
  readonly jobId: string;
  constructor(jobId: string, op: string, message = `${op}: job ${JSON.stringify(jobId)} is no longer held under this token (lease lost)`) {
    super(ErrorCodes.STALE_TOKEN, message);
    this.jobId = jobId;
  }
}

/** The job is not in a state that allows the operation (for example removing an active job). */
export class InvalidStateError extends EchoError {
  readonly jobId: string;
  constructor(jobId: string, op: string, detail: string, message = `${op}: job ${JSON.stringify(jobId)} ${detail}`) {
    super(ErrorCodes.INVALID_STATE, message);
    this.jobId = jobId;
  }
}

/**
 * obliterate() without force on a queue that has active jobs. Nothing was deleted. The message
 * begins with BullMQ's text.
 */
export class ActiveJobsError extends EchoError {
  constructor(queue: string) {
    super(ErrorCodes.ACTIVE_JOBS, `Cannot obliterate queue with active jobs: queue ${JSON.stringify(queue)} has active jobs; pass { force: true } to delete them too`);
  }
}

/** The Queue or Worker was closed. */
export class ClosedError extends EchoError {
  constructor(what: string) {
    super(ErrorCodes.CLOSED, `${what} is closed`);
  }
}

/**
 * The queue's stored layout (meta field `lv`) is not the one this echomq reads
 * (LAYOUT_VERSION, src/core/layout.ts). Raised before the first write; nothing was written.
 */
export class IncompatibleLayoutError extends EchoError {
  readonly queue: string;
  readonly stored: string;
  readonly expected: number;
  constructor(queue: string, stored: string, expected: number) {
    // Layout 1 has an upgrade (upgradeLayout.lua): say how, so nobody has to look it up.
    const how = stored === String(UPGRADES_FROM) ? `; upgrade it with queue.upgradeLayout() or \`echomq upgrade-layout ${queue}\`` : '';
    super(ErrorCodes.LAYOUT, `queue ${queue} is stored in layout version ${stored}; this echomq reads layout version ${expected}${how}`);
    this.queue = queue;
    this.stored = stored;
    this.expected = expected;
  }
}

/**
 * A call whose outcome the client cannot know: its request went out but no reply came (the
 * connection closed and ioredis gave up, the queue was closed), or Redis refused it as older
 * than the applied-once window (docs/protocol.md "Applied once"). It may or may not have run. `requestId`
 * names the request; `cause` is the underlying error.
 */
export class RequestOutcomeUnknownError extends EchoError {
  readonly requestId: string;
  readonly op: string;
  /** Redis refused the request as older than the window (EMQ_EXPIRED): retrying it is refused too. */
  readonly expired: boolean;
  declare cause?: unknown;
  constructor(op: string, requestId: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super('ERR_OUTCOME_UNKNOWN', `${op}: outcome unknown for request ${requestId} (it may or may not have been applied): ${why}`);
    this.requestId = requestId;
    this.op = op;
    this.expired = why.includes('EMQ_EXPIRED');
    this.cause = cause;
  }
}

/**
 * Redis refused the call before running it (OOM under maxmemory, a read-only replica, an ACL
 * denial, MISCONF, …): nothing was written. The message begins with Redis's own text.
 */
export class RedisRefusedError extends EchoError {
  /** Redis's error word: OOM, READONLY, NOPERM, MISCONF, … */
  readonly redisCode: string;
  declare cause?: unknown;
  constructor(op: string, cause: Error) {
    super('ERR_REDIS_REFUSED', `${cause.message} (echomq ${op}: refused by Redis, nothing was written)`);
    this.redisCode = cause.message.split(' ', 1)[0] ?? '';
    this.cause = cause;
  }
}

/*
 * BullMQ's processor-side errors, with BullMQ's names and default messages (the `*_ERROR`
 * constants), so code that compares `err.message === UNRECOVERABLE_ERROR` or checks
 * `err.name` works unchanged. `name` is the constructing class's name, as in BullMQ, so a
 * subclass keeps its own.
 */

/** BullMQ's default message of UnrecoverableError. */
export const UNRECOVERABLE_ERROR = 'bullmq:unrecoverable';
/** BullMQ's default message of RateLimitError (the worker also matches the class by name). */
export const RATE_LIMIT_ERROR = 'bullmq:rateLimitExceeded';
/** BullMQ's default message of DelayedError. */
export const DELAYED_ERROR = 'bullmq:movedToDelayed';
/** BullMQ's default message of WaitingChildrenError. */
export const WAITING_CHILDREN_ERROR = 'bullmq:movedToWaitingChildren';
/** BullMQ's default message of WaitingError. */
export const WAITING_ERROR = 'bullmq:movedToWait';
/** The message of ConnectionClosedError (ioredis's text for a command on a closed connection). */
export const CONNECTION_CLOSED_ERROR_MSG = 'Connection is closed.';

/**
 * Throw this from a processor to fail the job at once, without the retries its `attempts`
 * would allow.
 */
export class UnrecoverableError extends Error {
  constructor(message: string = UNRECOVERABLE_ERROR) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Throw this from a processor to hand the job back to ready (front of its priority tier)
 * without counting an attempt: the queue is rate limited by someone else (an HTTP 429). Combine
 * with `worker.rateLimit(ms)` so no worker claims again until the window passes.
 * `Worker.RateLimitError()` returns one too (BullMQ's spelling).
 */
export class RateLimitError extends Error {
  constructor(message: string = RATE_LIMIT_ERROR) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Throw this from a processor after `job.moveToDelayed(timestamp, token)`: the job already
 * left active, so the worker settles nothing for this attempt (BullMQ's step jobs).
 */
export class DelayedError extends Error {
  constructor(message: string = DELAYED_ERROR) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Throw this from a processor after `job.moveToWaitingChildren(token)` returned true: the job
 * waits for its children, and the worker settles nothing for this attempt.
 */
export class WaitingChildrenError extends Error {
  constructor(message: string = WAITING_CHILDREN_ERROR) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Throw this from a processor after `job.moveToWait(token)`: the job is ready again, and the
 * worker settles nothing for this attempt.
 */
export class WaitingError extends Error {
  constructor(message: string = WAITING_ERROR) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * A command was sent on a connection that is closed (BullMQ's class; echomq's own calls on a
 * closed Queue or Worker throw ClosedError). `cause` is the underlying error, if any.
 */
export class ConnectionClosedError extends Error {
  declare cause?: unknown;
  constructor(message: string = CONNECTION_CLOSED_ERROR_MSG, cause?: unknown) {
    super(message);
    this.cause = cause;
    this.name = 'ConnectionClosedError';
  }
}

/**
 * BullMQ's script status codes (a TypeScript-style numeric enum: name → code and code → name),
 * for code that switches on them. echomq's scripts use their own codes (`Code` below) and
 * throw typed errors; this object is for compatibility only.
 */
const ERROR_CODES = {
  JobNotExist: -1,
  JobLockNotExist: -2,
  JobNotInState: -3,
  JobPendingChildren: -4,
  ParentJobNotExist: -5,
  JobLockMismatch: -6,
  ParentJobCannotBeReplaced: -7,
  JobBelongsToJobScheduler: -8,
  JobHasFailedChildren: -9,
  SchedulerJobIdCollision: -10,
  SchedulerJobSlotsBusy: -11,
} as const;
export const ErrorCode = enumOf(ERROR_CODES);
export type ErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

/** A numeric enum object as TypeScript emits it: each name maps to its number and back. */
export function enumOf<T extends Record<string, number>>(values: T): Readonly<T & Record<number, string>> {
  const out: Record<string | number, string | number> = {};
  for (const [k, n] of Object.entries(values)) {
    out[k] = n;
    out[n] = k;
  }
  return Object.freeze(out) as T & Record<number, string>;
}

/** A processor's step error (DelayedError, WaitingChildrenError, WaitingError), also from another copy of the package. */
export function isStepError(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  return e instanceof DelayedError || e instanceof WaitingChildrenError || e instanceof WaitingError
    || e.name === 'DelayedError' || e.name === 'WaitingChildrenError' || e.name === 'WaitingError';
}

/**
 * Status codes the Lua scripts reply with, one meaning per number across all scripts (the
 * Python client maps replies by these names: python/echomq/library.json carries this table).
 * -8 is unused, as BullMQ's JobBelongsToJobScheduler has no echomq counterpart in a reply.
 */
export const Code = {
  /** No such job (or no such parent, for addDependency and resolveChild). */
  NOT_FOUND: -1,
  /** The attempt token is not the job's current one: lease recovered, job finished, or lock missing. */
  STALE: -2,
  /** The job is not in a state that allows the call. */
  BAD_STATE: -3,
  /** obliterate without force while jobs are active. */
  ACTIVE_JOBS: -4,
  /** add, addFlow, removeChildDependency: the named parent job does not exist (or the job has none). */
  MISSING_PARENT: -5,
  /** Active under another lock owner (scripts/lib/lock.lua). */
  LOCK_MISMATCH: -6,
  /** add, addFlow: the existing job already has another parent that still exists. */
  OTHER_PARENT: -7,
  /** moveToWaitingChildren: a child failed the job (failParentOnFailure) while it ran. */
  CHILD_FAILED: -9,
  /** A flow parent with children still pending cannot complete (complete.lua). */
  PENDING_DEPENDENCIES: -10,
  /** add: the lane holds group.maxSize waiting jobs (BullMQ Pro). */
  GROUP_FULL: -11,
  /** addFlow: an existing job of the flow has children in another queue, or is a root under an outside parent. */
  CROSS_QUEUE_CHILDREN: -12,
  /** upgradeLayout: the stored layout version has no upgrade to this one (it is neither 1 nor 2). */
  UNKNOWN_LAYOUT: -13,
  /** add, addFlow: a custom job id the store cannot take (an integer the id counter has not given out, the active set's sentinel, or too long). */
  BAD_ID: -14,
  /** A lane name the store cannot take: '' (the filler field of lone, lactive and lcfg) or too long. */
  BAD_LANE: -15,
  /** An argument not in the form its script's ARGV table states (a number, flag, count or JSON object). */
  BAD_ARGUMENT: -16,
  /** The move from BullMQ (migrate*.lua): echomq already holds this job, scheduler or deduplication id. */
  MIGRATE_ID_TAKEN: -20,
  /** migrateJobs: an active BullMQ job whose lock is live (a BullMQ worker runs it); migrateDedup: a next job whose holder is still in BullMQ. */
  MIGRATE_LOCKED: -21,
  /** migrateJobs: the job's flow parent or a pending child is in a queue or prefix the run does not move. */
  MIGRATE_OUTSIDE: -22,
  /** migrateJobs: BullMQ Pro data (a job of a group), not moved. */
  MIGRATE_PRO: -23,
  /** migrateJobs: a flow parent with more children than one bounded call moves. */
  MIGRATE_TOO_BIG: -24,
  /** migrateScheduler, migrateDedup: an old-style repeatable job (no repeat:<key> hash, BullMQ < 5.10 or so), or a keepLastIfActive next job with a flow parent (not carried). */
  MIGRATE_NOT_CARRIED: -25,
  /** The move back to BullMQ (migrateToBullMQ): ready jobs of a paused lane stay in echomq (BullMQ has no lanes to hold them back). */
  MIGRATE_LANE_PAUSED: -26,
} as const;
export type StatusCode = (typeof Code)[keyof typeof Code];

/**
 * Completing a job whose children are still pending. The message is BullMQ's text alone: a
 * worker fails the job with it, and programs compare that failedReason exactly.
 */
export function pendingDependenciesError(jobId: string, command = 'moveToFinished'): InvalidStateError {
  return new InvalidStateError(jobId, command, '', `Job ${jobId} has pending dependencies. ${command}`);
}

/** What a refused call was: the job, echomq's call and BullMQ's command, and what the code needs. */
export interface Refusal {
  readonly jobId: string;
  /** echomq's name of the call, in the detail after BullMQ's text ('' or absent: none). */
  readonly op?: string;
  /** BullMQ's name of the command: when given, the message begins with BullMQ's text for the refusal. */
  readonly command?: string;
  /** BAD_STATE: the state the call needed ('active', 'delayed', …). */
  readonly state?: string;
  /** MISSING_PARENT: the parent's logical key (absent: the job has none). */
  readonly parentKey?: string;
  /** ACTIVE_JOBS, UNKNOWN_LAYOUT: the queue's name. */
  readonly queue?: string;
  /** UNKNOWN_LAYOUT: the layout version the queue's meta hash holds. */
  readonly layout?: string;
  /** BAD_ID, BAD_LANE, BAD_ARGUMENT: the refused argument's name and value as sent. */
  readonly field?: string;
  readonly got?: string;
}

/** What the library's guards (lib/guard.lua) expect of the argument they refused, by code. */
export const GUARD_EXPECTED: Readonly<Record<number, string>> = {
  [-14]: 'a job id the store can take (not an integer the id counter has not given out, not the active set sentinel, at most 1024 characters)',
  [-15]: 'a non-empty lane name of at most 1024 characters',
  [-16]: 'an argument in the form docs/protocol.md states for it',
};

/** "<BullMQ's text>: <op>: job "<id>" <detail>", each part only when there is one. */
function refusalText(r: Refusal, bull: string, detail: string): string {
  const head = r.command ? `${bull}: ` : '';
  return `${head}${r.op ? `${r.op}: ` : ''}job ${JSON.stringify(r.jobId)} ${detail}`;
}

/** Why the move from BullMQ left a job, scheduler or deduplication id in BullMQ, by status code. */
export const MIGRATE_REASONS: Readonly<Record<number, string>> = {
  [Code.MIGRATE_ID_TAKEN]: 'echomq already holds this id',
  [Code.MIGRATE_LOCKED]: 'a BullMQ worker holds its lock (run again once it has finished or its lock expired)',
  [Code.MIGRATE_OUTSIDE]: 'its flow parent or a pending child is in a queue (or prefix) this command does not move, or stays in BullMQ',
  [Code.MIGRATE_PRO]: "BullMQ Pro group data (Pro's group storage is not public)",
  [Code.MIGRATE_TOO_BIG]: 'a flow parent with more than 1,000 children still pending (more than one bounded call moves)',
  [Code.MIGRATE_NOT_CARRIED]: 'not carried: an old-style repeatable job (no repeat hash: BullMQ before about 5.10), or a keepLastIfActive next job with a flow parent',
  [Code.MIGRATE_LANE_PAUSED]: 'its lane is paused (BullMQ has no lanes to hold it back): resume the lane and run again',
};
/**
 * The one table from a script's status code to the typed error of the refused call. Messages
 * begin with BullMQ's text for the same refusal when the caller names BullMQ's command
 * (docs/migrating-from-bullmq.md). add's per-job codes (-5, -7, -11) and addFlow's -12 carry the add's parent and lane, so
 * the add and flow bindings build those errors (src/lifecycle/cross-parents.ts, queue.ts,
 * flow-producer.ts); this table covers the codes of every other reply.
 */
const REFUSALS: Readonly<Partial<Record<StatusCode, (r: Refusal) => Error>>> = {
  [Code.NOT_FOUND]: (r) => new JobNotFoundError(r.jobId, r.op ?? '', refusalText(r, `Missing key for job ${r.jobId}. ${r.command}`, 'does not exist')),
  [Code.STALE]: (r) => new StaleJobError(r.jobId, r.op ?? '',
    refusalText(r, `Missing lock for job ${r.jobId}. ${r.command}`, 'is no longer held under this attempt (it finished or moved, or its lease expired)')),
  [Code.BAD_STATE]: (r) => new InvalidStateError(r.jobId, r.op ?? '', '',
    refusalText(r, `Job ${r.jobId} is not in the ${r.state ?? ''} state. ${r.command}`, r.state ? `is not ${r.state}` : 'is not in a state that allows this')),
  [Code.ACTIVE_JOBS]: (r) => new ActiveJobsError(r.queue ?? ''),
  [Code.MISSING_PARENT]: (r) => new InvalidStateError(r.jobId, r.op ?? '', '',
    refusalText(r, `Missing key for parent job ${r.parentKey}. ${r.command}`, r.parentKey === undefined ? 'has no parent' : `has a parent ${JSON.stringify(r.parentKey)} that does not exist`)),
  [Code.LOCK_MISMATCH]: (r) => new StaleJobError(r.jobId, r.op ?? '', refusalText(r, `Lock mismatch for job ${r.jobId}. Cmd ${r.command} from active`, 'is held under another token')),
  [Code.CHILD_FAILED]: (r) => new UnrecoverableError(`Cannot complete job ${r.jobId} because it has at least one failed child. ${r.command ?? r.op}`),
  [Code.PENDING_DEPENDENCIES]: (r) => pendingDependenciesError(r.jobId, r.command ?? 'moveToFinished'),
  [Code.UNKNOWN_LAYOUT]: (r) => new IncompatibleLayoutError(r.queue ?? '', r.layout ?? '?', LAYOUT_VERSION),
  [Code.BAD_ID]: (r) => guardError(Code.BAD_ID, r),
  [Code.BAD_LANE]: (r) => guardError(Code.BAD_LANE, r),
  [Code.BAD_ARGUMENT]: (r) => guardError(Code.BAD_ARGUMENT, r),
  // The move from BullMQ names these in its report; as errors they say what stays where.
  ...Object.fromEntries(Object.entries(MIGRATE_REASONS).map(([code, reason]) => [code, (r: Refusal) =>
    new EchoError(ErrorCodes.MIGRATION_REFUSED, refusalText({ jobId: r.jobId, op: r.op }, '', `stays in BullMQ: ${reason}`))])),
};

/**
 * The error of a reply {code, position} by which a script's guards refused a call (add, addFlow,
 * upsertScheduler), or undefined for any other reply. nameOf names the argument at that 1-based
 * ARGV position; args are the arguments as sent.
 */
export function guardRefusal(reply: unknown, args: readonly unknown[], op: string, nameOf: (pos: number) => string): Error | undefined {
  if (!Array.isArray(reply)) return undefined;
  const code = reply[0];
  if (code !== Code.BAD_ID && code !== Code.BAD_LANE && code !== Code.BAD_ARGUMENT) return undefined;
  const pos = Number(reply[1]);
  const sent = args[pos - 1];
  const got = typeof sent === 'string' ? (sent.length > 60 ? `${JSON.stringify(sent.slice(0, 60))}… (${sent.length} chars)` : JSON.stringify(sent)) : String(sent);
  return refusalError(code, { jobId: '', op, field: `${op} ${nameOf(pos)} (ARGV[${pos}])`, got });
}

/** A call the library's guards refused: a ValidationError naming the argument (nothing was written). */
function guardError(code: number, r: Refusal): ValidationError {
  const field = r.field ?? (r.op ? `${r.op} argument` : 'argument');
  return new ValidationError(field, GUARD_EXPECTED[code]!, r.got ?? JSON.stringify(r.jobId));
}

/** The typed error of a call the scripts refused with `code` (REFUSALS). */
export function refusalError(code: number, r: Refusal): Error {
  const make = REFUSALS[code as StatusCode];
  if (make) return make(r);
  return new EchoError(ErrorCodes.UNKNOWN, `${r.op || r.command}: unexpected reply ${code} for job ${JSON.stringify(r.jobId)}`);
}

/** A refusal described by echomq's call alone (no BullMQ text). */
export function errorFromCode(code: number, op: string, jobId: string, queue = ''): Error {
  return refusalError(code, { jobId, op, queue });
}

/**
 * A refused lock-holder call (job.moveToCompleted/moveToFailed/moveToDelayed/moveToWait/
 * moveToWaitingChildren; codes of scripts/lib/lock.lua): BullMQ's text for `command`, then echomq's.
 */
export function lockError(code: number, command: string, jobId: string): Error {
  return refusalError(code, { jobId, command, state: 'active' });
}

/** A processor's RateLimitError, also from another copy of the package (matched by name). */
export function isRateLimitError(e: unknown): boolean {
  return e instanceof RateLimitError || (e instanceof Error && e.name === 'RateLimitError');
}

import { EventEmitter } from 'node:events';

/** What reportError needs of an emitter (every echomq class that emits 'error'). */
interface ErrorEmitter {
  listenerCount(event: string): number;
  emit(event: string, ...args: unknown[]): boolean;
}

/**
 * Emits `err` as the emitter's 'error' event when someone listens; otherwise prints it with
 * console.error, as BullMQ does (an 'error' event nobody listens for would crash the process,
 * and dropping it would hide it). `who` names the emitter in the printed line.
 */
export function reportError(emitter: ErrorEmitter, who: string, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  if (emitter.listenerCount('error') > 0) emitter.emit('error', e);
  else printError(who, e);
}

/** How often one distinct error is printed at most (ms) when nobody listens for it. */
export const PRINT_EVERY_MS = 30_000;
const printed = new Map<string, { at: number; more: number }>();

/**
 * Prints an error nobody listens for as one line, `[echomq] <who>: <message>`, each distinct
 * line at most once per PRINT_EVERY_MS (a Redis that is away repeats its error every retry); a
 * line printed again says how many times it came meanwhile.
 */
export function printError(who: string, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  const line = `[echomq] ${who}: ${message.split('\n', 1)[0]}`;
  const now = Date.now();
  const seen = printed.get(line);
  if (seen && now - seen.at < PRINT_EVERY_MS) {
    seen.more++;
    return;
  }
  if (printed.size > 1000) printed.clear(); // distinct lines are few; never an unbounded map
  printed.set(line, { at: now, more: 0 });
  console.error(seen?.more ? `${line} (and ${seen.more} more times in the last ${Math.round((now - seen.at) / 1000)} s)` : line);
}

/** The name an emitter is printed under: its class and its queue's name when it has one. */
function whoOf(emitter: object): string {
  const name = (emitter as { name?: unknown }).name;
  const kind = emitter.constructor?.name ?? 'echomq';
  return typeof name === 'string' ? `${kind} ${name}` : kind;
}

/**
 * EventEmitter's emit with BullMQ's guard, for the classes whose emit overrides call it: an
 * exception thrown by a listener becomes an 'error' event instead of escaping into the caller
 * (the job loop, an add), and an 'error' nobody listens for, or one whose listener throws, is
 * printed with console.error instead of crashing the process.
 */
export function guardedEmit(emitter: EventEmitter, event: string | symbol, args: unknown[]): boolean {
  const emit = EventEmitter.prototype.emit;
  if (event === 'error' && emitter.listenerCount('error') === 0) {
    printError(whoOf(emitter), args[0]);
    return false;
  }
  try {
    return emit.call(emitter, event, ...args);
  } catch (err) {
    if (event === 'error' || emitter.listenerCount('error') === 0) {
      printError(whoOf(emitter), err);
      return false;
    }
    try {
      return emit.call(emitter, 'error', err);
    } catch (again) {
      printError(whoOf(emitter), again);
      return false;
    }
  }
}

/**
 * A call that was never sent because Redis could not be reached: the client did not become ready
 * while the call waited (up to the `connectWaitMs` connection option), so nothing was written and
 * the outcome is known. `code` is the socket's (ECONNREFUSED, ENOTFOUND, ETIMEDOUT…, or
 * ERR_REDIS_UNREACHABLE when no socket error was seen); the message begins with the socket's text
 * (`connect ECONNREFUSED 127.0.0.1:6390`), then says where Redis could not be reached. Also what
 * the 'error' event of every echomq class carries for a failure to connect.
 */
export class RedisUnreachableError extends Error {
  readonly code: string;
  /** `host:port` or the socket path. */
  readonly where: string;
  declare cause?: unknown;
  constructor(where: string, socketError?: Error & { code?: string }, waitedMs?: number, call = false, asSocket = false) {
    const head = socketError?.message ?? (waitedMs !== undefined ? `no connection within ${waitedMs} ms` : 'no connection');
    const waited = waitedMs !== undefined ? `the call waited ${waitedMs} ms and was not sent` : 'the call was not sent';
    // asSocket: the 'error' event's text stays the socket's own, as BullMQ's (programs match on it).
    super(asSocket && socketError ? head : `${head}: Redis cannot be reached at ${where}${call ? ` (${waited})` : ''}`);
    this.name = 'RedisUnreachableError';
    this.code = socketError?.code ?? 'ERR_REDIS_UNREACHABLE';
    this.where = where;
    this.cause = socketError;
  }
}
