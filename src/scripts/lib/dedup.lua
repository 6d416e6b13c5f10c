-- Deduplication (docs/events.md#deduplication), used by add.lua. Needs K.dedup (hash
-- dedup id → job id), K.dedupx (zset dedup id → throttle end, ms) and K.jobBase.
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
