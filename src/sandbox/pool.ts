/**
 * The pool of sandboxed processors of one Worker: children (processes or threads) are started
 * lazily, one per job running at once, so the pool never holds more than the Worker's
 * concurrency; an idle child is reused for the next job; a child that exits, crashes or is
 * killed leaves the pool and the next job starts a fresh one.
 */
import type { Job } from '../job/job.js';
import { ClosedError } from '../core/errors.js';
import { SandboxChild, jobSnapshot, type ChildSpawnOptions } from './child.js';

export interface PoolOptions extends ChildSpawnOptions {
  /** ms a child may run on after its job's signal is aborted before it is killed. */
  gracePeriod: number;
  /** ms a closing pool waits for idle children to exit before killing them. */
  closeTimeout: number;
}

export class SandboxPool {
  private readonly idle: SandboxChild[] = [];
  private readonly live = new Set<SandboxChild>();
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly opts: PoolOptions,
  ) {}

  /** Live children (busy, idle or starting). */
  get size(): number {
    return this.live.size;
  }

  /** Runs one job in a child. signal: its abort is forwarded; a child still running `gracePeriod` ms later is killed. */
  async run(job: Job, token: string, signal: AbortSignal | undefined): Promise<unknown> {
    const child = await this.acquire();
    if (signal?.aborted) {
      this.release(child);
      throw signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
    }
    let timer: NodeJS.Timeout | undefined;
    let killed = false;
    const onAbort = () => {
      child.cancel(signal!.reason);
      timer = setTimeout(() => {
        killed = true;
        child.kill(`was terminated ${this.opts.gracePeriod} ms after its job was cancelled, as it had not stopped`);
      }, this.opts.gracePeriod);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await child.run(job, token, jobSnapshot(job));
    } catch (err) {
      // A child that ignored its cancellation and was killed: the attempt fails with the
      // cancel reason (what the processor would have thrown had it stopped). Otherwise the
      // processor's own error settles it, as BullMQ's.
      if (killed) throw signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason));
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      clearTimeout(timer);
      this.release(child);
    }
  }

  private async acquire(): Promise<SandboxChild> {
    if (this.closed) throw new ClosedError('Worker (sandboxed processor pool)');
    for (let c = this.idle.pop(); c; c = this.idle.pop()) if (!c.gone) return c;
    const child = new SandboxChild(this.file, this.opts, (c) => this.forget(c));
    this.live.add(child);
    try {
      await child.ready;
    } catch (err) {
      child.kill('failed to load');
      throw err;
    }
    return child;
  }

  private release(child: SandboxChild): void {
    if (child.gone) return;
    if (this.closed) child.stop();
    else this.idle.push(child);
  }

  private forget(child: SandboxChild): void {
    this.live.delete(child);
    const i = this.idle.indexOf(child);
    if (i >= 0) this.idle.splice(i, 1);
  }

  /**
   * Stops every child: idle ones are asked to exit and killed if they have not after
   * `closeTimeout` ms; force kills them all now (a running job fails with the kill as reason).
   * Resolves when they have exited.
   */
  async close(force = false): Promise<void> {
    this.closed = true;
    const children = [...this.live];
    this.idle.length = 0;
    for (const c of children) {
      if (force) c.kill('was killed: the worker closed (force)');
      else c.stop();
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((r) => (timer = setTimeout(r, this.opts.closeTimeout)));
    const all = Promise.all(children.map((c) => c.exited()));
    await Promise.race([all, late]);
    clearTimeout(timer);
    for (const c of children) if (!c.gone || this.live.has(c)) c.kill('was killed: it did not exit when the worker closed');
    await all;
  }
}
