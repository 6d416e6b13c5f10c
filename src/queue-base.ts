/**
 * QueueBase: what every Queue has before it sends a job — its name, keys, options, connection
 * and identity (BullMQ's QueueBase: qualifiedName, toKey, waitUntilReady, disconnect).
 * QueueGetters (queue-getters.ts) adds the read side and Queue (queue.ts) the commands.
 * Fields are declared here and assigned by Queue's constructor (which may return a sharded
 * queue instead, see queue.ts).
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { closeConnection, type Connection } from './connection.js';
import { ClosedError } from './errors.js';
import type { JobContext } from './job.js';
import type { QueueKeys } from './keys.js';
import type { LaneControls } from './lanes.js';
import type { QueueOptions } from './queue.js';

export abstract class QueueBase extends EventEmitter {
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

  /** The options merged under every add's options (BullMQ's Queue.defaultJobOptions). */
  get defaultJobOptions(): QueueOptions['defaultJobOptions'] {
    return this.opts.defaultJobOptions ?? {};
  }

  /** The ioredis client this queue uses. */
  get client() {
    return this.conn.client;
  }

  /** BullMQ's logical name of the queue: `<prefix>:<name>` (not a Redis key; see DESIGN §11). */
  get qualifiedName(): string {
    return `${this.keys.prefix}:${this.name}`;
  }

  /** BullMQ's logical key of a queue structure: `<prefix>:<name>:<type>` (a name, not echomq's physical key). */
  toKey(type: string): string {
    return `${this.qualifiedName}:${type}`;
  }

  /** Resolves once the connection is ready; rejects with the connection's error when it cannot connect. */
  async waitUntilReady(): Promise<void> {
    this.open();
    await this.conn.client.ping();
  }

  /** Closes the connection at once without waiting for pending replies. */
  async disconnect(): Promise<void> {
    await closeConnection(this.conn, true);
  }

  protected open(): void {
    if (this.closed) throw new ClosedError(`Queue ${JSON.stringify(this.name)}`);
  }

  /** Emits 'error' when someone listens (an unhandled 'error' event would crash the process). */
  protected emitError(err: unknown): void {
    const e = err instanceof Error ? err : new Error(String(err));
    if (this.listenerCount('error') > 0) this.emit('error', e);
  }
}
