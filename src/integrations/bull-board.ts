/**
 * bull-board adapter: shows echomq queues in bull-board (`@bull-board/api`, an optional peer
 * dependency), with everything its BullMQ adapter shows — counts per state, paged job lists,
 * job detail (data, options with lane and priority, progress, logs, return value, error and
 * stack), the actions (retry, promote, remove, clean, pause, resume, add, empty, obliterate),
 * schedulers, workers, metrics and the global concurrency and rate limit.
 *
 *   import { createBullBoard } from '@bull-board/api';
 *   import { EchoMQAdapter } from 'echomq/bull-board';
 *   createBullBoard({ queues: [new EchoMQAdapter(queue)], serverAdapter });
 *
 * echomq's Queue has BullMQ's API, so each method is a thin call; the adapter exists because
 * bull-board's BullMQ adapter accepts only queues whose metaValues name BullMQ.
 */
import { createRequire } from 'node:module';
import type { BaseAdapter as BaseAdapterType } from '@bull-board/api/dist/queueAdapters/base.js';
import type { QueueAdapterOptions } from '@bull-board/api/dist/types.js';
import type { Queue } from '../queue/queue.js';

// bull-board ships CommonJS; loading it through require keeps this module loadable by both
// `import` and `require` without an interop default.
const { BaseAdapter } = createRequire(import.meta.url)('@bull-board/api/dist/queueAdapters/base.js') as {
  BaseAdapter: typeof BaseAdapterType;
};

type Options = Partial<QueueAdapterOptions & { allowCompletedRetries: boolean }>;
type Abstract = BaseAdapterType;
type JobStatus = Parameters<Abstract['getJobs']>[0][number];

/** bull-board's BullMQ states, in its order; echomq has them all (a paused queue's jobs are waiting). */
const JOB_STATUSES = ['active', 'waiting', 'waiting-children', 'prioritized', 'completed', 'failed', 'delayed'] as const;

/** The `:w:<name>` suffix of a named worker's connection name (BullMQ's scheme, keys.ts clientName). */
const WORKER_NAME_SEPARATOR = ':w:';

export class EchoMQAdapter extends BaseAdapter {
  readonly queue: Queue;

  constructor(queue: Queue, options: Options = {}) {
    // 'bullmq': the UI offers BullMQ's features (flows, schedulers, priorities) for this queue.
    super('bullmq', options);
    if (!queue || typeof queue.add !== 'function' || typeof queue.getJobCounts !== 'function' || typeof queue.name !== 'string') {
      throw new TypeError(`EchoMQAdapter needs an echomq Queue, got ${queue === null ? 'null' : typeof queue}`);
    }
    this.queue = queue;
  }

  getName(): string {
    return `${this.prefix}${this.queue.name}`;
  }

  async getRedisInfo(): Promise<string> {
    const client = this.queue.client;
    if ('nodes' in client && typeof client.nodes === 'function') {
      // A Cluster: bull-board parses one INFO text; the first master's is representative.
      const [first] = client.nodes('master');
      return first.info();
    }
    return client.info();
  }

  async clean(status: Parameters<Abstract['clean']>[0], graceTimeMs: number): Promise<void> {
    await this.queue.clean(graceTimeMs, Number.MAX_SAFE_INTEGER, status as never);
  }

  addJob(name: string, data: unknown, options: Parameters<Abstract['addJob']>[2]) {
    return this.queue.add(name, data, options as never) as never;
  }

  getJob(id: string) {
    return this.queue.getJob(id) as never;
  }

  async getJobs(statuses: JobStatus[], start?: number, end?: number) {
    const jobs = await this.queue.getJobs(statuses as never, start, end);
    return jobs.filter((j) => !!j) as never;
  }

  getJobCounts() {
    return this.queue.getJobCounts() as never;
  }

  async getJobLogs(id: string): Promise<string[]> {
    return (await this.queue.getJobLogs(id)).logs;
  }

  async getMetrics(type: Parameters<Abstract['getMetrics']>[0], start?: number, end?: number) {
    const m = await this.queue.getMetrics(type, start, end);
    return { ...m, data: m.data.map((p: unknown) => Number(p) || 0) } as never;
  }

  override async getWorkers() {
    return this.normalizeWorkers(await this.queue.getWorkers(), WORKER_NAME_SEPARATOR);
  }

  isPaused(): Promise<boolean> {
    return this.queue.isPaused();
  }

  pause(): Promise<void> {
    return this.queue.pause();
  }

  resume(): Promise<void> {
    return this.queue.resume();
  }

  async empty(): Promise<void> {
    await this.queue.drain();
  }

  obliterate(opts: { force?: boolean } = {}): Promise<void> {
    return this.queue.obliterate({ force: opts.force ?? false });
  }

  async promoteAll(): Promise<void> {
    await this.queue.promoteJobs();
  }

  removeJobScheduler(id: string): Promise<boolean> {
    return this.queue.removeJobScheduler(id);
  }

  async getJobSchedulers() {
    const list = await this.queue.getJobSchedulers(0, -1);
    return list.map((s) => ({
      id: s.key, name: s.name, pattern: s.pattern, every: s.every, tz: s.tz, limit: s.limit,
      startDate: s.startDate, endDate: s.endDate, next: s.next ?? undefined, iterationCount: s.iterationCount,
      template: s.template,
    })) as never;
  }

  getJobSchedulersCount(): Promise<number> {
    return this.queue.getJobSchedulersCount();
  }

  override get supportsJobSchedulerUpdate(): boolean {
    return true;
  }

  override get supportsJobSchedulerRun(): boolean {
    return true;
  }

  async updateJobScheduler(id: string, repeat: Parameters<Abstract['updateJobScheduler']>[1]) {
    const current = await this.queue.getJobScheduler(id);
    if (!current) return 'not-found' as const;
    // The template goes back as stored: an upsert without it would drop the name, data and options.
    const template = { name: current.name, data: current.template?.data, opts: current.template?.opts };
    try {
      const next = await this.queue.upsertJobScheduler(id, repeat as never, template as never);
      return next ? ('updated' as const) : ('invalid-schedule' as const);
    } catch (err) {
      if (!(repeat as { pattern?: string }).pattern) throw err;
      return 'invalid-schedule' as const; // a cron pattern that does not parse; nothing was written
    }
  }

  async runJobSchedulerNow(id: string) {
    const s = await this.queue.getJobScheduler(id);
    if (!s) return 'not-found' as const;
    return this.queue.add(s.name, s.template?.data, s.template?.opts as never) as never;
  }

  getStatuses() {
    return ['latest', ...JOB_STATUSES] as never;
  }

  getJobStatuses() {
    return [...JOB_STATUSES] as never;
  }

  getGlobalConcurrency(): Promise<number | null> {
    return this.queue.getGlobalConcurrency();
  }

  async setGlobalConcurrency(concurrency: number): Promise<void> {
    if (concurrency <= 0) await this.queue.removeGlobalConcurrency();
    else await this.queue.setGlobalConcurrency(concurrency);
  }

  override get supportsGlobalRateLimit(): boolean {
    return true;
  }

  override async getConfiguredRateLimit() {
    return (await this.queue.getGlobalRateLimit()) ?? null;
  }

  override async setConfiguredRateLimit({ max, duration }: { max: number; duration: number }): Promise<void> {
    await this.queue.setGlobalRateLimit(max, duration);
  }

  override async removeConfiguredRateLimit(): Promise<void> {
    await this.queue.removeGlobalRateLimit();
  }

  override async getActiveRateLimitTtl(): Promise<number> {
    const ttl = await this.queue.getRateLimitTtl();
    return ttl > 0 ? ttl : 0;
  }

  override async releaseActiveRateLimit(): Promise<void> {
    await this.queue.removeRateLimitKey();
  }

  override getQueueDefaultJobOptions() {
    return (this.queue.opts.defaultJobOptions ?? {}) as never;
  }

  /** BullMQ-style logical key of one of the queue's sets (what @bull-board/metrics asks for). */
  getQueueKey(set: string): string {
    return this.queue.toKey(set);
  }
}
