-- moveToDelayed: a lock holder parks its active job in the delayed set (a step job:
-- `job.moveToDelayed(timestamp, token)` then `throw new DelayedError()`). The attempt is not
-- counted (`made` unchanged, BullMQ's skipAttempt); the job keeps its data, lane and priority
-- and is promoted by the claim when due (a new arrival stamp: back of its tier, like any
-- delayed job).
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, delayed, events, wake, laneBase, jobBase, lcfg, reqBase
-- ARGV: [1] job id, [2] owner token ('' = not checked, as BullMQ without a token), [3] fence
--   (the att the caller's Job was claimed under; '' = unknown), [4] delay (ms from now, >= 0;
--   the due time is taken on the Redis clock),
--   [5] request id ('' or absent = none; lib/once.lua): a rerun replies the first run's due time
-- Returns: the due time (ms, Redis clock).
-- Errors: -16 a delay that is not a non-negative integer (a guard, before any write); -1 no such job; -2 missing lock; -3 not active (no token given); -6 lock mismatch
--   (lib/lock.lua). A refused call changes nothing.
-- Events: delayed (jobId, delay = due time).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/lock.lua
--!include lib/once.lua

-- Guard (BAD_ARGUMENT, lib/guard.lua's rule): a delay that is not a number would fail after the ZREM.
if not string.find(ARGV[4], '^%d+$') then return -16 end
local function body()
  local id = ARGV[1]
  local jk = K.jobBase .. id
  local code = checkHolder(jk, ARGV[2], ARGV[3])
  if code ~= 1 then return code end
  local lane = laneOr(redis.call('HGET', jk, 'lane'))
  local due = nowMs() + tonumber(ARGV[4])
  redis.call('ZREM', K.active, id)
  redis.call('HSET', jk, 'st', 'd')
  if releaseActive(lane) then wake() end
  scheduleDelayed(id, due)
  emit('delayed', 'jobId', id, 'delay', due)
  return due
end
-- Applied once (lib/once.lua): a rerun of the same request replies the first run's result.
return onceRun(ARGV[5], body)
