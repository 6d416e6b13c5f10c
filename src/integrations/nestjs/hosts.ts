/**
 * Base classes a NestJS processor or queue-events listener extends (as in `@nestjs/bullmq`):
 * the module gives each instance its Worker or QueueEvents once the application starts.
 */
import type { Job } from '../../job/job.js';
import type { QueueEvents } from '../../events/queue-events.js';
import type { Worker } from '../../worker/worker.js';

const WORKER = Symbol('echomq.nest.worker');
const QUEUE_EVENTS = Symbol('echomq.nest.queueEvents');

export abstract class WorkerHost<W extends Worker = Worker> {
  private [WORKER]: W | undefined;

  /** The Worker serving this processor (defined once the module has started). */
  get worker(): W {
    const w = this[WORKER];
    if (!w) throw new Error(`"${this.constructor.name}" has no worker yet: it is created when the Nest application starts`);
    return w;
  }

  /** Runs one job; its return value completes the job, a throw fails it. */
  abstract process(job: Job, token?: string): Promise<unknown>;
}

export abstract class QueueEventsHost<Q extends QueueEvents = QueueEvents> {
  private [QUEUE_EVENTS]: Q | undefined;

  /** The QueueEvents this listener reads (defined once the module has started). */
  get queueEvents(): Q {
    const q = this[QUEUE_EVENTS];
    if (!q) throw new Error(`"${this.constructor.name}" has no QueueEvents yet: it is created when the Nest application starts`);
    return q;
  }
}

/** @internal The module assigns the instances it creates. */
export function attachWorker(host: WorkerHost, worker: Worker): void {
  (host as unknown as Record<symbol, Worker>)[WORKER] = worker;
}

/** @internal */
export function attachQueueEvents(host: QueueEventsHost, events: QueueEvents): void {
  (host as unknown as Record<symbol, QueueEvents>)[QUEUE_EVENTS] = events;
}
