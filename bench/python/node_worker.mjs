// echomq's Node worker for the Python benchmark's comparison row: the same protocol as
// client.py (READY, a line, {"ms"}, a line), phases work1/work10/work50 only.
// Usage: node --import ../../test/fixtures/register-ts.mjs node_worker.mjs <url> <queue> <phase> <jobs>
import { createInterface } from 'node:readline';
import { Queue, Worker } from '../../src/index.js';

const [url, queue, phase, nStr] = process.argv.slice(2);
const n = Number(nStr);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const q = new Queue(queue, { connection: url });
const jobs = Array.from({ length: n }, (_, i) => ({ name: 'b', data: { i, pad: 'x'.repeat(64) }, opts: { removeOnComplete: true } }));
for (let i = 0; i < n; i += 100) await q.addBulk(jobs.slice(i, i + 100));
process.stdout.write('READY\n');
await lines.next();
const t0 = performance.now();
let count = 0;
let w;
await new Promise((resolve) => {
  w = new Worker(queue, async () => null, { connection: url, concurrency: Number(phase.slice(4)) });
  w.on('completed', () => {
    if (++count === n) resolve();
  });
});
process.stdout.write(JSON.stringify({ ms: performance.now() - t0 }) + '\n');
await lines.next();
await w.close();
await q.close();
process.exit(0);
