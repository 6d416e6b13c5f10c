-- moveToWait: hands an active job back to ready without counting an attempt: the processor
-- threw RateLimitError (a worker's own job), or a lock holder called `job.moveToWait(token)`
-- (then typically `throw new WaitingError()`). The job keeps its lane member, so it goes back
-- to the front of its priority tier, like a recovered job. Token semantics: `att` is NOT
-- decremented, so the next claim issues a new, higher token and the hand-back's token can never
-- settle that later attempt. `made` (attemptsMade) is unchanged, so the hand-back does not use
-- up one of the job's `attempts`.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, events, wake, laneBase, jobBase, lcfg, rate
-- ARGV: [1] job id, [2] token (the job's att when claimed; '' = unknown), [3] owner token
--   (absent: a worker's own hand-back, the token must be the current att; present: a lock
--   holder's call, checked as lib/lock.lua does; '' = not checked, as BullMQ without a token)
-- Returns: 1 for a worker's hand-back; for a lock holder's call, the ms left in the queue's
--   rate-limit window (0 none), as BullMQ's moveToWait.
-- Errors: -1 no such job; -2 stale token / missing lock; -3 not active (no token given);
--   -6 lock mismatch.
-- Events: waiting (jobId, prev 'active').
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/lock.lua

local id, token = ARGV[1], ARGV[2]
local jk = K.jobBase .. id
local f = redis.call('HMGET', jk, 'att', 'st', 'lane', 'prio', 'sq')
if ARGV[3] then
  local code = holderCode(jk, f[1], f[2], ARGV[3], token)
  if code ~= 1 then return code end
else
  if not f[1] then return -1 end
  if f[1] ~= token or f[2] ~= 'a' then return -2 end
end
f[3], f[4] = laneOr(f[3]), prioOr(f[4])
redis.call('ZREM', K.active, id)
pushReady(jk, f[3], tonumber(f[4]), f[5] .. id)
releaseActive(f[3])
emit('waiting', 'jobId', id, 'prev', 'active')
wake()
if not ARGV[3] then return 1 end
local ttl = redis.call('PTTL', K.rate)
if ttl > 0 and tonumber(redis.call('GET', K.rate) or '0') >= tonumber(redis.call('HGET', K.meta, 'rlmax') or '1125899906842624') then return ttl end
return 0
