/**
 * Finds the app's @Processor and @QueueEventsListener providers once the Nest application has
 * started, gives each its Worker or QueueEvents (connection and prefix from the queue's
 * registration or the shared configuration), binds @OnWorkerEvent / @OnQueueEvent methods, and
 * closes them all on application shutdown.
 */
import type { ModuleRef } from '@nestjs/core';
import type { QueueOptions } from '../../queue/queue.js';
import { QueueEvents } from '../../events/queue-events.js';
import { Worker, type WorkerOptions } from '../../worker/worker.js';
import { attachQueueEvents, attachWorker, QueueEventsHost, WorkerHost } from './hosts.js';
import { common, core } from './nest.js';
import {
  getQueueToken, getSharedConfigToken, ON_QUEUE_EVENT_METADATA, ON_WORKER_EVENT_METADATA, PROCESSOR_METADATA,
  QUEUE_EVENTS_LISTENER_METADATA, WORKER_OPTIONS_METADATA,
} from './tokens.js';
import type { ProcessorOptions, QueueEventsListenerOptions } from './decorators.js';

type Wrapper = { instance: any; metatype: any; inject?: unknown; isDependencyTreeStatic(): boolean };

const meta = <T>(key: string, target: unknown): T | undefined =>
  target ? (Reflect.getMetadata(key, target as object) as T | undefined) : undefined;

export class Explorer {
  private readonly workers: Worker[] = [];
  private readonly listeners: QueueEvents[] = [];

  constructor(
    private readonly discovery: InstanceType<typeof core.DiscoveryService>,
    private readonly scanner: InstanceType<typeof core.MetadataScanner>,
    private readonly moduleRef: ModuleRef,
  ) {}

  onApplicationBootstrap(): void {
    for (const w of this.discovery.getProviders() as Wrapper[]) {
      const cls = !w.metatype || w.inject ? w.instance?.constructor : w.metatype;
      if (!w.instance || !cls) continue;
      const processor = meta<ProcessorOptions>(PROCESSOR_METADATA, cls);
      if (processor) this.startWorker(w, cls, processor);
      const listener = meta<{ queueName: string; queueEventsOptions?: QueueEventsListenerOptions }>(QUEUE_EVENTS_LISTENER_METADATA, cls);
      if (listener) this.startListener(w, cls, listener);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.workers.map((w) => w.close()), ...this.listeners.map((q) => q.close())]);
  }

  /** Connection and prefix of a queue: its registration, else the shared configuration. */
  private queueOptions(queueName: string, configKey?: string): QueueOptions {
    for (const token of [getQueueToken(queueName), getSharedConfigToken(configKey)]) {
      try {
        const found = this.moduleRef.get(token, { strict: false }) as { opts?: QueueOptions } | QueueOptions | undefined;
        if (found) return ('opts' in found && found.opts ? found.opts : found) as QueueOptions;
      } catch {
        // not registered under this token; try the next one
      }
    }
    return {};
  }

  private startWorker(w: Wrapper, cls: object, p: ProcessorOptions): void {
    const instance = w.instance;
    if (!(instance instanceof WorkerHost)) {
      throw new TypeError(`Processor class "${(cls as { name?: string }).name}" must extend WorkerHost (from echomq/nestjs)`);
    }
    if (!w.isDependencyTreeStatic()) {
      throw new TypeError(`Processor "${(cls as { name?: string }).name}": request-scoped processors are not supported`);
    }
    const name = p.name ?? 'default';
    const q = this.queueOptions(name, p.configKey);
    const own = meta<WorkerOptions>(WORKER_OPTIONS_METADATA, cls) ?? {};
    const base: WorkerOptions = {};
    if (q.connection !== undefined) base.connection = q.connection;
    if (q.prefix !== undefined) base.prefix = q.prefix;
    const worker = new Worker(name, (job, token) => instance.process(job, token), { ...base, ...own });
    attachWorker(instance, worker);
    this.bind(instance, ON_WORKER_EVENT_METADATA, worker);
    this.workers.push(worker);
  }

  private startListener(w: Wrapper, cls: object, l: { queueName: string; queueEventsOptions?: QueueEventsListenerOptions }): void {
    const instance = w.instance;
    if (!(instance instanceof QueueEventsHost)) {
      throw new TypeError(`Queue events listener class "${(cls as { name?: string }).name}" must extend QueueEventsHost (from echomq/nestjs)`);
    }
    const { configKey, ...own } = l.queueEventsOptions ?? {};
    const q = this.queueOptions(l.queueName, configKey);
    const base: Record<string, unknown> = {};
    if (q.connection !== undefined) base.connection = q.connection;
    if (q.prefix !== undefined) base.prefix = q.prefix;
    const events = new QueueEvents(l.queueName, { ...base, ...own });
    attachQueueEvents(instance, events);
    this.bind(instance, ON_QUEUE_EVENT_METADATA, events);
    this.listeners.push(events);
  }

  /** Subscribes every method marked with `key` to its event on `emitter`. */
  private bind(instance: any, key: string, emitter: { on(event: string, fn: (...a: any[]) => void): unknown }): void {
    for (const method of this.scanner.getAllMethodNames(Object.getPrototypeOf(instance))) {
      const m = meta<{ eventName: string }>(key, instance[method]);
      if (m) emitter.on(m.eventName, instance[method].bind(instance));
    }
  }
}

/** Holds the one Explorer (Nest dedupes a static module however often it is imported). */
export class ExplorerModule {}
common.Module({
  imports: [core.DiscoveryModule],
  providers: [{
    provide: Explorer,
    useFactory: (d: InstanceType<typeof core.DiscoveryService>, s: InstanceType<typeof core.MetadataScanner>, m: ModuleRef) => new Explorer(d, s, m),
    inject: [core.DiscoveryService, core.MetadataScanner, core.ModuleRef],
  }],
})(ExplorerModule);
