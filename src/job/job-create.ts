/**
 * Job's creation path: `Job.create`/`Job.createBulk` and `job.addJob`, through the one new-job
 * path (new-job.ts). job.ts hands in a JobMaker, so this file need not import Job (no cycle).
 */
import type { JobOptions } from '../core/options.js';
import { parseLogicalJobName } from '../core/keys.js';
import * as v from '../core/validate.js';
import { BULK_MISSING_PARENT_ID } from './cross-parents.js';
import { jobContextOf } from './job-state.js';
import type { JobContext } from './job-context.js';
import { addBatches, addJobs, addedJobHash, newJob } from './new-job.js';

/** How the creation path builds Jobs (job.ts passes Job's; one object, made once). */
export interface JobMaker<J> {
  /** A saved job from the hash it was added with, kept with the Queue or Worker it came through. */
  added(ctx: JobContext, id: string, h: Record<string, string>, queue: object): J;
  /** An unsaved job, as BullMQ's constructor makes it. */
  unsaved(queue: object, name: string, data: unknown, opts: JobOptions | undefined, id: string): J;
}

/** Job.create and createBulk: the new-job path; a bulk leaves out a job whose parent is missing (id -5), as BullMQ. */
export async function createJobs<J>(
  make: JobMaker<J>, queue: object, jobs: Array<{ name: string; data: unknown; opts?: JobOptions }>, bulk: boolean,
): Promise<J[]> {
  const ctx = jobContextOf(queue);
  if (!Array.isArray(jobs)) v.fail('jobs', 'an array of { name, data, opts }', jobs);
  const prepared = jobs.map((j, i) => {
    v.plainObject(`jobs[${i}]`, j);
    return newJob(ctx.keys, ctx.maxPayloadBytes, j.name, j.data, j.opts, undefined, jobs.length === 1 ? '' : `jobs[${i}].`).args;
  });
  const out: J[] = [];
  let i = 0;
  for (const batch of addBatches(prepared)) {
    const replies = await addJobs(ctx, batch);
    // A bulk add leaves out a job whose parent is missing and adds the others, as BullMQ's does.
    const failed = replies.find((r) => r.error && !(bulk && r.missingParent));
    if (failed) throw failed.error;
    replies.forEach((r, k) => {
      const j = jobs[i + k]!;
      if (!r.missingParent) return void out.push(make.added(ctx, r.id, addedJobHash(prepared[i + k]!), queue));
      const job = make.unsaved(queue, j.name, j.data, j.opts, String(BULK_MISSING_PARENT_ID));
      (job as { id: unknown }).id = BULK_MISSING_PARENT_ID;
      out.push(job);
    });
    i += batch.length;
  }
  return out;
}

/**
 * job.addJob: saves an unsaved job (BullMQ's addJob) and returns its id. `parentOpts.parentKey`
 * (BullMQ's logical name `<prefix>:<queue>:<id>`) makes it a child of that job, as `parent` does.
 */
export async function saveJob(ctx: JobContext, name: string, data: unknown, jobOpts: JobOptions, parentOpts?: { parentKey?: string }): Promise<string> {
  // BullMQ's constructor shows attempts 0 for "not given"; echomq's options want 1 or more.
  const { attempts, ...rest } = jobOpts;
  const opts: JobOptions = attempts ? { ...rest, attempts } : rest;
  const pk = parentOpts?.parentKey;
  if (pk !== undefined && opts.parent === undefined) {
    opts.parent = parseLogicalJobName(v.nonEmptyString('parentOpts.parentKey', pk, 4096)) ??
      v.fail('parentOpts.parentKey', "a job's logical name '<prefix>:<queue>:<id>'", pk);
  }
  const [r] = await addJobs(ctx, [newJob(ctx.keys, ctx.maxPayloadBytes, name, data, opts, undefined).args]);
  if (r.error) throw r.error;
  return r.id;
}
