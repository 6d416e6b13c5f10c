/**
 * Injection tokens and metadata keys, named as in `@nestjs/bullmq` so that code calling
 * `getQueueToken(name)` (tests overriding a queue provider, for example) keeps working.
 */
export const DEFAULT_NAME = 'default';
export const DEFAULT_CONFIG_KEY = 'BULLMQ_DEFAULT_CONFIG';

/** Provider token of the queue registered as `name`. */
export const getQueueToken = (name?: string): string => (name ? `BullQueue_${name}` : 'BullQueue_default');
/** Provider token of the flow producer registered as `name`. */
export const getFlowProducerToken = (name?: string): string => (name ? `BullFlowProducer_${name}` : 'BullFlowProducer_default');
/** Provider token of a shared configuration given to forRoot (under `configKey`). */
export const getSharedConfigToken = (configKey?: string): string => (configKey ? `BullMQConfig_${configKey}` : DEFAULT_CONFIG_KEY);

export const PROCESSOR_METADATA = 'echomq:nest:processor';
export const WORKER_OPTIONS_METADATA = 'echomq:nest:worker-options';
export const ON_WORKER_EVENT_METADATA = 'echomq:nest:on-worker-event';
export const QUEUE_EVENTS_LISTENER_METADATA = 'echomq:nest:queue-events-listener';
export const ON_QUEUE_EVENT_METADATA = 'echomq:nest:on-queue-event';
