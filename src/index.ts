/** echomq: a fair, exact-priority job queue for Node.js on Redis. */
export { Queue, type QueueOptions, type BulkJob, type CleanState } from './queue.js';
export { Worker, type WorkerOptions, type Processor } from './worker.js';
export { ProcessorFileError, type SandboxedOptions } from './sandbox/index.js';
export { FlowProducer, type FlowProducerOptions, type FlowJob, type FlowJobOptions, type JobNode } from './flow-producer.js';
export { type Dependencies } from './flows.js';
export { type RepeatOptions, type JobSchedulerTemplate, type JobSchedulerJson, type SchedulerJobOptions, nextCronSlot } from './schedulers.js';
export { Job, type JobState, type JobContext } from './job.js';
export { LaneControls } from './lanes.js';
export { QueuePro, WorkerPro, JobPro, FlowProducerPro, GroupMaxSizeExceededError, type WorkerGroupOptions, type GroupOptions, type GroupStatus, GROUP_STATUSES } from './pro/index.js';
export { type LaneInfo, type JobCounts, type JobStateName, JOB_STATES } from './inspect.js';
export { type JobType, JOB_TYPES, DEFAULT_JOB_TYPES } from './inspect.js';
export { type QueueMeta, type DependencyItem } from './queue-getters.js';
export { type Metrics } from './queue-metrics.js';
export { type ClientInfo } from './workers-list.js';
export { type JobOptions, type KeepJobs, type DeduplicationOptions, DEFAULT_LANE, DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, DEFAULT_MAX_PAYLOAD } from './options.js';
export { type BackoffOptions, type BackoffStrategy, backoffDelay } from './backoff.js';
export {
  EchoError,
  ValidationError,
  JobNotFoundError,
  StaleJobError,
  InvalidStateError,
  ActiveJobsError,
  ClosedError,
  UnrecoverableError,
  RateLimitError,
} from './errors.js';
export { QueueEvents, type QueueEventsOptions, type QueueEventsListener } from './queue-events.js';
export { queueKeys, escapeQueueName, shardQueueName, type QueueKeys } from './keys.js';
export { ShardedQueue, ShardCountError, CrossShardError, laneShard, MAX_SHARDS } from './sharded.js';
export { ShardedWorker } from './sharded-worker.js';
export { MAX_PRIORITY } from './validate.js';
export { type ConnectionInput, type ClusterConnection, type RedisClient } from './connection.js';
export {
  delay, randomUUID, lengthInUtf8Bytes, isEmpty, array2obj, objectToFlatArray, removeUndefinedFields, invertObject,
  parseObjectValues, increaseMaxListeners, decreaseMaxListeners, isRedisInstance, isRedisCluster, getParentKey,
  isNotConnectionError, errorToJSON, removeAllQueueData, QUEUE_EVENT_SUFFIX, DELAY_TIME_1, DELAY_TIME_5,
} from './utils.js';
