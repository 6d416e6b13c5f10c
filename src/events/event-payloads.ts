/**
 * From stream entries to the events QueueEvents emits, with BullMQ's names and payloads.
 *
 * The scripts write as few entries as they can (the hot path must not pay for events nobody
 * reads): one entry stands for several events where the second follows from the first, and
 * QueueEvents expands it here. Each rule below names the script that writes the entry:
 *
 *   added + then=waiting     → added, waiting                     (lib/newjob.lua)
 *   delayed (delay as text)  → delayed with delay a number        (BullMQ parses it too)
 *   failed + exhausted=<n>   → failed, retries-exhausted (n)      (fail.lua, recover.lua)
 *   failed + stalled=1       → stalled, failed                    (recover.lua: stalled too often)
 *   stalled                  → waiting (prev active), stalled     (recover.lua: requeued)
 *   duplicated + dedupId     → deduplicated                       (add.lua: a live job holds the id)
 *   completed / progress     → returnvalue / data parsed from JSON
 *
 * Entries this file does not know (custom events of a QueueEventsProducer, echomq's own
 * events) pass through with their fields as written.
 */
import { parseJson } from '../core/values.js';

export type EventArgs = Record<string, unknown>;

/** One event to emit: its name and the listener's first argument. */
export interface Emitted {
  event: string;
  args: EventArgs;
}

/**
 * The events one job's part of a stream entry stands for, in order. `args` holds the entry's
 * fields for that job (shared fields included) without `event`; it may be modified.
 */
export function expandEntry(event: string, args: EventArgs): Emitted[] {
  switch (event) {
    case 'added': {
      const then = args.then;
      if (then === undefined) return [{ event, args }];
      delete args.then;
      args.delay ??= '0'; // implied by then: 'waiting'
      const out: Emitted[] = [{ event, args }];
      if (then === 'waiting') out.push({ event: 'waiting', args: { jobId: args.jobId } });
      return out;
    }
    case 'delayed':
      if (typeof args.delay === 'string') args.delay = Number(args.delay);
      return [{ event, args }];
    case 'completed':
      if (typeof args.returnvalue === 'string') args.returnvalue = parseJson(args.returnvalue);
      return [{ event, args }];
    case 'progress':
      if (typeof args.data === 'string') args.data = parseJson(args.data);
      return [{ event, args }];
    case 'failed': {
      const { stalled, exhausted } = args;
      if (stalled === undefined && exhausted === undefined) return [{ event, args }];
      delete args.stalled;
      delete args.exhausted;
      const out: Emitted[] = [];
      if (stalled !== undefined) out.push({ event: 'stalled', args: { jobId: args.jobId } });
      out.push({ event, args });
      if (exhausted !== undefined) out.push({ event: 'retries-exhausted', args: { jobId: args.jobId, attemptsMade: exhausted } });
      return out;
    }
    case 'stalled':
      // A requeued stalled job went from active back to wait, which BullMQ reports first.
      if (args.jobId === undefined) return [{ event, args }];
      return [
        { event: 'waiting', args: { jobId: args.jobId, prev: 'active' } },
        { event, args },
      ];
    case 'duplicated': {
      if (args.dedupId === undefined) return [{ event, args }];
      const out: EventArgs = { jobId: args.jobId, deduplicationId: args.dedupId };
      // The refused job's id, when the add named one (generated ids are not drawn for it).
      if (args.attempted !== undefined) out.deduplicatedJobId = args.attempted;
      return [{ event: 'deduplicated', args: out }];
    }
    default:
      return [{ event, args }];
  }
}

