-- The lane-aware claim, shared by claim.lua, complete.lua and fail.lua so that a worker can
-- settle a job and take the next ones in one call.
--
-- Order of a claim for n jobs:
--  1. queue paused → nothing.
--  2. promote due delayed jobs and readmit lanes whose rate window reopened (bounded batches).
--  3. gates: global concurrency (meta conc vs ZCARD active), global rate (meta rlmax/rldur).
--  4. ring turns: continue the current lane's turn (meta tl/tk) if it has share left, else
--     rotate the ring one step with LMOVE and serve the lane now at the tail
--     K = min(weight, depth, limit headroom, rate headroom) jobs by ZPOPMIN. A lane that stops
--     being serviceable is dropped from the tail with RPOP: O(1) in the number of lanes.
local PROMOTE_BATCH = 200
local READMIT_BATCH = 100
-- Value of the global rate counter while worker.rateLimit(ms) blocks the queue (2^50).
local RATE_BLOCK = 1125899906842624

local function promoteDue(now)
  local ids = redis.call('ZRANGEBYSCORE', K.delayed, '-inf', now, 'LIMIT', 0, PROMOTE_BATCH)
  for _, id in ipairs(ids) do
    redis.call('ZREM', K.delayed, id)
    local jk = K.jobBase .. id
    local f = redis.call('HMGET', jk, 'lane', 'prio', 'lifo')
    if f[1] then
      local stamp = nextStamp(f[3] == '1')
      redis.call('HSET', jk, 'sq', stamp)
      pushReady(jk, f[1], tonumber(f[2]), stamp .. id)
      emit('waiting', 'jobId', id, 'prev', 'delayed')
    end
  end
end

local function readmitRateLanes(now)
  local lanes = redis.call('ZRANGEBYSCORE', K.rlwait, '-inf', now, 'LIMIT', 0, READMIT_BATCH)
  for _, lane in ipairs(lanes) do
    redis.call('ZREM', K.rlwait, lane)
    admitLane(lane)
  end
end

-- Parses "max:durationMs".
local function parseRate(s)
  local m, d = string.match(s, '^(%d+):(%d+)$')
  return tonumber(m), tonumber(d)
end

-- Time (ms) of the next event that can make work ready without a transition waking anyone:
-- the next delayed job, a lane's or the queue's rate window. -1 when there is none.
local function nextWakeAt()
  local t = -1
  local d = redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
  if d[2] then t = tonumber(d[2]) end
  local r = redis.call('ZRANGE', K.rlwait, 0, 0, 'WITHSCORES')
  if r[2] and (t < 0 or tonumber(r[2]) < t) then t = tonumber(r[2]) end
  return t
end

-- Claims up to n jobs; appends {id, fields} pairs to out. Returns jobs claimed and, when none,
-- the ms until the next wake-up (-1 none) that a worker without jobs should block for.
local function claimJobs(n, leaseMs, now, out)
  local meta = redis.call('HMGET', K.meta, 'paused', 'conc', 'rlmax', 'rldur', 'tl', 'tk')
  if meta[1] == '1' or n <= 0 then return 0, -1 end
  promoteDue(now)
  readmitRateLanes(now)

  if meta[2] then
    local room = tonumber(meta[2]) - redis.call('ZCARD', K.active)
    if room < n then n = room end
    if n <= 0 then return 0, -1 end
  end
  local grate = tonumber(meta[3])
  local gdur = tonumber(meta[4])
  -- The rate counter is read even without a limit: worker.rateLimit(ms) blocks the queue by
  -- setting it to RATE_BLOCK (>= any max) with PX ms.
  local gused = tonumber(redis.call('GET', K.rate) or '0')
  if gused >= (grate or RATE_BLOCK) then
    local ttl = redis.call('PTTL', K.rate)
    if ttl < 0 then ttl = 0 end
    return 0, ttl
  end
  if grate and grate - gused < n then n = grate - gused end

  local got = 0
  local tl, tk = meta[5], tonumber(meta[6] or '0')
  local turns = 0
  local maxTurns = n + 16
  local readyServed, prioServed = 0, 0

  while got < n and turns < maxTurns do
    turns = turns + 1
    local lane, share
    if tk > 0 and tl and redis.call('SISMEMBER', K.inring, tl) == 1 then
      lane, share = tl, tk
    else
      lane = redis.call('LMOVE', K.ring, K.ring, 'LEFT', 'RIGHT')
      if not lane then break end
      share = tonumber(redis.call('HGET', K.lweight, lane) or '1')
    end
    local lk = K.laneBase .. lane
    local depth = redis.call('ZCARD', lk)
    local act = tonumber(redis.call('HGET', K.lactive, lane) or '0')
    local lim = tonumber(redis.call('HGET', K.llimit, lane) or '-1')
    if depth < share then share = depth end
    if lim >= 0 and lim - act < share then share = lim - act end
    local rateCfg = redis.call('HGET', K.lrate, lane)
    local rmax, rdur, rused, rk
    if rateCfg then
      rmax, rdur = parseRate(rateCfg)
      rk = K.lrateBase .. lane
      rused = tonumber(redis.call('GET', rk) or '0')
      if rmax - rused < share then share = rmax - rused end
    end
    if share < 0 then share = 0 end
    local take = share
    if n - got < take then take = n - got end

    if take > 0 then
      local popped = redis.call('ZPOPMIN', lk, take)
      local served = #popped / 2
      for i = 1, #popped, 2 do
        local id = memberId(popped[i])
        local jk = K.jobBase .. id
        redis.call('HINCRBY', jk, 'att', 1)
        redis.call('HSET', jk, 'st', 'a', 'pOn', now)
        redis.call('ZADD', K.active, now + leaseMs, id)
        if tonumber(popped[i + 1]) > 0 then prioServed = prioServed + 1 end
        out[#out + 1] = id
        out[#out + 1] = redis.call('HGETALL', jk)
        emit('active', 'jobId', id, 'prev', 'waiting')
      end
      got = got + served
      readyServed = readyServed + served
      depth = depth - served
      act = act + served
      redis.call('HINCRBY', K.lactive, lane, served)
      if rk then
        rused = redis.call('INCRBY', rk, served)
        if rused == served then redis.call('PEXPIRE', rk, rdur) end
      end
    end

    tl, tk = lane, share - take
    local rateShut = rk and rused >= rmax
    if depth <= 0 or (lim >= 0 and act >= lim) or rateShut then
      -- The lane is at the tail (just rotated) or close to it (a turn being continued).
      evictLane(lane)
      tk = 0
      if rateShut then
        local ttl = redis.call('PTTL', rk)
        if ttl < 0 then ttl = 0 end
        redis.call('ZADD', K.rlwait, now + ttl, lane)
        -- Workers blocked before this window existed sleep up to their drainDelay: wake one so
        -- it re-reads the earliest wake-up time (as add does for a new earliest delayed job).
        if redis.call('ZRANGE', K.rlwait, 0, 0)[1] == lane then wake() end
      end
    end
  end

  -- Written only when the turn moved: an idle claim must stay read-only (no write traffic per
  -- idle worker, and no meta hash recreated on a queue that was just obliterated).
  if (tl or '') ~= (meta[5] or '') or tk ~= tonumber(meta[6] or '0') then
    redis.call('HSET', K.meta, 'tl', tl or '', 'tk', tk)
  end
  if readyServed > 0 then
    local left = redis.call('HINCRBY', K.meta, 'ready', -readyServed)
    if prioServed > 0 then redis.call('HINCRBY', K.meta, 'readyP', -prioServed) end
    if left == 0 then emit('drained') end
  end
  if grate and got > 0 then
    local used = redis.call('INCRBY', K.rate, got)
    if used == got then redis.call('PEXPIRE', K.rate, gdur) end
  end
  -- Pass the wake token on while work remains, so other idle workers join in.
  if got > 0 and redis.call('LLEN', K.ring) > 0 then wake() end
  if got == 0 then
    local t = nextWakeAt()
    if t >= 0 then
      t = t - now
      if t < 0 then t = 0 end
    end
    return 0, t
  end
  return got, -1
end
