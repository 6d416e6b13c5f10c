-- moveToWaitingChildren: a lock holder parks its active job until its children finish (a
-- step job: `await job.moveToWaitingChildren(token)` then `throw new WaitingChildrenError()`).
-- Only a job with pending children moves (or, given a child, while that child is pending);
-- otherwise it stays active and the reply is 0, so the processor goes on. The attempt is not
-- counted; when the last child finishes, lib/flow.lua releases the job to its lane (or delays
-- it) like any flow parent, with its data, lane and priority.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, events, wake, laneBase, jobBase, lcfg, depsBase, wchildren, reqBase
-- ARGV: [1] job id, [2] owner token ('' = not checked), [3] fence (att the caller's Job was
--   claimed under; '' = unknown), [4] child job key ('' = any pending child),
--   [5] request id ('' or absent = none; lib/once.lua): a rerun replies the first run's result
-- Returns: 1 moved to waiting-children, 0 nothing pending (job unchanged).
-- Errors: -1 no such job; -9 a child failed it (with failParentOnFailure) while it ran (field
--   dfail, lib/flow.lua); -2 missing lock; -3 not active (no token given); -6 lock mismatch
--   (lib/lock.lua), checked only when there is something to wait for, as BullMQ does.
-- Events: waiting-children (jobId, prev 'active').
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/lock.lua
--!include lib/once.lua

local function body()
  local id = ARGV[1]
  local jk = K.jobBase .. id
  local f = redis.call('HMGET', jk, 'att', 'st', 'pend', 'lane', 'ts', 'dfail')
  if not f[2] then return -1 end
  if f[6] then return -9 end
  local pending
  if ARGV[4] ~= '' then
    pending = redis.call('HGET', K.depsBase .. id, ARGV[4]) == 'p'
  else
    pending = tonumber(f[3] or '0') > 0
  end
  if not pending then return 0 end
  local code = holderCode(jk, f[1], f[2], ARGV[2], ARGV[3])
  if code ~= 1 then return code end
  redis.call('ZREM', K.active, id)
  redis.call('HSET', jk, 'st', 'h')
  redis.call('ZADD', K.wchildren, f[5] or nowMs(), id)
  if releaseActive(laneOr(f[4])) then wake() end
  emit('waiting-children', 'jobId', id, 'prev', 'active')
  return 1
end
-- Applied once (lib/once.lua): a rerun of the same request replies the first run's result.
return onceRun(ARGV[5], body)
