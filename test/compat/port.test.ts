// The port test: one program written in BullMQ's style — a queue, a worker, QueueEvents, a flow,
// a job scheduler, getters, retryJobs and clean — run on `bullmq` and on echomq with only the
// import changed. What it prints (ids and timestamps normalised) must be identical.
import { afterAll, expect, it } from 'vitest';
import { closeConnections, sideBySide, type Lib } from './harness.js';

afterAll(closeConnections);

async function program(lib: Lib, name: string, connection: any): Promise<string[]> {
  const out: string[] = [];
  const print = (...parts: unknown[]) => out.push(parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' '));
  const prefix = 'bull';
  const queue = new lib.Queue(name, { connection, prefix });
  const events = new lib.QueueEvents(name, { connection, prefix });
  const flows = new lib.FlowProducer({ connection, prefix });
  await queue.waitUntilReady();
  await events.waitUntilReady();

  const seen: string[] = [];
  events.on('completed', ({ jobId }) => seen.push(`completed:${jobId}`));
  events.on('failed', ({ jobId, failedReason }) => seen.push(`failed:${jobId}:${failedReason}`));

  const a = await queue.add('email', { to: 'a' }, { jobId: 'a' });
  await queue.add('email', { to: 'b' }, { jobId: 'b', priority: 2 });
  await queue.add('email', { to: 'c' }, { jobId: 'c', priority: 1 });
  await queue.add('email', { to: 'late' }, { jobId: 'late', delay: 60_000 });
  await queue.add('email', { to: 'bad' }, { jobId: 'bad', attempts: 2, backoff: { type: 'fixed', delay: 10 } });
  print('added', a.id, a.name, a.data, a.opts.attempts ?? 1);
  print('counts', await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'));
  print('waiting', (await queue.getWaiting()).map((j) => j.id));
  print('prioritized', (await queue.getPrioritized()).map((j) => j.id).sort());
  print('state c', await queue.getJobState('c'), 'state late', await queue.getJobState('late'), 'state none', await queue.getJobState('nope'));

  const order: string[] = [];
  const worker = new lib.Worker(name, async (job) => {
    order.push(job.id!);
    if (job.data.to === 'bad') throw new Error('no mailbox');
    if (job.name === 'parent') return { children: Object.keys(await job.getChildrenValues()).length };
    return `sent:${job.data.to}`;
  }, { connection, prefix });
  const finished = new Promise<void>((resolve) => {
    let n = 0;
    worker.on('completed', () => ++n === 6 && resolve());
  });
  await flows.add({ name: 'parent', queueName: name, data: {}, opts: { jobId: 'p' }, children: [
    { name: 'child', queueName: name, data: { to: 'k1' }, opts: { jobId: 'k1' } },
    { name: 'child', queueName: name, data: { to: 'k2' }, opts: { jobId: 'k2' } },
  ] });
  await finished;
  await new Promise((r) => setTimeout(r, 300));
  await worker.close();
  print('order', order.filter((id) => ['a', 'b', 'c'].includes(id)));
  print('bad runs', order.filter((id) => id === 'bad').length);
  print('parent value', (await queue.getJob('p'))!.returnvalue);
  print('counts', await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'));
  print('failed', (await queue.getFailed()).map((j) => [j.id, j.failedReason, j.attemptsMade]));
  print('events', seen.filter((e) => e.startsWith('failed')), seen.filter((e) => e.startsWith('completed')).length);

  await queue.retryJobs({ state: 'failed' });
  print('after retryJobs', await queue.getJobCounts('waiting', 'failed'));
  const cleaned = await queue.clean(0, 100, 'completed');
  print('cleaned', cleaned.length, await queue.getCompletedCount());

  await queue.upsertJobScheduler('tick', { every: 60_000 }, { name: 'tick', data: { t: 1 } });
  const scheduler = await queue.getJobScheduler('tick');
  print('scheduler', scheduler?.key, scheduler?.every, scheduler?.name, await queue.getJobSchedulersCount());
  print('delayed', (await queue.getDelayed()).length);

  await events.close();
  await flows.close();
  await queue.obliterate({ force: true });
  await queue.close();
  return out;
}

it('a BullMQ program prints the same on bullmq and on echomq', async () => {
  const r = await sideBySide((lib, name, conn) => program(lib, name, conn), 'port');
  expect(r.echomq).toEqual(r.bullmq);
}, 30_000);
