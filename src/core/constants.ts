/**
 * BullMQ's exported constants that are not errors (those live in errors.ts), with BullMQ's
 * values, so a BullMQ program that imports them runs unchanged. Where echomq has its own
 * equivalent, the comment says which.
 */
import { enumOf } from './errors.js';
import { MAX_PRIORITY } from './validate.js';

/** The BullMQ major version whose public API echomq keeps. */
export const BULLMQ_MAJOR_VERSION = 6;

/** Highest job priority (BullMQ's name for echomq's MAX_PRIORITY: 2^21 - 1). */
export const PRIORITY_LIMIT: number = MAX_PRIORITY;

/** Suffix of the Redis client name of a QueueEvents connection (what Queue.getQueueEvents() matches). */
export const QUEUE_EVENT_SUFFIX = ':qe';

/** BullMQ's short and long retry delays (ms) for calls that failed on a connection error. */
export const DELAY_TIME_1 = 100;
export const DELAY_TIME_5 = 5000;

const METRICS_TIME = {
  ONE_MINUTE: 1,
  FIVE_MINUTES: 5,
  FIFTEEN_MINUTES: 15,
  THIRTY_MINUTES: 30,
  ONE_HOUR: 60,
  ONE_WEEK: 10080,
  TWO_WEEKS: 20160,
  ONE_MONTH: 80640,
} as const;
/**
 * Data points (one per minute) to keep for a worker's `metrics: { maxDataPoints }`, by span of
 * time: `MetricsTime.ONE_WEEK` = 10080 points.
 */
export const MetricsTime = enumOf(METRICS_TIME);
export type MetricsTime = (typeof METRICS_TIME)[keyof typeof METRICS_TIME];

/** BullMQ's kinds of Redis connection (a string enum). */
export const ClientType = Object.freeze({ blocking: 'blocking', normal: 'normal' } as const);
export type ClientType = (typeof ClientType)[keyof typeof ClientType];

/**
 * BullMQ's span kinds (OpenTelemetry's values), for code that implements BullMQ's Telemetry
 * interface. echomq's own spans come from @opentelemetry/api (src/ops/tracing.ts).
 */
const SPAN_KIND = { INTERNAL: 0, SERVER: 1, CLIENT: 2, PRODUCER: 3, CONSUMER: 4 } as const;
export const SpanKind = enumOf(SPAN_KIND);
export type SpanKind = (typeof SPAN_KIND)[keyof typeof SPAN_KIND];
