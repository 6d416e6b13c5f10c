/**
 * The dashboard's JSON API. Paths are `api/queues/<queue>/…` under the dashboard's base path,
 * with every user string as one URL-encoded path segment. Reads are GET; actions are POST and
 * reach this module only after handler.ts checked the token and that the request is same-origin.
 * What each read touches is said where it is defined (reads.ts, operations.ts).
 *
 *   GET  api/config                                      { readOnly, tokenRequired, prefix }
 *   GET  api/queues?window=s                             every queue: counts, workers, health
 *   GET  api/queues/:q                                   counts, paused, lanes (first 1,000 by name)
 *   GET  api/queues/:q?lanes=0                           counts and paused only
 *   GET  api/queues/:q/throughput                        completed/failed per second, last hour
 *   GET  api/queues/:q/jobs?state&lane&cursor&limit&id   a page of jobs (no data), or one by id
 *   GET  api/queues/:q/jobs?name&state&cursor&limit     jobs whose name contains `name`: a resumable scan
 *   GET  api/queues/:q/jobs/:id                          one job: data, options, logs, parent, children
 *   GET  api/queues/:q/latency?window=s                  time waiting and processing, percentiles (2,000 jobs)
 *   GET  api/queues/:q/workers                           the queue's workers (CLIENT LIST), the active jobs each holds (500)
 *   GET  api/queues/:q/lanes?after&prefix&limit          a page of lanes by name (≤ 1,000)
 *   GET  api/queues/:q/lanes?sort=depth|active|weight&limit  the largest lanes of the whole queue (≤ 1,000)
 *   GET  api/queues/:q/fairness                          lanes' share of recent starts, head job ages (1,000 lanes)
 *   GET  api/queues/:q/schedulers?offset&limit           job schedulers by next run
 *   POST api/queues/:q/pause | resume | retry-failed | promote-all | drain | clean | obliterate
 *   POST api/queues/:q/lanes/:lane/pause | resume | weight { value } | limit { value | null }
 *   POST api/queues/:q/jobs/:id/retry | remove | promote | priority { value } | lane { value }
 *   POST api/queues/:q/jobs/bulk                         { action: retry|remove|promote, ids: [≤ 500] }
 *   POST api/queues/:q/schedulers/:id/remove
 */
import type { Queue } from '../queue/queue.js';
import type { Target } from '../operator/target.js';
import * as ops from '../operator/operations.js';
import * as v from '../core/validate.js';
import type { Throughput } from './throughput.js';
import { activeByWorker, findById, jobFull, jobsPage, lanesPage, overviewHealth, queueSummary, searchByName, schedulersPage, workersByQueue } from './reads.js';
import { laneHeads, laneShare } from './lane-share.js';
import { latency } from './latency.js';
import { redisTimeMs } from '../core/values.js';
import { topLanes } from '../operator/lanes.js';
import { shardQueues } from '../operator/shards.js';

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
  tokenRequired: boolean;
}

/** What the API answers, named for the page's script (page/*.tsx) so it reads replies with the server's types. */
export interface ConfigReply {
  readOnly: boolean;
  tokenRequired: boolean;
  prefix: string;
}
export type OverviewReply = Awaited<ReturnType<typeof overviewHealth>>;
export type QueueReply = Awaited<ReturnType<typeof ops.queueStatus>>;
export type SummaryReply = Awaited<ReturnType<typeof queueSummary>>;
export type JobsReply = Awaited<ReturnType<typeof jobsPage>> & { scanned?: number };
export type WorkersReply = {
  workers: Awaited<ReturnType<typeof workersByQueue>> extends Map<string, infer W> ? W : never;
} & Awaited<ReturnType<typeof activeByWorker>>;
export type SchedulersReply = Awaited<ReturnType<typeof schedulersPage>>;
export type LanesReply = Awaited<ReturnType<typeof lanesPage>> & { scanned?: number };
export type LatencyReply = Awaited<ReturnType<typeof latency>>;
export type FairnessReply = { share: Awaited<ReturnType<typeof laneShare>>; oldest: Record<string, number | null> };
export type { Series as ThroughputReply } from './throughput.js';
/** One job: Job.toJSON() (typed loosely there) plus what jobFull adds; these are the fields the page shows. */
export type JobReply = Awaited<ReturnType<typeof jobFull>> & {
  id: string;
  name: string;
  lane: string;
  priority: number;
  attemptsMade: number;
  attemptsStarted: number;
  stalledCounter: number;
  progress: unknown;
  timestamp: number;
  delay?: number;
  processedOn?: number | null;
  finishedOn?: number | null;
  processedBy?: string | null;
  returnvalue?: unknown;
  data: unknown;
  opts: Record<string, unknown>;
  failedReason?: string | null;
  stacktrace?: string[] | null;
};
export type BulkReply = { done: string[]; failed: Array<{ id: string; error: string }> };

/** Most jobs one bulk action takes. */
export const BULK_MAX = 500;
/** Most jobs one clean call removes. */
export const CLEAN_MAX = 10_000;

const notFound = () => new HttpError(404, 'no such endpoint');

/** Query numbers: digits become numbers; anything else goes to validation as it is. */
function qnum(s: string | null): number | undefined {
  if (s === null || s === '') return undefined;
  return (/^\d+$/.test(s) ? Number(s) : s) as number;
}

export async function get(ctx: ApiContext, seg: string[], query: URLSearchParams): Promise<unknown> {
  const t = ctx.target;
  if (seg.length === 1 && seg[0] === 'config') {
    return { readOnly: ctx.readOnly, tokenRequired: ctx.tokenRequired, prefix: t.prefix } satisfies ConfigReply;
  }
  if (seg[0] !== 'queues') throw notFound();
  if (seg.length === 1) {
    const w = qnum(query.get('window'));
    return overviewHealth(t, ctx.throughput, w === undefined ? 300 : v.integerIn('window', w, 60, 3600));
  }
  const q = await ops.openQueue(t, seg[1]);
  if (seg.length === 2) return query.get('lanes') === '0' ? queueSummary(q) : ops.queueStatus(q);
  if (seg.length === 3) {
    switch (seg[2]) {
      case 'throughput':
        return ctx.throughput.series(q.name);
      case 'workers':
        // A sharded queue's jobs are in its shards: each shard's active set, merged.
        const [byQueue, parts] = await Promise.all([
          workersByQueue(t.client, t.prefix, [q.name]),
          Promise.all(shardQueues(q).map((s) => activeByWorker(s.client, s.keys))),
        ]);
        const held: WorkersReply['held'] = {};
        for (const p of parts) for (const [by, jobs] of Object.entries(p.held)) (held[by] ??= []).push(...jobs);
        return {
          workers: byQueue.get(q.name)!, held,
          active: parts.reduce((n, p) => n + p.active, 0), truncated: parts.some((p) => p.truncated),
        } satisfies WorkersReply;
      case 'lanes':
      {
        const sort = query.get('sort');
        if (sort !== null && sort !== '' && sort !== 'name') {
          // The largest lanes of the whole queue, read in bounded pages (topLanes), not of one page.
          if (sort !== 'depth' && sort !== 'active' && sort !== 'weight') v.fail('sort', '"name", "depth", "active" or "weight"', sort);
          const limit = qnum(query.get('limit'));
          const top = await topLanes(q, sort, limit === undefined ? 200 : v.integerIn('limit', limit, 1, 1000));
          return { lanes: top.lanes, next: null, scanned: top.scanned } satisfies LanesReply;
        }
        return lanesPage(q, { after: query.get('after') ?? undefined, prefix: query.get('prefix') ?? undefined, limit: qnum(query.get('limit')) });
      }
      case 'latency': {
        const w = qnum(query.get('window'));
        return latency(t.client, q.keys, w === undefined ? 300 : v.integerIn('window', w, 60, 3600), redisTimeMs((await t.client.time()) as unknown as [string, string]));
      }
      case 'fairness': {
        const names = await t.client.zrangebylex(q.keys.lanes, '-', '+', 'LIMIT', 0, 1000);
        const [share, heads] = await Promise.all([laneShare(t.client, q.keys), laneHeads(t.client, q.keys, names)]);
        return { share, oldest: Object.fromEntries(heads) } satisfies FairnessReply;
      }
      case 'schedulers':
        return schedulersPage(q, qnum(query.get('offset')) ?? 0, qnum(query.get('limit')) ?? 20);
      case 'jobs': {
        const id = query.get('id');
        if (id !== null && id !== '') return findById(q, id);
        const name = query.get('name');
        if (name !== null && name !== '') {
          return searchByName(q, { name, state: query.get('state') ?? undefined, cursor: query.get('cursor') ?? undefined, limit: qnum(query.get('limit')) });
        }
        return jobsPage(q, {
          state: query.get('state') ?? undefined,
          lane: query.get('lane') ?? undefined,
          cursor: query.get('cursor') ?? undefined,
          limit: qnum(query.get('limit')),
        });
      }
    }
  }
  if (seg[2] === 'jobs' && seg.length === 4) return jobFull(q, seg[3]);
  throw notFound();
}

async function jobAction(q: Queue, id: string, action: string): Promise<unknown> {
  if (action === 'retry') return ops.retryJob(q, id);
  if (action === 'remove') {
    await ops.removeJob(q, id);
    return { ok: true };
  }
  if (action === 'promote') {
    const job = await q.getJob(id);
    if (!job) throw new HttpError(404, `job ${JSON.stringify(id)} not found in queue ${JSON.stringify(q.name)}`);
    await job.promote();
    return { ok: true };
  }
  throw notFound();
}

async function queueAction(q: Queue, action: string, body: Record<string, unknown>): Promise<unknown> {
  switch (action) {
    case 'pause':
    case 'resume':
      await ops.setPaused(q, action === 'pause');
      return { ok: true };
    case 'retry-failed':
      return ops.retryAllFailed(q);
    case 'promote-all':
      return { promoted: await q.promoteJobs({ count: body.count === undefined ? 1000 : v.integerIn('count', body.count, 1, 10_000) }) };
    case 'drain':
      return { removed: await ops.drain(q, { delayed: body.delayed === undefined ? false : v.boolean('delayed', body.delayed) }) };
    case 'clean': {
      const state = v.string('state', body.state);
      const grace = v.nonNegativeInt('graceMs', body.graceMs);
      const limit = body.limit === undefined ? 1000 : v.integerIn('limit', body.limit, 1, CLEAN_MAX);
      return { removed: (await ops.clean(q, grace, state, limit)).length };
    }
    case 'obliterate':
      // The page asks the operator to type the queue's name; the server checks it too.
      if (body.confirm !== q.name) v.fail('confirm', `the queue's name ${JSON.stringify(q.name)}`, body.confirm);
      await q.obliterate({ force: body.force === true });
      return { ok: true };
  }
  throw notFound();
}

export async function post(ctx: ApiContext, seg: string[], body: Record<string, unknown>): Promise<unknown> {
  if (seg[0] !== 'queues' || seg.length < 3) throw notFound();
  const q = await ops.openQueue(ctx.target, seg[1]);
  const action = seg[seg.length - 1];
  if (seg.length === 3) return queueAction(q, action, body);
  if (seg.length === 4 && seg[2] === 'jobs' && seg[3] === 'bulk') {
    const act = body.action;
    if (act !== 'retry' && act !== 'remove' && act !== 'promote') v.fail('action', '"retry", "remove" or "promote"', act);
    if (!Array.isArray(body.ids) || body.ids.length === 0 || body.ids.length > BULK_MAX) v.fail('ids', `an array of 1…${BULK_MAX} job ids`, body.ids);
    const ids = (body.ids as unknown[]).map((id) => v.nonEmptyString('ids[]', id));
    const reply: BulkReply = { done: [], failed: [] };
    for (const id of ids) {
      try {
        await jobAction(q, id, act as string);
        reply.done.push(id);
      } catch (err) {
        reply.failed.push({ id, error: (err as Error).message });
      }
    }
    return reply;
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
  if (seg.length === 5 && seg[2] === 'jobs' && action === 'priority') {
    await q.changePriority(seg[3], body.value as number);
    return { ok: true };
  }
  if (seg.length === 5 && seg[2] === 'jobs' && action === 'lane') {
    await q.moveToLane(seg[3], body.value as string);
    return { ok: true };
  }
  if (seg.length === 5 && seg[2] === 'jobs') return jobAction(q, seg[3], action);
  if (seg.length === 5 && seg[2] === 'schedulers' && action === 'remove') {
    if (!(await q.removeJobScheduler(seg[3]))) throw new HttpError(404, `job scheduler ${JSON.stringify(seg[3])} not found`);
    return { ok: true };
  }
  throw notFound();
}
