/**
 * QueueGetters: the read side of a Queue (BullMQ's QueueGetters): jobs, counts, states,
 * deduplication holders, schedulers. Nothing here writes to Redis; the listings themselves live
 * in inspect.ts, which the worker hot path never imports.
 */
import { Job } from './job.js';
import { jobKey } from './keys.js';
import { getJobCounts, getJobs, type JobCounts, type JobStateName } from './inspect.js';
import { QueueBase } from './queue-base.js';
import * as v from './validate.js';
import * as schedulers from './schedulers.js';

export abstract class QueueGetters<DataType = any, ReturnType = any, NameType extends string = string> extends QueueBase {
  async getJob(id: string): Promise<Job<DataType, ReturnType, NameType> | undefined> {
    v.existingJobId(id);
    return (await Job.load(this.ctx, id, this)) as Job<DataType, ReturnType, NameType> | undefined;
  }

  /** See inspect.getJobs for the order of each state. */
  getJobs(states: JobStateName | JobStateName[] = [], start = 0, end = -1, asc = false): Promise<Job[]> {
    return getJobs(this.ctx, typeof states === 'string' ? [states] : states, start, end, asc);
  }

  getJobCounts(...states: JobStateName[]): Promise<Partial<JobCounts>> {
    return getJobCounts(this.ctx.client, this.keys, states);
  }

  /** Sum of the counts of the given states. */
  async getJobCountByTypes(...states: JobStateName[]): Promise<number> {
    const c = await this.getJobCounts(...states);
    return Object.values(c).reduce((a, b) => a + (b ?? 0), 0);
  }

  async count(): Promise<number> {
    return this.getJobCountByTypes('waiting', 'prioritized', 'paused', 'delayed', 'waiting-children');
  }

  async isPaused(): Promise<boolean> {
    return (await this.ctx.client.hget(this.keys.meta, 'paused')) === '1';
  }

  /**
   * The id of the job holding a deduplication id, or undefined when the id is free (never
   * used, released because its job finished, or its throttle window ended).
   */
  async getDeduplicationJobId(id: string): Promise<string | undefined> {
    v.nonEmptyString('deduplication id', id);
    const c = this.ctx.client;
    const [[, holder], [, until], [, [sec, usec]]] = (await c.multi()
      .hget(this.keys.dedup, id).zscore(this.keys.dedupx, id).time().exec()) as [
      [unknown, string | null], [unknown, string | null], [unknown, [string, string]]];
    if (!holder) return undefined;
    if (until !== null) return Number(until) > Number(sec) * 1000 + Math.floor(Number(usec) / 1000) ? holder : undefined;
    const st = await c.hget(jobKey(this.keys, holder), 'st');
    return st !== null && st !== 'c' && st !== 'f' ? holder : undefined; // live = not finished
  }

  getJobScheduler(id: string): Promise<schedulers.JobSchedulerJson<DataType> | undefined> {
    return schedulers.getJobScheduler(this.ctx.client, this.keys, id);
  }

  /** Schedulers by next slot; asc=false (default, as in BullMQ) lists the latest first. */
  getJobSchedulers(start = 0, end = -1, asc = false): Promise<Array<schedulers.JobSchedulerJson<DataType>>> {
    return schedulers.getJobSchedulers(this.ctx.client, this.keys, start, end, asc);
  }

  getJobSchedulersCount(): Promise<number> {
    return schedulers.getJobSchedulersCount(this.ctx.client, this.keys);
  }
}
