// bull-board with echomq queues: the real `@bull-board/api` and `@bull-board/express` serving
// HTTP on a free port. Its API is driven as the board's page drives it (counts, paged lists, job
// detail, logs, actions) and every answer is checked against Redis; then its page is opened in
// headless Chromium and shows the echomq queue.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import express from 'express';
import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import { chromium } from 'playwright-core';
import { Queue, Worker } from '../../src/index.js';
import { EchoMQAdapter } from '../../src/integrations/bull-board.js';
import { qname, redisUrl, waitFor } from '../helpers.js';

const { path: CHROMIUM, reason } = inject('chromium');
const prefix = 'board';
const name = qname('board');
let queue: Queue;
let server: Server;
let base = '';

async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}/api${path}`, {
    method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

const board = async (status = 'latest') => {
  const r = await api<{ queues: Array<{ name: string; counts: Record<string, number>; jobs: any[]; isPaused: boolean }> }>(
    'GET', `/queues?activeQueue=${encodeURIComponent(`${name}`)}&status=${status}&page=1&jobsPerPage=50`);
  return r.queues.find((q) => q.name === name)!;
};

beforeAll(async () => {
  queue = new Queue(name, { connection: redisUrl(), prefix });
  const worker = new Worker(name, async (job) => {
    await job.log(`working on ${job.id}`);
    await job.updateProgress(50);
    if (job.data.fail) throw new Error('card declined');
    return { ok: job.data.n };
  }, { connection: redisUrl(), prefix });
  await queue.add('pay', { n: 1 }, { jobId: 'done-1' });
  await queue.add('pay', { fail: true }, { jobId: 'bad-1' });
  await waitFor(async () => (await queue.getJobCounts('completed', 'failed')).failed === 1, 10_000, 'one failed');
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1, 10_000, 'one completed');
  await worker.close();
  await queue.add('report', { n: 2 }, { jobId: 'vip-1', lane: 'tenant-vip', priority: 3 });
  await queue.add('report', { n: 3 }, { jobId: 'plain-1' });
  await queue.add('later', { n: 4 }, { jobId: 'later-1', delay: 60_000 });

  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath('/ui');
  createBullBoard({ queues: [new EchoMQAdapter(queue)], serverAdapter });
  const app = express();
  app.use('/ui', serverAdapter.getRouter());
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ui`;
}, 30_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await queue?.obliterate({ force: true }).catch(() => {});
  await queue?.close();
});

describe('bull-board with EchoMQAdapter', () => {
  it('lists the queue with the counts Redis holds', async () => {
    const q = await board();
    expect(q).toBeDefined();
    const counts = await queue.getJobCounts();
    for (const s of ['waiting', 'prioritized', 'delayed', 'completed', 'failed', 'active']) expect(q.counts[s], s).toBe(counts[s as keyof typeof counts]);
    expect(q.counts).toMatchObject({ completed: 1, failed: 1, delayed: 1, prioritized: 1, waiting: 1 });
  });

  it('pages jobs by state and shows a job with data, lane, priority, progress, logs, result and error', async () => {
    const failed = await board('failed');
    expect(failed.jobs.map((j) => j.id)).toEqual(['bad-1']);
    expect(failed.jobs[0].failedReason).toBe('card declined');
    expect(failed.jobs[0].stacktrace.join('\n')).toContain('card declined');
    const prio = await board('prioritized');
    expect(prio.jobs.map((j) => j.id)).toEqual(['vip-1']);

    const { job } = await api<{ job: any }>('GET', `/queues/${encodeURIComponent(name)}/vip-1`);
    expect(job.data).toEqual({ n: 2 });
    expect(job.opts).toMatchObject({ lane: 'tenant-vip', priority: 3 });
    expect(job.priority).toBe(3);
    const done = (await api<{ job: any }>('GET', `/queues/${encodeURIComponent(name)}/done-1`)).job;
    expect(done.returnValue).toEqual({ ok: 1 });
    expect(done.progress).toBe(50);
    expect(await api('GET', `/queues/${encodeURIComponent(name)}/done-1/logs`)).toEqual(['working on done-1']);
  });

  it('acts on Redis: retry, promote, add, pause/resume, clean, remove', async () => {
    const q = encodeURIComponent(name);
    await api('PUT', `/queues/${q}/bad-1/retry`);
    expect(await queue.getJobState('bad-1')).toBe('waiting');
    await api('PUT', `/queues/${q}/later-1/promote`);
    expect(await queue.getJobState('later-1')).toBe('waiting');
    await api('POST', `/queues/${q}/add`, { name: 'manual', data: { n: 9 }, options: { priority: 1 } });
    expect((await queue.getPrioritized()).map((j) => j.name).sort()).toEqual(['manual', 'report']);
    await api('PUT', `/queues/${q}/pause`);
    expect(await queue.isPaused()).toBe(true);
    expect((await board()).isPaused).toBe(true);
    await api('PUT', `/queues/${q}/resume`);
    expect(await queue.isPaused()).toBe(false);
    // The board cleans with a 5 s grace: the job completed a moment ago is kept, as with BullMQ.
    await api('PUT', `/queues/${q}/clean/completed`);
    expect(await queue.getCompletedCount()).toBe(1);
    await api('PUT', `/queues/${q}/done-1/clean`);
    expect(await queue.getCompletedCount()).toBe(0);
    await api('PUT', `/queues/${q}/plain-1/clean`);
    expect(await queue.getJob('plain-1')).toBeUndefined();
  });

  it.skipIf(!CHROMIUM)(CHROMIUM ? 'shows the echomq queue on its page in Chromium' : `page in Chromium (skipped: ${reason})`, async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM!,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await page.goto(`${base}/queue/${encodeURIComponent(name)}?status=prioritized`);
      await page.getByText(name).first().waitFor({ timeout: 15_000 });
      await page.getByText('report').first().waitFor({ timeout: 15_000 });
      // The job's options show its lane and priority.
      await page.getByText('Options', { exact: true }).first().click({ timeout: 15_000 });
      await page.getByText('tenant-vip').first().waitFor({ timeout: 15_000 });
      const file = join(process.env.ECHOMQ_SCREENSHOT_DIR ?? tmpdir(), 'bull-board.png');
      await page.screenshot({ path: file });
    } finally {
      await browser.close();
    }
  }, 60_000);
});
