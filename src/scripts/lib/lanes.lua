-- Lane ring maintenance. Invariant (docs/internals.md#the-ring-invariant): the ring list holds every
-- serviceable lane exactly once and nothing else; the inring set holds the same lanes, but for
-- the one-job lanes of the lone hash (below), whose record of being in the ring is their field.
-- A lane is serviceable when it has ready jobs, is not paused, is under its concurrency limit
-- and is not waiting for its rate window (member of rlwait).
--!include lib/groups.lua

-- Hashes read and written many fields at a time (lactive, lone). Redis keeps a small hash as a
-- listpack, where each field costs a scan of the whole hash: with a lane per user and
-- concurrency 50 that is ~100 lanes, and one HMGET and one HSET of lactive took 20-30 µs per
-- call. A field whose value is longer than hash-max-listpack-value (64 bytes by default) makes
-- Redis keep the hash as a hashtable (O(1) per field) for as long as the key lives, so a write
-- of many fields adds this one (never a lane: lane names are not empty). dropFields deletes the
-- key once only this field is left, so an idle queue keeps neither key.
local WIDE_FIELD = ''
-- (A literal: the standard libraries are not reachable while FUNCTION LOAD runs a library's top level.)
local WIDE_VALUE = '------------------------------------------------------------------------'
local WIDE_AT = 16 -- fields in one write from which the wide field is added

-- HDEL of some fields; the key goes when only the wide field is left. Returns whether it is gone.
local function dropFields(key, ...)
  redis.call('HDEL', key, ...)
  local left = redis.call('HLEN', key)
  if left == 1 and redis.call('HEXISTS', key, WIDE_FIELD) == 1 then
    redis.call('DEL', key)
    return true
  end
  return left == 0
end

-- One-job lanes. A multi-lane add (a lane per user) that puts a single job into an empty plain
-- lane (no settings, not paused) writes the job into the lone hash (lane → "<prio>:<member>")
-- instead of creating the lane's sorted set, and puts the lane on the ring without adding it to
-- inring: one HSET, one RPUSH and the registry ZADD for a whole call, where a sorted set per lane
-- costs a command and a key each. The claim serves such a lane from the field (one HMGET per
-- pass) and deletes it (one HDEL per pass). A lane holds its ready jobs in the lone field or in
-- its sorted set, never both: anything else that gives the lane jobs, or changes how it is
-- served, first moves the job into a sorted set (materializeLane), after which the lane is an
-- ordinary lane in the same ring position.

-- Whether the lone hash may hold fields. meta lone is set with every write of lone and cleared
-- when the hash is gone, so a claim reads it with the meta fields it reads anyway (noteLoneHint)
-- and a queue without one-job lanes pays no command for them; other calls read it once.
local loneSeen -- nil: not read in this call yet
local function anyLone()
  if loneSeen == nil then loneSeen = redis.call('HGET', K.meta, 'lone') == '1' end
  return loneSeen
end
local function noteLoneHint(v)
  if loneSeen == nil then loneSeen = v == '1' end
end

-- Deletes lone fields; the hint goes with the hash.
local function dropLone(...)
  if dropFields(K.lone, ...) then redis.call('HDEL', K.meta, 'lone') end
end

-- The lane's lone field ("<prio>:<member>"), or nil.
local function loneOf(lane)
  if not anyLone() then return nil end
  return redis.call('HGET', K.lone, lane) or nil
end

-- Writes lone fields (flat lane, value list).
local function writeLone(flat)
  if #flat >= 2 * WIDE_AT then
    flat[#flat + 1] = WIDE_FIELD
    flat[#flat + 1] = WIDE_VALUE
  end
  redis.call('HSET', K.lone, unpack(flat))
  redis.call('HSET', K.meta, 'lone', '1')
  loneSeen = true
end

-- Moves a one-job lane's job (its lone field v) into the lane's sorted set; the lane keeps its
-- ring position and is now recorded in inring.
local function materializeLone(lane, v)
  local prio, member = parseLone(v)
  redis.call('ZADD', K.laneBase .. lane, prio, member)
  dropLone(lane)
  redis.call('SADD', K.inring, lane)
end

-- materializeLone for a lane that may be a one-job lane; returns whether it was one.
local function materializeLane(lane)
  local v = loneOf(lane)
  if not v then return false end
  materializeLone(lane, v)
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
local function reset_lanes()
  laneBatch = nil
  loneSeen = nil
  cfgMemo = {}
  anyCfg = nil
  deferredActive = {}
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
  local lanes = {}
  for lane, d in pairs(deferredActive) do
    if d ~= 0 then lanes[#lanes + 1] = lane end
  end
  local deltas = deferredActive
  deferredActive = {}
  if #lanes == 0 then return end
  local zero = {}
  local wide -- whether lactive has the wide field (nil: not read)
  if #lanes == 1 then
    if redis.call('HINCRBY', K.lactive, lanes[1], deltas[lanes[1]]) <= 0 then zero[1] = lanes[1] end
  else
    local cur = redis.call('HMGET', K.lactive, WIDE_FIELD, unpack(lanes))
    wide = cur[1] ~= false
    local set = {}
    for i, lane in ipairs(lanes) do
      local v = tonumber(cur[i + 1] or '0') + deltas[lane]
      if v > 0 then
        set[#set + 1] = lane
        set[#set + 1] = string.format('%d', v)
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
