/**
 * Prometheus metrics, computed at scrape time (nothing runs between scrapes):
 *
 * - Gauges, read fresh on every scrape through inspect.ts: jobs per state, queue paused, and per
 *   lane depth, active, weight, limit and paused.
 * - Counters and histograms, from the queue's events stream (`completed`, `failed`, `retrying`
 *   entries) read from where the previous scrape stopped. The stream entry id is the finish time
 *   on the Redis clock; wait and processing times come from the finished job's hash (creation
 *   time, delay, processedOn, finishedOn). A job deleted on completion (removeOnComplete: true)
 *   still counts in the totals but adds no histogram sample. Counting starts at the first scrape
 *   of this process, as counters do. The stream is capped (10,000 entries by default), so scrape
 *   at least as often as the queue writes that many events, or totals miss the trimmed ones.
 *
 * The worker hot path never imports this module.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RedisClient } from '../core/connection.js';
import { jobKey, queueKeys, DEFAULT_PREFIX, type QueueKeys } from '../core/keys.js';
import { getJobCounts, listLanes, listQueues, JOB_STATES, type JobCounts } from './inspect.js';
import { JobField, MetaField } from '../core/fields.js';

export interface MetricsOptions {
  /** Key prefix. Default 'emq' (or the queue's own prefix when a Queue is given). */
  prefix?: string;
  /** Queues to export. Default: every queue under the prefix, found by SCAN on each scrape. */
  queues?: string[];
  /** Most queues exported when discovering them. Default 1000. */
  maxQueues?: number;
  /** Most lanes per queue exported as labelled series (in lane-name order). Default 1000. */
  maxLanes?: number;
  /** Most stream entries read per queue per scrape; the rest wait for the next scrape. Default 50,000. */
  maxEventsPerScrape?: number;
  /** Labels added to every series (for example { service: 'billing' }). */
  labels?: Record<string, string>;
}

/** What the event-derived metrics need from one stream entry. */
export interface QueueEvent {
  event: string;
  jobId: string;
  /** Entry time, ms on the Redis clock (from the stream id). */
  ms: number;
}

const PAGE = 1000;

/** The id of the newest entry in the queue's events stream, or '0-0' when it is empty. */
export async function eventsTail(client: RedisClient, keys: QueueKeys): Promise<string> {
  const last = await client.xrevrange(keys.events, '+', '-', 'COUNT', 1);
  return last.length > 0 ? last[0][0] : '0-0';
}

/**
 * Entries after `cursor` (exclusive), at most `max`, keeping only `keep` event names. Returns
 * the new cursor: the id of the last entry read, whatever its event.
 */
export async function readEvents(
  client: RedisClient,
  keys: QueueKeys,
  cursor: string,
  max: number,
  keep: ReadonlySet<string>,
): Promise<{ events: QueueEvent[]; cursor: string }> {
  const events: QueueEvent[] = [];
  let read = 0;
  while (read < max) {
    const page = await client.xrange(keys.events, `(${cursor}`, '+', 'COUNT', Math.min(PAGE, max - read));
    for (const [id, fields] of page) {
      let event = '';
      const jobIds: string[] = [];
      for (let i = 0; i < fields.length; i += 2) {
        if (fields[i] === 'event') event = fields[i + 1];
        else if (fields[i] === 'jobId') jobIds.push(fields[i + 1]);
      }
      if (!keep.has(event)) continue;
      // An entry may hold the same event for several jobs (lib/common.lua emitJob): one each.
      const ms = Number(id.slice(0, id.indexOf('-')));
      if (jobIds.length === 0) events.push({ event, jobId: '', ms });
      for (const jobId of jobIds) events.push({ event, jobId, ms });
    }
    read += page.length;
    if (page.length > 0) cursor = page[page.length - 1][0];
    if (page.length < PAGE) break;
  }
  return { events, cursor };
}

const FINISH_EVENTS = new Set(['completed', 'failed', 'retrying']);
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/** Something with a client and a queue's keys: a Queue, without importing the class. */
interface QueueLike {
  readonly client: RedisClient;
  readonly keys: QueueKeys;
}

/** One set of metrics over some queues, with its own registry and stream cursors. */
export class QueueMetrics {
  readonly registry = new Registry();
  private readonly prefix: string;
  private readonly cursors = new Map<string, string>();
  private chain: Promise<unknown> = Promise.resolve();
  private readonly jobs: Gauge<'queue' | 'state'>;
  private readonly paused: Gauge<'queue'>;
  private readonly lane: Record<'depth' | 'active' | 'weight' | 'limit' | 'paused', Gauge<'queue' | 'lane'>>;
  private readonly completed: Counter<'queue'>;
  private readonly failed: Counter<'queue'>;
  private readonly retried: Counter<'queue'>;
  private readonly wait: Histogram<'queue'>;
  private readonly processing: Histogram<'queue'>;

  constructor(
    private readonly client: RedisClient,
    private readonly opts: MetricsOptions = {},
  ) {
    this.prefix = opts.prefix ?? DEFAULT_PREFIX;
    if (opts.labels) this.registry.setDefaultLabels(opts.labels);
    const registers = [this.registry];
    const gauge = <L extends string>(name: string, help: string, labelNames: L[]) => new Gauge<L>({ name, help, labelNames, registers });
    this.jobs = gauge('echomq_queue_jobs', 'Jobs per state, read at scrape time.', ['queue', 'state']);
    this.paused = gauge('echomq_queue_paused', '1 when the queue is paused.', ['queue']);
    this.lane = {
      depth: gauge('echomq_lane_depth', 'Ready jobs waiting in the lane.', ['queue', 'lane']),
      active: gauge('echomq_lane_active', 'Jobs of the lane being processed.', ['queue', 'lane']),
      weight: gauge('echomq_lane_weight', "The lane's weight (share of service per turn).", ['queue', 'lane']),
      limit: gauge('echomq_lane_limit', "The lane's concurrency limit (absent when it has none).", ['queue', 'lane']),
      paused: gauge('echomq_lane_paused', '1 when the lane is paused.', ['queue', 'lane']),
    };
    const counter = (name: string, help: string) => new Counter<'queue'>({ name, help, labelNames: ['queue'], registers });
    this.completed = counter('echomq_jobs_completed_total', 'Jobs completed (from the events stream, since this exporter started).');
    this.failed = counter('echomq_jobs_failed_total', 'Jobs failed for good, attempts exhausted (from the events stream).');
    this.retried = counter('echomq_jobs_retried_total', 'Failed attempts that will be retried (from the events stream).');
    const histogram = (name: string, help: string) => new Histogram<'queue'>({ name, help, labelNames: ['queue'], buckets: BUCKETS, registers });
    this.wait = histogram('echomq_job_wait_seconds', 'From when a finished job was due (creation + delay) to the start of its last attempt.');
    this.processing = histogram('echomq_job_processing_seconds', 'Duration of the last attempt of a finished job.');
  }

  /** The Content-Type to serve the text with. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Refreshes every metric from Redis. Concurrent scrapes run one after another. */
  collect(): Promise<void> {
    const run = this.chain.then(() => this.collectNow());
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Prometheus text exposition after a fresh collect. */
  async metrics(): Promise<string> {
    await this.collect();
    return this.registry.metrics();
  }

  private async queueNames(): Promise<string[]> {
    if (this.opts.queues) return this.opts.queues;
    return (await listQueues(this.client, this.prefix)).slice(0, this.opts.maxQueues ?? 1000);
  }

  private async collectNow(): Promise<void> {
    const names = await this.queueNames();
    // Gauges start empty each scrape, so lanes and queues that are gone stop being reported.
    this.jobs.reset();
    this.paused.reset();
    for (const g of Object.values(this.lane)) g.reset();
    for (const name of names) {
      const keys = queueKeys(name, this.prefix);
      await this.collectGauges(name, keys);
      await this.collectEvents(name, keys);
    }
  }

  private async collectGauges(queue: string, keys: QueueKeys): Promise<void> {
    const [counts, paused] = await Promise.all([
      getJobCounts(this.client, keys) as Promise<JobCounts>, this.client.hget(keys.meta, MetaField.paused),
    ]);
    for (const state of JOB_STATES) this.jobs.set({ queue, state }, counts[state]);
    this.paused.set({ queue }, paused === '1' ? 1 : 0);
    const maxLanes = this.opts.maxLanes ?? 1000;
    let cursor: string | undefined;
    for (let seen = 0; seen < maxLanes; ) {
      const page = await listLanes(this.client, keys, { cursor, count: Math.min(1000, maxLanes - seen) });
      for (const l of page.lanes) {
        const labels = { queue, lane: l.name };
        this.lane.depth.set(labels, l.depth);
        this.lane.active.set(labels, l.active);
        this.lane.weight.set(labels, l.weight);
        if (l.limit !== null) this.lane.limit.set(labels, l.limit);
        this.lane.paused.set(labels, l.paused ? 1 : 0);
      }
      seen += page.lanes.length;
      if (page.cursor === null) break;
      cursor = page.cursor;
    }
  }

  private async collectEvents(queue: string, keys: QueueKeys): Promise<void> {
    let cursor = this.cursors.get(queue);
    if (cursor === undefined) {
      // First scrape of this queue: count from now on, and make the series visible at 0.
      this.cursors.set(queue, await eventsTail(this.client, keys));
      this.completed.inc({ queue }, 0);
      this.failed.inc({ queue }, 0);
      this.retried.inc({ queue }, 0);
      return;
    }
    const r = await readEvents(this.client, keys, cursor, this.opts.maxEventsPerScrape ?? 50_000, FINISH_EVENTS);
    this.cursors.set(queue, r.cursor);
    const finished = r.events.filter((e) => e.event !== 'retrying');
    const retries = r.events.length - finished.length;
    if (retries > 0) this.retried.inc({ queue }, retries);
    for (let i = 0; i < finished.length; i += PAGE) {
      const batch = finished.slice(i, i + PAGE);
      const p = this.client.pipeline();
      for (const e of batch) p.hmget(jobKey(keys, e.jobId), JobField.timestamp, JobField.delay, JobField.processedOn, JobField.finishedOn);
      const rows = (await p.exec()) ?? [];
      batch.forEach((e, k) => {
        (e.event === 'completed' ? this.completed : this.failed).inc({ queue });
        const [err, f] = rows[k] ?? [];
        if (err || !f) return;
        const [ts, delay, pOn, fOn] = (f as Array<string | null>).map((x) => (x === null ? NaN : Number(x)));
        if (Number.isFinite(pOn) && Number.isFinite(ts)) this.wait.observe({ queue }, Math.max(0, pOn - ts - (delay || 0)) / 1000);
        const end = Number.isFinite(fOn) ? fOn : e.ms;
        if (Number.isFinite(pOn)) this.processing.observe({ queue }, Math.max(0, end - pOn) / 1000);
      });
    }
  }
}

const shared = new WeakMap<object, Map<string, QueueMetrics>>();

/**
 * Prometheus text for one Queue, or for the queues under a prefix of a client. The collector
 * (and its stream cursors) is kept per client and options, so calling this on every scrape
 * gives proper counters.
 */
export async function exportPrometheusMetrics(source: QueueLike | RedisClient, opts: MetricsOptions = {}): Promise<string> {
  return metricsFor(source, opts).metrics();
}

/** The shared collector behind exportPrometheusMetrics (for its registry or content type). */
export function metricsFor(source: QueueLike | RedisClient, opts: MetricsOptions = {}): QueueMetrics {
  const isQueue = 'keys' in source && 'client' in source && typeof (source as QueueLike).keys?.queue === 'string';
  const client = isQueue ? (source as QueueLike).client : (source as RedisClient);
  const o: MetricsOptions = isQueue
    ? { ...opts, prefix: (source as QueueLike).keys.prefix, queues: opts.queues ?? [(source as QueueLike).keys.queue] }
    : opts;
  let byOpts = shared.get(client);
  if (!byOpts) shared.set(client, (byOpts = new Map()));
  const id = JSON.stringify([o.prefix ?? DEFAULT_PREFIX, o.queues ?? null, o.maxQueues, o.maxLanes, o.maxEventsPerScrape, o.labels ?? null]);
  let m = byOpts.get(id);
  if (!m) byOpts.set(id, (m = new QueueMetrics(client, o)));
  return m;
}
