// The floor: Lua functions that do only the Redis writes echomq's guarantees need for an add, a
// claim and a settle, batched as echomq batches them (add: 50 coalesced single adds or 100 bulk
// jobs per call; settle-and-claim: ceil(concurrency / 2) jobs per call, see
// src/worker/worker-settle.ts). They are not a queue: one lane (no lane limits, rates, pauses,
// priorities in use, delayed jobs, flows, dedup, metrics), no recovery sweep. What they keep is
// the state a real claim and settle must leave behind for those features to be layered on:
// the job hash, the lane's sorted-set entry, the ring, the lease, the fencing token, the shared
// event entries, the wake token. Run beside the real scripts (suite-costs.mjs floor rows and
// bench/instructions.mjs), they say how much of echomq's Redis work per job is the price of
// the guarantees and how much is overhead that could go.
//
// Also here: `echomqDirect`, echomq's real add and complete functions called with the same
// fixed batches by the same driver, so that a difference between it and the floor is the
// scripts' work alone, not the worker's batching.
import { Redis } from 'ioredis';
import { ECHOMQ_MODULE } from './libs.mjs';

const JOB_NAME = 'bench';
export const ADD_COALESCE = 50; // src/queue/queue.ts ADD_COALESCE: single adds per call
export const ADD_BATCH = 100; // src/queue/queue.ts ADD_BATCH: bulk jobs per call
const LEASE_MS = 30_000; // echomq's default lockDuration
const MAX_EVENT_VALUE = 1024; // largest return value copied into a completed event (as the worker)

// Variants, for pricing one of echomq's choices at a time on top of the floor (comma-separated
// in BENCH_FLOOR_VARIANT; bench/instructions.mjs --floor-variant): each adds back one thing
// echomq does that the floor does not.
//   job-fields    the job hash also holds st = 'w' and the arrival stamp sq (as add.lua)
//   stamp-member  the lane member is <14 hex stamp><id> at score 0, as lib/common.lua
//   counters      add also reserves a second counter (seq) and counts ready jobs (meta ready);
//                 the claim reads 13 meta fields and writes the turn and the ready count
//   hmget8        the settle reads 8 fields of the job (att st lane kc ka made pid pend)
//   del-per-job   the settle deletes each job with its own DEL (job, logs, deps)
//   wide-active   the active set holds a permanent member over 64 bytes, so Redis keeps it
//                 as a skiplist rather than a listpack (O(log n) inserts instead of O(n))
//   echomq-keys   each call declares as many keys as echomq's script does (add 21, claim 21,
//                 complete 28; the extra ones unused): the price of the declared key list
//   once-record   the settle-and-claim writes an applied-once record, as lib/once.lua does:
//                 a request id argument, and SET <req:id> <JSON of the codes and claimed jobs> PX
export const FLOOR_VARIANTS = ['job-fields', 'stamp-member', 'counters', 'hmget8', 'del-per-job', 'wide-active', 'echomq-keys', 'once-record'];
export function floorVariant() {
  const v = (process.env.BENCH_FLOOR_VARIANT ?? '').split(',').map((x) => x.trim()).filter(Boolean);
  for (const x of v) if (!FLOOR_VARIANTS.includes(x)) throw new Error(`unknown floor variant ${x}; known: ${FLOOR_VARIANTS.join(', ')}`);
  return v;
}
const WIDE = '-'.repeat(72);

// One function library (FUNCTION LOAD survives FLUSHALL). Every write says which guarantee
// needs it; everything echomq does beyond these is what the cost table calls overhead.
export const floorLibrary = (variant = []) => `#!lua name=bench_floor
local V = {${variant.map((x) => `['${x}'] = true`).join(', ')}}
-- Server clock in ms, as an integer string: leases and timestamps use Redis' clock, not the
-- clients' (docs/internals.md#leases-tokens-and-recovery), and strings avoid %.14g formatting in every redis.call.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Events: one XADD per 10 jobs of one kind, trimmed (MAXLEN ~) once per call, as echomq's
-- shared entries (lib/common.lua emitJob). Observers (QueueEvents) need every transition.
local EVENT_GROUP = 10
local function emitGroups(events, kind, shared, ids, own)
  local trimmed = false
  for i = 1, #ids, EVENT_GROUP do
    local e = { 'event', kind }
    for _, v in ipairs(shared) do e[#e + 1] = v end
    for j = i, math.min(i + EVENT_GROUP - 1, #ids) do
      e[#e + 1] = 'jobId'
      e[#e + 1] = ids[j]
      if own then e[#e + 1], e[#e + 2] = own[1], own[2][j] end
    end
    if trimmed then redis.call('XADD', events, '*', unpack(e))
    else trimmed = true; redis.call('XADD', events, 'MAXLEN', '~', '10000', '*', unpack(e)) end
  end
end

-- floor_add KEYS: meta, lane, ring, inring, events, wake, jobBase
-- ARGV: n, keep count ('' none), then name, data per job. Returns {first id, last id}.
local function add(keys, args)
  local meta, lane, ring, inring, events, wake, jobBase = unpack(keys)
  local n, kc = tonumber(args[1]), args[2]
  local ts = string.format('%d', nowMs()) -- job.timestamp
  -- One counter gives the ids and the FIFO order of the lane (ids are consecutive): one
  -- HINCRBY per call, where echomq reserves ids and arrival stamps from two counters.
  local last = redis.call('HINCRBY', meta, 'id', n)
  local first = last - n + 1
  local z, ids = {}, {}
  for i = 0, n - 1 do
    local id = string.format('%d', first + i)
    ids[i + 1] = id
    -- The job hash: what job.name/data/timestamp return, and its retention (removeOnComplete).
    local stamp = V['stamp-member'] and string.format('%014x', 4503599627370496 + first + i) or nil
    if V['job-fields'] then
      redis.call('HSET', jobBase .. id, 'name', args[3 + 2 * i], 'data', args[4 + 2 * i], 'ts', ts, 'kc', kc, 'st', 'w', 'sq', stamp or id)
    elseif kc ~= '' then redis.call('HSET', jobBase .. id, 'name', args[3 + 2 * i], 'data', args[4 + 2 * i], 'ts', ts, 'kc', kc)
    else redis.call('HSET', jobBase .. id, 'name', args[3 + 2 * i], 'data', args[4 + 2 * i], 'ts', ts) end
    -- The lane entry: score = the id (its arrival), member = the id. Priority 0 only: with
    -- priorities the score would need a composite that stays exact in a double.
    if stamp then z[2 * i + 1], z[2 * i + 2] = '0', stamp .. id
    else z[2 * i + 1], z[2 * i + 2] = id, id end
  end
  if V['counters'] then
    redis.call('HINCRBY', meta, 'seq', n)
    redis.call('HINCRBY', meta, 'ready', n)
  end
  redis.call('ZADD', lane, unpack(z))
  -- The ring: a lane with ready jobs is served; SADD tells whether it was already there.
  if redis.call('SADD', inring, 'default') == 1 then redis.call('RPUSH', ring, 'default') end
  emitGroups(events, 'added', { 'then', 'waiting', 'name', '${JOB_NAME}' }, ids)
  -- Wake one blocked worker (the wake list holds at most one token).
  if redis.call('LLEN', wake) == 0 then redis.call('RPUSH', wake, '1') end
  return { first, last }
end

-- Claims up to n jobs of the ring's next lane (one turn: the bench queue has one lane).
-- Appends id, fields per job to out. KEYS as floor_claim.
local function claimInto(keys, n, leaseMs, now, out)
  if n <= 0 then return 0 end
  local ring, inring, active, events, laneBase, jobBase = keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  -- Fairness: the lane served is the ring's head, rotated to the tail.
  local lane = redis.call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
  if not lane then return 0 end
  local popped = redis.call('ZPOPMIN', laneBase .. lane, n)
  local got = #popped / 2
  if V['counters'] then
    redis.call('HMGET', keys[9], 'paused', 'conc', 'rlmax', 'rldur', 'tl', 'tk', 'blk', 'evmax', 'dly', 'rlw', 'gconc', 'grate', 'lone')
    if got > 0 then
      redis.call('HSET', keys[9], 'tl', lane, 'tk', '0')
      redis.call('HINCRBY', keys[9], 'ready', -got)
    end
  end
  -- A lane left empty leaves the ring (it sits at the tail after the LMOVE).
  if got < n then
    redis.call('SREM', inring, lane)
    redis.call('LREM', ring, -1, lane)
  end
  if got == 0 then return 0 end
  local nowStr = string.format('%d', now)
  local deadline = string.format('%d', now + leaseMs)
  local leases, ids = {}, {}
  for i = 1, #popped, 2 do
    local id = V['stamp-member'] and string.sub(popped[i], 15) or popped[i]
    local jk = jobBase .. id
    -- The worker needs the job: the read is the reply.
    local h = redis.call('HGETALL', jk)
    local att = '1'
    for j = 1, #h, 2 do if h[j] == 'att' then att = string.format('%d', tonumber(h[j + 1]) + 1) end end
    -- The fencing token (att) and the state the settle checks; pOn is job.processedOn.
    redis.call('HSET', jk, 'att', att, 'st', 'a', 'pOn', nowStr)
    h[#h + 1], h[#h + 2] = 'att', att
    out[#out + 1], out[#out + 2] = id, h
    leases[#leases + 1], leases[#leases + 2] = deadline, id
    ids[#ids + 1] = id
  end
  -- The lease: one ZADD for the call (recovery scans this set by deadline).
  if V['wide-active'] and redis.call('EXISTS', active) == 0 then redis.call('ZADD', active, 'inf', '${WIDE}') end
  redis.call('ZADD', active, unpack(leases))
  emitGroups(events, 'active', { 'prev', 'waiting' }, ids)
  return got
end

-- floor_claim KEYS: ring, inring, active, events, laneBase, jobBase, completed, logsBase, meta
-- (the last three unused but by the variants). ARGV: n, lease ms.
-- Returns {claimed, id1, fields1, ...}.
local function claim(keys, args)
  local out = {}
  local got = claimInto(keys, tonumber(args[1]), tonumber(args[2]), nowMs(), out)
  table.insert(out, 1, got)
  return out
end

-- floor_complete KEYS: as floor_claim.
-- ARGV: fetch, lease ms, then id, token, return value per job.
-- Returns {claimed, m, code1..codem, id1, fields1, ...}; code 1 done, -2 stale or missing.
local function complete(keys, args)
  local active, events, jobBase, completed, logsBase = keys[3], keys[4], keys[6], keys[7], keys[8]
  local now = nowMs()
  local nowStr = string.format('%d', now)
  -- once-record: the request id is the last argument.
  local rid = V['once-record'] and table.remove(args) or nil
  local m = (#args - 2) / 3
  local codes, done, rvs, dels = {}, {}, {}, {}
  for i = 0, m - 1 do
    local id, token, rv = args[3 + 3 * i], args[4 + 3 * i], args[5 + 3 * i]
    local jk = jobBase .. id
    -- Fencing: only the holder of the current attempt may settle it, once.
    local att, st, kc
    if V['hmget8'] then att, st, kc = unpack(redis.call('HMGET', jk, 'att', 'st', 'kc', 'lane', 'ka', 'made', 'pid', 'pend'), 1, 3)
    else att, st, kc = unpack(redis.call('HMGET', jk, 'att', 'st', 'kc'), 1, 3) end
    if att ~= token or st ~= 'a' then
      codes[#codes + 1] = -2
    else
      codes[#codes + 1] = 1
      done[#done + 1] = id
      rvs[#rvs + 1] = #rv <= ${MAX_EVENT_VALUE} and rv or ''
      if kc == '0' and V['del-per-job'] then
        redis.call('DEL', jk, logsBase .. id, logsBase .. id .. ':deps')
      elseif kc == '0' then
        -- removeOnComplete: the job and its logs go (one DEL for the whole call).
        dels[#dels + 1] = jk
        dels[#dels + 1] = logsBase .. id
      else
        -- Kept: its final state, finish time and result; listed in completed (no trim here:
        -- the bench keeps none).
        redis.call('HSET', jk, 'st', 'c', 'fOn', nowStr, 'rv', rv)
        redis.call('ZADD', completed, nowStr, id)
      end
    end
  end
  if #dels > 0 then redis.call('DEL', unpack(dels)) end
  -- The leases end (one ZREM for the call).
  if #done > 0 then redis.call('ZREM', active, unpack(done)) end
  emitGroups(events, 'completed', { 'prev', 'active' }, done, { 'returnvalue', rvs })
  local out = {}
  local got = #done > 0 and claimInto(keys, tonumber(args[1]), tonumber(args[2]), now, out) or 0
  local head = { got, m }
  for i = 1, m do head[#head + 1] = codes[i] end
  for i = 1, #out do head[#head + 1] = out[i] end
  if V['once-record'] then
    local claimed = {}
    for i = 1, #out, 2 do claimed[#claimed + 1] = out[i]; claimed[#claimed + 1] = '1' end
    redis.call('SET', keys[9] .. ':req:' .. rid, cjson.encode({ c = #done, j = claimed }), 'PX', '60000')
  end
  return head
end

redis.register_function('floor_add', add)
redis.register_function('floor_claim', claim)
redis.register_function('floor_complete', complete)
`;

function floorKeys(queue, variant) {
  const p = `floor:{${queue}}:`;
  const k = {
    add: [`${p}meta`, `${p}lane:default`, `${p}ring`, `${p}inring`, `${p}events`, `${p}wake`, `${p}job:`],
    claim: [`${p}ring`, `${p}inring`, `${p}active`, `${p}events`, `${p}lane:`, `${p}job:`, `${p}completed`, `${p}logs:`, `${p}meta`],
    complete: [`${p}ring`, `${p}inring`, `${p}active`, `${p}events`, `${p}lane:`, `${p}job:`, `${p}completed`, `${p}logs:`, `${p}meta`],
  };
  if (variant.includes('echomq-keys')) {
    // Unused keys of the same slot and of echomq's name lengths, up to echomq's counts.
    const pad = (list, n) => { while (list.length < n) list.push(`${p}unused${list.length}`); };
    pad(k.add, 21);
    pad(k.claim, 21);
    pad(k.complete, 28);
  }
  return k;
}
let requests = 0;
/** once-record: makes the request id a settle call sends last (as the clients' request ids); else none. */
const onceArgsOf = (variant) => (variant.includes('once-record') ? () => [`r${process.pid}-${++requests}@${Date.now()}`] : () => []);

/**
 * Single adds coalesced as echomq's Queue.add does: adds made in one tick travel together,
 * `size` per call, all sent at once. send(list) → per-item results in order.
 */
function coalescer(size, send) {
  let pending = [];
  const flush = () => {
    const batch = pending;
    pending = [];
    for (let i = 0; i < batch.length; i += size) {
      const chunk = batch.slice(i, i + size);
      send(chunk.map((p) => p.item)).then((rs) => chunk.forEach((p, k) => p.resolve(rs[k])), (err) => chunk.forEach((p) => p.reject(err)));
    }
  };
  return (item) => new Promise((resolve, reject) => {
    pending.push({ item, resolve, reject });
    if (pending.length === 1) process.nextTick(flush);
  });
}

/**
 * A worker loop with echomq's settle batching (src/worker/worker-settle.ts): it claims
 * `concurrency` jobs, runs each through an empty async processor, and settles the finished ones
 * in one call per ceil(concurrency / 2) jobs (or fewer when no other running job could still
 * join), claiming as many next jobs in the same call. settle(batch, fetch) → { jobs, codes }.
 */
function settleLoop({ concurrency, claim, settle, onCompleted, onFailed }) {
  const target = Math.min(200, Math.ceil(concurrency / 2));
  let running = 0;
  let settling = 0;
  let queued = [];
  let scheduled = false;
  let closed = false;
  let idle;
  const start = (jobs) => {
    for (const job of jobs) {
      running++;
      Promise.resolve().then(() => finished(job));
    }
    if (running === 0 && !closed) idle = setTimeout(() => refill(concurrency), 5);
  };
  const finished = (job) => {
    queued.push(job);
    if (queued.length >= running - settling || queued.length >= target) flush();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(() => { scheduled = false; flush(); });
    }
  };
  const flush = () => {
    if (queued.length === 0) return;
    const batch = queued;
    queued = [];
    settling += batch.length;
    settle(batch, closed ? 0 : batch.length).then(({ jobs, codes }) => {
      settling -= batch.length;
      running -= batch.length;
      batch.forEach((job, i) => (codes[i] === 1 ? onCompleted(job) : onFailed(new Error(`settle of ${job.id}: code ${codes[i]}`))));
      start(jobs);
    }, onFailed);
  };
  const refill = (n) => claim(n).then(start, onFailed);
  refill(concurrency);
  return { close: async () => { closed = true; clearTimeout(idle); } };
}

/** Claimed jobs from a flat {id, fields, ...} list starting at `from`. */
function jobsOf(r, from) {
  const jobs = [];
  for (let i = from; i < r.length; i += 2) {
    const f = r[i + 1];
    let att = '1';
    for (let j = 0; j < f.length; j += 2) if (f[j] === 'att') att = f[j + 1];
    jobs.push({ id: String(r[i]), token: att });
  }
  return jobs;
}

/** The floor as a bench adapter (same shape as lib/libs.mjs: add, addBulk, startWorker, close). */
export const floor = {
  name: 'floor',
  async open(url, queueName) {
    const client = new Redis(url);
    const variant = floorVariant();
    await client.function('LOAD', 'REPLACE', floorLibrary(variant));
    const k = floorKeys(queueName, variant);
    const onceArgs = onceArgsOf(variant); // read once, not per settle call
    const send = (jobs) => client.call('FCALL', 'floor_add', k.add.length, ...k.add, jobs.length, '0',
      ...jobs.flatMap((job) => [JOB_NAME, JSON.stringify(job.data)]));
    const add = coalescer(ADD_COALESCE, async (jobs) => {
      const [first] = await send(jobs);
      return jobs.map((_, i) => String(first + i));
    });
    return {
      add,
      async addBulk(jobs) {
        const calls = [];
        for (let i = 0; i < jobs.length; i += ADD_BATCH) calls.push(send(jobs.slice(i, i + ADD_BATCH)));
        await Promise.all(calls);
      },
      startWorker({ concurrency, onCompleted, onFailed }) {
        const worker = new Redis(url);
        const loop = settleLoop({
          concurrency,
          onCompleted: () => onCompleted(undefined),
          onFailed,
          claim: async (n) => jobsOf(await worker.call('FCALL', 'floor_claim', k.claim.length, ...k.claim, n, LEASE_MS), 1),
          async settle(batch, fetch) {
            const r = await worker.call('FCALL', 'floor_complete', k.complete.length, ...k.complete, fetch, LEASE_MS,
              ...batch.flatMap((j) => [j.id, j.token, 'null']), ...onceArgs());
            const m = Number(r[1]);
            return { codes: r.slice(2, 2 + m).map(Number), jobs: jobsOf(r, 2 + m) };
          },
        });
        return { close: async () => { await loop.close(); worker.disconnect(); } };
      },
      close: async () => client.disconnect(),
    };
  },
};

/**
 * echomq's real add and complete functions (dist/scripts, FCALL of its library), driven with
 * the floor's fixed batches: the same coalescing and settle loop as `floor`, so the two differ
 * only in the scripts. Jobs are prepared by a real Queue (its private prepare(), the same
 * AddJobArgs Queue.add builds), with removeOnComplete: true.
 */
export const echomqDirect = {
  name: 'echomq scripts',
  async open(url, queueName) {
    const { Queue } = await import(ECHOMQ_MODULE);
    const { scripts, settleHint } = await import(new URL('./scripts/index.js', ECHOMQ_MODULE).href);
    const queue = new Queue(queueName, { connection: url });
    await queue.client.ping();
    if (queue.setup) await queue.setup; // whatever Queue.add would wait for first
    const ctx = queue.ctx;
    const prep = (job) => queue.prepare(JOB_NAME, job.data, { removeOnComplete: true }, '', undefined);
    const add = coalescer(ADD_COALESCE, async (jobs) => (await scripts.add(ctx, jobs.map(prep))).map((r) => r.id));
    return {
      add,
      async addBulk(jobs) {
        const calls = [];
        for (let i = 0; i < jobs.length; i += ADD_BATCH) calls.push(scripts.add(ctx, jobs.slice(i, i + ADD_BATCH).map(prep)));
        await Promise.all(calls);
      },
      startWorker({ concurrency, onCompleted, onFailed }) {
        const wctx = { ...ctx, client: queue.client.duplicate() };
        const tokens = (reply) => reply.jobs.map((j) => {
          let att = '1';
          for (let i = 0; i < j.fields.length; i += 2) if (j.fields[i] === 'att') att = j.fields[i + 1];
          return { id: j.id, token: att, claimed: settleHint(j.fields) };
        });
        const loop = settleLoop({
          concurrency,
          onCompleted: () => onCompleted(undefined),
          onFailed,
          claim: async (n) => tokens(await scripts.claim(wctx, { count: n, leaseMs: LEASE_MS })),
          async settle(batch, fetch) {
            const r = await scripts.completeMany(wctx, {
              jobs: batch.map((j) => ({ id: j.id, token: j.token, returnValue: 'null', claimed: j.claimed })),
              fetch, leaseMs: LEASE_MS, maxEventValueBytes: MAX_EVENT_VALUE,
            });
            return { codes: r.codes, jobs: tokens(r) };
          },
        });
        return { close: async () => { await loop.close(); wctx.client.disconnect(); } };
      },
      close: () => queue.close(),
    };
  },
};
