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
