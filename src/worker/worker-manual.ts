/**
 * Manual processing (BullMQ's `new Worker(name, null)` + `worker.getNextJob(token)`): claims for
 * a caller's token through the same lane-aware claim as automatic processing, and the jobs a
 * worker holds for callers (from getNextJob and from fetchNext replies), whose leases the worker
 * keeps renewing until a lock-holder call moves them (src/job/job-moves.ts).
 */
import { Job, type JobContext } from '../job/job.js';
import { scripts, type ClaimedJob, type ClaimReply } from '../scripts/index.js';
import type { Running } from './worker-upkeep.js';
import * as v from '../core/validate.js';

/** What the manual side needs from its Worker. */
export interface ManualHost {
  readonly ctx: JobContext;
  leaseMs(): number;
  /** The Worker option name, stored as the claimed jobs' processedBy (undefined: none). */
  name(): string | undefined;
  /** The worker is closing: no more claims. */
  closing(): boolean;
  /** The worker is paused: getNextJob claims nothing (BullMQ's). */
  paused(): boolean;
  /** Blocks on the queue's wake list (up to drainDelay, or until the next delayed job), for the whole wait. */
  block(wakeInMs: number): Promise<void>;
  /** A job was claimed for a caller: start renewing leases, emit 'active'. */
  started(job: Job): void;
}

export class HeldJobs {
  /** Jobs held for callers, by id (their lease is renewed with the worker's). */
  readonly held = new Map<string, Running>();
  /**
   * The last claim for a caller found nothing (BullMQ's `drained`). Only then does a blocking
   * getNextJob wait: the first call that finds the queue empty returns at once, as BullMQ's.
   */
  private drained = false;

  constructor(private readonly host: ManualHost) {}

  /** Tracks a job claimed for a caller. */
  adopt(cj: ClaimedJob): Job {
    const job = Job.fromFields(this.host.ctx, cj.id, cj.fields);
    this.held.set(job.id, { job, token: String(job.attemptsStarted), ac: new AbortController(), lost: false });
    this.host.started(job);
    return job;
  }

  /** A lock-holder call moved the job out of active (or its lease was lost). */
  release(jobId: string): void {
    this.held.delete(jobId);
  }

  /**
   * Claims the next job for `token`; with block (default), waits for one up to drainDelay when
   * none is ready and the previous claim found none either (BullMQ's drained state; the first
   * empty claim returns at once). Resolves undefined when there is none (or the worker is
   * closing or paused).
   */
  async getNextJob(token: string, opts: { block?: boolean } = {}): Promise<Job | undefined> {
    v.nonEmptyString('token', token, 10_000);
    const o = v.plainObject('opts', opts);
    const block = o.block === undefined ? true : v.boolean('block', o.block);
    if (this.host.closing() || this.host.paused()) return undefined;
    let reply: ClaimReply = await scripts.claim(this.host.ctx, { count: 1, leaseMs: this.host.leaseMs(), owner: token, name: this.host.name() });
    if (reply.jobs.length === 0 && block && this.drained && !this.host.closing()) {
      await this.host.block(reply.wakeInMs);
      if (this.host.closing()) return undefined;
      reply = await scripts.claim(this.host.ctx, { count: 1, leaseMs: this.host.leaseMs(), owner: token, name: this.host.name() });
    }
    const cj = reply.jobs[0];
    this.drained = !cj;
    return cj ? this.adopt(cj) : undefined;
  }
}
