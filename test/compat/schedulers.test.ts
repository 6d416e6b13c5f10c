// Job schedulers side by side with BullMQ 6.7: upsertJobScheduler's options (every, offset,
// immediately, tz, limit, count, startDate, endDate, pattern), a custom repeatStrategy, the
// JobSchedulerJson shape of getJobScheduler(s) and BullMQ's error texts. echomq computes slots
// on the Redis server clock; on one machine both clocks agree.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';

afterAll(closeConnections);

const slotOf = (jobId: string | undefined) => Number(String(jobId).split(':').pop());

/** A scheduler's JSON with the times made relative (next = its job's slot), and without echomq's extra `id`. */
function relative(json: Record<string, any> | undefined, jobId?: string) {
  if (!json) return json;
  const { id: _id, next, ...rest } = json;
  return { ...rest, nextIsJobSlot: jobId === undefined ? undefined : next === slotOf(jobId) };
}

describe('upsertJobScheduler (side by side)', () => {
  it('every: the first job runs at once; getJobScheduler shows BullMQ fields and template', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const job = (await q.upsertJobScheduler('e1', { every: 10_000 }, { name: 'n', data: { a: 1 }, opts: { priority: 2, attempts: 3 } }))!;
      const plain = (await q.upsertJobScheduler('e2', { every: 10_000 }))!;
      const json = await q.getJobScheduler('e1');
      const out = {
        job: { idPrefix: job.id!.startsWith('repeat:e1:'), name: job.name, data: job.data, delay: job.delay, priority: job.priority },
        json: relative(json as never, job.id), offsetIsSlotModEvery: json!.offset === slotOf(job.id) % 10_000,
        plain: relative((await q.getJobScheduler('e2')) as never, plain.id),
      };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'sch-every');
    expect({ ...r.echomq, json: { ...r.echomq.json, offset: 0 }, plain: { ...r.echomq.plain, offset: 0 } })
      .toEqual({ ...r.bullmq, json: { ...r.bullmq.json, offset: 0 }, plain: { ...r.bullmq.plain, offset: 0 } });
    expect(r.echomq.offsetIsSlotModEvery).toBe(true);
    expect(r.echomq.json).toMatchObject({ key: 'e1', name: 'n', every: 10_000, iterationCount: 1, template: { data: { a: 1 }, opts: { priority: 2, attempts: 3 } } });
    expect(r.echomq.plain).not.toHaveProperty('template');
  });

  it('every with offset aligns the slots to offset + k × every; tz and immediately are accepted with every', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const aligned = (await q.upsertJobScheduler('o', { every: 10_000, offset: 3000 }))!;
      const tz = (await q.upsertJobScheduler('t', { every: 10_000, tz: 'Europe/Berlin', immediately: true }))!;
      const out = {
        alignedMod: slotOf(aligned.id) % 10_000, alignedInFuture: aligned.delay > 0 && aligned.delay <= 10_000,
        json: relative((await q.getJobScheduler('o')) as never, aligned.id),
        tzDelay: tz.delay, tzJson: { tz: (await q.getJobScheduler('t'))!.tz },
      };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'sch-offset');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.alignedMod).toBe(3000);
  });

  it('pattern: tz, immediately, startDate in the future', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const daily = (await q.upsertJobScheduler('p', { pattern: '0 0 * * *', tz: 'Europe/Berlin' }))!;
      const now = (await q.upsertJobScheduler('pi', { pattern: '0 0 * * *', immediately: true }))!;
      const start = Math.ceil(Date.now() / 1000) * 1000 + 3_600_000;
      const later = (await q.upsertJobScheduler('sf', { every: 5000, startDate: start }))!;
      const out = {
        dailySlot: slotOf(daily.id), json: relative((await q.getJobScheduler('p')) as never, daily.id),
        nowDelay: now.delay, laterSlotIsStart: slotOf(later.id) === start,
        later: relative((await q.getJobScheduler('sf')) as never, later.id),
      };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'sch-pattern');
    expect({ ...r.echomq, later: { ...r.echomq.later, startDate: 0 } }).toEqual({ ...r.bullmq, later: { ...r.bullmq.later, startDate: 0 } });
    expect(r.echomq.nowDelay).toBe(0);
  });

  it('limit and count: nothing is made when count + 1 exceeds limit', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const none = await q.upsertJobScheduler('l1', { every: 1000, limit: 3, count: 3 });
      const some = await q.upsertJobScheduler('l2', { every: 1000, limit: 3, count: 1 });
      const out = {
        none: none === undefined, l1: await q.getJobScheduler('l1'), some: some !== undefined,
        l2: relative((await q.getJobScheduler('l2')) as never, some?.id), count: await q.getJobSchedulersCount(),
      };
      await q.obliterate({ force: true });
      await q.close();
      return { ...out, l2: { ...out.l2, offset: 0 } };
    }, 'sch-limit');
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('getJobSchedulers: newest slot first by default, ascending with asc', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const t = Date.now();
      await q.upsertJobScheduler('a', { every: 1000, startDate: t + 30_000 });
      await q.upsertJobScheduler('b', { every: 1000, startDate: t + 10_000 });
      await q.upsertJobScheduler('c', { every: 1000, startDate: t + 20_000 });
      const out = { desc: (await q.getJobSchedulers()).map((s) => s.key), asc: (await q.getJobSchedulers(0, -1, true)).map((s) => s.key) };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'sch-list');
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('settings.repeatStrategy computes the slots of a pattern', async () => {
    const fixed = Math.ceil(Date.now() / 1000) * 1000 + 7_200_000;
    const r = await sideBySide(async (lib, name, conn) => {
      const calls: unknown[] = [];
      const q = new lib.Queue(name, {
        connection: conn,
        settings: { repeatStrategy: (millis: number, opts: any, jobName?: string) => (calls.push([typeof millis, opts.pattern, jobName]), fixed) },
      });
      const job = (await q.upsertJobScheduler('custom', { pattern: 'my-own-language' }, { name: 'jn' }))!;
      const out = { slot: slotOf(job.id), delayClose: Math.abs(job.delay - (fixed - Date.now())) < 5000, call: calls[0] };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'sch-strategy');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.slot).toBe(fixed);
  });

  it("refuses what BullMQ refuses, with BullMQ's text first", async () => {
    const bad: Array<[string, unknown, unknown?]> = [
      ['both', { every: 1000, pattern: '* * * * *' }],
      ['neither', {}],
      ['immediately and startDate', { pattern: '* * * * *', immediately: true, startDate: Date.now() + 1000 }],
      ['endDate past', { every: 1000, endDate: Date.now() - 1000 }],
      ['endDate negative', { every: 1000, endDate: -5 }],
      ['endDate negative fraction', { every: 1000, endDate: -1.5 }],
      ['endDate past fraction', { every: 1000, endDate: 1000.5 }],
      ['endDate past Date', { every: 1000, endDate: new Date(Date.now() - 1000) }],
      ['endDate before 1970 as a string', { every: 1000, endDate: '1960-01-01T00:00:00Z' }],
      // BullMQ looks at the end date before anything else.
      ['endDate past and both', { every: 1000, pattern: '* * * * *', endDate: -5 }],
      ['debounce', { every: 1000 }, { opts: { debounce: { id: 'x' } } }],
    ];
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const out: Record<string, string> = {};
      for (const [label, repeat, template] of bad) {
        out[label] = await q.upsertJobScheduler('x', repeat as never, template as never).then(() => 'ok', (e: Error) => e.message);
      }
      const left = await q.getJobSchedulersCount();
      // A falsy end date is none, for BullMQ.
      await q.upsertJobScheduler('zero', { every: 60_000, endDate: 0 });
      const zero = (await q.getJobScheduler('zero'))!.endDate ?? null;
      await q.obliterate({ force: true });
      await q.close();
      return { out, left, zero };
    }, 'sch-bad');
    for (const [label, msg] of Object.entries(r.bullmq.out)) {
      expect(r.echomq.out[label]!.startsWith(msg), `${label}: ${r.echomq.out[label]} should begin with ${msg}`).toBe(true);
    }
    expect(r.echomq.left).toBe(0);
    for (const label of bad.map(([l]) => l).filter((l) => l.startsWith('endDate'))) {
      expect(r.bullmq.out[label], label).toBe('End date must be greater than current timestamp');
    }
    expect(r.echomq.zero).toBe(r.bullmq.zero);
    expect(r.echomq.zero).toBe(null);
  });
});
