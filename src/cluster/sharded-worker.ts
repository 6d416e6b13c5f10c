/**
 * The worker of a sharded queue (src/cluster/sharded.ts): `new Worker(name, fn, { shards: n })` returns
 * a ShardedWorker.
 *
 * It runs one ordinary Worker per shard (`<name>#i`) over one shared command connection, so
 * every transition, lease, retry and recovery path is the plain worker's. They share the
 * worker's `concurrency` through a FairSlotPool: a shard takes at most
 * ceil(concurrency / shards with work) slots while others wait, and a shard over its share
 * hands a freed slot to a waiting shard instead of refilling it in its settle call.
 *
 * Idle blocking: each per-shard worker blocks on its own shard's wake list with its own
 * blocking connection (BLPOP cannot span slots on a Cluster), so new work on any shard starts
 * at once. The cost: one blocking connection per shard per worker, and while idle one BLPOP
 * per drainDelay per shard.
 */
import { closeConnection, openConnection, type Connection } from '../core/connection.js';
import { shardQueueName } from '../core/keys.js';
import { ensureShardLayout, laneShard, MAX_SHARDS } from './shard-layout.js';
import { Worker, shardedWorkerFactory, type Processor, type WorkerOptions } from '../worker/worker.js';
import type { Job } from '../job/job.js';
import type { SlotPool } from '../worker/slot-pool.js';

export type { SlotPool } from '../worker/slot-pool.js';
import * as v from '../core/validate.js';
import { reportError } from '../core/errors.js';

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);


interface Member {
  load(): number;
  poke(): void;
  /** The shard's last claim came back short: it has no ready work until its wake list rings. */
  idle: boolean;
}

/**
 * Fair sharing of one worker's concurrency across shards. A shard with work claims at most
 * ceil(concurrency / shards with work) slots; a shard that holds two or more slots more than a
 * waiting shard, or any slot while a waiting shard holds none, hands its freed slot over
 * instead of refilling it in its settle call (which would cost no extra round trip). Shares
 * so differ by at most one slot, and a worker with fewer slots than busy shards rotates them.
 * Work-conserving: shards without ready work leave their share to the others.
 */
export class FairSlotPool implements SlotPool {
  private readonly members = new Map<object, Member>();
  /** Members whose last free() gave them nothing although they have work (or had none yet). */
  private readonly waiters = new Set<object>();
  /** The member that last handed a slot over: waiting members take the slot before it. */
  private yielder: object | undefined;
  /** Set by ShardedWorker's concurrency setter. */
  constructor(public concurrency: number) {}

  join(w: object, hooks: { load(): number; poke(): void }): void {
    this.members.set(w, { ...hooks, idle: false });
  }

  private used(): number {
    let n = 0;
    for (const m of this.members.values()) n += m.load();
    return n;
  }

  private share(): number {
    let busy = 0;
    for (const m of this.members.values()) if (!m.idle) busy++;
    return Math.ceil(this.concurrency / Math.max(1, busy));
  }

  free(w: object, own: number): number {
    const m = this.members.get(w);
    if (!m) return own;
    m.idle = false; // it asks for work: its shard counts as busy until a claim comes back short
    const share = this.share();
    let n = Math.min(own, this.concurrency - this.used(), share - m.load());
    if (n > 0 && w === this.yielder) {
      for (const x of this.waiters) {
        if (x !== w && (this.members.get(x)?.load() ?? share) < share) n = 0;
      }
    }
    if (n <= 0) {
      this.waiters.add(w);
      return 0;
    }
    this.waiters.delete(w);
    this.yielder = undefined;
    return n;
  }

  mayRefetch(w: object): boolean {
    const m = this.members.get(w);
    if (!m) return true;
    const after = m.load() - 1;
    for (const x of this.waiters) {
      if (x === w) continue;
      const held = this.members.get(x)?.load() ?? 0;
      // Yield to a shard that would hold fewer than w even after w's job ends, and to a shard
      // that holds nothing (with 1 slot and 3 busy shards the slot must rotate).
      if (held < after || held === 0) {
        this.yielder = w;
        return false;
      }
    }
    return true;
  }

  claimed(w: object, asked: number, got: number): void {
    const m = this.members.get(w);
    if (!m || got >= asked) return;
    m.idle = true;
    this.wake(); // its unused reservation and its share go to the others
  }

  released(_w: object): void {
    this.wake();
  }

  /** Pokes every waiting member; each asks free() again (and leaves the set when it gets slots). */
  private wake(): void {
    for (const w of [...this.waiters]) this.members.get(w)?.poke();
  }
}

const FORWARDED = ['active', 'completed', 'failed', 'progress', 'stalled'] as const;

export class ShardedWorker<D = any, R = any, N extends string = string> extends Worker<D, R, N> {
  readonly shards: number;
  /** The worker of each shard (`<name>#i`); they share this worker's connection and concurrency. */
  readonly shardWorkers: ReadonlyArray<Worker<D, R, N>>;
  private readonly shConn: Connection;
  private readonly shSeen: WeakSet<object>;
  private readonly shOnError: (err: Error) => void;
  private readonly shListenerRoom: number;
  private shRun: Promise<void> | undefined;
  private readonly shPool: FairSlotPool;
  private shClosing: Promise<void> | undefined;

  constructor(name: string, processor: Processor<D, R, N>, opts: WorkerOptions = {}) {
    v.plainObject('opts', opts);
    const shards = v.integerIn('shards', opts.shards, 2, MAX_SHARDS);
    const conn = openConnection(opts.connection, { persistent: true });
    try {
      // The base worker validates the options and never runs; the shard workers do the work.
      super(name, processor, { ...opts, shards: undefined, connection: conn.client, autorun: false });
    } catch (err) {
      void closeConnection(conn, true);
      throw err;
    }
    this.shards = shards;
    this.shConn = conn;
    // Connection errors reach every worker on the shared client; report each once.
    const seen = new WeakSet<object>();
    this.shSeen = seen;
    this.shOnError = (err) => void seen.add(err);
    conn.client.prependListener('error', this.shOnError);
    // Every shard worker listens on the shared client: raise the limit by what we add.
    const max = conn.client.getMaxListeners();
    if (max > 0) conn.client.setMaxListeners(max + shards + 1);
    this.shListenerRoom = max > 0 ? shards + 1 : 0;
    const pool = new FairSlotPool(this.opts.concurrency);
    this.shPool = pool;
    const limiter = opts.limiter && { max: Math.ceil(opts.limiter.max / shards), duration: opts.limiter.duration };
    this.shardWorkers = range(shards).map((i) => {
      const w = new Worker<D, R, N>(shardQueueName(name, i), processor, {
        ...opts, shards: undefined, connection: conn.client, autorun: false, slotPool: pool, limiter,
      });
      for (const ev of FORWARDED) w.on(ev, (...args: unknown[]) => this.emit(ev, ...args));
      w.on('error', (err: Error) => {
        if (this.shSeen.has(err)) return;
        this.shSeen.add(err);
        this.shReport(err);
      });
      w.on('drained', () => {
        if (this.activeCount === 0) this.emit('drained');
      });
      return w;
    });
    if (opts.autorun !== false) void this.run().catch((err) => this.shReport(err));
  }

  private shReport(err: unknown): void {
    reportError(this, `worker ${this.name}`, err);
  }

  /** Checks the shard count (ShardCountError), then runs every shard's worker until closed. */
  override run(): Promise<void> {
    if (this.shRun) return this.shRun;
    if (this.shClosing) return Promise.resolve();
    this.shRun = (async () => {
      await ensureShardLayout(this.shConn.client, this.name, this.keys.prefix, this.shards);
      await Promise.all(this.shardWorkers.map((w) => w.run()));
    })();
    return this.shRun;
  }

  override isRunning(): boolean {
    return this.shardWorkers.some((w) => w.isRunning());
  }

  override isPaused(): boolean {
    return this.shardWorkers.every((w) => w.isPaused());
  }

  override async pause(doNotWaitActive?: boolean): Promise<void> {
    await Promise.all(this.shardWorkers.map((w) => w.pause(doNotWaitActive)));
  }

  override async resume(): Promise<void> {
    await Promise.all(this.shardWorkers.map((w) => w.resume()));
  }

  override get concurrency(): number {
    return this.opts.concurrency;
  }

  /** Shared by the shards: takes effect at once on every shard's worker. */
  override set concurrency(n: number) {
    super.concurrency = n; // validates it (the base worker never runs)
    this.shPool.concurrency = n;
    for (const w of this.shardWorkers) w.concurrency = n;
  }

  /** @internal The base worker's job context (the shards' jobs carry their own). */
  override get jobContext() {
    return super.jobContext;
  }

  override async startStalledCheckTimer(): Promise<void> {
    await Promise.all(this.shardWorkers.map((w) => w.startStalledCheckTimer()));
  }

  /** Manual processing: the next job of any shard, shards tried in turn; blocks on the first shard when none is ready. */
  override async getNextJob(token: string, opts?: { block?: boolean }): Promise<Job<D, R, N> | undefined> {
    for (const w of this.shardWorkers) {
      const job = await w.getNextJob(token, { block: false });
      if (job) return job;
    }
    return opts?.block === false ? undefined : this.shardWorkers[0]!.getNextJob(token, opts);
  }

  /** Returns the ids no shard renewed. */
  override async extendJobLocks(jobIds: string[], tokens: string[], duration: number): Promise<string[]> {
    const refused = await Promise.all(this.shardWorkers.map((w) => w.extendJobLocks(jobIds, tokens, duration)));
    return jobIds.filter((id) => refused.every((r) => r.includes(id)));
  }

  override get activeCount(): number {
    return this.shardWorkers.reduce((a, w) => a + w.activeCount, 0);
  }

  /** Claims handed back without running (lost replies), summed over the shards' workers. */
  override get releasedClaims(): number {
    return this.shardWorkers.reduce((a, w) => a + w.releasedClaims, 0);
  }

  override set releasedClaims(n: number) {
    for (const w of this.shardWorkers) w.releasedClaims = n;
  }

  /** Blocks claims on every shard for `ms`. */
  override async rateLimit(ms: number): Promise<void> {
    await Promise.all(this.shardWorkers.map((w) => w.rateLimit(ms)));
  }

  override cancelJob(jobId: string, reason?: string): boolean {
    return this.shardWorkers.some((w) => w.cancelJob(jobId, reason));
  }

  /** BullMQ Pro: a group is a lane, so the shard of its lane rate-limits it. */
  override rateLimitGroup(job: Job, ms: number): Promise<void> {
    return this.shardWorkers[laneShard(job.lane, this.shardWorkers.length)]!.rateLimitGroup(job, ms);
  }

  override cancelAllJobs(reason?: string): number {
    return this.shardWorkers.reduce((a, w) => a + w.cancelAllJobs(reason), 0);
  }

  override close(force = false): Promise<void> {
    if (this.shClosing) return this.shClosing;
    this.shClosing = (async () => {
      await Promise.all(this.shardWorkers.map((w) => w.close(force)));
      await this.shRun?.catch(() => {});
      this.shConn.client.removeListener('error', this.shOnError);
      const c = this.shConn.client;
      if (this.shListenerRoom > 0) c.setMaxListeners(Math.max(1, c.getMaxListeners() - this.shListenerRoom));
      await closeConnection(this.shConn, force);
      await super.close(force); // the base never ran: this only emits 'closed'
    })();
    return this.shClosing;
  }
}

shardedWorkerFactory.create = (name, processor, opts) => new ShardedWorker(name, processor as Processor, opts);
