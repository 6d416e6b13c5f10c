// One small adapter per library, so the suites drive echomq, BullMQ, bee-queue and groupmq
// through the same few calls: add, addBulk, startWorker, close. Each adapter uses the library's
// defaults except where the comparison needs the same behaviour (finished jobs are removed at
// once; nobody subscribes to per-job events unless asked).
//
// Job shape given to adapters: { data, lane?, priority? }. The lane becomes echomq's `lane` and
// groupmq's `groupId`; BullMQ has no lanes (open-source edition), so it ignores it. Only echomq
// takes `priority` (the costs suite is echomq alone).
//
// startWorker({ concurrency, processor?, onCompleted, onFailed }): `processor(data)` replaces
// the empty processor when a suite needs to see a job start (idle pickup latency).
// echomq and BullMQ also take `processorFile` (a sandboxed processor: path or URL) and
// `workerOpts` (extra Worker options, e.g. useWorkerThreads) for the sandbox suite.
import { Redis } from 'ioredis';
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq';
import { Queue as GroupQueue, Worker as GroupWorker } from 'groupmq';
import BeeQueue from 'bee-queue';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

// echomq under test: the repository's dist/ build, or BENCH_ECHOMQ=<path to an index.js>
// (for example a private build, so other people's rebuilds of dist/ cannot change it mid-run).
export const ECHOMQ_MODULE = process.env.BENCH_ECHOMQ
  ? pathToFileURL(resolve(process.env.BENCH_ECHOMQ)).href
  : new URL('../../dist/index.js', import.meta.url).href;
const { Queue: EchoQueue, Worker: EchoWorker } = await import(ECHOMQ_MODULE);
import { inParallel, noteSent } from './meter.mjs';

// bee-queue talks to Redis through its own copy of node_redis 3, not ioredis, so the meter's
// ioredis wrapper cannot see its commands. Wrap that copy's single send path the same way:
// count only commands written to a ready connection (offline ones are replayed through here).
{
  const beeRequire = createRequire(createRequire(import.meta.url).resolve('bee-queue'));
  const { RedisClient } = beeRequire('redis');
  const originalSend = RedisClient.prototype.internal_send_command;
  RedisClient.prototype.internal_send_command = function countedSend(commandObj) {
    if (this.ready && this.stream?.writable) noteSent();
    return originalSend.call(this, commandObj);
  };
}

const JOB_NAME = 'bench';
const noop = async () => {};

/** ioredis options from a redis:// URL (BullMQ wants options or a client, not a URL). */
export function redisOptions(url) {
  const u = new URL(url);
  const opts = { host: u.hostname || '127.0.0.1', port: Number(u.port || 6379) };
  if (u.password) opts.password = decodeURIComponent(u.password);
  if (u.username) opts.username = decodeURIComponent(u.username);
  const db = Number(u.pathname.slice(1));
  if (db) opts.db = db;
  if (u.protocol === 'rediss:') opts.tls = {};
  return opts;
}

/** Listens for completions and failures the same way for every library's worker. */
function wire(worker, { onCompleted, onFailed }) {
  worker.on('completed', (job) => onCompleted(job.data));
  worker.on('failed', (job, err) => onFailed(err ?? new Error(`job ${job?.id} failed: ${job?.failedReason}`)));
  worker.on('error', (err) => onFailed(err));
}

export const echomq = {
  name: 'echomq',
  // queueOpts: extra Queue options for one case (the costs suite turns events off with them).
  async open(url, queueName, queueOpts = {}) {
    const queue = new EchoQueue(queueName, { connection: url, ...queueOpts });
    await queue.client.ping(); // connected before any timing starts
    const opts = (job) => {
      const o = { removeOnComplete: true };
      if (job.lane !== undefined) o.lane = job.lane;
      if (job.priority !== undefined) o.priority = job.priority;
      return o;
    };
    return {
      add: (job) => queue.add(JOB_NAME, job.data, opts(job)),
      addBulk: (jobs) => queue.addBulk(jobs.map((job) => ({ name: JOB_NAME, data: job.data, opts: opts(job) }))),
      startWorker({ concurrency, processor, processorFile, workerOpts, ...handlers }) {
        const fn = processor ? async (job) => processor(job.data) : noop;
        const worker = new EchoWorker(queueName, processorFile ?? fn, { connection: url, concurrency, ...workerOpts });
        wire(worker, handlers);
        return { close: () => worker.close() };
      },
      close: () => queue.close(),
    };
  },
};

export const bullmq = {
  name: 'bullmq',
  async open(url, queueName) {
    const connection = redisOptions(url);
    const queue = new BullQueue(queueName, { connection });
    await queue.waitUntilReady();
    const opts = { removeOnComplete: true };
    return {
      add: (job) => queue.add(JOB_NAME, job.data, opts),
      addBulk: (jobs) => queue.addBulk(jobs.map((job) => ({ name: JOB_NAME, data: job.data, opts }))),
      startWorker({ concurrency, processor, processorFile, workerOpts, ...handlers }) {
        const fn = processor ? async (job) => processor(job.data) : noop;
        const worker = new BullWorker(queueName, processorFile ?? fn, { connection, concurrency, ...workerOpts });
        wire(worker, handlers);
        return { close: () => worker.close() };
      },
      close: () => queue.close(),
    };
  },
};

// bee-queue: a queue object is producer and/or worker. The producer is configured as its README
// recommends for producer-only queues (isWorker: false, getEvents: false), and neither side
// subscribes to job events or keeps Job objects for them (getEvents/storeJobs false): echomq
// and BullMQ need an explicit QueueEvents for that, so all three skip it. The worker keeps its
// default sendEvents (one PUBLISH per finished job, its counterpart of the others' event
// stream) and removes succeeded jobs (removeOnSuccess). It connects through node_redis 3, its
// own dependency. saveAll pipelines one addJob script call per job.
export const beequeue = {
  name: 'bee-queue',
  async open(url, queueName) {
    const redis = redisOptions(url);
    const queue = new BeeQueue(queueName, { redis, isWorker: false, getEvents: false, storeJobs: false });
    await queue.ready(); // connected and scripts loaded before any timing starts
    const make = (job) => queue.createJob(job.data);
    return {
      add: (job) => make(job).save(),
      async addBulk(jobs) {
        const errors = await queue.saveAll(jobs.map(make));
        if (errors.size > 0) throw [...errors.values()][0];
      },
      startWorker({ concurrency, processor, onCompleted, onFailed }) {
        const worker = new BeeQueue(queueName, { redis, getEvents: false, storeJobs: false, removeOnSuccess: true });
        worker.on('succeeded', (job) => onCompleted(job.data));
        worker.on('failed', (job, err) => onFailed(err ?? new Error(`job ${job?.id} failed`)));
        worker.on('error', (err) => onFailed(err));
        worker.process(concurrency, processor ? async (job) => processor(job.data) : noop);
        return { close: () => worker.close(5000) };
      },
      close: () => queue.close(),
    };
  },
};

// groupmq takes a connected ioredis client (its queue quits it on close; its worker duplicates
// it for blocking reads), has no bulk add, retains no finished jobs by default, and starts its
// worker from the constructor. It serves at most one job per group at a time, by design.
export const groupmq = {
  name: 'groupmq',
  async open(url, queueName) {
    const queue = new GroupQueue({ redis: new Redis(url), namespace: queueName, keepCompleted: 0, keepFailed: 0 });
    await queue.redis.ping();
    const add = (job) => queue.add({ groupId: job.lane ?? 'default', data: job.data });
    return {
      add,
      // Prefill only (never timed): 100 single adds in flight, in the given order.
      addBulk: (jobs) => inParallel(jobs.length, 100, (i) => add(jobs[i])),
      startWorker({ concurrency, processor, ...handlers }) {
        const handler = processor ? async (job) => processor(job.data) : noop;
        const worker = new GroupWorker({ queue, handler, concurrency });
        wire(worker, handlers);
        return { close: () => worker.close(5000) };
      },
      close: () => queue.close(),
    };
  },
};

export const LIBS = { echomq, bullmq, 'bee-queue': beequeue, groupmq };
