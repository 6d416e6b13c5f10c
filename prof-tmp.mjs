import { Queue, Worker } from '/work/main/dist/index.js';
import IORedis from 'ioredis';
const url = process.env.REDIS_URL;
const C = +(process.env.C || 50), N = +(process.env.N || 100000);
const r = new IORedis(url); await r.flushall();
const q = new Queue('p', { connection: url });
for (let i = 0; i < N; i += 1000) await q.addBulk(Array.from({ length: 1000 }, (_, j) => ({ name: 'j', data: { i: i + j }, opts: { removeOnComplete: true } })));
const t0 = performance.now(); const c0 = process.cpuUsage();
let done = 0;
await new Promise((res) => {
  const w = new Worker('p', async () => {}, { connection: url, concurrency: C });
  w.on('completed', () => { if (++done === N) { res(); } });
  globalThis.w = w;
});
const dt = performance.now() - t0; const cu = process.cpuUsage(c0);
console.log(`c=${C}: ${(N / dt * 1000).toFixed(0)} jobs/s, node cpu ${((cu.user + cu.system) / N).toFixed(1)} us/job`);
await globalThis.w.close(); await q.close(); r.disconnect();
