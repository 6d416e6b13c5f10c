/**
 * QueueEvents and QueueEventsProducer side by side with BullMQ: event names, payloads (job ids
 * replaced by job names, timestamps by their type) and order, per job and for queue-wide
 * events. echomq's differences are asserted explicitly where they occur.
 */
import * as bullmq from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, connection, sideBySide } from './harness.js';
import { namesOf, normalize, perJob, reading, record, until, type Seen } from './events-helpers.js';

afterAll(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('QueueEvents (BullMQ 6 events and payloads)', () => {
  it('job lifecycle: added, waiting, active, progress, completed, failed, delayed, retries-exhausted', async () => {
    const r = await sideBySide(async (lib, name, conn, side) => {
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe);
      const q = new lib.Queue(name, { connection: conn });
      await q.add('ok', { n: 1 });
      await q.add('once', {});
      await q.add('retry', {}, { attempts: 2 });
      await q.add('backoff', {}, { attempts: 2, backoff: { type: 'fixed', delay: 20 } });
      await q.add('unrecoverable', {}, { attempts: 3 });
      await q.add('later', {}, { delay: 50 });
      const w = new lib.Worker(name, async (job) => {
        if (job.name === 'ok') {
          await job.updateProgress({ pct: 50 });
          return { doubled: job.data.n * 2 };
        }
        if (job.name === 'later') return 'late';
        if (job.name === 'unrecoverable') throw new lib.UnrecoverableError('no way');
        throw new Error(`${job.name} failed`);
      }, { connection: connection() });
      const finished = () => seen.filter((s) => s.event === 'completed' || s.event === 'failed').length;
      await until(() => finished() === 6, 10_000, `${side}: 6 jobs finished`);
      await sleep(100);
      await w.close();
      await qe.close();
      await q.close();
      const names = namesOf(seen);
      // echomq also reports each retried attempt as `retrying` (its own event; BullMQ has none).
      const retrying = seen.filter((s) => s.event === 'retrying');
      const jobs = perJob(seen.filter((s) => s.event !== 'retrying' && s.event !== 'drained'), names);
      const bullmqView = seen.filter((s) => s.event !== 'retrying');
      return { jobs, retrying: normalize(retrying, names), drainedLast: bullmqView[bullmqView.length - 1].event };
    }, 'ev-life');
    expect(r.echomq.jobs).toEqual(r.bullmq.jobs);
    expect(r.bullmq.jobs.retry).toEqual([
      ['added', { jobId: 'retry', name: 'retry' }],
      ['waiting', { jobId: 'retry' }],
      ['active', { jobId: 'retry', prev: 'waiting' }],
      ['waiting', { jobId: 'retry', prev: 'active' }],
      ['active', { jobId: 'retry', prev: 'waiting' }],
      ['failed', { jobId: 'retry', failedReason: 'retry failed', prev: 'active' }],
      ['retries-exhausted', { jobId: 'retry', attemptsMade: '2' }],
    ]);
    expect(r.bullmq.retrying).toEqual([]);
    expect(r.echomq.retrying).toEqual([
      ['retrying', { jobId: 'retry', failedReason: 'retry failed', attemptsMade: '1' }],
      ['retrying', { jobId: 'backoff', failedReason: 'backoff failed', attemptsMade: '1' }],
    ]);
    // drained comes when the last job finished and nothing is waiting or active
    expect(r.bullmq.drainedLast).toBe('drained');
    expect(r.echomq.drainedLast).toBe('drained');
  });

  it('queue-wide events: removed (prev), paused, resumed, duplicated, deduplicated, cleaned, waiting-children', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe);
      const q = new lib.Queue(name, { connection: conn });
      await (await q.add('ready', {})).remove();
      await (await q.add('urgent', {}, { priority: 3 })).remove();
      await (await q.add('delayed', {}, { delay: 60_000 })).remove();
      await q.pause();
      await (await q.add('paused', {})).remove();
      await q.resume();
      await q.add('fixed', {}, { jobId: 'fixed' });
      await q.add('fixed-again', {}, { jobId: 'fixed' });
      await q.add('holder', {}, { jobId: 'holder', deduplication: { id: 'dd' } });
      await q.add('refused', {}, { jobId: 'refused', deduplication: { id: 'dd' } });
      await q.add('c1', {});
      await q.add('c2', {});
      const cleaned = await q.clean(0, 0, 'wait');
      const flow = new lib.FlowProducer({ connection: connection() });
      await flow.add({ name: 'parent', queueName: name, children: [{ name: 'child', queueName: name }] });
      await until(() => seen.some((s) => s.event === 'added' && s.args.name === 'child') && seen.filter((s) => s.event === 'waiting').length >= 7, 5000, 'flow events');
      await sleep(50);
      await flow.close();
      await qe.close();
      await q.close();
      // job ids differ (generated); the test names them by job name, 'fixed' and 'holder' are ids already
      return { events: normalize(seen, namesOf(seen)), cleaned: cleaned.length };
    }, 'ev-queue');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq.events).toContainEqual(['removed', { jobId: 'urgent', prev: 'prioritized' }]);
    expect(r.bullmq.events).toContainEqual(['deduplicated', { jobId: 'holder', deduplicationId: 'dd', deduplicatedJobId: 'refused' }]);
    expect(r.bullmq.events).toContainEqual(['cleaned', { count: '4' }]); // c1, c2, fixed, holder
    expect(r.bullmq.events).toContainEqual(['removed', { jobId: 'paused', prev: 'wait' }]);
    expect(r.bullmq.events).toContainEqual(['waiting-children', { jobId: 'parent' }]);
    expect(r.bullmq.events).toContainEqual(['duplicated', { jobId: 'fixed' }]);
  });

  it('job.promote() and job.retry() report the state the job came back from', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe);
      const q = new lib.Queue(name, { connection: conn });
      const later = await q.add('later', {}, { delay: 60_000 });
      await later.promote();
      await q.add('bad', {});
      const w = new lib.Worker(name, async (job) => {
        if (job.name === 'bad' && job.attemptsMade === 0 && job.attemptsStarted <= 1) throw new Error('first run fails');
        return job.name;
      }, { connection: connection() });
      await until(() => seen.some((s) => s.event === 'failed'), 5000, 'bad failed');
      await until(() => seen.filter((s) => s.event === 'completed').length === 1, 5000, 'later completed');
      const bad = (await q.getJobs(['failed']))[0];
      await bad.retry('failed');
      await until(() => seen.filter((s) => s.event === 'completed').length === 2, 5000, 'bad completed on retry');
      await w.close();
      await qe.close();
      await q.close();
      return perJob(seen.filter((s) => s.event !== 'drained'), namesOf(seen));
    }, 'ev-retry');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq.later).toContainEqual(['waiting', { jobId: 'later', prev: 'delayed' }]);
    expect(r.bullmq.bad).toContainEqual(['waiting', { jobId: 'bad', prev: 'failed' }]);
  });

  it('deduplicated without a job id: the event names the generated id the refused add was given', async () => {
    const r = await sideBySide(async (lib, name, conn, side) => {
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe, ['deduplicated']);
      const q = new lib.Queue(name, { connection: conn });
      const first = await q.add('a', {}, { deduplication: { id: 'x' } });
      const again = await q.add('a', {}, { deduplication: { id: 'x' } });
      await until(() => seen.length === 1, 5000, `${side}: deduplicated`);
      const next = await q.add('a', {});
      await qe.close();
      await q.close();
      const { jobId, deduplicationId, deduplicatedJobId } = seen[0].args;
      return { holder: jobId === first.id, same: again.id === first.id, deduplicationId, refused: Number(deduplicatedJobId) - Number(first.id), next: Number(next.id) - Number(first.id) };
    }, 'ev-dedup');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ holder: true, same: true, deduplicationId: 'x', refused: 1, next: 2 });
  });

  it('options and lifecycle: autorun false + run(), run() twice, lastEventId replay, blockingTimeout, close, connection name', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn, prefix: 'bull' });
      await q.add('before', {});
      const qe = new lib.QueueEvents(name, { connection: connection(), autorun: false, lastEventId: '0', blockingTimeout: 200, prefix: 'bull' });
      const seen: Seen[] = record(qe, ['added']);
      await sleep(100);
      const beforeRun = seen.length;
      const running = qe.run();
      await until(() => seen.length === 1, 5000, 'replayed added');
      const second = await qe.run().then(() => 'resolved', (e: Error) => e.message);
      // the connection is named like BullMQ's, so Queue.getQueueEvents() and tools find it
      const list = String(await conn.client('LIST'));
      const qeName = `bull:${Buffer.from(name).toString('base64')}:qe`;
      const named = list.split('\n').some((l) => l.includes(` name=${qeName} `));
      // BullMQ's own Queue.getQueueEvents() finds the reader of either package
      const probe = new bullmq.Queue(name, { connection: connection(), prefix: 'bull' });
      const found = (await probe.getQueueEvents()).length;
      await probe.close();
      await qe.close();
      await qe.close(); // idempotent
      await running;
      await q.close();
      return { beforeRun, replayed: seen.map((s) => s.args.name), second, named, found, opts: { blockingTimeout: (qe.opts as { blockingTimeout?: number }).blockingTimeout } };
    }, 'ev-opts');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toMatchObject({ beforeRun: 0, replayed: ['before'], second: 'Queue Events is already running.', named: true, found: 1 });
  });
});

describe('QueueEvents connection loss (BullMQ 6)', () => {
  it("emits 'ioredis:close' when its connection drops, reconnects and keeps reading", async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const qe = new lib.QueueEvents(name, { connection: connection(), prefix: 'bull' });
      await reading(lib, qe, name, connection(), 'bull');
      const seen = record(qe, ['added']);
      let closes = 0;
      (qe as any).on('ioredis:close', () => closes++);
      (qe as any).on('error', () => {});
      const q = new lib.Queue(name, { connection: conn, prefix: 'bull' });
      const qeName = `bull:${Buffer.from(name).toString('base64')}:qe`;
      const line = String(await conn.client('LIST')).split('\n').find((l) => l.includes(` name=${qeName} `))!;
      await conn.client('KILL', 'ID', /\bid=(\d+)/.exec(line)![1]);
      await until(() => closes > 0, 5000, 'ioredis:close');
      await q.add('after', {});
      await until(() => seen.length === 1, 10_000, 'added after reconnect');
      await qe.close();
      await q.close();
      return { closed: closes > 0, names: seen.map((s) => s.args.name) };
    }, 'ev-close');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ closed: true, names: ['after'] });
  });
});

describe('QueueEventsProducer (BullMQ 6)', () => {
  it('custom events reach every QueueEvents of the queue, with fields as strings', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const got: unknown[] = [];
      interface Custom {
        'report': (args: { step: string; ok: string; none: string }, id: string) => void;
        'ping': (args: object, id: string) => void;
      }
      (qe as any).on('report', (args: Parameters<Custom['report']>[0], id: string) => got.push(['report', args, typeof id]));
      (qe as any).on('ping', (args: object) => got.push(['ping', args]));
      const producer = new lib.QueueEventsProducer(name, { connection: conn });
      await producer.publishEvent({ eventName: 'report', step: 3, ok: true, none: null } as never);
      await producer.publishEvent({ eventName: 'ping' });
      await until(() => got.length === 2, 5000, 'custom events');
      await producer.close();
      await qe.close();
      return got;
    }, 'ev-producer');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual([['report', { step: '3', ok: 'true', none: '' }, 'string'], ['ping', {}]]);
  });

  it('publishEvent trims the stream to about maxEvents entries', async () => {
    const r = await sideBySide(async (lib, name, conn, side) => {
      const producer = new lib.QueueEventsProducer(name, { connection: conn });
      for (let i = 0; i < 300; i++) await producer.publishEvent({ eventName: 'tick', i: String(i) }, 10);
      const key = side === 'bullmq' ? `bull:${name}:events` : `emq:{${name}}:events`;
      const len = await conn.xlen(key);
      await producer.close();
      return len < 300 && len >= 10;
    }, 'ev-trim');
    expect(r).toEqual({ bullmq: true, echomq: true });
  });

  it('echomq: objects are sent as JSON (BullMQ sends "[object Object]"); reserved names are refused', async () => {
    const { QueueEventsProducer, QueueEvents, ValidationError } = await import('../../src/index.js');
    const name = `ev-json-${Date.now()}`;
    const qe = new QueueEvents(name, { connection: connection() });
    await qe.waitUntilReady();
    const got: unknown[] = [];
    qe.on('obj', (args: unknown) => got.push(args));
    const producer = new QueueEventsProducer(name, { connection: connection() });
    await producer.publishEvent({ eventName: 'obj', o: { a: 1 }, list: [1, 2] });
    await expect(producer.publishEvent({ eventName: 'error' })).rejects.toBeInstanceOf(ValidationError);
    await expect(producer.publishEvent({ eventName: '' })).rejects.toBeInstanceOf(ValidationError);
    await until(() => got.length === 1, 5000, 'obj event');
    expect(got).toEqual([{ o: '{"a":1}', list: '[1,2]' }]);
    await producer.close();
    await expect(producer.publishEvent({ eventName: 'late' })).rejects.toThrow(/closed/);
    await qe.close();
  });
});

describe('drained (BullMQ 6)', () => {
  it('is written when a settle leaves nothing waiting and nothing active, not when the last job starts', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe, ['added', 'active', 'completed', 'drained']);
      const q = new lib.Queue(name, { connection: conn });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const w = new lib.Worker(name, async (job) => {
        if (job.name === 'slow') await gate;
        return job.name;
      }, { connection: connection(), concurrency: 2 });
      await q.add('slow', {});
      await q.add('fast', {});
      await until(() => seen.filter((s) => s.event === 'completed').length === 1, 5000, 'fast completed');
      await sleep(100);
      const whileSlowRuns = seen.filter((s) => s.event === 'drained').length;
      release();
      await until(() => seen.filter((s) => s.event === 'completed').length === 2, 5000, 'slow completed');
      await until(() => seen[seen.length - 1].event === 'drained', 2000, 'drained');
      await w.close();
      await qe.close();
      await q.close();
      return { whileSlowRuns, events: normalize(seen, namesOf(seen)).filter(([e]) => e !== 'added').map(([e, a]) => `${e}:${a.jobId ?? ''}`) };
    }, 'ev-drained');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq.whileSlowRuns).toBe(0);
    expect(r.bullmq.events.slice(-2)).toEqual(['completed:slow', 'drained:']);
  });
});
