/**
 * The Worker's surface side by side with BullMQ: options and their refusals, id, concurrency
 * changed while jobs run, pause/resume, cancelAllJobs, events (ready, closing, closed, paused,
 * resumed, active, completed, failed, progress, stalled, drained, locksRenewed,
 * lockRenewalFailed), worker-level retention, metrics and the connection name.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { closeConnections, collect, sideBySide, type Lib, refusal } from './harness.js';
import { client, redisUrl, sleep, waitFor } from '../helpers.js';

afterAll(closeConnections);
const plain = client();
afterAll(() => plain.quit());

type AnyJob = { id?: string; name: string; data: any; [k: string]: any };

function worker(lib: Lib, name: string, connection: Redis | object, fn: (job: AnyJob, token?: string, signal?: AbortSignal) => Promise<unknown>, opts: Record<string, unknown> = {}) {
  const w = new lib.Worker(name, fn as never, { connection: connection as Redis, ...opts });
  w.on('error', () => {});
  return w;
}

describe('Worker surface (BullMQ Worker)', () => {
  it('refuses bad options with BullMQ texts', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const mk = (opts: Record<string, unknown>) => refusal(() => new lib.Worker(name, null, { connection, ...opts }));
      const w = new lib.Worker(name, null, { connection });
      const seen = {
        maxStalledCount: mk({ maxStalledCount: -1 }),
        maxStartedAttempts: mk({ maxStartedAttempts: -1 }),
        stalledInterval: mk({ stalledInterval: 0 }),
        drainDelay: mk({ drainDelay: 0 }),
        concurrency: refusal(() => {
          w.concurrency = 0;
        }),
      };
      await w.close();
      return seen;
    });
    for (const [k, text] of Object.entries(r.bullmq)) expect(r.echomq[k as keyof typeof r.echomq].startsWith(text), k).toBe(true);
  });

  it('has an id, options with their defaults, and a concurrency getter/setter', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const w = new lib.Worker(name, null, { connection, lockDuration: 4000 });
      const seen = {
        id: typeof w.id === 'string' && w.id.length === 36 && w.id !== new lib.Worker(name, null, { connection, autorun: false }).id,
        opts: {
          concurrency: w.opts.concurrency, lockDuration: w.opts.lockDuration, lockRenewTime: w.opts.lockRenewTime,
          stalledInterval: w.opts.stalledInterval, maxStalledCount: w.opts.maxStalledCount, drainDelay: w.opts.drainDelay,
          maximumRateLimitDelay: w.opts.maximumRateLimitDelay, runRetryDelay: w.opts.runRetryDelay, autorun: w.opts.autorun,
        },
        concurrency: [w.concurrency, (() => {
          w.concurrency = 5;
          return w.concurrency;
        })()],
      };
      await w.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('emits ready, active, progress, completed, failed, drained, closing and closed', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.add('ok', { n: 1 });
      await q.add('bad', { n: 2 });
      const events: string[] = [];
      const w = worker(lib, name, connection, async (job) => {
        await job.updateProgress(50);
        if (job.name === 'bad') throw new Error('nope');
        return 'fine';
      }, { autorun: false });
      const ready = new Promise<void>((res) => w.on('ready', () => res()));
      w.on('active', (job, prev) => events.push(`active ${job.name} ${prev}`));
      w.on('progress', (job, p) => events.push(`progress ${job.name} ${JSON.stringify(p)}`));
      w.on('completed', (job, rv, prev) => events.push(`completed ${job.name} ${rv} ${prev}`));
      w.on('failed', (job, err, prev) => events.push(`failed ${job?.name} ${err.message} ${prev}`));
      const drained = new Promise<void>((res) => w.on('drained', () => res()));
      w.on('closing', (msg) => events.push(`closing ${typeof msg}`));
      w.on('closed', () => events.push('closed'));
      await ready;
      void w.run();
      await drained;
      await w.close();
      await q.close();
      return events;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('pause() waits for running jobs; pause(true) does not; resume() claims again; events paused/resumed', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const log: string[] = [];
      const w = worker(lib, name, connection, async (job) => {
        log.push(`start ${job.name}`);
        await sleep(150);
        log.push(`end ${job.name}`);
      });
      w.on('paused', () => log.push('paused'));
      w.on('resumed', () => log.push('resumed'));
      await q.add('a', {});
      await waitFor(() => log.includes('start a'), 5000, 'a started');
      await w.pause();
      log.push(`pause resolved, paused ${w.isPaused()}, running ${w.isRunning()}`);
      await q.add('b', {});
      await sleep(100);
      await w.resume();
      await waitFor(() => log.includes('start b'), 5000, 'b started');
      await w.pause(true);
      log.push('pause(true) resolved');
      await waitFor(() => log.includes('end b'), 5000, 'b ended');
      await w.resume();
      await w.close();
      await q.close();
      return log;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('cancelAllJobs aborts the signals of running jobs', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      let started = 0;
      const w = worker(lib, name, connection, (job, _token, signal) => new Promise((_res, rej) => {
        started++;
        signal!.addEventListener('abort', () => rej(new lib.UnrecoverableError(String(signal!.reason))));
      }), { concurrency: 2 });
      const failed = collect((cb) => w.on('failed', cb), 2);
      await q.add('a', {});
      await q.add('b', {});
      await waitFor(() => started === 2, 5000, 'both processors called');
      await sleep(20); // BullMQ tracks the job's signal just after calling the processor
      w.cancelAllJobs('shutting down');
      const got = (await failed) as unknown as Array<[AnyJob, Error]>;
      const seen = got.map(([job, err]) => `${job.name}: ${err.message}`).sort();
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('renews leases (locksRenewed) and reports leases it lost (lockRenewalFailed)', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const renewed: number[] = [];
      const lost: number[] = [];
      let release: () => void = () => {};
      const w = worker(lib, name, connection, () => new Promise<void>((res) => (release = res)), { lockDuration: 1000, lockRenewTime: 50 });
      w.on('locksRenewed', ({ count, jobIds }) => renewed.push(count + jobIds.length));
      w.on('lockRenewalFailed', (ids) => lost.push(ids.length));
      const job = await q.add('long', {});
      await waitFor(() => renewed.length >= 2, 5000, 'renewals');
      await q.obliterate({ force: true }); // the lease disappears under the running job
      await waitFor(() => lost.length >= 1, 5000, 'lost lease');
      release();
      const seen = { renewed: renewed[0], lost: lost[0], id: typeof job.id };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ renewed: 2, lost: 1, id: 'string' });
  });

  it('emits stalled(jobId, prev) when a lease expires under skipLockRenewal', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      let runs = 0;
      const w = worker(lib, name, connection, async () => {
        runs++;
        if (runs === 1) await sleep(600);
        return runs;
      }, { lockDuration: 150, stalledInterval: 100, skipLockRenewal: true, maxStalledCount: 5 });
      const stalled = collect((cb) => w.on('stalled', cb), 1);
      const job = await q.add('slow', {});
      const [[id, prev]] = (await stalled) as unknown as Array<[string, string]>;
      const seen = { same: id === job.id, prev };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ same: true, prev: 'active' });
  });

  it('skipStalledCheck: the worker does not sweep; startStalledCheckTimer starts a sweep', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const q = new lib.Queue(name, { connection });
      const a = new lib.Worker(name, null, { connection, lockDuration: 100, stalledInterval: 50, skipLockRenewal: true });
      await q.add('x', {});
      const job = (await a.getNextJob('tok'))!;
      const skipper = worker(lib, name, connection, async () => 'ran', { skipStalledCheck: true, stalledInterval: 50, concurrency: 1 });
      await sleep(300);
      const before = await job.getState(); // nobody swept: the manual worker never started its timer
      const sweeper = worker(lib, name, connection, async () => 'ran', { autorun: false, stalledInterval: 50 });
      await sweeper.startStalledCheckTimer();
      await waitFor(async () => (await job.getState()) !== 'active', 5000, `${side} recovered`);
      const seen = { before };
      await Promise.all([a.close(), skipper.close(), sweeper.close()]);
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.before).toBe('active');
  });

  it('differs on purpose: a manual-processing worker renews the leases of the jobs it handed out', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const a = new lib.Worker(name, null, { connection, lockDuration: 150 });
      await q.add('x', {});
      const job = (await a.getNextJob('tok'))!;
      const sweeper = worker(lib, name, connection, async () => 'ran', { autorun: false, stalledInterval: 50 });
      await sweeper.startStalledCheckTimer();
      await sleep(600);
      const seen = { state: await job.getState(), settle: (await job.moveToCompleted('late', 'tok', false).then(() => 'ok', (e: Error) => e.message)).slice(0, 16) };
      await Promise.all([a.close(), sweeper.close()]);
      await q.close();
      return seen;
    });
    // BullMQ leaves renewal to the caller (job.extendLock): the lease expires and is swept.
    expect(r.bullmq.state).not.toBe('active');
    expect(r.bullmq.settle).toBe('Missing lock for');
    // echomq renews every job it holds for a caller until a lock-holder call moves it.
    expect(r.echomq).toEqual({ state: 'active', settle: 'ok' });
  });

  it('worker-level removeOnComplete / removeOnFail apply to jobs without their own', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const w = worker(lib, name, connection, async (job) => {
        if (job.name.startsWith('bad')) throw new Error('x');
      }, { removeOnComplete: { count: 0 }, removeOnFail: { count: 1 } });
      const done = collect((cb) => w.on('completed', cb), 2);
      const failed = collect((cb) => w.on('failed', cb), 2);
      const plainJob = await q.add('ok', {});
      const kept = await q.add('keep', {}, { removeOnComplete: false });
      await q.add('bad1', {});
      await q.add('bad2', {});
      await Promise.all([done, failed]);
      const seen = {
        plain: (await lib.Job.fromId(q as never, plainJob.id!)) ? 'kept' : 'removed',
        kept: (await lib.Job.fromId(q as never, kept.id!)) ? 'kept' : 'removed',
        counts: await q.getJobCounts('completed', 'failed'),
      };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ plain: 'removed', kept: 'kept', counts: { completed: 1, failed: 1 } });
  });

  it('metrics: a worker with metrics counts completed and failed jobs in BullMQ\'s keys', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const q = new lib.Queue(name, { connection });
      const w = worker(lib, name, connection, async (job) => {
        if (job.name === 'bad') throw new Error('x');
      }, { metrics: { maxDataPoints: 10 } });
      const done = collect((cb) => w.on('completed', cb), 3);
      const failed = collect((cb) => w.on('failed', cb), 1);
      await q.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }, { name: 'c', data: {} }, { name: 'bad', data: {} }]);
      await Promise.all([done, failed]);
      await sleep(50);
      const key = (k: string) => (side === 'bullmq' ? `bull:${name}:metrics:${k}` : `emq:{${name}}:metrics:${k}`);
      const seen = {
        completed: await plain.hget(key('completed'), 'count'),
        failed: await plain.hget(key('failed'), 'count'),
        prevTS: (await plain.hget(key('completed'), 'prevTS')) !== null,
      };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ completed: '3', failed: '1', prevTS: true });
  });

  it('names its connection with BullMQ\'s scheme (CLIENT SETNAME), with the worker name', async () => {
    const url = new URL(redisUrl());
    const r = await sideBySide(async (lib, name) => {
      const w = worker(lib, name, { host: url.hostname, port: Number(url.port) }, async () => 1, { name: 'billing' });
      await w.waitUntilReady();
      await sleep(50);
      const prefix = lib === (await import('bullmq')) ? 'bull' : 'emq';
      const want = `name=${prefix}:${Buffer.from(name).toString('base64')}:w:billing`;
      const list = (await plain.client('LIST')) as string;
      const seen = { named: list.split('\n').some((l) => l.includes(`${want} `)) };
      await w.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.named).toBe(true);
  });

  // Differs on purpose: BullMQ's worker loop goes on after disconnect() and reconnects its
  // blocking connection (the one carrying the worker's name), so it is listed again; echomq's
  // disconnect() closes both connections and nothing reconnects them.
  it('disconnect() closes the connections at once', async () => {
    const url = new URL(redisUrl());
    const r = await sideBySide(async (lib, name) => {
      const w = worker(lib, name, { host: url.hostname, port: Number(url.port) }, async () => 1, { name: 'gone' });
      await w.waitUntilReady();
      await w.disconnect();
      await sleep(50);
      const list = (await plain.client('LIST')) as string;
      const seen = { left: list.split('\n').filter((l) => l.includes(`${Buffer.from(name).toString('base64')}:w:gone `)).length };
      await w.close().catch(() => {});
      return seen;
    });
    // Deliberate difference: BullMQ's running loop reconnects its (named) blocking connection
    // right after disconnect(); echomq's worker stays disconnected until close().
    expect(r.bullmq).toEqual({ left: 1 });
    expect(r.echomq).toEqual({ left: 0 });
  });
});

describe('concurrency changes while jobs run', () => {
  it('raised 1 → 8 and lowered to 2: no job starts while as many jobs as the setting run', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      let running = 0;
      let peak = 0;
      const violations: string[] = [];
      let w: ReturnType<typeof worker>;
      // Sampled at every start: the jobs running before it must be fewer than the setting.
      // eslint-disable-next-line prefer-const
      w = worker(lib, name, connection, async () => {
        if (running >= w.concurrency) violations.push(`${running} running at concurrency ${w.concurrency}`);
        running++;
        peak = Math.max(peak, running);
        await sleep(40);
        running--;
      }, { concurrency: 1 });
      await q.addBulk(Array.from({ length: 150 }, (_, i) => ({ name: 'j', data: { i } })));
      await waitFor(() => running === 1, 5000, 'first job');
      await sleep(150);
      const peakAt1 = peak;
      w.concurrency = 8;
      await waitFor(() => peak >= 8, 5000, 'eight at once').catch(() => {});
      const peakAt8 = peak;
      w.concurrency = 2;
      await waitFor(() => running <= 2, 5000, 'the jobs started at 8 finish');
      peak = running;
      await sleep(300);
      const peakAt2 = peak;
      await w.close();
      await q.close();
      return { peakAt1, peakAt8, peakAt2, violations: violations.length };
    });
    expect(r.echomq).toEqual({ peakAt1: 1, peakAt8: 8, peakAt2: 2, violations: 0 });
    expect(r.echomq).toEqual(r.bullmq);
  });
});
