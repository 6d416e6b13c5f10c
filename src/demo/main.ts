#!/usr/bin/env node
/**
 * The echomq demo: exact priorities, then fair weighted lanes, live in the terminal.
 * Connects to REDIS_URL (`npm run demo` provides a throwaway local Redis when it is not set).
 */
import { Queue, Worker } from '../index.js';
import { renderBars, type LaneRow } from './render.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tty = process.stdout.isTTY === true;

async function priorities(connection: string): Promise<boolean> {
  const name = `demo-priorities-${process.pid}`;
  const queue = new Queue(name, { connection });
  await queue.obliterate({ force: true });
  const prios = Array.from({ length: 24 }, () => Math.floor(Math.random() * 6));
  console.log('\n1. Exact priorities (lower number runs first, FIFO inside a priority)');
  console.log(`   added in this order:  ${prios.map((p) => `p${p}`).join(' ')}`);
  await queue.addBulk(prios.map((priority, i) => ({ name: `job-${i}`, data: { i }, opts: { priority } })));
  const served: Array<{ p: number; i: number }> = [];
  process.stdout.write('   served in this order: ');
  const worker = new Worker(name, async (job) => {
    served.push({ p: job.priority, i: job.data.i });
    process.stdout.write(`p${job.priority} `);
    await sleep(40);
  }, { connection });
  while (served.length < prios.length) await sleep(20);
  await worker.close();
  const inOrder = served.every((s, k) => k === 0 || served[k - 1].p < s.p || (served[k - 1].p === s.p && served[k - 1].i < s.i));
  console.log(`\n   ${inOrder ? 'in (priority, arrival) order ✓' : 'OUT OF ORDER ✗'}`);
  await queue.obliterate({ force: true });
  await queue.close();
  return inOrder;
}

interface LanePlan {
  lane: string;
  jobs: number;
  weight: number;
}

async function lanes(connection: string): Promise<void> {
  const name = `demo-lanes-${process.pid}`;
  const queue = new Queue(name, { connection });
  await queue.obliterate({ force: true });
  const plan: LanePlan[] = [
    { lane: 'tenant-flood', jobs: 1500, weight: 1 },
    { lane: 'tenant-quiet-a', jobs: 40, weight: 1 },
    { lane: 'tenant-quiet-b', jobs: 40, weight: 1 },
    { lane: 'tenant-vip', jobs: 450, weight: 3 },
  ];
  console.log('\n2. Fair lanes: one tenant floods the queue; the others are still served');
  for (const p of plan) if (p.weight !== 1) await queue.lanes.setWeight(p.lane, p.weight);
  // The flood arrives first, as a burst would.
  for (const p of plan) {
    await queue.addBulk(Array.from({ length: p.jobs }, (_, i) => ({ name: 'work', data: { i }, opts: { lane: p.lane } })));
  }
  const done = new Map<string, number>(plan.map((p) => [p.lane, 0]));
  const finishedAt = new Map<string, number>();
  let total = 0;
  const worker = new Worker(name, async (job) => {
    await sleep(8); // pretend to work, so the race between lanes is visible
    total++;
    const n = (done.get(job.lane) ?? 0) + 1;
    done.set(job.lane, n);
    if (n === plan.find((p) => p.lane === job.lane)!.jobs) finishedAt.set(job.lane, total);
  }, { connection, concurrency: 4 });

  const all = plan.reduce((a, p) => a + p.jobs, 0);
  let lines = 0;
  const draw = async () => {
    const infos = await Promise.all(plan.map((p) => queue.lanes.get(p.lane)));
    const rows: LaneRow[] = plan.map((p, k) => ({
      lane: p.lane, weight: p.weight, total: p.jobs, done: done.get(p.lane) ?? 0,
      depth: infos[k].depth, finishedAt: finishedAt.get(p.lane),
    }));
    const text = renderBars(rows, total, all);
    if (tty && lines > 0) process.stdout.write(`\x1b[${lines}A`);
    process.stdout.write(text);
    lines = text.split('\n').length - 1;
  };
  let last = 0;
  while (total < all) {
    if (tty || Date.now() - last > 1000) {
      await draw();
      last = Date.now();
    }
    await sleep(tty ? 100 : 50);
  }
  await draw();
  await worker.close();
  const qa = finishedAt.get('tenant-quiet-a')!;
  const qb = finishedAt.get('tenant-quiet-b')!;
  console.log(`   quiet lanes fully served after ${Math.max(qa, qb)} of ${all} jobs (FIFO would need ${1500 + 80})`);
  await queue.obliterate({ force: true });
  await queue.close();
}

export async function runDemo(connection = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'): Promise<void> {
  console.log(`echomq demo on ${connection}`);
  const ok = await priorities(connection);
  await lanes(connection);
  console.log('\nDone. Next: your own first queue, in Node or Python, in docs/first-queue.md.');
  if (!ok) process.exitCode = 1;
}

const invokedDirectly = process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'));
if (invokedDirectly) {
  runDemo().catch((err) => {
    console.error(`demo failed: ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  });
}
