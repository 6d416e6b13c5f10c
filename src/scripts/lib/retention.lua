-- Retention of finished jobs. keepCount < 0 keeps all; 0 keeps none; n keeps the newest n.
-- keepAgeMs > 0 also drops jobs finished longer ago than that. Each call removes at most
-- TRIM_BATCH jobs, and every finish calls it once, so the sets converge to the limit while
-- every call stays bounded.
local TRIM_BATCH = 16
-- Retention when a job hash has no kc/kfc field: BullMQ's default, keep every finished job
-- (src/core/options.ts DEFAULT_KEEP_COMPLETED / DEFAULT_KEEP_FAILED); an absent age field means no
-- age limit.
local KEEP_COMPLETED = -1
local KEEP_FAILED = -1

-- Normalises stored retention fields (strings or nil) into numbers.
local function keepOf(count, age, default)
  return count and tonumber(count) or default, age and tonumber(age) or 0
end

-- limit: most jobs removed by each rule (default TRIM_BATCH).
local function trimFinished(setKey, keepCount, keepAgeMs, now, limit)
  limit = limit or TRIM_BATCH
  if keepCount >= 0 then
    local excess = redis.call('ZCARD', setKey) - keepCount
    if excess > 0 then
      if excess > limit then excess = limit end
      deleteJobs(redis.call('ZPOPMIN', setKey, excess), 2)
    end
  end
  if keepAgeMs > 0 then
    local ids = redis.call('ZRANGEBYSCORE', setKey, '-inf', now - keepAgeMs, 'LIMIT', 0, limit)
    for _, id in ipairs(ids) do
      deleteJob(id)
      redis.call('ZREM', setKey, id)
    end
  end
end

-- Records a finished job in its set (or deletes it when it keeps none) and trims the set.
-- A job that keeps none is deleted alone: its own retention says nothing about the jobs other
-- options asked to keep, so the set is not trimmed on its behalf.
local function recordFinished(setKey, id, keepCount, keepAgeMs, now)
  if keepCount == 0 then
    deleteJob(id)
    return
  end
  redis.call('ZADD', setKey, now, id)
  trimFinished(setKey, keepCount, keepAgeMs, now)
end

-- Settling several jobs in one call (complete.lua) records each and trims once per distinct
-- retention: TRIM_BATCH more than the jobs recorded under it, so the set still converges. Jobs
-- that keep no record are deleted together, with one DEL. trims: a table the caller starts
-- empty ({}) and passes to flushTrims after its loop.
local function recordFinishedLater(setKey, id, keepCount, keepAgeMs, now, nowStr, trims)
  if keepCount == 0 then
    local gone = trims.gone
    if gone then gone[#gone + 1] = id else trims.gone = { id } end
    return
  end
  redis.call('ZADD', setKey, nowStr, id)
  -- Rules keyed by count, then age: numbers as keys, no string made per job.
  local rules = trims.rules
  if not rules then rules = {}; trims.rules = rules end
  local byAge = rules[keepCount]
  if not byAge then byAge = {}; rules[keepCount] = byAge end
  local t = byAge[keepAgeMs]
  if t then t.n = t.n + 1 else byAge[keepAgeMs] = { count = keepCount, age = keepAgeMs, n = 1 } end
end
local function flushTrims(setKey, trims, now)
  local gone = trims.gone
  if gone then
    if gone[2] then deleteJobs(gone) else deleteJob(gone[1]) end
  end
  if not trims.rules then return end
  for _, byAge in pairs(trims.rules) do
    for _, t in pairs(byAge) do trimFinished(setKey, t.count, t.age, now, TRIM_BATCH + t.n) end
  end
end
