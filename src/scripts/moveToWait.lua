-- moveToWait: hands an active job back to ready without counting an attempt: the processor
-- threw RateLimitError (a worker's own job), or a lock holder called `job.moveToWait(token)`
-- (then typically `throw new WaitingError()`). The job keeps its lane member, so it goes back
-- to the front of its priority tier, like a recovered job. Token semantics: `att` is NOT
-- decremented, so the next claim issues a new, higher token and the hand-back's token can never
-- settle that later attempt. `made` (attemptsMade) is unchanged, so the hand-back does not use
-- up one of the job's `attempts`.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, events, wake, laneBase, jobBase, lcfg, rate, reqBase
-- ARGV: [1] job id, [2] token (the job's att when claimed; '' = unknown), [3] owner token
--   (absent: a worker's own hand-back, the token must be the current att; present: a lock
--   holder's call, checked as lib/lock.lua does; '' = not checked, as BullMQ without a token),
--   [4] '1': a worker's own hand-back all the same (it sends '' as the owner token to reach
--   the request id; '' or absent: the owner token decides),
--   [5] request id ('' or absent = none; lib/once.lua): a rerun replies the first run's result
--   and moves nothing
-- Returns: 1 for a worker's hand-back; for a lock holder's call, the ms left in the queue's
--   rate-limit window (0 none), as BullMQ's moveToWait.
-- Errors: -1 no such job; -2 stale token / missing lock; -3 not active (no token given);
--   -6 lock mismatch; EMQ_EXPIRED (error reply, lib/once.lua): a request older than the window
--   without a record.
-- Events: waiting (jobId, prev 'active').
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/lock.lua
--!include lib/once.lua

-- Applied once (lib/once.lua): a rerun would find the job no longer active and report a stale
-- token or a missing lock.
local rec, refused = onceBegin(ARGV[5])
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local id, token = ARGV[1], ARGV[2]
local own = not ARGV[3] or ARGV[4] == '1'
local jk = K.jobBase .. id
local f = redis.call('HMGET', jk, 'att', 'st', 'lane', 'prio', 'sq')
if not own then
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
local r = 0
if own then
  r = 1
else
  local ttl = redis.call('PTTL', K.rate)
  if ttl > 0 and tonumber(redis.call('GET', K.rate) or '0') >= tonumber(redis.call('HGET', K.meta, 'rlmax') or '1125899906842624') then r = ttl end
end
onceRecord({ r = r })
return r
