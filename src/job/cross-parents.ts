/**
 * Adds that name a parent in another queue (another hash slot, so outside the add's own atomic
 * call). Used by the new-job path (new-job.ts addJobs) before its plain add.
 */
import { Code } from '../core/errors.js';
import { jobKey, queueKeys } from '../core/keys.js';
import { lifecycleScripts } from '../scripts/lifecycle.js';
import type { ScriptContext } from '../scripts/runner.js';
import type { AddJobArgs, AddReply, ParentArgs } from '../scripts/args.js';
import { missingParentError } from '../scripts/index.js';
import { MetaField } from '../core/fields.js';
import { execStamped, generatedId, layoutReady } from '../scripts/runner.js';

/**
 * The id BullMQ's addBulk gives a job whose parent is missing: its script's status code -5,
 * which its pipelined bulk add returns in place of an id (the other jobs are added).
 */
export const BULK_MISSING_PARENT_ID = -5;

/**
 * Adds jobs of which some name a parent in another queue (another hash slot, so not in the
 * add's own atomic call). Parents before children, as for flows: each such parent is checked
 * (a missing one fails its jobs with BullMQ's error and they are not sent), the children get
 * their generated ids first (one HINCRBY per call), are registered as pending dependencies of
 * their parents (addDependency.lua), and only then added; a child id that turns out to exist
 * already is withdrawn from its parent again. A crash between registration and add leaves the
 * parent waiting for a child that never came, as a crash in the middle of a cross-queue flow
 * does (docs/schedulers-and-flows.md).
 */
export async function registerCrossParents(
  ctx: ScriptContext,
  jobs: readonly AddJobArgs[],
  add: (jobs: readonly AddJobArgs[]) => Promise<AddReply[]>,
): Promise<AddReply[]> {
  const client = ctx.client;
  const cross = (j: AddJobArgs) => j.parent !== undefined && !j.parent.same;
  const parents = [...new Set(jobs.filter(cross).map((j) => j.parent!.key))];
  const exists = await Promise.all(parents.map((k) => client.exists(k)));
  const missing = new Set(parents.filter((_k, i) => exists[i] === 0));
  const errors = new Map<number, Error>();
  const send: AddJobArgs[] = [];
  const sentAt: number[] = [];
  const registered = new Set<number>();
  const needIds = jobs.filter((j) => cross(j) && !missing.has(j.parent!.key) && j.id === '').length;
  if (needIds > 0) await layoutReady(client, ctx.keys);
  let next = needIds > 0 ? Number(await execStamped(client.multi().hincrby(ctx.keys.meta, MetaField.lastId, needIds), ctx.keys)) - needIds + 1 : 0;
  const parentCtx = (p: ParentArgs) => ({ client, keys: queueKeys(p.queue, p.prefix) });
  for (let i = 0; i < jobs.length; i++) {
    let j = jobs[i]!;
    const p = j.parent;
    if (p && cross(j)) {
      if (missing.has(p.key)) {
        errors.set(i, missingParentError(p));
        continue;
      }
      if (j.id === '') j = { ...j, id: generatedId(next++, ctx.ids) };
      const r = await lifecycleScripts.addDependency(parentCtx(p), { parentId: p.id, childKey: jobKey(ctx.keys, j.id) });
      if (r === Code.NOT_FOUND) {
        errors.set(i, missingParentError(p));
        continue;
      }
      if (r === 1) registered.add(send.length);
    }
    send.push(j);
    sentAt.push(i);
  }
  const replies = send.length > 0 ? await add(send) : [];
  const out: AddReply[] = jobs.map((_j, i) => (errors.has(i) ? { id: '', created: false, error: errors.get(i), missingParent: true } : { id: '', created: false }));
  for (let k = 0; k < send.length; k++) {
    const j = send[k]!;
    const reply = replies[k]!;
    out[sentAt[k]!] = reply;
    // An existing job was returned, not added: it is no dependency of the parent after all.
    if (!reply.created && registered.has(k)) {
      await lifecycleScripts.resolveChild(parentCtx(j.parent!), { parentId: j.parent!.id, childKey: jobKey(ctx.keys, j.id), kind: 'd', value: '' });
    }
  }
  return out;
}
