/**
 * Side-by-side harness for the BullMQ compatibility tests: the same scenario runs against the
 * `bullmq` package and against echomq, on the same Redis, under separate queue names, and the
 * test compares what a user observes.
 *
 *   const r = await sideBySide(async (lib, name, connection) => { ... return observed; });
 *   expect(r.echomq).toEqual(r.bullmq);
 *
 * `lib` is the module namespace of either package (Queue, Worker, Job, QueueEvents, errors…), so
 * a scenario is written once in BullMQ's style and only the import differs, as for a user.
 */
import * as bullmq from 'bullmq';
import { Redis } from 'ioredis';
import * as echomq from '../../src/index.js';
import { qname, redisUrl } from '../helpers.js';

/** Either package, as a BullMQ program sees it. */
export type Lib = typeof bullmq;
export const libs = { bullmq: bullmq as Lib, echomq: echomq as unknown as Lib } as const;
export type LibName = keyof typeof libs;

const opened: Redis[] = [];

/** A plain ioredis connection, as BullMQ's docs use (maxRetriesPerRequest null for workers). */
export function connection(): Redis {
  const c = new Redis(redisUrl(), { maxRetriesPerRequest: null });
  opened.push(c);
  return c;
}

/** Closes every connection the harness opened (call in afterAll). */
export async function closeConnections(): Promise<void> {
  await Promise.all(opened.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
}

/** Runs the scenario once per package (BullMQ first), each with its own queue name and connection. */
export async function sideBySide<T>(
  scenario: (lib: Lib, name: string, conn: Redis, side: LibName) => Promise<T>,
  label = 'compat',
): Promise<Record<LibName, T>> {
  const out = {} as Record<LibName, T>;
  for (const side of ['bullmq', 'echomq'] as const) {
    out[side] = await scenario(libs[side], qname(`${label}-${side}`), connection(), side);
  }
  return out;
}

/** The first `n` events a listener receives, or what arrived when `ms` passed. */
export function collect<T = unknown[]>(on: (cb: (...args: any[]) => void) => void, n: number, ms = 5000): Promise<T[]> {
  return new Promise((resolve) => {
    const got: T[] = [];
    const timer = setTimeout(() => resolve(got), ms);
    on((...args: any[]) => {
      got.push(args as T);
      if (got.length === n) {
        clearTimeout(timer);
        resolve(got);
      }
    });
  });
}

/** The message a call throws synchronously, or 'accepted' (for comparing refusals side by side). */
export function refusal(fn: () => unknown): string {
  try {
    fn();
    return 'accepted';
  } catch (e) {
    return (e as Error).message;
  }
}
