// Waking, not polling: an idle worker costs Redis about one command per block timeout and
// writes nothing, and a job added to an idle queue starts within a few milliseconds.
// This file runs its own redis-server so that INFO counters see only this worker.
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { Queue, Worker } from '../src/index.js';
import { qname, sleep, waitFor } from './helpers.js';
import { startMonitor } from './monitor.js';
import { usePrivateServer } from './private-server.js';

/** Calls per command from INFO commandstats, minus INFO itself (that is us asking). */
async function commandCalls(admin: Redis): Promise<Map<string, number>> {
  const text = await admin.info('commandstats');
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] !== 'info') out.set(m[1], Number(m[2]));
  }
  return out;
}

function delta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const d: Record<string, number> = {};
  for (const [cmd, n] of after) if (n - (before.get(cmd) ?? 0) > 0) d[cmd] = n - (before.get(cmd) ?? 0);
  return d;
}

/** Writes Redis has applied since start (it counts them even without persistence). */
async function dirty(admin: Redis): Promise<number> {
  const text = await admin.info('persistence');
  return Number(/rdb_changes_since_last_save:(\d+)/.exec(text)![1]);
}

describe('core idle', () => {
  const srv = usePrivateServer();

  it('an idle worker sends at most a few commands in 5 s and writes nothing', async () => {
    const name = qname('idle');
    const queue = new Queue(name, { connection: srv.url });
    const worker = new Worker(name, async () => {}, { connection: srv.url });
    try {
      // Give it work once so the queue's keys exist, then let it settle into its idle block.
      await queue.add('warm', {});
      await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1, 5000);
      await sleep(300);

      // MONITOR shows what clients send (commands run inside scripts come tagged 'lua');
      // INFO commandstats counts both, so it says how much work Redis did for them.
      const admin = srv.admin;
      const monitor = await startMonitor(admin);
      const calls0 = await commandCalls(admin);
      const dirty0 = await dirty(admin);
      await sleep(5000);
      const used = delta(calls0, await commandCalls(admin));
      monitor.stop();
      const clientCmds = monitor.seen.filter(({ source }) => source !== 'lua').map(({ args }) => args[0]!.toLowerCase()).filter((c) => c !== 'info');
      // One block timeout (drainDelay 5 s) is one BLPOP plus one claim, at most twice at the edges.
      expect(clientCmds.length, `sent ${clientCmds.join(' ')}; ran ${JSON.stringify(used)}`).toBeLessThanOrEqual(4);
      expect(clientCmds.length).toBeGreaterThan(0); // it is alive and blocking, not asleep for good
      // A claim that finds nothing reads a handful of keys and writes none.
      const total = Object.values(used).reduce((a, b) => a + b, 0);
      expect(total, JSON.stringify(used)).toBeLessThanOrEqual(30);
      expect(await dirty(admin)).toBe(dirty0);
    } finally {
      await worker.close();
      await queue.close();
    }
  }, 20_000);

  it('a job added to an idle queue starts within 10 ms (median of 50)', async () => {
    const name = qname('wake');
    const queue = new Queue(name, { connection: srv.url });
    const startedAt = new Map<number, number>();
    const worker = new Worker(name, async (job) => {
      startedAt.set(job.data.i, performance.now());
    }, { connection: srv.url });
    try {
      await queue.add('warm', { i: -1 });
      await waitFor(() => startedAt.has(-1), 5000);
      const samples: number[] = [];
      for (let i = 0; i < 50; i++) {
        await sleep(20); // the worker is back in its blocking wait
        const t0 = performance.now();
        await queue.add('ping', { i });
        await waitFor(() => startedAt.has(i), 5000);
        samples.push(startedAt.get(i)! - t0);
      }
      samples.sort((a, b) => a - b);
      const median = (samples[24] + samples[25]) / 2;
      expect(median, `samples (ms): ${samples.map((s) => s.toFixed(2)).join(' ')}`).toBeLessThan(10);
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
