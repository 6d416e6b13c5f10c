/**
 * Time waiting and time processing, as percentiles, for the queue view: from the queue's newest
 * finished jobs (the `completed` and `failed` events of the events stream, read backwards, at
 * most LATENCY_SAMPLE jobs within the window, LATENCY_SCAN entries examined), then one HMGET
 * per job of its creation time, delay, start and finish, as the metrics' histograms read them
 * (src/ops/metrics.ts). A job already removed (removeOnComplete) gives no sample. Read only
 * while someone looks at the queue; nothing is written and the hot path is untouched.
 */
import type { RedisClient } from '../core/connection.js';
import { jobKey, type QueueKeys } from '../core/keys.js';
import { JobField } from '../core/fields.js';

export const LATENCY_SAMPLE = 2000;
export const LATENCY_SCAN = 8000;
const PAGE = 1000;

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
}

export interface Latency {
  /** Finished jobs counted, and the period (event times, ms) they cover; null with none. */
  jobs: number;
  from: number | null;
  to: number | null;
  /** Milliseconds from due (creation + delay) to the start of the last attempt. */
  wait: Percentiles | null;
  /** Milliseconds of the last attempt. */
  processing: Percentiles | null;
}

function percentiles(values: number[]): Percentiles | null {
  if (values.length === 0) return null;
  const v = values.slice().sort((a, b) => a - b);
  const at = (p: number) => v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)];
  return { p50: at(50), p90: at(90), p99: at(99) };
}

/** The newest finished jobs of the last `windowSec` seconds (Redis clock `nowMs`). */
export async function latency(client: RedisClient, keys: QueueKeys, windowSec: number, nowMs: number): Promise<Latency> {
  const since = nowMs - windowSec * 1000;
  const done: Array<{ id: string; ms: number }> = [];
  let end = String(nowMs); // an id of milliseconds alone ends at that millisecond's last entry
  for (let scanned = 0; scanned < LATENCY_SCAN && done.length < LATENCY_SAMPLE; ) {
    const page = await client.xrevrange(keys.events, end, `${since}-0`, 'COUNT', Math.min(PAGE, LATENCY_SCAN - scanned));
    for (const [id, f] of page) {
      if (f[0] !== 'event' || (f[1] !== 'completed' && f[1] !== 'failed')) continue;
      const ms = Number(id.slice(0, id.indexOf('-')));
      for (let i = 2; i < f.length; i += 2) if (f[i] === 'jobId' && done.length < LATENCY_SAMPLE) done.push({ id: f[i + 1], ms });
    }
    scanned += page.length;
    if (page.length < PAGE) break;
    end = '(' + page[page.length - 1][0];
  }
  const wait: number[] = [];
  const processing: number[] = [];
  if (done.length > 0) {
    const p = client.pipeline();
    for (const d of done) p.hmget(jobKey(keys, d.id), JobField.timestamp, JobField.delay, JobField.processedOn, JobField.finishedOn);
    (await p.exec())!.forEach(([err, row], i) => {
      if (err || !row) return;
      const [ts, delay, pOn, fOn] = (row as Array<string | null>).map((x) => (x === null ? NaN : Number(x)));
      if (!Number.isFinite(pOn)) return;
      if (Number.isFinite(ts)) wait.push(Math.max(0, pOn - ts - (delay || 0)));
      processing.push(Math.max(0, (Number.isFinite(fOn) ? fOn : done[i].ms) - pOn));
    });
  }
  return {
    jobs: done.length,
    from: done.length ? done[done.length - 1].ms : null,
    to: done.length ? done[0].ms : null,
    wait: percentiles(wait),
    processing: percentiles(processing),
  };
}
