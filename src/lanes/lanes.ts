/**
 * Lane controls: weight, concurrency limit, rate limit, pause, drain, inspection. Settings live
 * in Redis and take effect at the next claim of every worker; settings given to a lane that
 * has no jobs yet are kept and apply when its jobs arrive.
 */
import { scripts, type ScriptContext } from '../scripts/index.js';
import { laneInfos, listLanes, type LaneInfo } from '../ops/inspect.js';
import * as v from '../core/validate.js';

export class LaneControls {
  constructor(private readonly ctx: ScriptContext) {}

  /** Share of the ring's service per turn: a lane of weight 3 gets 3× a lane of weight 1. Default 1. */
  async setWeight(lane: string, weight: number): Promise<void> {
    v.laneName(lane);
    v.integerIn('weight', weight, 1, 1_000_000);
    await scripts.setLane(this.ctx, { lane, field: 'weight', value: String(weight) });
  }

  /** Most jobs of the lane active at once, across all workers. 0 holds the lane. */
  async setLimit(lane: string, limit: number): Promise<void> {
    v.laneName(lane);
    v.nonNegativeInt('limit', limit);
    await scripts.setLane(this.ctx, { lane, field: 'limit', value: String(limit) });
  }

  async removeLimit(lane: string): Promise<void> {
    v.laneName(lane);
    await scripts.setLane(this.ctx, { lane, field: 'limit', value: '' });
  }

  /**
   * At most `max` jobs of the lane start per `duration` ms. A lane over its rate leaves the ring
   * until its window reopens; other lanes keep flowing. `null` removes the limit.
   */
  async setRateLimit(lane: string, rate: { max: number; duration: number } | null): Promise<void> {
    v.laneName(lane);
    if (rate === null) {
      await scripts.setLane(this.ctx, { lane, field: 'rate', value: '' });
      return;
    }
    v.plainObject('rate', rate);
    const max = v.positiveInt('rate.max', rate.max);
    const duration = v.positiveInt('rate.duration', rate.duration);
    await scripts.setLane(this.ctx, { lane, field: 'rate', value: `${max}:${duration}` });
  }

  /** A paused lane keeps its jobs and is skipped by every worker until resumed. */
  async pause(lane: string): Promise<void> {
    v.laneName(lane);
    await scripts.pauseLane(this.ctx, { lane, paused: true });
  }

  async resume(lane: string): Promise<void> {
    v.laneName(lane);
    await scripts.pauseLane(this.ctx, { lane, paused: false });
  }

  /** `{ depth, active, weight, limit, paused, rate, inRing }` of one lane (zeros for an unknown lane). */
  async get(lane: string): Promise<LaneInfo> {
    v.laneName(lane);
    const [info] = await laneInfos(this.ctx.client, this.ctx.keys, [lane]);
    return info;
  }

  /** Lanes in name order, `count` per page (default 100); pass the returned cursor for the next. */
  list(opts: { cursor?: string; count?: number } = {}): Promise<{ lanes: LaneInfo[]; cursor: string | null }> {
    v.plainObject('opts', opts);
    return listLanes(this.ctx.client, this.ctx.keys, opts);
  }

  /** Removes the lane's waiting jobs in bounded batches. Returns how many were removed. */
  async drain(lane: string): Promise<number> {
    v.laneName(lane);
    let removed = 0;
    for (;;) {
      const r = await scripts.drain(this.ctx, { delayed: false, cursor: '', lane });
      removed += r.removed;
      if (r.done) return removed;
    }
  }
}
