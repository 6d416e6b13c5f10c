// Connection faults: workers reach Redis through a TCP proxy on loopback that the test cuts
// (stops accepting and destroys every socket) and restores. In-flight jobs are settled after the
// reconnect (short cut) or recovered by lease expiry and finished elsewhere (long cut; the late
// settle is refused as stale and changes nothing). No unhandled rejection; the worker emits
// `error` and keeps working: it processes jobs added after the restore.
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, Worker, type Job } from '../src/index.js';
import { checkLaneInvariant } from './lane-invariant.js';
import { client, keysOf, qname, redisUrl, sleep, waitFor } from './helpers.js';
import { JobField } from '../src/core/fields.js';
import { FaultProxy, targetOf } from './fault-proxy.js';

const target = () => targetOf(redisUrl());

describe('reliability: connection cut and restored through a TCP proxy', () => {
  const redis = client();
  const closers: Array<() => Promise<unknown>> = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
    await redis.quit();
    process.off('unhandledRejection', onUnhandled);
  });

  it('settles in-flight jobs after a short cut and keeps working', async () => {
    const name = qname('rel-proxy-short');
    const k = keysOf(name);
    const proxy = new FaultProxy(target());
    await proxy.start();
    closers.push(() => proxy.close());
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.obliterate({ force: true }).then(() => queue.close()));

    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const runs: string[] = [];
    const worker = new Worker(
      name,
      async (job: Job) => {
        runs.push(`${job.id}:${job.attemptsStarted}`);
        if (job.data.held) await gate;
        return 'ok';
      },
      { connection: proxy.url, concurrency: 5, lockDuration: 5000, stalledInterval: 500, drainDelay: 1 },
    );
    const errors: Error[] = [];
    worker.on('error', (e) => errors.push(e));
    closers.push(() => worker.close(true));

    const held = await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'held', data: { held: true, i } })));
    await waitFor(() => worker.activeCount === 5, 10_000, 'worker to hold 5 jobs');

    await proxy.close();
    release(); // the processors finish while Redis is unreachable: their settles wait for it
    await sleep(1000);
    expect(await redis.zcard(k.completed)).toBe(0); // nothing could be settled during the cut
    await proxy.start();
    await waitFor(async () => (await redis.zcard(k.completed)) === 5, 15_000, 'held jobs to be settled after the restore');
    for (const j of held) {
      // Settled by the same execution: no recovery, no second attempt.
      expect(await redis.hmget(k.jobBase + j.id, JobField.state, JobField.attemptsStarted, JobField.attemptsMade, JobField.stalledCounter)).toEqual(['c', '1', '1', null]);
    }
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.some((e) => /ECONNRESET|ECONNREFUSED|Connection is closed|closed/i.test(e.message))).toBe(true);

    // The worker keeps working: jobs added after the restore are processed.
    const after = await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'after', data: { i } })));
    await waitFor(async () => (await redis.zcard(k.completed)) === 15, 15_000, 'jobs added after the restore');
    for (const j of after) expect(await redis.hget(k.jobBase + j.id, JobField.state)).toBe('c');
    expect(runs.length).toBe(15);
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);
    expect(unhandled).toEqual([]);
    console.log(`[reliability-proxy] short cut: 5 in-flight jobs settled after reconnect, ${errors.length} error events, ${proxy.connections} proxied connections`);
  }, 40_000);

  it('recovers jobs by lease expiry during a long cut; the late settle is refused', async () => {
    const name = qname('rel-proxy-long');
    const k = keysOf(name);
    const proxy = new FaultProxy(target());
    await proxy.start();
    closers.push(() => proxy.close());
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.obliterate({ force: true }).then(() => queue.close()));

    const aborted: string[] = [];
    const cutWorker = new Worker(
      name,
      async (job: Job, _token, signal) => {
        if (job.data.held) {
          // Runs until the worker learns that its lease is gone and aborts it.
          await new Promise((_resolve, reject) =>
            signal.addEventListener('abort', () => {
              aborted.push(job.id);
              reject(signal.reason);
            }),
          );
        }
        return 'from-cut-worker';
      },
      { connection: proxy.url, concurrency: 3, lockDuration: 1000, stalledInterval: 300, maxStalledCount: 5, drainDelay: 1 },
    );
    const errors: Error[] = [];
    cutWorker.on('error', (e) => errors.push(e));
    closers.push(() => cutWorker.close(true));

    // A queue that also goes through the proxy: an add made during the cut resolves after it.
    const proxiedQueue = new Queue(name, { connection: proxy.url });
    const queueErrors: Error[] = [];
    proxiedQueue.on('error', (e) => queueErrors.push(e));
    closers.push(() => proxiedQueue.close());

    const held = await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'held', data: { held: true, i } })));
    await waitFor(() => cutWorker.activeCount === 3, 10_000, 'cut worker to hold 3 jobs');

    await proxy.close();
    const addDuringCut = proxiedQueue.add('during-cut', { late: true });
    // A healthy worker on a direct connection recovers the expired leases and finishes the jobs.
    const rescueRuns: string[] = [];
    const rescuer = new Worker(
      name,
      async (job: Job) => {
        rescueRuns.push(`${job.id}:${job.attemptsStarted}`);
        return 'from-rescuer';
      },
      { connection: redisUrl(), concurrency: 3, lockDuration: 1000, stalledInterval: 300, maxStalledCount: 5, drainDelay: 1 },
    );
    closers.push(() => rescuer.close(true));
    await waitFor(async () => (await redis.zcard(k.completed)) === 3, 15_000, 'rescuer to finish the recovered jobs');
    await rescuer.close();
    expect(cutWorker.activeCount).toBe(3); // still running, unaware

    await proxy.start();
    const late = await addDuringCut;
    // Back online, the lease renewal reports the three leases lost: the processors are aborted,
    // and their settles (fail with the abort reason) carry the old token and are refused.
    const stale = (op: string) => errors.filter((e) => e.name === 'StaleJobError' && e.message.startsWith(op)).length;
    await waitFor(() => stale('extendLeases') === 3 && stale('fail') === 3, 15_000, 'lost leases to be reported and late settles refused');
    expect(aborted.sort()).toEqual(held.map((j) => j.id).sort());
    expect(queueErrors.length).toBeGreaterThan(0); // the queue reported its lost connection too
    for (const j of held) {
      const [st, att, made, rv] = await redis.hmget(k.jobBase + j.id, JobField.state, JobField.attemptsStarted, JobField.attemptsMade, JobField.returnValue);
      expect({ st, att, made, rv }).toEqual({ st: 'c', att: '2', made: '1', rv: JSON.stringify('from-rescuer') });
    }
    expect(rescueRuns.sort()).toEqual(held.map((j) => `${j.id}:2`).sort());

    // The job added during the cut and jobs added after the restore are processed by the cut worker.
    const after = await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'after', data: { i } })));
    await waitFor(async () => (await redis.zcard(k.completed)) === 9, 15_000, 'jobs added after the restore');
    for (const id of [late.id, ...after.map((j) => j.id)]) {
      expect(await redis.hmget(k.jobBase + id, JobField.state, JobField.returnValue)).toEqual(['c', JSON.stringify('from-cut-worker')]);
    }
    expect(await queue.getJobCounts('failed', 'active', 'waiting')).toEqual({ failed: 0, active: 0, waiting: 0 });
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);
    expect(unhandled).toEqual([]);
    console.log(
      `[reliability-proxy] long cut: 3 leases expired and recovered (re-executed once each), ` +
        `${stale('extendLeases')} lost leases reported, ${aborted.length} processors aborted, ${stale('fail')} stale settles refused, ` +
        `${errors.length} error events`,
    );
  }, 60_000);
});
