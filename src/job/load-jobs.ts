/** Jobs of a queue by state or id, loaded in pages (the Job-building half of the read side; ids come from src/ops/inspect.ts). */
import { jobKey } from '../core/keys.js';
import * as v from '../core/validate.js';
import { rangeArgs, rangeIds, validateStates, RANGE_PAGE, type ListKind } from '../ops/inspect.js';
import { Job } from './job.js';
import type { JobContext } from './job-context.js';
import { MetaField } from '../core/fields.js';

/**
 * Jobs in the given states, the operator's view (CLI, dashboard, clean): `paused` lists the
 * priority-0 ready jobs of a paused queue and `waiting` those of a running one. For each state
 * the window start…end (Redis range semantics) of that state's order (see rangeIds) is taken,
 * ascending with asc=true, reversed otherwise.
 */
export async function getJobs(
  ctx: JobContext,
  states: readonly unknown[] = [],
  start = 0,
  end = -1,
  asc = false,
): Promise<Job[]> {
  const wanted = validateStates(states);
  const [s0, e0] = rangeArgs(start, end);
  v.boolean('asc', asc);
  const { client, keys } = ctx;
  const paused = (await client.hget(keys.meta, MetaField.paused)) === '1';
  const ids: string[] = [];
  for (const s of wanted) {
    if ((s === 'waiting' && paused) || (s === 'paused' && !paused)) continue;
    const kind: ListKind = s === 'waiting' || s === 'paused' ? 'ready' : s === 'prioritized' ? 'readyP' : s === 'waiting-children' ? 'wchildren' : s;
    for (const id of await rangeIds(client, keys, kind, s0, e0, asc)) ids.push(id);
  }
  return loadJobs(ctx, ids);
}

export async function loadJobs(ctx: JobContext, ids: readonly string[]): Promise<Job[]> {
  const jobs: Job[] = [];
  // One pipeline per RANGE_PAGE jobs: Redis never buffers the replies of a huge listing at once.
  for (let from = 0; from < ids.length; from += RANGE_PAGE) {
    const page = ids.slice(from, from + RANGE_PAGE);
    const p = ctx.client.pipeline();
    for (const id of page) p.hgetall(jobKey(ctx.keys, id));
    const r = (await p.exec())!;
    r.forEach(([err, h], i) => {
      if (!err && h && Object.keys(h as object).length > 0) jobs.push(Job.fromHash(ctx, page[i], h as Record<string, string>));
    });
  }
  return jobs;
}

