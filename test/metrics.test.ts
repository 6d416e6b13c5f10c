// Prometheus metrics: gauges read at scrape time, counters and histograms from the events
// stream between scrapes, and the queue.exportPrometheusMetrics() entry.
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from '../src/index.js';
import { exportPrometheusMetrics, QueueMetrics } from '../src/ops/metrics.js';
import { client, qname, redisUrl, waitFor } from './helpers.js';

/** The value of one series, or undefined when absent. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics', () => {
  const redis = client();
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c();
    redis.disconnect();
  });

  it('queue.exportPrometheusMetrics: counts, lanes, totals and latency histograms', async () => {
    const q = new Queue(qname('m'), { connection: redisUrl() });
    closers.push(() => q.close());
    const Q = `queue="${q.name}"`;
    await q.addBulk([
      { name: 'a', data: {}, opts: { lane: 'acme' } },
      { name: 'b', data: {}, opts: { lane: 'acme', priority: 2 } },
      { name: 'c', data: {}, opts: { lane: 'globex', delay: 60_000 } },
    ]);
    await q.lanes.setWeight('acme', 4);
    await q.lanes.setLimit('acme', 7);
    await q.lanes.pause('globex');

    const first = await q.exportPrometheusMetrics();
    expect(first).toContain('# TYPE echomq_queue_jobs gauge');
    expect(value(first, `echomq_queue_jobs{${Q},state="waiting"}`)).toBe(1);
    expect(value(first, `echomq_queue_jobs{${Q},state="prioritized"}`)).toBe(1);
    expect(value(first, `echomq_queue_jobs{${Q},state="delayed"}`)).toBe(1);
    expect(value(first, `echomq_queue_paused{${Q}}`)).toBe(0);
    expect(value(first, `echomq_lane_depth{${Q},lane="acme"}`)).toBe(2);
    expect(value(first, `echomq_lane_weight{${Q},lane="acme"}`)).toBe(4);
    expect(value(first, `echomq_lane_limit{${Q},lane="acme"}`)).toBe(7);
    expect(value(first, `echomq_lane_limit{${Q},lane="globex"}`)).toBeUndefined();
    expect(value(first, `echomq_lane_paused{${Q},lane="globex"}`)).toBe(1);
    // Counting starts at the first scrape.
    expect(value(first, `echomq_jobs_completed_total{${Q}}`)).toBe(0);

    // 5 complete, 2 fail after a retry each (a and b complete too).
    await q.addBulk([
      ...Array.from({ length: 5 }, (_, i) => ({ name: 'ok', data: { i }, opts: { lane: 'acme' } })),
      ...Array.from({ length: 2 }, () => ({ name: 'bad', data: { fail: true }, opts: { attempts: 2 } })),
    ]);
    const w = new Worker(
      q.name,
      async (job) => {
        await new Promise((r) => setTimeout(r, 20));
        if (job.data.fail) throw new Error('nope');
      },
      { connection: redisUrl(), concurrency: 4 },
    );
    closers.push(() => w.close());
    const settled = (completed: number) => async () => {
      const c = await q.getJobCounts('completed', 'failed');
      return c.completed === completed && c.failed === 2;
    };
    await waitFor(settled(7));

    const second = await q.exportPrometheusMetrics();
    expect(value(second, `echomq_jobs_completed_total{${Q}}`)).toBe(7);
    expect(value(second, `echomq_jobs_failed_total{${Q}}`)).toBe(2);
    expect(value(second, `echomq_jobs_retried_total{${Q}}`)).toBe(2);
    expect(value(second, `echomq_job_processing_seconds_count{${Q}}`)).toBe(9);
    expect(value(second, `echomq_job_wait_seconds_count{${Q}}`)).toBe(9);
    expect(value(second, `echomq_job_processing_seconds_bucket{le="0.01",${Q}}`)).toBe(0);
    expect(value(second, `echomq_job_processing_seconds_bucket{le="+Inf",${Q}}`)).toBe(9);
    expect(value(second, `echomq_job_processing_seconds_sum{${Q}}`)).toBeGreaterThan(9 * 0.015);
    expect(value(second, `echomq_queue_jobs{${Q},state="completed"}`)).toBe(7);

    // A job deleted on completion has no hash left by scrape time: counted, no latency sample.
    const gone = await q.add('gone', {}, { removeOnComplete: true });
    await waitFor(async () => (await q.getJob(gone.id)) === undefined);
    const third = await q.exportPrometheusMetrics();
    expect(value(third, `echomq_jobs_completed_total{${Q}}`)).toBe(8);
    expect(value(third, `echomq_job_processing_seconds_count{${Q}}`)).toBe(9);

    // Nothing new: totals stay where they are.
    const fourth = await q.exportPrometheusMetrics();
    expect(value(fourth, `echomq_jobs_completed_total{${Q}}`)).toBe(8);
  });

  it('discovers every queue under a prefix and escapes label values', async () => {
    const prefix = `mx-${randomUUID().slice(0, 8)}`;
    const a = new Queue(qname('a'), { connection: redisUrl(), prefix });
    const b = new Queue(qname('b'), { connection: redisUrl(), prefix });
    closers.push(() => a.close(), () => b.close());
    await a.add('x', {}, { lane: 'quote"back\\slash\nnewline' });
    await b.add('y', {});
    await b.pause();
    const text = await exportPrometheusMetrics(redis, { prefix, labels: { service: 'billing' } });
    expect(value(text, `echomq_queue_jobs{queue="${a.name}",state="waiting",service="billing"}`)).toBe(1);
    expect(value(text, `echomq_queue_jobs{queue="${b.name}",state="paused",service="billing"}`)).toBe(1);
    expect(value(text, `echomq_queue_paused{queue="${b.name}",service="billing"}`)).toBe(1);
    expect(text).toContain(`echomq_lane_depth{queue="${a.name}",lane="quote\\"back\\\\slash\\nnewline",service="billing"} 1`);
    // Another prefix's queues are not included.
    expect(text).not.toMatch(/queue="m-/);
  });

  it('concurrent scrapes do not count an event twice', async () => {
    const q = new Queue(qname('c'), { connection: redisUrl() });
    closers.push(() => q.close());
    const m = new QueueMetrics(q.client, { queues: [q.name] });
    await m.collect();
    await q.addBulk(Array.from({ length: 10 }, () => ({ name: 'x', data: {} })));
    const w = new Worker(q.name, async () => 1, { connection: redisUrl(), concurrency: 5 });
    closers.push(() => w.close());
    await waitFor(async () => (await q.getJobCounts('completed')).completed === 10);
    const texts = await Promise.all([m.metrics(), m.metrics(), m.metrics()]);
    for (const t of texts) expect(value(t, `echomq_jobs_completed_total{queue="${q.name}"}`)).toBe(10);
  });
});
