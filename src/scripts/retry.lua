-- retry: moves a failed (or completed) job back to ready at the back of its tier (BullMQ's
-- Job.retry / reprocessJob). Its finish fields go (failed: reason, completed: return value;
-- finishedOn, processedOn); the stack trace and stall count stay, as in BullMQ. The attempt
-- counts are reset only on request. attemptsStarted is also the fencing token (`att`), so it
-- is never lowered: a reset records the current count as its new base `atb` instead
-- (job.attemptsStarted shows att - atb) and the next claim still gets a fresh token.
-- KEYS: meta, ring, inring, lone, lanes, lpaused, llimit, lactive, rlwait, completed, failed, events, wake, laneBase, jobBase, reqBase
-- ARGV: [1] job id, [2] state the job must be in: 'failed' or 'completed', [3] '1' resets
--   attemptsMade, [4] '1' resets attemptsStarted,
--   [5] request id ('' or absent = none; lib/once.lua): a rerun replies 1 and moves nothing
-- Returns: 1.
-- Errors: -1 no such job; -3 the job is not in that state.
-- Events: waiting (jobId, prev).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/once.lua

local function body()
  local id, state = ARGV[1], ARGV[2]
  local jk = K.jobBase .. id
  local f = redis.call('HMGET', jk, 'st', 'lane', 'prio', 'lifo', 'att')
  if not f[1] then return -1 end
  f[2], f[3] = laneOr(f[2]), prioOr(f[3])
  local want = (state == 'completed') and 'c' or 'f'
  if f[1] ~= want then return -3 end
  redis.call('ZREM', (want == 'c') and K.completed or K.failed, id)
  if ARGV[3] == '1' then redis.call('HDEL', jk, 'made') end
  if ARGV[4] == '1' then redis.call('HSET', jk, 'atb', f[5] or '0') end
  redis.call('HDEL', jk, (want == 'c') and 'rv' or 'err', 'fOn', 'pOn')
  local stamp = nextStamp(f[4] == '1')
  redis.call('HSET', jk, 'sq', stamp)
  pushReady(jk, f[2], tonumber(f[3]), stamp .. id)
  emit('waiting', 'jobId', id, 'prev', state)
  wake()
  return 1
end
-- Applied once (lib/once.lua): a rerun of the same request replies the first run's result.
return onceRun(ARGV[5], body)
