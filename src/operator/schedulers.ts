/**
 * Operator views of a queue's job schedulers (list, show, remove) and of the workers connected
 * to it. Reads and the removal go through the public Queue API, so they validate and stay
 * atomic like any user call; listings read one bounded page.
 */
import type { Queue } from '../queue/queue.js';
import type { JobSchedulerJson } from '../lifecycle/schedulers.js';
import * as v from '../core/validate.js';
import { NotFoundError } from './target.js';

/** Schedulers soonest next slot first, `limit` from `offset`, and whether more follow. */
export async function listSchedulers(
  q: Queue, opts: { offset?: number; limit?: number } = {},
): Promise<{ schedulers: JobSchedulerJson[]; total: number; more: boolean }> {
  const limit = opts.limit === undefined ? 50 : v.integerIn('limit', opts.limit, 1, 10_000);
  const offset = opts.offset === undefined ? 0 : v.nonNegativeInt('offset', opts.offset);
  const [schedulers, total] = await Promise.all([q.getJobSchedulers(offset, offset + limit - 1, true), q.getJobSchedulersCount()]);
  return { schedulers, total, more: offset + schedulers.length < total };
}

export async function showScheduler(q: Queue, id: string): Promise<JobSchedulerJson> {
  const s = await q.getJobScheduler(id);
  if (!s) throw new NotFoundError(`job scheduler ${JSON.stringify(id)} not found in queue ${JSON.stringify(q.name)} (see: echomq schedulers ${q.name})`);
  return s;
}

/** Removes the scheduler and its waiting next job; an unknown id is refused, not ignored. */
export async function removeScheduler(q: Queue, id: string): Promise<void> {
  v.nonEmptyString('id', id);
  if (!(await q.removeJobScheduler(id))) {
    throw new NotFoundError(`job scheduler ${JSON.stringify(id)} not found in queue ${JSON.stringify(q.name)} (see: echomq schedulers ${q.name})`);
  }
}

export interface WorkerRow {
  /** The worker's `name` option, or null when it has none. */
  name: string | null;
  /** host:port of the worker's connection, as Redis sees it. */
  addr: string;
  /** Seconds since the connection was made. */
  age: number;
  /** Seconds since its last command (a waiting worker blocks, so this grows while it waits). */
  idle: number;
  /** The connection's name in CLIENT LIST. */
  rawname: string;
}

/**
 * Worker connections of the queue (Queue.getWorkers: one CLIENT LIST). `name` is what follows
 * the queue's `:w:` client-name suffix; a server without CLIENT LIST gives no rows.
 */
export async function listWorkers(q: Queue): Promise<WorkerRow[]> {
  const marker = `${q.clientName()}:w:`;
  return (await q.getWorkers())
    .filter((c) => c.rawname !== undefined)
    .map((c) => ({
      name: c.rawname.startsWith(marker) ? c.rawname.slice(marker.length) : null,
      addr: c.addr ?? '',
      age: Number(c.age ?? 0),
      idle: Number(c.idle ?? 0),
      rawname: c.rawname,
    }));
}
