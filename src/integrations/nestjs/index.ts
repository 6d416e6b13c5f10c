/**
 * echomq for NestJS: `@nestjs/bullmq`'s module, decorators and host classes under the same
 * names, so changing the import from '@nestjs/bullmq' to 'echomq/nestjs' is the whole switch.
 * Needs `@nestjs/common`, `@nestjs/core` and `reflect-metadata` (optional peer dependencies).
 */
export { BullModule, EchoMQModule, type BullRootModuleOptions, type RegisterQueueOptions, type RegisterFlowProducerOptions,
  type RegisterQueueAsyncOptions, type RegisterFlowProducerAsyncOptions, type SharedBullAsyncConfiguration,
  type SharedBullConfigurationFactory } from './module.js';
export { InjectQueue, InjectFlowProducer, Processor, OnWorkerEvent, QueueEventsListener, OnQueueEvent, type ProcessorOptions,
  type QueueEventsListenerOptions } from './decorators.js';
export { WorkerHost, QueueEventsHost } from './hosts.js';
export { getQueueToken, getFlowProducerToken, getSharedConfigToken } from './tokens.js';
