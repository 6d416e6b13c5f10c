/**
 * Typed wrappers for the job-lifecycle scripts: flows (addFlow, resolveChild) and job
 * schedulers (upsertScheduler, advanceScheduler, removeScheduler). Same conventions as
 * `./index.ts`: named keys from each script's `-- KEYS:` header, named arguments, parsed replies.
 */
import { bindScript as call, type ScriptContext } from './runner.js';
import { keepArgs } from '../core/options.js';
import type { NewJobArgs } from './args.js';
import { Code, guardRefusal } from '../core/errors.js';
import { bindOnceScript, newRequestId } from './request-id.js';

// Applied once: the request id is their last ARGV (docs/protocol.md "Applied once").
const applied = {
  addFlow: bindOnceScript('addFlow'),
  addDependency: bindOnceScript('addDependency'),
  resolveChild: bindOnceScript('resolveChild'),
  removeScheduler: bindOnceScript('removeScheduler'),
};
const raw = {
  upsertScheduler: call('upsertScheduler'),
  advanceScheduler: call('advanceScheduler'),
};

export const LIFECYCLE_SCRIPT_NAMES = [...Object.keys(applied), ...Object.keys(raw)];

/** One job of a flow as addFlow takes it (every field validated by the caller). */
export interface FlowNodeArgs extends NewJobArgs {
  /** register: the parent exists outside the flow, in this queue: check it and count this job as its dependency. */
  parent?: { id: string; key: string; queue: string; prefix: string; register?: boolean };
  /** Creation time given by the user (ms); absent = the Redis clock. */
  timestamp?: number;
  /** 'f' failParentOnFailure, 'i' ignoreDependencyOnFailure, 'c' continueParentOnFailure, 'd' removeDependencyOnFailure, '' none. */
  policy: '' | 'f' | 'i' | 'c' | 'd';
  /** Job keys of its children (distinct). */
  children: string[];
}

/**
 * Child outcome kinds: completed, failed and ignored, failed and failing the parent, removed,
 * failed and starting the parent (continueParentOnFailure), failed and dropped from the
 * parent's dependencies (removeDependencyOnFailure).
 */
export type ChildOutcome = 'c' | 'i' | 'f' | 'r' | 'x' | 'd';

/** The job template of a scheduler, validated and encoded (id and delay come per slot). */
export type SchedulerTemplateArgs = Omit<NewJobArgs, 'id' | 'delay'>;

export interface SchedulerSlotReply {
  /** 1 a slot was set (job made or already there), 0 nothing to do, -1 no scheduler, 2 removed (no slot left). */
  status: number;
  slot?: number;
  jobId?: string;
  created?: boolean;
}

function parseSlot(r: unknown[]): SchedulerSlotReply {
  const status = Number(r[0]);
  if (status !== 1) return { status, slot: r[1] === undefined ? undefined : Number(r[1]) };
  return { status, slot: Number(r[1]), jobId: String(r[2]), created: Number(r[3]) === 1 };
}

const opt = (x: number | undefined): string | number => (x === undefined ? '' : x);

const FLOW_NODE = ['id', 'name', 'data', 'opts', 'priority', 'lane', 'delay', 'lifo', 'keepCompletedCount', 'keepCompletedAgeMs',
  'keepFailedCount', 'keepFailedAgeMs', 'parent id', 'parent key', 'parent queue', 'parent prefix', 'policy', 'timestamp', 'register', 'child count'];

/** addFlow.lua's name of ARGV position pos (1-based), walking the nodes of args. */
export function flowArgName(args: readonly unknown[], pos: number): string {
  let b = 2;
  for (let i = 0; i < Number(args[0]) && b <= args.length; i++) {
    const end = b + 20 + Number(args[b + 18]);
    if (pos < end) return pos - b < 20 ? `nodes[${i}].${FLOW_NODE[pos - b]}` : `nodes[${i}].children[${pos - b - 20}]`;
    b = end;
  }
  return pos === 1 ? 'node count' : 'request id';
}

export const lifecycleScripts = {
  /**
   * Returns ok (with the ids of existing leaves that were kept), or the id of a job that already
   * exists with children in the flow (-12) / whose parent is missing (-5) / that has another
   * parent (-7); then nothing was written.
   */
  async addFlow(
    ctx: ScriptContext, nodes: readonly FlowNodeArgs[], requestId = newRequestId(ctx.client),
  ): Promise<
    | { ok: true; existing: string[] }
    | { ok: false; existingId: string; code: typeof Code.CROSS_QUEUE_CHILDREN | typeof Code.MISSING_PARENT | typeof Code.OTHER_PARENT }
  > {
    const args: Array<string | number> = [nodes.length];
    for (const n of nodes) {
      const p = n.parent;
      args.push(n.id, n.name, n.data, n.opts, n.priority, n.lane, n.delay, n.lifo ? '1' : '0',
        ...keepArgs(n.keepCompleted), ...keepArgs(n.keepFailed),
        p?.id ?? '', p?.key ?? '', p?.queue ?? '', p?.prefix ?? '', n.policy, n.timestamp ?? '', p?.register ? '1' : '0',
        n.children.length, ...n.children);
    }
    // Applied once (docs/protocol.md "Applied once"): a resend answers from the first run's record.
    const r = (await applied.addFlow(ctx, args, requestId)) as unknown[];
    const refused = guardRefusal(r, args, 'addFlow', (pos) => flowArgName(args, pos));
    if (refused) throw refused;
    const code = Number(r[0]);
    if (code === Code.CROSS_QUEUE_CHILDREN || code === Code.MISSING_PARENT || code === Code.OTHER_PARENT) return { ok: false, existingId: String(r[1]), code };
    return { ok: true, existing: r.slice(1).map(String) };
  },

  /**
   * 1 registered, 0 already known, -1 no such parent. requestId: one per logical call (a resend
   * replies the first run's 1, not 0: the caller takes back only what it registered).
   */
  async addDependency(ctx: ScriptContext, a: { parentId: string; childKey: string; requestId?: string }): Promise<number> {
    return Number(await applied.addDependency(ctx, [a.parentId, a.childKey], a.requestId));
  },

  /**
   * status: 1 counted, 0 not pending (already counted or unknown), -1 no such parent.
   * requestId: as addDependency (a resend replies the first run's status and outboxWritten).
   */
  async resolveChild(
    ctx: ScriptContext,
    a: { parentId: string; childKey: string; kind: ChildOutcome; value: string; requestId?: string },
  ): Promise<{ status: number; outboxWritten: boolean }> {
    const r = (await applied.resolveChild(ctx, [a.parentId, a.childKey, a.kind, a.value], a.requestId)) as unknown[];
    return { status: Number(r[0]), outboxWritten: Number(r[1]) === 1 };
  },

  /**
   * A retried child back to its parent's pending dependencies (resolveChild.lua kind p):
   * the entry it had ('' when nothing changed); `undo` puts that entry back (kind u).
   */
  async reopenChild(ctx: ScriptContext, a: { parentId: string; childKey: string; undo?: string }): Promise<string> {
    const r = (await applied.resolveChild(ctx, [a.parentId, a.childKey, a.undo === undefined ? 'p' : 'u', a.undo ?? ''])) as unknown[];
    return r[2] === undefined ? '' : String(r[2]);
  },

  async upsertScheduler(
    ctx: ScriptContext,
    a: {
      id: string; every?: number; pattern?: string; tz?: string; startDate?: number; endDate?: number;
      limit?: number; offset?: number; firstCronSlot?: number; template: SchedulerTemplateArgs;
    },
  ): Promise<SchedulerSlotReply> {
    const t = a.template;
    const args = [
      a.id, opt(a.every), a.pattern ?? '', a.tz ?? '', opt(a.startDate), opt(a.endDate), opt(a.limit), opt(a.firstCronSlot),
      t.name, t.data, t.opts, t.priority, t.lane, t.lifo ? '1' : '0',
      ...keepArgs(t.keepCompleted), ...keepArgs(t.keepFailed), opt(a.offset),
    ];
    const r = (await raw.upsertScheduler(ctx, args)) as unknown[];
    const refused = guardRefusal(r, args, 'upsertScheduler', (pos) => `argument ${pos}`);
    if (refused) throw refused;
    return Number(r[0]) === 0 ? { status: 2 } : parseSlot(r);
  },

  async advanceScheduler(
    ctx: ScriptContext,
    a: { id: string; version: string; next: string; nextCronSlot?: number },
  ): Promise<SchedulerSlotReply> {
    return parseSlot((await raw.advanceScheduler(ctx, [a.id, a.version, a.next, opt(a.nextCronSlot)])) as unknown[]);
  },

  /** Applied once (request id last): a resend replies the first run's true. */
  removeScheduler: async (ctx: ScriptContext, id: string, rid?: string): Promise<boolean> =>
    Number(await applied.removeScheduler(ctx, [id], rid)) === 1,
};
