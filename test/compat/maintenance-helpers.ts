/**
 * Helpers of the maintenance compat tests (test/compat/maintenance*.test.ts): a QueueEvents
 * recorder that stops at a marker event, and a worker that settles jobs by name. Written once
 * for both packages, in BullMQ's API only.
 */
import { connection as newConnection, type Lib } from './harness.js';
import { waitFor } from '../helpers.js';

export type Logged = [event: string, args: Record<string, unknown>];

/**
 * Records the stream events `names` through QueueEvents. `until(event, n)` resolves once the
 * n-th `event` arrived and returns everything before it (a marker written after the scenario,
 * so every earlier event has been read too).
 */
export async function recordEvents(lib: Lib, name: string, names: string[]) {
  const qe = new lib.QueueEvents(name, { connection: newConnection() });
  await qe.waitUntilReady();
  // BullMQ's reader may resolve waitUntilReady before its first XREAD from '$' is sent; events
  // written in between would be missed. A short pause lets both readers settle first.
  await new Promise((res) => setTimeout(res, 150));
  const log: Logged[] = [];
  for (const n of names) (qe as any).on(n, (args: Record<string, unknown>) => log.push([n, { ...args }]));
  return {
    log,
    async until(event: string, n = 1): Promise<Logged[]> {
      await waitFor(() => log.filter((e) => e[0] === event).length >= n, 10000, `${n} ${event} event(s)`);
      let seen = 0;
      const at = log.findIndex((e) => e[0] === event && ++seen === n);
      return log.slice(0, at);
    },
    close: () => qe.close(),
  };
}

/** Replaces job ids by job names in event args (generated ids may differ between packages). */
export function byName(events: Logged[], names: Map<string, string>, keep: string[]): Array<[string, Record<string, unknown>]> {
  return events.map(([e, args]) => {
    const out: Record<string, unknown> = {};
    for (const k of keep) if (args[k] !== undefined) out[k] = k === 'jobId' ? names.get(String(args[k])) ?? args[k] : args[k];
    return [e, out];
  });
}

/**
 * A worker whose jobs fail when their name starts with 'f', wait for `release` when named
 * 'hold', and otherwise return their name.
 */
export function settlingWorker(lib: Lib, name: string, release?: Promise<void>, concurrency = 1) {
  const w = new lib.Worker(name, async (job: any) => {
    if (String(job.name).startsWith('f')) throw new Error('boom');
    if (job.name === 'hold') await release;
    return job.name;
  }, { connection: newConnection(), maxStalledCount: 0, concurrency } as any);
  w.on('error', () => {});
  return w;
}

export const ids = (jobs: Array<{ id?: string }>) => jobs.map((j) => j.id!);
