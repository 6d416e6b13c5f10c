// Bad input, table-driven: every public entry refuses it with a ValidationError whose message
// names the field, the expected form and the value it got, and leaves Redis byte-for-byte
// unchanged (checked with DUMP of every key of a queue that already holds jobs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker, ValidationError, MAX_PRIORITY, type Job } from '../src/index.js';
import { client, keysOf, qname, redisUrl, snapshot } from './helpers.js';

type Call = (queue: Queue, job: Job) => unknown;

interface Case {
  label: string;
  call: Call;
  field: string;
  /** A piece of the expected form that must appear in the message. */
  expected: string;
  got: string;
}

const cycle: Record<string, unknown> = { a: 1 };
cycle.self = cycle;

/** An add() call; data and name are taken as given, even when undefined. */
const add = (opts: unknown, ...rest: [data?: unknown, name?: unknown]): Call => {
  const data = rest.length >= 1 ? rest[0] : { ok: true };
  const name = rest.length >= 2 ? rest[1] : 'job';
  return (q) => q.add(name as string, data, opts as never);
};

const cases: Case[] = [
  // priority
  { label: 'priority 2.5', call: add({ priority: 2.5 }), field: 'priority', expected: `an integer 0…${MAX_PRIORITY}`, got: '2.5' },
  { label: 'priority -1', call: add({ priority: -1 }), field: 'priority', expected: `an integer 0…${MAX_PRIORITY}`, got: '-1' },
  { label: 'priority 2^21', call: add({ priority: 2 ** 21 }), field: 'priority', expected: `an integer 0…${MAX_PRIORITY}`, got: '2097152' },
  { label: 'priority NaN', call: add({ priority: NaN }), field: 'priority', expected: 'an integer', got: 'NaN' },
  { label: 'priority "3"', call: add({ priority: '3' }), field: 'priority', expected: 'an integer', got: '"3"' },
  { label: 'priority Infinity', call: add({ priority: Infinity }), field: 'priority', expected: 'an integer', got: 'Infinity' },
  { label: 'priority null', call: add({ priority: null }), field: 'priority', expected: 'an integer', got: 'null' },
  // delay
  // (a negative delay is accepted and runs the job at once, as in BullMQ: test/compat/options)
  { label: 'delay Infinity', call: add({ delay: Infinity }), field: 'delay', expected: 'an integer', got: 'Infinity' },
  { label: 'delay 1.5', call: add({ delay: 1.5 }), field: 'delay', expected: 'an integer', got: '1.5' },
  // attempts (0 is accepted and means one attempt, as in BullMQ)
  { label: 'attempts -3', call: add({ attempts: -3 }), field: 'attempts', expected: 'a non-negative integer', got: '-3' },
  { label: 'attempts 1.5', call: add({ attempts: 1.5 }), field: 'attempts', expected: 'a non-negative integer', got: '1.5' },
  // data
  { label: 'data BigInt', call: add({}, 10n), field: 'data', expected: 'JSON', got: '10n (a BigInt)' },
  { label: 'data nested BigInt', call: add({}, { n: 10n }), field: 'data.n', expected: 'JSON', got: '10n (a BigInt)' },
  { label: 'data function', call: add({}, () => 1), field: 'data', expected: 'JSON', got: 'a function' },
  { label: 'data nested function', call: add({}, { f() {} }), field: 'data.f', expected: 'JSON', got: 'a function' },
  { label: 'data symbol', call: add({}, { s: Symbol('x') }), field: 'data.s', expected: 'JSON', got: 'a symbol' },
  { label: 'data cycle', call: add({}, cycle), field: 'data', expected: 'without cycles', got: 'an object' },
  { label: 'data undefined', call: add({}, undefined), field: 'data', expected: 'JSON', got: 'undefined' },
  // name
  { label: 'name 42', call: add({}, {}, 42), field: 'name', expected: 'a string', got: '42' },
  { label: 'name undefined', call: add({}, {}, undefined), field: 'name', expected: 'a string', got: 'undefined' },
  { label: 'name object', call: add({}, {}, { n: 1 }), field: 'name', expected: 'a string', got: 'an object' },
  // lane
  { label: "lane ''", call: add({ lane: '' }), field: 'lane', expected: 'a non-empty string', got: '""' },
  { label: 'lane 7', call: add({ lane: 7 }), field: 'lane', expected: 'a non-empty string', got: '7' },
  { label: 'lane too long', call: add({ lane: 'x'.repeat(1025) }), field: 'lane', expected: 'at most 1024', got: `"${'x'.repeat(60)}"… (1025 chars)` },
  // jobId
  { label: "jobId '12'", call: add({ jobId: '12' }), field: 'jobId', expected: 'not an integer', got: '"12"' },
  // jobId '' is accepted: an empty custom id is no id, as in BullMQ (test/compat/job-flows-more.test.ts).
  { label: 'jobId 12', call: add({ jobId: 12 }), field: 'jobId', expected: 'a non-empty string', got: '12' },
  // backoff
  { label: 'backoff "soon"', call: add({ backoff: 'soon' }), field: 'backoff', expected: 'a delay in ms or { type', got: '"soon"' },
  { label: 'backoff -1', call: add({ backoff: -1 }), field: 'backoff', expected: 'a non-negative integer', got: '-1' },
  { label: 'backoff no type', call: add({ backoff: { delay: 5 } }), field: 'backoff.type', expected: "'fixed'", got: 'undefined' },
  { label: 'backoff delay -1', call: add({ backoff: { type: 'fixed', delay: -1 } }), field: 'backoff.delay', expected: 'a non-negative integer', got: '-1' },
  { label: 'backoff jitter 2', call: add({ backoff: { type: 'fixed', jitter: 2 } }), field: 'backoff.jitter', expected: '0…1', got: '2' },
  // retention
  { label: 'removeOnComplete -1', call: add({ removeOnComplete: -1 }), field: 'removeOnComplete', expected: 'a non-negative integer', got: '-1' },
  { label: 'removeOnFail 1.5', call: add({ removeOnFail: 1.5 }), field: 'removeOnFail', expected: 'a non-negative integer', got: '1.5' },
  { label: 'removeOnComplete "yes"', call: add({ removeOnComplete: 'yes' }), field: 'removeOnComplete', expected: 'true, false, a count or { age?, count?, limit? }', got: '"yes"' },
  { label: 'removeOnComplete age -1', call: add({ removeOnComplete: { age: -1 } }), field: 'removeOnComplete.age', expected: 'a non-negative integer', got: '-1' },
  { label: 'removeOnFail count NaN', call: add({ removeOnFail: { count: NaN } }), field: 'removeOnFail.count', expected: 'a non-negative integer', got: 'NaN' },
  // other options
  { label: 'lifo "yes"', call: add({ lifo: 'yes' }), field: 'lifo', expected: 'a boolean', got: '"yes"' },
  { label: 'unknown option', call: add({ prority: 1 }), field: 'opts.prority', expected: 'one of the known options', got: '"prority"' },
  { label: 'opts a number', call: add(5), field: 'opts', expected: 'an object', got: '5' },
  { label: 'opts an array', call: add([]), field: 'opts', expected: 'an object', got: 'an array of 0' },
  // bulk
  { label: 'addBulk not an array', call: (q) => q.addBulk({} as never), field: 'jobs', expected: 'an array', got: 'an object' },
  { label: 'addBulk null entry', call: (q) => q.addBulk([{ name: 'a', data: {} }, null as never]), field: 'jobs[1]', expected: 'an object', got: 'null' },
  { label: 'addBulk bad name', call: (q) => q.addBulk([{ name: 'a', data: {} }, { name: 1 as never, data: {} }]), field: 'jobs[1].name', expected: 'a string', got: '1' },
  { label: 'addBulk bad priority', call: (q) => q.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {}, opts: { priority: -1 } }]), field: 'jobs[1].opts.priority', expected: 'an integer', got: '-1' },
  { label: 'addBulk bad backoff', call: (q) => q.addBulk([{ name: 'b', data: {}, opts: { backoff: { type: 'fixed', delay: -2 } } }]), field: 'jobs[0].opts.backoff.delay', expected: 'a non-negative integer', got: '-2' },
  { label: 'addBulk unknown option', call: (q) => q.addBulk([{ name: 'b', data: {}, opts: { nope: 1 } as never }]), field: 'jobs[0].opts.nope', expected: 'one of the known options', got: '"nope"' },
  { label: 'addBulk bad data', call: (q) => q.addBulk([{ name: 'a', data: {} }, { name: 'b', data: 1n }]), field: 'jobs[1].data', expected: 'JSON', got: '1n (a BigInt)' },
  // other entries
  { label: 'changePriority 2.5', call: (q, j) => q.changePriority(j.id, 2.5), field: 'priority', expected: 'an integer', got: '2.5' },
  { label: 'job.changePriority -1', call: (_q, j) => j.changePriority({ priority: -1 }), field: 'priority', expected: 'an integer', got: '-1' },
  { label: "moveToLane ''", call: (q, j) => q.moveToLane(j.id, ''), field: 'lane', expected: 'a non-empty string', got: '""' },
  { label: "getJob ''", call: (q) => q.getJob(''), field: 'jobId', expected: 'a non-empty string', got: '""' },
  { label: 'clean grace -1', call: (q) => q.clean(-1, 0), field: 'grace', expected: 'a non-negative integer', got: '-1' },
  { label: 'clean limit 1.5', call: (q) => q.clean(0, 1.5), field: 'limit', expected: 'a non-negative integer', got: '1.5' },
  { label: 'clean type', call: (q) => q.clean(0, 0, 'running' as never), field: 'type', expected: 'one of completed', got: '"running"' },
  { label: 'drain "yes"', call: (q) => q.drain('yes' as never), field: 'delayed', expected: 'a boolean', got: '"yes"' },
  { label: 'obliterate force 1', call: (q) => q.obliterate({ force: 1 as never }), field: 'force', expected: 'a boolean', got: '1' },
  { label: 'getJobCounts bogus', call: (q) => q.getJobCounts('bogus' as never), field: 'types', expected: 'waiting', got: '"bogus"' },
  { label: 'updateProgress BigInt', call: (_q, j) => j.updateProgress({ n: 1n } as never), field: 'progress.n', expected: 'JSON', got: '1n (a BigInt)' },
  { label: 'updateData cycle', call: (_q, j) => j.updateData(cycle), field: 'data', expected: 'without cycles', got: 'an object' },
  { label: 'log line 5', call: (_q, j) => j.log(5 as never), field: 'log line', expected: 'a string', got: '5' },
  { label: 'lanes.setWeight 0', call: (q) => q.lanes.setWeight('a', 0), field: 'weight', expected: '1…', got: '0' },
  { label: 'setGlobalConcurrency 0', call: (q) => q.setGlobalConcurrency(0), field: 'concurrency', expected: 'a positive integer', got: '0' },
];

/** Runs fn and returns what it threw, synchronously or as a rejection. */
async function thrown(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

function expectValidation(e: unknown, c: Pick<Case, 'field' | 'expected' | 'got'>): void {
  expect(e, 'a ValidationError').toBeInstanceOf(ValidationError);
  const v = e as ValidationError;
  expect(v.code).toBe('ERR_VALIDATION');
  expect(v.field).toBe(c.field);
  expect(v.got).toBe(c.got);
  expect(v.expected).toContain(c.expected);
  // Where BullMQ throws too, its text comes first, then echomq's detail.
  expect(v.message.endsWith(`${c.field} must be ${v.expected}, got ${c.got}`), v.message).toBe(true);
}

describe('core validation', () => {
  const redis = client();
  const name = qname('valid');
  const k = keysOf(name);
  const queue = new Queue(name, { connection: redisUrl() });
  let job: Job;

  beforeAll(async () => {
    // A queue with some history, so "unchanged" covers every kind of key.
    await queue.addBulk([
      { name: 'a', data: { i: 1 } },
      { name: 'b', data: { i: 2 }, opts: { priority: 3 } },
      { name: 'c', data: { i: 3 }, opts: { delay: 60_000 } },
      { name: 'd', data: { i: 4 }, opts: { lane: 'tenant', jobId: 'custom-d' } },
    ]);
    job = (await queue.getJob('1'))!;
  });
  afterAll(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    await redis.quit();
  });

  it.each(cases)('refuses $label and writes nothing', async (c) => {
    const before = await snapshot(redis, k);
    expect(before.size).toBeGreaterThan(5);
    expectValidation(await thrown(() => c.call(queue, job)), c);
    expect(await snapshot(redis, k)).toEqual(before);
  });

  it('addBulk with one bad job among many writes none of them', async () => {
    const before = await snapshot(redis, k);
    const jobs = Array.from({ length: 2500 }, (_, i) => ({ name: `n${i}`, data: { i }, opts: { priority: i % 5 } }));
    jobs[2345].opts.priority = 2.5; // in the third batch of 1,000: the first two must not be written either
    const e = await thrown(() => queue.addBulk(jobs));
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).got).toBe('2.5');
    expect((e as ValidationError).message).toBe('Priority should not be float: jobs[2345].opts.priority must be an integer 0…2097151, got 2.5');
    expect(await snapshot(redis, k)).toEqual(before);
    expect(await queue.count()).toBe(4);
  });

  it('refuses oversized data against the configured limit', async () => {
    const small = new Queue(name, { connection: redisUrl(), maxPayloadBytes: 100 });
    try {
      const before = await snapshot(redis, k);
      const e = await thrown(() => small.add('big', { s: 'x'.repeat(200) }));
      expectValidation(e, { field: 'data', expected: 'at most 100 bytes', got: '208 bytes' });
      expect(await snapshot(redis, k)).toEqual(before);
      // Multi-byte characters count as bytes, not characters.
      expectValidation(await thrown(() => small.add('big', 'é'.repeat(60))), { field: 'data', expected: 'at most 100 bytes', got: '122 bytes' });
      await expect(small.add('ok', 'x'.repeat(90))).resolves.toBeDefined();
    } finally {
      await small.close();
    }
  });

  it('refuses bad constructor input before connecting', async () => {
    const ctor: Array<[string, () => unknown, Pick<Case, 'field' | 'expected' | 'got'>]> = [
      ['empty queue name', () => new Queue(''), { field: 'queue name', expected: 'a non-empty string', got: '""' }],
      ['numeric queue name', () => new Queue(5 as never), { field: 'queue name', expected: 'a non-empty string', got: '5' }],
      ['empty prefix', () => new Queue('q', { prefix: '' }), { field: 'prefix', expected: 'a non-empty string', got: '""' }],
      ['bad defaultJobOptions', () => new Queue('q', { defaultJobOptions: { priority: -2 } }), { field: 'priority', expected: 'an integer', got: '-2' }],
      ['maxPayloadBytes 0', () => new Queue('q', { maxPayloadBytes: 0 }), { field: 'maxPayloadBytes', expected: 'a positive integer', got: '0' }],
      ['worker empty queue name', () => new Worker('', async () => {}), { field: 'queue name', expected: 'a non-empty string', got: '""' }],
      // A string is a processor file now (sandboxed processors): a number is what no form accepts.
      ['worker without processor', () => new Worker('q', 42 as never), { field: 'processor', expected: 'a function', got: '42' }],
      // concurrency 0 is refused with exactly BullMQ's text (tested in test/compat/worker-backend.test.ts);
      // 2.5, which BullMQ takes, gets echomq's own text.
      ['worker concurrency 2.5', () => new Worker('q', async () => {}, { concurrency: 2.5 }), { field: 'concurrency', expected: '1…', got: '2.5' }],
      ['worker lockDuration 2.5', () => new Worker('q', async () => {}, { lockDuration: 2.5 }), { field: 'lockDuration', expected: 'an integer', got: '2.5' }],
      ['worker maxStalledCount -1', () => new Worker('q', async () => {}, { maxStalledCount: -1 }), { field: 'maxStalledCount', expected: 'a non-negative integer', got: '-1' }],
    ];
    for (const [label, fn, want] of ctor) {
      let e: unknown;
      try {
        fn();
      } catch (err) {
        e = err;
      }
      expect(e, label).toBeInstanceOf(ValidationError);
      expectValidation(e, want);
    }
  });

  it('refuses a job that would be accepted by defaults but not by its own options', async () => {
    const q = new Queue(name, { connection: redisUrl(), defaultJobOptions: { attempts: 3 } });
    try {
      const before = await snapshot(redis, k);
      expectValidation(await thrown(() => q.add('x', {}, { attempts: -1 })), { field: 'attempts', expected: 'a non-negative integer', got: '-1' });
      expect(await snapshot(redis, k)).toEqual(before);
    } finally {
      await q.close();
    }
  });
});
