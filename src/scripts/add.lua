-- add: adds one or more jobs (a bulk add is one call).
-- KEYS: meta, ring, inring, lanes, lpaused, llimit, lactive, rlwait, delayed, events, wake, dedup, dedupx, wchildren, laneBase, jobBase, logsBase, depsBase
-- ARGV: [1] job count n, or 'n:step:offset' for shard `offset` of a sharded queue of `step`
--   shards (generated ids are then (counter - 1) * step + offset + 1: unique across shards, and
--   (id - 1) mod step names the shard), [2] option record count m, then m option records of 15
--   fields: opts (JSON), priority (integer 0..2097151), lane, delay (ms as an integer string,
--   '0' = ready now), lifo ('1'/'0'), keepCompletedCount (-1 all), keepCompletedAgeMs (0 = no
--   age limit), keepFailedCount, keepFailedAgeMs, dedupId ('' = none), dedupTtlMs (0 = simple
--   mode: held while the job is live), timestamp (ms; '' = now), parent ('' = none, or the
--   JSON {pid, pk, pq, ppx, pol, same}: parent id, its job key, queue, prefix, failure policy,
--   same = 1 when the parent lives in this queue: its existence is checked and the child is
--   registered in its deps here, atomically), dedup mode (letters: e extend, r replace,
--   s reschedule, k keepLastIfActive; '' plain), groupMaxSize ('' = none: BullMQ Pro's group.maxSize, most
--   waiting jobs the lane may hold for the add to go ahead); then 4 fields per job: id ('' = next numeric id), name,
--   data (JSON), option record number (1..m). Jobs of a bulk mostly share their options: the
--   caller sends each distinct run of options once, and a job costs 4 arguments, not 18.
-- Returns: flat list {id1, created1, id2, created2, ...}; created is 1, or 0 when a job with
--   that id already existed or a live job holds the dedup id (that job's id is returned and
--   nothing is written but the event), or -6 when the job's parent (in this queue) does not
--   exist (nothing is written for that job), or -5 when the job's lane already holds groupMaxSize
--   waiting jobs (nothing is written for that job; id '').
-- Errors: none (input is validated by the caller before the call).
-- Events: added (jobId, name, lane, delay), waiting | delayed; duplicated (jobId of the
--   existing job) or deduplicated (jobId of the kept job, deduplicationId, deduplicatedJobId:
--   the id the refused add asked for or was given) instead when nothing was created (none when
--   replace keeps a holder that is not delayed, as BullMQ); with replace, removed (the delayed holder) and deduplicated (jobId of
--   the new job, deduplicatedJobId of the replaced one).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua
--!include lib/dedup.lua

local n, idStep, idOffset = string.match(ARGV[1], '^(%d+):(%d+):(%d+)$')
if n then n, idStep, idOffset = tonumber(n), tonumber(idStep), tonumber(idOffset)
else n, idStep, idOffset = tonumber(ARGV[1]), 1, 0 end
local now = nowMs()
local out = {}
local readyAdded = false

-- Option records, parsed once each. '0' is by far the most common priority and delay: a string
-- compare instead of strtod.
local recs = {}
local m = tonumber(ARGV[2])
local REC = 15
for r = 1, m do
  local a = 3 + (r - 1) * REC
  local p, d = ARGV[a + 1], ARGV[a + 3]
  local rec = { opts = ARGV[a], prio = p == '0' and 0 or tonumber(p), lane = ARGV[a + 2],
    delay = d == '0' and 0 or tonumber(d), lifo = ARGV[a + 4], kc = ARGV[a + 5], ka = ARGV[a + 6],
    kfc = ARGV[a + 7], kfa = ARGV[a + 8], dd = ARGV[a + 9], ddTtl = ARGV[a + 10] }
  if ARGV[a + 11] ~= '' then rec.ts = ARGV[a + 11] end
  if ARGV[a + 12] ~= '' then
    -- A child: its hash names the parent (the fields flows use, lib/flow.lua).
    local par = cjson.decode(ARGV[a + 12])
    rec.par = par
    rec.extra = { 'pid', par.pid, 'pk', par.pk, 'pq', par.pq, 'ppx', par.ppx }
    if par.pol ~= '' then rec.extra[9], rec.extra[10] = 'pol', par.pol end
  end
  rec.ddm = ARGV[a + 13]
  rec.gmax = ARGV[a + 14]
  recs[r] = rec
end
local JOB0 = 3 + m * REC -- the first job's first field
local jobRec = {}
for j = 0, n - 1 do jobRec[j] = recs[tonumber(ARGV[JOB0 + j * 4 + 3])] end

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
  if ARGV[JOB0 + j * 4] == '' and rec.dd == '' and not rec.par then needIds = needIds + 1 end
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
  return string.format('%d', (takeCounter() - 1) * idStep + idOffset + 1)
end
-- group.maxSize: the lane's waiting jobs, counting those this call added (still in laneBatch).
local function groupFull(lane, max)
  local l = laneBatch.lanes[lane]
  return redis.call('ZCARD', K.laneBase .. lane) + (l and #l / 2 or 0) >= max
end
beginLaneBatch()
local spec = { held = 0 }

for j = 0, n - 1 do
  local b = JOB0 + j * 4
  local rec = jobRec[j]
  local id = ARGV[b]
  local dd = rec.dd
  local holder, replaced, silent
  if dd ~= '' then
    -- As BullMQ, an add with a dedup id and no custom id takes its generated id first, created
    -- or not: the deduplicated event names it, and later ids are BullMQ's.
    if id == '' then id = takeGeneratedId() end
    dedupSweep(now)
    holder = dedupHolder(dd, now)
    if holder and rec.ddm ~= '' then
      holder, replaced, silent = dedupModes(holder, rec, dd, now, ARGV[b + 1], ARGV[b + 2], id, takeGeneratedId)
    end
  end
  local par = rec.par
  local parentMissing = par and par.same == 1 and redis.call('EXISTS', K.jobBase .. par.pid) == 0
  if not holder and not parentMissing and id == '' then
    id = takeGeneratedId()
  end
  local jk = K.jobBase .. id
  if rec.gmax ~= '' and groupFull(rec.lane, tonumber(rec.gmax)) then
    out[#out + 1] = ''
    out[#out + 1] = -5
  elseif holder then
    out[#out + 1] = holder
    out[#out + 1] = 0
    if not silent then emit('deduplicated', 'jobId', holder, 'deduplicationId', dd, 'deduplicatedJobId', id) end
  elseif parentMissing then
    out[#out + 1] = ''
    out[#out + 1] = -6
  elseif ARGV[b] ~= '' and redis.call('EXISTS', jk) == 1 then
    -- Only a custom id can exist already: generated ids come from a counter, and custom ids
    -- may not be integers.
    out[#out + 1] = id
    out[#out + 1] = 0
    emit('duplicated', 'jobId', id)
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
    spec.id, spec.name, spec.data, spec.opts = id, ARGV[b + 1], ARGV[b + 2], rec.opts
    spec.prio, spec.lane, spec.delay, spec.lifo = rec.prio, rec.lane, rec.delay, rec.lifo
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
return out
