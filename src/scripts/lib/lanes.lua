-- Lane ring maintenance. Invariant (docs/internals.md#the-ring-invariant): the ring list holds every
-- serviceable lane exactly once and nothing else; the inring set holds the same lanes.
-- A lane is serviceable when it has ready jobs, is not paused, is under its concurrency limit
-- and is not waiting for its rate window (member of rlwait).
--!include lib/groups.lua

local function laneServiceable(lane)
  if redis.call('ZCARD', K.laneBase .. lane) == 0 then return false end
  if redis.call('SISMEMBER', K.lpaused, lane) == 1 then return false end
  local lim = laneLimitOf(lane)
  if lim and tonumber(redis.call('HGET', K.lactive, lane) or '0') >= tonumber(lim) then
    return false
  end
  if redis.call('ZSCORE', K.rlwait, lane) then return false end
  return true
end

-- Puts a serviceable lane at the tail of the ring, once. O(1). Returns true if it entered.
local function admitLane(lane)
  if redis.call('SISMEMBER', K.inring, lane) == 1 then return false end
  if not laneServiceable(lane) then return false end
  redis.call('RPUSH', K.ring, lane)
  redis.call('SADD', K.inring, lane)
  return true
end

-- Takes a lane out of the ring wherever it is. LREM scans from the tail, where a lane that was
-- just served sits, so the claim path pays O(1); admin paths pay at most O(ring length).
local function evictLane(lane)
  if redis.call('SREM', K.inring, lane) == 1 then
    redis.call('LREM', K.ring, -1, lane)
  end
end

-- Makes ring membership match serviceability after any change to the lane.
local function refreshLane(lane)
  if laneServiceable(lane) then return admitLane(lane) end
  evictLane(lane)
  return false
end

-- Wakes one blocked worker (the wake list holds at most one token; the claim that takes it
-- passes it on while work remains).
local function wake()
  if redis.call('LLEN', K.wake) == 0 then redis.call('RPUSH', K.wake, '1') end
end

-- Puts a job into the delayed set, due at the given Redis time (ms). meta dly tells the claim
-- that there may be delayed jobs to promote (it skips the check otherwise, one call saved per
-- claim). A blocked worker sleeps until the earliest due time it knew of: wake one if this job
-- is due sooner, so it recomputes its timeout.
--
-- Jobs due in the same millisecond are promoted in the order they were scheduled (BullMQ's
-- FIFO), not by id text: the score is due + k/1024, k one more than the last job of that
-- millisecond (k capped at 1023; ties past that fall back to id order). Exact in a double until
-- 2^42 ms (year 2109). Readers treat the score as ms: ZRANGEBYSCORE -inf now promotes a job
-- of millisecond `due` from due + 1 at the latest, and a count "due before t" is unchanged.
local DELAY_STEP = 1 / 1024
local function scheduleDelayed(id, due)
  local last = redis.call('ZRANGE', K.delayed, '(' .. (due + 1), due, 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  local score = due
  if last[2] then
    score = tonumber(last[2]) + DELAY_STEP
    if score >= due + 1 then score = tonumber(last[2]) end
  end
  redis.call('ZADD', K.delayed, score, id)
  redis.call('HSET', K.meta, 'dly', '1')
  if redis.call('ZRANGE', K.delayed, 0, 0)[1] == id then wake() end
end

-- lactive is read and written many lanes at a time (flushDeferredActive: one HMGET and one HSET
-- per call). Redis keeps a small hash as a listpack, where each field costs a scan of the whole
-- hash: with a lane per user and concurrency 50 that is ~100 lanes, and the two commands took
-- 20-30 µs per call. A field whose value is longer than hash-max-listpack-value (64 bytes by
-- default) makes Redis keep the hash as a hashtable (O(1) per field) for as long as the key
-- lives, so a call that touches many lanes writes this field (never a lane: lane names are not
-- empty). dropActiveCounts deletes it with the last lane, so an idle queue keeps no lactive key.
local ACTIVE_WIDE_FIELD = ''
local ACTIVE_WIDE_VALUE = string.rep('-', 72)
local ACTIVE_WIDE_LANES = 16

-- Deletes the active counts of lanes that reached 0; the key goes when only the field above is left.
local function dropActiveCounts(...)
  redis.call('HDEL', K.lactive, ...)
  if redis.call('HLEN', K.lactive) == 1 and redis.call('HEXISTS', K.lactive, ACTIVE_WIDE_FIELD) == 1 then
    redis.call('DEL', K.lactive)
  end
end

local function registerLane(lane)
  redis.call('ZADD', K.lanes, 'NX', 0, lane)
end

-- Forgets a lane that has no ready or active jobs and no settings, so the registry does not
-- grow with every tenant ever seen.
local function forgetLaneIfIdle(lane)
  if redis.call('ZCARD', K.laneBase .. lane) > 0 then return end
  if tonumber(redis.call('HGET', K.lactive, lane) or '0') > 0 then return end
  if redis.call('SISMEMBER', K.lcfg, lane) == 1 or redis.call('SISMEMBER', K.lpaused, lane) == 1 then
    return
  end
  dropActiveCounts(lane)
  redis.call('ZREM', K.lanes, lane)
end

-- A lane just received ready jobs: register it and admit it to the ring. A lane already in the
-- ring is registered and serviceable, so the common case is one check.
local function laneGotJobs(lane)
  if redis.call('SISMEMBER', K.inring, lane) == 1 then return end
  registerLane(lane)
  if laneServiceable(lane) then
    redis.call('RPUSH', K.ring, lane)
    redis.call('SADD', K.inring, lane)
  end
end

-- While a script batches lane entries (add.lua), enterLane collects them here and
-- flushLaneBatch writes them: one ZADD per lane and one counter update per batch.
local laneBatch

local function beginLaneBatch()
  laneBatch = { lanes = {}, order = {}, ready = 0, readyP = 0 }
end

-- Adds a ready member to its lane, counts it, registers the lane and admits it to the ring. The
-- job hash's state is the caller's to set.
local function enterLane(lane, prio, member)
  if laneBatch then
    local l = laneBatch.lanes[lane]
    if not l then
      l = {}
      laneBatch.lanes[lane] = l
      laneBatch.order[#laneBatch.order + 1] = lane
    end
    -- A string score: Lua numbers handed to redis.call are formatted with %.14g, per member.
    l[#l + 1] = prio == 0 and '0' or string.format('%d', prio)
    l[#l + 1] = member
    laneBatch.ready = laneBatch.ready + 1
    if prio > 0 then laneBatch.readyP = laneBatch.readyP + 1 end
    return
  end
  redis.call('ZADD', K.laneBase .. lane, prio, member)
  redis.call('HINCRBY', K.meta, 'ready', 1)
  if prio > 0 then redis.call('HINCRBY', K.meta, 'readyP', 1) end
  laneGotJobs(lane)
end

-- Lanes a batch admits or forgets are handed to multi-argument commands in chunks of this many
-- (Lua's unpack takes at most a few thousand values).
local LANE_CHUNK = 500

-- laneGotJobs for many lanes at once, in the given order (the ring gets them in that order):
-- one SMISMEMBER finds the lanes not yet in the ring; those are registered with one ZADD and,
-- when serviceable, enter the ring with one RPUSH and one SADD. Each lane just received jobs,
-- so only pause, limit and rate window can keep it out; one EXISTS tells whether any lane has
-- any of them, and only then are they read (one SMISMEMBER and one HMGET; a ZSCORE per lane
-- while some lane waits for its rate window).
local function lanesGotJobs(order, from, to)
  local names = {}
  local inRing = redis.call('SMISMEMBER', K.inring, unpack(order, from, to))
  for i = from, to do
    if inRing[i - from + 1] == 0 then names[#names + 1] = order[i] end
  end
  if #names == 0 then return end
  local reg = {}
  for i, lane in ipairs(names) do reg[2 * i - 1], reg[2 * i] = '0', lane end
  redis.call('ZADD', K.lanes, 'NX', unpack(reg))
  local admit = names
  if redis.call('EXISTS', K.lpaused, K.llimit, K.rlwait) > 0 then
    local paused = redis.call('SMISMEMBER', K.lpaused, unpack(names))
    local limits = redis.call('HMGET', K.llimit, unpack(names))
    -- ZSCORE per lane, not ZMSCORE: the documented ACL (docs/reliability.md) has no ZMSCORE.
    local anyWaiting = redis.call('EXISTS', K.rlwait) == 1
    admit = {}
    for i, lane in ipairs(names) do
      local ok = paused[i] == 0 and not (anyWaiting and redis.call('ZSCORE', K.rlwait, lane))
      if ok and limits[i] then
        ok = tonumber(redis.call('HGET', K.lactive, lane) or '0') < tonumber(limits[i])
      end
      if ok then admit[#admit + 1] = lane end
    end
    if #admit == 0 then return end
  end
  redis.call('RPUSH', K.ring, unpack(admit))
  redis.call('SADD', K.inring, unpack(admit))
end

-- Writes the lane entries collected since beginLaneBatch: one ZADD per lane, of at most 1,000
-- members each (Lua passes at most a few thousand arguments), then the lanes' admission.
local function flushLaneBatch()
  local b = laneBatch
  laneBatch = nil
  if not b then return end
  for _, lane in ipairs(b.order) do
    local l = b.lanes[lane]
    for i = 1, #l, 2000 do
      redis.call('ZADD', K.laneBase .. lane, unpack(l, i, math.min(i + 1999, #l)))
    end
  end
  -- A single lane (the usual add) costs one SISMEMBER once it is in the ring.
  if #b.order == 1 then
    laneGotJobs(b.order[1])
  else
    for i = 1, #b.order, LANE_CHUNK do
      lanesGotJobs(b.order, i, math.min(i + LANE_CHUNK - 1, #b.order))
    end
  end
  if b.ready > 0 then redis.call('HINCRBY', K.meta, 'ready', b.ready) end
  if b.readyP > 0 then redis.call('HINCRBY', K.meta, 'readyP', b.readyP) end
end

-- Makes an existing job ready in its lane (state w).
local function pushReady(jk, lane, prio, member)
  redis.call('HSET', jk, 'st', 'w')
  enterLane(lane, prio, member)
end

-- Makes a job that is out of the lanes (delayed, finished) ready again at the back of its tier,
-- or the front with lifo, from its stored lane, prio and lifo fields: one HSET of state and stamp.
local function readyAgain(jk, id, lane, prio, lifo)
  local stamp = nextStamp(lifo == '1')
  redis.call('HSET', jk, 'st', 'w', 'sq', stamp)
  enterLane(laneOr(lane), prioOr(prio), stamp .. id)
end

-- Takes a ready job out of its lane (not through a claim): uncounts it and fixes the ring.
local function pullReady(lane, member, prio)
  if redis.call('ZREM', K.laneBase .. lane, member) == 0 then return false end
  redis.call('HINCRBY', K.meta, 'ready', -1)
  if prio > 0 then redis.call('HINCRBY', K.meta, 'readyP', -1) end
  if redis.call('ZCARD', K.laneBase .. lane) == 0 then evictLane(lane) end
  return true
end

-- Whether a lane has any setting (weight, limit or rate), read once per lane and script call;
-- when no lane has settings (SCARD lcfg = 0, read once per call) no lane is looked up at all.
local cfgMemo = {}
local anyCfg
local function laneHasCfg(lane)
  if anyCfg == nil then anyCfg = redis.call('SCARD', K.lcfg) > 0 end
  if not anyCfg then return false end
  local v = cfgMemo[lane]
  if v == nil then
    v = redis.call('SISMEMBER', K.lcfg, lane) == 1
    -- Group defaults (lib/groups.lua) give every lane but the default one a setting.
    if not v and lane ~= DEFAULT_LANE and groupDefaults() then v = true end
    cfgMemo[lane] = v
  end
  return v
end

-- Releases one active slot of a lane. Only a concurrency limit ties a lane's serviceability to
-- its active count, so only a lane with settings can enter the ring here.
local function releaseActive(lane)
  local act = redis.call('HINCRBY', K.lactive, lane, -1)
  local admitted = false
  if laneHasCfg(lane) then admitted = admitLane(lane) end
  if act <= 0 then
    dropActiveCounts(lane)
    forgetLaneIfIdle(lane)
  end
  return admitted
end

-- Changes to the active counts of lanes without a limit, made by this call but not yet
-- written: +n for jobs a claim took, -1 for each finished job (complete.lua). Nothing reads
-- such a count within the call (only a limit does, and limited lanes are written at once), so
-- the call writes them together at its end (flushDeferredActive): a claim that serves the lane
-- of the job just finished cancels out, and the counts of many lanes cost one HMGET and one
-- HSET instead of a HINCRBY per lane and job. Written before the script returns, so the
-- invariant holds between calls.
local deferredActive = {}

-- Per-call state of this file (see reset_common in lib/common.lua).
local function reset_lanes()
  laneBatch = nil
  cfgMemo = {}
  anyCfg = nil
  deferredActive = {}
end
-- forgetLaneIfIdle for lanes whose active count just reached 0, together: their counts are
-- deleted with one HDEL, one SMISMEMBER keeps the lanes in the ring (they have ready jobs), the
-- settings and pause sets are read only when not empty, and one EXISTS over the lanes' ready
-- sets usually shows them all empty, so the registry loses them in one ZREM. A lane per user
-- that drains and refills thus costs a few commands per call, not per lane.
local function forgetIdleLanes(zero, from, to)
  dropActiveCounts(unpack(zero, from, to))
  local inRing = redis.call('SMISMEMBER', K.inring, unpack(zero, from, to))
  local anyPaused
  local names, lks = {}, {}
  for i = from, to do
    local lane = zero[i]
    if inRing[i - from + 1] == 0 and not laneHasCfg(lane) then
      if anyPaused == nil then anyPaused = redis.call('SCARD', K.lpaused) > 0 end
      if not (anyPaused and redis.call('SISMEMBER', K.lpaused, lane) == 1) then
        names[#names + 1] = lane
        lks[#lks + 1] = K.laneBase .. lane
      end
    end
  end
  if #names == 0 then return end
  if redis.call('EXISTS', unpack(lks)) > 0 then
    -- Some lane still holds ready jobs (paused, limited or waiting for its rate window
    -- before its setting was removed): find which, one check each.
    local idle = {}
    for i, lane in ipairs(names) do
      if redis.call('EXISTS', lks[i]) == 0 then idle[#idle + 1] = lane end
    end
    names = idle
    if #names == 0 then return end
  end
  redis.call('ZREM', K.lanes, unpack(names))
end
local function deferActive(lane, delta)
  deferredActive[lane] = (deferredActive[lane] or 0) + delta
end
local function releaseActiveLater(lane)
  deferActive(lane, -1)
end
-- Lanes whose count reaches 0 leave lactive (absent = 0), and only those not in the ring (one
-- SMISMEMBER; a lane in the ring has ready jobs) are checked for forgetting.
local function flushDeferredActive()
  local lanes = {}
  for lane, d in pairs(deferredActive) do
    if d ~= 0 then lanes[#lanes + 1] = lane end
  end
  local deltas = deferredActive
  deferredActive = {}
  if #lanes == 0 then return end
  local zero = {}
  if #lanes == 1 then
    if redis.call('HINCRBY', K.lactive, lanes[1], deltas[lanes[1]]) <= 0 then zero[1] = lanes[1] end
  else
    local cur = redis.call('HMGET', K.lactive, unpack(lanes))
    local set = {}
    for i, lane in ipairs(lanes) do
      local v = tonumber(cur[i] or '0') + deltas[lane]
      if v > 0 then
        set[#set + 1] = lane
        set[#set + 1] = string.format('%d', v)
      else
        zero[#zero + 1] = lane
      end
    end
    if #set > 0 then
      if #lanes >= ACTIVE_WIDE_LANES then
        set[#set + 1] = ACTIVE_WIDE_FIELD
        set[#set + 1] = ACTIVE_WIDE_VALUE
      end
      redis.call('HSET', K.lactive, unpack(set))
    end
  end
  if #zero == 0 then return end
  for i = 1, #zero, LANE_CHUNK do
    forgetIdleLanes(zero, i, math.min(i + LANE_CHUNK - 1, #zero))
  end
end
