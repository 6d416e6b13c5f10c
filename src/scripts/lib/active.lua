-- A job leaving or re-entering its lane outside the claim, and the lanes' active counts: a
-- slot released at once (limited lanes) or, for lanes without a limit, at the end of the call.
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
  materializeLane(lane)
  if redis.call('ZREM', K.laneBase .. lane, member) == 0 then return false end
  redis.call('HINCRBY', K.meta, 'ready', -1)
  if prio > 0 then redis.call('HINCRBY', K.meta, 'readyP', -1) end
  if redis.call('ZCARD', K.laneBase .. lane) == 0 then evictLane(lane) end
  return true
end

-- Releases one active slot of a lane. Only a concurrency limit ties a lane's serviceability to
-- its active count, so only a lane with settings can enter the ring here.
local function releaseActive(lane)
  local act = redis.call('HINCRBY', K.lactive, lane, -1)
  local admitted = false
  if laneHasCfg(lane) then admitted = admitLane(lane) end
  if act <= 0 then
    dropFields(K.lactive, lane)
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
local function reset_active()
  if next(deferredActive) ~= nil then deferredActive = {} end
end
-- forgetLaneIfIdle for lanes whose active count just reached 0, together: their counts are
-- deleted with one HDEL, one SMISMEMBER keeps the lanes in the ring (they have ready jobs; one
-- HMGET finds the one-job lanes among the rest while the lone hash exists), the
-- settings and pause sets are read only when not empty, and one EXISTS over the lanes' ready
-- sets usually shows them all empty, so the registry loses them in one ZREM. A lane per user
-- that drains and refills thus costs a few commands per call, not per lane.
local function forgetIdleLanes(zero, from, to, wide)
  -- Without the wide field (wide = false: the caller read it), Redis drops the emptied key itself.
  if wide == false then redis.call('HDEL', K.lactive, unpack(zero, from, to))
  else dropFields(K.lactive, unpack(zero, from, to)) end
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
  if anyLone() then
    -- One-job lanes are in the ring but not in inring: they keep their job and their entry.
    local lone = redis.call('HMGET', K.lone, unpack(names))
    local keep, keepKeys = {}, {}
    for i, lane in ipairs(names) do
      if not lone[i] then keep[#keep + 1], keepKeys[#keepKeys + 1] = lane, lks[i] end
    end
    names, lks = keep, keepKeys
    if #names == 0 then return end
  end
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
  local deltas = deferredActive
  if next(deltas) == nil then return end
  local lanes
  for lane, d in pairs(deltas) do
    if d ~= 0 then
      if lanes then lanes[#lanes + 1] = lane else lanes = { lane } end
    end
  end
  if not lanes then
    -- Every count netted out (a claim served the lanes it released): nothing to write, and the
    -- table is emptied in place (clearing fields during the traversal is allowed).
    for lane in pairs(deltas) do deltas[lane] = nil end
    return
  end
  deferredActive = {}
  local zero = {}
  local wide -- whether lactive has the wide field (nil: not read)
  if #lanes == 1 then
    if redis.call('HINCRBY', K.lactive, lanes[1], intStr(deltas[lanes[1]])) <= 0 then zero[1] = lanes[1] end
  else
    local cur = redis.call('HMGET', K.lactive, WIDE_FIELD, unpack(lanes))
    wide = cur[1] ~= false
    local set = {}
    for i, lane in ipairs(lanes) do
      local v = tonumber(cur[i + 1] or '0') + deltas[lane]
      if v > 0 then
        set[#set + 1] = lane
        set[#set + 1] = intStr(v)
      else
        zero[#zero + 1] = lane
      end
    end
    if #set > 0 then
      if #lanes >= WIDE_AT and not wide then
        set[#set + 1] = WIDE_FIELD
        set[#set + 1] = WIDE_VALUE
        wide = true
      end
      redis.call('HSET', K.lactive, unpack(set))
    end
  end
  if #zero == 0 then return end
  for i = 1, #zero, LANE_CHUNK do
    forgetIdleLanes(zero, i, math.min(i + LANE_CHUNK - 1, #zero), wide)
  end
end
