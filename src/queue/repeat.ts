/**
 * BullMQ's scheduler classes on echomq's job schedulers (schedulers.ts):
 * - `JobScheduler` (BullMQ 6): a queue's schedulers as their own object, `queue.jobScheduler`.
 * - `Repeat` (BullMQ 5's legacy repeatable jobs, still used by programs and tests written for
 *   it): `getRepeatableJobs`, `getRepeatableCount`, `removeRepeatableByKey` read and remove the
 *   same schedulers in the legacy shape. echomq has no second store of repeatable jobs: in
 *   BullMQ 5 both lived in one `repeat` set, and here a repeatable job *is* a scheduler, keyed by
 *   its id. Adding one goes through `upsertJobScheduler` (as BullMQ 6 requires).
 * Both share their queue's client when made by a Queue, and the Queue re-emits their 'error'.
 */
import { Job } from '../job/job.js';
import { QueueBase } from './queue-base.js';
import type { QueueOptions } from './queue-options.js';
import * as schedulers from '../lifecycle/schedulers.js';
import type { JobSchedulerJson, RepeatOptions, SchedulerJobOptions } from '../lifecycle/schedulers.js';
import * as v from '../core/validate.js';

/** BullMQ 5's RepeatableJob: a scheduler as the legacy getRepeatableJobs lists it. */
export interface RepeatableJob {
  key: string;
  name: string;
  endDate: number | null;
  tz: string | null;
  pattern: string | null;
  /** The interval in ms, as a string (BullMQ 5 read it from the stored key). */
  every: string | null;
  next: number;
}

/** The legacy shape of a scheduler. */
export function toRepeatableJob(s: JobSchedulerJson): RepeatableJob {
  return {
    key: s.key,
    name: s.name,
    endDate: s.endDate ?? null,
    tz: s.tz ?? null,
    pattern: s.pattern ?? null,
    every: s.every === undefined ? null : String(s.every),
    next: s.next,
  };
}

/** A queue's schedulers in BullMQ 5's legacy shape, by next slot (asc = false: latest first). */
export async function getRepeatableJobs(
  q: { client: QueueBase['client']; keys: QueueBase['keys'] }, start = 0, end = -1, asc = false,
): Promise<RepeatableJob[]> {
  return (await schedulers.getJobSchedulers(q.client, q.keys, start, end, asc)).map(toRepeatableJob);
}

export class JobScheduler extends QueueBase {
  constructor(name: string, opts: QueueOptions = {}) {
    super(name, opts);
  }

  /**
   * Creates or updates the scheduler and returns the job of its next slot (BullMQ 6's
   * signature; Queue.upsertJobScheduler is the usual entry). `override: false` (BullMQ's
   * worker-side call) leaves an existing scheduler as it is and returns undefined: echomq's
   * workers advance schedulers themselves. `producerId` is accepted, unused.
   */
  async upsertJobScheduler<T = any, R = any, N extends string = string>(
    jobSchedulerId: string,
    repeatOpts: Omit<RepeatOptions, 'key' | 'prevMillis'>,
    jobName: N,
    jobData: T,
    opts: SchedulerJobOptions = {},
    { override = true }: { override?: boolean; producerId?: string } = {},
  ): Promise<Job<T, R, N> | undefined> {
    this.open();
    if (override === false && (await this.isJobScheduler(jobSchedulerId))) return undefined;
    const job = await schedulers.upsertJobScheduler(this.ctx, undefined, jobSchedulerId, repeatOpts,
      { name: jobName, data: jobData, opts }, this.opts.settings?.repeatStrategy);
    return job as Job<T, R, N> | undefined;
  }

  /**
   * Removes the scheduler and its next job if that has not started. BullMQ's script code: 0 when
   * it was removed, 1 when there was none (Queue.removeJobScheduler gives the boolean).
   */
  async removeJobScheduler(jobSchedulerId: string): Promise<number> {
    this.open();
    return (await schedulers.removeJobScheduler(this.ctx.client, this.keys, jobSchedulerId)) ? 0 : 1;
  }

  async isJobScheduler(id: string): Promise<boolean> {
    return (await schedulers.getJobScheduler(this.ctx.client, this.keys, id)) !== undefined;
  }

  getScheduler<D = any>(id: string): Promise<JobSchedulerJson<D> | undefined> {
    return schedulers.getJobScheduler(this.ctx.client, this.keys, id);
  }

  getJobSchedulers<D = any>(start = 0, end = -1, asc = false): Promise<Array<JobSchedulerJson<D>>> {
    return schedulers.getJobSchedulers(this.ctx.client, this.keys, start, end, asc);
  }

  getSchedulersCount(): Promise<number> {
    return schedulers.getJobSchedulersCount(this.ctx.client, this.keys);
  }
}

export class Repeat extends QueueBase {
  constructor(name: string, opts: QueueOptions = {}) {
    super(name, opts);
  }

  /** The queue's schedulers in the legacy shape; asc = false (default) lists the latest slot first. */
  getRepeatableJobs(start = 0, end = -1, asc = false): Promise<RepeatableJob[]> {
    return getRepeatableJobs(this, start, end, asc);
  }

  getRepeatableCount(): Promise<number> {
    return schedulers.getJobSchedulersCount(this.ctx.client, this.keys);
  }

  /** Removes the scheduler `key` (a legacy key is a scheduler id here); whether it existed. */
  async removeRepeatableByKey(key: string): Promise<boolean> {
    this.open();
    v.nonEmptyString('key', key);
    return schedulers.removeJobScheduler(this.ctx.client, this.keys, key);
  }
}

interface SchedulerOwner {
  readonly name: string;
  readonly opts: QueueOptions;
  readonly client: QueueBase['client'];
  emit(event: 'error', err: unknown): boolean;
}

/**
 * The Queue's JobScheduler or Repeat (`_jobScheduler`, `_repeat`), made on first use on the
 * queue's client; its 'error' events become the queue's, as in BullMQ.
 */
export function attached<C extends typeof JobScheduler | typeof Repeat>(
  queue: SchedulerOwner & { _jobScheduler?: JobScheduler; _repeat?: Repeat },
  Kind: C,
): InstanceType<C> {
  const field = Kind === JobScheduler ? '_jobScheduler' : '_repeat';
  let made = queue[field] as InstanceType<C> | undefined;
  if (!made) {
    made = new Kind(queue.name, { ...queue.opts, connection: queue.client }) as InstanceType<C>;
    made.on('error', (err: unknown) => queue.emit('error', err));
    (queue as unknown as Record<string, unknown>)[field] = made;
  }
  return made;
}
