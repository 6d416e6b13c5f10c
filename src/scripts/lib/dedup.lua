-- Deduplication (docs/events.md#deduplication), used by add.lua. Needs K.dedup (hash
-- dedup id → job id), K.dedupx (zset dedup id → throttle end, ms) and K.jobBase; the modes
-- (dedupModes) also lib/lanes.lua, lib/newjob.lua and K.delayed.
--
-- Simple mode (no ttl): the id is held while its job exists and has not finished (waiting,
-- delayed, active). Nothing on the finish path releases it: a holder that finished (or is
-- gone) is simply not counted at the next add, which then takes the id over. Throttle mode (ttl ms): the id is held until
-- now + ttl whatever the job does. Released entries are swept a few at a time by every add
-- that names a dedup id, so the hash stays bounded without any unbounded scan.
local DEDUP_SWEEP = 3

-- The id of the job holding dedup id dd, or nil when the id is free.
local function dedupHolder(dd, now)
  local holder = redis.call('HGET', K.dedup, dd)
  if not holder then return nil end
  local untilMs = redis.call('ZSCORE', K.dedupx, dd)
  if untilMs then
    if tonumber(untilMs) > now then return holder end
    return nil
  end
  -- Live = exists and not finished (waiting, delayed, active, or any later pre-finish state).
  local st = redis.call('HGET', K.jobBase .. holder, 'st')
  if st and st ~= 'c' and st ~= 'f' then return holder end
  return nil
end

local function dedupRelease(dd)
  redis.call('HDEL', K.dedup, dd)
  redis.call('ZREM', K.dedupx, dd)
end

-- Bounded sweep: up to DEDUP_SWEEP expired throttle entries and up to DEDUP_SWEEP sampled
-- entries whose holder has finished.
local function dedupSweep(now)
  local expired = redis.call('ZRANGEBYSCORE', K.dedupx, '-inf', now, 'LIMIT', 0, DEDUP_SWEEP)
  for _, dd in ipairs(expired) do dedupRelease(dd) end
  local sample = redis.call('HRANDFIELD', K.dedup, DEDUP_SWEEP)
  for _, dd in ipairs(sample) do
    if not dedupHolder(dd, now) then dedupRelease(dd) end
  end
end

-- Makes job id the holder of dd (throttle window ttlMs when > 0).
local function dedupTake(dd, id, ttlMs, now)
  redis.call('HSET', K.dedup, dd, id)
  if ttlMs > 0 then
    redis.call('ZADD', K.dedupx, now + ttlMs, dd)
  else
    redis.call('ZREM', K.dedupx, dd)
  end
end

-- keepLastIfActive while the holder is active: the add's job is created as the holder's
-- follower, in waiting-children (no dependencies of its own), and it takes the dedup id. The
-- link lives in fields of its own, not the parent fields, so the holder shows no parent, as in
-- BullMQ: the follower's dka names the holder, the holder's dkn names the follower. The
-- holder's completion, final failure or removal releases it (releaseFollower, lib/flow.lua).
-- A later duplicate while the follower waits replaces its name and data: the latest wins, and
-- at most one job waits. Returns the active holder's id.
local function keepLastFollower(holder, rec, dd, now, name, data, id, takeId)
  local hk = K.jobBase .. holder
  local f = redis.call('HMGET', hk, 'st', 'dka')
  if f[1] == 'h' then
    if not f[2] then return holder end -- not a follower (nothing to follow)
    -- holder is already a follower: the latest duplicate's payload wins.
    redis.call('HSET', hk, 'name', name, 'data', data)
    return f[2]
  end
  if id == '' then id = takeId() end
  local fk = K.jobBase .. id
  if redis.call('EXISTS', fk) == 1 then return holder end
  createJob({ id = id, name = name, data = data, opts = rec.opts, prio = rec.prio, lane = rec.lane, delay = rec.delay,
    lifo = rec.lifo, kc = rec.kc, ka = rec.ka, kfc = rec.kfc, kfa = rec.kfa, ts = rec.ts,
    extra = { 'dka', holder }, held = 1 }, now)
  redis.call('HSET', hk, 'dkn', id)
  redis.call('HSET', K.dedup, dd, id)
  redis.call('ZREM', K.dedupx, dd)
  return holder
end

-- BullMQ's modes, for an add whose dedup id dd is held by job holder (rec: the add's option
-- record; rec.ddm holds the mode letters; name, data, id: the add's job, id '' = generated,
-- takeId() gives a generated id). Returns the job that keeps holding dd (the add then
-- creates nothing of its own; a third value true: without a deduplicated event), or nil and
-- the id of the job it replaced (the add goes on and takes dd).
--   k keepLastIfActive: see keepLastFollower (an active holder, or its follower);
--   r replace: a delayed holder is withdrawn (removed event) and the add replaces it; a holder
--     in another state is kept silently (no event, no extend);
--   e extend (with a ttl): the throttle window starts again at now;
--   s reschedule (not with r): a delayed holder moves to now + the add's delay.
-- Holders in any other state are kept as they are.
local function dedupModes(holder, rec, dd, now, name, data, id, takeId)
  local mode = rec.ddm
  local st = redis.call('HGET', K.jobBase .. holder, 'st')
  if string.find(mode, 'k', 1, true) and (st == 'a' or st == 'h') then
    return keepLastFollower(holder, rec, dd, now, name, data, id, takeId)
  end
  if string.find(mode, 'r', 1, true) then
    if st == 'd' then
      withdrawJob(holder)
      return nil, holder
    end
    -- BullMQ's replace keeps any other holder as it is, without extending its window and
    -- without a deduplicated event (third value: silent).
    return holder, nil, true
  end
  if string.find(mode, 'e', 1, true) and rec.ddTtl ~= '0' then
    redis.call('ZADD', K.dedupx, now + tonumber(rec.ddTtl), dd)
  end
  if string.find(mode, 's', 1, true) and not string.find(mode, 'r', 1, true) and st == 'd' then
    local delayStr = string.format('%d', rec.delay)
    redis.call('HSET', K.jobBase .. holder, 'delay', delayStr)
    scheduleDelayed(holder, now + rec.delay)
    emit('delayed', 'jobId', holder, 'delay', now + rec.delay)
  end
  return holder
end
