/**
 * FlowProducer: adds trees of jobs whose parents wait for their children (BullMQ's flows).
 *
 *   const flow = new FlowProducer({ connection });
 *   const tree = await flow.add({ name: 'report', queueName: 'reports', children: [
 *     { name: 'part', queueName: 'parts', data: { n: 1 } },
 *     { name: 'part', queueName: 'parts', data: { n: 2 } },
 *   ] });
 *
 * A job with children enters `waiting-children`; when the last child completes it becomes
 * ready (or delayed, by its own `delay`), and `job.getChildrenValues()` gives it the children's
 * return values. All jobs of one queue are added by one atomic script call (`addFlow.lua`), so
 * a flow within one queue is all-or-nothing. A flow across queues is added queue part by queue
 * part, every parent before its children; see docs/schedulers-and-flows.md for what a crash in
 * the middle leaves and for the eventually-consistent completion path between queues.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { closeConnection, openConnection, type Connection, type ConnectionInput, type RedisClient } from '../core/connection.js';
import { ClosedError, InvalidStateError, ValidationError, reportError, Code } from '../core/errors.js';
import { Job, type JobContext } from '../job/job.js';
import { withBullText } from '../job/job-state.js';
import { DEFAULT_PREFIX, jobKey, parseJobKey, queueKeys, type QueueKeys } from '../core/keys.js';
import { DEFAULT_MAX_PAYLOAD, normalizeJobOptions, type JobOptions, type QueueCompatOptions } from '../core/options.js';
import { drainOutbox, readDependencies, type ParentArgs } from '../job/flows.js';
import { addJobs, newJob, newJobHash, type NewJob } from '../job/new-job.js';
import { lifecycleScripts, type FlowNodeArgs } from '../scripts/lifecycle.js';
import { missingParentError, type AddJobArgs } from '../scripts/index.js';
import { deriveRequestId, newRequestId, retryLost } from '../scripts/request-id.js';
import * as v from '../core/validate.js';
import { JobStateCode } from '../core/fields.js';
import { connectionError } from '../core/connection-wait.js';

/**
 * Job options in a flow: the usual ones, with BullMQ's rules — `deduplication` only on a flow
 * that is a single job (no children, no parent), `parent` only on a root (it attaches the
 * flow to an existing job). The failure policies (failParentOnFailure, continueParentOnFailure,
 * ignoreDependencyOnFailure, removeDependencyOnFailure) are in JobOptions.
 */
export type FlowJobOptions = JobOptions;

export interface FlowJob<D = any> {
  name: string;
  queueName: string;
  /** Job data. Default `{}`. */
  data?: D;
  /** Key prefix of this job's queue. Default: the FlowProducer's. */
  prefix?: string;
  opts?: FlowJobOptions;
  children?: FlowJob[];
}

/** BullMQ's FlowOpts: per queue name, Queue options whose defaultJobOptions apply to that queue's nodes. */
export interface FlowOpts {
  queuesOptions?: Record<string, { defaultJobOptions?: JobOptions; [k: string]: unknown }>;
}

export interface JobNode {
  job: Job;
  children?: JobNode[];
}

export interface FlowProducerOptions extends Pick<QueueCompatOptions, 'blockingConnection' | 'skipVersionCheck' | 'skipWaitingForReady' | 'telemetry'> {
  /** Redis URL, ioredis options, or an ioredis client (used as is, not closed by echomq). */
  connection?: ConnectionInput;
  /** Key prefix. Default 'emq'. */
  prefix?: string;
  /** Largest JSON payload (data) in bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
}

/** Most jobs in one flow (all trees of one addBulk together). */
export const MAX_FLOW_JOBS = 10_000;
/** Deepest flow: a root and up to 63 generations below it. */
export const MAX_FLOW_DEPTH = 64;

interface Prepared {
  args: FlowNodeArgs;
  keys: QueueKeys;
  key: string;
  parent?: Prepared;
  /** A root's parent outside the flow (BullMQ's `parent` option on the root). */
  external?: ParentArgs;
  children: Prepared[];
  field: string;
  /** A single-job flow with deduplication: added through add.lua, which deduplicates. */
  dedup?: AddJobArgs;
}

/** An existing job given children in another queue, or an existing root with an outside parent: not attached by echomq. */
function existsError(id: string): InvalidStateError {
  return new InvalidStateError(id, 'FlowProducer.add',
    'already exists; an existing job of a flow may have children only in its own queue, and an existing root no outside parent');
}

/** An existing leaf of the flow that has another parent which still exists (BullMQ's text, then echomq's). */
function parentReplacedError(p: Prepared): InvalidStateError {
  const parent = p.args.parent!;
  const logical = `${parent.prefix}:${parent.queue}:${parent.id}`;
  return withBullText(new InvalidStateError(p.args.id, 'FlowProducer.add', 'already exists as the child of another parent that still exists'),
    `The parent job ${logical} cannot be replaced. addJob`);
}

function dedupWithChildrenError(field: string, value: unknown): never {
  v.failAs('Deduplication options cannot be used on flow nodes with children', field, 'absent on a job with children', value);
}

/** BullMQ's first check of a flow: no node with children has a deduplication option, at any depth. */
function refuseDedupWithChildren(node: unknown, field: string, depth = 0): void {
  if (node === null || typeof node !== 'object' || depth > 1000) return; // the shape is prepare's to check
  const { opts, children } = node as { opts?: unknown; children?: unknown };
  if (!Array.isArray(children) || children.length === 0) return;
  const dd = opts !== null && typeof opts === 'object' ? (opts as { deduplication?: unknown }).deduplication : undefined;
  if (dd) dedupWithChildrenError(`${field}.opts.deduplication`, dd);
  children.forEach((c, i) => refuseDedupWithChildren(c, `${field}.children[${i}]`, depth + 1));
}

const FLOW_NODE_KEYS = new Set(['name', 'queueName', 'data', 'prefix', 'opts', 'children']);

export class FlowProducer extends EventEmitter {
  readonly opts: FlowProducerOptions;
  private readonly conn: Connection;
  private readonly prefix: string;
  private readonly maxPayloadBytes: number;
  private closed = false;

  constructor(opts: FlowProducerOptions = {}) {
    super();
    v.plainObject('opts', opts);
    this.prefix = opts.prefix === undefined ? DEFAULT_PREFIX : v.prefix(opts.prefix);
    this.maxPayloadBytes = opts.maxPayloadBytes === undefined ? DEFAULT_MAX_PAYLOAD : v.positiveInt('maxPayloadBytes', opts.maxPayloadBytes);
    this.opts = opts;
    this.conn = openConnection(opts.connection);
    // BullMQ's FlowProducer events: 'error' for connection errors, 'ioredis:close'.
    if (this.conn.owned) {
      this.conn.client.on('error', (err: Error) => reportError(this, 'flow producer', connectionError(this.conn.client, err)));
    }
    this.conn.client.on('close', () => this.emit('ioredis:close'));
  }

  get client() {
    return this.conn.client;
  }

  /** BullMQ's logical key of a queue structure: `<prefix>:<queue name>:<type>` (a name, not a Redis key). */
  toKey(name: string, type: string): string {
    return `${this.prefix}:${name}:${type}`;
  }

  /** The RedisConnection held (BullMQ's protected `connection`). */
  protected get connection(): Connection {
    return this.conn;
  }

  /** Resolves to the client once the connection is ready; rejects with the error that kept it from connecting. */
  async waitUntilReady(): Promise<RedisClient> {
    if (this.closed) throw new ClosedError('FlowProducer');
    return this.conn.initializing;
  }

  private ctxFor(keys: QueueKeys): JobContext {
    return { client: this.conn.client, keys, maxPayloadBytes: this.maxPayloadBytes, keepLogs: 0 };
  }

  /**
   * Adds one tree. Validates every node before writing anything. `opts.queuesOptions`: per
   * queue name, defaultJobOptions for that queue's nodes (BullMQ's FlowOpts).
   */
  async add(flow: FlowJob, opts?: FlowOpts): Promise<JobNode> {
    const [node] = await this.addTrees([flow], 'flow', opts);
    return node;
  }

  /** Adds several trees (each validated before any is written). */
  async addBulk(flows: readonly FlowJob[]): Promise<JobNode[]> {
    if (!Array.isArray(flows)) v.fail('flows', 'an array of flow jobs', flows);
    return this.addTrees(flows, undefined, undefined);
  }

  private async addTrees(flows: readonly FlowJob[], field: string | undefined, opts: FlowOpts | undefined): Promise<JobNode[]> {
    if (this.closed) throw new ClosedError('FlowProducer');
    const defaults = opts === undefined ? undefined : this.queueDefaults(opts);
    const seen = new Set<string>();
    // BullMQ checks every tree for this before anything else, so its text wins over the others.
    flows.forEach((f, i) => refuseDedupWithChildren(f, field ?? `flows[${i}]`));
    const roots = flows.map((f, i) => this.prepare(f, field ?? `flows[${i}]`, undefined, 1, seen, defaults));
    const treeOf = (r: Prepared): Prepared[] => {
      const queue: Prepared[] = [r];
      for (let i = 0; i < queue.length; i++) queue.push(...queue[i].children);
      return queue;
    };
    const order: Prepared[] = [];
    for (const r of roots) if (!r.dedup) order.push(...treeOf(r));
    await this.checkExternalParents(roots);
    // One request id for the logical add; each of its script calls gets a part of it.
    const rid = newRequestId(this.conn.client);
    // Parents before children: a root's parent in another queue counts it before it exists.
    const registered = await this.registerExternal(roots, rid);
    try {
      if (order.length > 0) await this.write(order, rid);
    } catch (err) {
      await this.unregisterExternal(registered, rid);
      throw err;
    }
    return Promise.all(roots.map((r) => (r.dedup ? this.addDeduplicated(r) : this.toNode(r))));
  }

  private queueDefaults(opts: FlowOpts): Map<string, JobOptions> {
    const o = v.plainObject('opts', opts);
    const out = new Map<string, JobOptions>();
    if (o.queuesOptions === undefined) return out;
    const qo = v.plainObject('opts.queuesOptions', o.queuesOptions);
    for (const [name, q] of Object.entries(qo)) {
      const d = v.plainObject(`opts.queuesOptions.${name}`, q).defaultJobOptions;
      if (d === undefined) continue;
      normalizeJobOptions(d, `opts.queuesOptions.${name}.defaultJobOptions`);
      out.set(name, d as JobOptions);
    }
    return out;
  }

  private prepare(
    node: unknown, field: string, parent: Prepared | undefined, depth: number, seen: Set<string>, defaults: Map<string, JobOptions> | undefined,
  ): Prepared {
    if (depth > MAX_FLOW_DEPTH) v.fail(field, `a flow at most ${MAX_FLOW_DEPTH} levels deep`, node);
    if (seen.size >= MAX_FLOW_JOBS) v.fail(field, `part of a flow of at most ${MAX_FLOW_JOBS} jobs`, node);
    const o = v.plainObject(field, node);
    for (const k of Object.keys(o)) {
      if (!FLOW_NODE_KEYS.has(k)) v.fail(`${field}.${k}`, `one of the known fields (${[...FLOW_NODE_KEYS].join(', ')})`, k);
    }
    const name = v.string(`${field}.name`, o.name);
    const queueName = v.queueName(o.queueName, `${field}.queueName`);
    const prefix = o.prefix === undefined ? this.prefix : v.prefix(o.prefix);
    const given = o.opts === undefined ? {} : v.plainObject(`${field}.opts`, o.opts);
    const dflt = defaults?.get(queueName);
    const userOpts: Record<string, unknown> = dflt ? { ...dflt, ...given } : { ...given };
    const hasChildren = Array.isArray(o.children) && o.children.length > 0;
    // BullMQ deduplicates a flow that is one job, not a tree (refuseDedupWithChildren) nor a job below a parent.
    if (parent && userOpts.parent !== undefined) v.fail(`${field}.opts.parent`, 'absent below the root (the tree sets it)', userOpts.parent);
    const dd = userOpts.deduplication as { keepLastIfActive?: unknown } | undefined;
    if ((parent || userOpts.parent !== undefined) && dd && typeof dd === 'object' && dd.keepLastIfActive) {
      v.failAs('keepLastIfActive deduplication cannot be used on flow nodes with a parent', `${field}.opts.deduplication.keepLastIfActive`, 'absent on a job with a parent', dd.keepLastIfActive);
    }
    if (parent && userOpts.deduplication !== undefined) {
      v.failAs('Deduplication and parent options cannot be used together', `${field}.opts.deduplication`, 'absent on a job with a parent', userOpts.deduplication);
    }
    const keys = queueKeys(queueName, prefix);
    let job: NewJob;
    try {
      job = newJob(keys, this.maxPayloadBytes, name, o.data === undefined ? {} : o.data, userOpts, undefined, `${field}.`);
    } catch (e) {
      // Option checks name the bare option ('priority'); in a flow, say which node it was.
      if (e instanceof ValidationError && !e.field.startsWith(field)) throw v.renamed(e, `${field}.opts.${e.field}`);
      throw e;
    }
    const { n, args: a } = job;
    // group.maxSize is checked by the add script only (BullMQ Pro has it on add alone).
    if (n.groupMaxSize !== undefined) v.fail(`${field}.opts.group.maxSize`, 'absent (flow jobs are not limited by group size)', n.groupMaxSize);
    const id = n.jobId ?? randomUUID();
    const key = jobKey(keys, id);
    if (seen.has(key)) v.fail(`${field}.opts.jobId`, 'an id used once in the flow (per queue)', id);
    seen.add(key);
    const args: FlowNodeArgs = {
      id, name, data: a.data, opts: a.opts, priority: a.priority, lane: a.lane, delay: a.delay,
      lifo: a.lifo, keepCompleted: a.keepCompleted, keepFailed: a.keepFailed,
      policy: n.policy, children: [], timestamp: n.timestamp,
    };
    const p: Prepared = { args, keys, key, parent, children: [], field };
    if (parent) {
      args.parent = { id: parent.args.id, key: parent.key, queue: parent.keys.queue, prefix: parent.keys.prefix };
    } else if (a.parent) {
      const ext = a.parent;
      p.external = ext;
      args.parent = { id: ext.id, key: ext.key, queue: ext.queue, prefix: ext.prefix, register: ext.same };
    }
    // Also a deduplication that comes from the queue's defaultJobOptions (BullMQ looks at the node's own opts).
    if (n.deduplication && hasChildren) dedupWithChildrenError(`${field}.opts.deduplication`, userOpts.deduplication);
    if (n.deduplication && !parent && !hasChildren) p.dedup = a;
    if (o.children !== undefined) {
      if (!Array.isArray(o.children)) v.fail(`${field}.children`, 'an array of flow jobs', o.children);
      o.children.forEach((c, i) => p.children.push(this.prepare(c, `${field}.children[${i}]`, p, depth + 1, seen, defaults)));
      args.children = p.children.map((c) => c.key);
    }
    return p;
  }

  /** A root attached to an existing job of another queue: that job must exist (BullMQ's error otherwise). */
  private async checkExternalParents(roots: Prepared[]): Promise<void> {
    for (const r of roots) {
      const ext = r.external;
      if (ext && !ext.same && (await this.conn.client.exists(ext.key)) === 0) throw missingParentError(ext);
    }
  }

  /** Registers roots with an external parent in another queue as its pending dependencies (request id parts r0, r1, ...). */
  private async registerExternal(roots: Prepared[], rid: string): Promise<Prepared[]> {
    const done: Prepared[] = [];
    for (const [i, r] of roots.entries()) {
      const ext = r.external;
      if (!ext || ext.same || r.dedup) continue;
      const requestId = deriveRequestId(rid, `r${i}`);
      const ctx = { client: this.conn.client, keys: queueKeys(ext.queue, ext.prefix) };
      const res = await retryLost(() => lifecycleScripts.addDependency(ctx, { parentId: ext.id, childKey: r.key, requestId }));
      if (res === Code.NOT_FOUND) {
        await this.unregisterExternal(done, rid);
        throw missingParentError(ext);
      }
      if (res === 1) done.push(r);
    }
    return done;
  }

  /** Takes back registrations of roots that were not written after all (parts u0, u1, ...). */
  private async unregisterExternal(roots: Prepared[], rid: string): Promise<void> {
    for (const [i, r] of roots.entries()) {
      const ext = r.external!;
      const requestId = deriveRequestId(rid, `u${i}`);
      const ctx = { client: this.conn.client, keys: queueKeys(ext.queue, ext.prefix) };
      await retryLost(() => lifecycleScripts.resolveChild(ctx, { parentId: ext.id, childKey: r.key, kind: 'd', value: '', requestId }));
    }
  }

  /** A single-job flow with deduplication, added like Queue.add adds it. */
  private async addDeduplicated(r: Prepared): Promise<JobNode> {
    const ctx = this.ctxFor(r.keys);
    const [reply] = await addJobs(ctx, [r.dedup!]);
    if (reply.error) throw reply.error;
    const job = reply.created ? undefined : await Job.fromId(ctx, reply.id);
    if (job) return { job };
    r.args.id = reply.id;
    return this.toNode(r);
  }

  /**
   * Writes the nodes, given parents first, in as few calls as possible: one call per queue part
   * whose parents are already written (one call in all for a single-queue flow). Part n is
   * sent under request id `<rid>/<n>` and sent again with it while its outcome is unknown, so
   * a lost reply neither leaves the flow half written nor writes a part twice.
   */
  private async write(order: Prepared[], rid: string): Promise<void> {
    const client = this.conn.client;
    let remaining = order;
    const written = new Set<Prepared>();
    const multiCall = new Set(order.map((p) => p.keys.base)).size > 1;
    if (multiCall) {
      // Narrow the window for a half-written flow: refuse existing ids that addFlow.lua refuses
      // (a job with children in another queue, a root attached to an outside parent) before
      // writing any part.
      const exists = await Promise.all(order.map((p) => client.exists(p.key)));
      const refused = (p: Prepared) => p.external !== undefined || p.children.some((c) => c.keys.base !== p.keys.base);
      const i = exists.findIndex((e, k) => e === 1 && refused(order[k]));
      if (i >= 0) throw existsError(order[i].args.id);
    }
    let part = 0;
    while (remaining.length > 0) {
      const base = remaining[0].keys.base;
      const batch: Prepared[] = [];
      const inBatch = new Set<Prepared>();
      for (const p of remaining) {
        if (p.keys.base === base && (!p.parent || written.has(p.parent) || inBatch.has(p.parent))) {
          batch.push(p);
          inBatch.add(p);
        }
      }
      const requestId = deriveRequestId(rid, part++);
      const nodes = batch.map((p) => p.args);
      const r = await retryLost(() => lifecycleScripts.addFlow({ client, keys: batch[0].keys }, nodes, requestId));
      if (!r.ok) {
        const node = batch.find((p) => p.args.id === r.existingId)!;
        if (r.code === Code.MISSING_PARENT) throw missingParentError(node.external!);
        if (r.code === Code.OTHER_PARENT) throw parentReplacedError(node);
        throw existsError(r.existingId);
      }
      // An existing completed leaf told its new parent in another queue through this queue's
      // outbox: deliver that now, so the parent does not wait for a worker's sweep.
      if (r.existing.length > 0 && batch.some((p) => p.parent && p.parent.keys.base !== p.keys.base)) await drainOutbox(client, batch[0].keys);
      for (const p of batch) written.add(p);
      remaining = remaining.filter((p) => !inBatch.has(p));
    }
  }

  private toNode(p: Prepared): JobNode {
    const a = p.args;
    const state = a.children.length > 0 ? JobStateCode.waitingChildren : a.delay > 0 ? JobStateCode.delayed : JobStateCode.ready;
    const h = newJobHash(a, state, a.parent && { ...a.parent, policy: a.policy });
    const job = Job.fromHash(this.ctxFor(p.keys), a.id, h);
    return p.children.length > 0 ? { job, children: p.children.map((c) => this.toNode(c)) } : { job };
  }

  /**
   * Reads a flow back from Redis, as BullMQ's getFlow: the job and its children down to `depth`
   * levels counting the root (default 10; depth 1 = the root alone), at most `maxChildren` per
   * parent (default 20). Children whose jobs are gone (retention) are left out; undefined when
   * the root does not exist.
   */
  async getFlow(opts: { id: string; queueName: string; prefix?: string; depth?: number; maxChildren?: number }): Promise<JobNode | undefined> {
    v.plainObject('opts', opts);
    const id = v.existingJobId(opts.id, 'id');
    const queueName = v.queueName(opts.queueName, 'queueName');
    const prefix = opts.prefix === undefined ? this.prefix : v.prefix(opts.prefix);
    const depth = opts.depth === undefined ? 10 : v.integerIn('depth', opts.depth, 0, MAX_FLOW_DEPTH + 1);
    const maxChildren = opts.maxChildren === undefined ? 20 : v.positiveInt('maxChildren', opts.maxChildren);
    return this.readNode(queueKeys(queueName, prefix), id, depth, maxChildren);
  }

  private async readNode(keys: QueueKeys, id: string, depth: number, maxChildren: number): Promise<JobNode | undefined> {
    const job = await Job.load(this.ctxFor(keys), id);
    if (!job) return undefined;
    if (depth <= 1) return { job };
    const d = await readDependencies(this.conn.client, keys, id);
    // BullMQ's order and cap: processed, unprocessed, failed, ignored, each up to maxChildren.
    const childKeys = [
      ...Object.keys(d.processed).slice(0, maxChildren), ...d.unprocessed.slice(0, maxChildren),
      ...Object.keys(d.failed).slice(0, maxChildren), ...Object.keys(d.ignored).slice(0, maxChildren),
    ];
    const children: JobNode[] = [];
    for (const ck of childKeys) {
      const parsed = parseJobKey(ck);
      if (!parsed) continue;
      const child = await this.readNode(queueKeys(parsed.queue, parsed.prefix), parsed.id, depth - 1, maxChildren);
      if (child) children.push(child);
    }
    return children.length > 0 ? { job, children } : { job };
  }

  /** Closes the connection at once without waiting for pending replies. */
  async disconnect(): Promise<void> {
    this.closed = true;
    await closeConnection(this.conn, true);
  }

  /** Set by close(): resolves when it finished (BullMQ's FlowProducer.closing). */
  closing: Promise<void> | undefined;

  /** Closes the connection if this producer opened it. Idempotent. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.closing = closeConnection(this.conn);
    return this.closing;
  }
}

