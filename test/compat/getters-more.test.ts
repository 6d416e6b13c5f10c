// BullMQ's QueueGetters side by side, continued: per-minute metrics, workers and QueueEvents
// from CLIENT LIST, Prometheus text, flow dependencies.
import { afterAll, describe, expect, it } from 'vitest';
import { clientName, queueKeys } from '../../src/core/keys.js';
import { closeConnections, connection, sideBySide } from './harness.js';

afterAll(closeConnections);

const b64 = (s: string) => Buffer.from(s).toString('base64');
const until = async (cond: () => Promise<boolean>) => {
  for (let i = 0; i < 500 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('getMetrics (BullMQ layout)', () => {
  it('reads the metrics hash and per-minute list as BullMQ does, from keys laid out by a BullMQ worker with metrics', async () => {
    // The layout a worker with `metrics: { maxDataPoints }` writes, taken from a BullMQ worker;
    // echomq's workers write the same layout into keys.metricsCompleted/… (src/core/keys.ts).
    let layout: Record<'completed' | 'failed', { hash: Record<string, string>; data: string[] }> | undefined;
    const WINDOWS: Array<[number, number]> = [[0, -1], [0, 0], [1, 2], [-2, -1], [5, 100], [2, 1]];
    const r = await sideBySide(async (lib, name, conn, side) => {
      const q = new lib.Queue(name, { connection: conn });
      if (side === 'bullmq') {
        const worker = new lib.Worker(name, async (job) => {
          if (job.name === 'bad') throw new Error('no');
        }, { connection: conn.duplicate(), metrics: { maxDataPoints: 10 } });
        const run = async (names: string[]) => {
          const before = (await q.getMetrics('completed')).meta.count + (await q.getMetrics('failed')).meta.count;
          for (const n of names) await q.add(n, {});
          await until(async () => (await q.getMetrics('completed')).meta.count + (await q.getMetrics('failed')).meta.count === before + names.length);
        };
        await run(['ok', 'ok', 'bad']);
        // Pretend the last point was pushed minutes ago: the writer then pushes that minute's
        // jobs and a 0 for every empty minute in between.
        const ago = Date.now() - 3 * 60_000;
        for (const t of ['completed', 'failed']) await conn.hset(`bull:${name}:metrics:${t}`, 'prevTS', ago);
        await run(['ok', 'bad']);
        await worker.close();
        layout = { completed: { hash: {}, data: [] }, failed: { hash: {}, data: [] } };
        for (const t of ['completed', 'failed'] as const) {
          layout[t] = { hash: await conn.hgetall(`bull:${name}:metrics:${t}`), data: await conn.lrange(`bull:${name}:metrics:${t}:data`, 0, -1) };
        }
      } else {
        const k = queueKeys(name);
        for (const [t, meta, data] of [['completed', k.metricsCompleted, k.metricsCompletedData], ['failed', k.metricsFailed, k.metricsFailedData]] as const) {
          await conn.hset(meta, layout![t].hash);
          if (layout![t].data.length > 0) await conn.rpush(data, ...layout![t].data);
        }
      }
      const out: Record<string, unknown> = {};
      for (const t of ['completed', 'failed'] as const) {
        const m = await q.getMetrics(t);
        out[t] = { ...m, meta: { ...m.meta, prevTS: m.meta.prevTS > 0 } };
        for (const [s, e] of WINDOWS) out[`${t} ${s},${e}`] = (await q.getMetrics(t, s, e)).data;
      }
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'metrics');
    expect(r.echomq).toEqual(r.bullmq);
    // What BullMQ wrote: 3 completed so far; the minute 3 minutes ago held 2, then 2 empty ones.
    expect(r.bullmq.completed).toEqual({ meta: { count: 3, prevTS: true, prevCount: 2 }, data: [0, 0, 2], count: 3 });
    expect(r.bullmq.failed).toMatchObject({ meta: { count: 2, prevCount: 1 }, data: [0, 0, 1] });
  });

  it('an empty queue has BullMQ\'s zero metrics', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const m = [await q.getMetrics('completed'), await q.getMetrics('failed', 0, 5)];
      await q.close();
      return m;
    }, 'metrics0');
    expect(r.echomq).toEqual(r.bullmq);
  });
});

describe('getWorkers, getWorkersCount, getQueueEvents (CLIENT LIST)', () => {
  it('lists the connections named with the queue\'s client name, BullMQ\'s scheme', async () => {
    let bullNames: string[] = [];
    const r = await sideBySide(async (lib, name, conn, side) => {
      const q = new lib.Queue(name, { connection: conn, prefix: 'bull' });
      const closers: Array<() => Promise<unknown>> = [];
      if (side === 'bullmq') {
        const w1 = new lib.Worker(name, async () => {}, { connection: conn.duplicate(), prefix: 'bull', name: 'wname' });
        const w2 = new lib.Worker(name, async () => {}, { connection: conn.duplicate(), prefix: 'bull' });
        const qe = new lib.QueueEvents(name, { connection: conn.duplicate(), prefix: 'bull' });
        await Promise.all([w1.waitUntilReady(), w2.waitUntilReady(), qe.waitUntilReady()]);
        closers.push(() => w1.close(), () => w2.close(), () => qe.close());
      } else {
        // Named as echomq's Worker and QueueEvents name their connections (keys.clientName).
        const k = queueKeys(name, 'bull');
        for (const suffix of ['', ':w:wname', ':qe']) await connection().client('SETNAME', clientName(k, suffix));
      }
      // A connection of another queue whose name starts the same must not count.
      const other = connection();
      await other.client('SETNAME', `bull:${b64(name + 'x')}:w:wname`);
      await until(async () => (await q.getWorkersCount()) >= 2 && (await q.getQueueEvents()).length >= 1);
      const workers = await q.getWorkers();
      const events = await q.getQueueEvents();
      const rawnames = (list: Array<Record<string, string>>) => list.map((c) => c.rawname.replace(b64(name), '<q>')).sort();
      if (side === 'bullmq') bullNames = [...rawnames(workers), ...rawnames(events)];
      const out = {
        workers: rawnames(workers),
        names: workers.every((c) => c.name === name),
        fields: workers.every((c) => 'id' in c && 'addr' in c && 'age' in c),
        count: await q.getWorkersCount(),
        events: rawnames(events),
      };
      for (const c of closers) await c();
      await q.close();
      return out;
    }, 'workers');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq.workers).toEqual(['bull:<q>', 'bull:<q>:w:wname']);
    // echomq's key module builds exactly the names BullMQ's workers use.
    const keys = queueKeys('some queue', 'bull');
    expect([clientName(keys), clientName(keys, ':w:wname'), clientName(keys, ':qe')]).toEqual(
      [`bull:${b64('some queue')}`, `bull:${b64('some queue')}:w:wname`, `bull:${b64('some queue')}:qe`]);
    expect(bullNames).toEqual(['bull:<q>', 'bull:<q>:w:wname', 'bull:<q>:qe']);
  });
});

describe('exportPrometheusMetrics (BullMQ signature)', () => {
  it('prints BullMQ\'s lines, with and without globalVariables; echomq\'s families follow', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      for (let i = 0; i < 3; i++) await q.add('w', {});
      await q.add('p', {}, { priority: 2 });
      await q.add('d', {}, { delay: 60_000 });
      const texts = [await q.exportPrometheusMetrics(), await q.exportPrometheusMetrics({ env: 'prod', note: 'say "hi"\\n' })];
      await q.obliterate({ force: true });
      await q.close();
      return texts.map((t) => t.split(name).join('<q>'));
    }, 'prom');
    const bullmqPart = (t: string) => t.slice(0, t.indexOf('\n# HELP echomq_') < 0 ? undefined : t.indexOf('\n# HELP echomq_'));
    expect(r.echomq.map(bullmqPart)).toEqual(r.bullmq);
    expect(r.bullmq[0]).toContain('bullmq_job_count{queue="<q>", state="waiting"} 3');
    expect(r.bullmq[1]).toContain('bullmq_job_completed_total{queue="<q>", env="prod", note="say \\"hi\\"\\\\n"} 0');
    // Deliberate: echomq's own families come after BullMQ's (lanes, event totals, latency).
    expect(r.echomq[0]).toContain('echomq_queue_jobs{queue="<q>",state="waiting"} 3');
    expect(r.echomq[1]).toContain('echomq_queue_jobs{queue="<q>",state="waiting",env="prod"');
  });
});

describe('getDependencies (BullMQ shape)', () => {
  it('pages pending and processed children of a flow parent: logical child keys, values, total', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const flow = new lib.FlowProducer({ connection: conn, prefix: 'bull' });
      const q = new lib.Queue(name, { connection: conn, prefix: 'bull' });
      const tree = await flow.add({
        name: 'parent', queueName: name, data: {}, opts: { jobId: 'parent' },
        children: ['c1', 'c2', 'c3'].map((id) => ({ name: id, queueName: name, data: { id }, opts: { jobId: id } })),
      });
      const show = (d: Awaited<ReturnType<typeof q.getDependencies>>) => ({
        items: d.items.map((i) => ({ ...i, id: i.id.replace(name, '<q>') })).sort((a, b) => a.id.localeCompare(b.id)),
        total: d.total,
        jobs: d.jobs.map((j) => (j as { name: string }).name).sort(),
      });
      const waitingChildren = {
        state: await q.getJobState('parent'), count: await q.getWaitingChildrenCount(),
        list: (await q.getWaitingChildren()).map((j) => j.name), counts: await q.getJobCounts('waiting-children', 'waiting'),
      };
      const pending = show(await q.getDependencies(tree.job.id!, 'pending', 0, -1));
      const pendingPage = (await q.getDependencies(tree.job.id!, 'pending', 0, 1)).items.length;
      const worker = new lib.Worker(name, async (job) => (job.name === 'parent' ? 'done' : { got: job.data.id }), { connection: conn.duplicate(), prefix: 'bull' });
      await until(async () => (await q.getJobState('parent')) === 'completed');
      await worker.close();
      const processed = show(await q.getDependencies('parent', 'processed', 0, -1));
      const after = show(await q.getDependencies('parent', 'pending', 0, -1));
      await q.obliterate({ force: true });
      await q.close();
      await flow.close();
      return { waitingChildren, pending, pendingPage, processed, after };
    }, 'deps');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq.processed.items[0]).toEqual({ id: 'bull:<q>:c1', v: { got: 'c1' } });
    expect(r.echomq.waitingChildren).toEqual({ state: 'waiting-children', count: 1, list: ['parent'], counts: { 'waiting-children': 1, waiting: 3 } });
  });
});

describe('recordJobCountsMetric (BullMQ telemetry meter)', () => {
  it('returns the counts and records one gauge value per state on the meter of the telemetry option', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      await q.add('a', {});
      await q.add('b', {}, { delay: 60_000 });
      // A meter that keeps what it is given (BullMQ's Telemetry.meter interface).
      const recorded: Array<[string, number, Record<string, unknown>]> = [];
      const meter = {
        createCounter: () => ({ add: () => {} }),
        createHistogram: () => ({ record: () => {} }),
        createGauge: (metric: string) => ({ record: (n: number, attrs: Record<string, unknown>) => void recorded.push([metric, n, attrs]) }),
      };
      const tq = new lib.Queue(name, { connection: conn, telemetry: { meter } as never });
      const counts = await tq.recordJobCountsMetric('waiting', 'delayed');
      await tq.close().catch(() => undefined); // BullMQ traces close() through the missing tracer
      await q.obliterate({ force: true });
      await q.close();
      return { counts, recorded: recorded.map(([m, n, a]) => [m, n, { ...a, 'bullmq.queue.name': a['bullmq.queue.name'] === name }]) };
    }, 'otel');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.counts).toEqual({ waiting: 1, delayed: 1 });
  });
});
