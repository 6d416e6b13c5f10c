/**
 * BullMQ Pro's names (docs/migrating-from-bullmq.md): QueuePro, WorkerPro, JobPro and
 * FlowProducerPro are Queue, Worker, Job and FlowProducer themselves (one code path); the group
 * methods are installed here on Queue's and Worker's prototypes, so every Queue has them.
 */
import { Queue } from '../queue/queue.js';
import { Worker } from '../worker/worker.js';
import { Job } from '../job/job.js';
import { FlowProducer } from '../lifecycle/flow-producer.js';
import type { JobContext } from '../job/job-context.js';
import * as g from './groups.js';

export { GroupMaxSizeExceededError } from './errors.js';
export { type WorkerGroupOptions, type GroupStatus, GROUP_STATUSES } from './groups.js';
export type { GroupOptions } from '../core/options.js';

export const QueuePro = Queue;
export type QueuePro<DataType = any, ReturnType = any, NameType extends string = string> = Queue<DataType, ReturnType, NameType>;
export const WorkerPro = Worker;
export type WorkerPro<D = any, R = any, N extends string = string> = Worker<D, R, N>;
export const JobPro = Job;
export type JobPro<DataType = any, ReturnType = any, NameType extends string = string> = Job<DataType, ReturnType, NameType>;
export const FlowProducerPro = FlowProducer;
export type FlowProducerPro = FlowProducer;

declare module '../queue/queue.js' {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  interface Queue<DataType, ReturnType, NameType extends string> {
    /** Most jobs of the group active at once across all workers; wins over the Worker's group.concurrency. */
    setGroupConcurrency(groupId: string, concurrency: number): Promise<void>;
    /** The group's concurrency: its own, else the Worker default, else null. */
    getGroupConcurrency(groupId: string): Promise<number | null>;
    /** Drops the group's own concurrency (the Worker default applies again). */
    removeGroupConcurrency(groupId: string): Promise<void>;
    /** At most max jobs of the group start per duration ms; wins over the Worker's group.limit. */
    setGroupRateLimit(groupId: string, max: number, duration: number): Promise<void>;
    /** Drops the group's own rate limit (the Worker default applies again). */
    removeGroupRateLimit(groupId: string): Promise<void>;
    /** Ms until the group may start jobs again; -2 without a window; 0 below maxJobs. */
    getGroupRateLimitTtl(groupId: string, maxJobs?: number): Promise<number>;
    /** false when already paused. A paused id is remembered before the group has jobs. */
    pauseGroup(groupId: string): Promise<boolean>;
    /** false when not paused (or no such group). */
    resumeGroup(groupId: string): Promise<boolean>;
    /** Waiting jobs in all groups, reading pageSize groups per call. */
    getGroupsJobsCount(pageSize?: number): Promise<number>;
    getGroupActiveCount(groupId: string): Promise<number>;
    /** Waiting jobs of the group, start..end inclusive, in the order they will be served. */
    getGroupJobs(groupId: string, start?: number, end?: number): Promise<Array<Job<DataType, ReturnType, NameType>>>;
    getGroupStatus(groupId: string): Promise<g.GroupStatus | null>;
    getGroupsByStatus(status: g.GroupStatus, start?: number, end?: number): Promise<Array<{ id: string; count: number }>>;
    getCountsPerPriorityForGroup(groupId: string, priorities: number[]): Promise<Record<string, number>>;
  }
}

declare module '../worker/worker.js' {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  interface Worker<D, R, N extends string> {
    /** The job's group leaves the ring for ms; throw Worker.RateLimitError() after it. */
    rateLimitGroup(job: Job, ms: number): Promise<void>;
  }
}

// The classes keep their context private; the group functions take it.
const qctx = (q: Queue): JobContext => (q as unknown as { ctx: JobContext }).ctx;
const open = (q: Queue): void => (q as unknown as { open(): void }).open();

const queueMethods: Record<string, (this: Queue, ...a: any[]) => Promise<unknown>> = {
  async setGroupConcurrency(id, n) { open(this); return g.setGroupConcurrency(qctx(this), id, n); },
  async getGroupConcurrency(id) { open(this); return g.getGroupConcurrency(qctx(this), id); },
  async removeGroupConcurrency(id) { open(this); return g.removeGroupConcurrency(qctx(this), id); },
  async setGroupRateLimit(id, max, duration) { open(this); return g.setGroupRateLimit(qctx(this), id, max, duration); },
  async removeGroupRateLimit(id) { open(this); return g.removeGroupRateLimit(qctx(this), id); },
  async getGroupRateLimitTtl(id, max) { open(this); return g.getGroupRateLimitTtl(qctx(this), id, max); },
  async pauseGroup(id) { open(this); return g.pauseGroup(qctx(this), id); },
  async resumeGroup(id) { open(this); return g.resumeGroup(qctx(this), id); },
  async getGroupsJobsCount(pageSize) { open(this); return g.getGroupsJobsCount(qctx(this), pageSize); },
  async getGroupActiveCount(id) { open(this); return g.getGroupActiveCount(qctx(this), id); },
  async getGroupJobs(id, start, end) { open(this); return g.getGroupJobs(qctx(this), id, start, end); },
  async getGroupStatus(id) { open(this); return g.getGroupStatus(qctx(this), id); },
  async getGroupsByStatus(status, start, end) { open(this); return g.getGroupsByStatus(qctx(this), status, start, end); },
  async getCountsPerPriorityForGroup(id, prios) { open(this); return g.getCountsPerPriorityForGroup(qctx(this), id, prios); },
};
for (const [name, fn] of Object.entries(queueMethods)) {
  Object.defineProperty(Queue.prototype, name, { value: fn, writable: true, configurable: true });
}
Object.defineProperty(Worker.prototype, 'rateLimitGroup', {
  value(this: Worker, job: Job, ms: number) {
    return g.rateLimitGroup((this as unknown as { ctx: JobContext }).ctx, job, ms);
  },
  writable: true,
  configurable: true,
});
