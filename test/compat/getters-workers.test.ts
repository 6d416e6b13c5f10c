// Queue.getWorkers / getWorkersCount side by side with BullMQ 6.7, with real workers: each
// worker is one entry (its own blocking connection carries the name), also when workers share
// the connection the user passed in, also while they run, and only for their own queue.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide, type Lib } from './harness.js';
import { sleep } from '../helpers.js';

afterAll(closeConnections);

/** getWorkers() polled until it has `n` entries or 3 s passed (CLIENT SETNAME is asynchronous). */
async function workersOf(q: { getWorkers(): Promise<Array<Record<string, string>>> }, n: number) {
  const end = Date.now() + 3000;
  let list = await q.getWorkers();
  while (list.length !== n && Date.now() < end) {
    await sleep(25);
    list = await q.getWorkers();
  }
  return list;
}

const lastPart = (rawname: string) => rawname.split(':').pop();

describe('getWorkers with real workers', () => {
  it('two workers of one queue sharing the user\'s connection are two entries, with their names', async () => {
    const r = await sideBySide(async (lib: Lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const w1 = new lib.Worker(name, async () => {}, { connection: conn, autorun: false, name: 'worker1' });
      await w1.waitUntilReady();
      const one = await workersOf(q, 1);
      const w2 = new lib.Worker(name, async () => {}, { connection: conn, autorun: false, name: 'worker2' });
      await w2.waitUntilReady();
      const two = await workersOf(q, 2);
      const out = {
        one: one.length,
        two: two.map((c) => lastPart(c.rawname)).sort(),
        names: two.every((c) => c.name === name),
        count: await q.getWorkersCount(),
      };
      await w1.close();
      await w2.close();
      await q.close();
      return out;
    }, 'gw2');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ one: 1, two: ['worker1', 'worker2'], names: true, count: 2 });
  });

  it('workers of two queues on one shared connection are listed by their own queue only', async () => {
    const r = await sideBySide(async (lib: Lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const q2 = new lib.Queue(`${name}2`, { connection: conn });
      const w = new lib.Worker(name, async () => {}, { connection: conn, autorun: false });
      const w2 = new lib.Worker(`${name}2`, async () => {}, { connection: conn, autorun: false });
      await Promise.all([w.waitUntilReady(), w2.waitUntilReady()]);
      const out = { first: (await workersOf(q, 1)).length, second: (await workersOf(q2, 1)).length, counts: [await q.getWorkersCount(), await q2.getWorkersCount()] };
      await w.close();
      await w2.close();
      await q.close();
      await q2.close();
      return out;
    }, 'gwq');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ first: 1, second: 1, counts: [1, 1] });
  });

  it('a running worker with its own connection options is one entry, and none once closed', async () => {
    const r = await sideBySide(async (lib: Lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const o = conn.options;
      const w = new lib.Worker(name, async () => {}, { connection: { host: o.host, port: o.port }, drainDelay: 1 });
      await w.waitUntilReady();
      await q.add('t', {});
      await sleep(300); // the worker has run the job and blocks, idle
      const running = (await workersOf(q, 1)).length;
      await w.close();
      const closed = (await workersOf(q, 0)).length;
      await q.close();
      return { running, closed };
    }, 'gwrun');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ running: 1, closed: 0 });
  });
});
