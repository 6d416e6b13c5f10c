/**
 * Recording QueueEvents the way a BullMQ program listens to them, for the side-by-side tests
 * of events.test.ts and stalled.test.ts.
 */
/** Every event name BullMQ 6's QueueEvents emits, plus echomq's own that a test may expect. */
export const BULLMQ_EVENTS = [
  'added', 'waiting', 'active', 'progress', 'completed', 'failed', 'delayed', 'stalled', 'removed', 'drained',
  'paused', 'resumed', 'duplicated', 'deduplicated', 'cleaned', 'waiting-children', 'retries-exhausted',
] as const;
export const ECHOMQ_EVENTS = ['retrying', 'moved', 'drained-queue'] as const;

export interface Seen {
  event: string;
  args: Record<string, unknown>;
  id: string;
}

/** Records the listed events in the order they are emitted (drained: args {}, as it has none). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- either package's QueueEvents
export function record(qe: any, names: readonly string[] = [...BULLMQ_EVENTS, ...ECHOMQ_EVENTS]): Seen[] {
  const seen: Seen[] = [];
  for (const event of names) {
    qe.on(event, (args: unknown, id?: string) => {
      if (event === 'drained') seen.push({ event, args: {}, id: args as string });
      else seen.push({ event, args: { ...(args as object) }, id: id! });
    });
  }
  return seen;
}

/** Resolves when cond() holds (polling every 10 ms), or rejects after ms. */
export async function until(cond: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The events as a comparable list: job ids replaced by names (from `names`, id → label),
 * timestamps by their type, and echomq's extension fields of `added` (lane, delay) checked and
 * dropped, so what remains is what a BullMQ program sees.
 */
export function normalize(seen: readonly Seen[], names: ReadonlyMap<string, string>): Array<[string, Record<string, unknown>]> {
  const label = (v: unknown) => (typeof v === 'string' && names.has(v) ? names.get(v)! : v);
  return seen.map(({ event, args }) => {
    const a: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(args)) {
      if (k === 'jobId' || k === 'deduplicatedJobId') a[k] = label(v);
      else if (k === 'delay' && event === 'delayed') a[k] = typeof v;
      else a[k] = v;
    }
    if (event === 'added' && 'lane' in a) {
      // echomq extends `added` with the job's lane and its delay at add time (docs/events.md)
      if (typeof a.lane !== 'string' || typeof a.delay !== 'string') throw new Error(`added without lane/delay: ${JSON.stringify(a)}`);
      delete a.lane;
      delete a.delay;
    }
    return [event, a];
  });
}

/** Map job id → name from the `added` events. */
export function namesOf(seen: readonly Seen[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const s of seen) if (s.event === 'added') m.set(String(s.args.jobId), String(s.args.name));
  return m;
}

/** Each job's events in order, keyed by job name (events without a jobId under '-'). */
export function perJob(seen: readonly Seen[], names: ReadonlyMap<string, string>): Record<string, Array<[string, Record<string, unknown>]>> {
  const out: Record<string, Array<[string, Record<string, unknown>]>> = {};
  for (const [event, args] of normalize(seen, names)) {
    const key = typeof args.jobId === 'string' ? args.jobId : '-';
    (out[key] ??= []).push([event, args]);
  }
  return out;
}

/**
 * Resolves once `qe` is reading. BullMQ's waitUntilReady() resolves before its first XREAD
 * with '$' reaches Redis, so events written in between are lost there (echomq fixes the start
 * id before waitUntilReady resolves); the tests publish a marker event until it arrives.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- either package
export async function reading(lib: any, qe: any, name: string, connection: unknown, prefix?: string): Promise<void> {
  await qe.waitUntilReady();
  let got = false;
  const on = () => (got = true);
  qe.on('reader-sync', on);
  const producer = new lib.QueueEventsProducer(name, { connection, ...(prefix ? { prefix } : {}) });
  for (let i = 0; !got; i++) {
    if (i === 200) throw new Error('QueueEvents never started reading');
    await producer.publishEvent({ eventName: 'reader-sync' });
    await new Promise((r) => setTimeout(r, 25));
  }
  qe.off('reader-sync', on);
  await producer.close();
}
