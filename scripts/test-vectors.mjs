// Test vectors of the wire protocol (docs/protocol.md "Writing a client"): each vector is a
// sequence of library calls with their exact KEYS and ARGV, the replies, and every key of the
// queue afterwards. This script defines the scenarios, runs them against a live server with the
// built library (python/echomq/library.json) and writes test/vectors/<name>.json; the runners
// (test/vectors.test.ts, python/tests/test_vectors.py) replay them and compare. Regenerate only
// on purpose, after a change to a script's replies or stored bytes:
//
//   node scripts/test-vectors.mjs --write     (REDIS_URL, or a throwaway redis-server)
//
// Placeholders: `$Q` is the queue name (the runner picks a fresh one). A 13-digit number that is
// a time on the Redis clock is written `${t<i>+<x>}`: the runner reads TIME before and after
// step i and accepts any value from before + x to after + x (ms). A stream entry id is
// `${t<i>}-*` (any sequence number). A reply integer holding a time is {"int": "${t<i>+<x>}"}. A
// job hash's field list in a reply is {"hgetall": {field: value}}, compared as a map.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const VECTOR_DIR = join(root, 'test', 'vectors');
const artifact = () => JSON.parse(readFileSync(join(root, 'python', 'echomq', 'library.json'), 'utf8'));

// ---------------------------------------------------------------------------------------------
// Calling and reading, as any client does (also used by test/vectors.test.ts).

/** The key of name `k` (a script header's KEYS name) for queue q, prefix emq (src/core/keys.ts). */
export function keyOf(k, q) {
  const suffix = { metricsCompleted: 'metrics:completed', metricsCompletedData: 'metrics:completed:data',
    metricsFailed: 'metrics:failed', metricsFailedData: 'metrics:failed:data', schedBase: 'sched:', depsBase: 'deps:',
    laneBase: 'lane:', jobBase: 'job:', logsBase: 'logs:', lrateBase: 'lrate:', reqBase: 'req:' }[k] ?? k;
  return `emq:{${q}}:${suffix}`;
}

/** Redis TIME in ms, as the scripts read it. */
export async function redisMs(c) {
  const [s, us] = await c.call('TIME');
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** One step's reply: FCALL for the library's transitions (loading it when missing), else EVALSHA/EVAL. */
export async function runStep(c, lib, step) {
  try {
    if (step.redis) return await c.call(...step.redis);
    const s = lib.scripts[step.call];
    const n = step.keys.length;
    if (s.functionName) {
      try {
        return await c.call('FCALL', s.functionName, n, ...step.keys, ...step.argv);
      } catch (e) {
        if (!/Function not found/.test(e.message)) throw e;
        await c.call('FUNCTION', 'LOAD', 'REPLACE', lib.library);
        return await c.call('FCALL', s.functionName, n, ...step.keys, ...step.argv);
      }
    }
    try {
      return await c.call('EVALSHA', s.sha, n, ...step.keys, ...step.argv);
    } catch (e) {
      if (!/NOSCRIPT/.test(e.message)) throw e;
      return await c.call('EVAL', s.source, n, ...step.keys, ...step.argv);
    }
  } catch (e) {
    return { error: e.message };
  }
}

/** Every key of queue q, by type: hashes field → value (sorted), zsets [member, score] in order, lists, sets (sorted), strings, streams. */
export async function readStore(c, q) {
  const keys = [];
  let cursor = '0';
  do {
    const [next, batch] = await c.scan(cursor, 'MATCH', `emq:{${q}}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  keys.sort();
  const out = {};
  for (const k of keys) {
    const type = await c.type(k);
    let value;
    if (type === 'hash') {
      const h = await c.hgetall(k);
      value = Object.fromEntries(Object.keys(h).sort().map((f) => [f, h[f]]));
    } else if (type === 'zset') {
      const r = await c.zrange(k, 0, -1, 'WITHSCORES');
      value = [];
      for (let i = 0; i < r.length; i += 2) value.push([r[i], r[i + 1]]);
    } else if (type === 'list') value = await c.lrange(k, 0, -1);
    else if (type === 'set') value = (await c.smembers(k)).sort();
    else if (type === 'string') value = await c.get(k);
    else if (type === 'stream') value = (await c.xrange(k, '-', '+')).map(([id, fields]) => ({ id, fields }));
    else value = null;
    out[k] = { type, value };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The scenarios. Steps: { call, argv } (KEYS from the script's header), { redis: [...] } for a
// plain command, { sleepMs }. ARGV values are strings.

const SENTINEL = '~'.repeat(72);
/** One option record of add (15 fields), plain unless overridden (index → value). */
function rec(over = {}) {
  const r = ['', '0', 'default', '0', '0', '', '', '', '', '', '0', '', '', '', ''];
  for (const [i, v] of Object.entries(over)) r[Number(i)] = v;
  return r;
}
/** add ARGV with k = 4: jobs [id, name, data, record]. */
const add4 = (records, jobs, rid) => [String(jobs.length), String(records.length), '4', ...records.flat(), ...jobs.flat(), ...(rid ? [rid] : [])];
/** add ARGV with k = 2 (plain): jobs [name, data]. */
const add2 = (record, jobs) => [String(jobs.length), '1', '2', ...record, ...jobs.flat()];
const call = (name, argv) => ({ call: name, argv });
const claim = (n, lease = '30000', name = '') => call('claim', [n, lease, '', name]);
/** fail ARGV: id, token, reason, stack, delay, fetch, lease, exhausted. */
const fail = (id, token, delay, exhausted, stack = '["Error: boom\\n    at processor"]') =>
  call('fail', [id, token, 'boom', stack, delay, '0', '30000', exhausted]);
/** complete ARGV with F = 3: fetch, lease, maxEventValueBytes, owner, metrics, keep count, keep age, name, F, jobs. */
const complete = (fetch, jobs) => call('complete', [fetch, '30000', '16384', '', '0', '', '', '', '3', ...jobs.flat()]);
/** A root node of addFlow (20 fields and its children). */
function node(id, over = {}, children = []) {
  const r = [id, 'n', '{}', '', '0', 'default', '0', '0', '', '', '', '', '', '', '', '', '', '', '0', String(children.length)];
  for (const [i, v] of Object.entries(over)) r[Number(i)] = v;
  return [...r, ...children];
}
const SETUP = [call('add', add2(rec(), [['a', '{"n":1}'], ['b', '{"n":2}']])), call('add', add4([rec({ 2: 'b', 3: '60000' })], [['custom', 'c', '{}', '1']]))];
/** A guard vector: a queue with content, then the refused call (the store must not change). */
const guard = (name, script, argv) => ({ name: `guard-${name}`, steps: [...SETUP, call(script, argv)] });
const sched = (over) => {
  const a = ['s1', '60000', '', '', '', '', '', '', 'n', '{}', '', '0', 'default', '0', '', '', '', '', ''];
  for (const [i, v] of Object.entries(over)) a[Number(i) - 1] = v;
  return a;
};
const R = 4; // add's first record field

export const SCENARIOS = [
  { name: 'add-plain', about: 'two jobs with generated ids in the 2-field form', steps: [call('add', add2(rec(), [['email', '{"to":"a@b.c"}'], ['email', '{"to":"d@e.f"}']]))] },
  { name: 'add-bulk', about: 'a bulk of three jobs under two option records (4 fields a job)', steps: [
    call('add', add4([rec({ 0: '{"attempts":3}' }), rec({ 1: '7', 5: '10' })], [['', 'a', '1', '1'], ['', 'b', '2', '1'], ['', 'c', '3', '2']])),
  ] },
  { name: 'add-priority', about: 'priorities 5, 0 and 1: a claim serves 0, then 1, then 5', steps: [
    call('add', add4([rec({ 1: '5' }), rec(), rec({ 1: '1' })], [['', 'p5', '{}', '1'], ['', 'p0', '{}', '2'], ['', 'p1', '{}', '3']])),
    claim('3'),
  ] },
  { name: 'add-lane', about: 'jobs in two lanes in one call (5 fields a job), then a weight', steps: [
    call('add', ['3', '1', '5', ...rec({ 2: '' }), '', 'a1', '{}', '1', 'tenant-a', '', 'b1', '{}', '1', 'tenant-b', '', 'a2', '{}', '1', 'tenant-a']),
    call('setLane', ['tenant-a', 'weight', '3']),
    claim('3'),
  ] },
  { name: 'add-delay', about: 'a delayed job (60 s) beside a ready one', steps: [
    call('add', add4([rec({ 3: '60000' }), rec()], [['', 'later', '{}', '1'], ['', 'now', '{}', '2']])),
  ] },
  { name: 'add-lifo', about: 'two FIFO then two LIFO jobs: the LIFO jobs are served first, newest first', steps: [
    call('add', add4([rec(), rec({ 4: '1' })], [['', 'f1', '{}', '1'], ['', 'f2', '{}', '1'], ['', 'l1', '{}', '2'], ['', 'l2', '{}', '2']])),
    claim('4'),
  ] },
  { name: 'add-custom-id', about: 'a custom id, its duplicate (created 0, a duplicated event), and ids the clients take (007, past 2^53)', steps: [
    call('add', add4([rec()], [['order-7', 'o', '{"v":1}', '1']])),
    call('add', add4([rec()], [['order-7', 'o', '{"v":2}', '1']])),
    call('add', add4([rec()], [['007', 'z', '{}', '1'], ['9007199254740993', 'big', '{}', '1']])),
  ] },
  { name: 'add-dedup', about: 'a dedup id held by a live job: the second add is deduplicated', steps: [
    call('add', add4([rec({ 9: 'user-1' })], [['', 'a', '{}', '1']])),
    call('add', add4([rec({ 9: 'user-1' })], [['', 'b', '{}', '1']])),
  ] },
  { name: 'add-dedup-ttl', about: 'a dedup id with a 60 s TTL (throttle mode)', steps: [
    call('add', add4([rec({ 9: 'tick', 10: '60000' })], [['', 'a', '{}', '1']])),
    call('add', add4([rec({ 9: 'tick', 10: '60000' })], [['', 'b', '{}', '1']])),
  ] },
  { name: 'add-request-id', about: 'an add with a request id, sent twice: the rerun replies the first run\'s ids and adds nothing', steps: [
    call('add', add4([rec()], [['', 'a', '{}', '1'], ['', 'b', '{}', '1']], 'vec-req-1')),
    call('add', add4([rec()], [['', 'a', '{}', '1'], ['', 'b', '{}', '1']], 'vec-req-1')),
  ] },
  { name: 'claim', about: 'a claim of two of three jobs, with a worker name and a request id, then its rerun', steps: [
    call('add', add2(rec(), [['a', '{}'], ['b', '{}'], ['c', '{}']])),
    call('claim', ['2', '30000', '', 'worker-1', 'vec-claim-1']),
    call('claim', ['2', '30000', '', 'worker-1', 'vec-claim-1']),
  ] },
  { name: 'complete-and-claim', about: 'complete one job and claim the next in the same call', steps: [
    call('add', add2(rec(), [['a', '{}'], ['b', '{}'], ['c', '{}']])),
    claim('1'),
    complete('1', [['1', '1', '{"ok":true}']]),
    complete('0', [['2', '1', '42']]),
  ] },
  { name: 'complete-stale', about: 'a complete with a stale token is refused per job (-2) and changes nothing', steps: [
    call('add', add2(rec(), [['a', '{}']])),
    claim('1'),
    complete('0', [['1', '5', 'null']]),
  ] },
  { name: 'fail-retry', about: 'attempts 3: a failure retried at once, then one with a 40 ms backoff, promoted by the next claim', steps: [
    call('add', add4([rec({ 0: '{"attempts":3}' })], [['', 'a', '{}', '1']])),
    claim('1'),
    fail('1', '1', '0', '0'),
    claim('1'),
    fail('1', '2', '40', '0', '["Error: boom\\n    at processor","Error: boom\\n    at processor"]'),
    { sleepMs: 80 },
    claim('1'),
  ] },
  { name: 'fail-exhausted', about: 'attempts 1: the failure is final, the attempts ran out', steps: [
    call('add', add2(rec(), [['a', '{}']])),
    claim('1'),
    fail('1', '1', '-1', '1'),
  ] },
  { name: 'fail-stale', about: 'a fail with a stale token replies {-2} and changes nothing', steps: [
    call('add', add2(rec(), [['a', '{}']])),
    claim('1'),
    fail('1', '9', '-1', '1'),
  ] },
  { name: 'lease-renewal', about: 'extendLeases renews a held lease and reports a stale one as lost', steps: [
    call('add', add2(rec(), [['a', '{}'], ['b', '{}']])),
    claim('2'),
    call('extendLeases', ['60000', '1', '1', '2', '7']),
  ] },
  { name: 'stall-recovery', about: 'leases of 1 ms expire: the first sweep requeues the job (a stall), the second fails it (more than maxStalledCount 1)', steps: [
    call('add', add2(rec(), [['a', '{}']])),
    claim('1', '1'),
    { sleepMs: 20 },
    call('recover', ['1', '100']),
    claim('1', '1'),
    { sleepMs: 20 },
    call('recover', ['1', '100']),
  ] },
  { name: 'delayed-promotion', about: 'a job delayed 30 ms is promoted and claimed by a claim after it is due', steps: [
    call('add', add4([rec({ 3: '30' })], [['', 'soon', '{}', '1']])),
    { sleepMs: 80 },
    claim('1'),
  ] },
  { name: 'layout-check', about: 'the layout check (HGET meta lv) and upgradeLayout: report, upgrade from 1, refuse an unknown version', steps: [
    call('add', add2(rec(), [['a', '{}']])),
    { redis: ['HGET', 'emq:{$Q}:meta', 'lv'] },
    call('upgradeLayout', ['0']),
    { redis: ['HSET', 'emq:{$Q}:meta', 'lv', '1'] },
    call('upgradeLayout', ['1']),
    { redis: ['HGET', 'emq:{$Q}:meta', 'lv'] },
    { redis: ['HSET', 'emq:{$Q}:meta', 'lv', '7'] },
    call('upgradeLayout', ['1']),
  ] },
  { name: 'add-flow', about: 'a parent with two children in one queue: the parent waits for them', steps: [
    call('addFlow', ['3', ...node('parent', {}, ['emq:{$Q}:job:kid-1', 'emq:{$Q}:job:kid-2']),
      ...node('kid-1', { 12: 'parent', 13: 'emq:{$Q}:job:parent', 14: '$Q', 15: 'emq' }),
      ...node('kid-2', { 12: 'parent', 13: 'emq:{$Q}:job:parent', 14: '$Q', 15: 'emq' })]),
  ] },
  // The guards (docs/protocol.md "Guards"): each refused call leaves the store as SETUP made it.
  guard('add-integer-id', 'add', add4([rec()], [['7', 'n', '{}', '1']])),
  guard('add-negative-id', 'add', add4([rec()], [['-7', 'n', '{}', '1']])),
  guard('add-integer-id-2p53', 'add', add4([rec()], [['9007199254740992', 'n', '{}', '1']])),
  guard('add-sentinel-id', 'add', add4([rec()], [[SENTINEL, 'n', '{}', '1']])),
  guard('add-long-id', 'add', add4([rec()], [['x'.repeat(1025), 'n', '{}', '1']])),
  guard('add-second-job-bad-id', 'add', add4([rec()], [['fine', 'n', '{}', '1'], ['8', 'n', '{}', '1']])),
  guard('add-empty-lane', 'add', add4([rec({ 2: '' })], [['', 'n', '{}', '1']])),
  guard('add-long-lane', 'add', add4([rec({ 2: 'l'.repeat(1025) })], [['', 'n', '{}', '1']])),
  guard('add-job-empty-lane', 'add', ['1', '1', '5', ...rec({ 2: '' }), '', 'n', '{}', '1', '']),
  guard('add-delay-not-a-number', 'add', add4([rec({ 3: 'soon' })], [['', 'n', '{}', '1']])),
  guard('add-priority-too-high', 'add', add4([rec({ 1: '2097152' })], [['', 'n', '{}', '1']])),
  guard('add-priority-fraction', 'add', add4([rec({ 1: '2.5' })], [['', 'n', '{}', '1']])),
  guard('add-opts-not-object', 'add', add4([rec({ 0: '[1]' })], [['', 'n', '{}', '1']])),
  guard('add-lifo-flag', 'add', add4([rec({ 4: 'yes' })], [['', 'n', '{}', '1']])),
  guard('add-keep-count', 'add', add4([rec({ 5: 'all' })], [['', 'n', '{}', '1']])),
  guard('add-keep-age-negative', 'add', add4([rec({ 6: '-5' })], [['', 'n', '{}', '1']])),
  guard('add-dedup-ttl', 'add', add4([rec({ 9: 'd', 10: 'x' })], [['', 'n', '{}', '1']])),
  guard('add-timestamp', 'add', add4([rec({ 11: '1.5' })], [['', 'n', '{}', '1']])),
  guard('add-parent-json', 'add', add4([rec({ 12: '{pid' })], [['', 'n', '{}', '1']])),
  guard('add-dedup-mode', 'add', add4([rec({ 9: 'd', 13: 'x' })], [['', 'n', '{}', '1']])),
  guard('add-group-max-zero', 'add', add4([rec({ 14: '0' })], [['', 'n', '{}', '1']])),
  guard('add-count-mismatch', 'add', ['2', '1', '4', ...rec(), '', 'n', '{}', '1']),
  guard('add-fields-per-job', 'add', ['1', '1', '3', ...rec(), '', 'n', '{}']),
  guard('add-plain-form-delayed', 'add', ['1', '1', '2', ...rec({ 3: '5' }), 'n', '{}']),
  guard('add-record-number', 'add', add4([rec()], [['id-x', 'n', '{}', '2']])),
  guard('addflow-empty-id', 'addFlow', ['1', ...node('')]),
  guard('addflow-integer-id', 'addFlow', ['1', ...node('12')]),
  guard('addflow-empty-lane', 'addFlow', ['1', ...node('f1', { 5: '' })]),
  guard('addflow-delay', 'addFlow', ['1', ...node('f1', { 6: 'later' })]),
  guard('addflow-register-without-parent', 'addFlow', ['1', ...node('f1', { 18: '1' })]),
  guard('addflow-child-count', 'addFlow', ['1', ...node('f1', { 19: 'two' })]),
  guard('upsertscheduler-empty-lane', 'upsertScheduler', sched({ 13: '' })),
  guard('upsertscheduler-priority', 'upsertScheduler', sched({ 12: 'x' })),
  guard('movetolane-empty-lane', 'moveToLane', ['1', '']),
  guard('setlane-empty-lane', 'setLane', ['', 'weight', '3']),
  guard('setlane-weight-zero', 'setLane', ['b', 'weight', '0']),
  guard('pauselane-empty-lane', 'pauseLane', ['', '1']),
  guard('ratelimitlane-ms', 'rateLimitLane', ['b', 'soon']),
  guard('changepriority-not-a-number', 'changePriority', ['2', 'high', '0']),
  guard('changedelay-not-a-number', 'changeDelay', ['custom', 'later']),
  guard('addlog-keep', 'addLog', ['1', 'a line', 'all']),
  { name: 'guard-movetodelayed-delay', about: 'a moveToDelayed whose delay is not a number is refused before it touches the active job', steps: [...SETUP, claim('1'), call('moveToDelayed', ['1', '', '', 'later'])] },
  { name: 'guard-claim-lease', about: 'a claim whose lease is not a number is refused before it pops a job', steps: [...SETUP, call('claim', ['1', 'soon', '', ''])] },
  { name: 'guard-fail-delay', about: 'a fail whose retry delay is not a number is refused before it touches the active job', steps: [...SETUP, claim('1'), call('fail', ['1', '1', 'boom', '[]', 'later', '0', '30000', '0'])] },
  { name: 'guard-complete-lease', about: 'a complete whose lease is not a number is refused before it settles', steps: [...SETUP, claim('1'), call('complete', ['1', 'x', '16384', '', '0', '', '', '', '3', '1', '1', 'null'])] },
  { name: 'guard-recover-count', about: 'a stall sweep whose maxStalledCount is not a number is refused before it requeues', steps: [...SETUP, claim('1', '10'), { sleepMs: 30 }, call('recover', ['one', '100'])] },
];

// ---------------------------------------------------------------------------------------------
// Generating: run each scenario, turn clock values into placeholders.

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const subst = (v, q) => (typeof v === 'string' ? v.split('$Q').join(q) : Array.isArray(v) ? v.map((x) => subst(x, q)) : v);
const unsubst = (v, q) => {
  if (typeof v === 'string') return v.split(q).join('$Q');
  if (Array.isArray(v)) return v.map((x) => unsubst(x, q));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [unsubst(k, q), unsubst(x, q)]));
  return v;
};

/** Runs a scenario on queue q; the steps as sent, their replies, the clock windows and the store. */
export async function runScenario(c, lib, scenario, q, pause = 0) {
  const steps = [];
  const windows = [];
  for (const s of scenario.steps) {
    if (s.sleepMs !== undefined) {
      await sleep(s.sleepMs);
      steps.push({ sleepMs: s.sleepMs });
      windows.push(null);
      continue;
    }
    const step = s.redis ? { redis: subst(s.redis, q) } : { call: s.call, keys: lib.scripts[s.call].keys.map((k) => keyOf(k, q)), argv: subst(s.argv, q) };
    const before = await redisMs(c);
    const reply = await runStep(c, lib, step);
    const after = await redisMs(c);
    steps.push({ ...step, reply });
    windows.push([before, after, s.argv ?? []]);
    if (pause) await sleep(pause);
  }
  return { steps, windows, store: await readStore(c, q) };
}

/** Replaces each 13-digit run that is a clock value of exactly one step (window + one of its ARGV durations). */
function placeholders(s, windows) {
  return s.replace(/(?<!\d)\d{13}(?!\d)/g, (digits) => {
    const v = Number(digits);
    const hits = [];
    windows.forEach((w, i) => {
      if (!w) return;
      // Durations of 10 ms and more: counts and flags ('1', '3') are no offsets.
      const offsets = new Set([0, ...w[2].filter((a) => /^\d{2,9}$/.test(a)).map(Number)]);
      for (const x of offsets) if (v >= w[0] + x && v <= w[1] + x) hits.push(`\${t${i}${x ? `+${x}` : ''}}`);
    });
    if (hits.length > 1) throw new Error(`clock value ${digits} matches ${hits.join(', ')}: run again`);
    return hits[0] ?? digits;
  });
}

/**
 * A job hash's field list in a reply (claim, complete, fail, recover: HGETALL order): a hash kept
 * as a hashtable (a value over 64 bytes) lists its fields in an order that changes with the
 * server's hash seed, so such a list is written {"hgetall": {field: value}} and compared as a map.
 */
let jobFieldNames;
function isFieldList(v) {
  return v.length >= 2 && v.length % 2 === 0 && v.every((x) => typeof x === 'string')
    && v.every((x, i) => i % 2 === 1 || jobFieldNames.has(x));
}

function withPlaceholders(v, windows) {
  if (typeof v === 'string') return placeholders(v, windows);
  if (Array.isArray(v) && isFieldList(v)) {
    const m = {};
    for (let i = 0; i < v.length; i += 2) m[v[i]] = placeholders(v[i + 1], windows);
    return { hgetall: Object.fromEntries(Object.keys(m).sort().map((k) => [k, m[k]])) };
  }
  if (typeof v === 'number') {
    const p = placeholders(String(v), windows);
    return p === String(v) ? v : { int: p };
  }
  if (Array.isArray(v)) return v.map((x) => withPlaceholders(x, windows));
  if (v && typeof v === 'object') {
    if (typeof v.id === 'string' && Array.isArray(v.fields)) {
      return { id: placeholders(v.id, windows).replace(/-\d+$/, '-*'), fields: withPlaceholders(v.fields, windows) };
    }
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withPlaceholders(x, windows)]));
  }
  return v;
}

/** JSON with objects one member a line and arrays of scalars (ARGV, KEYS, field lists) on one line. */
function pretty(v, indent = '') {
  const flat = (x) => x === null || typeof x !== 'object' || (Array.isArray(x) ? x.every((y) => y === null || typeof y !== 'object') : false);
  if (flat(v)) return JSON.stringify(v);
  const inner = indent + ' ';
  if (Array.isArray(v)) return `[\n${v.map((x) => inner + pretty(x, inner)).join(',\n')}\n${indent}]`;
  return `{\n${Object.entries(v).map(([k, x]) => `${inner}${JSON.stringify(k)}: ${pretty(x, inner)}`).join(',\n')}\n${indent}}`;
}

export async function generate(c) {
  const lib = artifact();
  const { JobField } = await import('../dist/core/fields.js');
  jobFieldNames = new Set(Object.values(JobField));
  const out = [];
  for (const sc of SCENARIOS) {
    const q = `vec${randomBytes(6).toString('hex')}`;
    // 3 ms between steps keep their clock windows apart, so each clock value names one step.
    const run = await runScenario(c, lib, sc, q, 3);
    const steps = run.steps.map((s) => unsubst(withPlaceholders(s, run.windows), q));
    const store = unsubst(withPlaceholders(run.store, run.windows), q);
    out.push({ name: sc.name, about: sc.about ?? `refused by the library's guards: the store is left as the first ${SETUP.length} steps made it`, steps, store });
  }
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { ensureRedis } = await import('./redis-server.mjs');
  const redis = await ensureRedis();
  const c = new Redis(redis.url);
  try {
    const vectors = await generate(c);
    if (process.argv.includes('--write')) {
      mkdirSync(VECTOR_DIR, { recursive: true });
      for (const f of readdirSync(VECTOR_DIR)) if (f.endsWith('.json')) rmSync(join(VECTOR_DIR, f));
      for (const v of vectors) writeFileSync(join(VECTOR_DIR, `${v.name}.json`), pretty(v) + '\n');
      console.log(`wrote ${vectors.length} vectors to ${VECTOR_DIR}`);
    } else console.log(JSON.stringify(vectors, null, 1));
  } finally {
    c.disconnect();
    await redis.stop();
  }
}
