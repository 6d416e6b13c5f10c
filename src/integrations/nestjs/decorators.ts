/**
 * Decorators with `@nestjs/bullmq`'s names and arguments: InjectQueue, InjectFlowProducer,
 * Processor, OnWorkerEvent, QueueEventsListener, OnQueueEvent.
 */
import type { QueueEventsOptions } from '../../events/queue-events.js';
import type { WorkerOptions } from '../../worker/worker.js';
import { common } from './nest.js';
import {
  getFlowProducerToken, getQueueToken, ON_QUEUE_EVENT_METADATA, ON_WORKER_EVENT_METADATA, PROCESSOR_METADATA,
  QUEUE_EVENTS_LISTENER_METADATA, WORKER_OPTIONS_METADATA,
} from './tokens.js';

/** Injects the queue registered with `registerQueue({ name })`. */
export const InjectQueue = (name?: string): ParameterDecorator & PropertyDecorator => common.Inject(getQueueToken(name));

/** Injects the flow producer registered with `registerFlowProducer({ name })`. */
export const InjectFlowProducer = (name?: string): ParameterDecorator & PropertyDecorator => common.Inject(getFlowProducerToken(name));

export interface ProcessorOptions {
  /** The queue this processor serves. */
  name?: string;
  /** Which forRoot configuration to use (forRoot(configKey, options)). */
  configKey?: string;
  /** Nest provider scope. */
  scope?: import('@nestjs/common').Scope;
}

/**
 * Marks a class extending WorkerHost as the processor of a queue: the module starts a Worker
 * for it with `workerOptions` on top of the queue's shared configuration.
 */
export function Processor(queueNameOrOptions: string | ProcessorOptions, workerOptions?: WorkerOptions): ClassDecorator {
  const options: ProcessorOptions = typeof queueNameOrOptions === 'string' ? { name: queueNameOrOptions } : queueNameOrOptions;
  return (target) => {
    common.SetMetadata(PROCESSOR_METADATA, options)(target);
    if (workerOptions) common.SetMetadata(WORKER_OPTIONS_METADATA, workerOptions)(target);
    if (options.scope !== undefined) common.Injectable({ scope: options.scope })(target);
  };
}

/** Runs the method on a Worker event (`completed`, `failed`, `active`, `progress`, …). */
export const OnWorkerEvent = (eventName: string): MethodDecorator => common.SetMetadata(ON_WORKER_EVENT_METADATA, { eventName });

export interface QueueEventsListenerOptions extends QueueEventsOptions {
  configKey?: string;
}

/** Marks a class extending QueueEventsHost as a listener of a queue's events. */
export const QueueEventsListener = (queueName: string, queueEventsOptions?: QueueEventsListenerOptions): ClassDecorator =>
  common.SetMetadata(QUEUE_EVENTS_LISTENER_METADATA, { queueName, queueEventsOptions });

/** Runs the method on a QueueEvents event (`completed`, `failed`, `waiting`, …). */
export const OnQueueEvent = (eventName: string): MethodDecorator => common.SetMetadata(ON_QUEUE_EVENT_METADATA, { eventName });
