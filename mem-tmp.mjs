import { Queue } from '/work/main/dist/index.js';
import { Queue as BQ } from 'bullmq';
import IORedis from 'ioredis';
const url = process.env.REDIS_URL;
const r = new IORedis(url);
const N = +process.env.N;
const data = { i: 1, pad: 'x'.repeat(1000) };
const mem = async () => Number(/used_memory:(\d+)/.exec(await r.info('memory'))[1]);
for (const lib of ['emq', 'bull']) {
  await r.flushall();
  const q = lib === 'emq' ? new Queue('m', { connection: url }) : new BQ('m', { connection: new IORedis(url, { maxRetriesPerRequest: null }) });
  await q.add('job', data);
  const m0 = await mem();
  for (let i = 0; i < N; i += 1000) await q.addBulk(Array.from({ length: 1000 }, () => ({ name: 'job', data })));
  const m1 = await mem();
  console.log(lib, (m1 - m0) / N);
  const keys = await r.keys('*');
  for (const k of keys.filter(k => !/\d+$/.test(k))) console.log('  ', k, await r.type(k), (await r.memory('USAGE', k, 'SAMPLES', 0))/N);
  const jk = lib === 'emq' ? 'emq:{m}:job:500' : 'bull:m:500';
  console.log('  job', await r.memory('USAGE', jk, 'SAMPLES', 0));
}
process.exit(0);
