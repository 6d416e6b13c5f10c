/**
 * QueueGetters: the read side of a Queue (BullMQ's QueueGetters): jobs, counts, states, logs,
 * dependencies, limits, deduplication holders, schedulers, workers, metrics. Nothing here writes
 * to Redis; the listings themselves live in inspect.ts, which the worker hot path never imports.
 *
 * Names, argument order, defaults and return values are BullMQ 6's. Job types are BullMQ's
 * (`wait` = `waiting`, `paused`, `repeat`, `waiting-children`, `prioritized`; see
 * inspect.typeKind). Orders: see inspect.rangeIds; with one lane they are BullMQ's.
 */
import { readFileSync } from 'node:fs';
import { Job, stateName, type JobState } from '../job/job.js';
import { clientName, depsKey, jobKey, logsKey, queueKeys } from '../core/keys.js';
import { countJobTypes, jobTypes, rangeArgs, rangeIds, typeKind, typeRanges, type JobType } from '../ops/inspect.js';
import { loadJobs } from '../job/load-jobs.js';
import { laneCountsPerPriority } from '../ops/lane-ready.js';
import { countSet } from '../ops/active-set.js';
import { QueueBase } from './queue-base.js';
import { bullmqPrometheusText, isGlobalVariables, readMetrics, type Metrics } from './queue-metrics.js';
import { clientsNamed, type ClientInfo } from './workers-list.js';
import { parseJobKey } from '../core/keys.js';
import type { MetricsOptions } from '../ops/metrics.js';
import * as v from '../core/validate.js';
import * as schedulers from '../lifecycle/schedulers.js';
import { toRepeatableJob, type RepeatableJob } from './repeat.js';
import { JobField, JobStateCode, MetaField } from '../core/fields.js';
import { redisTimeMs } from '../core/values.js';
import * as groups from '../pro/groups.js';

/** echomq's version, as `metaValues.version` and getVersion() give it (`echomq:<version>`). */
const VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
})();

/** BullMQ's meta hash fields that getMeta exposes (QueueMeta). */
export interface QueueMeta {
  concurrency?: number;
  max?: number;
  duration?: number;
  maxLenEvents?: number;
  paused?: boolean;
  version?: string;
}

/** A child as getDependencies lists it: BullMQ's logical key `<prefix>:<queue>:<id>`, and its value when processed. */
export interface DependencyItem {
  id: string;
  v?: any;
  err?: string;
}

/** What recordJobCountsMetric needs of a BullMQ Telemetry meter. */
interface TelemetryMeter {
  createGauge(name: string, options?: { description?: string; unit?: string }): { record(value: number, attributes?: Record<string, string>): void };
}

/** Lanes whose counts one pipeline reads (getCountsPerPriority). */
const LANE_PAGE = 500;
/** Reads per type of a bounded getJobs window that skips missing job hashes (BullMQ's bound). */
const GET_JOBS_BACKFILL = 5;

export class QueueGetters<DataType = any, ReturnType = any, NameType extends string = string> extends QueueBase {
  async getJob(id: string): Promise<Job<DataType, ReturnType, NameType> | undefined> {
    v.existingJobId(id);
    return (await Job.load(this.ctx, id, this)) as Job<DataType, ReturnType, NameType> | undefined;
  }

  /** BullMQ's connection name for this queue (`<prefix>:<base64 queue name><suffix>`, see keys.clientName). */
  clientName(suffix = ''): string {
    return clientName(this.keys, suffix);
  }

  // ---- counts -------------------------------------------------------------------------------

  /** Jobs waiting to be processed: waiting + delayed + prioritized + waiting-children (BullMQ's). */
  count(): Promise<number> {
    return this.getJobCountByTypes('waiting', 'delayed', 'prioritized', 'waiting-children');
  }

  /**
   * Count per type, keyed by the name given (`wait` and `waiting` are both keys when both are
   * asked). No types: BullMQ's seven (active, completed, delayed, failed, prioritized, waiting,
   * waiting-children). A paused queue's jobs are still `waiting`, as in BullMQ 6; `paused` is 0.
   */
  getJobCounts(...types: JobType[]): Promise<Record<string, number>> {
    return countJobTypes(this.ctx.client, this.keys, jobTypes(types));
  }

  /**
   * getJobCounts(...types), also recorded as gauges on the meter of a BullMQ-style
   * `telemetry: { meter }` queue option when there is one (BullMQ's metric and attribute names:
   * `bullmq.queue.jobs`, `bullmq.queue.name`, `bullmq.queue.jobs.state`).
   */
  async recordJobCountsMetric(...types: JobType[]): Promise<Record<string, number>> {
    const counts = await this.getJobCounts(...types);
    const meter = (this.opts as { telemetry?: { meter?: TelemetryMeter } }).telemetry?.meter;
    if (meter) {
      const gauge = meter.createGauge('bullmq.queue.jobs', { description: 'Number of jobs in the queue by state', unit: '{jobs}' });
      for (const [state, n] of Object.entries(counts)) gauge.record(n, { 'bullmq.queue.name': this.name, 'bullmq.queue.jobs.state': state });
    }
    return counts;
  }

  /** Sum of getJobCounts(...types). */
  async getJobCountByTypes(...types: JobType[]): Promise<number> {
    const c = await this.getJobCounts(...types);
    return Object.values(c).reduce((a, b) => a + b, 0);
  }

  getCompletedCount(): Promise<number> {
    return this.getJobCountByTypes('completed');
  }

  getFailedCount(): Promise<number> {
    return this.getJobCountByTypes('failed');
  }

  /** Delayed jobs; with `timestamp` (ms), only those due strictly before it. */
  async getDelayedCount(timestamp?: number): Promise<number> {
    if (timestamp === undefined) return this.getJobCountByTypes('delayed');
    if (!Number.isSafeInteger(timestamp)) v.fail('timestamp', 'a safe integer in milliseconds', timestamp);
    return this.ctx.client.zcount(this.keys.delayed, '-inf', `(${timestamp}`);
  }

  getActiveCount(): Promise<number> {
    return this.getJobCountByTypes('active');
  }

  getPrioritizedCount(): Promise<number> {
    return this.getJobCountByTypes('prioritized');
  }

  /** Waiting jobs (priority 0), whether the queue is paused or not. */
  getWaitingCount(): Promise<number> {
    return this.getJobCountByTypes('waiting');
  }

  getWaitingChildrenCount(): Promise<number> {
    return this.getJobCountByTypes('waiting-children');
  }

  /**
   * Ready jobs per priority, `{ [priority]: count }` (duplicates asked once), paused or not.
   * Priority 0 comes from the meta counters; the others cost one ZCOUNT per lane and priority,
   * in pipelines of 500 lanes.
   */
  async getCountsPerPriority(priorities: number[]): Promise<Record<string, number>> {
    if (!Array.isArray(priorities)) v.fail('priorities', 'an array of priorities', priorities);
    const unique = [...new Set(priorities)];
    unique.forEach((p, i) => v.priority(p, `priorities[${i}]`));
    const out: Record<string, number> = {};
    for (const p of unique) out[String(p)] = 0;
    const c = this.ctx.client;
    if (unique.includes(0)) out['0'] = (await this.getJobCounts('waiting')).waiting;
    const rest = unique.filter((p) => p > 0);
    if (rest.length === 0) return out;
    let cursor = '-';
    for (;;) {
      const lanes = await c.zrangebylex(this.keys.lanes, cursor, '+', 'LIMIT', 0, LANE_PAGE);
      const counts = await laneCountsPerPriority(c, this.keys, lanes, rest);
      counts.forEach((n, i) => {
        out[String(rest[i])] += n;
      });
      if (lanes.length < LANE_PAGE) return out;
      cursor = `(${lanes[lanes.length - 1]}`;
    }
  }

  // ---- listings -----------------------------------------------------------------------------

  /**
   * Jobs of the given types, BullMQ's JobType names (several at once, each job once). For each
   * type the window start…end (Redis range semantics: negative from the end, cut at the end) of
   * its order, ascending with asc=true. Default asc=false lists newest first: for waiting the
   * job that will be served last comes first, as in BullMQ. Orders: inspect.rangeIds.
   */
  async getJobs(types?: JobType[] | JobType, start = 0, end = -1, asc = false): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    // `repeat` holds job scheduler ids, which are no jobs (BullMQ finds no job under them either).
    const wanted = jobTypes(types).filter((t) => t !== 'repeat');
    const [s, e] = rangeArgs(start, end);
    v.boolean('asc', asc);
    if (s < 0 || e < 0) {
      const ids = await typeRanges(this.ctx.client, this.keys, wanted, s, e, asc);
      return (await loadJobs(this.ctx, ids)) as Array<Job<DataType, ReturnType, NameType>>;
    }
    // A bounded window skips ids whose job hash is gone and, as BullMQ, fills the page from
    // the ids after it: at most GET_JOBS_BACKFILL reads per type.
    const seen = new Set<string>();
    const out: Job[] = [];
    for (const t of wanted) {
      const kind = typeKind(t);
      if (kind === null) continue;
      const needed = e - s + 1;
      let got = 0;
      let cursor = s;
      for (let round = 0; got < needed && round < GET_JOBS_BACKFILL; round++) {
        const want = needed - got;
        const ids = await rangeIds(this.ctx.client, this.keys, kind, cursor, cursor + want - 1, asc);
        if (ids.length === 0) break;
        cursor += ids.length;
        for (const job of await loadJobs(this.ctx, ids)) {
          got++;
          if (seen.has(job.id!)) continue;
          seen.add(job.id!);
          out.push(job);
        }
        if (ids.length < want) break; // the list ended
      }
    }
    return out as Array<Job<DataType, ReturnType, NameType>>;
  }

  /**
   * Job ids of the given types (BullMQ's default window is 0…1). `repeat` gives job scheduler
   * ids. Ids appear once, in the order of the types. Unlike BullMQ, asc=true reverses the lists
   * after a `paused` type too (BullMQ's reversal skips a list for each `paused` before it).
   */
  async getRanges(types: JobType[], start = 0, end = 1, asc = false): Promise<string[]> {
    const [s, e] = rangeArgs(start, end);
    v.boolean('asc', asc);
    if (Array.isArray(types) && types.length === 0) return []; // BullMQ: no types, no ids
    return typeRanges(this.ctx.client, this.keys, jobTypes(types), s, e, asc);
  }

  /** Waiting jobs in service order (the next one served first). */
  getWaiting(start = 0, end = -1): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    return this.getJobs(['waiting'], start, end, true);
  }

  getWaitingChildren(start = 0, end = -1): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    return this.getJobs(['waiting-children'], start, end, true);
  }

  /** Active jobs, earliest lease deadline (≈ started first) first. */
  getActive(start = 0, end = -1): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    return this.getJobs(['active'], start, end, true);
  }

  /** Delayed jobs, the first due first. */
  getDelayed(start = 0, end = -1): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    return this.getJobs(['delayed'], start, end, true);
  }

  /** Prioritized jobs in service order. */
  getPrioritized(start = 0, end = -1): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    return this.getJobs(['prioritized'], start, end, true);
  }

  /** Completed jobs, the last finished first. */
  getCompleted(start = 0, end = -1): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    return this.getJobs(['completed'], start, end, false);
  }

  /** Failed jobs, the last finished first. */
  getFailed(start = 0, end = -1): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    return this.getJobs(['failed'], start, end, false);
  }

  // ---- one job ------------------------------------------------------------------------------

  /** One of BullMQ's states, or 'unknown' when there is no such job. */
  async getJobState(jobId: string): Promise<JobState | 'unknown'> {
    v.existingJobId(jobId);
    const [st, prio] = await this.ctx.client.hmget(jobKey(this.keys, jobId), JobField.state, JobField.priority);
    return stateName(st ?? undefined, Number(prio ?? 0));
  }

  /**
   * A job's log lines start…end (LRANGE semantics) and how many it has. asc=false counts the
   * window from the newest line and lists newest first. A missing job has `{ logs: [], count: 0 }`.
   */
  async getJobLogs(jobId: string, start = 0, end = -1, asc = true): Promise<{ logs: string[]; count: number }> {
    v.existingJobId(jobId);
    const [s, e] = rangeArgs(start, end);
    const key = logsKey(this.keys, jobId);
    const m = this.ctx.client.multi();
    if (asc) m.lrange(key, s, e);
    else m.lrange(key, -(e + 1), -(s + 1));
    const r = (await m.llen(key).exec())!;
    const logs = r[0][1] as string[];
    return { logs: asc ? logs : logs.reverse(), count: Number(r[1][1]) };
  }

  /**
   * A flow parent's children of one kind, in pages: `processed` (completed children, with their
   * return value as `v`) or `pending` (not finished). Ids are BullMQ's logical child keys
   * (`<prefix>:<queue>:<id>`); `jobs` holds the listed children that still exist (toJSON);
   * `total` counts every child of that kind. The order is the hash scan order, as in BullMQ.
   */
  async getDependencies(
    parentId: string, type: 'processed' | 'pending', start: number, end: number,
  ): Promise<{ items: DependencyItem[]; jobs: Array<Record<string, unknown>>; total: number }> {
    v.existingJobId(parentId, 'parentId');
    if (type !== 'processed' && type !== 'pending') v.fail('type', "'processed' or 'pending'", type);
    const s = v.nonNegativeInt('start', start);
    const e = v.integerIn('end', end, -1, Number.MAX_SAFE_INTEGER);
    const want = type === 'processed' ? 'c' : 'p';
    const children = new Map<string, DependencyItem>(); // a Map: HSCAN may repeat a field
    let cursor = '0';
    do {
      const [next, flat] = await this.ctx.client.hscan(depsKey(this.keys, parentId), cursor, 'COUNT', 500);
      cursor = next;
      for (let i = 0; i < flat.length; i += 2) {
        if (flat[i + 1][0] !== want) continue;
        const parsed = parseJobKey(flat[i]);
        const item: DependencyItem = { id: parsed ? `${parsed.prefix}:${parsed.queue}:${parsed.id}` : flat[i] };
        if (want === 'c') {
          try {
            item.v = JSON.parse(flat[i + 1].slice(1));
          } catch (err) {
            item.err = (err as Error).message;
          }
        }
        children.set(flat[i], item);
      }
    } while (cursor !== '0');
    const page = [...children].map(([key, item]) => ({ key, item })).slice(s, e < 0 ? undefined : e + 1);
    // The listed children that still exist, 1,000 reads in flight at a time (separate commands,
    // not one pipeline: in a Cluster a child of another queue lives in another slot).
    const jobs: Array<Record<string, unknown>> = [];
    for (let from = 0; from < page.length; from += 1000) {
      const part = page.slice(from, from + 1000);
      const hashes = await Promise.all(part.map((c) => this.ctx.client.hgetall(c.key)));
      part.forEach((c, i) => {
        const parsed = parseJobKey(c.key);
        if (!parsed || Object.keys(hashes[i]).length === 0) return;
        jobs.push(Job.fromHash({ ...this.ctx, keys: queueKeys(parsed.queue, parsed.prefix) }, parsed.id, hashes[i]).toJSON());
      });
    }
    return { items: page.map((c) => c.item), jobs, total: children.size };
  }

  // ---- limits and settings ------------------------------------------------------------------

  /** Queue-wide concurrency limit, or null when none is set. */
  async getGlobalConcurrency(): Promise<number | null> {
    const n = await this.ctx.client.hget(this.keys.meta, MetaField.concurrency);
    return n ? Number(n) : null;
  }

  /** Queue-wide rate limit `{ max, duration }` (meta rlmax/rldur), or null when none is set. */
  async getGlobalRateLimit(): Promise<{ max: number; duration: number } | null> {
    const [max, duration] = await this.ctx.client.hmget(this.keys.meta, MetaField.rateMax, MetaField.rateDuration);
    return max && duration ? { max: Number(max), duration: Number(duration) } : null;
  }

  /**
   * Ms until the global rate window reopens when it is exhausted. With `maxJobs`, exhausted
   * means that many jobs started in the window; without, the queue's rate limit max is used, and
   * with no limit set the window's raw PTTL is returned (-2 no window, -1 no expiry, as in
   * BullMQ). 0 when the window is not exhausted. A worker.rateLimit() block counts as exhausted.
   */
  async getRateLimitTtl(maxJobs?: number): Promise<number> {
    if (maxJobs !== undefined) v.positiveInt('maxJobs', maxJobs);
    const [[, used], [, ttl], [, max]] = (await this.ctx.client.multi()
      .get(this.keys.rate).pttl(this.keys.rate).hget(this.keys.meta, MetaField.rateMax).exec()) as [
      [unknown, string | null], [unknown, number], [unknown, string | null]];
    const limit = maxJobs ?? (max ? Number(max) : undefined);
    if (limit === undefined) return ttl;
    return limit <= Number(used ?? 0) && ttl > 0 ? ttl : 0;
  }

  /** True when the global concurrency limit is reached (active jobs ≥ the limit). */
  async isMaxed(): Promise<boolean> {
    const m = this.ctx.client.multi().hget(this.keys.meta, MetaField.concurrency);
    const [[, conc], [, active]] = (await countSet(m, this.keys, this.keys.active).exec()) as [
      [unknown, string | null], [unknown, number]];
    return conc !== null && active >= Number(conc);
  }

  async isPaused(): Promise<boolean> {
    return (await this.ctx.client.hget(this.keys.meta, MetaField.paused)) === '1';
  }

  /**
   * BullMQ's meta fields: paused, and when set concurrency, max, duration; maxLenEvents (the
   * events cap, default 10,000) and version (echomq's, see getVersion). echomq's internal
   * counters in the same hash are not part of it.
   */
  async getMeta(): Promise<QueueMeta> {
    const [paused, conc, max, dur, evmax] = await this.ctx.client.hmget(
      this.keys.meta, MetaField.paused, MetaField.concurrency, MetaField.rateMax, MetaField.rateDuration, MetaField.eventsMaxLen,
    );
    const meta: QueueMeta = this.opts.skipMetasUpdate === true ? {} : { version: this.version };
    if (conc) meta.concurrency = Number(conc);
    // The default cap is what BullMQ's Queue writes at start; with skipMetasUpdate it wrote none.
    if (evmax) meta.maxLenEvents = Number(evmax);
    else if (this.opts.skipMetasUpdate !== true) meta.maxLenEvents = 10_000;
    if (max) meta.max = Number(max);
    if (dur) meta.duration = Number(dur);
    meta.paused = paused === '1';
    return meta;
  }

  /** BullMQ's metaValues: the events cap and the library version this queue runs. */
  get metaValues(): Record<string, string | number> {
    return { 'opts.maxLenEvents': this.opts.streams?.events?.maxLen ?? 10_000, version: this.version };
  }

  /**
   * The library version, `echomq:<version>` (BullMQ gives `bullmq:<version>`, read from the
   * meta hash its Queue writes at start; echomq writes nothing at construction, so this is the
   * version of the running library). null with skipMetasUpdate, as BullMQ's (it wrote none).
   */
  async getVersion(): Promise<string | null> {
    // BullMQ's Queue writes its version at start unless skipMetasUpdate; then there is none.
    return this.opts.skipMetasUpdate === true ? null : this.version;
  }

  private get version(): string {
    return `echomq:${VERSION}`;
  }

  /**
   * The id of the job holding a deduplication id, or null when the id is free (never used,
   * released because its job finished, or its throttle window ended).
   */
  async getDeduplicationJobId(id: string): Promise<string | null> {
    v.nonEmptyString('deduplication id', id);
    const c = this.ctx.client;
    const [[, holder], [, until], [, [sec, usec]]] = (await c.multi()
      .hget(this.keys.dedup, id).zscore(this.keys.dedupx, id).time().exec()) as [
      [unknown, string | null], [unknown, string | null], [unknown, [string, string]]];
    if (!holder) return null;
    if (until !== null) return Number(until) > redisTimeMs([sec, usec]) ? holder : null;
    const st = await c.hget(jobKey(this.keys, holder), JobField.state);
    return st !== null && st !== JobStateCode.completed && st !== JobStateCode.failed ? holder : null; // live = not finished
  }

  /** @deprecated BullMQ's old name of getDeduplicationJobId. */
  getDebounceJobId(id: string): Promise<string | null> {
    return this.getDeduplicationJobId(id);
  }

  // ---- schedulers ---------------------------------------------------------------------------

  getJobScheduler(id: string): Promise<schedulers.JobSchedulerJson<DataType> | undefined> {
    return schedulers.getJobScheduler(this.ctx.client, this.keys, id);
  }

  /** Schedulers by next slot; asc=false (default, as in BullMQ) lists the latest first. */
  getJobSchedulers(start = 0, end = -1, asc = false): Promise<Array<schedulers.JobSchedulerJson<DataType>>> {
    return schedulers.getJobSchedulers(this.ctx.client, this.keys, start, end, asc);
  }

  /** BullMQ 5's legacy listing: the schedulers as RepeatableJobs (repeat.ts), latest slot first unless asc. */
  async getRepeatableJobs(start = 0, end = -1, asc = false): Promise<RepeatableJob[]> {
    // Through getJobSchedulers, so a sharded queue lists every shard's.
    return (await this.getJobSchedulers(start, end, asc)).map(toRepeatableJob);
  }

  getJobSchedulersCount(): Promise<number> {
    return schedulers.getJobSchedulersCount(this.ctx.client, this.keys);
  }

  // ---- connections --------------------------------------------------------------------------

  /**
   * Workers of this queue: the CLIENT LIST entries of connections named `clientName()` or
   * `clientName(':w:' + name)`, each with `name` = the queue name and `rawname` = the
   * connection's name.
   */
  getWorkers(): Promise<ClientInfo[]> {
    const plain = this.clientName();
    const named = this.clientName(':w:');
    return clientsNamed(this.ctx.client, this.name, (n) => n === plain || n.startsWith(named));
  }

  async getWorkersCount(): Promise<number> {
    return (await this.getWorkers()).length;
  }

  /** @deprecated (as in BullMQ) QueueEvents connections of this queue (named `clientName(':qe')`). */
  getQueueEvents(): Promise<ClientInfo[]> {
    const name = this.clientName(':qe');
    return clientsNamed(this.ctx.client, this.name, (n) => n === name);
  }

  // ---- metrics ------------------------------------------------------------------------------

  /**
   * Per-minute counts of completed or failed jobs, points start…end (0 = newest, -1 = oldest),
   * written by workers with the `metrics` option (layout: queue-metrics.ts).
   */
  getMetrics(type: 'completed' | 'failed', start = 0, end = -1): Promise<Metrics> {
    if (type !== 'completed' && type !== 'failed') v.fail('type', "'completed' or 'failed'", type);
    const [s, e] = rangeArgs(start, end);
    return readMetrics(this.ctx.client, this.keys, type, s, e);
  }

  /**
   * Prometheus text. `exportPrometheusMetrics()` or `exportPrometheusMetrics(globalVariables)`
   * (a plain object of string label values, BullMQ's signature) gives BullMQ's text line for line
   * (bullmq_job_count per state, bullmq_job_completed_total, bullmq_job_failed_total, with the
   * labels added to each series), followed by echomq's families (src/ops/metrics.ts: per-lane
   * gauges, event-derived totals and latency histograms; `globalVariables` become their labels).
   * `exportPrometheusMetrics(opts: MetricsOptions)` (an object with prefix, queues, maxQueues,
   * maxLanes, maxEventsPerScrape or labels) gives echomq's families alone, as before.
   */
  async exportPrometheusMetrics(arg?: Record<string, string> | MetricsOptions): Promise<string> {
    const metrics = await import('../ops/metrics.js');
    if (arg !== undefined && !isGlobalVariables(arg)) return metrics.exportPrometheusMetrics(this, arg);
    const globalVariables = arg as Record<string, string> | undefined;
    const [counts, completed, failed] = await Promise.all([
      this.getJobCounts(), this.getMetrics('completed'), this.getMetrics('failed'),
    ]);
    const labels = globalVariables && Object.keys(globalVariables).length > 0 ? { labels: globalVariables } : {};
    const ours = await metrics.exportPrometheusMetrics(this, labels);
    return `${bullmqPrometheusText(this.name, counts, completed, failed, globalVariables)}\n${ours}`;
  }

  // BullMQ Pro's group readings (a group is a lane; src/pro/groups.ts).
  /** The group's concurrency: its own, else the Worker default, else null. */
  async getGroupConcurrency(groupId: string): Promise<number | null> { this.open(); return groups.getGroupConcurrency(this.ctx, groupId); }
  /** Ms until the group may start jobs again; -2 without a window; 0 below maxJobs. */
  async getGroupRateLimitTtl(groupId: string, maxJobs?: number): Promise<number> {
    this.open();
    return groups.getGroupRateLimitTtl(this.ctx, groupId, maxJobs);
  }
  /** Waiting jobs in all groups, reading pageSize groups per call. */
  async getGroupsJobsCount(pageSize?: number): Promise<number> { this.open(); return groups.getGroupsJobsCount(this.ctx, pageSize); }
  async getGroupActiveCount(groupId: string): Promise<number> { this.open(); return groups.getGroupActiveCount(this.ctx, groupId); }
  /** Waiting jobs of the group, start..end inclusive, in the order they will be served. */
  async getGroupJobs(groupId: string, start?: number, end?: number): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    this.open();
    return (await groups.getGroupJobs(this.ctx, groupId, start, end)) as Array<Job<DataType, ReturnType, NameType>>;
  }
  async getGroupStatus(groupId: string): Promise<groups.GroupStatus | null> { this.open(); return groups.getGroupStatus(this.ctx, groupId); }
  async getGroupsByStatus(status: groups.GroupStatus, start?: number, end?: number): Promise<Array<{ id: string; count: number }>> {
    this.open();
    return groups.getGroupsByStatus(this.ctx, status, start, end);
  }
  async getCountsPerPriorityForGroup(groupId: string, priorities: number[]): Promise<Record<string, number>> {
    this.open();
    return groups.getCountsPerPriorityForGroup(this.ctx, groupId, priorities);
  }
}
