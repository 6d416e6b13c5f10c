-- Ring upkeep. Invariant (docs/internals.md#the-ring-invariant): the ring list holds every
-- serviceable lane exactly once and nothing else; inring holds the same lanes but the one-job
-- lanes (lib/lone.lua), whose field is their record. Serviceable: ready jobs, not paused, under
-- its concurrency limit, not waiting for its rate window (rlwait).
-- Whether a lane has any setting (weight, limit or rate), read once per lane and script call;
-- when no lane has settings (SCARD lcfg = 0, read once per call) no lane is looked up at all.
local cfgMemo -- made on first use: most calls see no lane with settings
local anyCfg
local function laneHasCfg(lane)
  if anyCfg == nil then anyCfg = redis.call('SCARD', K.lcfg) > 0 end
  if not anyCfg then return false end
  if not cfgMemo then cfgMemo = {} end
  local v = cfgMemo[lane]
  if v == nil then
    v = redis.call('SISMEMBER', K.lcfg, lane) == 1
    -- Group defaults (lib/groups.lua) give every lane but the default one a setting.
    if not v and lane ~= DEFAULT_LANE and groupDefaults() then v = true end
    cfgMemo[lane] = v
  end
  return v
end

local function laneServiceable(lane)
  if redis.call('ZCARD', K.laneBase .. lane) == 0 and not loneOf(lane) then return false end
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
  if redis.call('SISMEMBER', K.inring, lane) == 1 or loneOf(lane) then return false end
  if not laneServiceable(lane) then return false end
  redis.call('RPUSH', K.ring, lane)
  redis.call('SADD', K.inring, lane)
  return true
end

-- Takes an ordinary lane (not a one-job lane) out of the ring wherever it is. LREM scans from
-- the tail, where a lane that was just served sits, so the claim path pays O(1); admin paths
-- pay at most O(ring length).
local function leaveRing(lane)
  if redis.call('SREM', K.inring, lane) == 1 then
    redis.call('LREM', K.ring, -1, lane)
  end
end

-- Takes a lane out of the ring; a one-job lane keeps its job, in a sorted set from now on.
local function evictLane(lane)
  materializeLane(lane)
  leaveRing(lane)
end

-- Makes ring membership match serviceability after any change to the lane.
local function refreshLane(lane)
  if laneServiceable(lane) then return admitLane(lane) end
  evictLane(lane)
  return false
end

local function registerLane(lane)
  redis.call('ZADD', K.lanes, 'NX', 0, lane)
end

-- Forgets a lane that has no ready or active jobs and no settings, so the registry does not
-- grow with every tenant ever seen.
local function forgetLaneIfIdle(lane)
  if redis.call('ZCARD', K.laneBase .. lane) > 0 or loneOf(lane) then return end
  if tonumber(redis.call('HGET', K.lactive, lane) or '0') > 0 then return end
  if redis.call('SISMEMBER', K.lcfg, lane) == 1 or redis.call('SISMEMBER', K.lpaused, lane) == 1 then
    return
  end
  dropFields(K.lactive, lane)
  redis.call('ZREM', K.lanes, lane)
end

-- A lane just received ready jobs (in its sorted set): register it and admit it to the ring. A
-- lane already in the ring is registered and serviceable, so the common case is one check; a
-- one-job lane is in the ring too, and its job joins the new ones in the sorted set.
local function laneGotJobs(lane)
  if redis.call('SISMEMBER', K.inring, lane) == 1 then return end
  if materializeLane(lane) then return end
  registerLane(lane)
  if laneServiceable(lane) then
    redis.call('RPUSH', K.ring, lane)
    redis.call('SADD', K.inring, lane)
  end
end

-- Per-call state of this file (see reset_common in lib/common.lua).
local function reset_ring()
  cfgMemo = nil
  anyCfg = nil
end
