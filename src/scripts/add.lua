-- add: adds one or more jobs (a bulk add is one call).
-- KEYS: meta, ring, inring, lone, lanes, lpaused, llimit, lactive, rlwait, delayed, events, wake, dedup, dedupx, wchildren, lcfg, laneBase, jobBase, logsBase, depsBase, reqBase
-- ARGV: [1] job count n, or 'n:step:offset' for shard `offset` of a sharded queue of `step`
--   shards (generated ids are then (counter - 1) * step + offset + 1: unique across shards, and
--   (id - 1) mod step names the shard),
--   [2] option record count m,
--   [3] fields per job k: 4, or 5 when the jobs of the call are in several lanes (each job then
--   names its lane, and the records' lane field is ''), or 2 (name and data only: every job
--   takes record 1 and a generated id) for a call of one record that is plain: no dedup id,
--   parent or groupMaxSize, delay 0, not lifo (refused with -16 otherwise, before any write),
--   then m option records of 15 fields, record r = 0..m-1 at a = 4 + 15r:
--   [a] opts (JSON object; '' = none),
--   [a + 1] priority (integer 0..2097151),
--   [a + 2] lane (raw name, 'default' for the default lane; '' when each job names its lane),
--   [a + 3] delay (ms; '0' = ready now),
--   [a + 4] lifo ('1'/'0'),
--   [a + 5] keepCompletedCount ('' = keep all, the default, not stored; n >= 0 keeps the newest
--   n; -2 = removeOnComplete false: keeps all, stored),
--   [a + 6] keepCompletedAgeMs ('' or 0 = no age limit),
--   [a + 7] keepFailedCount (as keepCompletedCount, for removeOnFail),
--   [a + 8] keepFailedAgeMs ('' or 0 = no age limit),
--   [a + 9] dedupId ('' = none),
--   [a + 10] dedupTtlMs (0 = simple mode: held while the job is live),
--   [a + 11] timestamp (ms; '' = now),
--   [a + 12] parent ('' = none, or the JSON object {pid, pk, pq, ppx, pol, same}: parent id,
--   its job key, queue, prefix, failure policy letter, same = 1 when the parent lives in this
--   queue: its existence is checked and the child is registered in its deps here, atomically),
--   [a + 13] dedup mode (letters: e extend, r replace, s reschedule, k keepLastIfActive; '' plain),
--   [a + 14] groupMaxSize ('' = none: BullMQ Pro's group.maxSize, most waiting jobs the lane
--   may hold for the add to go ahead);
--   then n jobs of k fields, job j = 0..n-1 at c = 4 + 15m + kj (with k = 2, [c] name and
--   [c + 1] data):
--   [c] id ('' = next numeric id),
--   [c + 1] name,
--   [c + 2] data (JSON),
--   [c + 3] option record number (1..m),
--   [c + 4] lane (only when k = 5);
--   then, after the last job, optionally:
--   [4 + 15m + kn] request id (lib/once.lua; '' or absent = none): a rerun of the same request
--   replies the first run's list and writes nothing.
-- Returns: with k = 2, {first id, n}: every job was created, with consecutive generated ids
--   (the first, then each step more: see [1]); otherwise
--   flat list {id1, created1, id2, created2, ...}; created is 1, or 0 when a job with
--   that id already existed or a live job holds the dedup id (that job's id is returned and
--   nothing is written but the event), or -5 when the job's parent (in this queue) does not
--   exist (nothing is written for that job), -7 when a job with that id exists as the child
--   of another parent that still exists (nothing is written), or -11 when the job's lane already holds groupMaxSize
--   waiting jobs (nothing is written for that job; id '').
--   A call refused by its guards (lib/guard.lua) replies {code, position} instead, position
--   being the refused argument's ARGV index, and writes nothing.
-- Errors (per job, in the created slot): -5 missing parent, -7 other parent, -11 group full; EMQ_EXPIRED (error reply, lib/once.lua)
--   for a request older than the window without a record. Guards, before any write: -14 a
--   custom id that is an integer by BullMQ's rule and above the id counter's last id (or not
--   positive), the active set's sentinel, or over 1024 UTF-16 units; -15 a lane '' or over
--   1024 UTF-16 units; -16 any other argument not in its form above.
-- Events: added (jobId, name, lane, delay), waiting | delayed; duplicated (jobId of the
--   existing job) or deduplicated (jobId of the kept job, deduplicationId, deduplicatedJobId:
--   the id the refused add asked for or was given) instead when nothing was created (none when
--   replace keeps a holder that is not delayed, as BullMQ); with replace, removed (the delayed holder) and deduplicated (jobId of
--   the new job, deduplicatedJobId of the replaced one).
-- Jobs of a bulk mostly share their options: the caller starts a new record only when a job's
-- options differ from the previous job's, so a job costs 4 arguments, not 19.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua
--!include lib/dedup.lua
--!include lib/once.lua
--!include lib/runs.lua
--!include lib/guard.lua

-- ARGV[1]: the job count, or 'n:step:offset' for a shard of a sharded queue.
local n, idStep, idOffset = string.match(ARGV[1], '^(%d+):(%d+):(%d+)$')
if n then n, idStep, idOffset = tonumber(n), tonumber(idStep), tonumber(idOffset)
elseif isUint(ARGV[1]) then n, idStep, idOffset = tonumber(ARGV[1]), 1, 0
else return { BAD_ARGUMENT, 1 } end
if idStep < 1 or idOffset >= idStep then return { BAD_ARGUMENT, 1 } end
-- The generated id of counter value c (see ARGV[1]).
local function idOf(c)
  return string.format('%d', (c - 1) * idStep + idOffset + 1)
end
local recordCount = isUint(ARGV[2]) and tonumber(ARGV[2]) or -1
local JOB_FIELDS = tonumber(ARGV[3]) -- 4, or 5 when each job names its lane, or 2 (plain)
local lanePerJob = JOB_FIELDS == 5
-- A plain call's jobs name no id and no record: two arguments each instead of four.
local namesOnly = JOB_FIELDS == 2
if not (namesOnly or JOB_FIELDS == 4 or lanePerJob) then return { BAD_ARGUMENT, 3 } end
if recordCount < 0 or (namesOnly and recordCount ~= 1) or (recordCount == 0 and n > 0) then
  return { BAD_ARGUMENT, 2 }
end
-- Guards (lib/guard.lua), before the first write: the call's length, each option record, and
-- below each job's id, record number and lane. A plain call pays for its one record only.
local JOB0 = 4 + recordCount * 15 -- the first job's first field (REC0, REC below)
do
  local last = JOB0 - 1 + n * JOB_FIELDS
  if #ARGV ~= last and #ARGV ~= last + 1 then return { BAD_ARGUMENT, 1 } end
  for a = 4, JOB0 - 1, 15 do
    local lane = ARGV[a + 2]
    if not isObject(ARGV[a]) then return { BAD_ARGUMENT, a } end
    if not isPriority(ARGV[a + 1]) then return { BAD_ARGUMENT, a + 1 } end
    if lanePerJob then
      if lane ~= '' then return { BAD_LANE, a + 2 } end
    elseif badLane(lane) then return { BAD_LANE, a + 2 } end
    if not isUint(ARGV[a + 3]) then return { BAD_ARGUMENT, a + 3 } end
    if not isFlag(ARGV[a + 4]) then return { BAD_ARGUMENT, a + 4 } end
    -- Keep counts may be negative (-2 = removeOnComplete false); ages, TTL and timestamp not.
    if not optInt(ARGV[a + 5]) then return { BAD_ARGUMENT, a + 5 } end
    if not optUint(ARGV[a + 6]) then return { BAD_ARGUMENT, a + 6 } end
    if not optInt(ARGV[a + 7]) then return { BAD_ARGUMENT, a + 7 } end
    if not optUint(ARGV[a + 8]) then return { BAD_ARGUMENT, a + 8 } end
    if not optUint(ARGV[a + 10]) then return { BAD_ARGUMENT, a + 10 } end
    if not optUint(ARGV[a + 11]) then return { BAD_ARGUMENT, a + 11 } end
    if ARGV[a + 12] ~= '' and not isParent(ARGV[a + 12]) then return { BAD_ARGUMENT, a + 12 } end
    if not string.find(ARGV[a + 13], '^[ersk]*$') then return { BAD_ARGUMENT, a + 13 } end
    if ARGV[a + 14] ~= '' and not (isUint(ARGV[a + 14]) and ARGV[a + 14] ~= '0') then return { BAD_ARGUMENT, a + 14 } end
  end
  if not namesOnly then
    local given -- the highest id the counter gave out (read once, when an integer id appears)
    local function lastId()
      if not given then
        local c = tonumber(redis.call('HGET', K.meta, 'id') or '0')
        given = c > 0 and (c - 1) * idStep + idOffset + 1 or 0
      end
      return given
    end
    for b = JOB0, JOB0 + (n - 1) * JOB_FIELDS, JOB_FIELDS do
      if ARGV[b] ~= '' and badId(ARGV[b], lastId) then return { BAD_ID, b } end
      if lanePerJob and badLane(ARGV[b + 4]) then return { BAD_LANE, b + 4 } end
    end
  end
end
local now = nowMs()
local out = {}
local readyAdded = false
local rec0, refused = onceBegin(ARGV[JOB0 + n * JOB_FIELDS], now)
if refused then return redis.error_reply(refused) end
if rec0 then
  if rec0.a then return rec0.a end
  if namesOnly then return { rec0.f, rec0.n } end
  -- A run of created jobs with consecutive generated ids, recorded as its first id and count.
  local r, first = {}, tonumber(rec0.f)
  for j = 0, rec0.n - 1 do
    r[#r + 1] = string.format('%d', first + j * idStep)
    r[#r + 1] = 1
  end
  return r
end

-- Offsets of a record's fields from its first (opts), and of a job's from its first (id).
local REC = 15
local R_PRIO, R_LANE, R_DELAY, R_LIFO = 1, 2, 3, 4
local R_KEEP_COUNT, R_KEEP_AGE, R_KEEP_FAILED_COUNT, R_KEEP_FAILED_AGE = 5, 6, 7, 8
local R_DEDUP_ID, R_DEDUP_TTL, R_TIMESTAMP, R_PARENT, R_DEDUP_MODE, R_GROUP_MAX = 9, 10, 11, 12, 13, 14
local J_NAME, J_DATA, J_RECORD, J_LANE = 1, 2, 3, 4

-- Option records, parsed once each. '0' is by far the most common priority and delay: a string
-- compare instead of strtod.
local recs = {}
local REC0 = 4 -- the first record's first field
for r = 1, recordCount do
  local a = REC0 + (r - 1) * REC
  local prio, delay = ARGV[a + R_PRIO], ARGV[a + R_DELAY]
  local rec = { opts = ARGV[a], prio = prio == '0' and 0 or tonumber(prio), lane = ARGV[a + R_LANE],
    delay = delay == '0' and 0 or tonumber(delay), lifo = ARGV[a + R_LIFO],
    kc = ARGV[a + R_KEEP_COUNT], ka = ARGV[a + R_KEEP_AGE],
    kfc = ARGV[a + R_KEEP_FAILED_COUNT], kfa = ARGV[a + R_KEEP_FAILED_AGE],
    dd = ARGV[a + R_DEDUP_ID], ddTtl = ARGV[a + R_DEDUP_TTL] }
  local ts, parent = ARGV[a + R_TIMESTAMP], ARGV[a + R_PARENT]
  if ts ~= '' then rec.ts = ts end
  if parent ~= '' then
    -- A child: its hash names the parent (the fields flows use, lib/flow.lua).
    local par = cjson.decode(parent)
    rec.par = par
    rec.extra = { 'pid', par.pid, 'pk', par.pk, 'pq', par.pq, 'ppx', par.ppx }
    if par.pol ~= '' then rec.extra[9], rec.extra[10] = 'pol', par.pol end
  end
  rec.ddm = ARGV[a + R_DEDUP_MODE]
  rec.gmax = ARGV[a + R_GROUP_MAX]
  recs[r] = rec
end
-- The plain call, by far the most common (single adds coalesced into one call, addBulk): one
-- option record, generated ids, one lane, ready at once, FIFO, no dedup, parent or group limit.
-- Its jobs differ only in name, data and id, so the hash's other fields are built once and the
-- per-job work is the hash, the lane entry and the event.
local function plainCall()
  if recordCount ~= 1 or lanePerJob then return false end
  local r = recs[1]
  if r.dd ~= '' or r.par or r.gmax ~= '' or r.delay ~= 0 or r.lifo == '1' then return false end
  if namesOnly then return true end
  for j = 0, n - 1 do
    if ARGV[JOB0 + j * JOB_FIELDS] ~= '' then return false end
  end
  return true
end
local plain = n > 0 and plainCall()
if namesOnly and not plain and n > 0 then return { BAD_ARGUMENT, 3 } end
if plain then
  local r = recs[1]
  local first = redis.call('HINCRBY', K.meta, 'id', n) - n
  reserveStamps(false, n)
  -- The n stamps just reserved are taken here, not by n nextStamp calls.
  local x = STAMP_BASE + fifoNext
  fifoNext = fifoNext + n
  local h, hn = jobFields({ name = '', data = '', ts = r.ts, opts = r.opts, prio = r.prio, lane = r.lane,
    delay = 0, kc = r.kc, ka = r.ka, kfc = r.kfc, kfa = r.kfa }, now)
  h[hn + 1], h[hn + 2], h[hn + 3] = 'st', 'w', 'sq'
  local lane, score = r.lane, r.prio == 0 and '0' or string.format('%d', r.prio)
  local entries = {}
  beginLaneBatch()
  -- The id and stamp of each job take no Lua call (one costs ~300-800 instructions here): they
  -- are joined from a head and a memoised tail (lib/runs.lua), the strings idOf and nextStamp make.
  local jobBase, dec, hex = K.jobBase, runMemo.dec, runMemo.hex
  local v = first * idStep + idOffset + 1 -- the first job's id
  local dHead, dHeadS, xHead, xHeadS
  -- Where a job's name and data are, from its first field (which is its id unless namesOnly).
  local nameAt = namesOnly and 0 or J_NAME
  local dataAt = nameAt + 1
  for j = 0, n - 1 do
    local b = JOB0 + j * JOB_FIELDS
    local id
    if v < 100 then id = intStr(v)
    else
      local lo = v % 100
      local head = (v - lo) / 100
      if head ~= dHead then dHead, dHeadS = head, string.format('%d', head) end
      id = dHeadS .. (dec[lo] or runTail(false, lo))
    end
    local lo = x % 256
    local head = (x - lo) / 256
    if head ~= xHead then xHead, xHeadS = head, string.format('%012x', head) end
    local stamp = xHeadS .. (hex[lo] or runTail(true, lo))
    local name = ARGV[b + nameAt]
    h[2], h[4], h[hn + 4] = name, ARGV[b + dataAt], stamp
    redis.call('HSET', jobBase .. id, unpack(h))
    entries[2 * j + 1], entries[2 * j + 2] = score, stamp .. id
    emitJobNamed('added', THEN_WAITING, id, name, lane)
    if namesOnly then
      if j == 0 then out[1], out[2] = id, n end
    else
      out[2 * j + 1], out[2 * j + 2] = id, 1
    end
    v, x = v + idStep, x + 1
  end
  batchLaneRun(lane, entries, r.prio)
  flushLaneBatch()
  wake()
  stampLayout()
  if onceKey then onceRecord({ f = out[1], n = n }) end
  return out
end

local jobRec = {}
for j = 0, n - 1 do
  local at = JOB0 + j * JOB_FIELDS + J_RECORD
  local rec = isUint(ARGV[at]) and recs[tonumber(ARGV[at])]
  if not rec then return { BAD_ARGUMENT, at } end
  jobRec[j] = rec
end

-- Reserve in blocks what the batch needs: generated ids for jobs without a custom or dedup id
-- (those are always created; a job with a dedup id takes one only if it is created), and
-- arrival stamps for the ready jobs from the first one created on (a later job that turns out
-- to exist already leaves a gap, which orders nothing; an add that creates nothing reserves
-- nothing). Lane entries are written per lane at the end (flushLaneBatch).
local needIds = 0
local fifoFrom, lifoFrom = {}, {} -- ready FIFO / LIFO jobs at index >= j
local nf, nl = 0, 0
for j = n - 1, 0, -1 do
  local rec = jobRec[j]
  if ARGV[JOB0 + j * JOB_FIELDS] == '' and rec.dd == '' and not rec.par then needIds = needIds + 1 end
  if rec.delay == 0 then
    if rec.lifo == '1' then nl = nl + 1 else nf = nf + 1 end
  end
  fifoFrom[j], lifoFrom[j] = nf, nl
end
local idNext, idLast = 1, 0
if needIds > 0 then
  idLast = redis.call('HINCRBY', K.meta, 'id', needIds)
  idNext = idLast - needIds + 1
end
local function takeCounter()
  if idNext <= idLast then
    idNext = idNext + 1
    return idNext - 1
  end
  return redis.call('HINCRBY', K.meta, 'id', 1)
end
local function takeGeneratedId()
  return idOf(takeCounter())
end
-- group.maxSize: the lane's waiting jobs, counting those this call added (still in laneBatch).
local function groupFull(lane, max)
  local one = loneOf(lane) and 1 or 0
  return redis.call('ZCARD', K.laneBase .. lane) + one + batchCount(lane) >= max
end
beginLaneBatch()
local spec = { held = 0 }

for j = 0, n - 1 do
  local b = JOB0 + j * JOB_FIELDS
  local rec = jobRec[j]
  local askedId, name, data = ARGV[b], ARGV[b + J_NAME], ARGV[b + J_DATA]
  local id = askedId
  local lane = rec.lane
  if lanePerJob then
    lane = ARGV[b + J_LANE]
    -- The record is shared by jobs of several lanes: lib/dedup.lua reads the lane from it.
    rec.lane = lane
  end
  local dd = rec.dd
  local holder, replaced, silent
  if dd ~= '' then
    -- As BullMQ, an add with a dedup id and no custom id takes its generated id first, created
    -- or not: the deduplicated event names it, and later ids are BullMQ's.
    if id == '' then id = takeGeneratedId() end
    dedupSweep(now)
    holder = dedupHolder(dd, now)
    if holder and rec.ddm ~= '' then
      holder, replaced, silent = dedupModes(holder, rec, dd, now, name, data, id, takeGeneratedId)
    end
  end
  local par = rec.par
  local parentMissing = par and par.same == 1 and redis.call('EXISTS', K.jobBase .. par.pid) == 0
  if not holder and not parentMissing and id == '' then
    id = takeGeneratedId()
  end
  local jk = K.jobBase .. id
  if rec.gmax ~= '' and groupFull(lane, tonumber(rec.gmax)) then
    out[#out + 1] = ''
    out[#out + 1] = -11
  elseif holder then
    out[#out + 1] = holder
    out[#out + 1] = 0
    if not silent then emit('deduplicated', 'jobId', holder, 'deduplicationId', dd, 'deduplicatedJobId', id) end
  elseif parentMissing then
    out[#out + 1] = ''
    out[#out + 1] = -5
  elseif askedId ~= '' and redis.call('EXISTS', jk) == 1 then
    -- Only a custom id can exist already: generated ids come from a counter, and custom ids
    -- may not be integers. An existing child of another parent that still exists cannot be
    -- given a new parent (BullMQ's refusal, -7); checked only for a duplicate with a parent,
    -- and only when the old parent is in this queue (another queue is another hash slot).
    local old = par and redis.call('HGET', jk, 'pk')
    if old and old ~= par.pk and string.sub(old, 1, #K.jobBase) == K.jobBase and redis.call('EXISTS', old) == 1 then
      out[#out + 1] = ''
      out[#out + 1] = -7
    else
      out[#out + 1] = id
      out[#out + 1] = 0
      emit('duplicated', 'jobId', id)
    end
  else
    if dd ~= '' then
      -- A replacement keeps the throttle window it replaced unless it extends it (BullMQ's rule).
      if replaced and not string.find(rec.ddm, 'e', 1, true) and rec.ddTtl ~= '0' then
        redis.call('HSET', K.dedup, dd, id)
      else
        dedupTake(dd, id, tonumber(rec.ddTtl), now)
      end
      if replaced then emit('deduplicated', 'jobId', id, 'deduplicationId', dd, 'deduplicatedJobId', replaced) end
    end
    if rec.delay == 0 then
      local lifo = rec.lifo == '1'
      reserveStamps(lifo, lifo and lifoFrom[j] or fifoFrom[j])
    end
    -- One table for every job of the call: createJob does not keep it.
    spec.id, spec.name, spec.data, spec.opts = id, name, data, rec.opts
    spec.prio, spec.lane, spec.delay, spec.lifo = rec.prio, lane, rec.delay, rec.lifo
    spec.kc, spec.ka, spec.kfc, spec.kfa = rec.kc, rec.ka, rec.kfc, rec.kfa
    spec.ts, spec.extra = rec.ts, rec.extra
    local state = createJob(spec, now)
    if state == 'w' then readyAdded = true end
    -- A child of a parent in this queue counts as one of its pending dependencies at once.
    if par and par.same == 1 then addDependency(par.pid, jk) end
    out[#out + 1] = id
    out[#out + 1] = 1
  end
end
flushLaneBatch()
if readyAdded then wake() end
local created = false
for i = 2, #out, 2 do if out[i] == 1 then created = true break end end
if created then stampLayout() end
-- A call that created nothing wrote nothing but events: its rerun answers the same.
if onceKey and created then
  -- The common bulk (every job created, generated ids in a row) is recorded as first id and
  -- count: a few bytes instead of every id, so the record costs no memory per job.
  local first = tonumber(out[1] or '')
  local run = first ~= nil
  for i = 1, #out, 2 do
    if not run then break end
    run = out[i + 1] == 1 and out[i] == string.format('%d', first + (i - 1) / 2 * idStep)
  end
  if run then onceRecord({ f = out[1], n = #out / 2 }) else onceRecord({ a = out }) end
end
return out
