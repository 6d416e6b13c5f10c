/** echomq: a fair, exact-priority job queue for Node.js on Redis. */
export { Queue, type QueueOptions, type BulkJob, type CleanState } from './queue.js';
export { Worker, type WorkerOptions, type Processor } from './worker.js';
export { Job, type JobState, type JobContext } from './job.js';
export { LaneControls } from './lanes.js';
export { type LaneInfo, type JobCounts, type JobStateName, JOB_STATES } from './inspect.js';
export { type JobOptions, type KeepJobs, DEFAULT_LANE, DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, DEFAULT_MAX_PAYLOAD } from './options.js';
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
} from './errors.js';
export { queueKeys, escapeQueueName, type QueueKeys } from './keys.js';
export { MAX_PRIORITY } from './validate.js';
export { type ConnectionInput, type RedisClient } from './connection.js';
