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
import { closeConnection, openConnection, type Connection, type ConnectionInput } from './connection.js';
import { ClosedError, InvalidStateError } from './errors.js';
import { Job, type JobContext } from './job.js';
import { DEFAULT_PREFIX, jobKey, queueKeys, unescapeQueueName, type QueueKeys } from './keys.js';
import { DEFAULT_MAX_PAYLOAD, normalizeJobOptions, storedOptions, type JobOptions } from './options.js';
import { readDependencies } from './flows.js';
import { lifecycleScripts, type FlowNodeArgs } from './scripts/lifecycle.js';
import * as v from './validate.js';

/** Job options in a flow: the usual ones (but deduplication) plus the child failure policies. */
export interface FlowJobOptions extends Omit<JobOptions, 'deduplication'> {
  /** When this child fails for good, its parent fails at once (and so on up the tree, where set). */
  failParentOnFailure?: boolean;
  /** When this child fails for good, its parent counts it as done (its reason is kept as ignored). */
  ignoreDependencyOnFailure?: boolean;
}

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

export interface JobNode {
  job: Job;
  children?: JobNode[];
}

export interface FlowProducerOptions {
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
  children: Prepared[];
  field: string;
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
  }

  get client() {
    return this.conn.client;
  }

  private ctxFor(keys: QueueKeys): JobContext {
    return { client: this.conn.client, keys, maxPayloadBytes: this.maxPayloadBytes, keepLogs: 0 };
  }

  /** Adds one tree. Validates every node before writing anything. */
  async add(flow: FlowJob): Promise<JobNode> {
    const [node] = await this.addBulk([flow]);
    return node;
  }

  /** Adds several trees (each validated before any is written). */
  async addBulk(flows: readonly FlowJob[]): Promise<JobNode[]> {
    if (this.closed) throw new ClosedError('FlowProducer');
    if (!Array.isArray(flows)) v.fail('flows', 'an array of flow jobs', flows);
    const seen = new Set<string>();
    const roots = flows.map((f, i) => this.prepare(f, flows.length === 1 ? 'flow' : `flows[${i}]`, undefined, 1, seen));
    const order: Prepared[] = [];
    for (const r of roots) {
      const queue: Prepared[] = [r];
      for (let i = 0; i < queue.length; i++) {
        order.push(queue[i]);
        queue.push(...queue[i].children);
      }
    }
    await this.write(order);
    return roots.map((r) => this.toNode(r));
  }

  private prepare(node: unknown, field: string, parent: Prepared | undefined, depth: number, seen: Set<string>): Prepared {
    if (depth > MAX_FLOW_DEPTH) v.fail(field, `a flow at most ${MAX_FLOW_DEPTH} levels deep`, node);
    if (seen.size >= MAX_FLOW_JOBS) v.fail(field, `part of a flow of at most ${MAX_FLOW_JOBS} jobs`, node);
    const o = v.plainObject(field, node);
    for (const k of Object.keys(o)) {
      if (!FLOW_NODE_KEYS.has(k)) v.fail(`${field}.${k}`, `one of the known fields (${[...FLOW_NODE_KEYS].join(', ')})`, k);
    }
    const name = v.string(`${field}.name`, o.name);
    const queueName = v.queueName(o.queueName, `${field}.queueName`);
    const prefix = o.prefix === undefined ? this.prefix : v.prefix(o.prefix);
    const userOpts = o.opts === undefined ? {} : { ...v.plainObject(`${field}.opts`, o.opts) };
    const fpof = userOpts.failParentOnFailure === undefined ? false : v.boolean(`${field}.opts.failParentOnFailure`, userOpts.failParentOnFailure);
    const idof = userOpts.ignoreDependencyOnFailure === undefined ? false : v.boolean(`${field}.opts.ignoreDependencyOnFailure`, userOpts.ignoreDependencyOnFailure);
    if (fpof && idof) v.fail(`${field}.opts`, 'at most one of failParentOnFailure and ignoreDependencyOnFailure', userOpts);
    if (userOpts.deduplication !== undefined) v.fail(`${field}.opts.deduplication`, 'absent (flow jobs are not deduplicated)', userOpts.deduplication);
    const plain: Record<string, unknown> = { ...userOpts };
    delete plain.failParentOnFailure;
    delete plain.ignoreDependencyOnFailure;
    const n = normalizeJobOptions(plain, `${field}.opts`);
    // group.maxSize is checked by the add script only (BullMQ Pro has it on add alone).
    if (n.groupMaxSize !== undefined) v.fail(`${field}.opts.group.maxSize`, 'absent (flow jobs are not limited by group size)', n.groupMaxSize);
    const id = n.jobId ?? randomUUID();
    const keys = queueKeys(queueName, prefix);
    const key = jobKey(keys, id);
    if (seen.has(key)) v.fail(`${field}.opts.jobId`, 'an id used once in the flow (per queue)', id);
    seen.add(key);
    const data = v.encodeJson(`${field}.data`, o.data === undefined ? {} : o.data, this.maxPayloadBytes);
    const args: FlowNodeArgs = {
      id, name, data, opts: storedOptions(userOpts as JobOptions, n), priority: n.priority, lane: n.lane, delay: n.delay,
      lifo: n.lifo, keepCompleted: n.keepCompleted, keepFailed: n.keepFailed,
      policy: fpof ? 'f' : idof ? 'i' : '', children: [],
    };
    if (parent) args.parent = { id: parent.args.id, key: parent.key, queue: parent.keys.queue, prefix: parent.keys.prefix };
    const p: Prepared = { args, keys, key, parent, children: [], field };
    if (o.children !== undefined) {
      if (!Array.isArray(o.children)) v.fail(`${field}.children`, 'an array of flow jobs', o.children);
      o.children.forEach((c, i) => p.children.push(this.prepare(c, `${field}.children[${i}]`, p, depth + 1, seen)));
      args.children = p.children.map((c) => c.key);
    }
    return p;
  }

  /**
   * Writes the nodes, given parents first, in as few calls as possible: one call per queue part
   * whose parents are already written (one call in all for a single-queue flow).
   */
  private async write(order: Prepared[]): Promise<void> {
    const client = this.conn.client;
    let remaining = order;
    const written = new Set<Prepared>();
    const multiCall = new Set(order.map((p) => p.keys.base)).size > 1;
    if (multiCall) {
      // Narrow the window for a half-written flow: refuse ids that exist before writing any part.
      const exists = await Promise.all(order.map((p) => client.exists(p.key)));
      const i = exists.findIndex((e) => e === 1);
      if (i >= 0) throw new InvalidStateError(order[i].args.id, 'FlowProducer.add', 'already exists; a flow adds only new jobs');
    }
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
      const r = await lifecycleScripts.addFlow({ client, keys: batch[0].keys }, batch.map((p) => p.args));
      if (!r.ok) throw new InvalidStateError(r.existingId, 'FlowProducer.add', 'already exists; a flow adds only new jobs');
      for (const p of batch) written.add(p);
      remaining = remaining.filter((p) => !inBatch.has(p));
    }
  }

  private toNode(p: Prepared): JobNode {
    const a = p.args;
    const h: Record<string, string> = {
      name: a.name, data: a.data, opts: a.opts, prio: String(a.priority), lane: a.lane, delay: String(a.delay),
      att: '0', made: '0', ts: String(Date.now()), st: a.children.length > 0 ? 'h' : a.delay > 0 ? 'd' : 'w',
    };
    if (a.parent) Object.assign(h, { pid: a.parent.id, pk: a.parent.key, pq: a.parent.queue, ppx: a.parent.prefix });
    if (a.policy) h.pol = a.policy;
    const job = Job.fromHash(this.ctxFor(p.keys), a.id, h);
    return p.children.length > 0 ? { job, children: p.children.map((c) => this.toNode(c)) } : { job };
  }

  /**
   * Reads a flow back from Redis: the job and, up to `depth` levels down, its children (at most
   * `maxChildren` per parent). Children whose jobs are gone (retention) are left out.
   */
  async getFlow(opts: { id: string; queueName: string; prefix?: string; depth?: number; maxChildren?: number }): Promise<JobNode | undefined> {
    v.plainObject('opts', opts);
    const id = v.existingJobId(opts.id, 'id');
    const queueName = v.queueName(opts.queueName, 'queueName');
    const prefix = opts.prefix === undefined ? this.prefix : v.prefix(opts.prefix);
    const depth = opts.depth === undefined ? 10 : v.integerIn('depth', opts.depth, 0, MAX_FLOW_DEPTH);
    const maxChildren = opts.maxChildren === undefined ? 1000 : v.positiveInt('maxChildren', opts.maxChildren);
    return this.readNode(queueKeys(queueName, prefix), id, depth, maxChildren);
  }

  private async readNode(keys: QueueKeys, id: string, depth: number, maxChildren: number): Promise<JobNode | undefined> {
    const job = await Job.fromId(this.ctxFor(keys), id);
    if (!job) return undefined;
    if (depth === 0) return { job };
    const d = await readDependencies(this.conn.client, keys, id);
    const childKeys = [...Object.keys(d.processed), ...d.unprocessed, ...Object.keys(d.ignored), ...Object.keys(d.failed)].slice(0, maxChildren);
    const children: JobNode[] = [];
    for (const ck of childKeys) {
      const parsed = parseJobKey(ck);
      if (!parsed) continue;
      const child = await this.readNode(queueKeys(parsed.queue, parsed.prefix), parsed.id, depth - 1, maxChildren);
      if (child) children.push(child);
    }
    return children.length > 0 ? { job, children } : { job };
  }

  /** Closes the connection if this producer opened it. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await closeConnection(this.conn);
  }
}

/**
 * Splits a job key `<prefix>:{<escaped queue>}:job:<id>` into its parts (the inverse of
 * keys.jobKey; prefixes and escaped queue names hold no braces, so the split is unambiguous).
 */
export function parseJobKey(key: string): { prefix: string; queue: string; id: string } | undefined {
  const open = key.indexOf(':{');
  const close = key.indexOf('}:', open + 2);
  if (open < 0 || close < 0) return undefined;
  const prefix = key.slice(0, open);
  const queue = unescapeQueueName(key.slice(open + 2, close));
  const keys = queueKeys(queue, prefix);
  if (!key.startsWith(keys.jobBase)) return undefined;
  return { prefix, queue, id: key.slice(keys.jobBase.length) };
}
