import { Redis } from 'ioredis';
import { Queue, Worker } from '../dist/index.js';
const url = process.env.REDIS_URL;
const r = new Redis(url);
const mode = process.argv[2] ?? 'add';
await r.flushall();
const q = new Queue('prof', { connection: url });
if (mode === 'process') {
  await q.addBulk(Array.from({ length: 20000 }, (_, i) => ({ name: 'x', data: { i }, opts: { removeOnComplete: true } })));
}
await r.config('RESETSTAT');
if (mode === 'add') {
  let i = 0;
  const inflight = new Set();
  while (i < 20000) {
    while (inflight.size < 100 && i < 20000) { const p = q.add('x', { i: i++ }, { removeOnComplete: true }); inflight.add(p); p.then(() => inflight.delete(p)); }
    await Promise.race(inflight);
  }
  await Promise.all(inflight);
} else {
  let done = 0;
  await new Promise((res) => { const w = new Worker('prof', async () => {}, { connection: url, concurrency: 50 }); w.on('completed', () => { if (++done === 20000) { res(); w.close(); } }); });
}
const info = await r.info('commandstats');
const rows = [...info.matchAll(/cmdstat_([a-z|]+):calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/g)].map((m) => [m[1], +m[2], +m[3], +m[4]]).sort((a, b) => b[2] - a[2]);
for (const [c, calls, usec, per] of rows.slice(0, 25)) console.log(c.padEnd(20), String(calls).padStart(8), (usec / 20000).toFixed(2).padStart(8), 'us/job', per);
await q.close(); r.disconnect();
