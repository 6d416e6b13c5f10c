/**
 * The claim path of a Worker with a processor: the loop that claims as many jobs as there are
 * free slots, and its applied-once handling (docs/protocol.md "Applied once"): a claim whose reply
 * was lost is retried with the same request id; claims the worker will not take go back through
 * releaseClaim. Kept apart from worker.ts, which runs and settles the jobs this hands it.
 */
import { RequestOutcomeUnknownError } from '../core/errors.js';
import { MetaField } from '../core/fields.js';
import { applyGroupDefaults, type GroupDefaults } from '../pro/groups.js';
import { newRequestId } from '../scripts/request-id.js';
import { scripts, type ClaimReply, type ClaimedJob } from '../scripts/index.js';
import { execStamped, layoutReady } from '../scripts/runner.js';
import type { MoveContext } from '../job/job-moves.js';
import type { SlotPool } from './slot-pool.js';

/** What the claim loop reads and calls of its Worker (built once, in the Worker's constructor). */
export interface ClaimHost {
  readonly ctx: MoveContext;
  readonly opts: { lockDuration: number; runRetryDelay: number; name?: string };
  readonly pool: SlotPool | undefined;
  /** The Worker: the slot pool's key for it. */
  readonly owner: object;
  readonly limiter: { max: number; duration: number } | undefined;
  readonly groupDefaults: GroupDefaults | undefined;
  stopping(): boolean;
  paused(): boolean;
  pausedIdle(): boolean;
  /** Slots free for a claim (concurrency less running and reserved, or the pool's share). */
  free(): number;
  connected(): Promise<void>;
  waitLocal(): Promise<void>;
  block(wakeInMs: number): Promise<void>;
  startJobs(jobs: readonly ClaimedJob[]): void;
  /** A claim came back empty: 'drained' if jobs ran and none runs now. */
  drained(): void;
  reportError(err: unknown): void;
}

export class ClaimLoop {
  /** Slots of the claim in flight, counted as taken until its reply starts its jobs. */
  reserved = 0;
  /** The loop ended at a pause (see run); resume() starts a new one. */
  ended = false;
  /** Jobs handed back through releaseClaim (claimed for this worker, never started). */
  released = 0;
  /** A claim whose reply was lost (its outcome unknown): retried next with the same request id. */
  private lost: { requestId: string; n: number } | undefined;
  /** Request ids whose jobs this worker will not take (closing, concurrency lowered, a settle given up). */
  private readonly unclaimed = new Set<string>();

  constructor(private readonly host: ClaimHost) {}

  /** A request whose jobs go back (releaseClaim) when Redis next answers. */
  abandon(requestId: string): void {
    this.unclaimed.add(requestId);
  }

  /** Claims until the worker closes, or pauses idle (BullMQ's loop ends then too). */
  async run(): Promise<void> {
    const h = this.host;
    let failures = 0;
    try {
      await h.connected();
    } catch (err) {
      if (h.stopping()) return;
      h.reportError(err); // the claims below are retried until Redis answers
    }
    await this.applyLimiter();
    while (!h.stopping()) {
      // pause() without doNotWaitActive, its jobs done: the loop ends and run() resolves, as
      // BullMQ's; resume() starts it again.
      if (h.pausedIdle()) {
        this.ended = true;
        return;
      }
      if (h.paused() || h.free() <= 0) {
        await h.waitLocal();
        continue;
      }
      if (this.unclaimed.size > 0 && !(await this.releaseUnclaimed())) {
        failures++;
        await this.retryPause(Math.min(5000, h.opts.runRetryDelay, 50 * 2 ** Math.min(failures, 7)));
        continue;
      }
      const lost = this.lost;
      this.lost = undefined;
      if (lost && lost.n > h.free()) {
        // Fewer free slots than that claim may hold (concurrency lowered): its jobs go back.
        this.unclaimed.add(lost.requestId);
        continue;
      }
      const n = lost ? lost.n : h.free();
      const requestId = lost ? lost.requestId : newRequestId(h.ctx.client);
      this.reserved += n;
      let reply: ClaimReply;
      try {
        reply = await scripts.claim(h.ctx, { count: n, leaseMs: h.opts.lockDuration, name: h.opts.name, requestId });
        failures = 0;
      } catch (err) {
        this.reserved -= n;
        h.pool?.released(h.owner);
        if (err instanceof RequestOutcomeUnknownError && !err.expired) {
          if (h.stopping()) this.unclaimed.add(requestId);
          else this.lost = { requestId, n };
        }
        if (h.stopping()) break;
        h.reportError(err);
        failures++;
        await this.retryPause(Math.min(5000, h.opts.runRetryDelay, 50 * 2 ** Math.min(failures, 7)));
        continue;
      }
      this.reserved -= n;
      h.startJobs(reply.jobs);
      h.pool?.claimed(h.owner, n, reply.jobs.length);
      if (reply.jobs.length === 0 && !h.stopping()) {
        h.drained();
        await h.block(reply.wakeInMs);
      }
    }
  }

  /** At close, the loop done: claims whose reply was lost go back now rather than stall (best effort). */
  async releaseAll(): Promise<void> {
    if (this.lost) this.unclaimed.add(this.lost.requestId);
    this.lost = undefined;
    if (this.unclaimed.size > 0) await this.releaseUnclaimed();
  }

  /** Hands back the jobs of the unclaimed requests (releaseClaim); false when Redis did not answer. */
  private async releaseUnclaimed(): Promise<boolean> {
    const ids = [...this.unclaimed];
    try {
      this.released += (await scripts.releaseClaims(this.host.ctx, ids)).length;
    } catch (err) {
      if (!this.host.stopping()) this.host.reportError(err);
      return false;
    }
    for (const id of ids) this.unclaimed.delete(id);
    return true;
  }

  /** Stores the limiter and group options in the queue's meta before the first claim (retried until it lands). */
  private async applyLimiter(): Promise<void> {
    const { limiter, groupDefaults, ctx } = this.host;
    if (!limiter && !groupDefaults) return;
    for (let failures = 1; !this.host.stopping(); failures++) {
      try {
        if (limiter) await layoutReady(ctx.client, ctx.keys);
        if (limiter) await execStamped(ctx.client.multi().hset(ctx.keys.meta, MetaField.rateMax, limiter.max, MetaField.rateDuration, limiter.duration), ctx.keys);
        if (groupDefaults) await applyGroupDefaults(ctx, groupDefaults);
        return;
      } catch (err) {
        if (this.host.stopping()) return;
        this.host.reportError(err);
        await this.retryPause(Math.min(5000, 50 * 2 ** Math.min(failures, 7)));
      }
    }
  }

  /** Waits `ms` before a failed call is retried; close() (a poke) ends the wait at once. */
  private async retryPause(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((r) => (timer = setTimeout(r, ms))), this.host.waitLocal()]);
    clearTimeout(timer);
  }
}
