/**
 * BullMQ 6's option and connection type names, so a TypeScript program that imports them compiles
 * with only the package name changed: each is echomq's own type, or the part of it BullMQ's name
 * covers. Jobs and flows: compat-jobs.ts; telemetry: compat-telemetry.ts. The names echomq leaves
 * out are listed with reasons in test/compat/type-exports.test.ts.
 */
import type { ChainableCommander, ClusterOptions as IORedisClusterOptions } from 'ioredis';
import type { ConnectionOptions, RedisClient } from './core/redis-connection.js';
import type { JobOptions } from './core/options.js';
import type { QueueKeys } from './core/keys.js';
import type { JobState } from './job/job.js';
import type { JobSchedulerJson, SchedulerJobOptions } from './lifecycle/schedulers.js';
import type { BulkJob } from './queue/queue.js';
import type { QueueListener } from './queue/queue-listener.js';
import type { QueueOptions } from './queue/queue-options.js';
import type { WorkerOptions } from './worker/worker-options.js';

// Job options: BullMQ splits its JobsOptions into these parts; echomq has one JobOptions.
export type JobsOptions = JobOptions;
export type BulkJobOptions = NonNullable<BulkJob['opts']>;
/** The options BullMQ allows in a queue's defaultJobOptions (echomq's takes every job option). */
export type DefaultJobOptions = Pick<JobOptions,
  'timestamp' | 'priority' | 'delay' | 'attempts' | 'backoff' | 'lifo' | 'removeOnComplete' | 'removeOnFail' | 'keepLogs' | 'stackTraceLimit' | 'sizeLimit'>;
export type BaseJobOptions = DefaultJobOptions & Pick<JobOptions, 'repeatJobKey' | 'jobId' | 'parent' | 'prevMillis'>;
export type CompressableJobOptions = Pick<JobOptions,
  'deduplication' | 'failParentOnFailure' | 'continueParentOnFailure' | 'ignoreDependencyOnFailure' | 'removeDependencyOnFailure' | 'telemetry'>;
export type JobSchedulerTemplateOptions = SchedulerJobOptions;
export type JobSchedulerTemplateJson<D = any> = NonNullable<JobSchedulerJson<D>['template']>;
export type FinishedStatus = Extract<JobState, 'completed' | 'failed'>;

// Queue and Worker options: the parts BullMQ names separately.
/** What Queue, Worker, FlowProducer and QueueEvents options share (connection optional, as in echomq). */
export type QueueBaseOptions = Pick<QueueOptions, 'connection' | 'blockingConnection' | 'skipVersionCheck' | 'skipWaitingForReady' | 'telemetry'>;
export type KeyPrefixOptions = Pick<QueueOptions, 'prefix'>;
export type RedisKeyPrefixOptions = KeyPrefixOptions;
/** The options of `new JobScheduler(name, opts)` and `new Repeat(name, opts)`. */
export type RepeatBaseOptions = QueueBaseOptions & KeyPrefixOptions & Pick<QueueOptions, 'settings'>;
export type AdvancedRepeatOptions = NonNullable<QueueOptions['settings']>;
/** A Worker's `settings` with BullMQ's repeat part; echomq's Worker reads only `backoffStrategy` from it. */
export type AdvancedOptions = AdvancedRepeatOptions & NonNullable<WorkerOptions['settings']>;
export type RateLimiterOptions = NonNullable<WorkerOptions['limiter']>;
export type MetricsOptions = NonNullable<WorkerOptions['metrics']>;

// Connections: echomq talks to ioredis clients directly, so BullMQ's client names are ioredis's.
export type BaseOptions = Pick<ConnectionOptions, 'url' | 'skipVersionCheck'>;
export type RedisOptions = ConnectionOptions;
/** ioredis's cluster options, as `connection: { cluster: { nodes, options } }` takes them. */
export type ClusterOptions = IORedisClusterOptions;
export type RedisConnectionClient = RedisClient;
/** BullMQ's RedisClient is its IRedisClient; echomq's RedisClient is an ioredis Redis or Cluster. */
export type IRedisClient = RedisClient;
export type IRedisTransaction = ChainableCommander;
/** The type of `queue.keys` (echomq's key names, not BullMQ's). */
export type KeysMap = QueueKeys;
export type IoredisListener = Pick<QueueListener, 'ioredis:close'>;
