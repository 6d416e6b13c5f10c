/**
 * What stands in for a queue and what names a queue may have: a BullMQ MinimalQueue-shaped
 * object (no connection) given to Job.fromJSON / new Job, and `:` in queue names and custom job
 * ids (BullMQ refuses it; echomq accepts any character on purpose).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, libs, sideBySide } from './harness.js';
import { Job as EchoJob } from '../../src/index.js';

afterAll(closeConnections);

/** A plain object with BullMQ's MinimalQueue members and no Redis behind it. */
function standIn(): Record<string, unknown> {
  const q: Record<string, unknown> = {
    name: 'stand-in',
    qualifiedName: 'bull:stand-in',
    keys: {},
    opts: {},
    closing: undefined,
    backend: {},
    toKey: (type: string) => `bull:stand-in:${type}`,
    emit: () => true,
    removeListener: () => q,
    waitUntilReady: async () => undefined,
    trace: async (_k: unknown, _op: string, _d: string, cb: () => unknown) => cb(),
  };
  q.on = () => q;
  return q;
}

describe('a MinimalQueue-shaped object stands in for the queue', () => {
  it('Job.fromJSON and new Job build jobs on it; deduplicationId wins over a legacy debounceId', async () => {
    const seen: Record<string, unknown> = {};
    for (const side of ['bullmq', 'echomq'] as const) {
      const { Job } = libs[side];
      const fromLegacy = Job.fromJSON(standIn() as never, { id: '7', name: 'n', data: '{"a":1}', opts: {}, debounceId: 'old' } as never);
      const both = Job.fromJSON(standIn() as never, { name: 'n', data: '{}', opts: {}, deduplicationId: 'new', debounceId: 'old' } as never);
      const made = new Job(standIn() as never, 'made', { b: 2 }, { attempts: 3 }, 'x1');
      seen[side] = {
        legacy: { id: fromLegacy.id, name: fromLegacy.name, data: fromLegacy.data, dedup: fromLegacy.deduplicationId, qualified: fromLegacy.queueQualifiedName },
        prefers: both.deduplicationId,
        made: { id: made.id, name: made.name, data: made.data, attempts: made.opts.attempts, qualified: made.queueQualifiedName },
      };
    }
    const legacyDedup = (x: unknown) => (x as { legacy: { dedup: unknown } }).legacy.dedup;
    // BullMQ 6.7 drops a legacy payload's debounceId; echomq (like later BullMQ releases) reads it.
    expect([legacyDedup(seen.bullmq), legacyDedup(seen.echomq)]).toEqual([undefined, 'old']);
    for (const side of ['bullmq', 'echomq']) delete (seen[side] as { legacy: { dedup?: unknown } }).legacy.dedup;
    expect(seen.echomq).toEqual(seen.bullmq);
  });

  it('echomq: a call that needs Redis fails with ERR_NO_CONNECTION naming the queue', async () => {
    const job = EchoJob.fromJSON(standIn(), { id: '7', name: 'n', data: '{}', opts: {} } as never);
    await expect(job.getState()).rejects.toMatchObject({ code: 'ERR_NO_CONNECTION', message: expect.stringContaining('"stand-in"') });
  });

  it('anything else is still refused', () => {
    expect(() => EchoJob.fromJSON({} as object, { name: 'n', data: '{}', opts: {} } as never)).toThrow(/queue must be an echomq Queue or Worker/);
  });
});

describe('`:` in names (a deliberate difference)', () => {
  it('BullMQ refuses it in queue names and custom job ids; echomq accepts both and keeps them apart', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const outcome = async (f: () => Promise<unknown> | unknown) => {
        try {
          await f();
          return 'accepted';
        } catch (e) {
          return (e as Error).message;
        }
      };
      const named = await outcome(async () => {
        const q = new lib.Queue(`${name}:sub`, { connection });
        await q.add('t', {});
        const counts = await q.getJobCounts('waiting');
        await q.obliterate({ force: true });
        await q.close();
        if (counts.waiting !== 1) throw new Error(`waiting ${counts.waiting}`);
      });
      const queue = new lib.Queue(name, { connection });
      const id = await outcome(async () => {
        const job = await queue.add('t', {}, { jobId: '1:0' });
        if ((await queue.getJob('1:0'))?.id !== job.id) throw new Error('not found');
      });
      await queue.obliterate({ force: true });
      await queue.close();
      return { named, id };
    });
    expect(r.bullmq).toEqual({ named: 'Queue name cannot contain :', id: 'Custom Id cannot contain :' });
    expect(r.echomq).toEqual({ named: 'accepted', id: 'accepted' });
  });
});
