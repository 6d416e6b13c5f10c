/** The connection and limits a Job works with (apart from job.ts so that helpers need not import the Job class). */
import type { ScriptContext } from '../scripts/runner.js';

/** What a Job needs to reach Redis. */
export interface JobContext extends ScriptContext {
  /** Largest JSON payload accepted (bytes) for data, progress and return values. */
  readonly maxPayloadBytes: number;
  /** Most log lines kept per job (0 = all). */
  readonly keepLogs: number;
  /** Called after a progress update is stored (the Worker re-emits it as its 'progress' event). */
  readonly onProgress?: (job: object, progress: unknown) => void;
}

/**
 * What the lock holder's calls (src/job/job-moves.ts) read and update on a job; `Job`
 * has all of it. Structural, so that job-moves needs no import of the Job class (job.ts
 * imports job-moves).
 */
export interface HeldJob {
  readonly id: string;
  name: string;
  data: unknown;
  opts: Record<string, any>;
  progress: unknown;
  delay: number;
  priority: number;
  timestamp: number;
  attemptsStarted: number;
  attemptsMade: number;
  stalledCounter: number;
  processedOn?: number;
  finishedOn?: number;
  returnvalue: unknown;
  failedReason: string;
  stacktrace: string[];
  parentKey?: string;
}

/** The statics of the Job class a lock holder builds the next claimed job with. */
export interface JobFactory {
  fromFields(ctx: JobContext, id: string, fields: readonly string[]): HeldJob;
}
