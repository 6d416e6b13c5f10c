/**
 * Completed and failed jobs per second over the last hour, per queue, for the dashboard chart.
 *
 * Source: the queue's events stream, read every second from where the last read stopped. The
 * stream id is the event time on the Redis clock, so each entry lands in its own second no
 * matter when it is read; on a queue's first view the last hour still in the (capped) stream is
 * read back, so the chart is not empty after a restart. Queues nobody looked at for ten minutes
 * stop being read. Counting the finished sets would not work: retention trims them.
 */
import type { RedisClient } from '../core/connection.js';
import { queueKeys } from '../core/keys.js';
import { readEvents } from '../ops/metrics.js';
import { redisTimeMs } from '../core/values.js';

const WINDOW = 3600; // seconds kept
const IDLE_MS = 10 * 60_000;
const MAX_PER_TICK = 20_000; // stream entries per queue per tick; a backlog is read over several ticks
const KEEP = new Set(['completed', 'failed']);

export interface Series {
  /** Second (Unix, Redis clock) of the last point. */
  end: number;
  /** One value per second, oldest first, WINDOW long. */
  completed: number[];
  failed: number[];
}

class Ring {
  readonly stamp = new Float64Array(WINDOW).fill(-1);
  readonly completed = new Uint32Array(WINDOW);
  readonly failed = new Uint32Array(WINDOW);
  cursor: string | undefined;
  lastViewed = Date.now();

  add(sec: number, failed: boolean): void {
    const i = sec % WINDOW;
    if (this.stamp[i] !== sec) {
      this.stamp[i] = sec;
      this.completed[i] = 0;
      this.failed[i] = 0;
    }
    if (failed) this.failed[i]++;
    else this.completed[i]++;
  }
}

export class Throughput {
  private readonly rings = new Map<string, Ring>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Redis clock (ms) at the last tick. */
  private nowMs = Date.now();

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly tickMs = 1000,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.tick().catch(() => undefined), this.tickMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** The last hour of a queue. The first call for a queue reads back what the stream still has. */
  async series(queue: string): Promise<Series> {
    let ring = this.rings.get(queue);
    if (!ring) {
      this.rings.set(queue, (ring = new Ring()));
      await this.tick();
    }
    ring.lastViewed = Date.now();
    const end = Math.floor(this.nowMs / 1000);
    const completed: number[] = new Array(WINDOW).fill(0);
    const failed: number[] = new Array(WINDOW).fill(0);
    for (let k = 0; k < WINDOW; k++) {
      const sec = end - WINDOW + 1 + k;
      const i = sec % WINDOW;
      if (ring.stamp[i] === sec) {
        completed[k] = ring.completed[i];
        failed[k] = ring.failed[i];
      }
    }
    return { end, completed, failed };
  }

  /** Completed and failed over the last `windowSec` seconds (at most the hour kept). */
  async totals(queue: string, windowSec: number): Promise<{ completed: number; failed: number }> {
    const s = await this.series(queue);
    const from = Math.max(0, WINDOW - Math.min(windowSec, WINDOW));
    let completed = 0;
    let failed = 0;
    for (let k = from; k < WINDOW; k++) {
      completed += s.completed[k];
      failed += s.failed[k];
    }
    return { completed, failed };
  }

  /** Reads new events of every viewed queue; one tick at a time. */
  tick(): Promise<void> {
    this.running ??= this.readAll().finally(() => (this.running = undefined));
    return this.running;
  }

  private async readAll(): Promise<void> {
    const [sec, usec] = await this.client.time();
    this.nowMs = redisTimeMs([sec, usec]);
    for (const [queue, ring] of this.rings) {
      if (Date.now() - ring.lastViewed > IDLE_MS) {
        this.rings.delete(queue);
        continue;
      }
      ring.cursor ??= `${this.nowMs - WINDOW * 1000}-0`;
      const r = await readEvents(this.client, queueKeys(queue, this.prefix), ring.cursor, MAX_PER_TICK, KEEP);
      ring.cursor = r.cursor;
      const oldest = Math.floor(this.nowMs / 1000) - WINDOW;
      for (const e of r.events) {
        const s = Math.floor(e.ms / 1000);
        if (s > oldest) ring.add(s, e.event === 'failed');
      }
    }
  }
}
