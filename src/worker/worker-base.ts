/**
 * The Worker's identity and connections, apart from its job loop (worker.ts): name, keys, id and
 * options; the command connection and the blocking one idle claims wait on (named with BullMQ's
 * scheme); the typed listener map; error reporting; the queue-wide rate-limit block.
 */
import { EventEmitter } from 'node:events';
import { closeConnection, isClusterClient, openConnection, type Connection, type RedisClient, type RedisConnection } from '../core/connection.js';
import { ClosedError, EchoError, RateLimitError, guardedEmit, reportError } from '../core/errors.js';
import { clientName, WORKER_LIB_TAG, type QueueKeys } from '../core/keys.js';
import * as v from '../core/validate.js';
import { delay as delayFor } from '../core/utils.js';
import type { WorkerListener, WorkerSettings } from './worker-options.js';
import { makeBackend, type WorkerBackend } from './worker-backend.js';
import { MetaField } from '../core/fields.js';
import { execStamped, layoutReady } from '../scripts/runner.js';

/** Value of the global rate counter while rateLimit(ms) blocks the queue (2^50; lib/claim.lua). */
const RATE_BLOCK = 2 ** 50;

export class WorkerBase<D = any, R = any, N extends string = string> extends EventEmitter {
  // `!`: assigned by the Worker's constructor (which may return a ShardedWorker instead).
  readonly name!: string;
  readonly keys!: QueueKeys;
  /** This worker's id (BullMQ's: a random UUID). */
  readonly id!: string;
  /** The options in force, with their defaults. `concurrency` follows the setter. */
  readonly opts!: WorkerSettings;
  protected readonly conn!: Connection;
  protected blockConn: Connection | undefined;
  protected stopping = false;
  /** Resolves the current local wait (see poke). */
  protected wakeLocal: (() => void) | undefined;
  /** The BLPOP in flight on the blocking connection (see block()); resolves to how it ended. */
  protected blpop: Promise<BlockEnd> | undefined;
  /** Both connections ready (see connected()). */
  private connecting: Promise<void> | undefined;
  /** close() has closed the connections. */
  protected connectionsClosed = false;
  private backend: WorkerBackend | undefined;

  /** Sets the identity fields (the Worker's constructor, once its options are validated). */
  protected identify(fields: Partial<Pick<WorkerBase, 'name' | 'keys' | 'id' | 'opts'>> & { conn?: Connection }): void {
    Object.assign(this, fields);
  }

  /** Shortest and longest block of an idle claim, in seconds (BullMQ's Worker fields; drainDelay caps the block). */
  readonly minimumBlockTimeout = 0.001;
  readonly maximumBlockTimeout = 10;

  /** BullMQ's logical name of the queue: `<prefix>:<name>` (not a Redis key; keys.ts builds those). */
  get qualifiedName(): string {
    return `${this.keys.prefix}:${this.name}`;
  }

  /** BullMQ's logical key of a queue structure: `<prefix>:<name>:<type>`. */
  toKey(type: string): string {
    return `${this.qualifiedName}:${type}`;
  }

  /** Resolves after `ms` milliseconds, or at once when the controller aborts (BullMQ's Worker.delay). */
  delay(ms = 0, abortController?: { signal: AbortSignal }): Promise<void> {
    return delayFor(ms, abortController);
  }

  /** The CLIENT SETNAME of this worker's connections (BullMQ's scheme; Queue.getWorkers reads it). */
  protected connectionName(): string {
    return clientName(this.keys, this.opts.name === undefined ? '' : `:w:${this.opts.name}`);
  }

  /**
   * Resolves to the client once the worker's connections are ready: its command connection
   * (with the server's version read, getBackend().redisVersion) and the blocking one idle claims
   * wait on (opened here, as BullMQ's Worker opens both). Rejects with the error that kept the
   * command connection from connecting (e.g. `connect ECONNREFUSED …`).
   */
  async waitUntilReady(): Promise<RedisClient> {
    await this.connected();
    return this.conn.client;
  }

  /**
   * Both connections ready; the job loop awaits it before its first claim, so a worker is
   * blocking on its own connection when its readiness is reported (BullMQ's order: a job added
   * after waitUntilReady() goes to a worker already waiting, not to one started after it).
   */
  protected connected(): Promise<void> {
    this.connecting ??= (async () => {
      await this.conn.initializing;
      await clientReady(this.blockingClient());
    })();
    // A failed attempt (the connection ended) is not cached: a later call tries again.
    this.connecting.catch(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /**
   * BullMQ 6's backend object, reduced to its Redis escape hatches over this worker's real
   * connections: `connection`, `blockingConnection` (status, client, close), `client`,
   * `blockingClient`, `redisVersion`, `databaseType` (see worker-backend.ts).
   */
  getBackend(): WorkerBackend {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const w = this;
    const closing = () => w.stopping && !w.connectionsClosed;
    const closed = () => w.connectionsClosed;
    const server = () => ({ version: w.conn.redisVersion, type: w.conn.databaseType });
    this.backend ??= makeBackend({
      main: { connection: () => w.conn, open: () => w.conn, closing, closed, server },
      blocking: {
        connection: () => w.blockConn,
        open: () => {
          w.blockingClient();
          return w.blockConn!;
        },
        closing, closed, server,
      },
      minimumBlockTimeout: this.minimumBlockTimeout,
      maximumBlockTimeout: this.maximumBlockTimeout,
      qualifiedName: this.qualifiedName,
      toKey: (type) => this.toKey(type),
      clientName: (suffix = '') => clientName(this.keys, suffix),
      waitUntilReady: () => this.waitUntilReady().then(() => {}),
    });
    return this.backend;
  }

  /** The worker's command client (BullMQ: a promise of it; `await worker.client` works the same). */
  get client(): RedisClient {
    return this.conn.client;
  }

  /** The command connection (BullMQ's protected `connection`). */
  protected get connection(): RedisConnection {
    return this.conn;
  }

  /** The connection idle claims block on (BullMQ's protected `blockingConnection`); opened on first use. */
  protected get blockingConnection(): RedisConnection | undefined {
    if (!this.stopping) this.blockingClient();
    return this.blockConn;
  }

  /** Typed listeners (BullMQ's WorkerListener). */
  override on<U extends keyof WorkerListener<D, R, N>>(event: U, listener: WorkerListener<D, R, N>[U]): this;
  override on(event: string | symbol, listener: (...args: any[]) => void): this;
  override on(event: string | symbol, listener: (...args: any[]) => void): this {
    return super.on(event, listener);
  }

  override once<U extends keyof WorkerListener<D, R, N>>(event: U, listener: WorkerListener<D, R, N>[U]): this;
  override once(event: string | symbol, listener: (...args: any[]) => void): this;
  override once(event: string | symbol, listener: (...args: any[]) => void): this {
    return super.once(event, listener);
  }

  override off<U extends keyof WorkerListener<D, R, N>>(event: U, listener: WorkerListener<D, R, N>[U]): this;
  override off(event: string | symbol, listener: (...args: any[]) => void): this;
  override off(event: string | symbol, listener: (...args: any[]) => void): this {
    return super.off(event, listener);
  }

  /**
   * As BullMQ (and Queue.emit): an exception thrown by a listener does not escape into the job
   * loop but becomes an 'error' event; when that throws too, it is printed.
   */
  override emit(event: string | symbol, ...args: any[]): boolean {
    return guardedEmit(this, event, args);
  }


  /** Emits 'error' when someone listens, so an unhandled 'error' event never crashes the process. */
  protected reportError(err: unknown): void {
    reportError(this, `worker ${this.name}`, err);
  }

  /**
   * The connection idle claims block on (opened by waitUntilReady, or on first use). It
   * carries the worker's client name, and only it, as BullMQ's: Queue.getWorkers counts one
   * connection per worker, and a connection the user passed in is never renamed.
   */
  protected blockingClient(): RedisClient {
    if (!this.blockConn) {
      const nodeOptions = { connectionName: this.connectionName(), clientInfoTag: WORKER_LIB_TAG };
      this.blockConn = openConnection(this.conn.client, { blocking: true, nodeOptions });
      this.blockConn.client.on('error', () => {}); // reconnects are reported through the main client
      nameConnection(this.blockConn, this.connectionName());
    }
    return this.blockConn.client;
  }

  protected poke(): void {
    const w = this.wakeLocal;
    this.wakeLocal = undefined;
    w?.();
  }

  protected waitLocal(): Promise<void> {
    return new Promise((resolve) => {
      this.wakeLocal = resolve;
    });
  }

  /**
   * BullMQ's block timeout, in seconds, of an idle claim: until `blockUntil` (ms since the
   * epoch; 0 = no delayed job), at least minimumBlockTimeout and at most maximumBlockTimeout, or
   * drainDelay when nothing is due. A blockUntil already past gives its (non-positive) delay.
   */
  protected getBlockTimeout(blockUntil: number): number {
    if (!blockUntil) return Math.max(this.opts.drainDelay, this.minimumBlockTimeout);
    const ms = blockUntil - Date.now();
    if (ms <= 0) return ms;
    if (ms < this.minimumBlockTimeout * 1000) return this.minimumBlockTimeout;
    return Math.min(ms / 1000, this.maximumBlockTimeout);
  }

  /**
   * Blocks on the wake list until work is signalled, the next delayed job is due, or drainDelay
   * (at least 1 ms: a BLPOP timeout of 0 would block forever). full (manual processing): a
   * BLPOP inherited from an earlier wait that times out before this wait's time is up is
   * followed by another for the rest, so a job added meanwhile is not missed. The job loop
   * does not re-issue (its next claim follows at once; re-issuing there slowed crash recovery).
   */
  protected async block(wakeInMs: number, full = false): Promise<void> {
    let seconds = this.opts.drainDelay;
    if (wakeInMs >= 0) seconds = Math.min(seconds, Math.max(0.001, Math.min(wakeInMs, this.opts.maximumRateLimitDelay) / 1000));
    seconds = Math.max(seconds, this.minimumBlockTimeout);
    const deadline = Date.now() + seconds * 1000;
    const client = this.blockingClient();
    const local = this.waitLocal().then((): BlockEnd => 'local');
    let timer: NodeJS.Timeout | undefined;
    const due = new Promise<BlockEnd>((r) => (timer = setTimeout(() => r('local'), seconds * 1000)));
    try {
      for (let wait = seconds; ; wait = Math.max(this.minimumBlockTimeout, (deadline - Date.now()) / 1000)) {
        // A poke can end a block before its BLPOP returns. That BLPOP stays in flight and is
        // awaited again here, never stacked behind: a second BLPOP would queue on the same
        // connection while the first one took the next wake token and nobody looked at it (a
        // lost wake-up).
        this.blpop ??= client.blpop(this.keys.wake, wait).then(
          (reply): BlockEnd => (reply === null ? 'timeout' : 'woken'),
          (err: unknown): BlockEnd => (err instanceof Error ? err : new Error(`blpop failed: ${String(err)}`)),
        ).finally(() => {
          this.blpop = undefined;
        });
        const end = await Promise.race([this.blpop, local, due]);
        if (end instanceof Error) {
          if (!this.stopping) {
            this.reportError(end);
            await sleep(100);
          }
          return;
        }
        if (end === 'timeout' && full && !this.stopping && deadline - Date.now() >= 1) continue;
        return;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** BullMQ's spelling: `throw Worker.RateLimitError()` from a processor. */
  static RateLimitError(): RateLimitError {
    return new RateLimitError();
  }

  /**
   * Blocks claims of the whole queue (every worker) for `ms` milliseconds: sets the global rate
   * counter to its block value with PX ms. Typical with `throw Worker.RateLimitError()` when an
   * upstream API answers 429.
   */
  async rateLimit(ms: number): Promise<void> {
    v.integerIn('ms', ms, 1, 86_400_000);
    // meta blk tells the claim to look at the counter (it reads it otherwise only with a limiter).
    await layoutReady(this.conn.client, this.keys);
    await execStamped(this.conn.client.multi().set(this.keys.rate, RATE_BLOCK, 'PX', ms).hset(this.keys.meta, MetaField.rateBlock, '1'), this.keys);
  }

  /** Closes the worker's connections at once, without waiting for running jobs (their leases expire). */
  async disconnect(): Promise<void> {
    if (this.blockConn) await closeConnection(this.blockConn, true);
    await closeConnection(this.conn, true);
    this.connectionsClosed = true;
  }
}

/**
 * Names the worker's connection, as BullMQ does (also a connection the user passed in): CLIENT
 * SETNAME now, and on every reconnect of a connection the worker opened (ioredis'
 * connectionName). A Cluster is named through its node options instead (openConnection's
 * nodeOptions, applied by ioredis to every node connection): SETNAME would reach one node only.
 */
export function nameConnection(conn: Connection, name: string): void {
  if (isClusterClient(conn.client)) return;
  const c = conn.client;
  if (conn.owned) {
    c.options.connectionName = name; // applied by ioredis on every (re)connect
    c.options.clientInfoTag = WORKER_LIB_TAG; // LIB-NAME ioredis(echomq) on every (re)connect
    if (c.status !== 'ready') return;
  }
  void c.client('SETNAME', name).catch(() => {});
  // The mark BullMQ's workers lack (Redis 7.2+; older servers refuse SETINFO, and have no field).
  void c.call('CLIENT', 'SETINFO', 'LIB-NAME', `ioredis(${WORKER_LIB_TAG})`).catch(() => {});
}

/** How one BLPOP of block() ended: a wake token, its own timeout, a poke or the block's time, or an error. */
type BlockEnd = 'woken' | 'timeout' | 'local' | Error;

/** Resolves once the client is ready (connecting a lazy one); rejects when it ends first. */
async function clientReady(c: RedisClient): Promise<void> {
  if (c.status === 'ready') return;
  if (c.status === 'wait') await c.connect().catch(() => {});
  if ((c.status as string) === 'ready') return;
  if ((c.status as string) === 'end') throw new ClosedError('Connection');
  await new Promise<void>((resolve, reject) => {
    const onReady = () => {
      c.off('end', onEnd);
      resolve();
    };
    const onEnd = () => {
      c.off('ready', onReady);
      reject(new ClosedError('Connection'));
    };
    c.once('ready', onReady);
    c.once('end', onEnd);
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
