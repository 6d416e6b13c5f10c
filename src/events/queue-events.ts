/**
 * QueueEvents: a reader of a queue's capped `events` stream (not pub/sub). It blocks with
 * XREAD on its own connection and remembers the id of the last entry it handled, so a reader
 * that loses its connection continues from that id when Redis is back and misses nothing that
 * is still inside the stream's cap (`new Queue(name, { streams: { events: { maxLen } } })`,
 * default 10000 entries). Start from a known id (`lastEventId`) to replay.
 *
 * Listeners get BullMQ's arguments: `(args, eventId)` where args is `{ jobId, … }` as the
 * script wrote it (numbers stay strings, except `delayed.delay`), `completed.returnvalue` and
 * `progress.data` parsed from JSON, and `drained` gets only `(eventId)`. Some events are
 * derived from the entry of another (event-payloads.ts), so the hot path writes no entry for
 * them. Each event that names a job is also emitted as `<event>:<jobId>` (what
 * job.waitUntilFinished listens to). Payloads are listed in docs/events.md.
 */
import { EventEmitter } from 'node:events';
import { closeConnection, openConnection, type Connection, type ConnectionInput } from '../core/connection.js';
import { clientName, queueKeys, type QueueKeys } from '../core/keys.js';
import { QUEUE_EVENT_SUFFIX } from '../core/constants.js';
import { expandEntry, type EventArgs } from './event-payloads.js';
import * as v from '../core/validate.js';
import { reportError } from '../core/errors.js';
import { connectionError } from '../core/connection-wait.js';

export interface QueueEventsOptions {
  /** Redis URL, ioredis options, or a client (duplicated: the reader needs its own connection). */
  connection?: ConnectionInput;
  /** Key prefix. Default 'emq'. */
  prefix?: string;
  /** Start reading at construction. Default true; otherwise call run(). */
  autorun?: boolean;
  /**
   * Where to start: '$' (default) = only events written after the reader is ready; '0' = every
   * event still in the stream; a stream id ('1700000000000-0') = the events after it.
   */
  lastEventId?: string;
  /** Longest XREAD block, ms (the reader re-issues it at once); 0 = block until an event arrives. Default 10000. */
  blockingTimeout?: number;
  /** BullMQ's options, accepted for compatibility; echomq does not need them (no version check, no ready wait to skip). */
  skipVersionCheck?: boolean;
  skipWaitingForReady?: boolean;
  /** @deprecated BullMQ's, not in use. */
  blockingConnection?: boolean;
}

/**
 * Listener signatures by event name: BullMQ's QueueEventsListener, plus echomq's own events
 * (lanes, retrying, moved, drained-queue). See docs/events.md for every field.
 */
export interface QueueEventsListener<ReturnType = any> {
  added: (args: { jobId: string; name: string; lane: string; delay: string }, id: string) => void;
  waiting: (args: { jobId: string; prev?: string }, id: string) => void;
  active: (args: { jobId: string; prev?: string }, id: string) => void;
  /** delay: the due time, ms since the epoch (Redis clock), a number as in BullMQ. */
  delayed: (args: { jobId: string; delay: number }, id: string) => void;
  completed: (args: { jobId: string; returnvalue: ReturnType; prev?: string; truncated?: '1' }, id: string) => void;
  failed: (args: { jobId: string; failedReason: string; prev?: string }, id: string) => void;
  progress: (args: { jobId: string; data: unknown }, id: string) => void;
  'retries-exhausted': (args: { jobId: string; attemptsMade: string }, id: string) => void;
  stalled: (args: { jobId: string }, id: string) => void;
  removed: (args: { jobId: string; prev: string }, id: string) => void;
  /** An add named a job id that exists: nothing was created. */
  duplicated: (args: { jobId: string }, id: string) => void;
  /** A live job holds the deduplication id: nothing was created. deduplicatedJobId: the refused add's own id, when it named one. */
  deduplicated: (args: { jobId: string; deduplicationId: string; deduplicatedJobId?: string }, id: string) => void;
  cleaned: (args: { count: string }, id: string) => void;
  'waiting-children': (args: { jobId: string; prev?: string }, id: string) => void;
  drained: (id: string) => void;
  paused: (args: object, id: string) => void;
  resumed: (args: object, id: string) => void;
  /** echomq: an attempt failed and the job will be retried. */
  retrying: (args: { jobId: string; failedReason: string; attemptsMade: string }, id: string) => void;
  /** echomq: moveToLane. */
  moved: (args: { jobId: string; from: string; to: string }, id: string) => void;
  /** echomq: queue.drain() / queue.lanes.drain(lane). */
  'drained-queue': (args: { removed: string; lane?: string }, id: string) => void;
  'lane:paused': (args: { lane: string }, id: string) => void;
  'lane:resumed': (args: { lane: string }, id: string) => void;
  'lane:updated': (args: { lane: string; field: string; value: string }, id: string) => void;
  /** A read failed (the reader retries by itself) or a listener threw. */
  error: (err: Error) => void;
  /** The connection closed while the reader was not closing (it reconnects by itself). */
  'ioredis:close': () => void;
  /** close() finished. */
  closed: () => void;
}

/** Names this class emits itself; a stream entry with such a name is not re-emitted. */
const RESERVED = new Set(['error', 'closed', 'newListener', 'removeListener']);
const STREAM_ID = /^(\$|\d+(-\d+)?)$/;
const READ_COUNT = 1000;

type Listener = (...args: any[]) => void;
type KeyOf<T> = Extract<keyof T, string>;

// Typed on/once/off for the known events. As in BullMQ, a listener map with custom events
// (QueueEventsProducer) is passed as a type argument: `qe.on<MyListener>('my-event', …)`;
// any other name (e.g. `completed:<jobId>`) still works.
export interface QueueEvents<ReturnType = any> {
  on<QEL extends QueueEventsListener<ReturnType> = QueueEventsListener<ReturnType>, U extends KeyOf<QEL> = KeyOf<QEL>>(
    event: U, listener: QEL[U],
  ): this;
  on(event: string | symbol, listener: Listener): this;
  once<QEL extends QueueEventsListener<ReturnType> = QueueEventsListener<ReturnType>, U extends KeyOf<QEL> = KeyOf<QEL>>(
    event: U, listener: QEL[U],
  ): this;
  once(event: string | symbol, listener: Listener): this;
  off<QEL extends QueueEventsListener<ReturnType> = QueueEventsListener<ReturnType>, U extends KeyOf<QEL> = KeyOf<QEL>>(
    event: U, listener: QEL[U],
  ): this;
  off(event: string | symbol, listener: Listener): this;
}

export class QueueEvents<ReturnType = any> extends EventEmitter {
  readonly name: string;
  readonly keys: QueueKeys;
  /** The options, with blockingTimeout and lastEventId filled in (BullMQ's opts). */
  readonly opts: QueueEventsOptions & { blockingTimeout: number; lastEventId: string };
  /** Set by close(): resolves when it finished (BullMQ's QueueBase.closing). */
  closing: Promise<void> | undefined;
  private readonly conn: Connection;
  private readonly blockingTimeout: number;
  private readonly startId: string;
  private lastId: string | undefined;
  private readonly ready: Promise<void>;
  private loop: Promise<void> | undefined;
  private stopping = false;
  private readonly closeWaiters = new Set<() => void>();

  constructor(name: string, opts: QueueEventsOptions = {}) {
    super();
    v.queueName(name);
    v.plainObject('opts', opts);
    const prefix = opts.prefix === undefined ? undefined : v.prefix(opts.prefix);
    const autorun = opts.autorun === undefined ? true : v.boolean('autorun', opts.autorun);
    const start = opts.lastEventId === undefined ? '$' : opts.lastEventId;
    if (typeof start !== 'string' || !STREAM_ID.test(start)) {
      v.fail('lastEventId', "'$', '0' or a stream id like '1700000000000-0'", start);
    }
    this.blockingTimeout =
      opts.blockingTimeout === undefined ? 10_000 : v.integerIn('blockingTimeout', opts.blockingTimeout, 0, 3_600_000);
    this.name = name;
    this.keys = queueKeys(name, prefix);
    this.opts = { ...opts, blockingTimeout: this.blockingTimeout, lastEventId: start };
    this.startId = start;
    this.conn = openConnection(opts.connection, { blocking: true });
    // Connection errors are retried by ioredis; reads that fail are reported by the loop.
    this.conn.client.on('error', (err: Error) => this.reportError(connectionError(this.conn.client, err)));
    // BullMQ's: the connection closed while the reader was not closing (ioredis reconnects).
    this.conn.client.on('close', () => {
      if (!this.closing) this.emit('ioredis:close');
    });
    // The name Queue.getQueueEvents() looks for, set again on every reconnect.
    this.conn.client.on('ready', () => void this.setName());
    this.ready = this.init();
    this.ready.catch(() => {}); // surfaced by waitUntilReady() and run()
    if (autorun) void this.run().catch((err) => this.reportError(err));
  }

  /** BullMQ's logical name of the queue: `<prefix>:<name>` (not a Redis key). */
  get qualifiedName(): string {
    return `${this.keys.prefix}:${this.name}`;
  }

  /** BullMQ's logical key of a queue structure: `<prefix>:<name>:<type>` (a name, not echomq's physical key). */
  toKey(type: string): string {
    return `${this.qualifiedName}:${type}`;
  }

  /** The RedisConnection held (BullMQ's protected `connection`). */
  protected get connection(): Connection {
    return this.conn;
  }

  /** The reader's own ioredis client (it blocks in XREAD: do not send commands on it). */
  get client() {
    return this.conn.client;
  }

  /** Names the connection `<prefix>:<base64 queue>:qe`, as BullMQ does; servers without CLIENT SETNAME are fine. */
  private async setName(): Promise<void> {
    try {
      await this.conn.client.call('CLIENT', 'SETNAME', clientName(this.keys, QUEUE_EVENT_SUFFIX));
    } catch {
      // Managed Redis services may refuse CLIENT; the name only serves getQueueEvents().
    }
  }

  /** Resolves '$' to the id of the stream's newest entry, so nothing after it can be missed. */
  private async init(): Promise<void> {
    await this.conn.initializing; // rejects with the error that kept the client from connecting
    await this.setName();
    if (this.startId !== '$') {
      this.lastId = this.startId;
      return;
    }
    const last = (await this.conn.client.xrevrange(this.keys.events, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
    this.lastId = last.length > 0 ? last[0][0] : '0-0';
  }

  /**
   * Resolves when the reader's start position is fixed: every event written after this
   * resolves will be delivered (with the default lastEventId '$').
   */
  async waitUntilReady(): Promise<void> {
    await this.ready;
  }

  /** Id of the last stream entry handled (or the start position before any). */
  get lastEventId(): string | undefined {
    return this.lastId;
  }

  isRunning(): boolean {
    return this.loop !== undefined && !this.stopping;
  }

  /**
   * Starts reading (autorun does this); resolves when the reader is closed. As in BullMQ, a
   * second call while it runs rejects with "Queue Events is already running.".
   */
  run(): Promise<void> {
    if (this.loop && !this.stopping) return Promise.reject(new Error('Queue Events is already running.'));
    if (this.stopping) return this.loop ?? Promise.resolve();
    this.loop = this.read();
    return this.loop;
  }

  private async read(): Promise<void> {
    try {
      await this.ready;
    } catch (err) {
      if (this.stopping) return;
      throw err;
    }
    const client = this.conn.client;
    let failures = 0;
    while (!this.stopping) {
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        reply = (await client.xread(
          'COUNT', READ_COUNT, 'BLOCK', this.blockingTimeout, 'STREAMS', this.keys.events, this.lastId!,
        )) as typeof reply;
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        this.reportError(err);
        failures++;
        await sleep(Math.min(5000, 50 * 2 ** Math.min(failures, 7)));
        continue;
      }
      if (!reply) continue;
      for (const [, entries] of reply) {
        for (const [id, fields] of entries) {
          if (this.stopping) return;
          this.lastId = id;
          this.dispatch(id, fields);
        }
      }
    }
  }

  private dispatch(id: string, fields: readonly string[]): void {
    let event = '';
    // An entry may hold the same event for several jobs (lib/common.lua emitJob): the fields
    // before the first jobId are shared, each jobId starts the next job's fields. Each job is
    // dispatched on its own, with the entry's id.
    const shared: EventArgs = {};
    let args = shared;
    const jobs: EventArgs[] = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const f = fields[i];
      if (f === 'event') event = fields[i + 1];
      else {
        if (f === 'jobId') {
          args = { ...shared };
          jobs.push(args);
        }
        args[f] = fields[i + 1];
      }
    }
    if (!event || RESERVED.has(event)) return;
    if (jobs.length === 0) this.dispatchOne(id, event, shared);
    for (const job of jobs) this.dispatchOne(id, event, job);
  }

  private dispatchOne(id: string, event: string, args: EventArgs): void {
    try {
      if (event === 'drained') {
        this.emit('drained', id);
        return;
      }
      for (const e of expandEntry(event, args)) {
        this.emit(e.event, e.args, id);
        if (typeof e.args.jobId === 'string') this.emit(`${e.event}:${e.args.jobId}`, e.args, id);
      }
    } catch (err) {
      this.reportError(err);
    }
  }

  private reportError(err: unknown): void {
    reportError(this, `queue events ${this.name}`, err);
  }

  /**
   * @internal Calls fn once when close() is called (at once if it was); returns an unsubscribe.
   * Used by job.waitUntilFinished instead of a 'closed' listener per waiter.
   */
  whenClosed(fn: () => void): () => void {
    if (this.stopping) {
      queueMicrotask(fn);
      return () => {};
    }
    this.closeWaiters.add(fn);
    return () => this.closeWaiters.delete(fn);
  }

  /** Stops reading and closes the connection. Idempotent. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.stopping = true;
    for (const fn of this.closeWaiters) fn();
    this.closeWaiters.clear();
    this.closing = (async () => {
      // Disconnecting fails the pending XREAD at once instead of waiting out its block.
      await closeConnection(this.conn, true);
      await this.loop?.catch(() => {});
      this.emit('closed');
    })();
    return this.closing;
  }

  /** Closes the connection at once (BullMQ's force disconnect); the reader stops, as after close(). */
  disconnect(): Promise<void> {
    return this.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
