-- drain: removes ready jobs (and, if asked, delayed jobs) in bounded batches. Lanes in the
-- ring are taken from its head (O(1) each, the ring shrinks as it goes); lanes outside the
-- ring (paused, at their limit, rate-limited) are then visited through the lane registry by
-- name with a cursor. The caller repeats until the reply says done. Active jobs are left alone.
-- KEYS: meta, ring, inring, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, delayed, events, laneBase, jobBase, logsBase, depsBase, lcfg
-- ARGV: [1] budget (most jobs removed in this call), [2] '1' to drain delayed jobs too,
--   [3] registry cursor ('' to start; the reply gives the next), [4] one lane only ('' = all)
-- Returns: {removed, nextCursor, done (1/0)}.
-- Errors: none.
-- Events: drained-queue (removed) once per call that removed jobs.
--!include lib/common.lua
--!include lib/lanes.lua

local budget = tonumber(ARGV[1])
local cursor = ARGV[3]
local only = ARGV[4]
local removed = 0

-- Removes up to budget ready jobs of a lane; returns how many are left in it.
local function drainLane(lane)
  local lk = K.laneBase .. lane
  local popped = redis.call('ZPOPMIN', lk, budget - removed)
  local prio = 0
  for i = 1, #popped, 2 do
    deleteJob(memberId(popped[i]))
    if tonumber(popped[i + 1]) > 0 then prio = prio + 1 end
  end
  local n = #popped / 2
  if n > 0 then
    removed = removed + n
    redis.call('HINCRBY', K.meta, 'ready', -n)
    if prio > 0 then redis.call('HINCRBY', K.meta, 'readyP', -prio) end
  end
  return redis.call('ZCARD', lk)
end

if only ~= '' then
  local left = drainLane(only)
  if left == 0 then evictLane(only) end
  forgetLaneIfIdle(only)
  if removed > 0 then emit('drained-queue', 'removed', removed, 'lane', only) end
  return {removed, '', left == 0 and 1 or 0}
end

local lanesVisited = 0
-- Phase 1: lanes in the ring, from its head.
while removed < budget and lanesVisited < budget do
  local lane = redis.call('LPOP', K.ring)
  if not lane then break end
  lanesVisited = lanesVisited + 1
  redis.call('SREM', K.inring, lane)
  if drainLane(lane) > 0 then
    redis.call('LPUSH', K.ring, lane)
    redis.call('SADD', K.inring, lane)
    break
  end
  forgetLaneIfIdle(lane)
end

-- Phase 2: lanes outside the ring, by name.
local done = 0
if removed < budget and redis.call('LLEN', K.ring) == 0 then
  while removed < budget and lanesVisited < budget do
    local lo = (cursor == '') and '-' or ('(' .. cursor)
    local page = redis.call('ZRANGEBYLEX', K.lanes, lo, '+', 'LIMIT', 0, 1)
    local lane = page[1]
    -- Done only when the registry walk reached its end; running out of budget on the last
    -- lane's jobs says nothing about the lanes after it.
    if not lane then done = 1; break end
    lanesVisited = lanesVisited + 1
    if drainLane(lane) > 0 then done = 0; break end
    evictLane(lane)
    cursor = lane
    forgetLaneIfIdle(lane)
  end
  if lanesVisited >= budget then done = 0 end
end

if done == 1 and ARGV[2] == '1' then
  local ids = redis.call('ZRANGE', K.delayed, 0, budget - removed - 1)
  for _, id in ipairs(ids) do deleteJob(id) end
  if #ids > 0 then redis.call('ZREMRANGEBYRANK', K.delayed, 0, #ids - 1) end
  removed = removed + #ids
  if redis.call('ZCARD', K.delayed) > 0 then done = 0 end
end
if removed > 0 then emit('drained-queue', 'removed', removed) end
return {removed, cursor, done}
