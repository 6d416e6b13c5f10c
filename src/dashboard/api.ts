/**
 * The dashboard's JSON API. Paths are `/api/queues/<queue>/…` with every user string as one
 * URL-encoded path segment. Reads are GET; actions are POST and reach this module only after
 * server.ts checked the token and that the request is same-origin.
 *
 *   GET  /api/config                                 { readOnly, prefix }
 *   GET  /api/queues                                 every queue with counts
 *   GET  /api/queues/:q                              counts, paused, lanes (first 1,000 by name)
 *   GET  /api/queues/:q/throughput                   completed/failed per second, last hour
 *   GET  /api/queues/:q/jobs?state&lane&offset&limit jobs (no data)
 *   GET  /api/queues/:q/jobs/:id                     one job with data, logs, stack
 *   POST /api/queues/:q/pause | resume | retry-failed
 *   POST /api/queues/:q/lanes/:lane/pause | resume
 *   POST /api/queues/:q/lanes/:lane/weight           { value: n }
 *   POST /api/queues/:q/lanes/:lane/limit            { value: n | null }
 *   POST /api/queues/:q/jobs/:id/retry | remove
 */
import type { Target } from '../operator/target.js';
import * as ops from '../operator/operations.js';
import type { Throughput } from './throughput.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ApiContext {
  target: Target;
  throughput: Throughput;
  readOnly: boolean;
}

/** What the API answers, named for the page's script (page/*.ts) so it reads replies with the server's types. */
export interface ConfigReply {
  readOnly: boolean;
  prefix: string;
}
export type OverviewReply = Awaited<ReturnType<typeof ops.overview>>;
export type QueueReply = Awaited<ReturnType<typeof ops.queueStatus>>;
export type JobsReply = Awaited<ReturnType<typeof ops.findJobs>>;
export type { Series as ThroughputReply } from './throughput.js';
/** One job: Job.toJSON() (typed loosely there) plus state and logs; these are the fields the page shows. */
export type JobReply = Awaited<ReturnType<typeof ops.jobDetail>> & {
  id: string;
  name: string;
  lane: string;
  priority: number;
  attemptsMade: number;
  attemptsStarted: number;
  stalledCounter: number;
  progress: unknown;
  timestamp: number;
  processedOn?: number | null;
  finishedOn?: number | null;
  returnvalue?: unknown;
  data: unknown;
  failedReason?: string | null;
  stacktrace?: string[] | null;
};

const notFound = () => new HttpError(404, 'no such endpoint');

/** Query numbers: digits become numbers; anything else goes to validation as it is. */
function qnum(s: string | null): number | undefined {
  if (s === null || s === '') return undefined;
  return (/^\d+$/.test(s) ? Number(s) : s) as number;
}

export async function get(ctx: ApiContext, seg: string[], query: URLSearchParams): Promise<unknown> {
  const t = ctx.target;
  if (seg.length === 1 && seg[0] === 'config') return { readOnly: ctx.readOnly, prefix: t.prefix } satisfies ConfigReply;
  if (seg[0] !== 'queues') throw notFound();
  if (seg.length === 1) return ops.overview(t);
  const q = await ops.openQueue(t, seg[1]);
  if (seg.length === 2) return ops.queueStatus(q);
  if (seg.length === 3 && seg[2] === 'throughput') return ctx.throughput.series(q.name);
  if (seg[2] === 'jobs' && seg.length === 3) {
    return ops.findJobs(q, {
      state: query.get('state') ?? undefined,
      lane: query.get('lane') ?? undefined,
      offset: qnum(query.get('offset')),
      limit: qnum(query.get('limit')),
    });
  }
  if (seg[2] === 'jobs' && seg.length === 4) return ops.jobDetail(q, seg[3]);
  throw notFound();
}

export async function post(ctx: ApiContext, seg: string[], body: Record<string, unknown>): Promise<unknown> {
  if (seg[0] !== 'queues' || seg.length < 3) throw notFound();
  const q = await ops.openQueue(ctx.target, seg[1]);
  const action = seg[seg.length - 1];
  if (seg.length === 3) {
    if (action === 'pause' || action === 'resume') {
      await ops.setPaused(q, action === 'pause');
      return { ok: true };
    }
    if (action === 'retry-failed') return ops.retryAllFailed(q);
  }
  if (seg.length === 5 && seg[2] === 'lanes') {
    const lane = seg[3];
    switch (action) {
      case 'pause':
      case 'resume':
        await ops.setPaused(q, action === 'pause', lane);
        return { ok: true };
      case 'weight':
        await q.lanes.setWeight(lane, body.value as number);
        return { ok: true };
      case 'limit':
        await ops.setLaneLimit(q, lane, body.value === null ? 'none' : (body.value as number));
        return { ok: true };
    }
  }
  if (seg.length === 5 && seg[2] === 'jobs') {
    if (action === 'retry') return ops.retryJob(q, seg[3]);
    if (action === 'remove') {
      await ops.removeJob(q, seg[3]);
      return { ok: true };
    }
  }
  throw notFound();
}
