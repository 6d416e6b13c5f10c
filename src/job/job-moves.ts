/**
 * The lock holder's calls on a Job (BullMQ's manual processing and step jobs):
 * moveToCompleted, moveToFailed, moveToDelayed, moveToWait, moveToWaitingChildren, extendLock.
 * Job's methods are one-line delegates to these functions.
 *
 * Tokens: the caller's token names the lock owner (one token may serve many jobs); the attempt
 * the Job snapshot was claimed under (`attemptsStarted`) is sent beside it as the fence, so a
 * call for an attempt whose lease was recovered is refused even under the same token
 * (scripts/lib/lock.lua). A refused call changes nothing and throws BullMQ's text.
 */
import { retryPlan, type BackoffStrategy, type RetryPlan } from '../core/backoff.js';
import { lockError, UnrecoverableError, Code } from '../core/errors.js';
import type { HeldJob, JobContext, JobFactory } from './job-context.js';
import { jobKey, queueKeys } from '../core/keys.js';
import { drainOutbox, mayWriteOutbox } from './flows.js';
import { scripts, type ClaimedJob, type ClaimReply } from '../scripts/index.js';
import * as v from '../core/validate.js';

/** What a Worker lends the Jobs it hands out (JobContext.worker). */
export interface WorkerHooks {
  readonly leaseMs: number;
  readonly maxEventValueBytes: number;
  /** Data points of the per-minute metrics (0 = none). */
  readonly metrics: number;
  readonly keepCompleted: [number, number] | undefined;
  readonly keepFailed: [number, number] | undefined;
  readonly strategies: Record<string, BackoffStrategy>;
  readonly fallbackStrategy: BackoffStrategy | undefined;
  readonly maxStartedAttempts: number | undefined;
  /** The Worker option name: stored as processedBy on the jobs a fetchNext claims. */
  readonly name: string | undefined;
  /** A lock-holder call took the job out of `active`: stop renewing its lease. */
  released(jobId: string): void;
  /** A job claimed for `owner` by a fetchNext: the worker tracks it (lease renewal) and emits active. */
  adopt(claimed: ClaimedJob, owner: string): HeldJob;
}

/** A Job's context when a Worker made it. */
export interface MoveContext extends JobContext {
  readonly worker?: WorkerHooks;
}

/** BullMQ's reply of moveToCompleted / moveToFailed with fetchNext: [jobData, jobId, limitUntil, delayUntil]. */
export type NextJobTuple = [Record<string, unknown> | null, string | 0, number, number];

/** Key of the Job a tuple's jobData was made from, read by Job.fromJSON so the worker's context stays. */
export const NEXT_JOB = Symbol.for('echomq.nextJob');

/** moveToWaitingChildren.lua: a child failed the job (failParentOnFailure) while it ran. */
/** Lease of jobs claimed by a Job that no Worker made (BullMQ's default lockDuration). */
const DEFAULT_LEASE = 30_000;

function hooksOf(ctx: JobContext): WorkerHooks | undefined {
  return (ctx as MoveContext).worker;
}

function token(value: unknown): string {
  return v.nonEmptyString('token', value, 10_000);
}

/** BullMQ's JobJson of a claimed job (data as its JSON string), with the Job itself attached. */
export function jobJson(job: HeldJob): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: job.id, name: job.name, data: JSON.stringify(job.data ?? {}), opts: job.opts, progress: job.progress,
    delay: job.delay, priority: job.priority, timestamp: job.timestamp, attemptsStarted: job.attemptsStarted,
    attemptsMade: job.attemptsMade, stalledCounter: job.stalledCounter, processedOn: job.processedOn,
  };
  if (job.parentKey !== undefined) out.parentKey = job.parentKey;
  Object.defineProperty(out, NEXT_JOB, { value: job, enumerable: false });
  return out;
}

function nextTuple(job: HeldJob, ctx: JobContext, reply: ClaimReply, owner: string): NextJobTuple | [] {
  const cj = reply.jobs[0];
  // Nothing ready: BullMQ's empty reply, or the time the next delayed job is due.
  if (!cj) return reply.wakeInMs > 0 ? [null, 0, 0, Date.now() + reply.wakeInMs] : [];
  const hooks = hooksOf(ctx);
  // A job no worker made: the next one is built by the class of the job that asked (Job or a subclass).
  const next = hooks ? hooks.adopt(cj, owner) : (job.constructor as unknown as JobFactory).fromFields(ctx, cj.id, cj.fields);
  return [jobJson(next), next.id, 0, 0];
}

async function afterFinish(ctx: JobContext, job: HeldJob): Promise<void> {
  hooksOf(ctx)?.released(job.id);
  // Flows: a parent in another queue learns the outcome through this queue's outbox, before the
  // call returns (BullMQ's settle updates the parent in the same call): the caller may settle
  // the parent next. A failed delivery stays in the outbox for the workers' sweep.
  if (mayWriteOutbox(job.parentKey)) await drainOutbox(ctx.client, ctx.keys).catch(() => {});
}

export async function moveToCompleted(job: HeldJob, ctx: JobContext, returnValue: unknown, owner: string, fetchNext = true): Promise<NextJobTuple | []> {
  token(owner);
  const hooks = hooksOf(ctx);
  const json = v.encodeJson('returnvalue', returnValue === undefined ? null : returnValue, ctx.maxPayloadBytes);
  const r = await scripts.completeMany(ctx, {
    jobs: [{ id: job.id, token: String(job.attemptsStarted), returnValue: json }],
    fetch: fetchNext ? 1 : 0, leaseMs: hooks?.leaseMs ?? DEFAULT_LEASE, maxEventValueBytes: hooks?.maxEventValueBytes ?? 16384,
    owner, metrics: hooks?.metrics, keep: hooks?.keepCompleted, name: hooks?.name,
  });
  const code = r.codes[0]!;
  if (code !== 1) throw lockError(code, 'moveToFinished', job.id);
  job.returnvalue = returnValue;
  job.attemptsMade++;
  job.finishedOn = Date.now();
  await afterFinish(ctx, job);
  return fetchNext ? nextTuple(job, ctx, r, owner) : [];
}

/** The stack trace list a failed attempt stores: the job's, plus this error's, the newest stackTraceLimit (10). */
export function failedStack(job: HeldJob, err: Error): string {
  const limit = Number((job.opts as { stackTraceLimit?: number }).stackTraceLimit ?? 10);
  const all = [...job.stacktrace, err.stack ?? String(err)];
  return JSON.stringify(limit > 0 ? all.slice(-limit) : []);
}

/** What a failed attempt leads to, with the worker's maxStartedAttempts (no retry once reached). */
export function failurePlan(job: HeldJob, err: Error, hooks: Pick<WorkerHooks, 'strategies' | 'fallbackStrategy' | 'maxStartedAttempts'> | undefined): RetryPlan | Promise<RetryPlan> {
  const plan = retryPlan(job, err, hooks?.strategies ?? {}, hooks?.fallbackStrategy);
  const max = hooks?.maxStartedAttempts;
  const cap = (p: RetryPlan): RetryPlan => {
    if (p.retryDelay >= 0 && max && job.attemptsStarted >= max) p.retryDelay = -1;
    return p;
  };
  // A promise only when a custom strategy is async; callers await it then and only then.
  return plan instanceof Promise ? plan.then(cap) : cap(plan);
}

export async function moveToFailed(job: HeldJob, ctx: JobContext, err: Error, owner: string, fetchNext = false): Promise<NextJobTuple | []> {
  token(owner);
  if (!(err instanceof Error)) v.fail('err', 'an Error', err);
  const hooks = hooksOf(ctx);
  const plan = await failurePlan(job, err, hooks);
  const stack = failedStack(job, err);
  // As BullMQ's: a retry now fetches no next job (the caller may claim the retry itself); a retry
  // after a backoff (BullMQ's moveToDelayed) and a final failure may.
  const fetch = fetchNext && plan.retryDelay !== 0;
  const r = await scripts.fail(ctx, {
    id: job.id, token: String(job.attemptsStarted), reason: plan.reason, stack, retryDelayMs: plan.retryDelay,
    exhausted: plan.exhausted, fetch: fetch ? 1 : 0, leaseMs: hooks?.leaseMs ?? DEFAULT_LEASE,
    owner, metrics: hooks?.metrics, keep: hooks?.keepFailed, name: hooks?.name,
  });
  // BullMQ's command names: retryJob (retry now), moveToDelayed (retry later), moveToFinished.
  if (typeof r === 'number') throw lockError(r, plan.retryDelay === 0 ? 'retryJob' : plan.retryDelay > 0 ? 'moveToDelayed' : 'moveToFinished', job.id);
  job.failedReason = plan.reason;
  job.attemptsMade = plan.made;
  job.stacktrace = JSON.parse(stack) as string[];
  if (plan.retryDelay < 0) job.finishedOn = Date.now();
  else if (plan.retryDelay > 0) job.delay = plan.retryDelay;
  await afterFinish(ctx, job);
  if (!fetch) return [];
  const next = nextTuple(job, ctx, r, owner);
  // BullMQ's moveToDelayed replies with the next job or nothing (no time of the next delayed job).
  return plan.retryDelay > 0 && next[0] === null ? [] : next;
}

export async function moveToDelayed(job: HeldJob, ctx: JobContext, timestamp: number, owner?: string): Promise<void> {
  v.integerIn('timestamp', typeof timestamp === 'number' ? Math.floor(timestamp) : timestamp, 0, Number.MAX_SAFE_INTEGER, 'a time in ms since the epoch');
  if (owner !== undefined) token(owner);
  // BullMQ's argument is a time on the caller's clock; the due time is kept on the Redis clock.
  const delay = Math.max(0, Math.floor(timestamp - Date.now()));
  const r = await scripts.moveToDelayed(ctx, { id: job.id, owner: owner ?? '', fence: owner === undefined ? '' : String(job.attemptsStarted), delayMs: delay });
  if (r < 0) throw lockError(r, 'moveToDelayed', job.id);
  job.delay = delay;
  hooksOf(ctx)?.released(job.id);
}

export async function moveToWait(job: HeldJob, ctx: JobContext, owner?: string): Promise<number> {
  if (owner !== undefined) token(owner);
  const r = await scripts.moveToWaitAs(ctx, { id: job.id, owner: owner ?? '', fence: owner === undefined ? '' : String(job.attemptsStarted) });
  if (r < 0) throw lockError(r, 'moveJobFromActiveToWait', job.id);
  hooksOf(ctx)?.released(job.id);
  return r;
}

/** The physical job key of a child named BullMQ's way ({ id, queue: '<prefix>:<queue>' }). */
function childKey(ctx: JobContext, child: { id?: unknown; queue?: unknown }): string {
  const id = v.existingJobId(child.id, 'opts.child.id');
  const queue = v.nonEmptyString('opts.child.queue', child.queue);
  const own = `${ctx.keys.prefix}:`;
  if (queue.startsWith(own)) return jobKey(queueKeys(queue.slice(own.length), ctx.keys.prefix), id);
  const i = queue.indexOf(':');
  if (i <= 0) v.fail('opts.child.queue', "a qualified queue name '<prefix>:<queue>'", queue);
  return jobKey(queueKeys(queue.slice(i + 1), queue.slice(0, i)), id);
}

export async function moveToWaitingChildren(job: HeldJob, ctx: JobContext, owner: string, opts: { child?: { id: string; queue: string } } = {}): Promise<boolean> {
  token(owner);
  const o = v.plainObject('opts', opts);
  const child = o.child === undefined ? '' : childKey(ctx, v.plainObject('opts.child', o.child));
  const r = await scripts.moveToWaitingChildren(ctx, { id: job.id, owner, fence: String(job.attemptsStarted), childKey: child });
  // Code.CHILD_FAILED becomes BullMQ's UnrecoverableError through the same table
  if (r < 0) throw lockError(r, 'moveToWaitingChildren', job.id);
  if (r === 1) hooksOf(ctx)?.released(job.id);
  return r === 1;
}

/** Renews the job's lease for `duration` ms: 1, or 0 when the caller does not hold it (BullMQ's reply). */
export async function extendLock(job: HeldJob, ctx: JobContext, owner: string, duration: number): Promise<number> {
  token(owner);
  v.integerIn('duration', duration, 1, 86_400_000);
  const refused = await scripts.extendLocks(ctx, { leaseMs: duration, jobs: [{ id: job.id, owner, fence: String(job.attemptsStarted) }] });
  return refused.length === 0 ? 1 : 0;
}

/** worker.extendJobLocks: renews the leases of jobs held under the given tokens; returns the ids not renewed. */
export async function extendJobLocks(ctx: JobContext, jobIds: string[], tokens: string[], duration: number): Promise<string[]> {
  if (!Array.isArray(jobIds)) v.fail('jobIds', 'an array of job ids', jobIds);
  if (!Array.isArray(tokens) || tokens.length !== jobIds.length) v.fail('tokens', `an array of ${jobIds.length} tokens`, tokens);
  v.integerIn('duration', duration, 1, 86_400_000);
  if (jobIds.length === 0) return [];
  const jobs = jobIds.map((id, i) => ({ id: v.existingJobId(id, `jobIds[${i}]`), owner: token(tokens[i]), fence: '' }));
  const out: string[] = [];
  for (let i = 0; i < jobs.length; i += 1000) out.push(...(await scripts.extendLocks(ctx, { leaseMs: duration, jobs: jobs.slice(i, i + 1000) })));
  return out;
}

/** The unrecoverable error of a job started more than maxStartedAttempts times (BullMQ's text). */
export function startedTooOften(): UnrecoverableError {
  return new UnrecoverableError('job started more than allowable limit');
}
