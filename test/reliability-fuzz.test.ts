// Fuzzed input: fast-check drives the public API with arguments of every odd kind (queue names,
// lane names and job ids with ':', '{', '}', spaces, unicode and lone surrogates; numbers that
// are NaN, ±Infinity, -0, fractions, huge, strings, null; payloads of odd types and sizes).
// Every call either round-trips (read back: data deep-equals its JSON form, priority, lane,
// delay and attempts as given, settings as given) or throws ValidationError (or a documented
// typed error: JobNotFoundError, InvalidStateError) and leaves every key of the queue
// byte-identical. Read-only calls never change a key. After every call the lane bookkeeping is
// exact. Runs are bounded (FUZZ_RUNS, default 400) and reproducible (FUZZ_SEED).
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, ValidationError, JobNotFoundError, InvalidStateError, MAX_PRIORITY, type Job } from '../src/index.js';
import type { QueueKeys } from '../src/core/keys.js';
import { checkLaneInvariant } from './lane-invariant.js';
import { client, snapshot } from './helpers.js';

const MAX_PAYLOAD = 4096;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const SEED = process.env.FUZZ_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FUZZ_SEED);

// ---------------------------------------------------------------------------------------------
// Arbitraries

const oddChar = fc.constantFrom(
  ':', '{', '}', ' ', '%', '%7B', '%7D', '*', '?', '[', ']', '\\', '\n', '\t', '\u0000', 'é', '漢', '😀',
  '\uD800', '\uDFFF', 'job:', 'lane:', 'logs:', 'meta', 'x', 'weight', '-', '1', '0', 'default',
);
const oddString = fc.oneof(
  { weight: 4, arbitrary: fc.array(oddChar, { maxLength: 6 }).map((a) => a.join('')) },
  { weight: 2, arbitrary: fc.string({ maxLength: 10 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(1024), 'y'.repeat(1025), '123', '-1', '1.5', '01', ' 7') },
);
const oddNumber = fc.oneof(
  fc.constantFrom(
    NaN, Infinity, -Infinity, -0, 0, 1, 0.5, -1, 2.5, 1e21, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, MAX_SAFE,
    Number.MAX_VALUE, Number.MIN_VALUE, Number.EPSILON, MAX_PRIORITY, MAX_PRIORITY + 1, 1_000_000, 1_000_001,
  ),
  fc.integer({ min: -5, max: 10 }),
  fc.double(),
  fc.integer(),
);
const cyclic: Record<string, unknown> = { a: 1 };
cyclic.self = cyclic;
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: oddNumber },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(
      null, undefined, '', '5', '0x10', ' 1', true, false, [], {}, [1], 5n, Symbol('s'), () => 1, new Date(0), cyclic,
    ),
  },
  { weight: 1, arbitrary: oddString },
);
const maybe = <T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 10, arbitrary: good as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: oddValue });

const laneArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('x', 'x:weight', 'default', 'lane:x', 'a b', '{t}', '漢字', '😀', '%7D') },
  { weight: 2, arbitrary: oddString },
);
const nameArb = fc.oneof(fc.constantFrom('n', ''), oddString);
const customIdArb = fc.oneof(fc.constantFrom('a', 'a:b', 'job:1', 'meta', '{x}', ' ', 'id 😀', '1:logs', '7x'), oddString);

const keepArb = fc.oneof(
  fc.boolean(),
  fc.nat(100),
  fc.record({ age: maybe(fc.nat(10_000)), count: maybe(fc.nat(100)) }, { requiredKeys: [] }),
);
const backoffArb = fc.oneof(
  fc.nat(100_000),
  fc.record(
    {
      type: maybe(fc.constantFrom('fixed', 'exponential', 'mine')),
      delay: maybe(fc.nat(100_000)),
      jitter: maybe(fc.double({ min: 0, max: 1, noNaN: true })),
    },
    { requiredKeys: ['type'] },
  ),
);
const optsArb = fc.record(
  {
    priority: maybe(fc.oneof(fc.integer({ min: 0, max: MAX_PRIORITY }), fc.constantFrom(0, 1, MAX_PRIORITY))),
    lane: maybe(laneArb),
    delay: maybe(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 10 ** 12 }))),
    jobId: maybe(customIdArb),
    attempts: maybe(fc.integer({ min: 1, max: 100 })),
    backoff: maybe(backoffArb),
    lifo: maybe(fc.boolean()),
    removeOnComplete: maybe(keepArb),
    removeOnFail: maybe(keepArb),
  },
  { requiredKeys: [] },
).chain((o) => fc.oneof({ weight: 12, arbitrary: fc.constant(o) }, { weight: 1, arbitrary: oddValue.map((b) => ({ ...o, bogus: b })) }));
const anyOpts = fc.oneof({ weight: 8, arbitrary: optsArb as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: oddValue });

const bigPayload = fc.oneof(
  fc.integer({ min: 1900, max: 2100 }).map((n) => 'é'.repeat(n)), // 2 bytes per UTF-16 unit
  fc.integer({ min: 4080, max: 4100 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 900, max: 1100 }).map((n) => ({ s: '😀'.repeat(n) })), // 4 bytes per 2 units
  fc.integer({ min: 1300, max: 1400 }).map((n) => ['漢'.repeat(n)]), // 3 bytes per unit
);
const dataArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 2,
    arbitrary: fc.anything({
      maxDepth: 2, withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true,
      withSparseArray: true, withNullPrototype: true, withBoxedValues: true,
    }),
  },
  { weight: 1, arbitrary: oddValue },
  { weight: 1, arbitrary: bigPayload },
);

/** An id argument: an existing job (resolved at run time by index) or anything else. */
const idRef = fc.oneof(
  { weight: 3, arbitrary: fc.nat().map((i) => ({ ref: i })) },
  { weight: 1, arbitrary: customIdArb },
  { weight: 1, arbitrary: oddValue },
);

const states = ['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed', 'paused'];
/** BullMQ's JobType names the getters accept: the states plus `wait`, `repeat`, `waiting-children`. */
const jobTypes = [...states, 'wait', 'repeat', 'waiting-children'];
// BullMQ's clean types (active and paused included).
const cleanStates = ['completed', 'failed', 'delayed', 'wait', 'waiting', 'prioritized', 'active', 'paused'];
const stateArb = fc.oneof(fc.constantFrom(...states, ...cleanStates, 'constructor', 'toString', '__proto__', 'hasOwnProperty', 'WAITING'), oddValue);

const opArb = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('add' as const), name: maybe(nameArb), data: dataArb, opts: anyOpts }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('addBulk' as const),
      jobs: fc.oneof(
        { weight: 6, arbitrary: fc.array(fc.oneof({ weight: 6, arbitrary: fc.record({ name: maybe(nameArb), data: dataArb, opts: anyOpts }, { requiredKeys: ['name', 'data'] }) as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: oddValue }), { maxLength: 5 }) as fc.Arbitrary<unknown> },
        { weight: 1, arbitrary: oddValue },
      ),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('setWeight' as const), lane: maybe(laneArb), value: maybe(fc.integer({ min: 1, max: 1_000_000 })) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('setLimit' as const), lane: maybe(laneArb), value: maybe(fc.oneof(fc.nat(50), fc.constant(MAX_SAFE))) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('setRateLimit' as const),
      lane: maybe(laneArb),
      value: fc.oneof(fc.constant(null), fc.record({ max: maybe(fc.integer({ min: 1, max: 1000 })), duration: maybe(fc.integer({ min: 1, max: 100_000 })) }) as fc.Arbitrary<unknown>, oddValue),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('pauseLane' as const, 'resumeLane' as const, 'removeLimit' as const, 'getLane' as const, 'drainLane' as const), lane: maybe(laneArb) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('changePriority' as const), id: idRef, priority: maybe(fc.integer({ min: 0, max: MAX_PRIORITY })), opts: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.record({ lifo: maybe(fc.boolean()) }) as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: oddValue }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('moveToLane' as const), id: idRef, lane: maybe(laneArb) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), id: idRef }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('getJob' as const), id: idRef }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('getJobs' as const),
      states: fc.oneof(fc.array(stateArb, { maxLength: 3 }) as fc.Arbitrary<unknown>, stateArb, fc.constant(undefined)),
      start: fc.oneof(fc.constant(undefined), fc.nat(5), oddNumber as fc.Arbitrary<unknown>, oddValue),
      end: fc.oneof(fc.constant(undefined), fc.integer({ min: -1, max: 5 }), oddNumber as fc.Arbitrary<unknown>, oddValue),
      asc: fc.oneof(fc.constant(undefined), fc.boolean() as fc.Arbitrary<unknown>, oddValue),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('getJobCounts' as const), states: fc.array(stateArb, { maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('listLanes' as const), opts: fc.oneof(fc.constant(undefined), fc.record({ cursor: maybe(laneArb), count: maybe(fc.integer({ min: 1, max: 10 })) }, { requiredKeys: [] }) as fc.Arbitrary<unknown>, oddValue) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('clean' as const), grace: maybe(fc.nat(1000)), limit: maybe(fc.nat(3)), state: fc.oneof(fc.constant(undefined), stateArb) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('drain' as const), delayed: fc.oneof(fc.constant(undefined), fc.boolean() as fc.Arbitrary<unknown>, oddValue) }) },
);

const queueNameArb = fc.oneof(
  fc.constantFrom('a', 'a}:x', 'a{b}', '{', '}', 'q name', '漢', 'x:weight', '%7D', '*?[', '\uD800'),
  oddString,
);
const finalArb = fc.oneof(fc.constant(undefined), fc.record({ force: maybe(fc.boolean()), count: maybe(fc.integer({ min: 1, max: 10 })) }, { requiredKeys: [] }) as fc.Arbitrary<unknown>, oddValue);

// ---------------------------------------------------------------------------------------------
// The oracle: what the documented rules say about an argument ('ok' must be accepted, 'bad'
// must be refused with ValidationError, 'either' is left to the implementation).

type Verdict = 'ok' | 'bad' | 'either';
const all = (...vs: Verdict[]): Verdict => (vs.includes('bad') ? 'bad' : vs.includes('either') ? 'either' : 'ok');
const wellFormed = (s: string): boolean => !/\p{Cs}/u.test(s);
const isStr = (x: unknown, allowEmpty = false, max = 1024): Verdict =>
  typeof x === 'string' && (allowEmpty || x.length > 0) && x.length <= max && wellFormed(x) ? 'ok' : 'bad';
const isInt = (x: unknown, min: number, max: number): Verdict =>
  typeof x === 'number' && Number.isInteger(x) && x >= min && x <= max ? 'ok' : 'bad';
const isBool = (x: unknown): Verdict => (typeof x === 'boolean' ? 'ok' : 'bad');
const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isPlain = (x: unknown): x is Record<string, unknown> =>
  isObj(x) && (Object.getPrototypeOf(x) === Object.prototype || Object.getPrototypeOf(x) === null);
/** Plain object: check it; another non-array object: 'either' (a Date has no own keys); else bad. */
const objVerdict = (x: unknown, check: (o: Record<string, unknown>) => Verdict): Verdict =>
  isPlain(x) ? check(x) : isObj(x) ? 'either' : 'bad';
const opt = (o: Record<string, unknown>, k: string, check: (x: unknown) => Verdict): Verdict =>
  o[k] === undefined ? 'ok' : check(o[k]);

function dataVerdict(d: unknown): { v: Verdict; expected?: unknown } {
  if (d === undefined) return { v: 'bad' };
  let refused = false;
  let soft = false;
  let json: string | undefined;
  try {
    json = JSON.stringify(d, (_k, x) => {
      if (typeof x === 'function' || typeof x === 'bigint') refused = true;
      if (typeof x === 'symbol') soft = true;
      return typeof x === 'bigint' ? null : x;
    });
  } catch {
    return { v: 'bad' }; // cycles, boxed BigInt
  }
  if (refused || json === undefined) return { v: 'bad' };
  if (Buffer.byteLength(json) > MAX_PAYLOAD) return { v: 'bad' };
  return { v: soft ? 'either' : 'ok', expected: JSON.parse(json) };
}

const KNOWN_OPTS = ['priority', 'lane', 'delay', 'jobId', 'attempts', 'backoff', 'lifo', 'removeOnComplete', 'removeOnFail'];
const keepVerdict = (x: unknown): Verdict =>
  typeof x === 'boolean'
    ? 'ok'
    : typeof x === 'number'
      ? isInt(x, 0, MAX_SAFE)
      : objVerdict(x, (o) => all(opt(o, 'count', (c) => isInt(c, 0, MAX_SAFE)), opt(o, 'age', (a) => isInt(a, 0, MAX_SAFE))));
const backoffVerdict = (x: unknown): Verdict =>
  typeof x === 'number'
    ? isInt(x, 0, MAX_SAFE)
    : objVerdict(x, (o) =>
        all(
          typeof o.type === 'string' && o.type.length > 0 ? (wellFormed(o.type) ? 'ok' : 'either') : 'bad',
          opt(o, 'delay', (d) => isInt(d, 0, MAX_SAFE)),
          opt(o, 'jitter', (j) => (typeof j === 'number' && j >= 0 && j <= 1 ? 'ok' : 'bad')),
        ),
      );
function optsVerdict(x: unknown): Verdict {
  if (x === undefined) return 'ok';
  return objVerdict(x, (o) =>
    all(
      ...Object.keys(o).map((k): Verdict => (KNOWN_OPTS.includes(k) ? 'ok' : 'bad')),
      opt(o, 'priority', (p) => isInt(p, 0, MAX_PRIORITY)),
      opt(o, 'lane', (l) => isStr(l)),
      // A negative delay runs at once and attempts 0 means one attempt, as in BullMQ.
      opt(o, 'delay', (d) => isInt(d, -MAX_SAFE, MAX_SAFE)),
      // BullMQ's id rules: not '0', not starting '0:', not what parseInt prints back.
      // '' is no id (BullMQ generates one), so it is accepted.
      opt(o, 'jobId', (id) => (id === '' || isStr(id) === 'ok' && id !== '0' && !(id as string).startsWith('0:') && `${parseInt(id as string, 10)}` !== id ? 'ok' : 'bad')),
      opt(o, 'attempts', (a) => isInt(a, 0, MAX_SAFE)),
      opt(o, 'backoff', backoffVerdict),
      opt(o, 'lifo', isBool),
      opt(o, 'removeOnComplete', keepVerdict),
      opt(o, 'removeOnFail', keepVerdict),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// The model: what the fuzz run has created, to check reads against.

interface Model {
  name: string;
  data: unknown;
  priority: number;
  lane: string;
  delay: number;
  attempts: number;
}

const DOCUMENTED = (e: unknown) => e instanceof ValidationError || e instanceof JobNotFoundError || e instanceof InvalidStateError;

describe('reliability: fuzzed arguments to the public API', () => {
  const redis = client();
  const stats = { runs: 0, calls: 0, accepted: 0, rejected: 0, badQueueNames: 0 };
  afterAll(async () => {
    await redis.quit();
  });

  it('every call round-trips or throws a typed error and changes nothing', async () => {
    let run = 0;
    const prop = fc.asyncProperty(queueNameArb, fc.array(opArb, { minLength: 1, maxLength: 12 }), finalArb, async (qn, ops, final) => {
      run++;
      stats.runs++;
      const name = `${qn}~fz${run}-${SEED}`;
      let queue: Queue;
      try {
        queue = new Queue(name, { connection: redis, maxPayloadBytes: MAX_PAYLOAD });
      } catch (e) {
        expect(e).toBeInstanceOf(ValidationError);
        expect(isStr(name)).toBe('bad');
        stats.badQueueNames++;
        return;
      }
      expect(isStr(name)).toBe('ok');
      const k = queue.keys;
      const model = new Map<string, Model>();
      const ids = () => [...model.keys()];
      const resolveId = (x: unknown): unknown => (isObj(x) && 'ref' in x && typeof x.ref === 'number' ? (ids().length ? ids()[x.ref % ids().length] : 'missing-id') : x);
      try {
        for (const op of ops) await step(queue, k, model, op, resolveId);
        // Obliterate with fuzzed options: refused (unchanged) or everything is gone.
        const before = await snapshot(redis, k);
        try {
          await queue.obliterate(final as never);
          expect(optsObliterate(final)).not.toBe('bad');
          expect((await snapshot(redis, k)).size).toBe(0);
        } catch (e) {
          if (!(e instanceof ValidationError)) throw e;
          expect(optsObliterate(final)).not.toBe('ok');
          expect(await snapshot(redis, k)).toEqual(before);
        }
      } finally {
        await queue.obliterate({ force: true }).catch(() => {});
        await queue.close();
      }
    });

    async function step(
      queue: Queue,
      k: QueueKeys,
      model: Map<string, Model>,
      op: any, // eslint-disable-line @typescript-eslint/no-explicit-any
      resolveId: (x: unknown) => unknown,
    ): Promise<void> {
      stats.calls++;
      const before = await snapshot(redis, k);
      let verdict: Verdict = 'either';
      let readOnly = false;
      let call: () => Promise<unknown>;
      let check: (r: any) => Promise<void> = async () => {};
      const id = resolveId(op.id);
      const exists = typeof id === 'string' && model.has(id);

      switch (op.op) {
        case 'add': {
          const d = dataVerdict(op.data);
          verdict = all(isStr(op.name, true), d.v, optsVerdict(op.opts));
          call = () => queue.add(op.name, op.data, op.opts);
          check = async (job: Job) => {
            await checkAdded(queue, model, job, op.name, d.expected, op.opts);
          };
          break;
        }
        case 'addBulk': {
          const jobs = op.jobs;
          const per = Array.isArray(jobs)
            ? jobs.map((j: any) => (isPlain(j) ? { v: all(isStr(j.name, true), dataVerdict(j.data).v, optsVerdict(j.opts)), d: dataVerdict(j.data) } : { v: isObj(j) ? ('either' as Verdict) : ('bad' as Verdict), d: { v: 'bad' as Verdict } }))
            : [];
          verdict = Array.isArray(jobs) ? all(...per.map((p: any) => p.v)) : 'bad';
          call = () => queue.addBulk(jobs);
          check = async (out: Job[]) => {
            expect(out.length).toBe(jobs.length);
            for (let i = 0; i < jobs.length; i++) await checkAdded(queue, model, out[i], jobs[i].name, per[i].d.expected, jobs[i].opts);
          };
          break;
        }
        case 'setWeight':
          verdict = all(isStr(op.lane), isInt(op.value, 1, 1_000_000));
          call = () => queue.lanes.setWeight(op.lane, op.value);
          check = async () => expect((await queue.lanes.get(op.lane)).weight).toBe(op.value + 0);
          break;
        case 'setLimit':
          verdict = all(isStr(op.lane), isInt(op.value, 0, MAX_SAFE));
          call = () => queue.lanes.setLimit(op.lane, op.value);
          check = async () => expect((await queue.lanes.get(op.lane)).limit).toBe(op.value + 0);
          break;
        case 'removeLimit':
          verdict = isStr(op.lane);
          call = () => queue.lanes.removeLimit(op.lane);
          check = async () => expect((await queue.lanes.get(op.lane)).limit).toBe(null);
          break;
        case 'setRateLimit':
          verdict = all(
            isStr(op.lane),
            op.value === null ? 'ok' : objVerdict(op.value, (o) => all(isInt(o.max, 1, MAX_SAFE), isInt(o.duration, 1, MAX_SAFE))),
          );
          call = () => queue.lanes.setRateLimit(op.lane, op.value);
          check = async () =>
            expect((await queue.lanes.get(op.lane)).rate).toEqual(op.value === null ? null : { max: op.value.max + 0, duration: op.value.duration + 0 });
          break;
        case 'pauseLane':
        case 'resumeLane':
          verdict = isStr(op.lane);
          call = () => (op.op === 'pauseLane' ? queue.lanes.pause(op.lane) : queue.lanes.resume(op.lane));
          check = async () => expect((await queue.lanes.get(op.lane)).paused).toBe(op.op === 'pauseLane');
          break;
        case 'getLane':
          verdict = isStr(op.lane);
          readOnly = true;
          call = () => queue.lanes.get(op.lane);
          check = async (info) => expect(info.name).toBe(op.lane);
          break;
        case 'drainLane':
          verdict = isStr(op.lane);
          call = () => queue.lanes.drain(op.lane);
          check = async () => {
            expect((await queue.lanes.get(op.lane)).depth).toBe(0);
            for (const [jid, m] of model) if (m.lane === op.lane && !(await queue.getJob(jid))) model.delete(jid);
          };
          break;
        case 'changePriority':
          verdict = all(isStr(id), isInt(op.priority, 0, MAX_PRIORITY), op.opts === undefined ? 'ok' : objVerdict(op.opts, (o) => opt(o, 'lifo', isBool)));
          call = () => queue.changePriority(id as string, op.priority, op.opts);
          check = async () => {
            expect(exists).toBe(true);
            const job = (await queue.getJob(id as string))!;
            expect(job.priority).toBe(op.priority + 0);
            model.get(id as string)!.priority = op.priority + 0;
            if (model.get(id as string)!.delay === 0) expect(await job.getState()).toBe(op.priority > 0 ? 'prioritized' : 'waiting');
          };
          break;
        case 'moveToLane':
          verdict = all(isStr(id), isStr(op.lane));
          call = () => queue.moveToLane(id as string, op.lane);
          check = async () => {
            expect(exists).toBe(true);
            expect((await queue.getJob(id as string))!.lane).toBe(op.lane);
            model.get(id as string)!.lane = op.lane;
          };
          break;
        case 'remove':
          verdict = isStr(id);
          call = () => queue.remove(id as string);
          check = async (r) => {
            // BullMQ's reply: 1, also for a job that was not there (no worker holds any job here).
            expect(r).toBe(1);
            expect(await queue.getJob(id as string)).toBeUndefined();
            model.delete(id as string);
          };
          break;
        case 'getJob':
          verdict = isStr(id);
          readOnly = true;
          call = () => queue.getJob(id as string);
          check = async (job) => {
            if (exists) expect(job?.id).toBe(id);
            else expect(job).toBeUndefined();
          };
          break;
        case 'getJobs': {
          const list = op.states === undefined ? [] : typeof op.states === 'string' ? [op.states] : op.states;
          verdict = all(
            Array.isArray(list) ? all(...list.map((s: unknown) => (jobTypes.includes(s as string) ? 'ok' : 'bad') as Verdict)) : 'bad',
            // Redis-style ranges, as in BullMQ: any integer, negative counts from the end.
            op.start === undefined ? 'ok' : isInt(op.start, -MAX_SAFE, MAX_SAFE),
            op.end === undefined ? 'ok' : isInt(op.end, -MAX_SAFE, MAX_SAFE),
            op.asc === undefined || typeof op.asc === 'boolean' ? 'ok' : 'either',
          );
          readOnly = true;
          call = () => queue.getJobs(op.states, op.start, op.end, op.asc);
          check = async (jobs: Job[]) => {
            expect(Array.isArray(jobs)).toBe(true);
            for (const j of jobs) expect(model.has(j.id)).toBe(true);
          };
          break;
        }
        case 'getJobCounts':
          verdict = all(...op.states.map((s: unknown) => (jobTypes.includes(s as string) ? 'ok' : 'bad') as Verdict));
          readOnly = true;
          call = () => queue.getJobCounts(...op.states);
          check = async (counts) => {
            const total = Object.values(counts as Record<string, number>).reduce((a, b) => a + b, 0);
            if (op.states.length === 0) expect(total).toBe(model.size);
          };
          break;
        case 'listLanes':
          verdict = op.opts === undefined ? 'ok' : objVerdict(op.opts, (o) => all(opt(o, 'cursor', (c) => isStr(c, true)), opt(o, 'count', (c) => isInt(c, 1, 10_000))));
          readOnly = true;
          call = () => queue.lanes.list(op.opts);
          check = async (page) => expect(Array.isArray(page.lanes)).toBe(true);
          break;
        case 'clean':
          verdict = all(
            isInt(op.grace, 0, MAX_SAFE),
            isInt(op.limit, 0, MAX_SAFE),
            op.state === undefined || cleanStates.includes(op.state) ? 'ok' : 'bad',
          );
          call = () => queue.clean(op.grace, op.limit, op.state);
          check = async (removed: string[]) => {
            if (op.limit > 0) expect(removed.length).toBeLessThanOrEqual(op.limit);
            for (const rid of removed) {
              expect(model.has(rid)).toBe(true);
              expect(await queue.getJob(rid)).toBeUndefined();
              model.delete(rid);
            }
          };
          break;
        case 'drain':
          verdict = op.delayed === undefined ? 'ok' : isBool(op.delayed);
          call = () => queue.drain(op.delayed);
          check = async () => {
            const counts = await queue.getJobCounts('waiting', 'prioritized', 'delayed');
            expect(counts.waiting! + counts.prioritized!).toBe(0);
            if (op.delayed === true) expect(counts.delayed).toBe(0);
            for (const jid of [...model.keys()]) if (!(await queue.getJob(jid))) model.delete(jid);
          };
          break;
        default:
          throw new Error(`unknown op ${op.op}`);
      }

      let result: unknown;
      let error: unknown;
      try {
        result = await call();
      } catch (e) {
        error = e;
      }
      const what = `${op.op}(${describeOp(op, id)})`;
      if (error !== undefined) {
        stats.rejected++;
        if (!DOCUMENTED(error)) throw new Error(`${what} threw an undocumented error: ${(error as Error)?.stack ?? String(error)}`);
        if (error instanceof ValidationError) {
          if (verdict === 'ok') throw new Error(`${what} refused valid input: ${(error as Error).message}`);
        } else if (verdict === 'bad') {
          throw new Error(`${what} should have thrown ValidationError, threw ${(error as Error).name}: ${(error as Error).message}`);
        }
        if (error instanceof JobNotFoundError) expect(exists, `${what}: JobNotFoundError for an existing job`).toBe(false);
        const after = await snapshot(redis, k);
        if (!sameSnapshot(before, after)) throw new Error(`${what} threw ${(error as Error).name} but changed keys: ${diff(before, after)}`);
      } else {
        stats.accepted++;
        if (verdict === 'bad') throw new Error(`${what} accepted invalid input`);
        await check(result);
        if (readOnly) {
          const after = await snapshot(redis, k);
          if (!sameSnapshot(before, after)) throw new Error(`read-only ${what} changed keys: ${diff(before, after)}`);
        }
      }
      const broken = await checkLaneInvariant(redis, k, { registry: 'exact' });
      if (broken.length > 0) throw new Error(`after ${what}: lane invariant broken:\n  ${broken.join('\n  ')}`);
    }

    async function checkAdded(queue: Queue, model: Map<string, Model>, job: Job, name: string, expected: unknown, opts: any): Promise<void> {
      const o = (opts ?? {}) as Record<string, any>;
      const jobId = (o.jobId === '' ? undefined : o.jobId) as string | undefined;
      if (jobId !== undefined) expect(job.id).toBe(jobId);
      else expect(job.id).toMatch(/^\d+$/);
      const existing = model.get(job.id);
      const want: Model = existing ?? {
        name,
        data: expected,
        priority: (o.priority ?? 0) + 0,
        lane: o.lane ?? 'default',
        delay: Math.max(0, o.delay ?? 0) + 0,
        // job.opts shows attempts as given (1 included) and 0 when not given, as BullMQ.
        attempts: o.attempts === undefined ? 0 : o.attempts + 0, // + 0: -0 reads back as 0
      };
      for (const j of [job, (await queue.getJob(job.id))!]) {
        expect(j, `job ${job.id} can be read back`).toBeDefined();
        expect(j.name).toBe(want.name);
        expect(j.data).toEqual(want.data);
        expect(j.priority).toBe(want.priority);
        expect(j.lane).toBe(want.lane);
        expect(j.delay).toBe(want.delay);
        expect(j.opts.attempts).toBe(want.attempts);
      }
      if (!existing) {
        const state = await (await queue.getJob(job.id))!.getState();
        expect(state).toBe(want.delay > 0 ? 'delayed' : want.priority > 0 ? 'prioritized' : 'waiting');
        model.set(job.id, want);
      }
    }

    try {
      await fc.assert(prop, { numRuns: RUNS, seed: SEED });
    } finally {
      console.log(`[reliability-fuzz] seed ${SEED}: ${JSON.stringify(stats)}`);
    }
  }, 180_000);
});

function optsObliterate(x: unknown): Verdict {
  if (x === undefined) return 'ok';
  return objVerdict(x, (o) => all(opt(o, 'force', isBool), opt(o, 'count', (c) => isInt(c, 1, MAX_SAFE))));
}

function sameSnapshot(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, v] of a) if (b.get(key) !== v) return false;
  return true;
}

function diff(a: Map<string, string>, b: Map<string, string>): string {
  const out: string[] = [];
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    if (a.get(key) !== b.get(key)) out.push(`${JSON.stringify(key)} ${a.has(key) ? (b.has(key) ? 'changed' : 'deleted') : 'created'}`);
  }
  return out.join(', ');
}

function describeOp(op: Record<string, unknown>, id: unknown): string {
  const show = (v: unknown): string => {
    try {
      const s = typeof v === 'bigint' ? `${v}n` : typeof v === 'symbol' || typeof v === 'function' ? String(v) : JSON.stringify(v);
      return s === undefined ? String(v) : s.length > 120 ? `${s.slice(0, 120)}…` : s;
    } catch {
      return '<unprintable>';
    }
  };
  return Object.entries(op)
    .filter(([key]) => key !== 'op')
    .map(([key, v]) => `${key}=${show(key === 'id' ? id : v)}`)
    .join(', ');
}
