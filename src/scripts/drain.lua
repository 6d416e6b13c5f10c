-- drain: removes ready jobs (and, if asked, delayed jobs) in bounded batches. Lanes in the
-- ring are taken from its head (O(1) each, the ring shrinks as it goes); lanes outside the
-- ring (paused, at their limit, rate-limited) are then visited through the lane registry by
-- name with a cursor. The caller repeats until the reply says done. Active jobs are left alone.
-- Flows, as BullMQ: a drained child no longer holds its parent; a parent in this queue whose
-- last pending child was drained is deleted with it (and so on up, within this queue), a
-- parent in another queue is told through the outbox (it becomes ready there). The delayed
-- job of a job scheduler's next slot is kept, so the scheduler goes on.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, delayed, events, laneBase, jobBase, logsBase, depsBase, lcfg, wchildren, outbox, schedBase
-- ARGV: [1] budget (most jobs removed in this call, at most 250), [2] '1' to drain delayed jobs too,
--   [3] registry cursor ('' to start; the reply gives the next), [4] one lane only ('' = all),
--   [5] scheduler jobs kept at the head of the delayed set so far ('' = 0; the reply gives it)
-- Returns: {removed, nextCursor, done (1/0), kept, outbox (1 = the outbox was written)}.
-- Errors: none.
-- Events: drained-queue (removed) once per call that removed jobs.
--!include lib/common.lua
--!include lib/lanes.lua

-- At most 250 jobs per call whatever the caller asks (each also has its flow parent checked),
-- so a call stays near 1 ms; callers repeat until done anyway.
local budget = math.min(tonumber(ARGV[1]), 250)
local cursor = ARGV[3]
local only = ARGV[4]
local kept = tonumber(ARGV[5]) or 0
local removed = 0
local outbox = 0
local now

-- A same-queue chain of parents deeper than this goes through the outbox (bounded call).
local MAX_CASCADE = 32

-- Job jk (id) is being drained: releases its parent's hold on it (see the header).
local function childDrained(jk, id, depth)
  -- One HMGET per drained job; the rest of the parent's fields only for flow children.
  local link = redis.call('HMGET', jk, 'pid', 'dkn')
  if link[2] then
    -- A keepLastIfActive holder back in waiting (lib/dedup.lua): its follower goes with it,
    -- as a parent whose last child was drained.
    local f = redis.call('HMGET', K.jobBase .. link[2], 'st', 'dka')
    if f[1] == 'h' and f[2] == id then
      redis.call('ZREM', K.wchildren, link[2])
      deleteJob(link[2])
      removed = removed + 1
    end
  end
  if not link[1] then return end
  local p = redis.call('HMGET', jk, 'pid', 'pk', 'pq', 'ppx')
  now = now or nowMs()
  if p[2] == K.jobBase .. p[1] and depth < MAX_CASCADE then
    local dk = K.depsBase .. p[1]
    if redis.call('HGET', dk, jk) ~= 'p' then return end
    redis.call('HSET', dk, jk, 'r')
    local pend = redis.call('HINCRBY', p[2], 'pend', -1)
    if pend <= 0 and redis.call('HGET', p[2], 'st') == 'h' then
      redis.call('ZREM', K.wchildren, p[1])
      childDrained(p[2], p[1], depth + 1)
      deleteJob(p[1])
      removed = removed + 1
    end
    return
  end
  redis.call('ZADD', K.outbox, now, cjson.encode({ pid = p[1], pk = p[2], pq = p[3], ppx = p[4], c = jk, k = 'r', v = '' }))
  outbox = 1
end

-- Removes up to budget ready jobs of a lane; returns how many are left in it.
local function drainLane(lane)
  materializeLane(lane)
  local lk = K.laneBase .. lane
  local popped = redis.call('ZPOPMIN', lk, budget - removed)
  local prio = 0
  local ids = {}
  for i = 1, #popped, 2 do
    local id = memberId(popped[i])
    ids[#ids + 1] = id
    childDrained(K.jobBase .. id, id, 0)
    if tonumber(popped[i + 1]) > 0 then prio = prio + 1 end
  end
  deleteJobs(ids) -- one DEL for the batch
  local n = #popped / 2
  if n > 0 then
    removed = removed + n
    redis.call('HINCRBY', K.meta, 'ready', -n)
    if prio > 0 then redis.call('HINCRBY', K.meta, 'readyP', -prio) end
  end
  return redis.call('ZCARD', lk)
end

-- Whether a delayed job is the job of its scheduler's next slot (id repeat:<scheduler>:<ms>).
local function schedulerSlotJob(id)
  local sid, ms = string.match(id, '^repeat:(.+):(%d+)$')
  return sid ~= nil and redis.call('HGET', K.schedBase .. sid, 'next') == ms
end

if only ~= '' then
  local left = drainLane(only)
  if left == 0 then evictLane(only) end
  forgetLaneIfIdle(only)
  if removed > 0 then emit('drained-queue', 'removed', removed, 'lane', only) end
  return {removed, '', left == 0 and 1 or 0, 0, outbox}
end

local lanesVisited = 0
-- Phase 1: lanes in the ring, from its head.
while removed < budget and lanesVisited < budget do
  local lane = redis.call('LPOP', K.ring)
  if not lane then break end
  lanesVisited = lanesVisited + 1
  -- A one-job lane's job goes into a sorted set first, recorded in inring, which it leaves now.
  materializeLane(lane)
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

-- Phase 3: delayed jobs. Kept scheduler jobs stay at the head of what is left (every job
-- before them was removed), so the next call starts after them.
if done == 1 and ARGV[2] == '1' and removed < budget then
  local ids = redis.call('ZRANGE', K.delayed, kept, kept + budget - removed - 1)
  local gone = {}
  for _, id in ipairs(ids) do
    if schedulerSlotJob(id) then
      kept = kept + 1
    else
      childDrained(K.jobBase .. id, id, 0)
      gone[#gone + 1] = id
    end
  end
  if #gone > 0 then
    deleteJobs(gone)
    redis.call('ZREM', K.delayed, unpack(gone))
  end
  removed = removed + #gone
  if redis.call('ZCARD', K.delayed) > kept then done = 0 end
elseif done == 1 and ARGV[2] == '1' then
  done = 0
end
if removed > 0 then emit('drained-queue', 'removed', removed) end
return {removed, cursor, done, kept, outbox}
