/** echomq: a fair, exact-priority job queue for Node.js on Redis. */
export { Queue, type QueueOptions, type BulkJob, type CleanState, type RetryJobsOptions } from './queue/queue.js';
export { QueueBase } from './queue/queue-base.js';
export { QueueGetters } from './queue/queue-getters.js';
export { type QueueListener, type ObliterateOpts, type JobProgress } from './queue/queue-listener.js';
export { Worker, type WorkerOptions, type Processor } from './worker/worker.js';
export { ProcessorFileError, type SandboxedOptions } from './sandbox/index.js';
export { type WorkerListener, type GetNextJobOptions } from './worker/worker-options.js';
export { FlowProducer, type FlowProducerOptions, type FlowJob, type FlowJobOptions, type JobNode, type FlowOpts } from './lifecycle/flow-producer.js';
export { type Dependencies } from './job/flows.js';
export { JobScheduler, Repeat, type RepeatableJob } from './queue/repeat.js';
export { type RepeatOptions, type JobSchedulerTemplate, type JobSchedulerJson, type SchedulerJobOptions, nextCronSlot } from './lifecycle/schedulers.js';
export { Job, type JobState, type JobContext } from './job/job.js';
export { type RetryOptions, type JobJson, type JobJsonSandbox, type ParentKeys } from './job/job.js';
export { type DependenciesOpts, type DependencyOpts, type JobDependencies, type DependencyCounts } from './job/job.js';
export { LaneControls } from './lanes/lanes.js';
// BullMQ Pro's class names are the classes themselves: one code path, the group methods declared on them.
export { Queue as QueuePro } from './queue/queue.js';
export { Worker as WorkerPro } from './worker/worker.js';
export { Job as JobPro } from './job/job.js';
export { FlowProducer as FlowProducerPro } from './lifecycle/flow-producer.js';
export { GroupMaxSizeExceededError } from './pro/errors.js';
export { type WorkerGroupOptions, type GroupStatus, GROUP_STATUSES } from './pro/groups.js';
export type { GroupOptions } from './core/options.js';
export { type LaneInfo, type JobCounts, type JobStateName, JOB_STATES } from './ops/inspect.js';
export { type JobType, JOB_TYPES, DEFAULT_JOB_TYPES } from './ops/inspect.js';
export { type QueueMeta, type DependencyItem } from './queue/queue-getters.js';
export { type Metrics } from './queue/queue-metrics.js';
export { type ClientInfo } from './queue/workers-list.js';
export { type JobOptions, type KeepJobs, type DeduplicationOptions, DEFAULT_LANE, DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, DEFAULT_MAX_PAYLOAD } from './core/options.js';
export { type ParentOptions, type RepeatStrategy, type QueueCompatOptions } from './core/options.js';
export { type BackoffOptions, type BackoffStrategy, type BuiltInStrategies, backoffDelay, Backoffs } from './core/backoff.js';
export {
  EchoError,
  ValidationError,
  JobNotFoundError,
  StaleJobError,
  InvalidStateError,
  ActiveJobsError,
  ClosedError,
  IncompatibleLayoutError,
  RequestOutcomeUnknownError,
  RedisUnreachableError,
  RedisRefusedError,
  UnrecoverableError,
  RateLimitError,
  DelayedError,
  WaitingChildrenError,
  WaitingError,
  ConnectionClosedError,
  ErrorCode,
  UNRECOVERABLE_ERROR,
  RATE_LIMIT_ERROR,
  DELAYED_ERROR,
  WAITING_CHILDREN_ERROR,
  WAITING_ERROR,
  CONNECTION_CLOSED_ERROR_MSG,
} from './core/errors.js';
export { BULLMQ_MAJOR_VERSION, PRIORITY_LIMIT, QUEUE_EVENT_SUFFIX, DELAY_TIME_1, DELAY_TIME_5, MetricsTime, ClientType, SpanKind } from './core/constants.js';
export { QueueEvents, type QueueEventsOptions, type QueueEventsListener } from './events/queue-events.js';
export { QueueEventsProducer, type QueueEventsProducerOptions } from './events/queue-events-producer.js';
export { queueKeys, escapeQueueName, shardQueueName, type QueueKeys } from './core/keys.js';
export { ShardedQueue, ShardCountError, CrossShardError, laneShard, MAX_SHARDS } from './cluster/sharded.js';
export { ShardedWorker } from './cluster/sharded-worker.js';
export { MAX_PRIORITY } from './core/validate.js';
export { type ConnectionInput, type ClusterConnection, type RedisClient } from './core/connection.js';
export { RedisConnection, type RedisConnectionExtraOptions, type ConnectionOptions, type DatabaseType } from './core/redis-connection.js';
export {
  delay, randomUUID, lengthInUtf8Bytes, isEmpty, array2obj, objectToFlatArray, removeUndefinedFields, invertObject,
  parseObjectValues, increaseMaxListeners, decreaseMaxListeners, isRedisInstance, isRedisCluster, getParentKey,
  isNotConnectionError, errorToJSON, removeAllQueueData, errorObject, tryCatch, isRedisVersionLowerThan, toString,
  clientCommandMessageReg, forwardConnectionError,
} from './core/utils.js';
export { LEGACY_REPEATABLE_JOBS_MIGRATION_URL, defaultRepeatStrategy, getNextMillis, type RepeatStrategyOptions } from './lifecycle/repeat-strategy.js';
// BullMQ 6's type names over echomq's types (the ones left out: test/compat/type-exports.test.ts).
export type * from './compat-types.js';
export type * from './compat-jobs.js';
export type * from './compat-telemetry.js';
// Moving BullMQ queues' data into echomq (docs/migrating-from-bullmq.md "Moving a live queue").
export { migrateFromBullMQ, migrationText, REFUSAL_REASONS, type MigrateOptions, type MigrationReport, type QueueMigration } from './migrate/migrate.js';
export { MigrationRefusedError } from './migrate/checks.js';
export type { FollowProgress, FollowStats, Collision } from './migrate/follow.js';
// Moving echomq queues back into BullMQ's layout (docs/migrating-from-bullmq.md "Going back").
export { migrateToBullMQ, migrationBackText, type MigrationBackReport, type QueueMigrationBack } from './migrate/back.js';
