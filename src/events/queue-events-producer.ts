/**
 * QueueEventsProducer: publishes custom events into a queue's events stream, where every
 * QueueEvents of that queue receives them like the queue's own (BullMQ's class of the same
 * name). `publishEvent({ eventName: 'progress-report', step: '3' })` reaches
 * `queueEvents.on('progress-report', (args, id) => …)` with `args = { step: '3' }`.
 *
 * Values arrive as strings, as stream fields are: numbers and booleans as their text, null and
 * undefined as '' (as BullMQ sends them), objects and arrays as JSON (BullMQ sends
 * "[object Object]" and flattens arrays into extra fields, which no reader can use).
 */
import { EventEmitter } from 'node:events';
import { closeConnection, openConnection, type Connection, type ConnectionInput, type RedisClient } from '../core/connection.js';
import { ClosedError, reportError } from '../core/errors.js';
import { queueKeys, type QueueKeys } from '../core/keys.js';
import * as v from '../core/validate.js';
import { scripts } from '../scripts/index.js';
import { connectionError } from '../core/connection-wait.js';

export interface QueueEventsProducerOptions {
  /** Redis URL, ioredis options, or a client (used as is, not duplicated). */
  connection?: ConnectionInput;
  /** Key prefix. Default 'emq'. */
  prefix?: string;
  /** BullMQ's options, accepted for compatibility. */
  skipVersionCheck?: boolean;
  skipWaitingForReady?: boolean;
  /** @deprecated BullMQ's, not in use. */
  blockingConnection?: boolean;
}

/** BullMQ's default cap for publishEvent: the stream is trimmed to about this many entries. */
const DEFAULT_MAX_EVENTS = 1000;

/**
 * Event names a custom event may not use: those QueueEvents emits itself (they are never
 * delivered) and `event`, the field that carries the name.
 */
const RESERVED = new Set(['error', 'closed', 'newListener', 'removeListener']);

export class QueueEventsProducer extends EventEmitter {
  readonly name: string;
  readonly keys: QueueKeys;
  readonly opts: QueueEventsProducerOptions;
  /** Set by close(). */
  closing: Promise<void> | undefined;
  private readonly conn: Connection;
  private readonly onClose = () => {
    if (!this.closing) this.emit('ioredis:close');
  };

  constructor(name: string, opts: QueueEventsProducerOptions = {}) {
    super();
    v.queueName(name);
    v.plainObject('opts', opts);
    const prefix = opts.prefix === undefined ? undefined : v.prefix(opts.prefix);
    this.name = name;
    this.opts = opts;
    this.keys = queueKeys(name, prefix);
    this.conn = openConnection(opts.connection);
    if (this.conn.owned) {
      this.conn.client.on('error', (err: Error) => reportError(this, `queue events producer ${this.name}`, connectionError(this.conn.client, err)));
    }
    // BullMQ's: the connection closed while the producer was not closing.
    this.conn.client.on('close', this.onClose);
  }

  /** BullMQ's logical name of the queue: `<prefix>:<name>`. */
  get qualifiedName(): string {
    return `${this.keys.prefix}:${this.name}`;
  }

  /** BullMQ's logical key of a queue structure: `<prefix>:<name>:<type>`. */
  toKey(type: string): string {
    return `${this.qualifiedName}:${type}`;
  }

  /** The ioredis client this producer uses. */
  get client() {
    return this.conn.client;
  }

  /** The RedisConnection held (BullMQ's protected `connection`). */
  protected get connection(): Connection {
    return this.conn;
  }

  /** Resolves to the client once the connection is ready; rejects with the error that kept it from connecting. */
  async waitUntilReady(): Promise<RedisClient> {
    this.open();
    return this.conn.initializing;
  }

  /**
   * Appends `{ eventName, ...fields }` to the queue's events stream as one entry (`event` =
   * eventName, then the fields), trimmed to about `maxEvents` entries (default 1000, as in
   * BullMQ; note that this trims the queue's own events too, whose cap is 10000 by default).
   */
  async publishEvent<T extends { eventName: string }>(argsObj: T, maxEvents: number = DEFAULT_MAX_EVENTS): Promise<void> {
    this.open();
    v.plainObject('argsObj', argsObj);
    const { eventName, ...rest } = argsObj as T & Record<string, unknown>;
    if (typeof eventName !== 'string' || eventName === '') v.fail('eventName', 'a non-empty string', eventName);
    if (RESERVED.has(eventName)) v.fail('eventName', `a name other than ${[...RESERVED].join(', ')}`, eventName);
    v.nonNegativeInt('maxEvents', maxEvents);
    const fields: string[] = ['event', eventName];
    for (const [k, val] of Object.entries(rest)) {
      if (k === 'event') v.fail('argsObj', "fields other than 'event' (it carries eventName)", k);
      fields.push(k, fieldValue(val));
    }
    // A script rather than a plain XADD, so a resend after a lost reply adds no second entry.
    await scripts.publishEvent({ client: this.conn.client, keys: this.keys }, { maxEvents, fields });
  }

  /** Closes the connection (a client passed in is left open). Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shut(false);
    return this.closing;
  }

  /** Closes the connection at once without waiting for pending replies. */
  async disconnect(): Promise<void> {
    this.closing ??= this.shut(true);
    await this.closing;
  }

  private async shut(force: boolean): Promise<void> {
    await closeConnection(this.conn, force);
    this.conn.client.off('close', this.onClose); // a client passed in outlives the producer
  }

  private open(): void {
    if (this.closing) throw new ClosedError(`QueueEventsProducer ${JSON.stringify(this.name)}`);
  }
}

function fieldValue(val: unknown): string {
  if (val === null || val === undefined) return '';
  if (typeof val === 'object') return JSON.stringify(val);
  return String(val);
}
