/**
 * One sandboxed processor: a child process (child_process.fork) or a worker thread running
 * child-main.mjs, which loads the processor file once and then runs one job at a time. This
 * side sends the job, answers the job-method calls the processor makes (forwarded to the
 * parent's Job, with the parent's token), forwards cancellation, and turns an exit or a crash
 * into the job's failure with a reason saying what happened.
 */
import { fork, type ChildProcess, type ForkOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker as ThreadWorker, type WorkerOptions as ThreadOptions } from 'node:worker_threads';
import * as errors from '../core/errors.js';
import type { Job } from '../job/job.js';
import { JOB_METHODS, ToChild, ToParent, errorToWire, type ChildMessage, type JobSnapshot, type ParentMessage, type WireError } from './messages.mjs';

/** The child's entry: next to this module in src/ (tests) and in dist/ (copied by the build). */
const CHILD_MAIN = new URL('./child-main.mjs', import.meta.url);

export interface ChildSpawnOptions {
  useWorkerThreads: boolean;
  workerForkOptions: ForkOptions | undefined;
  workerThreadsOptions: ThreadOptions | undefined;
}

/** The attempt a child is running. */
interface Attempt {
  job: Job;
  token: string;
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/** How much of a child process's stderr is kept to explain its death (an out-of-memory report). */
const STDERR_TAIL = 2048;

export class SandboxChild {
  /** Process id, or the worker thread's id. */
  readonly id: number;
  /** Resolves when the processor file loaded; rejects with why it did not. */
  readonly ready: Promise<void>;
  /** The child exited (or is being killed): it takes no more jobs. */
  gone = false;
  private readonly proc: ChildProcess | undefined;
  private readonly thread: ThreadWorker | undefined;
  private attempt: Attempt | undefined;
  private readyResolve!: () => void;
  private readyReject!: (err: Error) => void;
  private initDone = false;
  private stderrTail = '';
  private threadError: Error | undefined;
  /** Why we killed it, when we did. */
  private killReason: string | undefined;
  private readonly exitWaiters: Array<() => void> = [];
  private exitedAlready = false;

  constructor(
    private readonly file: string,
    opts: ChildSpawnOptions,
    private readonly onGone: (child: SandboxChild) => void,
  ) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.readyResolve = resolve;
      this.readyReject = reject;
    });
    // Nobody may await it (a child spawned and closed at once); its outcome is read elsewhere.
    this.ready.catch(() => {});
    if (opts.useWorkerThreads) {
      // Thread stdout/stderr go to the parent's process streams by default (passed through).
      const t = new ThreadWorker(CHILD_MAIN, { ...opts.workerThreadsOptions });
      this.thread = t;
      this.id = t.threadId;
      t.on('message', (m: ChildMessage) => this.onMessage(m));
      t.on('error', (err: Error) => (this.threadError = err));
      t.on('exit', (code: number) => this.onExit(code, null));
    } else {
      const p = fork(fileURLToPath(CHILD_MAIN), [], {
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'], execArgv: inheritedExecArgv(), ...opts.workerForkOptions,
      });
      this.proc = p;
      this.id = p.pid ?? -1;
      // Written through rather than piped: a pipe per child would add listeners to the parent's
      // stdout for each of them (a MaxListeners warning past ten children).
      p.stdout?.on('data', (chunk: Buffer) => process.stdout.write(chunk));
      p.stderr?.on('data', (chunk: Buffer) => {
        process.stderr.write(chunk);
        this.stderrTail = (this.stderrTail + chunk.toString()).slice(-STDERR_TAIL);
      });
      p.on('message', (m: ChildMessage) => this.onMessage(m));
      p.on('error', (err: Error) => {
        // A child that could not be spawned has no exit to wait for; other errors are sends
        // to a dead child, whose exit explains the failure.
        if (p.pid === undefined) this.onExit(null, null, `could not be started: ${err.message}`);
      });
      p.on('exit', (code, signal) => this.onExit(code, signal));
    }
    this.send({ t: ToChild.INIT, file });
  }

  /** Runs one job; resolves with the processor's return value, rejects with its error or the child's death. */
  run(job: Job, token: string, snapshot: JobSnapshot): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.attempt = { job, token, resolve, reject };
      this.send({ t: ToChild.START, job: snapshot, token });
    });
  }

  /** Aborts the running job's signal in the child. */
  cancel(reason: unknown): void {
    if (typeof reason === 'string') this.send({ t: ToChild.CANCEL, reason });
    else this.send({ t: ToChild.CANCEL, error: errorToWire(reason) });
  }

  /** Asks an idle child to exit. */
  stop(): void {
    this.send({ t: ToChild.STOP });
  }

  /** Kills the child now (SIGKILL, or terminate() for a thread); `why` becomes the running job's reason. */
  kill(why: string): void {
    this.killReason ??= why;
    this.gone = true;
    if (this.thread) void this.thread.terminate();
    else this.proc?.kill('SIGKILL');
  }

  /** Resolves once the child has exited. */
  exited(): Promise<void> {
    if (this.exitedAlready) return Promise.resolve();
    return new Promise((r) => this.exitWaiters.push(r));
  }

  private send(msg: ParentMessage): void {
    try {
      if (this.thread) this.thread.postMessage(msg);
      else if (this.proc?.connected) this.proc.send(msg);
    } catch {
      // The child is gone or going; its exit reports it.
    }
  }

  private onMessage(m: ChildMessage): void {
    switch (m.t) {
      case ToParent.DONE:
        return this.settle((a) => a.resolve(m.value));
      case ToParent.FAILED:
        // fatal: an uncaught error in the child; it exits, so it is not reused.
        if (m.fatal) this.gone = true;
        return this.settle((a) => a.reject(wireToError(m.error)));
      case ToParent.CALL:
        return this.call(m.rid, m.method, m.args);
      case ToParent.READY:
        this.initDone = true;
        return this.readyResolve();
      case ToParent.LOAD_FAILED: {
        this.initDone = true;
        this.gone = true;
        const err = wireToError(m.error);
        err.message = `${err.message} (failed to load: ${this.file})`;
        return this.readyReject(err);
      }
    }
  }

  private settle(fn: (a: Attempt) => void): void {
    const a = this.attempt;
    if (!a) return;
    this.attempt = undefined;
    fn(a);
  }

  /** job[method](...args) in the parent, with the parent's token, answered with a REPLY. */
  private call(rid: number, method: string, args: unknown[]): void {
    const a = this.attempt;
    const tokenAt = (JOB_METHODS as Record<string, number>)[method];
    const reply = (p: Promise<unknown>) =>
      p.then(
        (value) => this.send({ t: ToChild.REPLY, rid, ok: true, value }),
        (err: unknown) => this.send({ t: ToChild.REPLY, rid, ok: false, error: errorToWire(err) }),
      );
    if (!a) return void reply(Promise.reject(new Error(`job.${method}: the job's attempt is over`)));
    const fn = tokenAt === undefined ? undefined : (a.job as unknown as Record<string, unknown>)[method];
    if (typeof fn !== 'function') {
      return void reply(Promise.reject(new Error(`job.${method} is not available to sandboxed processors`)));
    }
    const callArgs = Array.isArray(args) ? args.slice() : [];
    if (tokenAt >= 0) {
      while (callArgs.length < tokenAt) callArgs.push(undefined);
      callArgs[tokenAt] = a.token;
    }
    void reply(Promise.resolve().then(() => (fn as (...x: unknown[]) => unknown).apply(a.job, callArgs)));
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null, why?: string): void {
    if (this.exitedAlready) return;
    this.gone = true;
    this.exitedAlready = true;
    const what = why ?? this.describeExit(code, signal);
    if (!this.initDone) this.readyReject(new Error(`Error initializing child: ${what} (failed to load: ${this.file})`));
    // BullMQ's text first, then what happened.
    this.settle((a) => a.reject(new Error(`Unexpected exit code: ${code} signal: ${signal} (the sandboxed processor ${what})`)));
    this.onGone(this);
    for (const w of this.exitWaiters.splice(0)) w();
  }

  private describeExit(code: number | null, signal: NodeJS.Signals | null): string {
    if (this.killReason !== undefined) return this.killReason;
    if (this.threadError && (this.threadError as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return `ran out of memory (${this.threadError.message})`;
    }
    const oom = /heap out of memory|allocation failed/i.test(this.stderrTail) ? ', out of memory' : '';
    if (signal) return `was killed by ${signal}${oom}`;
    if (this.threadError) return `exited with code ${code} after an uncaught ${this.threadError.name}: ${this.threadError.message}`;
    return `exited with code ${code}${oom}`;
  }
}

/**
 * The parent's execArgv for a child process, with an inspector flag moved to a free port (port
 * 0): children listening on the parent's inspector port would fail to start.
 */
function inheritedExecArgv(): string[] {
  return process.execArgv.map((arg) => {
    const m = /^(--inspect(?:-brk|-wait)?|--inspect-port|--debug-port)(?:=(?:(.*):)?\d+)?$/.exec(arg);
    if (!m) return arg;
    return `${m[1]}=${m[2] ? `${m[2]}:` : ''}0`;
  });
}

/** The job fields a sandboxed processor sees (the methods are added in the child). */
export function jobSnapshot(job: Job): JobSnapshot {
  return {
    id: job.id,
    name: job.name,
    data: job.data,
    opts: job.opts,
    queueName: job.queueName,
    lane: job.lane,
    priority: job.priority,
    delay: job.delay,
    attemptsMade: job.attemptsMade,
    attemptsStarted: job.attemptsStarted,
    stalledCounter: job.stalledCounter,
    timestamp: job.timestamp,
    processedOn: job.processedOn,
    progress: job.progress,
    parent: job.parent,
    parentKey: job.parentKey,
    repeatJobKey: job.repeatJobKey,
  };
}

/** Error classes whose meaning the Worker reads (by class or name): rebuilt as such in the parent. */
const KNOWN_ERRORS = new Set(['UnrecoverableError', 'RateLimitError', 'DelayedError', 'WaitingError', 'WaitingChildrenError']);

/** The child's error in the parent: same message, name, stack and fields; a known class when it is one. */
export function wireToError(w: WireError): Error {
  const Ctor = KNOWN_ERRORS.has(w.name) ? (errors as unknown as Record<string, unknown>)[w.name] : undefined;
  const err: Error = typeof Ctor === 'function' ? Object.create((Ctor as { prototype: object }).prototype) : new Error();
  Object.defineProperty(err, 'message', { value: w.message, writable: true, configurable: true, enumerable: false });
  Object.defineProperty(err, 'name', { value: w.name, writable: true, configurable: true, enumerable: false });
  Object.defineProperty(err, 'stack', { value: w.stack ?? `${w.name}: ${w.message}`, writable: true, configurable: true, enumerable: false });
  if (w.props) Object.assign(err, w.props);
  return err;
}
