// The library's guards (lib/guard.lua): add and addFlow, called from a raw client with the exact
// KEYS and ARGV and bad arguments, refuse with a status code of the one table before their first
// write: DUMP of every key of the queue is the same before and after. The clients' id rule
// (BullMQ's: an id that reads back as the same integer) is matched: '007' and integers no double
// prints back are taken, and integer ids the counter already gave out (reserved for children of
// parents in other queues) too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { Code, ValidationError } from '../src/core/errors.js';
import { scripts } from '../src/scripts/index.js';
import { lifecycleScripts } from '../src/scripts/lifecycle.js';
import { client, keysOf, qname, snapshot } from './helpers.js';
import { rawCall } from './raw-script.js';

const SENTINEL = '~'.repeat(72);

/** One option record of add (15 fields), plain unless overridden: field index → value. */
function record(over: Record<number, string> = {}): string[] {
  const r = ['', '0', 'default', '0', '0', '', '', '', '', '', '0', '', '', '', ''];
  for (const [i, v] of Object.entries(over)) r[Number(i)] = v;
  return r;
}
/** add ARGV: jobs of 4 fields (id, name, data, record 1) under one record. */
const addArgs = (rec: string[], ...ids: string[]): string[] => [String(ids.length), '1', '4', ...rec, ...ids.flatMap((id) => [id, 'n', '{}', '1'])];

/** One addFlow node (20 fields and its children), a root unless overridden. */
function node(id: string, over: Record<number, string> = {}, children: string[] = []): string[] {
  const r = [id, 'n', '{}', '', '0', 'default', '0', '0', '', '', '', '', '', '', '', '', '', '', '0', String(children.length)];
  for (const [i, v] of Object.entries(over)) r[Number(i)] = v;
  return [...r, ...children];
}

let c: Redis;
const name = qname('guards');
const keys = keysOf(name);

beforeAll(async () => {
  c = client();
  // A queue with content of every kind the guards could spoil: ready jobs in two lanes, a
  // delayed job, a custom id, an active job; the id counter at 4.
  expect(await rawCall(c, 'add', keys, addArgs(record(), '', ''))).toEqual(['1', 1, '2', 1]);
  expect(await rawCall(c, 'add', keys, addArgs(record({ 2: 'b', 3: '60000' }), '', 'custom'))).toEqual(['3', 1, 'custom', 1]);
  expect(await rawCall(c, 'add', keys, addArgs(record({ 1: '5' }), ''))).toEqual(['4', 1]);
  const claimed = (await rawCall(c, 'claim', keys, ['1', '30000', '', ''])) as unknown[];
  expect(claimed[0]).toBe(1);
});
afterAll(() => c.quit());

/**
 * A hash kept as a hashtable (meta, with its filler field) may be halfway through an incremental
 * rehash, which any lookup advances: its DUMP then lists the same fields in another order. A few
 * reads first finish it, so DUMP compares content.
 */
async function settled(): Promise<Map<string, string>> {
  for (let i = 0; i < 32; i++) await c.hget(keys.meta, 'id');
  return snapshot(c, keys);
}

/** Calls the script and expects the refusal {code, position} with nothing written. */
async function refused(script: string, argv: string[], code: number, pos: number): Promise<void> {
  const before = await settled();
  const reply = await rawCall(c, script, keys, argv);
  expect(reply).toEqual([code, pos]);
  expect(await snapshot(c, keys)).toEqual(before);
}

describe('add refuses before its first write', () => {
  const R = 4; // the first record's first field
  const J = 4 + 15; // the first job's first field (one record)
  it.each([
    ['an integer id the counter has not given out ("7")', '7'],
    ['a negative integer id', '-7'],
    ['an integer id 2^53 (prints back the same)', '9007199254740992'],
    ['an integer id 10^20 (exact in a double)', '100000000000000000000'],
    ['the active set\'s sentinel', SENTINEL],
    ['an id of 1025 characters', 'x'.repeat(1025)],
    ['an id of 513 astral characters (1026 UTF-16 units)', '😀'.repeat(513)],
  ])('BAD_ID: %s', async (_label, id) => {
    await refused('add', addArgs(record(), id), Code.BAD_ID, J);
  });

  it('BAD_ID on the second job of a bulk: the first is not written either', async () => {
    await refused('add', addArgs(record(), 'fine-id', '8'), Code.BAD_ID, J + 4);
  });

  it.each([
    ['an empty lane', record({ 2: '' }), R + 2],
    ['a lane of 1025 characters', record({ 2: 'l'.repeat(1025) }), R + 2],
  ])('BAD_LANE: %s', async (_label, rec, pos) => {
    await refused('add', addArgs(rec, ''), Code.BAD_LANE, pos);
  });

  it('BAD_LANE: a job naming the empty lane in a call of several lanes (5 fields a job)', async () => {
    await refused('add', ['2', '1', '5', ...record({ 2: '' }), '', 'n', '{}', '1', 'a', '', 'n', '{}', '1', ''], Code.BAD_LANE, J + 5 + 4);
  });

  it.each([
    ['a non-numeric delay (before HINCRBY meta id)', { 3: 'soon' }, R + 3],
    ['a fractional delay', { 3: '1.5' }, R + 3],
    ['a non-numeric priority', { 1: 'high' }, R + 1],
    ['a priority above 2097151', { 1: '2097152' }, R + 1],
    ['opts that are not a JSON object', { 0: '[1]' }, R],
    ['opts that are not JSON', { 0: '{attempts:3' }, R],
    ['a lifo flag other than 0/1', { 4: 'yes' }, R + 4],
    ['a keep count that is not an integer', { 5: 'all' }, R + 5],
    ['a negative keep age', { 6: '-5' }, R + 6],
    ['a failed keep count with an exponent', { 7: '1e3' }, R + 7],
    ['a failed keep age that is not a number', { 8: 'x' }, R + 8],
    ['a dedup TTL that is not a number', { 9: 'd', 10: 'x' }, R + 10],
    ['a timestamp with a fraction', { 11: '1.5' }, R + 11],
    ['a parent that is not JSON', { 12: '{pid' }, R + 12],
    ['a parent without a job key', { 12: '{"pid":"p","pq":"q","ppx":"emq","pol":"","same":1}' }, R + 12],
    ['a dedup mode with an unknown letter', { 9: 'd', 13: 'x' }, R + 13],
    ['a groupMaxSize of 0', { 14: '0' }, R + 14],
  ])('BAD_ARGUMENT: %s', async (_label, over, pos) => {
    await refused('add', addArgs(record(over as Record<number, string>), ''), Code.BAD_ARGUMENT, pos);
  });

  it.each([
    ['a job count that is not a number', ['x', '1', '4', ...record(), '', 'n', '{}', '1'], 1],
    ['a job count that does not match the arguments', ['2', '1', '4', ...record(), '', 'n', '{}', '1'], 1],
    ['fields per job 3', ['1', '1', '3', ...record(), '', 'n', '{}'], 3],
    ['2 fields per job with two records', ['1', '2', '2', ...record(), ...record(), 'n', '{}'], 2],
    ['2 fields per job with a delayed record', ['1', '1', '2', ...record({ 3: '5' }), 'n', '{}'], 3],
    ['a record number past the records', ['1', '1', '4', ...record(), 'id-x', 'n', '{}', '2'], J + 3],
    ['a record number 0', ['1', '1', '4', ...record(), 'id-x', 'n', '{}', '0'], J + 3],
  ])('BAD_ARGUMENT: %s', async (_label, argv, pos) => {
    await refused('add', argv as string[], Code.BAD_ARGUMENT, pos as number);
  });
});

describe('add takes every id the clients take', () => {
  it.each([
    ['007'], ['+7'], ['-0'], ['7.0'], ['7 '], ['9007199254740993'], ['1000000000000000000000'], ['0x10'], ['1e3'],
    ['3'], // at or below the counter: an id reserved for a child of a parent in another queue
  ])('%s', async (id) => {
    const q = keysOf(qname('ids'));
    // Ids 1-3 reserved as a client does for children of parents in other queues.
    await c.hincrby(q.meta, 'id', 3);
    const reply = await rawCall(c, 'add', q, addArgs(record(), id));
    expect(reply).toEqual([id, 1]);
    expect(await c.hget(q.jobBase + id, 'name')).toBe('n');
  });
});

describe('addFlow refuses before its first write', () => {
  const B = 2; // the first node's first field
  it.each([
    ['an empty id', node(''), Code.BAD_ID, B],
    ['an integer id the counter has not given out', node('12'), Code.BAD_ID, B],
    ['the sentinel as an id', node(SENTINEL), Code.BAD_ID, B],
    ['an empty lane', node('f1', { 5: '' }), Code.BAD_LANE, B + 5],
    ['a non-numeric delay', node('f1', { 6: 'later' }), Code.BAD_ARGUMENT, B + 6],
    ['a priority with a fraction', node('f1', { 4: '1.5' }), Code.BAD_ARGUMENT, B + 4],
    ['opts that are not an object', node('f1', { 3: '"x"' }), Code.BAD_ARGUMENT, B + 3],
    ['a parent id without its key', node('f1', { 12: 'p' }), Code.BAD_ARGUMENT, B + 13],
    ['an unknown policy', node('f1', { 12: 'p', 13: 'k', 16: 'z' }), Code.BAD_ARGUMENT, B + 16],
    ['register without a parent', node('f1', { 18: '1' }), Code.BAD_ARGUMENT, B + 18],
    ['a child count that is not a number', node('f1', { 19: 'two' }), Code.BAD_ARGUMENT, B + 19],
    ['an empty child key', node('f1', {}, ['']), Code.BAD_ARGUMENT, B + 20],
  ])('%s', async (_label, nodeArgs, code, pos) => {
    // A good first node, then the bad one: the first is not written either.
    const good = node('flow-ok');
    const shift = good.length;
    await refused('addFlow', ['2', ...good, ...(nodeArgs as string[])], code as number, (pos as number) + shift);
  });

  it('a node count that does not match the arguments', async () => {
    await refused('addFlow', ['2', ...node('f1')], Code.BAD_ARGUMENT, 1);
  });
});

describe('the clients map the codes to ValidationError', () => {
  it('Node: the add binding names the argument', async () => {
    const ctx = { client: c, keys };
    const job = { id: '77', name: 'n', data: '{}', opts: '', priority: 0, lane: 'default', delay: 0, lifo: false,
      keepCompleted: [-1, 0] as [number, number], keepFailed: [-1, 0] as [number, number] };
    const before = await snapshot(c, keys);
    const err = await scripts.add(ctx, [job as never]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe('add jobs[0].id (ARGV[19])');
    expect((err as ValidationError).got).toBe('"77"');
    const lane = await scripts.add(ctx, [{ ...job, id: '', lane: '' } as never]).catch((e: unknown) => e);
    expect((lane as ValidationError).field).toBe('add records[0].lane (ARGV[6])');
    expect(await snapshot(c, keys)).toEqual(before);
  });

  it('Node: the addFlow binding names the node and argument', async () => {
    const n = { id: 'f-ok', name: 'n', data: '{}', opts: '', priority: 0, lane: '', delay: 0, lifo: false,
      keepCompleted: [-1, 0] as [number, number], keepFailed: [-1, 0] as [number, number], policy: '', children: [] };
    const err = await lifecycleScripts.addFlow({ client: c, keys }, [n as never]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe('addFlow nodes[0].lane (ARGV[7])');
  });
});

describe('the other scripts that take a lane or a number refuse before their first write', () => {
  /** Calls the script and expects the bare status code with nothing written. */
  async function refusedCode(script: string, argv: string[], code: number): Promise<void> {
    const before = await settled();
    expect(await rawCall(c, script, keys, argv)).toBe(code);
    expect(await snapshot(c, keys)).toEqual(before);
  }
  it.each([
    ['moveToLane to the empty lane', 'moveToLane', ['1', ''], Code.BAD_LANE],
    ['moveToLane to a lane of 1025 characters', 'moveToLane', ['1', 'l'.repeat(1025)], Code.BAD_LANE],
    ['setLane of the empty lane', 'setLane', ['', 'weight', '3'], Code.BAD_LANE],
    ['setLane with a weight 0', 'setLane', ['b', 'weight', '0'], Code.BAD_ARGUMENT],
    ['setLane with an unknown field', 'setLane', ['b', 'colour', '3'], Code.BAD_ARGUMENT],
    ['setLane with a rate that is not max:ms', 'setLane', ['b', 'rate', '5'], Code.BAD_ARGUMENT],
    ['pauseLane of the empty lane', 'pauseLane', ['', '1'], Code.BAD_LANE],
    ['pauseLane with a flag other than 1/0', 'pauseLane', ['b', 'yes'], Code.BAD_ARGUMENT],
    ['rateLimitLane of the empty lane', 'rateLimitLane', ['', '1000'], Code.BAD_LANE],
    ['rateLimitLane for a non-numeric time', 'rateLimitLane', ['b', 'soon'], Code.BAD_ARGUMENT],
    ['changePriority to a non-numeric priority', 'changePriority', ['2', 'high', '0'], Code.BAD_ARGUMENT],
    ['changeDelay to a non-numeric delay', 'changeDelay', ['custom', 'later'], Code.BAD_ARGUMENT],
    ['addLog with a keepLogs that is not a number', 'addLog', ['2', 'a line', 'all'], Code.BAD_ARGUMENT],
    ['moveToDelayed with a delay that is not a number (the job is active)', 'moveToDelayed', ['1', '', '', 'later'], Code.BAD_ARGUMENT],
  ])('%s', async (_label, script, argv, code) => {
    await refusedCode(script as string, argv as string[], code as number);
  });

  const sched = (over: Record<number, string>): string[] => {
    const a = ['s1', '60000', '', '', '', '', '', '', 'n', '{}', '', '0', 'default', '0', '', '', '', '', ''];
    for (const [i, v] of Object.entries(over)) a[Number(i) - 1] = v;
    return a;
  };
  it.each([
    ['claim with a lease that is not a number', 'claim', ['1', 'soon', '', ''], 2],
    ['claim with a count that is not a number', 'claim', ['many', '30000', '', ''], 1],
    ['complete with a lease that is not a number (the job is active)', 'complete', ['1', 'x', '16384', '', '0', '', '', '', '3', '1', '1', 'null'], 2],
    ['fail with a retry delay that is not a number (the job is active)', 'fail', ['1', '1', 'boom', '[]', 'later', '0', '30000', '0'], 5],
    ['fail with a retry delay NaN', 'fail', ['1', '1', 'boom', '[]', 'nan', '0', '30000', '0'], 5],
    ['recover with a maxStalledCount that is not a number', 'recover', ['one', '100'], 1],
  ])('the hot path: %s', async (_label, script, argv, pos) => {
    await refused(script as string, argv as string[], Code.BAD_ARGUMENT, pos as number);
  });

  it.each([
    ['an empty scheduler id', sched({ 1: '' }), Code.BAD_ARGUMENT, 1],
    ['a non-numeric every', sched({ 2: 'hourly' }), Code.BAD_ARGUMENT, 2],
    ['a non-numeric priority', sched({ 12: 'x' }), Code.BAD_ARGUMENT, 12],
    ['the empty lane', sched({ 13: '' }), Code.BAD_LANE, 13],
    ['opts that are not an object', sched({ 11: 'x' }), Code.BAD_ARGUMENT, 11],
  ])('upsertScheduler: %s', async (_label, argv, code, pos) => {
    await refused('upsertScheduler', argv as string[], code as number, pos as number);
  });
});
