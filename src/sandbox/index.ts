/**
 * Sandboxed processors: `new Worker(name, '/path/to/processor.js', opts)` runs the processor
 * in child processes (default) or worker threads (`useWorkerThreads`), so a processor that
 * blocks its event loop, crashes or exits takes down only its own job (docs/sandboxed.md).
 * The Worker sees an ordinary `(job, token, signal)` processor (createSandboxProcessor).
 */
import type { ForkOptions } from 'node:child_process';
import type { WorkerOptions as WorkerThreadsOptions } from 'node:worker_threads';
import type { Job } from '../job/job.js';
import * as v from '../core/validate.js';
import { SandboxPool } from './pool.js';
import { resolveProcessorFile } from './processor-file.js';

export { ProcessorFileError } from './processor-file.js';

/** The Worker options of sandboxed processors (BullMQ's SandboxedOptions, plus the grace period). */
export interface SandboxedOptions {
  /** Run the processor file in worker threads instead of child processes. Default false. */
  useWorkerThreads?: boolean;
  /** Options of child_process.fork for each child (env, execArgv, stdio…), when not in threads. */
  workerForkOptions?: ForkOptions;
  /** Options of `new worker_threads.Worker` for each thread (env, execArgv, resourceLimits…). */
  workerThreadsOptions?: WorkerThreadsOptions;
  /**
   * echomq: ms a sandboxed processor may keep running after its job is cancelled (cancelJob,
   * a lost lease, close(true)) before its child is killed. Default 5000.
   */
  sandboxGracePeriod?: number;
}

export interface SandboxProcessor {
  processor: (job: Job, token: string, signal: AbortSignal) => Promise<unknown>;
  /** Stops the children (force: kill them now). */
  close(force?: boolean): Promise<void>;
  /** @internal Live children, for tests. */
  readonly size: number;
}

/** Builds the inline processor of a Worker given a processor file; throws at once if the file does not exist. */
export function createSandboxProcessor(processor: string | URL, opts: SandboxedOptions): SandboxProcessor {
  const file = resolveProcessorFile(processor);
  const useWorkerThreads = opts.useWorkerThreads === undefined ? false : v.boolean('useWorkerThreads', opts.useWorkerThreads);
  const fork = opts.workerForkOptions === undefined ? undefined : (v.plainObject('workerForkOptions', opts.workerForkOptions) as ForkOptions);
  const threads =
    opts.workerThreadsOptions === undefined ? undefined : (v.plainObject('workerThreadsOptions', opts.workerThreadsOptions) as WorkerThreadsOptions);
  if (fork?.execArgv !== undefined) stringList('workerForkOptions.execArgv', fork.execArgv);
  if (threads?.execArgv !== undefined) stringList('workerThreadsOptions.execArgv', threads.execArgv);
  const gracePeriod = opts.sandboxGracePeriod === undefined ? 5000 : v.integerIn('sandboxGracePeriod', opts.sandboxGracePeriod, 0, 86_400_000);
  const pool = new SandboxPool(file, {
    useWorkerThreads,
    workerForkOptions: fork,
    workerThreadsOptions: threads,
    gracePeriod,
    closeTimeout: Math.max(gracePeriod, 1000),
  });
  return {
    // Three declared parameters: the Worker passes the signal (worker.ts processorAcceptsSignal).
    processor: (job, token, signal) => pool.run(job, token, signal),
    close: (force) => pool.close(force),
    get size() {
      return pool.size;
    },
  };
}

function stringList(field: string, value: unknown): void {
  if (!Array.isArray(value) || value.some((s) => typeof s !== 'string')) v.fail(field, 'an array of strings', value);
}
