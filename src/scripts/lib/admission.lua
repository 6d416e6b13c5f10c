-- Batched admission: the jobs one call makes ready, written per lane (one ZADD each) and
-- counted once, with the lanes given a single job written as one-job lanes (lib/lone.lua).
-- While a script batches lane entries (add.lua), enterLane collects them here and
-- flushLaneBatch writes them: one ZADD per lane and one counter update per batch. lanes[lane]
-- is the lane's first entry as a lone field would hold it ("<prio>:<member>", so a lane given
-- one job costs no table and becomes a one-job lane as it is), then, from its second entry, a
-- flat score, member list (batchEntries).
local laneBatch

local function beginLaneBatch()
  laneBatch = { lanes = {}, order = {}, ready = 0, readyP = 0 }
end

-- A batch lane's entries as a flat score, member list.
local function batchEntries(l)
  if type(l) ~= 'string' then return l end
  local prio, member = parseLone(l)
  return { prio, member }
end

-- Entries the batch holds for a lane (0 when none).
local function batchCount(lane)
  local l = laneBatch and laneBatch.lanes[lane]
  if not l then return 0 end
  return type(l) == 'string' and 1 or #l / 2
end

-- Adds a ready member to its lane, counts it, registers the lane and admits it to the ring. The
-- job hash's state is the caller's to set.
local function enterLane(lane, prio, member)
  if laneBatch then
    -- A string score: Lua numbers handed to redis.call are formatted with %.14g, per member.
    local score = prio == 0 and '0' or string.format('%d', prio)
    local l = laneBatch.lanes[lane]
    if not l then
      laneBatch.lanes[lane] = score .. ':' .. member
      laneBatch.order[#laneBatch.order + 1] = lane
    else
      if type(l) == 'string' then
        l = batchEntries(l)
        laneBatch.lanes[lane] = l
      end
      l[#l + 1] = score
      l[#l + 1] = member
    end
    laneBatch.ready = laneBatch.ready + 1
    if prio > 0 then laneBatch.readyP = laneBatch.readyP + 1 end
    return
  end
  redis.call('ZADD', K.laneBase .. lane, prio, member)
  redis.call('HINCRBY', K.meta, 'ready', 1)
  if prio > 0 then redis.call('HINCRBY', K.meta, 'readyP', 1) end
  laneGotJobs(lane)
end

-- Puts a whole run of ready members of one lane into a batch that holds nothing yet, as n
-- enterLane calls would: entries is a flat score, member list (add.lua's plain path).
local function batchLaneRun(lane, entries, prio)
  local n = #entries / 2
  laneBatch.lanes[lane] = entries
  laneBatch.order[1] = lane
  laneBatch.ready = n
  if prio > 0 then laneBatch.readyP = n end
end

-- Lanes a batch admits or forgets are handed to multi-argument commands in chunks of this many
-- (Lua's unpack takes at most a few thousand values).
local LANE_CHUNK = 500

-- ZADD of a lane's collected entries (flat score, member list), at most 1,000 members per call
-- (Lua passes at most a few thousand arguments).
local function zaddEntries(lane, l)
  for i = 1, #l, 2000 do
    redis.call('ZADD', K.laneBase .. lane, unpack(l, i, math.min(i + 1999, #l)))
  end
end

-- Of lanes not in the ring that just received jobs, those that may enter it now (true per
-- place): each just received jobs, so only pause, limit (its own, else the Worker's group
-- default for lanes but the default one) and rate window can keep it out; one EXISTS (and
-- SCARD lcfg, for the defaults) tells whether any lane has any of them, and only then are they
-- read (one SMISMEMBER and one HMGET; a ZSCORE per lane while some lane waits for its rate
-- window). nil: all may.
local function admissible(names)
  if anyCfg == nil then anyCfg = redis.call('SCARD', K.lcfg) > 0 end
  local defaults = anyCfg and groupDefaults()
  local groupLimit = defaults and defaults.lim or nil
  if not groupLimit and redis.call('EXISTS', K.lpaused, K.llimit, K.rlwait) == 0 then return nil end
  local paused = redis.call('SMISMEMBER', K.lpaused, unpack(names))
  local limits = redis.call('HMGET', K.llimit, unpack(names))
  -- ZSCORE per lane, not ZMSCORE: the documented ACL (docs/reliability.md) has no ZMSCORE.
  local anyWaiting = redis.call('EXISTS', K.rlwait) == 1
  local ok = {}
  for i, lane in ipairs(names) do
    local yes = paused[i] == 0 and not (anyWaiting and redis.call('ZSCORE', K.rlwait, lane))
    local limit = limits[i] or (lane ~= DEFAULT_LANE and groupLimit) or nil
    if yes and limit then
      yes = tonumber(redis.call('HGET', K.lactive, lane) or '0') < tonumber(limit)
    end
    ok[i] = yes
  end
  return ok
end

-- Of the new lanes admitted to the ring, which become one-job lanes (true per place): those
-- given one job by this call that have no settings, while the queue has no group defaults
-- (SCARD lcfg = 0 settles the common case; else one SMISMEMBER), and only when none of them
-- has a sorted set. A lane outside the ring holds ready jobs only while it may not be served
-- (paused, limited, waiting for its rate window); with no lane in such a state and no lane
-- with settings (ok = nil, SCARD lcfg = 0) the ring invariant says none does, else one EXISTS
-- over their sorted sets makes sure.
local function oneJobLanes(b, names, ok)
  local cand, at = {}, {}
  for i, lane in ipairs(names) do
    if (not ok or ok[i]) and type(b.lanes[lane]) == 'string' then
      cand[#cand + 1] = lane
      at[#at + 1] = i
    end
  end
  if #cand == 0 then return {} end
  local plain = {}
  if anyCfg == nil then anyCfg = redis.call('SCARD', K.lcfg) > 0 end
  if anyCfg then
    if groupDefaults() then return {} end
    plain = redis.call('SMISMEMBER', K.lcfg, unpack(cand))
  end
  if ok or anyCfg then
    local keys = {}
    for i, lane in ipairs(cand) do keys[i] = K.laneBase .. lane end
    if redis.call('EXISTS', unpack(keys)) > 0 then return {} end
  end
  local one = {}
  for i = 1, #cand do
    if (plain[i] or 0) == 0 then one[at[i]] = true end
  end
  return one
end

-- Puts lanes on the ring's tail in order: lanes of one job in this call as one-job lanes when
-- allowed (one HSET of lone), the others with their sorted sets and one SADD of inring.
local function ringLanes(b, names, one)
  local sets, loneFlat = {}, {}
  for i, lane in ipairs(names) do
    local l = b.lanes[lane]
    if one == true and type(l) == 'string' or one ~= true and one[i] then
      loneFlat[#loneFlat + 1] = lane
      loneFlat[#loneFlat + 1] = l
    else
      zaddEntries(lane, batchEntries(l))
      sets[#sets + 1] = lane
    end
  end
  if #loneFlat > 0 then writeLone(loneFlat) end
  redis.call('RPUSH', K.ring, unpack(names))
  if #sets > 0 then redis.call('SADD', K.inring, unpack(sets)) end
end

-- Writes the entries of lanes order[from..to] of batch b and settles their ring membership, in
-- the given order (the ring gets new lanes in that order). The lanes are registered first, with
-- one ZADD NX, whose reply counts the lanes the registry did not hold. Such a lane has nothing:
-- no ready or active jobs, no settings, not paused (each of those keeps a lane registered), so
-- when all are new and no lane waits for a rate window (which a forgotten lane under the
-- Worker's group rate may still do), they go straight onto the ring: a per-user add into users
-- not seen before pays the registry, the ring and the lone hash, and no lookup. Otherwise one
-- SMISMEMBER finds the lanes not in inring; one HMGET (while the lone hash exists) finds the
-- one-job lanes among them, whose job joins the new ones in a sorted set; the rest are admitted
-- when they may be served (pause, limit, rate window) and put on the ring.
local function lanesGotJobs(b, from, to)
  local order = b.order
  local reg = {}
  for i = from, to do reg[#reg + 1], reg[#reg + 2] = '0', order[i] end
  if redis.call('ZADD', K.lanes, 'NX', unpack(reg)) == to - from + 1 and redis.call('EXISTS', K.rlwait) == 0 then
    if anyCfg == nil then anyCfg = redis.call('SCARD', K.lcfg) > 0 end
    -- Group defaults give every lane a setting: no one-job lanes then (the claim would turn them
    -- back into sorted sets).
    local one = not (anyCfg and groupDefaults()) or {}
    ringLanes(b, { unpack(order, from, to) }, one)
    return
  end
  local inRing = redis.call('SMISMEMBER', K.inring, unpack(order, from, to))
  local out = {}
  for i = from, to do
    local lane = order[i]
    if inRing[i - from + 1] == 0 then out[#out + 1] = lane else zaddEntries(lane, batchEntries(b.lanes[lane])) end
  end
  if #out == 0 then return end
  local lone = anyLone() and redis.call('HMGET', K.lone, unpack(out)) or {}
  local joined, names = {}, {}
  for i, lane in ipairs(out) do
    local v = lone[i]
    if v then
      local l = batchEntries(b.lanes[lane])
      local prio, member = parseLone(v)
      l[#l + 1], l[#l + 2] = prio, member
      zaddEntries(lane, l)
      joined[#joined + 1] = lane
    else
      names[#names + 1] = lane
    end
  end
  if #joined > 0 then
    dropLone(unpack(joined))
    redis.call('SADD', K.inring, unpack(joined))
  end
  if #names == 0 then return end
  local ok = admissible(names)
  local one = oneJobLanes(b, names, ok)
  if not ok then return ringLanes(b, names, one) end
  local ring, ringOne = {}, {}
  for i, lane in ipairs(names) do
    if ok[i] then
      ring[#ring + 1] = lane
      ringOne[#ring] = one[i]
    else
      zaddEntries(lane, batchEntries(b.lanes[lane]))
    end
  end
  if #ring > 0 then ringLanes(b, ring, ringOne) end
end

-- Writes the lane entries collected since beginLaneBatch, then the lanes' admission.
local function flushLaneBatch()
  local b = laneBatch
  laneBatch = nil
  if not b then return end
  -- A single lane (the usual add) costs one ZADD and one SISMEMBER once it is in the ring.
  if #b.order == 1 then
    zaddEntries(b.order[1], batchEntries(b.lanes[b.order[1]]))
    laneGotJobs(b.order[1])
  else
    for i = 1, #b.order, LANE_CHUNK do
      lanesGotJobs(b, i, math.min(i + LANE_CHUNK - 1, #b.order))
    end
  end
  if b.ready > 0 then redis.call('HINCRBY', K.meta, 'ready', b.ready) end
  if b.readyP > 0 then redis.call('HINCRBY', K.meta, 'readyP', b.readyP) end
end

-- Per-call state of this file (see reset_common in lib/common.lua).
local function reset_admission()
  laneBatch = nil
end
