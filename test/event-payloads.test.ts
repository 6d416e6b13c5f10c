// Pure unit tests of the entry → events expansion QueueEvents applies (src/events/event-payloads.ts).
import { describe, expect, it } from 'vitest';
import { expandEntry } from '../src/events/event-payloads.js';

const ex = (event: string, args: Record<string, unknown>) => expandEntry(event, { ...args }).map((e) => [e.event, e.args]);

describe('expandEntry', () => {
  it('added with then=waiting is added (delay 0) and waiting', () => {
    expect(ex('added', { jobId: '1', name: 'a', lane: 'default', then: 'waiting' })).toEqual([
      ['added', { jobId: '1', name: 'a', lane: 'default', delay: '0' }],
      ['waiting', { jobId: '1' }],
    ]);
    expect(ex('added', { jobId: '1', name: 'a', lane: 'default', delay: '50' })).toEqual([['added', { jobId: '1', name: 'a', lane: 'default', delay: '50' }]]);
  });

  it('failed carries retries-exhausted and the stall of a stall failure', () => {
    expect(ex('failed', { jobId: '1', failedReason: 'x', prev: 'active', exhausted: '2' })).toEqual([
      ['failed', { jobId: '1', failedReason: 'x', prev: 'active' }],
      ['retries-exhausted', { jobId: '1', attemptsMade: '2' }],
    ]);
    expect(ex('failed', { jobId: '1', failedReason: 'r', prev: 'active', stalled: '1' })).toEqual([
      ['stalled', { jobId: '1' }],
      ['failed', { jobId: '1', failedReason: 'r', prev: 'active' }],
    ]);
    expect(ex('failed', { jobId: '1', failedReason: 'x', prev: 'waiting-children' })).toEqual([['failed', { jobId: '1', failedReason: 'x', prev: 'waiting-children' }]]);
  });

  it('a requeued stall is waiting (prev active) then stalled', () => {
    expect(ex('stalled', { jobId: '7' })).toEqual([['waiting', { jobId: '7', prev: 'active' }], ['stalled', { jobId: '7' }]]);
  });

  it('duplicated with a deduplication id is BullMQ deduplicated; without, duplicated', () => {
    expect(ex('duplicated', { jobId: 'h', dedupId: 'd', attempted: 'mine' })).toEqual([['deduplicated', { jobId: 'h', deduplicationId: 'd', deduplicatedJobId: 'mine' }]]);
    expect(ex('duplicated', { jobId: 'h', dedupId: 'd' })).toEqual([['deduplicated', { jobId: 'h', deduplicationId: 'd' }]]);
    expect(ex('duplicated', { jobId: 'h' })).toEqual([['duplicated', { jobId: 'h' }]]);
  });

  it('parses delayed.delay, completed.returnvalue and progress.data; other events pass through', () => {
    expect(ex('delayed', { jobId: '1', delay: '1700000000000' })).toEqual([['delayed', { jobId: '1', delay: 1700000000000 }]]);
    expect(ex('completed', { jobId: '1', returnvalue: '{"a":1}', prev: 'active' })).toEqual([['completed', { jobId: '1', returnvalue: { a: 1 }, prev: 'active' }]]);
    expect(ex('progress', { jobId: '1', data: 'not json' })).toEqual([['progress', { jobId: '1', data: 'not json' }]]);
    expect(ex('report', { step: '3', then: 'x' })).toEqual([['report', { step: '3', then: 'x' }]]);
  });
});
