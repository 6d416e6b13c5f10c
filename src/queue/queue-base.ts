/**
 * QueueBase: what every Queue has before it sends a job — its name, keys, options, connection
 * and identity (BullMQ's QueueBase: qualifiedName, toKey, waitUntilReady, disconnect).
 * QueueGetters (queue-getters.ts) adds the read side and Queue (queue.ts) the commands.
 * `new QueueBase(name, opts)` (and `new QueueGetters(...)`) validate and connect here, as
 * BullMQ's do; Queue passes IDENTITY_BY_SUBCLASS and assigns its identity itself after deciding
 * whether to return a sharded queue instead (which must not leave a connection opened here).
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { closeConnection, openConnection, type Connection, type RedisClient, type RedisConnection } from '../core/connection.js';
import { ClosedError, reportError } from '../core/errors.js';
import type { JobContext } from '../job/job-context.js';
import { queueKeys, type QueueKeys } from '../core/keys.js';
import { LaneControls } from '../lanes/lanes.js';
import { normalizeQueueOptions, type NormalizedQueueOptions } from '../core/options.js';
import type { QueueOptions } from './queue-options.js';
import * as v from '../core/validate.js';
import { connectionError } from '../core/connection-wait.js';

/** Given by Queue to its base constructor: Queue assigns its identity itself (see above). */
export const IDENTITY_BY_SUBCLASS: unique symbol = Symbol('echomq.identityBySubclass');

export class QueueBase extends EventEmitter {
  declare readonly name: string;
  declare readonly keys: QueueKeys;
  declare readonly lanes: LaneControls;
  declare readonly opts: QueueOptions;
  protected declare readonly conn: Connection;
  protected declare readonly ctx: JobContext;
  protected closed = false;
  /** A random id of this instance (BullMQ's QueueBase.token). */
  readonly token: string = randomUUID();
  /** Set by close(): resolves when it finished (BullMQ's QueueBase.closing). */
  closing: Promise<void> | undefined;

  constructor(name?: string | typeof IDENTITY_BY_SUBCLASS, opts: QueueOptions = {}) {
    super();
    if (name === IDENTITY_BY_SUBCLASS) return;
    this.assignIdentity(name, opts);
    if (this.conn.owned) this.conn.client.on('error', (err: Error) => this.emitError(connectionError(this.conn.client, err)));
  }

  /**
   * Validates the name and options, opens (or adopts) the connection and sets name, opts,
   * keys, ctx and lanes. Returns the normalised options for the subclass's own settings.
   */
  protected assignIdentity(name: unknown, opts: QueueOptions): NormalizedQueueOptions {
    v.queueName(name);
    v.plainObject('opts', opts);
    // Every BullMQ QueueOptions member is accepted (options.ts documents the no-ops).
    const n = normalizeQueueOptions(opts as Record<string, unknown>);
    const keys = queueKeys(name as string, n.prefix);
    const conn = openConnection(opts.connection, { skipVersionCheck: opts.skipVersionCheck, skipWaitingForReady: opts.skipWaitingForReady });
    const ids = opts.shardOf ? { step: opts.shardOf.count, offset: opts.shardOf.index } : undefined;
    const ctx: JobContext = { client: conn.client, keys, maxPayloadBytes: n.maxPayloadBytes, keepLogs: n.keepLogs, ids };
    // The fields are declared readonly: they are set once, here.
    Object.assign(this, { name, opts, keys, conn, ctx, lanes: new LaneControls(ctx) });
    return n;
  }

  /** Closes the connection if this instance opened it. Idempotent. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.closing = closeConnection(this.conn);
    return this.closing;
  }

  /** The options merged under every add's options (BullMQ's Queue.defaultJobOptions). */
  get defaultJobOptions(): QueueOptions['defaultJobOptions'] {
    return this.opts.defaultJobOptions ?? {};
  }

  /** The ioredis client this queue uses. */
  get client() {
    return this.conn.client;
  }

  /** BullMQ's logical name of the queue: `<prefix>:<name>` (not a Redis key; keys.ts builds those). */
  get qualifiedName(): string {
    return `${this.keys.prefix}:${this.name}`;
  }

  /** BullMQ's logical key of a queue structure: `<prefix>:<name>:<type>` (a name, not echomq's physical key). */
  toKey(type: string): string {
    return `${this.qualifiedName}:${type}`;
  }

  /** The RedisConnection this queue holds (BullMQ's protected `connection`). */
  protected get connection(): RedisConnection {
    return this.conn;
  }

  /**
   * Resolves to the client once it is ready; rejects with the error that kept it from
   * connecting (e.g. `connect ECONNREFUSED 127.0.0.1:1234`, `code` 'ECONNREFUSED').
   */
  async waitUntilReady(): Promise<RedisClient> {
    this.open();
    return this.conn.initializing;
  }

  /** Closes the connection at once without waiting for pending replies. */
  async disconnect(): Promise<void> {
    await closeConnection(this.conn, true);
  }

  protected open(): void {
    if (this.closed) throw new ClosedError(`Queue ${JSON.stringify(this.name)}`);
  }

  /** Reports an error: the 'error' event when someone listens, printed otherwise (core/errors.ts reportError). */
  protected emitError(err: unknown): void {
    reportError(this, `queue ${this.name}`, err);
  }
}
