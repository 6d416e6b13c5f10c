/**
 * Manual processing's drained state, side by side with BullMQ: a getNextJob that finds the
 * queue empty returns at once the first time (the worker was not drained yet) and blocks only
 * from then on; a blocking call after a drained one waits for a job added meanwhile (it does
 * not end early on an earlier wait's timeout); block: false never waits; a paused worker
 * claims nothing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';

afterAll(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Worker.getNextJob drained state (BullMQ manual processing)', () => {
  it('the first empty call returns at once; a blocking call after it gets a job added 100 ms later', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      // drainDelay 3 s: a first call that blocked would outlast the race below.
      const w = new lib.Worker(name, null, { connection, drainDelay: 3 });
      await w.waitUntilReady();
      const first = await Promise.race([w.getNextJob('tok').then((j) => (j ? 'job' : 'none')), sleep(1500).then(() => 'still waiting')]);
      const [job] = await Promise.all([w.getNextJob('tok'), sleep(100).then(() => q.add('later', { n: 1 }))]);
      const got = job ? { name: job.name, active: await job.isActive() } : undefined;
      const none = await w.getNextJob('tok', { block: false });
      await w.close();
      await q.close();
      return { first, got, none: none === undefined };
    }, 'drained');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ first: 'none', got: { name: 'later', active: true }, none: true });
  });

  it('a drained blocking wait followed by another one still waits for the job added during the second', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const w = new lib.Worker(name, null, { connection, drainDelay: 1 });
      await w.waitUntilReady();
      await w.getNextJob('tok'); // drained now
      const empty = await w.getNextJob('tok'); // blocks up to drainDelay, finds nothing
      const [job] = await Promise.all([w.getNextJob('tok'), sleep(200).then(() => q.add('meanwhile', {}))]);
      await w.close();
      await q.close();
      return { empty: empty === undefined, got: job?.name };
    }, 'drained2');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ empty: true, got: 'meanwhile' });
  });
});
