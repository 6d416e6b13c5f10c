-- recover: the stall sweep. Moves jobs whose lease expired back to the front of their tier
-- (they keep their lane member, so they sort before everything that arrived after them) and
-- counts a stall in stalledCounter (stc). A job stalled more than maxStalledCount times fails
-- for good with BullMQ's reason "job stalled more than allowable limit", whatever attempts it
-- has left (as BullMQ's UnrecoverableError); a job of a job scheduler that still exists is
-- requeued instead, as BullMQ does. The failure counts as a started and a made attempt (att and
-- made +1), as BullMQ counts the deferred failure of such a job; bumping att also fences off the
-- worker that lost the lease.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, failed, events, wake, laneBase, jobBase, logsBase, delayed, depsBase, wchildren, outbox, lcfg, schedBase
-- ARGV: [1] maxStalledCount, [2] batch size (most jobs handled per call)
-- Returns: {requeuedIds, failedIds, failedHashes}: failedHashes[i] is the HGETALL field list of
--   failedIds[i] as it was when it failed (before retention may delete it), for the worker's
--   'failed' event.
-- Errors: guards (lib/guard.lua), before any write: -16 with the reply {-16, position} when
--   [1] or [2] is not a non-negative integer.
-- Events: stalled (jobId) per requeued job (QueueEvents also derives waiting, prev active, from
--   it); per failed job one entry failed (jobId, failedReason, prev active, stalled 1, and
--   exhausted <attemptsMade> when its attempts are used up), from which QueueEvents emits
--   stalled, failed and retries-exhausted; a failed flow child tells its parent as fail.lua
--   does (lib/flow.lua); drained when failures left nothing ready or active.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/newjob.lua
--!include lib/flow.lua

local STALLED_REASON = 'job stalled more than allowable limit'
local now = nowMs()
-- Guards (BAD_ARGUMENT, as lib/guard.lua's; inline: this block of the function library has no
-- room for its locals): a count that is not a number would fail after the first ZREM.
if not string.find(ARGV[1], '^%d+$') then return { -16, 1 } end
if not string.find(ARGV[2], '^%d+$') then return { -16, 2 } end
local maxStalled = tonumber(ARGV[1])
-- Up to `now`: never the sentinel, whose score is +inf (lib/common.lua ACTIVE_SENTINEL).
local ids = redis.call('ZRANGEBYSCORE', K.active, '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local requeued, failed, hashes = {}, {}, {}
for _, id in ipairs(ids) do
  redis.call('ZREM', K.active, id)
  local jk = K.jobBase .. id
  local f = redis.call('HMGET', jk, 'lane', 'prio', 'sq', 'kfc', 'kfa', 'st', 'sid', 'opts')
  if f[6] then
    f[1], f[2] = laneOr(f[1]), prioOr(f[2])
    local stalls = redis.call('HINCRBY', jk, 'stc', 1)
    local scheduled = f[7] and redis.call('EXISTS', K.schedBase .. f[7]) == 1
    if stalls > maxStalled and not scheduled then
      local made = redis.call('HINCRBY', jk, 'made', 1)
      redis.call('HINCRBY', jk, 'att', 1)
      redis.call('HSET', jk, 'st', 'f', 'fOn', now, 'err', STALLED_REASON, 'stack', '[]')
      releaseActive(f[1])
      local attempts = 1
      if f[8] and f[8] ~= '' then
        local ok, o = pcall(cjson.decode, f[8])
        if ok and type(o) == 'table' and tonumber(o.attempts) then attempts = tonumber(o.attempts) end
      end
      if made >= attempts then
        emit('failed', 'jobId', id, 'failedReason', STALLED_REASON, 'prev', 'active', 'stalled', '1', 'exhausted', made)
      else
        emit('failed', 'jobId', id, 'failedReason', STALLED_REASON, 'prev', 'active', 'stalled', '1')
      end
      hashes[#hashes + 1] = redis.call('HGETALL', jk)
      flowSettled(jk, id, 'f', STALLED_REASON, now) -- flows: tell the parent (lib/flow.lua)
      local follower = redis.call('HGET', jk, 'dkn')
      if follower then releaseFollower(follower, id, now) end -- keepLastIfActive (lib/dedup.lua)
      local keep, keepAge = keepOf(f[4], f[5], KEEP_FAILED)
      recordFinished(K.failed, id, keep, keepAge, now)
      failed[#failed + 1] = id
    else
      pushReady(jk, f[1], tonumber(f[2]), f[3] .. id)
      releaseActive(f[1])
      emit('stalled', 'jobId', id)
      requeued[#requeued + 1] = id
    end
  end
end
if #requeued > 0 then
  wake()
elseif #failed > 0 and tonumber(redis.call('HGET', K.meta, 'ready') or '0') <= 0 and activeJobs() == 0 then
  emit('drained') -- the failures left the queue idle (BullMQ's drained, as a settle writes it)
end
return {requeued, failed, hashes}
