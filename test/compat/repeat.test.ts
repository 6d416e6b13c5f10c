/**
 * BullMQ's JobScheduler class (queue.jobScheduler) side by side, the Queue re-emitting its
 * errors, and the legacy Repeat class / getRepeatableJobs (BullMQ 5; not in BullMQ 6.7, so
 * checked against the schedulers BullMQ 6.7 itself reports, in the legacy shape).
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as bullmq from 'bullmq';
import { closeConnections, connection, sideBySide } from './harness.js';
import * as echomq from '../../src/index.js';
import { qname } from '../helpers.js';

afterAll(closeConnections);

type Scheduler = {
  upsertJobScheduler(id: string, r: object, name: string, data: unknown, opts: object, o: { override: boolean }): Promise<bullmq.Job | undefined>;
  getScheduler(id: string): Promise<Record<string, unknown> | undefined>;
  getJobSchedulers(start?: number, end?: number, asc?: boolean): Promise<Array<Record<string, unknown>>>;
  getSchedulersCount(): Promise<number>;
  isJobScheduler(id: string): Promise<boolean>;
  removeJobScheduler(id: string): Promise<number>;
  emit(event: string, ...args: unknown[]): boolean;
};

describe('queue.jobScheduler', () => {
  it('upserts, reads, counts and removes schedulers as BullMQ\'s JobScheduler', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const queue = new lib.Queue(name, { connection: conn });
      const js = (await (queue as unknown as { jobScheduler: Promise<Scheduler> }).jobScheduler);
      const job = await js.upsertJobScheduler('every-minute', { every: 60_000 }, 'tick', { n: 1 }, { attempts: 2 }, { override: true });
      await js.upsertJobScheduler('nightly', { pattern: '0 3 * * *' }, 'night', {}, {}, { override: true });
      const one = await js.getScheduler('every-minute');
      const seen = {
        job: { name: job?.name, data: job?.data, id: job?.id?.replace(/\d+$/, '<ms>'), repeatJobKey: job?.repeatJobKey },
        one: { key: one?.key, name: one?.name, every: one?.every, template: one?.template },
        all: (await js.getJobSchedulers(0, -1, true)).map((s) => s.key).sort(),
        count: await js.getSchedulersCount(),
        is: [await js.isJobScheduler('nightly'), await js.isJobScheduler('nope')],
        removed: [await js.removeJobScheduler('nightly'), await js.removeJobScheduler('nightly')],
        after: await js.getSchedulersCount(),
        // The queue sees the same schedulers.
        viaQueue: (await queue.getJobSchedulers()).map((s) => s.key),
      };
      await queue.obliterate({ force: true });
      await queue.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    // BullMQ's JobScheduler returns its script's code: 0 = removed, 1 = none.
    expect(r.echomq.removed).toEqual([0, 1]);
  });

  it('its "error" events reach queue.on("error")', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const queue = new lib.Queue(name, { connection: conn });
      const js = await (queue as unknown as { jobScheduler: Promise<Scheduler> }).jobScheduler;
      const got: unknown[] = [];
      queue.on('error', (e: Error) => got.push(e.message));
      js.emit('error', new Error('scheduler boom'));
      const same = js === (await (queue as unknown as { jobScheduler: Promise<Scheduler> }).jobScheduler);
      await queue.close();
      return { got, same };
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.got).toEqual(['scheduler boom']);
  });
});

describe('legacy Repeat (BullMQ 5) on echomq\'s schedulers', () => {
  it('BullMQ 6.7 has no Repeat; echomq keeps it', () => {
    expect('Repeat' in bullmq).toBe(false);
    expect(typeof echomq.Repeat).toBe('function');
  });

  it('getRepeatableJobs lists the schedulers BullMQ reports, in the legacy shape; count and removeRepeatableByKey', async () => {
    const legacy = (s: Record<string, unknown>) => ({
      key: s.key, name: s.name, endDate: s.endDate ?? null, tz: s.tz ?? null, pattern: s.pattern ?? null,
      every: s.every === undefined ? null : String(s.every),
    });
    const r = await sideBySide(async (lib, name, conn) => {
      const queue = new lib.Queue(name, { connection: conn });
      await queue.upsertJobScheduler('a', { every: 5000 }, { name: 'five' });
      await queue.upsertJobScheduler('b', { pattern: '0 3 * * *', tz: 'Europe/Copenhagen' }, { name: 'nightly' });
      if (lib === (bullmq as unknown)) {
        const out = (await queue.getJobSchedulers(0, -1, true)).map((s) => legacy(s as unknown as Record<string, unknown>));
        await queue.obliterate({ force: true });
        await queue.close();
        return { list: out, count: 2, removed: [true, false], left: 1 };
      }
      const q = queue as unknown as echomq.Queue;
      const repeat = new echomq.Repeat(name, { connection: conn });
      const list = (await q.getRepeatableJobs(0, -1, true)).map(({ next, ...rest }) => {
        expect(typeof next).toBe('number');
        return rest;
      });
      expect(await repeat.getRepeatableJobs(0, -1, true)).toEqual(await q.getRepeatableJobs(0, -1, true));
      const seen = {
        list,
        count: await repeat.getRepeatableCount(),
        removed: [await repeat.removeRepeatableByKey('a'), await repeat.removeRepeatableByKey('a')],
        left: await repeat.getRepeatableCount(),
      };
      await repeat.close();
      await q.obliterate({ force: true });
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('queue.repeat is one Repeat on the queue\'s client; its "error" events reach the queue', async () => {
    const queue = new echomq.Queue(qname('repeat-err'), { connection: connection() });
    const repeat = await queue.repeat;
    expect(repeat).toBe(await queue.repeat);
    expect(repeat.client).toBe(queue.client);
    const got: string[] = [];
    queue.on('error', (e: Error) => got.push(e.message));
    repeat.emit('error', new Error('repeat boom'));
    expect(got).toEqual(['repeat boom']);
    await queue.close();
    // The queue's client is shared: closing the Repeat with the queue leaves it to the harness.
    expect(await (queue.client as { ping(): Promise<string> }).ping()).toBe('PONG');
  });
});
