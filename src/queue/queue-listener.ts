/**
 * Types of the Queue's public surface that BullMQ names: its instance events (QueueListener),
 * ObliterateOpts and JobProgress. Kept apart so queue.ts stays about commands.
 */
import type { Job } from '../job/job.js';

/** A job's progress as BullMQ types it (stored as JSON). */
export type JobProgress = string | boolean | number | object;

/** BullMQ's ObliterateOpts. */
export interface ObliterateOpts {
  /** Also delete active jobs. Default false. */
  force?: boolean;
  /** Most jobs deleted per Redis call. Default 500 (BullMQ: 1000 keys). */
  count?: number;
}

/** Instance events of a Queue (BullMQ's QueueListener). */
export interface QueueListener<J = Job> {
  /** After clean(): the ids removed (per chunk of up to 10,000) and the type ('waiting' reported as 'wait'). */
  cleaned: (jobs: string[], type: string) => void;
  /** A connection error, or an exception thrown by another listener. */
  error: (err: Error) => void;
  /** After pause() (and obliterate(), which pauses first). */
  paused: () => void;
  /** After updateJobProgress(). */
  progress: (jobId: string, progress: JobProgress) => void;
  /** After remove() returned 1. */
  removed: (jobId: string) => void;
  /** After resume(). */
  resumed: () => void;
  /** After add(), with the new job (BullMQ emits it from add only, not from addBulk). */
  waiting: (job: J) => void;
  /** The connection closed while the queue was open. */
  'ioredis:close': () => void;
}
