import { afterAll, describe, expect, it } from 'vitest';
import * as bull from 'bullmq';
import { Queue, Worker, migrateFromBullMQ } from '../../src/index.js';
import { client, qname, redisUrl } from '../helpers.js';

const c = client();
afterAll(() => c.quit());
describe('smoke', () => {
  it('moves', async () => {
    const name = qname('mig');
    const bq = new bull.Queue(name, { connection: c.duplicate() });
    await bq.add('a', { n: 1 });
    await bq.add('b', { n: 2 }, { priority: 3 });
    await bq.add('c', { n: 3 }, { delay: 60000 });
    await bq.add('d', { n: 4 }, { lifo: true });
    const r = await migrateFromBullMQ({ connection: redisUrl(), queues: [name], prefix: 'emq' });
    console.log(JSON.stringify(r, null, 1));
    console.log(await c.keys(`bull:${name}:*`));
    const q = new Queue(name, { connection: c });
    for (const id of ['1','2','3','4']) { const j = await q.getJob(id); console.log(id, j?.name, await j?.getState(), j?.opts, j?.timestamp); }
    await bq.close();
    await q.close();
  });
});
