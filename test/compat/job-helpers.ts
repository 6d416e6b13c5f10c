/**
 * Shared pieces of the Job compatibility tests (job*.test.ts): normalising what differs by run
 * (queue names, times, flow UUIDs) so that BullMQ's and echomq's observations compare equal.
 */
import type { Redis } from 'ioredis';

const TIME_FIELDS = new Set(['timestamp', 'processedOn', 'finishedOn']);
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/**
 * A JSON-safe copy with the queue name replaced by <q>, UUIDs by <uuid>, and time fields by
 * 'T' (a number was there) so that runs compare. `undefined` members disappear, as in JSON.
 */
export function norm(value: unknown, name: string): any {
  const walk = (v: unknown, key?: string): unknown => {
    if (typeof v === 'string') return v.split(name).join('<q>').replace(UUID, '<uuid>');
    if (typeof v === 'number' && key && TIME_FIELDS.has(key)) return 'T';
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) if (x !== undefined && typeof x !== 'function') out[walk(k) as string] = walk(x, k);
      return out;
    }
    return v;
  };
  return walk(JSON.parse(JSON.stringify(value ?? null)));
}

/** The message of what fn() throws (or 'resolved: <value>'). */
export async function thrown(fn: () => unknown): Promise<string> {
  try {
    return `resolved: ${JSON.stringify(await fn())}`;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Every key whose name contains the queue name, with its DUMP (to check that a refused call wrote nothing). */
export async function dumpQueue(c: Redis, name: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const k of (await c.keys(`*${name}*`)).sort()) {
    out[k] = ((await c.dumpBuffer(k)) ?? Buffer.alloc(0)).toString('hex');
  }
  return out;
}

/** Expects every echomq message to begin with BullMQ's message for the same call. */
export function startsWithEach(echomq: Record<string, string>, bullmq: Record<string, string>): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const k of Object.keys(bullmq)) out[k] = echomq[k]?.startsWith(bullmq[k]) ?? false;
  return out;
}
