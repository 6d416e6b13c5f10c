import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Job, Queue, QueueEvents, ValidationError, Worker, ClosedError, JobNotFoundError } from '../src/index.js';
import { scripts } from '../src/scripts/index.js';
import { client, keysOf, qname, redisUrl, sleep, waitFor } from './helpers.js';
import { JobField, MetaField } from '../src/core/fields.js';

type Seen = { event: string; args: any; id: string };

/** Records every event a QueueEvents emits, in order. */
function record(qe: QueueEvents, names: string[]): Seen[] {
  const seen: Seen[] = [];
  for (const event of names) {
    qe.on(event, (args: any, id?: string) => {
      if (event === 'drained') seen.push({ event, args: undefined, id: args as string });
      else seen.push({ event, args, id: id! });
    });
  }
  return seen;
}

const ALL = [
  'added', 'waiting', 'active', 'delayed', 'completed', 'failed', 'progress', 'retrying', 'retries-exhausted',
  'stalled', 'removed', 'duplicated', 'drained', 'paused', 'resumed', 'lane:paused', 'lane:resumed',
];

describe('QueueEvents', () => {
  const closers: Array<() => Promise<unknown>> = [];
  const c = client();
  afterAll(async () => {
    for (const f of closers.reverse()) await f();
    c.disconnect();
  });
  const queue = (name: string, opts = {}) => {
    const q = new Queue(name, { connection: redisUrl(), ...opts });
    closers.push(() => q.close());
    return q;
  };
  const events = (name: string, opts = {}) => {
    const qe = new QueueEvents(name, { connection: redisUrl(), ...opts });
    closers.push(() => qe.close());
    return qe;
  };
  const worker = (name: string, fn: (job: Job, token: string, signal: AbortSignal) => unknown, opts = {}) => {
    const w = new Worker(name, fn as never, { connection: redisUrl(), ...opts });
    closers.push(() => w.close());
    return w;
  };

  it('emits the job lifecycle with BullMQ listener arguments', async () => {
    const name = qname('ev');
    const q = queue(name);
    const qe = events(name);
    await qe.waitUntilReady();
    const seen = record(qe, ALL);
    const perJob: any[] = [];
    const job = await q.add('ok', { x: 1 });
    qe.on(`completed:${job.id}`, (args: any) => perJob.push(args));
    const bad = await q.add('bad', {}, { attempts: 2 });
    worker(name, async (j) => {
      if (j.name === 'bad') throw new Error(`boom ${j.attemptsMade}`);
      await j.updateProgress({ pct: 50 });
      return { doubled: j.data.x * 2 };
    });
    await waitFor(() => seen.some((s) => s.event === 'failed'), 10000, 'failed event');
    await waitFor(() => seen.some((s) => s.event === 'drained'), 10000, 'drained event');

    const of = (event: string, id?: string) => seen.filter((s) => s.event === event && (id === undefined || s.args?.jobId === id));
    expect(of('added', job.id)[0].args).toEqual({ jobId: job.id, name: 'ok', lane: 'default', delay: '0' });
    expect(of('waiting', job.id)[0].args).toEqual({ jobId: job.id });
    expect(of('active', job.id)[0].args).toEqual({ jobId: job.id, prev: 'waiting' });
    expect(of('progress', job.id)[0].args).toEqual({ jobId: job.id, data: { pct: 50 } });
    expect(of('completed', job.id)[0].args).toEqual({ jobId: job.id, returnvalue: { doubled: 2 }, prev: 'active' });
    expect(perJob).toEqual([{ jobId: job.id, returnvalue: { doubled: 2 }, prev: 'active' }]);
    // attempt 1 of 2 is retried, attempt 2 fails for good
    expect(of('retrying', bad.id)[0].args).toMatchObject({ jobId: bad.id, failedReason: 'boom 0', attemptsMade: '1' });
    expect(of('failed', bad.id).map((s) => s.args)).toEqual([{ jobId: bad.id, failedReason: 'boom 1', prev: 'active' }]);
    expect(of('retries-exhausted', bad.id)[0].args).toEqual({ jobId: bad.id, attemptsMade: '2' });
    // drained carries only the event id, as in BullMQ
    expect(of('drained')[0].id).toMatch(/^\d+-\d+$/);
    // event ids are the stream ids, increasing; a job ready at once has one entry for added and
    // waiting (lib/newjob.lua), so that pair shares its id
    const ids = seen.map((s) => s.id);
    for (const id of ids) expect(id).toMatch(/^\d+-\d+$/);
    const cmp = (a: string, b: string) => {
      const [am, as] = a.split('-').map(BigInt);
      const [bm, bs] = b.split('-').map(BigInt);
      return am === bm ? (as < bs ? -1 : as > bs ? 1 : 0) : am < bm ? -1 : 1;
    };
    // (and a failure that uses up the attempts carries its retries-exhausted, fail.lua)
    for (let i = 1; i < ids.length; i++) {
      const sameJob = seen[i - 1].args?.jobId === seen[i].args?.jobId;
      const pair = sameJob && ((seen[i - 1].event === 'added' && seen[i].event === 'waiting') || (seen[i - 1].event === 'failed' && seen[i].event === 'retries-exhausted'));
      expect(cmp(ids[i - 1], ids[i])).toBe(pair ? 0 : -1);
    }
    expect(of('waiting', job.id)[0].id).toBe(of('added', job.id)[0].id);
    expect(qe.lastEventId).toBe(ids[ids.length - 1]);
  });

  it('events of neighbouring jobs share entries, in order; each job still gets its own events', async () => {
    const name = qname('evbulk');
    const q = queue(name);
    const qe = events(name);
    await qe.waitUntilReady();
    const seen = record(qe, ['added', 'waiting', 'delayed', 'duplicated', 'active', 'completed']);
    await q.add('first', {}, { jobId: 'dup' });
    const jobs = await q.addBulk([
      { name: 'a', data: 1 },
      { name: 'b', data: 2, opts: { lane: 'x' } },
      { name: 'd', data: 3, opts: { delay: 60000 } },
      { name: 'again', data: 4, opts: { jobId: 'dup' } },
      { name: 'c', data: 5, opts: { priority: 3 } },
    ]);
    await waitFor(() => seen.filter((s) => s.event === 'added').length === 5, 5000, 'added events');
    await waitFor(() => seen.some((s) => s.event === 'duplicated'), 5000, 'duplicated event');
    const [a, b, d, , cj] = jobs;
    const ofJob = (id: string) => seen.filter((s) => s.args?.jobId === id).map((s) => [s.event, s.args]);
    expect(ofJob(a.id)).toEqual([['added', { jobId: a.id, name: 'a', lane: 'default', delay: '0' }], ['waiting', { jobId: a.id }]]);
    expect(ofJob(b.id)).toEqual([['added', { jobId: b.id, name: 'b', lane: 'x', delay: '0' }], ['waiting', { jobId: b.id }]]);
    expect(ofJob(cj.id)).toEqual([['added', { jobId: cj.id, name: 'c', lane: 'default', delay: '0' }], ['waiting', { jobId: cj.id }]]);
    expect(ofJob(d.id).map(([e]) => e)).toEqual(['added', 'delayed']);
    // The stream: a and b share an entry; d's events and the duplicate come between, as they
    // happened; c starts a new entry.
    const entries = (await c.xrange(q.keys.events, '-', '+')).slice(1).map(([, f]) => f);
    expect(entries).toEqual([
      // the first job's name and lane are shared; a later job writes those that differ
      ['event', 'added', 'then', 'waiting', 'name', 'a', 'lane', 'default', 'jobId', a.id, 'jobId', b.id, 'name', 'b', 'lane', 'x'],
      ['event', 'added', 'jobId', d.id, 'name', 'd', 'lane', 'default', 'delay', '60000'],
      expect.arrayContaining(['event', 'delayed', 'jobId', d.id]),
      ['event', 'duplicated', 'jobId', 'dup'],
      ['event', 'added', 'then', 'waiting', 'name', 'c', 'lane', 'default', 'jobId', cj.id],
    ]);
    // An entry holds at most 10 jobs: 25 ready jobs take 3 entries, every job emitted once, in order.
    const before = seen.length;
    const more = await q.addBulk(Array.from({ length: 25 }, (_, i) => ({ name: `m${i}`, data: i })));
    await waitFor(() => seen.length === before + 50, 5000, 'events of 25 more jobs');
    const moreAdded = seen.slice(before).filter((s) => s.event === 'added');
    expect(moreAdded.map((s) => s.args.jobId)).toEqual(more.map((j) => j.id));
    expect(moreAdded.map((s) => s.args)).toEqual(more.map((j) => ({ jobId: j.id, name: j.name, lane: 'default', delay: '0' })));
    const sizes = (await c.xrange(q.keys.events, '-', '+')).slice(-3).map(([, f]) => f.filter((x) => x === 'jobId').length);
    expect(sizes).toEqual([10, 10, 5]);
    // Claims and settles group their active and completed events the same way.
    await c.del(q.keys.events);
    const w = worker(name, async (j) => j.data, { concurrency: 40 });
    await waitFor(() => seen.filter((s) => s.event === 'completed').length === 29, 10000, 'completions');
    await w.close();
    const done = seen.filter((s) => s.event === 'completed');
    const data = new Map<string, unknown>([['dup', {}], ...[a, b, cj, ...more].map((j) => [j.id, j.data] as [string, unknown])]);
    expect(done.map((s) => s.args.jobId).sort()).toEqual([...data.keys()].sort());
    for (const s of done) expect(s.args).toEqual({ jobId: s.args.jobId, returnvalue: data.get(s.args.jobId), prev: 'active' });
    for (const s of seen.filter((x) => x.event === 'active')) expect(Object.keys(s.args).sort()).toEqual(['jobId', 'prev']);
    const raw = await c.xrange(q.keys.events, '-', '+');
    const perEntry = (ev: string) => raw.filter(([, f]) => f[1] === ev).map(([, f]) => f.filter((x) => x === 'jobId').length);
    expect(Math.max(...perEntry('active'))).toBeGreaterThan(1);
    expect(Math.max(...perEntry('active'), ...perEntry('completed'))).toBeLessThanOrEqual(10);
  });

  it('emits delayed, removed, paused/resumed, lane pause, duplicated and stalled', async () => {
    const name = qname('ev2');
    const q = queue(name);
    const qe = events(name);
    await qe.waitUntilReady();
    const seen = record(qe, ALL);
    const d = await q.add('d', {}, { delay: 60_000 });
    await q.remove(d.id);
    await q.pause();
    await q.resume();
    await q.lanes.pause('tenant:a');
    await q.lanes.resume('tenant:a');
    await q.add('x', {}, { jobId: 'custom' });
    await q.add('x', {}, { jobId: 'custom' });
    // a lease that expires: claim with a 20 ms lease, let it lapse, run the sweep
    const ctx = { client: q.client, keys: q.keys };
    const claimed = await scripts.claim(ctx, { count: 1, leaseMs: 20 });
    expect(claimed.jobs.map((j) => j.id)).toEqual(['custom']);
    await sleep(40);
    expect((await scripts.recover(ctx, { maxStalledCount: 1, batch: 10 })).requeued).toEqual(['custom']);
    await waitFor(() => seen.some((s) => s.event === 'stalled'), 5000, 'stalled event');
    const list = seen.map((s) => [s.event, s.args]);
    expect(list).toEqual([
      ['added', { jobId: d.id, name: 'd', lane: 'default', delay: '60000' }],
      ['delayed', { jobId: d.id, delay: expect.any(Number) }],
      ['removed', { jobId: d.id, prev: 'delayed' }],
      ['paused', {}],
      ['resumed', {}],
      ['lane:paused', { lane: 'tenant:a' }],
      ['lane:resumed', { lane: 'tenant:a' }],
      ['added', { jobId: 'custom', name: 'x', lane: 'default', delay: '0' }],
      ['waiting', { jobId: 'custom' }],
      ['duplicated', { jobId: 'custom' }],
      ['active', { jobId: 'custom', prev: 'waiting' }],
      // no drained: as in BullMQ it is written when a settle leaves the queue idle, not by the claim
      // BullMQ reports the move back to wait, then the stall (both from recover.lua's one entry)
      ['waiting', { jobId: 'custom', prev: 'active' }],
      ['stalled', { jobId: 'custom' }],
    ]);
    // the delayed event carries the due time (ms, Redis clock)
    const due = Number(seen[1].args.delay);
    expect(due).toBeGreaterThan(Date.now() + 50_000);
  });

  it("with lastEventId '$' reads only new events; '0' replays the stream; an id resumes after it", async () => {
    const name = qname('ev3');
    const q = queue(name);
    await q.add('a', {});
    await q.add('b', {});
    const fresh = events(name);
    await fresh.waitUntilReady();
    const freshSeen = record(fresh, ['added']);
    const replay = events(name, { lastEventId: '0' });
    const replaySeen = record(replay, ['added']);
    await waitFor(() => replaySeen.length === 2, 5000, 'replay');
    await q.add('c', {});
    await waitFor(() => freshSeen.length === 1 && replaySeen.length === 3, 5000, 'new event');
    expect(freshSeen.map((s) => s.args.name)).toEqual(['c']);
    expect(replaySeen.map((s) => s.args.name)).toEqual(['a', 'b', 'c']);
    // resume after the first entry
    const after = events(name, { lastEventId: replaySeen[0].id });
    const afterSeen = record(after, ['added']);
    await waitFor(() => afterSeen.length === 2, 5000, 'resume');
    expect(afterSeen.map((s) => s.args.name)).toEqual(['b', 'c']);
  });

  it('a reader that loses its connection continues from the last id it saw', async () => {
    const name = qname('ev4');
    const q = queue(name);
    const url = new URL(redisUrl());
    // The reader names its connection as BullMQ does (what Queue.getQueueEvents() looks for).
    const connName = `emq:${Buffer.from(name).toString('base64')}:qe`;
    const qe = events(name, { connection: { host: url.hostname, port: Number(url.port) } });
    await qe.waitUntilReady();
    const seen = record(qe, ['added']);
    const errors: Error[] = [];
    qe.on('error', (e) => errors.push(e));
    for (let i = 0; i < 5; i++) await q.add(`before-${i}`, {});
    await waitFor(() => seen.length === 5, 5000, 'first five');
    // Kill the reader's connection, then write while it is reconnecting.
    const list = (await c.client('LIST')) as string;
    const line = list.split('\n').find((l) => l.includes(`name=${connName}`));
    expect(line).toBeDefined();
    const clientId = /\bid=(\d+)/.exec(line!)![1];
    await c.client('KILL', 'ID', clientId);
    for (let i = 0; i < 5; i++) await q.add(`during-${i}`, {});
    await waitFor(() => seen.length === 10, 10000, 'all ten after reconnect');
    const relist = ((await c.client('LIST')) as string).split('\n').find((l) => l.includes(`name=${connName}`));
    expect(/\bid=(\d+)/.exec(relist!)![1]).not.toBe(clientId); // it did reconnect
    await q.add('after', {});
    await waitFor(() => seen.length === 11, 5000, 'eleventh');
    expect(seen.map((s) => s.args.name)).toEqual([
      ...[0, 1, 2, 3, 4].map((i) => `before-${i}`),
      ...[0, 1, 2, 3, 4].map((i) => `during-${i}`),
      'after',
    ]);
    // and a new reader started from the old one's lastEventId misses nothing either
    const last = qe.lastEventId!;
    await qe.close();
    await q.add('while-closed', {});
    const next = events(name, { lastEventId: last });
    const nextSeen = record(next, ['added']);
    await waitFor(() => nextSeen.length === 1, 5000, 'resumed reader');
    expect(nextSeen[0].args.name).toBe('while-closed');
  });

  it('caps the stream at streams.events.maxLen (approximate trim) and validates it', async () => {
    const name = qname('ev5');
    const q = queue(name, { streams: { events: { maxLen: 100 } } });
    // A bulk add's ready jobs share an entry per script call; awaited single adds write one each.
    await q.addBulk(Array.from({ length: 1000 }, (_, i) => ({ name: 'j', data: i })));
    for (let i = 0; i < 400; i++) await q.add('one', i);
    expect(await c.hget(q.keys.meta, MetaField.eventsMaxLen)).toBe('100');
    const len = await c.xlen(q.keys.events);
    // XADD MAXLEN ~ trims whole stream nodes (100 entries each by default), so the length
    // stays within one node of the cap rather than exactly at it.
    expect(len).toBeGreaterThanOrEqual(100);
    expect(len).toBeLessThanOrEqual(300);
    // default cap is 10000 and is not written
    const other = queue(qname('ev5b'));
    await other.add('j', {});
    expect(await c.hget(other.keys.meta, MetaField.eventsMaxLen)).toBeNull();

    const bad = qname('ev5c');
    for (const streams of [{ events: { maxLen: -1 } }, { events: { maxLen: 1.5 } }, { events: 'x' }, 5]) {
      expect(() => new Queue(bad, { connection: redisUrl(), streams: streams as never })).toThrow(ValidationError);
    }
    expect(() => new Queue(bad, { connection: redisUrl(), streams: { events: { maxLen: -1 } } })).toThrow(
      'streams.events.maxLen must be a non-negative integer, got -1',
    );
    expect(await c.exists(keysOf(bad).meta)).toBe(0);
  });

  it('large return values: the event carries truncated instead, waitUntilFinished still gets the value', async () => {
    const name = qname('ev6');
    const q = queue(name);
    const qe = events(name);
    await qe.waitUntilReady();
    const seen = record(qe, ['completed']);
    const big = 'x'.repeat(200);
    worker(name, async (j) => (j.name === 'big' ? { big } : 'small'), { maxEventValueBytes: 64 });
    const a = await q.add('big', {});
    const b = await q.add('small', {});
    await expect(a.waitUntilFinished(qe, 5000)).resolves.toEqual({ big });
    await expect(b.waitUntilFinished(qe, 5000)).resolves.toBe('small');
    await waitFor(() => seen.length === 2);
    const ev = Object.fromEntries(seen.map((s) => [s.args.jobId, s.args]));
    expect(ev[a.id]).toEqual({ jobId: a.id, prev: 'active', truncated: '1' });
    expect(ev[b.id]).toEqual({ jobId: b.id, prev: 'active', returnvalue: 'small' });
  });

  it('waitUntilFinished resolves, rejects, times out, and handles already finished jobs', async () => {
    const name = qname('ev7');
    const q = queue(name);
    const qe = events(name);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    worker(name, async (j) => {
      if (j.name === 'slow') await gate;
      if (j.name === 'fail') throw new Error('nope');
      return j.data;
    }, { concurrency: 5 });
    const ok = await q.add('ok', { v: 1 });
    const fail = await q.add('fail', {});
    const slow = await q.add('slow', 7);
    await expect(ok.waitUntilFinished(qe)).resolves.toEqual({ v: 1 });
    await expect(fail.waitUntilFinished(qe)).rejects.toThrow('nope');
    await expect(slow.waitUntilFinished(qe, 100)).rejects.toThrow(/timed out/);
    // already finished: answered from the job's state
    await expect(ok.waitUntilFinished(qe)).resolves.toEqual({ v: 1 });
    await expect(fail.waitUntilFinished(qe)).rejects.toThrow('nope');
    const pending = slow.waitUntilFinished(qe, 5000);
    release();
    await expect(pending).resolves.toBe(7);
    // listeners are removed once settled
    expect(qe.listenerCount(`completed:${slow.id}`)).toBe(0);
    expect(qe.listenerCount(`failed:${fail.id}`)).toBe(0);
    // unknown job
    const ghost = Job.fromHash({ client: q.client, keys: q.keys, maxPayloadBytes: 1024, keepLogs: 0 }, 'ghost', {});
    await expect(ghost.waitUntilFinished(qe)).rejects.toThrow(JobNotFoundError);
  });

  it('waitUntilFinished does not miss a completion between subscribing and reading the state', async () => {
    const name = qname('ev8');
    const q = queue(name);
    const qe = events(name);
    await q.add('j', { n: 1 });
    const ctx = { client: q.client, keys: q.keys };
    const [claimed] = (await scripts.claim(ctx, { count: 1, leaseMs: 30_000 })).jobs;
    const token = claimed.fields[claimed.fields.indexOf('att') + 1];
    // A client whose state read completes the job first and then answers with the state it had
    // before ('a'): exactly a completion that lands between the subscription and the check.
    const racy = new Proxy(q.client, {
      get(target, prop, receiver) {
        if (prop === 'hmget') {
          return async (...args: unknown[]) => {
            const before = await (target as Redis).hmget(args[0] as string, JobField.state, JobField.returnValue, JobField.failedReason);
            const r = await scripts.complete(ctx, {
              id: claimed.id, token, returnValue: '"done"', fetch: 0, leaseMs: 1000, maxEventValueBytes: 16384,
            });
            expect(typeof r).toBe('object');
            return before;
          };
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const job = Job.fromHash({ client: racy as never, keys: q.keys, maxPayloadBytes: 1024, keepLogs: 0 }, claimed.id, {});
    await expect(job.waitUntilFinished(qe, 5000)).resolves.toBe('done');
  });

  it('many concurrent waiters each get their own result', async () => {
    const name = qname('ev9');
    const q = queue(name);
    const qe = events(name);
    worker(name, async (j) => j.data.n * 10, { concurrency: 10 });
    const jobs = await q.addBulk(Array.from({ length: 100 }, (_, n) => ({ name: 'j', data: { n } })));
    const results = await Promise.all(jobs.map((j, i) => sleep(i % 7).then(() => j.waitUntilFinished(qe, 10_000))));
    expect(results).toEqual(jobs.map((_, n) => n * 10));
  });

  it('close() is idempotent, rejects pending waits, and validates its options', async () => {
    const name = qname('ev10');
    const q = queue(name);
    const qe = new QueueEvents(name, { connection: redisUrl() });
    const job = await q.add('never', {});
    const pending = job.waitUntilFinished(qe).then(() => 'resolved', (e: unknown) => e);
    await qe.waitUntilReady();
    let closed = 0;
    qe.on('closed', () => closed++);
    const t0 = Date.now();
    await Promise.all([qe.close(), qe.close()]);
    await qe.close();
    expect(Date.now() - t0).toBeLessThan(2000); // does not wait out the 10 s block
    expect(closed).toBe(1);
    expect(await pending).toBeInstanceOf(ClosedError);
    expect(qe.isRunning()).toBe(false);

    expect(() => new QueueEvents(name, { lastEventId: 'latest' })).toThrow(ValidationError);
    expect(() => new QueueEvents(name, { blockingTimeout: -1 })).toThrow('blockingTimeout must be an integer 0…3600000, got -1'); // 0 blocks until an event arrives, as in BullMQ
    expect(() => new QueueEvents('', {})).toThrow(ValidationError);
    const other = events(qname('other'));
    expect(() => job.waitUntilFinished(other)).toThrow(ValidationError);
    expect(() => job.waitUntilFinished({} as never)).toThrow(ValidationError);
    const live = events(name);
    expect(() => job.waitUntilFinished(live, 0)).toThrow('ttl must be a positive integer, got 0');
  });

  it('autorun: false reads nothing until run()', async () => {
    const name = qname('ev11');
    const q = queue(name);
    const qe = events(name, { autorun: false });
    await qe.waitUntilReady();
    const seen = record(qe, ['added']);
    await q.add('a', {});
    await sleep(100);
    expect(seen).toEqual([]);
    void qe.run();
    await waitFor(() => seen.length === 1, 5000, 'after run');
  });
});
